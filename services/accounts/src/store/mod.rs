//! Where accounts keep their data: one trait per role, each with its implementation
//! on PostgreSQL ([`PgStore`], production) and in memory ([`MemoryStore`], the embedded
//! dev mode), in a file of the role's name beside the others of its backend:
//!
//! | role | trait | `memory/`, `pg/` |
//! |---|---|---|
//! | sign-in and tokens | [`SignIn`] | `sign_in.rs` |
//! | profiles and names | [`Profiles`] | `profiles.rs` |
//! | social: friends and blocks | [`Friends`] | `friends.rs` |
//! | match records | [`MatchRecords`] | `records.rs` |
//! | moderation: deletions, audit | [`Moderation`] | `moderation.rs` |
//! | push devices and the outbox | [`Pushes`] | `pushes.rs` |
//! | reports of players | [`Reports`] | `reports.rs` |
//! | the inbox: players' notices | [`Inbox`] | `inbox.rs` |
//! | finished seasons' leaderboards | [`Seasons`] | `seasons.rs` |
//!
//! [`Store`] is all of them and what only a whole store answers (row counts, the pool's
//! state): the service takes one `S: Store`. A caller holding a concrete store calls the
//! roles' methods with [`prelude`] in scope. One contract test suite
//! (`tests/it/store_contract/`, a module per role) holds both backends to the same
//! behaviour.
//!
//! Each method is one atomic step: whatever must not be seen half done (a new
//! guest and its device, a rotation, a match and its rating changes) happens in
//! a single call.

use std::future::Future;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::error::Result;
use crate::seasons::Calendar;

mod friends;
mod inbox;
mod memory;
mod moderation;
mod pg;
mod profiles;
pub mod pushes;
mod records;
mod reports;
mod seasons;
mod sign_in;

pub use friends::Friends;
pub use inbox::Inbox;
pub use memory::MemoryStore;
pub use moderation::{AuditEntry, DeletedAccount, Moderation};
pub use pg::{MIGRATOR, PgStore};
pub use profiles::{LeaderboardCursor, LeaderboardRow, LeaderboardRules, Profile, Profiles};
pub use pushes::Pushes;
pub use records::{
    HistoryCursor, HistoryEntry, KeptAnalysis, MatchRecords, PlayedMatch, RatingChange, Recorded,
};
pub use reports::{ClosedReport, Filing, NewReport, Report, ReportedTarget, Reports, Resolved};
pub use seasons::{SeasonFinish, SeasonRating, Seasons};
pub use sign_in::{
    AccountRecords, GuestUpgrade, LinkedProvider, NewAccount, NewGuest, NewProviderAccount,
    NewSession, Rotation, SignIn,
};

/// The roles' traits, unnamed: `use accounts::store::prelude::*;` lets a concrete store
/// ([`PgStore`], [`MemoryStore`]) be called by every role's methods.
pub mod prelude {
    pub use super::Friends as _;
    pub use super::Inbox as _;
    pub use super::MatchRecords as _;
    pub use super::Moderation as _;
    pub use super::Profiles as _;
    pub use super::Pushes as _;
    pub use super::Reports as _;
    pub use super::Seasons as _;
    pub use super::SignIn as _;
    pub use super::Store as _;
}

/// An account.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct User {
    /// Its id.
    pub id: Uuid,
    /// The login name as registered; `None` for a guest.
    pub username: Option<String>,
    /// The name shown to others.
    pub display_name: String,
    /// Whether it is a guest (device sign-in only).
    pub is_guest: bool,
    /// When it was created.
    pub created_at: DateTime<Utc>,
}

/// Row counts, to check that a rejected request wrote nothing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// Accounts.
    pub users: u64,
    /// Password credentials.
    pub credentials: u64,
    /// Refresh tokens (any state).
    pub refresh_tokens: u64,
    /// Refresh tokens revoked (signed out, rotated, or by a ban).
    pub revoked_refresh_tokens: u64,
    /// Recorded matches.
    pub matches: u64,
    /// Friend links (requests, friendship halves, blocks).
    pub friend_links: u64,
}

/// A connection pool's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolStats {
    /// Connections open.
    pub size: u32,
    /// Of those, idle.
    pub idle: usize,
    /// The most the pool opens.
    pub max: u32,
}

/// Persistent state of the accounts service: every role, and what only the whole store
/// answers.
///
/// Implementations are cheap to clone (a pool or an `Arc`) and safe to share.
pub trait Store:
    SignIn
    + Profiles
    + Friends
    + MatchRecords
    + Moderation
    + Pushes
    + Reports
    + Inbox
    + Seasons
    + Clone
    + Send
    + Sync
    + 'static
{
    /// The connection pool's state, for the metrics: `None` for a store without one.
    fn pool_stats(&self) -> Option<PoolStats> {
        None
    }

    /// Row counts.
    fn counts(&self) -> impl Future<Output = Result<Counts>> + Send;

    /// This store with these rating seasons (none by default): a rated match moves its
    /// players' ratings to the season of its recording, and reads show a rating still
    /// in an earlier season as the soft reset leaves it ([`Calendar::roll`]). The service
    /// gives its store the calendar of its settings.
    #[must_use]
    fn with_calendar(self, calendar: Arc<Calendar>) -> Self;
}
