//! Match records: finished matches stored once each with their rating changes, each
//! player's history of them, and the analyses of their plays (kept once computed).

use std::future::Future;

use basra_engine::analysis::PlayReview;
use basra_platform::client_info::ClientInfo;
use basra_records::{EndReason, MatchRecord, SeatRecord};
use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::error::{AccountsError, Result};
use crate::rating::RatingUpdate;

/// A rating change as stored with a match.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RatingChange {
    /// The player.
    pub user_id: Uuid,
    /// Their seat.
    pub seat: u8,
    /// Their Glicko-2 rating before the match.
    pub rating_before: f64,
    /// Their Glicko-2 rating after the match.
    pub rating_after: f64,
    /// Their rating deviation after the match.
    pub deviation_after: f64,
}

impl From<&RatingUpdate> for RatingChange {
    fn from(u: &RatingUpdate) -> Self {
        Self {
            user_id: u.user_id,
            seat: u.seat,
            rating_before: u.before.rating,
            rating_after: u.after.rating,
            deviation_after: u.after.deviation,
        }
    }
}

/// The result of [`MatchRecords::record_match`].
#[derive(Debug, Clone, PartialEq)]
pub struct Recorded {
    /// True when the match id was already recorded: nothing changed.
    pub already_recorded: bool,
    /// The rating changes (of the first recording), by seat.
    pub rating_changes: Vec<RatingChange>,
}

/// A match as a player's history shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct HistoryEntry {
    /// The match.
    pub match_id: String,
    /// The room.
    pub room_id: String,
    /// Whether it was ranked.
    pub ranked: bool,
    /// The rules.
    pub settings: basra_engine::Settings,
    /// Every seat.
    pub seats: Vec<SeatRecord>,
    /// The player's seat.
    pub your_seat: u8,
    /// The winning side.
    pub winner_side: Option<u8>,
    /// How it ended.
    pub end_reason: EndReason,
    /// Final totals by side.
    pub final_totals: Vec<u32>,
    /// Rounds played.
    pub rounds: u32,
    /// The player's rating change, if the match changed it.
    pub your_rating_change: Option<RatingChange>,
    /// Start.
    pub started_at: DateTime<Utc>,
    /// End.
    pub ended_at: DateTime<Utc>,
}

impl HistoryEntry {
    /// The keyset position of this entry, to continue after it.
    pub fn cursor(&self) -> HistoryCursor {
        HistoryCursor {
            ended_at: self.ended_at,
            match_id: self.match_id.clone(),
        }
    }
}

/// A position in a history (ended_at desc, match id desc).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HistoryCursor {
    /// End of the last match seen.
    pub ended_at: DateTime<Utc>,
    /// Its id.
    pub match_id: String,
}

/// A recorded match of one player, whole (ExportMyData).
#[derive(Debug, Clone, PartialEq)]
pub struct PlayedMatch {
    /// The record, moves included.
    pub record: MatchRecord,
    /// The player's seat.
    pub your_seat: u8,
    /// The player's rating change, if the match changed it.
    pub rating_change: Option<RatingChange>,
    /// The client app kept with the player's seat: that of their latest sign-in at or
    /// before the match's end that named one (`None`: none did, or the match was
    /// recorded before seats kept it).
    pub your_client: Option<ClientInfo>,
}

impl PlayedMatch {
    /// The keyset position of this match in the player's history.
    pub fn cursor(&self) -> HistoryCursor {
        HistoryCursor {
            ended_at: self.record.ended_at,
            match_id: self.record.match_id.clone(),
        }
    }
}

/// An analysis kept for one seat of a match ([`MatchRecords::kept_analyses`]).
#[derive(Debug, Clone, PartialEq)]
pub struct KeptAnalysis {
    /// The match.
    pub match_id: String,
    /// The seat whose plays it reviews.
    pub seat: u8,
    /// The search's worlds per play it was computed with.
    pub worlds: u32,
    /// The verdict on each play.
    pub reviews: Vec<PlayReview>,
}

