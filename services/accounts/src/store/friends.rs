//! Social: friend codes, requests, friendships and blocks ([`crate::friends`] holds
//! the rules each action follows).

use std::future::Future;

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::User;
use crate::error::Result;
use crate::friends::{Action, FriendCode, FriendLimits, FriendList, Outcome};

/// Friends and blocks between players.
pub trait Friends: Send + Sync {
    /// The blocks (BlockPlayer) held by any of `blockers`, as (blocker, blocked) pairs,
    /// in no particular order.
    fn blocks(&self, blockers: &[Uuid]) -> impl Future<Output = Result<Vec<(Uuid, Uuid)>>> + Send;

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
    /// [`AccountsError::Friend`](crate::AccountsError::Friend) with the refusal (nothing written), `UserNotFound`
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
}
