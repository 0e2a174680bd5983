//! The match record handed to accounts (`AccountsInternalService.RecordMatch`) when a match ends, built
//! by the one record builder, [`basra_records::build`], from the room: with whether the
//! room allowed spectators and the event it was made for ([`event_of_room`]), which say
//! who else may replay it.

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
            allow_spectators: room.allow_spectators,
            event_id: event_of_room(&room.id).map(str::to_owned),
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

/// The event a room was made for: matchmaking names an event match's room
/// `ev-{event id}-{match key}` (`services/matchmaking/src/events/play.rs`, `room_id`; the
/// key has no `-`, the event id is a UUID), and no other room starts with `ev-` (the
/// queue's and the lobby's rooms are UUIDs).
pub fn event_of_room(room_id: &str) -> Option<&str> {
    let (event, key) = room_id.strip_prefix("ev-")?.rsplit_once('-')?;
    let valid = !event.is_empty() && !key.is_empty() && event.len() <= EVENT_ID_MAX;
    valid.then_some(event)
}

/// The longest event id a record keeps (`MatchRecord.event_id`).
const EVENT_ID_MAX: usize = basra_records::wire::ID_MAX;

/// The record, encoded for the outbox.
pub fn encoded_record(room: &Room, actions: &[ActionRecord]) -> Vec<u8> {
    match_record(room, actions).encode_to_vec()
}

#[cfg(test)]
mod tests {
    use super::{event_of_room, match_record};
    use crate::room::timing::Timing;
    use crate::room::{Occupant, Room, Visibility};
    use basra_engine::{Seed, Settings};

    /// A two-player room `id` whose match ended at once by a resignation.
    fn resigned(id: &str, allow_spectators: bool) -> Room {
        let occupants = (0..2)
            .map(|_| Occupant::Player {
                user_id: uuid::Uuid::now_v7().to_string(),
                name: String::new(),
            })
            .collect();
        let mut room = Room::new(
            id.into(),
            Settings::default(),
            occupants,
            false,
            allow_spectators,
            Visibility::Private,
            Timing::for_tests(),
            1,
        );
        room.start_if_full(Seed([3; 32]), "match".into(), 2);
        room.resign(1, false, 5).unwrap();
        room
    }

    #[test]
    fn the_record_says_whether_spectators_were_allowed_and_which_event_it_was() {
        let event = "0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b";
        let record = match_record(&resigned(&format!("ev-{event}-r1t1"), false), &[]);
        assert_eq!(
            (record.allow_spectators, record.event_id.as_str()),
            (false, event)
        );
        let record = match_record(&resigned("0193a1b2-0000-7e5f-8a9b-0c1d2e3f4a5b", true), &[]);
        assert_eq!(
            (record.allow_spectators, record.event_id.as_str()),
            (true, "")
        );
        // As accounts reads it.
        let checked = basra_records::MatchRecord::from_proto(record).expect("a valid record");
        assert!(checked.allow_spectators && checked.event_id.is_none() && checked.is_public());
    }

    #[test]
    fn an_event_rooms_id_names_its_event() {
        let event = "0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b";
        assert_eq!(event_of_room(&format!("ev-{event}-r2t3")), Some(event));
        assert_eq!(event_of_room(&format!("ev-{event}-r10t128")), Some(event));
        // Rooms of the queue and the lobby, and ids that only look alike.
        assert_eq!(event_of_room("0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"), None);
        assert_eq!(event_of_room("ev-"), None);
        assert_eq!(event_of_room("ev-r1t1"), None);
        assert_eq!(event_of_room("ev--r1t1"), None);
        assert_eq!(event_of_room(&format!("ev-{event}-")), None);
        assert_eq!(event_of_room(&format!("ev-{}-r1t1", "x".repeat(65))), None);
    }
}
