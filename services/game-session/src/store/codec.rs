//! The stored form of a room's state (`Room`): a format byte, then the room.
//!
//! | first byte | format |
//! |---|---|
//! | `{` (0x7B) | JSON (serde_json): what replicas wrote before the binary form; still read, so a rolling upgrade carries on the rooms the old replicas stored. The seats' origins ride along as a `seat_origins` key, which older replicas ignore |
//! | 1 | postcard (varints, no field names): cards as their index, card sets as their 52-bit mask, the seed as 32 bytes (see the engine's `Serialize` impls, which write the text form only to human-readable formats) |
//! | 2 | format 1's bytes, then the seats' origins (`Room::seat_origins`: how each seat was filled, for the match record) as a postcard sequence |
//! | 3 ([`ROOM_FORMAT`]) | format 2 with each seat's origin also saying whether its player is a guest (`SeatOrigin::guest`) |
//!
//! Postcard is not self-describing: the bytes follow `Room`'s fields in order. A change of
//! the fields of `Room` or of anything it holds (added, removed, reordered, retyped) is
//! therefore a new format: give it the next byte and keep a decoder of the previous one
//! (its fields as they were, converted), so replicas of both versions read each other's
//! rooms during an upgrade. Format 2 shows the cheapest such change: what is new goes
//! after the room, so format 1 decodes as format 2 without it (the seats' origins are
//! then not known, and their match record says so); format 3 changes the origins, read
//! from format 2 without `guest`. The room tests pin formats 1, 2 and 3 with stored samples (`tests/fixtures/`), so such a change cannot go unnoticed. Which
//! form a replica writes is [`RoomFormat`] (`game.room_state_format`): JSON while
//! replicas that read only JSON still run, `binary_1` while replicas that read only
//! format 1 do, `binary_2` (format 2, whole) while replicas that read no tail, or no
//! format 3, or whose plain plays wrote the room's state (before `lua/play.lua`'s version
//! bump) do.
//!
//! With `binary` (the default) the state is a snapshot: the Redis store keeps a plain
//! play as its events alone, and a load replays the plain plays logged after the
//! snapshot, the room's tail (`plain_play.rs`). A replica of a release before the tail would read the
//! snapshot without it, so while one runs (an upgrade, a rollback) the others write
//! `binary_2`: the whole room every commit, as before, their first commit to a room
//! folding its tail into the snapshot.

use crate::error::{GameError, Result};
use crate::room::seats::SeatOriginFormat2;
use crate::room::{Room, SeatOrigin};

/// The format byte written first by [`encode_room`]: format 3.
pub const ROOM_FORMAT: u8 = 3;

/// Format 2: the room, then the seats' origins without `guest`.
const ROOM_FORMAT_2: u8 = 2;

/// Format 1: the room alone.
const ROOM_FORMAT_1: u8 = 1;

/// The first byte of the JSON form.
const JSON_FIRST: u8 = b'{';

/// The JSON key of the seats' origins.
const ORIGINS_KEY: &str = "seat_origins";

/// The form a replica writes rooms in (`game.room_state_format`). Every replica reads
/// all of them; JSON and format 1 are for rolling upgrades from the versions that read
/// only those (see the README, "Upgrades").
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RoomFormat {
    /// [`ROOM_FORMAT`]: postcard, with the seats' origins, as a snapshot that a plain
    /// play's commit does not rewrite (its events are logged, replayed on load).
    #[default]
    Binary,
    /// Format 2 (the seats' origins without `guest`), written whole by every commit (no
    /// tail): what releases before the tail, and before format 3, write and read.
    #[serde(rename = "binary_2")]
    Binary2,
    /// Format 1: postcard without the seats' origins (a match record made from such a
    /// room does not say how its seats were filled).
    #[serde(rename = "binary_1")]
    Binary1,
    /// JSON, as the replicas before the binary form wrote it (plus the origins' key).
    Json,
}

/// A room in its stored form, in `format`.
pub fn encode_room_as(room: &Room, format: RoomFormat) -> Result<Vec<u8>> {
    match format {
        RoomFormat::Binary => encode_room(room),
        RoomFormat::Binary2 => encode_room_format_2(room),
        RoomFormat::Binary1 => encode_room_format_1(room),
        RoomFormat::Json => {
            let mut value = serde_json::to_value(room)?;
            if let serde_json::Value::Object(map) = &mut value {
                map.insert(
                    ORIGINS_KEY.to_owned(),
                    serde_json::to_value(&room.seat_origins)?,
                );
            }
            Ok(serde_json::to_vec(&value)?)
        }
    }
}

