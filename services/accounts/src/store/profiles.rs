//! Profiles and names: who a player is, their rating and statistics, the leaderboard,
//! and display names (changed under a rate limit, searched by operators).

use std::future::Future;

use basra_records::BasraCounts;
use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::User;
use crate::domain::DisplayName;
use crate::error::Result;
use crate::names::{NameChange, NameChangeLimit};
use crate::rating::Rating;

/// A player's profile with statistics.
#[derive(Debug, Clone, PartialEq)]
pub struct Profile {
    /// The account.
    pub user: User,
    /// Glicko-2 state.
    pub rating: Rating,
    /// Ranked matches that changed the rating.
    pub ranked_matches: u32,
    /// Of those, the ones in the current season (0 while the rating is still in an
    /// earlier one).
    pub season_matches: u32,
    /// Recorded matches.
    pub matches_played: u32,
    /// Matches won.
    pub wins: u32,
    /// Matches lost.
    pub losses: u32,
    /// Basras of the player's side over all matches.
    pub basras: BasraCounts,
    /// Position on the leaderboard, when listed.
    pub leaderboard_rank: Option<u32>,
}

/// One leaderboard row.
#[derive(Debug, Clone, PartialEq)]
pub struct LeaderboardRow {
    /// The player.
    pub user_id: Uuid,
    /// Their name.
    pub display_name: String,
    /// Their rating.
    pub rating: f64,
    /// Their ranked matches.
    pub ranked_matches: u32,
}

impl LeaderboardRow {
    /// The keyset position of this row, to continue after it.
    pub fn cursor(&self) -> LeaderboardCursor {
        LeaderboardCursor {
            rating: self.rating,
            ranked_matches: self.ranked_matches,
            user_id: self.user_id,
        }
    }
}

/// A position in the leaderboard order (rating desc, ranked matches desc, user id asc).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LeaderboardCursor {
    /// The rating of the last row seen.
    pub rating: f64,
    /// Its ranked matches.
    pub ranked_matches: u32,
    /// Its user id.
    pub user_id: Uuid,
}

/// Which players the leaderboard lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LeaderboardRules {
    /// Registered players with at least this many ranked matches (guests never).
    pub min_ranked_matches: u32,
}

/// Players as others see them: accounts, profiles, the leaderboard and names.
pub trait Profiles: Send + Sync {
    /// The account with this id.
    fn user(&self, id: Uuid) -> impl Future<Output = Result<Option<User>>> + Send;

    /// The accounts among `ids` that exist, each with its rating (any order).
    fn players(&self, ids: &[Uuid]) -> impl Future<Output = Result<Vec<(User, Rating)>>> + Send;

    /// Sets the user's display name as [`crate::names::decide`] rules, given the user's
    /// changes since [`NameChangeLimit::window_start`]: one atomic step that also
    /// serializes concurrent changes of one user (each counts the other). A name equal to
    /// the current one writes nothing; a refused change writes nothing. Errors:
    /// `UserNotFound`.
    fn set_display_name(
        &self,
        user_id: Uuid,
        name: &DisplayName,
        limit: NameChangeLimit,
        now: DateTime<Utc>,
    ) -> impl Future<Output = Result<NameChange>> + Send;

    /// The user's profile and statistics.
    fn profile(
        &self,
        user_id: Uuid,
        rules: LeaderboardRules,
    ) -> impl Future<Output = Result<Option<Profile>>> + Send;

    /// Up to `limit` listed players after `after`, best first.
    fn leaderboard(
        &self,
        rules: LeaderboardRules,
        after: Option<LeaderboardCursor>,
        limit: u32,
    ) -> impl Future<Output = Result<Vec<LeaderboardRow>>> + Send;

    /// The user's leaderboard rank (1 = best) and row, if listed.
    fn leaderboard_position(
        &self,
        user_id: Uuid,
        rules: LeaderboardRules,
    ) -> impl Future<Output = Result<Option<(u32, LeaderboardRow)>>> + Send;

    /// The account registered as `username_key` (lower case).
    fn user_by_username(
        &self,
        username_key: &str,
    ) -> impl Future<Output = Result<Option<User>>> + Send;

    /// Up to `limit` accounts whose display name contains `fragment` (case-insensitive),
    /// by display name then id (AccountsAdminService.FindPlayers).
    fn find_by_display_name(
        &self,
        fragment: &str,
        limit: u32,
    ) -> impl Future<Output = Result<Vec<User>>> + Send;
}
