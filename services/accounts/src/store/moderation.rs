//! Moderation: an account's deletion and the audit of operators' actions (a ban
//! lives in the revocation list, `basra_platform::revocation`, not here).

use std::future::Future;

use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::error::Result;

/// What [`Moderation::delete_account`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeletedAccount {
    /// The players who had a friendship or a request (either way) with the account:
    /// their friend lists changed.
    pub linked: Vec<Uuid>,
    /// The recorded matches whose seats were re-keyed to the anonymous key.
    pub matches: u64,
}

/// One operator action on a player (AccountsAdminService), as the audit table keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditEntry {
    /// When.
    pub at: DateTime<Utc>,
    /// The operator.
    pub operator_id: Uuid,
    /// The operator's name, as their token gave it (empty: not named).
    pub operator_name: String,
    /// `ban`, `unban`, `rename`, `delete`.
    pub action: String,
    /// The player.
    pub target_id: Uuid,
    /// Why.
    pub reason: String,
    /// What the action set (the ban's end, the new name).
    pub detail: String,
}

/// What operators and players do to an account as a whole.
pub trait Moderation: Send + Sync {
    /// Appends an operator action to the audit table.
    fn audit(&self, entry: AuditEntry) -> impl Future<Output = Result<()>> + Send;

    /// The audit entries about `target`, oldest first.
    fn audit_of(&self, target: Uuid) -> impl Future<Output = Result<Vec<AuditEntry>>> + Send;

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
}