/// A room in its stored form: [`ROOM_FORMAT`], then its postcard bytes and the seats'
/// origins.
pub fn encode_room(room: &Room) -> Result<Vec<u8>> {
    // A room mid-match takes about 340 bytes: one allocation in the usual case.
    let mut out = Vec::with_capacity(512);
    out.push(ROOM_FORMAT);
    let out = postcard::to_extend(room, out)
        .map_err(|err| GameError::Internal(format!("encoding a room: {err}")))?;
    postcard::to_extend(&room.seat_origins, out)
        .map_err(|err| GameError::Internal(format!("encoding a room's seats' origins: {err}")))
}

/// A room in format 2 (the seats' origins without `guest`).
fn encode_room_format_2(room: &Room) -> Result<Vec<u8>> {
    let mut out = Vec::with_capacity(512);
    out.push(ROOM_FORMAT_2);
    let out = postcard::to_extend(room, out)
        .map_err(|err| GameError::Internal(format!("encoding a room: {err}")))?;
    let origins: Vec<SeatOriginFormat2> = room.seat_origins.iter().map(|o| o.format_2()).collect();
    postcard::to_extend(&origins, out)
        .map_err(|err| GameError::Internal(format!("encoding a room's seats' origins: {err}")))
}

/// A room in format 1 (without the seats' origins).
fn encode_room_format_1(room: &Room) -> Result<Vec<u8>> {
    let mut out = Vec::with_capacity(512);
    out.push(ROOM_FORMAT_1);
    postcard::to_extend(room, out)
        .map_err(|err| GameError::Internal(format!("encoding a room: {err}")))
}

/// A room read back from its stored form, in any format this replica knows.
pub fn decode_room(bytes: &[u8]) -> Result<Room> {
    match bytes.first() {
        Some(&ROOM_FORMAT_1) => {
            let (room, rest) = postcard::take_from_bytes::<Room>(&bytes[1..])
                .map_err(|err| GameError::Corrupt(format!("room state (format 1): {err}")))?;
            nothing_after(rest, 1)?;
            Ok(room)
        }
        Some(&ROOM_FORMAT_2) => {
            let (mut room, rest) = postcard::take_from_bytes::<Room>(&bytes[1..])
                .map_err(|err| GameError::Corrupt(format!("room state (format 2): {err}")))?;
            let (origins, rest) = postcard::take_from_bytes::<Vec<SeatOriginFormat2>>(rest)
                .map_err(|err| {
                    GameError::Corrupt(format!("room state (format 2), seats' origins: {err}"))
                })?;
            nothing_after(rest, 2)?;
            room.seat_origins = origins.into_iter().map(SeatOrigin::from).collect();
            Ok(room)
        }
        Some(&ROOM_FORMAT) => {
            let (mut room, rest) = postcard::take_from_bytes::<Room>(&bytes[1..])
                .map_err(|err| GameError::Corrupt(format!("room state (format 3): {err}")))?;
            let (origins, rest) =
                postcard::take_from_bytes::<Vec<SeatOrigin>>(rest).map_err(|err| {
                    GameError::Corrupt(format!("room state (format 3), seats' origins: {err}"))
                })?;
            nothing_after(rest, 3)?;
            room.seat_origins = origins;
            Ok(room)
        }
        Some(&JSON_FIRST) => {
            let corrupt =
                |err: serde_json::Error| GameError::Corrupt(format!("room state (JSON): {err}"));
            let mut value: serde_json::Value = serde_json::from_slice(bytes).map_err(corrupt)?;
            let origins = match value
                .as_object_mut()
                .and_then(|map| map.remove(ORIGINS_KEY))
            {
                Some(origins) => serde_json::from_value(origins).map_err(corrupt)?,
                None => Vec::new(),
            };
            let mut room: Room = serde_json::from_value(value).map_err(corrupt)?;
            room.seat_origins = origins;
            Ok(room)
        }
        Some(other) => Err(GameError::Corrupt(format!(
            "room state in an unknown format {other} (a newer replica's? this one reads 1, 2, 3 and JSON)"
        ))),
        None => Err(GameError::Corrupt("empty room state".into())),
    }
}

fn nothing_after(rest: &[u8], format: u8) -> Result<()> {
    if rest.is_empty() {
        Ok(())
    } else {
        Err(GameError::Corrupt(format!(
            "room state (format {format}): {} bytes after the room",
            rest.len()
        )))
    }
}

#[cfg(test)]
mod tests {
    use basra_engine::{Seed, Settings};

    use super::*;
    use basra_records::SeatFill;

    use crate::room::timing::Timing;
    use crate::room::{BotLevel, Occupant, SeatOrigin, Status, Visibility};

