//! The in-memory store of the embedded dev mode: everything behind one mutex,
//! so each method is atomic like a PostgreSQL transaction. Data is lost when
//! the process ends.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use basra_platform::client_info::ClientInfo;
use basra_records::{BasraCounts, MatchRecord};
use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::{
    Counts, GuestUpgrade, HistoryCursor, HistoryEntry, LeaderboardCursor, LeaderboardRow,
    LeaderboardRules, NewAccount, NewGuest, NewSession, Profile, RatingChange, Recorded, Rotation,
    Store, User,
};
use crate::domain::{DeviceId, DisplayName};
use crate::error::{AccountsError, Result};
use crate::friends::{Action, FriendCode, FriendLimits, FriendList, Outcome};
use crate::names::{NameChange, NameChangeLimit, decide};
use crate::rating::{Rating, rate};
use crate::refresh::{RefreshTokenRecord, TokenHash, TokenState};

mod account;
mod friends;
mod provider;

/// A [`Store`] in process memory.
#[derive(Debug, Clone, Default)]
pub struct MemoryStore {
    inner: Arc<Mutex<Inner>>,
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
    friends: friends::Friends,
    /// The times of each user's display name changes (the recent ones).
    name_changes: HashMap<Uuid, Vec<DateTime<Utc>>>,
    /// The operators' actions, in order.
    audit: Vec<super::AuditEntry>,
    /// SHA-256 of each deleted account's id, and when it was deleted.
    deleted: HashMap<[u8; 32], DateTime<Utc>>,
    /// Each user's sign-in clients, oldest first.
    clients: HashMap<Uuid, Vec<(ClientInfo, DateTime<Utc>)>>,
    /// The provider accounts, each with its user and when it was bound.
    providers: HashMap<crate::oidc::ProviderIdentity, (Uuid, DateTime<Utc>)>,
}

#[derive(Debug, Clone, Copy)]
struct RatingRow {
    rating: Rating,
    ranked_matches: u32,
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

impl Inner {
    /// The client app of `user_id`'s latest sign-in at or before `at`; of two at the
    /// same time, the one noted last (the list is kept sorted by a stable sort), as
    /// PostgreSQL's `ORDER BY signed_in_at DESC, id DESC`.
    fn client_at(&self, user_id: Uuid, at: DateTime<Utc>) -> Option<ClientInfo> {
        self.clients
            .get(&user_id)?
            .iter()
            .rev()
            .find(|(_, signed_in_at)| *signed_in_at <= at)
            .map(|(client, _)| client.clone())
    }

