//! A match record as read back from storage: the `analyst.match_records` view of accounts'
//! database, which the analytics export streams. It is the [`crate::MatchRecord`] without
//! display names (the view leaves them out), plus what accounts added when it recorded
//! the match (when, and the rating changes).
//!
//! The action log of a stored row is in one of two forms: the binary
//! [`crate::action_log`] for rows recorded since migration `20261201000003_action_log`,
//! JSON (the serde form of [`ActionRecord`]) before; a row holds exactly one.

use basra_engine::Settings;
use chrono::{DateTime, Utc};
use serde::Deserialize;
use uuid::Uuid;

use crate::action_log::{self, ActionLogError};
use crate::record::{ActionRecord, BasraCounts, RoundRecord, SeatFill};

/// One seat as the export sees it (no display name).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct SeatInfo {
    /// The seat number.
    pub seat: u8,
    /// Its side.
    pub side: u8,
    /// The player; `None` for a bot.
    pub user_id: Option<Uuid>,
    /// Whether a bot played it.
    pub is_bot: bool,
    /// How it was filled; `None` when the record does not say.
    #[serde(default)]
    pub fill: Option<SeatFill>,
    /// How long the player waited in the queue (milliseconds), for a queue seat.
    #[serde(default)]
    pub queue_wait_ms: Option<u32>,
}

/// The rating change of one rated seat.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
pub struct SeatRating {
    /// The rated seat, 0-based in turn order.
    pub seat: u8,
    /// Rating before the match.
    pub rating_before: f64,
    /// Rating after it.
    pub rating_after: f64,
    /// Rating deviation after it.
    pub deviation_after: f64,
}

/// The client app kept with one seat (accounts' `match_players.client_platform`,
/// `client_app_version`): the player's latest sign-in at or before the match's end.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct SeatClient {
    /// The seat the player took, 0-based in turn order.
    pub seat: u8,
    /// `web`, `android`, `cli`, …
    pub platform: String,
    /// The app's version.
    pub app_version: String,
}

/// A stored match record, decoded.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredMatch {
    /// The match.
    pub match_id: String,
    /// Its room.
    pub room_id: String,
    /// Whether it counted for ratings.
    pub ranked: bool,
    /// The rules.
    pub settings: Settings,
    /// The seats, by number.
    pub seats: Vec<SeatInfo>,
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
    /// The winning side.
    pub winner_side: Option<u8>,
    /// How it ended (`target_reached`, `resigned`, `abandoned`, `closed`: the names of
    /// [`crate::EndReason::as_str`]).
    pub end_reason: String,
    /// When it started.
    pub started_at: DateTime<Utc>,
    /// When it ended.
    pub ended_at: DateTime<Utc>,
    /// When accounts recorded it.
    pub recorded_at: DateTime<Utc>,
    /// The rating changes of rated seats.
    pub ratings: Vec<SeatRating>,
    /// The client apps of the seats whose client is known (none for bots).
    pub clients: Vec<SeatClient>,
}

/// The action log of a stored row, in whichever form it was written.
#[derive(Debug, Clone, PartialEq)]
pub enum StoredLog<'a> {
    /// The binary `action_log` column.
    Binary(&'a [u8]),
    /// The JSON `actions` column, already parsed (rows recorded before the binary log).
    Json(Vec<ActionRecord>),
}

impl StoredLog<'_> {
    /// The actions.
    pub fn decode(self) -> Result<Vec<ActionRecord>, ActionLogError> {
        match self {
            StoredLog::Binary(bytes) => action_log::decode(bytes),
            StoredLog::Json(actions) => Ok(actions),
        }
    }
}