/// Finished matches and the ratings they change.
pub trait MatchRecords: Send + Sync {
    /// Records a finished match and, if it is rated, applies its Glicko-2
    /// changes ([`crate::rating::rate`]) in the same transaction. Each human seat
    /// keeps its player's client app: that of the latest sign-in noted
    /// ([`SignIn::note_sign_in_client`](super::SignIn::note_sign_in_client)) at or before the match's end, of two at the
    /// same time the one noted last; none when there is none (bots and deleted
    /// players' placeholder seats keep none). Idempotent by match id: a second call
    /// changes nothing and answers the first changes with `already_recorded`.
    /// Errors: `InvalidArgument` when a seat names an unknown user. A batch of one
    /// ([`MatchRecords::record_matches`]).
    fn record_match(
        &self,
        record: &MatchRecord,
        now: DateTime<Utc>,
    ) -> impl Future<Output = Result<Recorded>> + Send {
        async move {
            let mut recorded = self
                .record_matches(std::slice::from_ref(record), now)
                .await
                .map_err(AccountsError::without_record)?;
            recorded
                .pop()
                .ok_or_else(|| AccountsError::Internal("a batch of one answered nothing".into()))
        }
    }

    /// Records finished matches in one atomic step, each exactly as
    /// [`MatchRecords::record_match`] would if called for each in `records` order: idempotent
    /// by match id (a match recorded before, or earlier in `records`, changes nothing
    /// and is answered the first recording's changes with `already_recorded`), and
    /// each rated match rated from the ratings the matches before it left. Answers one
    /// [`Recorded`] per record, in order. All or nothing: when a record names an
    /// unknown user nothing is written and the error is
    /// [`AccountsError::InvalidRecord`] naming the record.
    fn record_matches(
        &self,
        records: &[MatchRecord],
        now: DateTime<Utc>,
    ) -> impl Future<Output = Result<Vec<Recorded>>> + Send;

    /// Up to `limit` of the user's matches after `after`, newest first.
    fn match_history(
        &self,
        user_id: Uuid,
        after: Option<HistoryCursor>,
        limit: u32,
    ) -> impl Future<Output = Result<Vec<HistoryEntry>>> + Send;

    /// Up to `limit` of the user's recorded matches after `after`, whole, in the order
    /// of [`MatchRecords::match_history`] (newest first).
    fn played_matches(
        &self,
        user_id: Uuid,
        after: Option<HistoryCursor>,
        limit: u32,
    ) -> impl Future<Output = Result<Vec<PlayedMatch>>> + Send;

    /// The recorded match `match_id`, whole, if the user played in it (`None`: no such
    /// match, or not theirs).
    fn played_match(
        &self,
        user_id: Uuid,
        match_id: &str,
    ) -> impl Future<Output = Result<Option<PlayedMatch>>> + Send;

    /// The recorded match `match_id`, whole, whoever played in it (`None`: no such match).
    /// GetReplay serves it to someone who did not play when [`MatchRecord::is_public`].
    fn recorded_match(
        &self,
        match_id: &str,
    ) -> impl Future<Output = Result<Option<MatchRecord>>> + Send;

    /// The analysis kept for `seat`'s plays of the match, if one was kept computed with
    /// `worlds` worlds per play.
    fn match_analysis(
        &self,
        match_id: &str,
        seat: u8,
        worlds: u32,
    ) -> impl Future<Output = Result<Option<Vec<PlayReview>>>> + Send;

    /// Keeps the analysis of `seat`'s plays of the match, computed with `worlds` worlds
    /// per play: it replaces one computed with other worlds, never one with the same (two
    /// replicas that computed it at once keep the first).
    fn keep_match_analysis(
        &self,
        match_id: &str,
        seat: u8,
        worlds: u32,
        reviews: &[PlayReview],
        now: DateTime<Utc>,
    ) -> impl Future<Output = Result<()>> + Send;

    /// The analyses kept for these (match, seat) pairs, whatever worlds they were computed
    /// with (any order; a pair without one is left out): ExportMyData's.
    fn kept_analyses(
        &self,
        seats: &[(String, u8)],
    ) -> impl Future<Output = Result<Vec<KeptAnalysis>>> + Send;
}
