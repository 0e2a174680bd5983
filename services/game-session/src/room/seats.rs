//! A room's seats: who sits in each ([`Occupant`], with its stored forms), how the seat
//! was filled ([`SeatOrigin`]), its connection ([`SeatState`]) and the public facts the
//! log's events carry ([`SeatSnapshot`]). Both the room ([`crate::room`]) and its event
//! log ([`crate::room::events`]) hold these; neither imports the other for them.

use basra_proto::basra::common::v1 as pb;
use basra_records::SeatFill;
use serde::{Deserialize, Serialize};

/// How strong a bot plays. Stored as the API's `BotLevel` number, so rooms stored before
/// this type read the same.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BotLevel {
    /// The engine's easy policy.
    Easy,
    /// The greedy policy.
    Medium,
    /// The search bot.
    Hard,
}

impl BotLevel {
    /// The level of the API's `BotLevel`; `None` for a number that names none.
    /// Unspecified is medium (what a bot plays when nobody says).
    pub fn from_proto(level: i32) -> Option<BotLevel> {
        Some(match pb::BotLevel::try_from(level).ok()? {
            pb::BotLevel::Easy => BotLevel::Easy,
            pb::BotLevel::Unspecified | pb::BotLevel::Medium => BotLevel::Medium,
            pb::BotLevel::Hard => BotLevel::Hard,
        })
    }

    /// The API's `BotLevel`.
    pub fn to_proto(self) -> pb::BotLevel {
        match self {
            BotLevel::Easy => pb::BotLevel::Easy,
            BotLevel::Medium => pb::BotLevel::Medium,
            BotLevel::Hard => pb::BotLevel::Hard,
        }
    }

    /// The stored number; a stored number that names no level reads as medium, as such
    /// a bot played before.
    fn stored(level: i32) -> BotLevel {
        BotLevel::from_proto(level).unwrap_or(BotLevel::Medium)
    }
}

/// Who sits in a seat. JSON (the event log, and room states stored before the binary
/// form) writes it internally tagged (`{"type":"player","user_id":…}`, no `name` when it
/// is empty); the binary room state, which cannot read an internal tag, externally
/// tagged with every field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Occupant {
    /// Nobody yet.
    Open,
    /// A player.
    Player {
        /// Their account's id (accounts' user id).
        user_id: String,
        /// The display name accounts gave when the player was seated (empty: unknown).
        name: String,
    },
    /// A bot.
    Bot {
        /// How strong it plays.
        level: BotLevel,
    },
}

/// [`Occupant`]'s JSON form, written.
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum OccupantText<'a> {
    Open,
    Player {
        user_id: &'a str,
        #[serde(skip_serializing_if = "str::is_empty")]
        name: &'a str,
    },
    Bot {
        level: i32,
    },
}

/// [`Occupant`]'s JSON form, read.
#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum OccupantTextOwned {
    Open,
    Player {
        user_id: String,
        #[serde(default)]
        name: String,
    },
    Bot {
        level: i32,
    },
}

/// [`Occupant`]'s binary form, written.
#[derive(Serialize)]
enum OccupantBinary<'a> {
    Open,
    Player { user_id: &'a str, name: &'a str },
    Bot { level: i32 },
}

/// [`Occupant`]'s binary form, read.
#[derive(Deserialize)]
enum OccupantBinaryOwned {
    Open,
    Player { user_id: String, name: String },
    Bot { level: i32 },
}

impl Serialize for Occupant {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if serializer.is_human_readable() {
            match self {
                Occupant::Open => OccupantText::Open,
                Occupant::Player { user_id, name } => OccupantText::Player { user_id, name },
                Occupant::Bot { level } => OccupantText::Bot {
                    level: level.to_proto() as i32,
                },
            }
            .serialize(serializer)
        } else {
            match self {
                Occupant::Open => OccupantBinary::Open,
                Occupant::Player { user_id, name } => OccupantBinary::Player { user_id, name },
                Occupant::Bot { level } => OccupantBinary::Bot {
                    level: level.to_proto() as i32,
                },
            }
            .serialize(serializer)
        }
    }
}

