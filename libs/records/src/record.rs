//! The match record as the system keeps it: a finished match, its seats, its action log and
//! its rounds, checked for consistency ([`crate::wire`] builds one from the `RecordMatch`
//! request). The serde forms of these types are the JSON columns accounts stores
//! (`settings`, `seats`, `actions`, `rounds`, `basra_counts`): they are a stored format,
//! so a change to a field name or shape must keep old rows readable
//! (`tests/compatibility.rs`).

use basra_engine::{Card, Settings};
use basra_proto::basra::common::v1 as common;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// Most actions a match log may hold (a 4-seat match to 10,000 points stays far below).
pub const MAX_ACTIONS: usize = 100_000;
/// Most characters in a seat's display name (bot names included).
pub const SEAT_NAME_MAX: usize = 64;

/// One seat of a recorded match.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SeatRecord {
    /// The seat number.
    pub seat: u8,
    /// The scoring side (seat % 2).
    pub side: u8,
    /// The player; `None` for a bot.
    pub user_id: Option<Uuid>,
    /// Whether a bot played the seat.
    pub is_bot: bool,
    /// The name shown during the match.
    pub display_name: String,
    /// How the seat was filled; `None` when not known (records made before seats
    /// carried it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fill: Option<SeatFill>,
    /// How long the player waited in the queue (milliseconds); only for
    /// [`SeatFill::Queue`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue_wait_ms: Option<u32>,
}

/// How a seat of a match was filled (the API's `SeatFill`). The names are what accounts
/// stores in `matches.seats` and what the analyst views and the export show.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SeatFill {
    /// Matched by the queue.
    Queue,
    /// Joined by join code (not after an invite).
    Code,
    /// Joined a public room from the lobby list.
    Lobby,
    /// Joined after a friend's invite.
    Invite,
    /// Stayed for a rematch (a match after the room's first).
    Rematch,
    /// A bot.
    Bot,
    /// Created the room.
    Host,
}

impl SeatFill {
    /// Every fill, in the API's order.
    pub const ALL: [SeatFill; 7] = [
        SeatFill::Queue,
        SeatFill::Code,
        SeatFill::Lobby,
        SeatFill::Invite,
        SeatFill::Rematch,
        SeatFill::Bot,
        SeatFill::Host,
    ];

    /// The stored name (`queue`, `code`, `lobby`, `invite`, `rematch`, `bot`, `host`).
    pub fn as_str(self) -> &'static str {
        match self {
            SeatFill::Queue => "queue",
            SeatFill::Code => "code",
            SeatFill::Lobby => "lobby",
            SeatFill::Invite => "invite",
            SeatFill::Rematch => "rematch",
            SeatFill::Bot => "bot",
            SeatFill::Host => "host",
        }
    }

    /// The fill of a proto value; `None` for `SEAT_FILL_UNSPECIFIED`.
    pub fn from_proto(fill: common::SeatFill) -> Option<SeatFill> {
        Some(match fill {
            common::SeatFill::Unspecified => return None,
            common::SeatFill::Queue => SeatFill::Queue,
            common::SeatFill::Code => SeatFill::Code,
            common::SeatFill::Lobby => SeatFill::Lobby,
            common::SeatFill::Invite => SeatFill::Invite,
            common::SeatFill::Rematch => SeatFill::Rematch,
            common::SeatFill::Bot => SeatFill::Bot,
            common::SeatFill::Host => SeatFill::Host,
        })
    }

    /// The proto value.
    pub fn to_proto(self) -> common::SeatFill {
        match self {
            SeatFill::Queue => common::SeatFill::Queue,
            SeatFill::Code => common::SeatFill::Code,
            SeatFill::Lobby => common::SeatFill::Lobby,
            SeatFill::Invite => common::SeatFill::Invite,
            SeatFill::Rematch => common::SeatFill::Rematch,
            SeatFill::Bot => common::SeatFill::Bot,
            SeatFill::Host => common::SeatFill::Host,
        }
    }
}

/// What a seat did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ActionKind {
    /// Played a card, naming a capture or not (the canonical capture).
    Play {
        /// The card played.
        card: Card,
        /// The table cards the player named, in table order.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        capture: Option<Vec<Card>>,
    },
    /// Resigned.
    Resign,
}

/// One action of the log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ActionRecord {
    /// The acting seat.
    pub seat: u8,
    /// What it did.
    pub action: ActionKind,
    /// Whether the server acted for the seat.
    pub automatic: bool,
    /// When.
    pub at: DateTime<Utc>,
}