    /// The room the fixtures hold: a match ten plays in, one player with a display
    /// name and one without, connected and disconnected seats, timers set.
    fn sample_room() -> Room {
        let timing = Timing {
            turn_ms: 20_000,
            grace_ms: 60_000,
            bot_delay_ms: 800,
            rematch_ms: 60_000,
            turn_slack_ms: 1_000,
        };
        let occupants = vec![
            Occupant::Player {
                user_id: "0190b3c1-7e1f-7000-8000-00000000000a".into(),
                name: "Amira".into(),
            },
            Occupant::Player {
                user_id: "0190b3c1-7e1f-7000-8000-00000000000b".into(),
                name: String::new(),
            },
        ];
        let mut room = Room::new(
            "room-fixture".into(),
            Settings::default(),
            occupants,
            true,
            true,
            Visibility::Public,
            timing,
            1_795_000_000_000,
        );
        room.start_if_full(Seed([9; 32]), "match-fixture".into(), 1_795_000_000_100);
        room.connect(0, "conn-a", "replica-1", 1_795_000_000_200);
        let mut now = 1_795_000_001_000;
        for _ in 0..10 {
            let game = room.game.as_ref().unwrap();
            let seat = game.turn().unwrap();
            let play = game.legal_plays()[0];
            room.play(seat.0, play.card, None, false, format!("m{now}"), now)
                .unwrap();
            now += 1_500;
        }
        let _ = room.take_pending();
        let _ = room.take_pending_actions();
        room
    }

    fn json(room: &Room) -> String {
        serde_json::to_string(room).unwrap()
    }

    /// What the replicas before the binary form stored for [`sample_room`]: written by
    /// that code (main at d930bcb), byte for byte.
    const STORED_BY_JSON_REPLICAS: &str = include_str!("../../tests/fixtures/room-state-json.json");

    /// [`sample_room`] in format 1, as hex.
    const FORMAT_1: &str = include_str!("../../tests/fixtures/room-state-format-1.hex");

    /// [`sample_room`] with its seats' origins in format 2, as hex.
    const FORMAT_2: &str = include_str!("../../tests/fixtures/room-state-format-2.hex");

    /// [`sample_room`] with its seats' origins in format 3, as hex.
    const FORMAT_3: &str = include_str!("../../tests/fixtures/room-state-format-3.hex");

    /// [`sample_room`] with origins: a queue match, seat 1 after a long wait, seat 0 a
    /// guest.
    fn sample_room_with_origins() -> Room {
        let mut room = sample_room();
        room.set_seat_origin(
            0,
            SeatOrigin {
                fill: Some(SeatFill::Queue),
                queue_wait_ms: Some(4_200),
                guest: true,
            },
        );
        room.set_seat_origin(
            1,
            SeatOrigin {
                fill: Some(SeatFill::Queue),
                queue_wait_ms: Some(61_000),
                guest: false,
            },
        );
        room
    }

    /// The origins as format 2 keeps them: without `guest`.
    fn without_guests(origins: &[SeatOrigin]) -> Vec<SeatOrigin> {
        origins
            .iter()
            .map(|o| SeatOrigin { guest: false, ..*o })
            .collect()
    }

    fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    #[test]
    fn a_room_stored_as_json_by_older_replicas_is_read_and_played_on() {
        let stored = STORED_BY_JSON_REPLICAS.trim_end();
        let mut room = decode_room(stored.as_bytes()).unwrap();
        // Exactly the state the old replica stored (and the JSON form is unchanged).
        assert_eq!(json(&room), stored);
        assert_eq!(
            encode_room(&room).unwrap(),
            encode_room(&sample_room()).unwrap()
        );
        assert!(room.seat_origins.is_empty(), "not known in the old form");
        // Played on, and stored again in the binary form, which reads back the same.
        let mut reference = sample_room();
        let mut now = 1_795_000_100_000;
        while let Some(seat) = room.game.as_ref().unwrap().turn() {
            let card = room.game.as_ref().unwrap().legal_plays()[0].card;
            room.play(seat.0, card, None, false, String::new(), now)
                .unwrap();
            reference
                .play(seat.0, card, None, false, String::new(), now)
                .unwrap();
            assert_eq!(room.take_pending(), reference.take_pending());
            let bytes = encode_room(&room).unwrap();
            assert_eq!(bytes[0], ROOM_FORMAT);
            room = decode_room(&bytes).unwrap();
            assert_eq!(json(&room), json(&reference));
            now += 1_000;
        }
        assert_eq!(room.status, Status::Finished);
    }

