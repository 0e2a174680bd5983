//! The account itself: ChangePassword and DeleteAccount. Both ask the caller to prove
//! again who they are (the current password; a guest's device id), under the limits
//! that guard Login, since a stolen access token must not be enough.
//!
//! A deletion is one store step (the account and its links go, its matches are
//! re-keyed: [`crate::deletion`]), then the account joins the revoked list (every
//! access token of it refused, every open stream of it ended, in every service) and its
//! presence and notes are dropped. What a deletion removes and keeps, and why:
//! `services/accounts/README.md`, "Deleting an account".

use basra_platform::auth::{Caller, Role};
use basra_platform::revocation::{RevokeKind, Revoked};
use basra_proto::basra::accounts::v1 as pb;
use uuid::Uuid;

use super::AccountsApi;
use crate::domain::{self, DeviceId, Password};
use crate::error::{AccountsError, Result};
use crate::store::Store;

/// The message of a wrong password or device id.
const WRONG_PROOF: &str = "the password (or device id) does not match this account";

/// `err` about the field `field` instead (the domain checks name `password`).
fn for_field(err: AccountsError, field: &'static str) -> AccountsError {
    match err {
        AccountsError::InvalidArgument { reason, .. } => {
            AccountsError::InvalidArgument { field, reason }
        }
        other => other,
    }
}

fn players_only(caller: &Caller) -> Result<()> {
    if caller.role == Role::Player {
        Ok(())
    } else {
        Err(AccountsError::PermissionDenied(
            "only a player may change or delete their own account",
        ))
    }
}

impl<S: Store> AccountsApi<S> {
    /// Checks `password` against the account's, under Login's limits (keyed by the user
    /// id, so a stolen access token cannot try passwords faster than Login allows).
    async fn check_password(&self, client: &str, user_id: Uuid, password: &Password) -> Result<()> {
        self.check_login_rate(&user_id.to_string(), client)?;
        let hash = self.inner.store.password_hash(user_id).await?;
        if hash.is_none() {
            return Err(AccountsError::Precondition(
                "this account has no password: a guest sets one with Register",
            ));
        }
        if self.inner.config.passwords.verify(password, hash).await? {
            Ok(())
        } else {
            tracing::info!(%user_id, "wrong current password");
            Err(AccountsError::PermissionDenied(WRONG_PROOF))
        }
    }

    pub(super) async fn do_change_password(
        &self,
        caller: Caller,
        client: &str,
        req: pb::ChangePasswordRequest,
    ) -> Result<pb::ChangePasswordResponse> {
        players_only(&caller)?;
        let current = Password::presented(&req.current_password)
            .map_err(|e| for_field(e, "current_password"))?;
        let new = Password::parse(&req.new_password).map_err(|e| for_field(e, "new_password"))?;
        let user = self
            .inner
            .store
            .user(caller.user_id)
            .await?
            .ok_or(AccountsError::UserNotFound)?;
        self.check_password(client, user.id, &current).await?;
        let hash = self.inner.config.passwords.hash(&new).await?;
        let revoked = self
            .inner
            .store
            .change_password(user.id, &hash, domain::now())
            .await?;
        tracing::info!(user_id = %user.id, revoked, "password changed");
        Ok(pb::ChangePasswordResponse {
            tokens: Some(self.sign_in(&user).await?),
        })
    }

    pub(super) async fn do_delete_account(
        &self,
        caller: Caller,
        client: &str,
        req: pb::DeleteAccountRequest,
    ) -> Result<pb::DeleteAccountResponse> {
        use pb::delete_account_request::Proof;
        players_only(&caller)?;
        let user = self
            .inner
            .store
            .user(caller.user_id)
            .await?
            .ok_or(AccountsError::UserNotFound)?;
        match (req.proof, user.is_guest) {
            (None, _) => {
                return Err(AccountsError::invalid(
                    "proof",
                    "prove it is you: send the password, or a guest's device_id",
                ));
            }
            (Some(Proof::Password(password)), false) => {
                let password = Password::presented(&password)?;
                if self.inner.store.password_hash(user.id).await?.is_none() {
                    return Err(AccountsError::invalid(
                        "password",
                        "this account has no password: prove it is you with a fresh \
                         sign-in of its provider (`provider`)",
                    ));
                }
                self.check_password(client, user.id, &password).await?;
            }
            (Some(Proof::Provider(proof)), false) => {
                if self.inner.store.password_hash(user.id).await?.is_some() {
                    return Err(AccountsError::invalid(
                        "provider",
                        "this account has a password: prove it is you with it",
                    ));
                }
                self.check_login_rate(&user.id.to_string(), client)?;
                self.check_provider_proof(user.id, &proof).await?;
            }
            (Some(Proof::Provider(_)), true) => {
                return Err(AccountsError::invalid(
                    "provider",
                    "a guest signs in with its device: send the device_id",
                ));
            }
            (Some(Proof::DeviceId(device)), true) => {
                let device = DeviceId::parse(&device)?;
                self.check_login_rate(&user.id.to_string(), client)?;
                if self.inner.store.device_user(&device).await? != Some(user.id) {
                    tracing::info!(user_id = %user.id, "wrong device id for a deletion");
                    return Err(AccountsError::PermissionDenied(WRONG_PROOF));
                }
            }
            (Some(Proof::Password(_)), true) => {
                return Err(AccountsError::invalid(
                    "password",
                    "a guest has no password: send the device_id it signs in with",
                ));
            }
            (Some(Proof::DeviceId(_)), false) => {
                return Err(AccountsError::invalid(
                    "device_id",
                    "a registered account proves it is them with its password",
                ));
            }
        }
        let deleted = self.delete(user.id).await?;
        Ok(pb::DeleteAccountResponse {
            matches_kept: u32::try_from(deleted.matches).unwrap_or(u32::MAX),
        })
    }

    /// Deletes the account `user_id` and everything that follows from it (the caller has
    /// been checked): the store step, the revoked list, presence and notes, the former
    /// friends' feeds.
    pub(super) async fn delete(&self, user_id: Uuid) -> Result<crate::store::DeletedAccount> {
        let now = domain::now();
        let deleted = self
            .inner
            .store
            .delete_account(user_id, crate::deletion::anonymous_key(), now)
            .await?;
        tracing::info!(%user_id, matches = deleted.matches, "account deleted");
        // Every access token issued before now has expired by then (with the verifiers'
        // leeway): the id never signs in again.
        let until = now + self.inner.config.access_ttl + std::time::Duration::from_secs(120);
        let revoked = self
            .inner
            .social
            .revocations()
            .revoke(
                user_id,
                Revoked {
                    kind: RevokeKind::Deleted,
                    until,
                },
            )
            .await;
        if let Err(err) = revoked {
            // The account is gone whatever happens here; its tokens still fail at every
            // call that reads the account, and expire within minutes.
            tracing::error!(error = %err, %user_id, "a deleted account could not be added to the revoked list");
        }
        let social = &self.inner.social.store();
        let cleaned = async {
            social.forget(user_id).await?;
            for other in &deleted.linked {
                social.friends_changed(*other).await?;
            }
            Ok::<_, AccountsError>(())
        }
        .await;
        if let Err(err) = cleaned {
            // Presence lapses within a minute and notes within days by themselves.
            tracing::warn!(error = %err, %user_id, "a deleted account's presence and notes were not dropped");
        }
        Ok(deleted)
    }
}
