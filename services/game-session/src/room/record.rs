//! The match record handed to accounts (`AccountsInternalService.RecordMatch`) when a match ends, built
//! by the one record builder, [`basra_records::build`], from the room.

use basra_proto::basra::accounts::v1 as accounts;
use basra_proto::basra::common::v1 as pb;
use basra_proto::convert::{bot_display_name, player_display_name};
use basra_records::SeatFill;
use basra_records::build::{LoggedAction, MatchFacts};
use prost::Message as _;

use crate::room::{ActionRecord, Occupant, Room};

/// The record of the room's finished match, whose action log is `actions`.
pub fn match_record(room: &Room, actions: &[ActionRecord]) -> accounts::MatchRecord {
    let game = room.game.as_ref().expect("a finished match has a game");
    let seats = room
        .seats
        .iter()
        .enumerate()
        .map(|(index, seat)| {
            let (user_id, is_bot, name) = match &seat.occupant {
                Occupant::Player { user_id, name } => {
                    (user_id.clone(), false, player_display_name(name, index))
                }
                Occupant::Bot { level } => (
                    String::new(),
                    true,
                    bot_display_name(level.to_proto() as i32),
                ),
                Occupant::Open => (String::new(), false, String::new()),
            };
            let origin = room.seat_origin(index);
            let fill = match &seat.occupant {
                Occupant::Bot { .. } => Some(SeatFill::Bot),
                _ => origin.fill,
            };
            accounts::RecordedSeat {
                seat: index as u32,
                user_id,
                is_bot,
                display_name: name,
                fill: fill.map_or(pb::SeatFill::Unspecified, SeatFill::to_proto) as i32,
                queue_wait_ms: if fill == Some(SeatFill::Queue) {
                    origin.queue_wait_ms
                } else {
                    None
                },
            }
        })
        .collect();
    let end_reason = room
        .end_reason
        .map_or(pb::MatchEndReason::Unspecified, |reason| reason.to_proto());
    basra_records::build::match_record(
        MatchFacts {
            match_id: room.match_id.clone(),
            room_id: room.id.clone(),
            ranked: room.ranked,
            seats,
            end_reason,
            started_at_ms: room.started_at_ms,
            ended_at_ms: room.ended_at_ms,
        },
        game,
        actions.iter().map(|record| LoggedAction {
            action: record.action,
            automatic: record.automatic,
            at_ms: record.at_ms,
        }),
        room.rounds.iter().map(|round| (round.dealer, &round.score)),
    )
}

/// The record, encoded for the outbox.
pub fn encoded_record(room: &Room, actions: &[ActionRecord]) -> Vec<u8> {
    match_record(room, actions).encode_to_vec()
}
