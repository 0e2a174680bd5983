//! Where accounts keep their data: the [`Store`] trait, with [`PgStore`]
//! (PostgreSQL, production) and [`MemoryStore`] (the embedded dev mode). One
//! contract test suite (`tests/it/store_contract.rs`) holds both to the same
//! behaviour.
//!
//! Each method is one atomic step: whatever must not be seen half done (a new
//! guest and its device, a rotation, a match and its rating changes) happens in
//! a single call.

use std::future::Future;

use basra_platform::client_info::ClientInfo;
use basra_records::{BasraCounts, EndReason, MatchRecord, SeatRecord};
use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::domain::{DeviceId, DisplayName, Username};
use crate::error::{AccountsError, Result};
use crate::friends::{Action, FriendCode, FriendLimits, FriendList, Outcome};
use crate::names::{NameChange, NameChangeLimit};
use crate::oidc::ProviderIdentity;
use crate::rating::{Rating, RatingUpdate};
use crate::refresh::{RefreshTokenRecord, TokenHash, TokenState};

mod memory;
mod pg;

pub use memory::MemoryStore;
pub use pg::{MIGRATOR, PgStore};

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

/// A guest to create when a device signs in for the first time.
#[derive(Debug, Clone)]
pub struct NewGuest {
    /// The new user's id.
    pub id: Uuid,
    /// The new guest's name.
    pub display_name: DisplayName,
    /// The time of the sign-in.
    pub now: DateTime<Utc>,
}

/// A new sign-in: the first refresh token of a new family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NewSession {
    /// SHA-256 of the refresh token.
    pub hash: TokenHash,
    /// The new family.
    pub family_id: Uuid,
    /// When it was issued.
    pub issued_at: DateTime<Utc>,
    /// When it expires if unused.
    pub expires_at: DateTime<Utc>,
}

impl NewSession {
    /// The stored token of this sign-in for `user_id`.
    pub fn token_for(&self, user_id: Uuid) -> RefreshTokenRecord {
        RefreshTokenRecord {
            hash: self.hash,
            family_id: self.family_id,
            user_id,
            issued_at: self.issued_at,
            expires_at: self.expires_at,
            used_at: None,
            revoked_at: None,
        }
    }
}

/// A registered account to create.
#[derive(Debug, Clone)]
pub struct NewAccount {
    /// The new user's id.
    pub id: Uuid,
    /// The login name.
    pub username: Username,
    /// The argon2id PHC string of the password.
    pub password_hash: String,
    /// The name shown to others.
    pub display_name: DisplayName,
    /// The time of registration.
    pub now: DateTime<Utc>,
}

/// A guest to turn into a registered account, in place.
#[derive(Debug, Clone)]
pub struct GuestUpgrade {
    /// The guest.
    pub user_id: Uuid,
    /// The login name.
    pub username: Username,
    /// The argon2id PHC string of the password.
    pub password_hash: String,
    /// A new display name, or `None` to keep the guest's.
    pub display_name: Option<DisplayName>,
    /// The time of the upgrade.
    pub now: DateTime<Utc>,
}

/// The result of presenting a refresh token to [`Store::rotate_refresh_token`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rotation {
    /// The token was valid: it is now used, and the new one is stored in its family.
    Rotated {
        /// The account the token belongs to.
        user: User,
    },
    /// No token has this hash.
    Unknown,
    /// The token could not be exchanged; with [`TokenState::Reused`] its whole
    /// family has just been revoked.
    Rejected(TokenState),
}

/// A player's profile with statistics.
#[derive(Debug, Clone, PartialEq)]
pub struct Profile {
    /// The account.
    pub user: User,
    /// Glicko-2 state.
    pub rating: Rating,
    /// Ranked matches that changed the rating.
    pub ranked_matches: u32,
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

/// A rating change as stored with a match.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RatingChange {
    /// The player.
    pub user_id: Uuid,
    /// Their seat.
    pub seat: u8,
    /// Rating before.
    pub rating_before: f64,
    /// Rating after.
    pub rating_after: f64,
    /// Deviation after.
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

/// The result of [`Store::record_match`].
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

/// Row counts, to check that a rejected request wrote nothing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// Accounts.
    pub users: u64,
    /// Password credentials.
    pub credentials: u64,
    /// Refresh tokens (any state).
    pub refresh_tokens: u64,
    /// Revoked refresh tokens.
    pub revoked_refresh_tokens: u64,
    /// Recorded matches.
    pub matches: u64,
    /// Friend links (requests, friendship halves, blocks).
    pub friend_links: u64,
}

