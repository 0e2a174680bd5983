//! The match record handed to accounts (`Accounts.RecordMatch`) when a match ends.

use basra_engine::Action;
use basra_proto::basra::accounts::v1 as accounts;
use basra_proto::basra::common::v1 as pb;
use basra_proto::convert::{
    bot_display_name, card_to_pb, cards_to_pb, player_display_name, settings_to_pb,
};
use prost::Message as _;

use crate::convert::{side_scores, timestamp};
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
                Occupant::Bot { level } => (String::new(), true, bot_display_name(*level)),
                Occupant::Open => (String::new(), false, String::new()),
            };
            accounts::RecordedSeat {
                seat: index as u32,
                user_id,
                is_bot,
                display_name: name,
            }
        })
        .collect();
    let actions = actions
        .iter()
        .map(|record| {
            let (seat, action) = match record.action {
                Action::Play { seat, card, take } => (
                    seat,
                    accounts::recorded_action::Action::Play(accounts::RecordedPlay {
                        card: Some(card_to_pb(card)),
                        capture_choice: take.map(|cards| accounts::RecordedCapture {
                            cards: cards_to_pb(cards),
                        }),
                    }),
                ),
                Action::Resign { seat } => (
                    seat,
                    accounts::recorded_action::Action::Resign(accounts::RecordedResign {}),
                ),
            };
            accounts::RecordedAction {
                seat: u32::from(seat.0),
                action: Some(action),
                automatic: record.automatic,
                at: Some(timestamp(record.at_ms)),
            }
        })
        .collect();
    let mut basra_counts = [pb::BasraCounts::default(), pb::BasraCounts::default()];
    for round in &room.rounds {
        for (side, counts) in basra_counts.iter_mut().enumerate() {
            counts.basra += u32::from(round.score.basras[side][0]);
            counts.jack += u32::from(round.score.basras[side][1]);
            counts.komi += u32::from(round.score.basras[side][2]);
        }
    }
    let reason = room
        .end_reason
        .unwrap_or(pb::MatchEndReason::Unspecified as i32);
    let winner_side = match game.result() {
        Some(result) if reason != pb::MatchEndReason::Closed as i32 => {
            Some(u32::from(result.winner.0))
        }
        _ => None,
    };
    accounts::MatchRecord {
        match_id: room.match_id.clone(),
        room_id: room.id.clone(),
        ranked: room.ranked && reason != pb::MatchEndReason::Closed as i32,
        settings: Some(settings_to_pb(&room.settings)),
        seats,
        seed: game.seed().0.to_vec(),
        actions,
        rounds: room
            .rounds
            .iter()
            .map(|round| accounts::RoundRecord {
                round: round.score.round + 1,
                dealer: u32::from(round.dealer),
                sides: side_scores(&round.score),
            })
            .collect(),
        final_totals: game.totals().to_vec(),
        basra_counts: basra_counts.to_vec(),
        winner_side,
        end_reason: reason,
        started_at: Some(timestamp(room.started_at_ms)),
        ended_at: Some(timestamp(room.ended_at_ms)),
    }
}

/// The record, encoded for the outbox.
pub fn encoded_record(room: &Room, actions: &[ActionRecord]) -> Vec<u8> {
    match_record(room, actions).encode_to_vec()
}