    #[test]
    fn format_2_is_pinned_and_format_1_reads_without_origins() {
        let room = sample_room_with_origins();
        let bytes = encode_room_as(&room, RoomFormat::Binary2).unwrap();
        assert_eq!(
            hex(&bytes),
            FORMAT_2.trim_end(),
            "the stored form of a room changed: that is a new format (see the module docs)"
        );
        assert_eq!(
            decode_room(&bytes).unwrap().seat_origins,
            without_guests(&room.seat_origins)
        );
        // Format 2 is format 1 with the origins after the room.
        let format_1 = encode_room_as(&room, RoomFormat::Binary1).unwrap();
        assert_eq!(format_1[0], 1);
        assert_eq!(&bytes[1..format_1.len()], &format_1[1..]);
        let old = decode_room(&format_1).unwrap();
        assert!(old.seat_origins.is_empty());
        assert_eq!(json(&old), json(&room));
        // The JSON form carries them under a key of its own.
        let text = encode_room_as(&room, RoomFormat::Json).unwrap();
        assert_eq!(decode_room(&text).unwrap().seat_origins, room.seat_origins);
    }

    #[test]
    fn format_3_is_pinned_and_says_which_players_are_guests() {
        let room = sample_room_with_origins();
        let bytes = encode_room(&room).unwrap();
        assert_eq!(bytes[0], 3);
        assert_eq!(
            hex(&bytes),
            FORMAT_3.trim_end(),
            "the stored form of a room changed: that is a new format (see the module docs)"
        );
        let read = decode_room(&bytes).unwrap();
        assert_eq!(read.seat_origins, room.seat_origins);
        assert!(read.seat_snapshots()[0].guest && !read.seat_snapshots()[1].guest);
        // Format 3 is format 2 with the origins' guest flags: the room's bytes are the same.
        let format_2 = encode_room_as(&room, RoomFormat::Binary2).unwrap();
        let room_bytes = encode_room_as(&room, RoomFormat::Binary1).unwrap().len();
        assert_eq!(&bytes[1..room_bytes], &format_2[1..room_bytes]);
    }

    #[test]
    fn format_1_is_pinned() {
        let bytes = encode_room_as(&sample_room(), RoomFormat::Binary1).unwrap();
        assert_eq!(
            hex(&bytes),
            FORMAT_1.trim_end(),
            "the stored form of a room changed: that is a new format (see the module docs)"
        );
        // Several times smaller than the JSON.
        assert!(
            bytes.len() * 4 < json(&sample_room()).len(),
            "{} bytes",
            bytes.len()
        );
    }

    #[test]
    fn every_state_of_a_room_reads_back_the_same_in_both_forms() {
        let mut rooms = vec![sample_room()];
        // Waiting, with an open seat and a bot; four seats.
        let settings = Settings {
            seats: basra_engine::Seats::Four,
            ..Settings::default()
        };
        let mut waiting = Room::new(
            "w".into(),
            settings,
            vec![
                Occupant::Open,
                Occupant::Bot {
                    level: BotLevel::Medium,
                },
                Occupant::Open,
                Occupant::Player {
                    user_id: "u".into(),
                    name: "ü \"quoted\"".into(),
                },
            ],
            false,
            false,
            Visibility::Private,
            sample_room().timing,
            5,
        );
        rooms.push(waiting.clone());
        // Started, then resigned: a match result with a seat in it.
        waiting.seats[0].occupant = Occupant::Player {
            user_id: "x".into(),
            name: String::new(),
        };
        waiting.seats[2].occupant = Occupant::Bot {
            level: BotLevel::Easy,
        };
        waiting.start_if_full(Seed([3; 32]), "m".into(), 6);
        rooms.push(waiting.clone());
        waiting.resign(3, false, 7).unwrap();
        rooms.push(waiting.clone());
        waiting.close("test", 8);
        rooms.push(waiting);
        for room in rooms {
            let bytes = encode_room(&room).unwrap();
            assert_eq!(json(&decode_room(&bytes).unwrap()), json(&room));
            assert_eq!(
                json(&decode_room(json(&room).as_bytes()).unwrap()),
                json(&room)
            );
        }
    }

    #[test]
    fn unknown_or_damaged_states_are_refused() {
        let bytes = encode_room(&sample_room()).unwrap();
        let corrupt = |bytes: &[u8]| matches!(decode_room(bytes), Err(GameError::Corrupt(_)));
        assert!(corrupt(&[]));
        assert!(corrupt(&[4, 0, 0]), "a format this replica does not know");
        assert!(corrupt(&bytes[..bytes.len() / 2]), "cut short");
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(corrupt(&longer), "bytes after the room");
        assert!(corrupt(b"{\"id\":"));
    }
}