/// What [`Store::delete_account`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeletedAccount {
    /// The players who had a friendship or a request (either way) with the account:
    /// their friend lists changed.
    pub linked: Vec<Uuid>,
    /// The recorded matches whose seats were re-keyed to the anonymous key.
    pub matches: u64,
}

/// What the store keeps of an account besides its profile and friends (ExportMyData).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AccountRecords {
    /// The guest devices that sign in to it, with when each was bound.
    pub devices: Vec<(String, DateTime<Utc>)>,
    /// When the password was last set; `None` without a password.
    pub password_updated_at: Option<DateTime<Utc>>,
    /// Every refresh token of the account (its sign-ins), oldest first.
    pub sessions: Vec<RefreshTokenRecord>,
    /// When the display name was changed, within the rolling window kept.
    pub name_changes: Vec<DateTime<Utc>>,
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

/// One operator action on a player (AccountsAdminService), as the audit table keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditEntry {
    /// When.
    pub at: DateTime<Utc>,
    /// The operator.
    pub operator_id: Uuid,
    /// `ban`, `unban`, `rename`, `delete`.
    pub action: String,
    /// The player.
    pub target_id: Uuid,
    /// Why.
    pub reason: String,
    /// What the action set (the ban's end, the new name).
    pub detail: String,
}

/// An account to create at its first provider sign-in: registered (not a guest),
/// without username or password.
#[derive(Debug, Clone)]
pub struct NewProviderAccount {
    /// The new user's id.
    pub id: Uuid,
    /// The name shown to others.
    pub display_name: DisplayName,
    /// The time of the sign-in.
    pub now: DateTime<Utc>,
}

/// A provider account bound to a Basra account, as the store keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkedProvider {
    /// The provider and the subject.
    pub identity: ProviderIdentity,
    /// When it was bound.
    pub linked_at: DateTime<Utc>,
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

