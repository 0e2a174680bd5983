//! Rating seasons: the finished seasons' leaderboards, kept. The current season's ratings
//! are the live ones ([`Profiles`](super::Profiles)); when a player's rating moves to a
//! new season (lazily: at their next rated match, [`crate::seasons::Calendar::roll`]) its
//! last value in the old season is archived, and a finished season is closed once
//! ([`Seasons::close_season`]): every rating still in it archived. A finished season's
//! leaderboard is read from the archive only.

use std::future::Future;

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::{LeaderboardCursor, LeaderboardRow, LeaderboardRules};
use crate::error::Result;
use crate::rating::Rating;

/// A player's place in a finished season.
#[derive(Debug, Clone, PartialEq)]
pub struct SeasonFinish {
    /// The season.
    pub season_id: String,
    /// Their rank on its final leaderboard (1 = best).
    pub rank: u32,
    /// Their final rating in it.
    pub rating: f64,
    /// Their rated matches in it.
    pub ranked_matches: u32,
}

/// A player's last rating in a finished season, as archived, listed or not.
#[derive(Debug, Clone, PartialEq)]
pub struct SeasonRating {
    /// The season.
    pub season_id: String,
    /// Their Glicko-2 state at its end.
    pub rating: Rating,
    /// Their rated matches in it.
    pub season_matches: u32,
}

/// The finished seasons' leaderboards.
pub trait Seasons: Send + Sync {
    /// Closes the finished season `season_id` exactly once, however many replicas call
    /// it at once: the first call claims the season (a row per season) and archives every
    /// rating still in it, in one atomic step; every later call changes nothing. Answers
    /// whether this call closed it. The caller says the season is over (no rating changes
    /// in it any more).
    fn close_season(
        &self,
        season_id: &str,
        now: DateTime<Utc>,
    ) -> impl Future<Output = Result<bool>> + Send;

    /// Up to `limit` listed players of the finished season's leaderboard after `after`,
    /// best first (the order of [`Profiles::leaderboard`](super::Profiles::leaderboard),
    /// with each row's rated matches in the season).
    fn season_leaderboard(
        &self,
        season_id: &str,
        rules: LeaderboardRules,
        after: Option<LeaderboardCursor>,
        limit: u32,
    ) -> impl Future<Output = Result<Vec<LeaderboardRow>>> + Send;

    /// The user's rank (1 = best) and row on the finished season's leaderboard, if listed.
    fn season_position(
        &self,
        user_id: Uuid,
        season_id: &str,
        rules: LeaderboardRules,
    ) -> impl Future<Output = Result<Option<(u32, LeaderboardRow)>>> + Send;

    /// The user's places on every archived season's leaderboard they are listed on (any
    /// order).
    fn season_finishes(
        &self,
        user_id: Uuid,
        rules: LeaderboardRules,
    ) -> impl Future<Output = Result<Vec<SeasonFinish>>> + Send;

    /// Every archived rating of the user (one per finished season they played rated
    /// matches in, whether or not its leaderboard lists them), by season id.
    fn season_ratings(
        &self,
        user_id: Uuid,
    ) -> impl Future<Output = Result<Vec<SeasonRating>>> + Send;
}