    /// Records one match whose players all exist (checked by the caller).
    fn record_one(&mut self, record: &MatchRecord) -> Recorded {
        if self.matches.contains_key(&record.match_id) {
            return Recorded {
                already_recorded: true,
                rating_changes: self
                    .changes
                    .get(&record.match_id)
                    .cloned()
                    .unwrap_or_default(),
            };
        }
        let current: HashMap<Uuid, Rating> = record
            .players()
            .filter_map(|(_, id)| self.ratings.get(&id).map(|row| (id, row.rating)))
            .collect();
        let updates = rate(record, &current);
        let changes: Vec<RatingChange> = updates.iter().map(RatingChange::from).collect();
        for u in &updates {
            if let Some(row) = self.ratings.get_mut(&u.user_id) {
                row.rating = u.after;
                row.ranked_matches += 1;
            }
        }
        for (seat, user_id) in record.players() {
            let side = usize::from(seat.side);
            let row = PlayerRow {
                match_id: record.match_id.clone(),
                seat: seat.seat,
                ended_at: record.ended_at,
                won: record.winner_side == Some(seat.side),
                lost: record.winner_side.is_some_and(|w| w != seat.side),
                basras: record.basra_counts.get(side).copied().unwrap_or_default(),
                change: changes.iter().find(|c| c.user_id == user_id).copied(),
                client: self.client_at(user_id, record.ended_at),
            };
            self.players.entry(user_id).or_default().push(row);
        }
        self.changes
            .insert(record.match_id.clone(), changes.clone());
        self.matches.insert(record.match_id.clone(), record.clone());
        Recorded {
            already_recorded: false,
            rating_changes: changes,
        }
    }
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> MemoryStore {
        MemoryStore::default()
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while holding the lock leaves no half-done step behind (each
        // method checks before it writes), so a poisoned lock is still usable.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Inner {
    fn new_user(&mut self, user: User) {
        self.ratings.insert(
            user.id,
            RatingRow {
                rating: Rating::default(),
                ranked_matches: 0,
            },
        );
        self.users.insert(user.id, user);
    }

    fn listed(&self, rules: LeaderboardRules) -> Vec<LeaderboardRow> {
        let mut rows: Vec<LeaderboardRow> = self
            .ratings
            .iter()
            .filter(|(_, r)| r.ranked_matches >= rules.min_ranked_matches)
            .filter_map(|(id, r)| {
                let user = self.users.get(id).filter(|u| !u.is_guest)?;
                Some(LeaderboardRow {
                    user_id: *id,
                    display_name: user.display_name.clone(),
                    rating: r.rating.rating,
                    ranked_matches: r.ranked_matches,
                })
            })
            .collect();
        rows.sort_by(|a, b| {
            b.rating
                .total_cmp(&a.rating)
                .then(b.ranked_matches.cmp(&a.ranked_matches))
                .then(a.user_id.cmp(&b.user_id))
        });
        rows
    }
}

/// Whether `row` comes after `cursor` in leaderboard order.
fn after_cursor(row: &LeaderboardRow, cursor: &LeaderboardCursor) -> bool {
    row.rating < cursor.rating
        || (row.rating == cursor.rating
            && (row.ranked_matches < cursor.ranked_matches
                || (row.ranked_matches == cursor.ranked_matches && row.user_id > cursor.user_id)))
}

impl Store for MemoryStore {
    async fn guest_login(
        &self,
        device: &DeviceId,
        new: NewGuest,
        session: NewSession,
    ) -> Result<User> {
        let mut inner = self.lock();
        if inner.refresh.contains_key(&session.hash) {
            return Err(AccountsError::Internal(
                "refresh token hash collision".into(),
            ));
        }
        let user = match inner.devices.get(device.as_str()) {
            Some(id) => inner
                .users
                .get(id)
                .cloned()
                .ok_or_else(|| AccountsError::Internal("device without user".into()))?,
            None => {
                let user = User {
                    id: new.id,
                    username: None,
                    display_name: new.display_name.as_str().to_owned(),
                    is_guest: true,
                    created_at: new.now,
                };
                inner.devices.insert(device.as_str().to_owned(), user.id);
                inner.new_user(user.clone());
                user
            }
        };
        if user.is_guest {
            inner
                .refresh
                .insert(session.hash, session.token_for(user.id));
        }
        Ok(user)
    }

    async fn create_account(&self, new: NewAccount) -> Result<User> {
        let mut inner = self.lock();
        let key = new.username.key();
        if inner.username_keys.contains_key(&key) {
            return Err(AccountsError::UsernameTaken);
        }
        let user = User {
            id: new.id,
            username: Some(new.username.as_str().to_owned()),
            display_name: new.display_name.as_str().to_owned(),
            is_guest: false,
            created_at: new.now,
        };
        inner.username_keys.insert(key, user.id);
        inner.passwords.insert(user.id, new.password_hash);
        inner.password_dates.insert(user.id, new.now);
        inner.new_user(user.clone());
        Ok(user)
    }

    async fn upgrade_guest(&self, up: GuestUpgrade) -> Result<User> {
        let mut inner = self.lock();
        let user = inner
            .users
            .get(&up.user_id)
            .cloned()
            .ok_or(AccountsError::UserNotFound)?;
        if !user.is_guest {
            return Err(AccountsError::AlreadyRegistered);
        }
        let key = up.username.key();
        if inner.username_keys.contains_key(&key) {
            return Err(AccountsError::UsernameTaken);
        }
        let user = User {
            username: Some(up.username.as_str().to_owned()),
            display_name: up
                .display_name
                .map_or(user.display_name, |d| d.as_str().to_owned()),
            is_guest: false,
            ..user
        };
        inner.username_keys.insert(key, user.id);
        inner.passwords.insert(user.id, up.password_hash);
        inner.password_dates.insert(user.id, up.now);
        inner.users.insert(user.id, user.clone());
        for token in inner.refresh.values_mut() {
            if token.user_id == user.id && token.revoked_at.is_none() {
                token.revoked_at = Some(up.now);
            }
        }
        Ok(user)
    }

    async fn password_credentials(&self, username_key: &str) -> Result<Option<(User, String)>> {
        let inner = self.lock();
        Ok(inner.username_keys.get(username_key).and_then(|id| {
            Some((
                inner.users.get(id)?.clone(),
                inner.passwords.get(id)?.clone(),
            ))
        }))
    }

    async fn user(&self, id: Uuid) -> Result<Option<User>> {
        Ok(self.lock().users.get(&id).cloned())
    }

    async fn blocks(&self, blockers: &[Uuid]) -> Result<Vec<(Uuid, Uuid)>> {
        Ok(self.lock().friends.blocks(blockers))
    }

    async fn note_sign_in_client(
        &self,
        user_id: Uuid,
        client: &ClientInfo,
        at: DateTime<Utc>,
    ) -> Result<()> {
        let mut inner = self.lock();
        if !inner.users.contains_key(&user_id) {
            return Err(AccountsError::UserNotFound);
        }
        let clients = inner.clients.entry(user_id).or_default();
        clients.push((client.clone(), at));
        clients.sort_by_key(|(_, at)| *at);
        Ok(())
    }

    async fn sign_in_clients(&self, user_id: Uuid) -> Result<Vec<(ClientInfo, DateTime<Utc>)>> {
        Ok(self
            .lock()
            .clients
            .get(&user_id)
            .cloned()
            .unwrap_or_default())
    }

    async fn set_display_name(
        &self,
        user_id: Uuid,
        name: &DisplayName,
        limit: NameChangeLimit,
        now: DateTime<Utc>,
    ) -> Result<NameChange> {
        let mut inner = self.lock();
        let inner = &mut *inner;
        let user = inner
            .users
            .get_mut(&user_id)
            .ok_or(AccountsError::UserNotFound)?;
        let start = limit.window_start(now);
        let changes = inner.name_changes.entry(user_id).or_default();
        changes.retain(|t| *t > start);
        let differs = user.display_name != name.as_str();
        let outcome = decide(changes, name.as_str(), differs, limit, now);
        if let NameChange::Done { changed: true, .. } = outcome {
            user.display_name = name.as_str().to_owned();
            changes.push(now);
        }
        Ok(outcome)
    }

    async fn players(&self, ids: &[Uuid]) -> Result<Vec<(User, Rating)>> {
        let inner = self.lock();
        let mut seen = std::collections::HashSet::new();
        Ok(ids
            .iter()
            .filter(|id| seen.insert(**id))
            .filter_map(|id| {
                let user = inner.users.get(id)?.clone();
                let rating = inner
                    .ratings
                    .get(id)
                    .map(|row| row.rating)
                    .unwrap_or_default();
                Some((user, rating))
            })
            .collect())
    }

    async fn insert_refresh_token(&self, token: RefreshTokenRecord) -> Result<()> {
        let mut inner = self.lock();
        if !inner.users.contains_key(&token.user_id) {
            return Err(AccountsError::UserNotFound);
        }
        if inner.refresh.contains_key(&token.hash) {
            return Err(AccountsError::Internal(
                "refresh token hash collision".into(),
            ));
        }
        inner.refresh.insert(token.hash, token);
        Ok(())
    }

    async fn refresh_token(&self, hash: TokenHash) -> Result<Option<RefreshTokenRecord>> {
        Ok(self.lock().refresh.get(&hash).cloned())
    }

    async fn rotate_refresh_token(
        &self,
        presented: TokenHash,
        next: TokenHash,
        next_expires_at: DateTime<Utc>,
        now: DateTime<Utc>,
    ) -> Result<Rotation> {
        let mut inner = self.lock();
        let Some(token) = inner.refresh.get(&presented).cloned() else {
            return Ok(Rotation::Unknown);
        };
        match token.state(now) {
            TokenState::Valid => {}
            TokenState::Reused => {
                for t in inner.refresh.values_mut() {
                    if t.family_id == token.family_id && t.revoked_at.is_none() {
                        t.revoked_at = Some(now);
                    }
                }
                return Ok(Rotation::Rejected(TokenState::Reused));
            }
            state => return Ok(Rotation::Rejected(state)),
        }
        let user = inner
            .users
            .get(&token.user_id)
            .cloned()
            .ok_or_else(|| AccountsError::Internal("refresh token without user".into()))?;
        if inner.refresh.contains_key(&next) {
            return Err(AccountsError::Internal(
                "refresh token hash collision".into(),
            ));
        }
        if let Some(t) = inner.refresh.get_mut(&presented) {
            t.used_at = Some(now);
        }
        inner.refresh.insert(
            next,
            RefreshTokenRecord {
                hash: next,
                family_id: token.family_id,
                user_id: token.user_id,
                issued_at: now,
                expires_at: next_expires_at,
                used_at: None,
                revoked_at: None,
            },
        );
        Ok(Rotation::Rotated { user })
    }

    async fn revoke_refresh_family(
        &self,
        presented: TokenHash,
        now: DateTime<Utc>,
    ) -> Result<Option<Uuid>> {
        let mut inner = self.lock();
        let Some(token) = inner.refresh.get(&presented).cloned() else {
            return Ok(None);
        };
        for t in inner.refresh.values_mut() {
            if t.family_id == token.family_id && t.revoked_at.is_none() {
                t.revoked_at = Some(now);
            }
        }
        Ok(Some(token.user_id))
    }

    async fn revoke_user_refresh_tokens(&self, user_id: Uuid, now: DateTime<Utc>) -> Result<u64> {
        let mut inner = self.lock();
        let mut revoked = 0;
        for t in inner.refresh.values_mut() {
            if t.user_id == user_id && t.revoked_at.is_none() {
                t.revoked_at = Some(now);
                revoked += 1;
            }
        }
        Ok(revoked)
    }

    async fn profile(&self, user_id: Uuid, rules: LeaderboardRules) -> Result<Option<Profile>> {
        let inner = self.lock();
        let Some(user) = inner.users.get(&user_id).cloned() else {
            return Ok(None);
        };
        let rating = inner.ratings.get(&user_id).copied().unwrap_or(RatingRow {
            rating: Rating::default(),
            ranked_matches: 0,
        });
        let rows = inner
            .players
            .get(&user_id)
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        let count = |f: fn(&PlayerRow) -> bool| rows.iter().filter(|r| f(r)).count() as u32;
        let basras = rows
            .iter()
            .fold(BasraCounts::default(), |acc, r| BasraCounts {
                basra: acc.basra + r.basras.basra,
                jack: acc.jack + r.basras.jack,
                komi: acc.komi + r.basras.komi,
            });
        let leaderboard_rank = inner
            .listed(rules)
            .iter()
            .position(|r| r.user_id == user_id)
            .map(|i| i as u32 + 1);
        Ok(Some(Profile {
            user,
            rating: rating.rating,
            ranked_matches: rating.ranked_matches,
            matches_played: rows.len() as u32,
            wins: count(|r| r.won),
            losses: count(|r| r.lost),
            basras,
            leaderboard_rank,
        }))
    }

    async fn leaderboard(
        &self,
        rules: LeaderboardRules,
        after: Option<LeaderboardCursor>,
        limit: u32,
    ) -> Result<Vec<LeaderboardRow>> {
        let inner = self.lock();
        Ok(inner
            .listed(rules)
            .into_iter()
            .filter(|row| after.as_ref().is_none_or(|c| after_cursor(row, c)))
            .take(limit as usize)
            .collect())
    }

    async fn leaderboard_position(
        &self,
        user_id: Uuid,
        rules: LeaderboardRules,
    ) -> Result<Option<(u32, LeaderboardRow)>> {
        let inner = self.lock();
        Ok(inner
            .listed(rules)
            .into_iter()
            .enumerate()
            .find(|(_, r)| r.user_id == user_id)
            .map(|(i, r)| (i as u32 + 1, r)))
    }

    async fn record_matches(
        &self,
        records: &[MatchRecord],
        _now: DateTime<Utc>,
    ) -> Result<Vec<Recorded>> {
        let mut inner = self.lock();
        // A seat of an account deleted while its match was played becomes a placeholder.
        let records: Vec<std::borrow::Cow<'_, MatchRecord>> = records
            .iter()
            .map(|record| {
                let deleted = inner.deleted_among(record.players().map(|(_, id)| id));
                match crate::deletion::placeholder_seats(record, &deleted) {
                    Some(changed) => std::borrow::Cow::Owned(changed),
                    None => std::borrow::Cow::Borrowed(record),
                }
            })
            .collect();
        // Every player must exist before anything is written (all or nothing).
        for (index, record) in records.iter().enumerate() {
            if inner.matches.contains_key(&record.match_id) {
                continue;
            }
            if let Some((seat, user_id)) = record
                .players()
                .find(|(_, id)| !inner.ratings.contains_key(id))
            {
                return Err(AccountsError::invalid(
                    "record.seats",
                    format!("seat {}: unknown user {user_id}", seat.seat),
                )
                .in_record(index));
            }
        }
        Ok(records
            .iter()
            .map(|record| inner.record_one(record))
            .collect())
    }

    async fn password_hash(&self, user_id: Uuid) -> Result<Option<String>> {
        Ok(self.lock().passwords.get(&user_id).cloned())
    }

    async fn change_password(
        &self,
        user_id: Uuid,
        password_hash: &str,
        now: DateTime<Utc>,
    ) -> Result<u64> {
        self.lock().change_password(user_id, password_hash, now)
    }

    async fn account_records(&self, user_id: Uuid) -> Result<super::AccountRecords> {
        Ok(self.lock().account_records(user_id))
    }

    async fn played_matches(
        &self,
        user_id: Uuid,
        after: Option<HistoryCursor>,
        limit: u32,
    ) -> Result<Vec<super::PlayedMatch>> {
        let inner = self.lock();
        let mut rows: Vec<&PlayerRow> = inner
            .players
            .get(&user_id)
            .map(|rows| rows.iter().collect())
            .unwrap_or_default();
        rows.sort_by(|a, b| {
            b.ended_at
                .cmp(&a.ended_at)
                .then_with(|| b.match_id.cmp(&a.match_id))
        });
        Ok(rows
            .into_iter()
            .filter(|r| {
                after.as_ref().is_none_or(|c| {
                    (r.ended_at, r.match_id.as_str()) < (c.ended_at, c.match_id.as_str())
                })
            })
            .take(limit as usize)
            .filter_map(|r| {
                Some(super::PlayedMatch {
                    record: inner.matches.get(&r.match_id)?.clone(),
                    your_seat: r.seat,
                    rating_change: r.change,
                    your_client: r.client.clone(),
                })
            })
            .collect())
    }

    async fn audit(&self, entry: super::AuditEntry) -> Result<()> {
        self.lock().audit.push(entry);
        Ok(())
    }

    async fn audit_of(&self, target: Uuid) -> Result<Vec<super::AuditEntry>> {
        Ok(self
            .lock()
            .audit
            .iter()
            .filter(|e| e.target_id == target)
            .cloned()
            .collect())
    }

    async fn device_user(&self, device: &DeviceId) -> Result<Option<Uuid>> {
        Ok(self.lock().devices.get(device.as_str()).copied())
    }

    async fn delete_account(
        &self,
        user_id: Uuid,
        anonymous_key: Uuid,
        now: DateTime<Utc>,
    ) -> Result<super::DeletedAccount> {
        self.lock().delete_account(user_id, anonymous_key, now)
    }

    async fn match_history(
        &self,
        user_id: Uuid,
        after: Option<HistoryCursor>,
        limit: u32,
    ) -> Result<Vec<HistoryEntry>> {
        let inner = self.lock();
        let mut rows: Vec<&PlayerRow> = inner
            .players
            .get(&user_id)
            .map(|rows| rows.iter().collect())
            .unwrap_or_default();
        rows.sort_by(|a, b| {
            b.ended_at
                .cmp(&a.ended_at)
                .then_with(|| b.match_id.cmp(&a.match_id))
        });
        Ok(rows
            .into_iter()
            .filter(|r| {
                after.as_ref().is_none_or(|c| {
                    (r.ended_at, r.match_id.as_str()) < (c.ended_at, c.match_id.as_str())
                })
            })
            .take(limit as usize)
            .filter_map(|r| {
                let m = inner.matches.get(&r.match_id)?;
                Some(HistoryEntry {
                    match_id: m.match_id.clone(),
                    room_id: m.room_id.clone(),
                    ranked: m.ranked,
                    settings: m.settings,
                    seats: m.seats.clone(),
                    your_seat: r.seat,
                    winner_side: m.winner_side,
                    end_reason: m.end_reason,
                    final_totals: m.final_totals.clone(),
                    rounds: m.rounds.len() as u32,
                    your_rating_change: r.change,
                    started_at: m.started_at,
                    ended_at: m.ended_at,
                })
            })
            .collect())
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

    async fn user_by_username(&self, username_key: &str) -> Result<Option<User>> {
        let inner = self.lock();
        Ok(inner
            .username_keys
            .get(username_key)
            .and_then(|id| inner.users.get(id).cloned()))
    }

    async fn user_by_friend_code(&self, code: &FriendCode) -> Result<Option<User>> {
        Ok(self.lock().user_by_friend_code(code))
    }

    async fn friend_code(&self, user_id: Uuid) -> Result<Option<FriendCode>> {
        Ok(self.lock().friend_code(user_id))
    }

    async fn befriend(
        &self,
        actor: Uuid,
        other: Uuid,
        action: Action,
        limits: FriendLimits,
        now: DateTime<Utc>,
    ) -> Result<Outcome> {
        self.lock().befriend(actor, other, action, limits, now)
    }

    async fn friend_list(&self, user_id: Uuid) -> Result<FriendList> {
        Ok(self.lock().friend_list(user_id))
    }

    async fn provider_sign_in(
        &self,
        identity: &crate::oidc::ProviderIdentity,
        new: super::NewProviderAccount,
    ) -> Result<(User, bool)> {
        self.lock().provider_sign_in(identity, new)
    }

    async fn link_provider(
        &self,
        user_id: Uuid,
        identity: &crate::oidc::ProviderIdentity,
        now: DateTime<Utc>,
    ) -> Result<User> {
        self.lock().link_provider(user_id, identity, now)
    }

    async fn linked_providers(&self, user_id: Uuid) -> Result<Vec<super::LinkedProvider>> {
        Ok(self.lock().linked_providers(user_id))
    }

    async fn find_by_display_name(&self, fragment: &str, limit: u32) -> Result<Vec<User>> {
        Ok(self.lock().find_by_display_name(fragment, limit))
    }
}