impl<'de> Deserialize<'de> for Occupant {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Occupant, D::Error> {
        Ok(if deserializer.is_human_readable() {
            match OccupantTextOwned::deserialize(deserializer)? {
                OccupantTextOwned::Open => Occupant::Open,
                OccupantTextOwned::Player { user_id, name } => Occupant::Player { user_id, name },
                OccupantTextOwned::Bot { level } => Occupant::Bot {
                    level: BotLevel::stored(level),
                },
            }
        } else {
            match OccupantBinaryOwned::deserialize(deserializer)? {
                OccupantBinaryOwned::Open => Occupant::Open,
                OccupantBinaryOwned::Player { user_id, name } => Occupant::Player { user_id, name },
                OccupantBinaryOwned::Bot { level } => Occupant::Bot {
                    level: BotLevel::stored(level),
                },
            }
        })
    }
}

/// How a seat was filled, for the match record, for a queue seat how long the player
/// waited, and whether its player is a guest. Kept beside the seats
/// ([`Room::seat_origins`](crate::room::Room::seat_origins)) rather than in them, so the
/// room's format-1 bytes stay as they were (the codec writes these after the room:
/// formats 2 and 3).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeatOrigin {
    /// How the seat was filled (`None`: not known). Stored as the API's `SeatFill` number
    /// (0: not known).
    #[serde(with = "stored_fill")]
    pub fill: Option<SeatFill>,
    /// Milliseconds in the queue (queue seats only).
    pub queue_wait_ms: Option<u32>,
    /// Whether accounts called the seated player a guest when they were seated (false
    /// for bots, open seats, and rooms stored before format 3).
    #[serde(default)]
    pub guest: bool,
}

impl SeatOrigin {
    /// The origin as format 2 stored it (without `guest`).
    pub fn format_2(self) -> SeatOriginFormat2 {
        SeatOriginFormat2 {
            fill: self.fill,
            queue_wait_ms: self.queue_wait_ms,
        }
    }
}

/// [`SeatOrigin`] as format 2 stores it: before `guest`.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct SeatOriginFormat2 {
    #[serde(with = "stored_fill")]
    fill: Option<SeatFill>,
    queue_wait_ms: Option<u32>,
}

impl From<SeatOriginFormat2> for SeatOrigin {
    fn from(stored: SeatOriginFormat2) -> SeatOrigin {
        SeatOrigin {
            fill: stored.fill,
            queue_wait_ms: stored.queue_wait_ms,
            guest: false,
        }
    }
}

/// A seat and its connection.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeatState {
    /// Who sits here.
    pub occupant: Occupant,
    /// Whether the player has a live stream (bots: always).
    pub connected: bool,
    /// The live stream's id, if any.
    pub conn_id: Option<String>,
    /// The replica serving it.
    pub replica: Option<String>,
    /// When it connected (Unix milliseconds).
    pub connected_at_ms: i64,
    /// When a disconnected player loses the match.
    pub grace_deadline_ms: Option<i64>,
}

/// The public facts of a seat, as events carry them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeatSnapshot {
    /// The seat number, 0-based in turn order.
    pub seat: u8,
    /// Who sits there.
    pub occupant: Occupant,
    /// Whether they are connected.
    pub connected: bool,
    /// Whether the player is a guest ([`SeatOrigin::guest`]); written only when true, so
    /// events of other seats keep their JSON form.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub guest: bool,
}

/// [`SeatOrigin::fill`] stored as the API's `SeatFill` number (0: not known; a number that
/// names no fill reads as not known).
mod stored_fill {
    use basra_proto::basra::common::v1 as pb;
    use basra_records::SeatFill;
    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(
        fill: &Option<SeatFill>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        let number = fill.map_or(pb::SeatFill::Unspecified, SeatFill::to_proto) as i32;
        serializer.serialize_i32(number)
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<SeatFill>, D::Error> {
        let number = i32::deserialize(deserializer)?;
        Ok(pb::SeatFill::try_from(number)
            .ok()
            .and_then(SeatFill::from_proto))
    }
}
