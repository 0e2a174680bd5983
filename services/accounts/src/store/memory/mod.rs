//! The in-memory store of the embedded dev mode: everything behind one mutex,
//! so each method is atomic like a PostgreSQL transaction. Data is lost when
//! the process ends.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use basra_platform::client_info::ClientInfo;
use basra_records::{BasraCounts, MatchRecord};
use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::{Counts, RatingChange, Store, User};
use crate::error::Result;
use crate::rating::Rating;
use crate::refresh::{RefreshTokenRecord, TokenHash};
use crate::seasons::{Calendar, NO_SEASON};

mod friends;
mod inbox;
mod moderation;
mod profiles;
mod pushes;
mod records;
mod reports;
mod seasons;
mod sign_in;

/// A [`Store`] in process memory.
#[derive(Debug, Clone, Default)]
pub struct MemoryStore {
    inner: Arc<Mutex<Inner>>,
    /// The rating seasons (none by default).
    calendar: Arc<Calendar>,
}

#[derive(Debug, Default)]
struct Inner {
    users: HashMap<Uuid, User>,
    username_keys: HashMap<String, Uuid>,
    devices: HashMap<String, Uuid>,
    passwords: HashMap<Uuid, String>,
    /// When each password was last set.
    password_dates: HashMap<Uuid, DateTime<Utc>>,
    refresh: HashMap<TokenHash, RefreshTokenRecord>,
    ratings: HashMap<Uuid, RatingRow>,
    matches: HashMap<String, MatchRecord>,
    players: HashMap<Uuid, Vec<PlayerRow>>,
    changes: HashMap<String, Vec<RatingChange>>,
    friends: friends::FriendBook,
    /// Every player's notices.
    notices: inbox::Notices,
    /// The times of each user's display name changes (the recent ones).
    name_changes: HashMap<Uuid, Vec<DateTime<Utc>>>,
    /// The operators' actions, in order.
    audit: Vec<super::AuditEntry>,
    /// Reports of players, in filing order.
    reports: Vec<super::Report>,
    /// SHA-256 of each deleted account's id, and when it was deleted.
    deleted: HashMap<[u8; 32], DateTime<Utc>>,
    /// Each user's sign-in clients, oldest first.
    clients: HashMap<Uuid, Vec<(ClientInfo, DateTime<Utc>)>>,
    /// The provider accounts, each with its user and when it was bound.
    providers: HashMap<crate::oidc::ProviderIdentity, (Uuid, DateTime<Utc>)>,
    /// Push devices and the outbox.
    pushes: pushes::PushBook,
    /// The finished seasons' ratings, by season then user.
    season_ratings: HashMap<String, HashMap<Uuid, RatingRow>>,
    /// The closed seasons.
    closed_seasons: HashMap<String, DateTime<Utc>>,
    /// The analyses kept, by match and seat, each with its worlds per play.
    analyses: HashMap<(String, u8), (u32, Vec<basra_engine::analysis::PlayReview>)>,
}

#[derive(Debug, Clone)]
struct RatingRow {
    rating: Rating,
    /// Rated matches over all seasons.
    ranked_matches: u32,
    /// The season `rating` belongs to.
    season: String,
    /// Rated matches in `season`.
    season_matches: u32,
}

impl RatingRow {
    fn new() -> RatingRow {
        RatingRow {
            rating: Rating::default(),
            ranked_matches: 0,
            season: NO_SEASON.to_owned(),
            season_matches: 0,
        }
    }
}

#[derive(Debug, Clone)]
struct PlayerRow {
    match_id: String,
    seat: u8,
    ended_at: DateTime<Utc>,
    won: bool,
    lost: bool,
    basras: BasraCounts,
    change: Option<RatingChange>,
    /// The player's client app at the match's end ([`Inner::client_at`]).
    client: Option<ClientInfo>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> MemoryStore {
        MemoryStore::default()
    }

    /// The id of the season running now.
    fn current_season(&self) -> String {
        self.calendar.id_at(crate::domain::now()).to_owned()
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while holding the lock leaves no half-done step behind (each
        // method checks before it writes), so a poisoned lock is still usable.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Inner {
    fn new_user(&mut self, user: User) {
        self.ratings.insert(user.id, RatingRow::new());
        self.users.insert(user.id, user);
    }
}

impl Store for MemoryStore {
    fn with_calendar(self, calendar: Arc<Calendar>) -> MemoryStore {
        MemoryStore { calendar, ..self }
    }

    async fn counts(&self) -> Result<Counts> {
        let inner = self.lock();
        Ok(Counts {
            users: inner.users.len() as u64,
            credentials: inner.passwords.len() as u64,
            refresh_tokens: inner.refresh.len() as u64,
            revoked_refresh_tokens: inner
                .refresh
                .values()
                .filter(|t| t.revoked_at.is_some())
                .count() as u64,
            matches: inner.matches.len() as u64,
            friend_links: inner.friends.link_count(),
        })
    }
}