/// Basras of one side.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BasraCounts {
    /// Ordinary Basras.
    pub basra: u32,
    /// Jack Basras.
    pub jack: u32,
    /// Komi Basras.
    pub komi: u32,
}

/// One side's score for one round.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SideScore {
    /// The side (0 or 1; with two seats the side is the seat).
    pub side: u8,
    /// Cards captured.
    pub pile_size: u32,
    /// Basras made.
    pub basras: BasraCounts,
    /// Points from Basras.
    pub basra_points: u32,
    /// Points for the most cards (majority), after any carry-over.
    pub majority_points: u32,
    /// Points for the counting cards when `card_points` is on (each J and A, 2♣, 10♦).
    pub card_points: u32,
    /// The round's points.
    pub round_points: u32,
    /// The match total after the round.
    pub total: u32,
}

/// One completed round.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RoundRecord {
    /// The round, from 1.
    pub round: u32,
    /// Its dealer.
    pub dealer: u8,
    /// Each side's score, indexed by side.
    pub sides: Vec<SideScore>,
}

/// How a match ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EndReason {
    /// A side reached the target score.
    TargetReached,
    /// A player resigned.
    Resigned,
    /// A player stayed away past the grace period.
    Abandoned,
    /// An operator closed the room: no winner, unrated.
    Closed,
}

impl EndReason {
    /// The name stored in the database.
    pub fn as_str(self) -> &'static str {
        match self {
            EndReason::TargetReached => "target_reached",
            EndReason::Resigned => "resigned",
            EndReason::Abandoned => "abandoned",
            EndReason::Closed => "closed",
        }
    }

    /// The reason stored as `name`.
    pub fn from_name(name: &str) -> Option<EndReason> {
        Some(match name {
            "target_reached" => EndReason::TargetReached,
            "resigned" => EndReason::Resigned,
            "abandoned" => EndReason::Abandoned,
            "closed" => EndReason::Closed,
            _ => return None,
        })
    }

    /// The proto enum value.
    pub fn to_proto(self) -> common::MatchEndReason {
        match self {
            EndReason::TargetReached => common::MatchEndReason::TargetReached,
            EndReason::Resigned => common::MatchEndReason::Resigned,
            EndReason::Abandoned => common::MatchEndReason::Abandoned,
            EndReason::Closed => common::MatchEndReason::Closed,
        }
    }
}

/// A finished match, checked for consistency.
#[derive(Debug, Clone, PartialEq)]
pub struct MatchRecord {
    /// The idempotency key.
    pub match_id: String,
    /// The room.
    pub room_id: String,
    /// Whether the match counts for ratings.
    pub ranked: bool,
    /// The rules.
    pub settings: Settings,
    /// Every seat, indexed by seat.
    pub seats: Vec<SeatRecord>,
    /// The shuffle seed.
    pub seed: [u8; 32],
    /// The action log.
    pub actions: Vec<ActionRecord>,
    /// The completed rounds.
    pub rounds: Vec<RoundRecord>,
    /// Final totals by side.
    pub final_totals: Vec<u32>,
    /// Basras over the match by side.
    pub basra_counts: Vec<BasraCounts>,
    /// The winning side, if any.
    pub winner_side: Option<u8>,
    /// How it ended.
    pub end_reason: EndReason,
    /// When it started.
    pub started_at: DateTime<Utc>,
    /// When it ended.
    pub ended_at: DateTime<Utc>,
    /// Whether the room let anyone watch the match live; then anyone may replay it too.
    /// `false` in a record that does not say (made by a release before the field): not
    /// allowed.
    pub allow_spectators: bool,
    /// The event (tournament) the match was played in, if any: anyone may replay an event
    /// match.
    pub event_id: Option<String>,
}

/// The number of scoring sides: always two (2 players, or 2 partnerships).
pub const SIDES: usize = 2;

/// The side a seat scores for: seat % 2 (with 2 seats the side is the seat).
pub fn side_of(seat: u8) -> u8 {
    seat % 2
}

impl MatchRecord {
    /// Whether the match changes ratings: ranked, and won by a side.
    pub fn is_rated(&self) -> bool {
        self.ranked && self.winner_side.is_some() && self.end_reason != EndReason::Closed
    }

    /// Whether someone who did not play in the match may replay it: an event match, or
    /// one whose room allowed spectators (they saw it live; a replay shows no more).
    pub fn is_public(&self) -> bool {
        self.allow_spectators || self.event_id.is_some()
    }

    /// The human seats.
    pub fn players(&self) -> impl Iterator<Item = (&SeatRecord, Uuid)> {
        self.seats
            .iter()
            .filter_map(|s| s.user_id.map(|id| (s, id)))
    }
}
