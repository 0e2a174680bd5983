//! Between the store's records and the API's messages: seats as clients see them (names
//! from accounts, bots named by level), a match as the `Matched` update, times and
//! durations, and a seat as game-session's `CreateRoom` takes it. The service and the
//! pairing loop both convert here.

use std::collections::HashMap;

use basra_proto::basra::{common::v1 as common, game::v1 as game, matchmaking::v1 as mm};
use basra_proto::convert::{bot_display_name, player_display_name, settings_to_pb};

use crate::clock::Millis;
use crate::store::{MatchRecord, Occupant};

pub(crate) fn seat_infos(
    seats: &[Occupant],
    seat_count: usize,
    names: &HashMap<String, String>,
) -> Vec<common::SeatInfo> {
    seats
        .iter()
        .enumerate()
        .map(|(i, o)| {
            let seat = i as u32;
            let side = if seat_count == 4 { seat % 2 } else { seat };
            let mut info = common::SeatInfo {
                seat,
                side,
                ..Default::default()
            };
            match o {
                Occupant::Open => info.occupant = common::SeatOccupant::Open as i32,
                Occupant::Bot { level } => {
                    info.occupant = common::SeatOccupant::Bot as i32;
                    info.bot_level = *level;
                    info.display_name = bot_display_name(*level);
                    info.connected = true;
                }
                Occupant::Player {
                    user_id,
                    guest,
                    rating,
                } => {
                    info.occupant = common::SeatOccupant::Player as i32;
                    info.user_id = user_id.clone();
                    info.display_name =
                        player_display_name(names.get(user_id).map_or("", String::as_str), i);
                    info.is_guest = *guest;
                    info.rating = *rating;
                }
            }
            info
        })
        .collect()
}

/// The API form of a match record.
pub(crate) fn matched_proto(record: &MatchRecord, names: &HashMap<String, String>) -> mm::Matched {
    mm::Matched {
        room_id: record.room_id.clone(),
        seat: record.seat,
        ranked: record.ranked,
        settings: Some(settings_to_pb(&record.settings)),
        seats: seat_infos(&record.seats, record.seats.len(), names),
    }
}

pub(crate) fn proto_duration(ms: Millis) -> prost_types::Duration {
    prost_types::Duration {
        seconds: ms.div_euclid(1000),
        nanos: (ms.rem_euclid(1000) * 1_000_000) as i32,
    }
}

/// A time in milliseconds since the epoch, as the API's timestamp.
pub(crate) fn millis_to_pb(ms: Millis) -> prost_types::Timestamp {
    prost_types::Timestamp {
        seconds: ms.div_euclid(1000),
        nanos: (ms.rem_euclid(1000) * 1_000_000) as i32,
    }
}

/// A room's expiry as the API says it (absent for a room that never expires).
pub(crate) fn expiry_to_pb(expires_ms: Millis) -> Option<prost_types::Timestamp> {
    (expires_ms > 0).then(|| millis_to_pb(expires_ms))
}

/// game-session's form of a seat.
pub(crate) fn seat_assignment(o: &Occupant, fill: common::SeatFill) -> game::SeatAssignment {
    use game::seat_assignment::Occupant as G;
    let (occupant, fill) = match o {
        Occupant::Open => (G::Open(game::OpenSeat {}), common::SeatFill::Unspecified),
        Occupant::Bot { level } => (
            G::Bot(game::BotSeat { level: *level }),
            common::SeatFill::Bot,
        ),
        Occupant::Player { user_id, .. } => (G::UserId(user_id.clone()), fill),
    };
    game::SeatAssignment {
        occupant: Some(occupant),
        fill: fill as i32,
        queue_wait_ms: 0,
    }
}