/// Persistent state of the accounts service.
///
/// Implementations are cheap to clone (a pool or an `Arc`) and safe to share.
pub trait Store: Clone + Send + Sync + 'static {
    /// The connection pool's state, for the metrics: `None` for a store without one.
    fn pool_stats(&self) -> Option<PoolStats> {
        None
    }

    /// The user signed in by `device`, creating the guest `new` (with its
    /// device and a default rating) when the device is new, and storing
    /// `session` as the guest's new refresh token family: one atomic step (one
    /// statement on PostgreSQL, the hot path of guest sign-in). Concurrent
    /// first sign-ins of one device get the same user. The returned user may
    /// be a registered account (the guest was upgraded): then `session` is not
    /// stored.
    fn guest_login(
        &self,
        device: &DeviceId,
        new: NewGuest,
        session: NewSession,
    ) -> impl Future<Output = Result<User>> + Send;

    /// Creates a registered account with its password and a default rating.
    /// Errors: [`UsernameTaken`](crate::AccountsError::UsernameTaken).
    fn create_account(&self, new: NewAccount) -> impl Future<Output = Result<User>> + Send;

    /// Turns a guest into a registered account (same id, rating and history)
    /// and revokes its refresh tokens. Errors: `UsernameTaken`,
    /// `AlreadyRegistered` (not a guest), `UserNotFound`.
    fn upgrade_guest(&self, upgrade: GuestUpgrade) -> impl Future<Output = Result<User>> + Send;

    /// The account registered as `username_key` (lower case) and its password
    /// hash.
    fn password_credentials(
        &self,
        username_key: &str,
    ) -> impl Future<Output = Result<Option<(User, String)>>> + Send;

    /// The account with this id.
    fn user(&self, id: Uuid) -> impl Future<Output = Result<Option<User>>> + Send;

    /// The accounts among `ids` that exist, each with its rating (any order).
    fn players(&self, ids: &[Uuid]) -> impl Future<Output = Result<Vec<(User, Rating)>>> + Send;

    /// The blocks (BlockPlayer) held by any of `blockers`, as (blocker, blocked) pairs,
    /// in no particular order.
    fn blocks(&self, blockers: &[Uuid]) -> impl Future<Output = Result<Vec<(Uuid, Uuid)>>> + Send;

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

    /// Remembers that `user_id` signed in at `at` from `client` (the call's
    /// `basra-client` metadata), for the analyst view `analyst.players` and the seats
    /// of the matches the user plays ([`Store::record_match`]).
    fn note_sign_in_client(
        &self,
        user_id: Uuid,
        client: &ClientInfo,
        at: DateTime<Utc>,
    ) -> impl Future<Output = Result<()>> + Send;

    /// The clients `user_id` signed in from, oldest first.
    fn sign_in_clients(
        &self,
        user_id: Uuid,
    ) -> impl Future<Output = Result<Vec<(ClientInfo, DateTime<Utc>)>>> + Send;

    /// Stores a new refresh token (a new family or a member of one).
    fn insert_refresh_token(
        &self,
        token: RefreshTokenRecord,
    ) -> impl Future<Output = Result<()>> + Send;

    /// The stored refresh token with this hash.
    fn refresh_token(
        &self,
        hash: TokenHash,
    ) -> impl Future<Output = Result<Option<RefreshTokenRecord>>> + Send;

    /// Exchanges `presented` for `next` atomically: a valid token is marked
    /// used and `next` joins its family, expiring at `next_expires_at`; a used
    /// one revokes its whole family. Of two concurrent exchanges of one token,
    /// exactly one succeeds.
    fn rotate_refresh_token(
        &self,
        presented: TokenHash,
        next: TokenHash,
        next_expires_at: DateTime<Utc>,
        now: DateTime<Utc>,
    ) -> impl Future<Output = Result<Rotation>> + Send;

    /// Revokes the family (sign-in) of this token, if it exists; answers its user.
    fn revoke_refresh_family(
        &self,
        presented: TokenHash,
        now: DateTime<Utc>,
    ) -> impl Future<Output = Result<Option<Uuid>>> + Send;

    /// Revokes every refresh token of the user; answers how many were live.
    fn revoke_user_refresh_tokens(
        &self,
        user_id: Uuid,
        now: DateTime<Utc>,
    ) -> impl Future<Output = Result<u64>> + Send;

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

    /// Records a finished match and, if it is rated, applies its Glicko-2
    /// changes ([`crate::rating::rate`]) in the same transaction. Each human seat
    /// keeps its player's client app: that of the latest sign-in noted
    /// ([`Store::note_sign_in_client`]) at or before the match's end, of two at the
    /// same time the one noted last; none when there is none (bots and deleted
    /// players' placeholder seats keep none). Idempotent by match id: a second call
    /// changes nothing and answers the first changes with `already_recorded`.
    /// Errors: `InvalidArgument` when a seat names an unknown user. A batch of one
    /// ([`Store::record_matches`]).
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
    /// [`Store::record_match`] would if called for each in `records` order: idempotent
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

    /// Row counts.
    fn counts(&self) -> impl Future<Output = Result<Counts>> + Send;

    /// The account registered as `username_key` (lower case).
    fn user_by_username(
        &self,
        username_key: &str,
    ) -> impl Future<Output = Result<Option<User>>> + Send;

    /// The account whose friend code is `code`.
    fn user_by_friend_code(
        &self,
        code: &FriendCode,
    ) -> impl Future<Output = Result<Option<User>>> + Send;

    /// The user's friend code, given (randomly, unique) the first time it is asked
    /// for; `None` when there is no such user.
    fn friend_code(&self, user_id: Uuid)
    -> impl Future<Output = Result<Option<FriendCode>>> + Send;

    /// `actor` does `action` to `other`, as [`crate::friends::decide`] rules, in one
    /// atomic step that also serializes it with every other friend action of either
    /// player (their friend counts stay true). Errors:
    /// [`AccountsError::Friend`] with the refusal (nothing written), `UserNotFound`
    /// when either player does not exist.
    fn befriend(
        &self,
        actor: Uuid,
        other: Uuid,
        action: Action,
        limits: FriendLimits,
        now: DateTime<Utc>,
    ) -> impl Future<Output = Result<Outcome>> + Send;

    /// The user's friends, requests both ways and blocks.
    fn friend_list(&self, user_id: Uuid) -> impl Future<Output = Result<FriendList>> + Send;

    /// The user's password hash; `None` for an account without a password (a guest).
    fn password_hash(&self, user_id: Uuid) -> impl Future<Output = Result<Option<String>>> + Send;

    /// Replaces the user's password hash and revokes every live refresh token of theirs,
    /// in one step; answers how many were revoked. Errors: `UserNotFound` (no such user,
    /// or one without a password).
    fn change_password(
        &self,
        user_id: Uuid,
        password_hash: &str,
        now: DateTime<Utc>,
    ) -> impl Future<Output = Result<u64>> + Send;

    /// The account's devices, password date, sessions and name changes.
    fn account_records(&self, user_id: Uuid)
    -> impl Future<Output = Result<AccountRecords>> + Send;

    /// Up to `limit` of the user's recorded matches after `after`, whole, in the order
    /// of [`Store::match_history`] (newest first).
    fn played_matches(
        &self,
        user_id: Uuid,
        after: Option<HistoryCursor>,
        limit: u32,
    ) -> impl Future<Output = Result<Vec<PlayedMatch>>> + Send;

    /// Appends an operator action to the audit table.
    fn audit(&self, entry: AuditEntry) -> impl Future<Output = Result<()>> + Send;

    /// The audit entries about `target`, oldest first.
    fn audit_of(&self, target: Uuid) -> impl Future<Output = Result<Vec<AuditEntry>>> + Send;

    /// The account a guest device signs in to.
    fn device_user(&self, device: &DeviceId) -> impl Future<Output = Result<Option<Uuid>>> + Send;

    /// Deletes the account in one atomic step, as [`crate::deletion`] describes: the
    /// account, its devices, password, refresh tokens, rating, friend links, request
    /// counts and name changes go; its recorded matches stay, its seats there re-keyed to
    /// `anonymous_key` and named [`crate::deletion::DELETED_NAME`]; the hash of its id is
    /// kept so a later recording naming it stores a placeholder seat. Errors:
    /// `UserNotFound`.
    fn delete_account(
        &self,
        user_id: Uuid,
        anonymous_key: Uuid,
        now: DateTime<Utc>,
    ) -> impl Future<Output = Result<DeletedAccount>> + Send;

    /// The account `identity` signs in to, creating `new` (registered, without username
    /// or password, with a default rating, bound to `identity`) when the identity is new,
    /// in one atomic step; concurrent first sign-ins of one identity get the same account.
    /// Answers the account and whether it was created now.
    fn provider_sign_in(
        &self,
        identity: &ProviderIdentity,
        new: NewProviderAccount,
    ) -> impl Future<Output = Result<(User, bool)>> + Send;

    /// Binds `identity` to the guest `user_id` and makes it a registered account in place
    /// (same id, rating, history, friends), revoking its refresh tokens, in one step.
    /// Errors: `ProviderTaken` (the identity is bound to any account),
    /// `AlreadyRegistered` (not a guest), `UserNotFound`.
    fn link_provider(
        &self,
        user_id: Uuid,
        identity: &ProviderIdentity,
        now: DateTime<Utc>,
    ) -> impl Future<Output = Result<User>> + Send;

    /// The provider accounts bound to `user_id`, oldest first.
    fn linked_providers(
        &self,
        user_id: Uuid,
    ) -> impl Future<Output = Result<Vec<LinkedProvider>>> + Send;

    /// Up to `limit` accounts whose display name contains `fragment` (case-insensitive),
    /// by display name then id (AccountsAdminService.FindPlayers).
    fn find_by_display_name(
        &self,
        fragment: &str,
        limit: u32,
    ) -> impl Future<Output = Result<Vec<User>>> + Send;
}
