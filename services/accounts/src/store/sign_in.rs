//! Sign-in and tokens: guests by device, accounts by password or by a provider's
//! identity, the rotating refresh tokens of each sign-in, and what is kept of them.

use std::future::Future;

use basra_platform::client_info::ClientInfo;
use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::User;
use crate::domain::{DeviceId, DisplayName, Username};
use crate::error::Result;
use crate::oidc::ProviderIdentity;
use crate::refresh::{RefreshTokenRecord, TokenHash, TokenState};

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

/// The result of presenting a refresh token to [`SignIn::rotate_refresh_token`].
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

/// How players sign in and stay signed in.
pub trait SignIn: Send + Sync {
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

    /// Remembers that `user_id` signed in at `at` from `client` (the call's
    /// `basra-client` metadata), for the analyst view `analyst.players` and the seats
    /// of the matches the user plays ([`MatchRecords::record_match`](super::MatchRecords::record_match)).
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

    /// The account a guest device signs in to.
    fn device_user(&self, device: &DeviceId) -> impl Future<Output = Result<Option<Uuid>>> + Send;

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
}
