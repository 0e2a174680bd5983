//! The friend RPCs: resolve and check the request, then one store step
//! ([`Friends::befriend`](crate::store::Friends::befriend)) that applies
//! [`crate::friends::decide`].

use basra_platform::auth::{Caller, Role};
use basra_proto::basra::accounts::v1 as pb;
use tonic::{Request, Status};
use uuid::Uuid;

use super::AccountsApi;
use super::feed::friend_to_proto;
use crate::domain::{self, Username};
use crate::error::{AccountsError, Result};
use crate::friends::{Action, FriendCode, FriendEntry, Outcome, Refusal};
use crate::store::Store;

impl<S: Store> AccountsApi<S> {
    /// The player calling a friend RPC (a service token has no friends).
    pub(super) fn friend_caller<T>(&self, request: &Request<T>) -> Result<Caller, Status> {
        let caller = super::required_caller(request)?;
        if caller.role != Role::Player {
            return Err(AccountsError::PermissionDenied(
                "friends belong to players: sign in as a player, not with a service token",
            )
            .into());
        }
        tracing::Span::current().record("user_id", tracing::field::display(caller.user_id));
        Ok(caller)
    }

    pub(super) async fn do_add_friend(
        &self,
        caller: Caller,
        req: pb::AddFriendRequest,
    ) -> Result<pb::AddFriendResponse> {
        use pb::add_friend_request::Target;
        let store = &self.inner.store;
        let target = match req.target {
            None => {
                return Err(AccountsError::invalid(
                    "target",
                    "name the player: user_id, username or friend_code",
                ));
            }
            Some(Target::UserId(id)) => store.user(parse_user_id(&id)?).await?,
            Some(Target::Username(name)) => {
                store
                    .user_by_username(&Username::parse(&name)?.key())
                    .await?
            }
            Some(Target::FriendCode(code)) => {
                store
                    .user_by_friend_code(&FriendCode::parse(&code)?)
                    .await?
            }
        };
        let target = target.ok_or(Refusal::NoSuchPlayer)?;
        let outcome = self.befriend(&caller, target.id, Action::Add).await?;
        Ok(pb::AddFriendResponse {
            friend: Some(friend_to_proto(FriendEntry {
                user_id: target.id,
                display_name: target.display_name,
                is_guest: target.is_guest,
                since: domain::now(),
            })),
            became_friends: outcome == Outcome::BecameFriends,
        })
    }

    /// `caller` does `action` to the player `user_id` names (any action but Add, which
    /// resolves its target itself).
    pub(super) async fn do_friend_action(
        &self,
        caller: &Caller,
        user_id: &str,
        action: Action,
    ) -> Result<()> {
        self.befriend(caller, parse_user_id(user_id)?, action)
            .await
            .map(drop)
    }

    async fn befriend(&self, caller: &Caller, other: Uuid, action: Action) -> Result<Outcome> {
        if other == caller.user_id {
            return Err(Refusal::Yourself.into());
        }
        let limits = self.inner.config.friends;
        let outcome = self
            .inner
            .store
            .befriend(caller.user_id, other, action, limits, domain::now())
            .await
            .map_err(|e| match e {
                // The other player: "no such user" reads as the caller's own account.
                AccountsError::UserNotFound => Refusal::NoSuchPlayer.into(),
                other => other,
            })?;
        self.after_friend_action(caller.user_id, other, action, outcome)
            .await;
        Ok(outcome)
    }

    pub(super) async fn do_list_friends(&self, caller: Caller) -> Result<pb::ListFriendsResponse> {
        let store = &self.inner.store;
        let list = store.friend_list(caller.user_id).await?;
        let code = store
            .friend_code(caller.user_id)
            .await?
            .ok_or(AccountsError::UserNotFound)?;
        let entries = |v: Vec<FriendEntry>| v.into_iter().map(friend_to_proto).collect();
        Ok(pb::ListFriendsResponse {
            friends: entries(list.friends),
            incoming: entries(list.incoming),
            outgoing: entries(list.outgoing),
            blocked: entries(list.blocked),
            friend_code: code.to_string(),
        })
    }
}

fn parse_user_id(raw: &str) -> Result<Uuid> {
    if raw.is_empty() {
        return Err(AccountsError::invalid("user_id", "must not be empty"));
    }
    Uuid::parse_str(raw).map_err(|_| AccountsError::invalid("user_id", "is not a user id"))
}
