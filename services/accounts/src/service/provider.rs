//! Sign-in with an identity provider and linking a guest: SignInWithProvider (one account
//! per provider account), LinkPassword (a guest gets a username and password, in place)
//! and LinkProvider (a guest is bound to a provider account, in place). The ID tokens are
//! checked by [`crate::oidc`].

use basra_platform::auth::{Caller, Role};
use basra_proto::basra::accounts::v1 as pb;
use uuid::Uuid;

use super::AccountsApi;
use crate::domain::{self, DisplayName, Password, Username};
use crate::error::{AccountsError, Result};
use crate::oidc::{Provider, ProviderIdentity};
use crate::store::{GuestUpgrade, NewProviderAccount, Store};

/// The display name of a new provider account that did not choose one ("Basra 4821").
pub(super) fn random_member_name() -> DisplayName {
    DisplayName::parse(&format!("Basra {:04}", rand::random_range(0..10_000u32)))
        .unwrap_or_else(|_| DisplayName::random_guest())
}

/// The calling guest: a player's token of a guest account. Errors: PERMISSION_DENIED (a
/// service or operator token), FAILED_PRECONDITION (not a guest).
fn calling_guest(caller: &Caller) -> Result<Uuid> {
    if caller.role != Role::Player {
        return Err(AccountsError::PermissionDenied(
            "only a player's own guest account can be linked",
        ));
    }
    if !caller.guest {
        return Err(AccountsError::AlreadyRegistered);
    }
    Ok(caller.user_id)
}

impl<S: Store> AccountsApi<S> {
    /// Checks a provider's ID token for `nonce` (the request's fields) and answers whom
    /// it names.
    pub(super) async fn verify_provider(
        &self,
        provider: i32,
        id_token: &str,
        nonce: &str,
    ) -> Result<ProviderIdentity> {
        let provider = Provider::from_proto(provider)?;
        self.inner
            .config
            .providers
            .verify(provider, id_token, nonce)
            .await
    }

    pub(super) async fn do_sign_in_with_provider(
        &self,
        req: pb::SignInWithProviderRequest,
    ) -> Result<pb::SignInWithProviderResponse> {
        let display_name = DisplayName::parse_optional(&req.display_name)?;
        let identity = self
            .verify_provider(req.provider, &req.id_token, &req.nonce)
            .await?;
        let (user, created) = self
            .inner
            .store
            .provider_sign_in(
                &identity,
                NewProviderAccount {
                    id: Uuid::now_v7(),
                    display_name: display_name.unwrap_or_else(random_member_name),
                    now: domain::now(),
                },
            )
            .await?;
        if created {
            tracing::info!(user_id = %user.id, provider = identity.provider.as_str(), "account created by a provider sign-in");
        }
        Ok(pb::SignInWithProviderResponse {
            tokens: Some(self.sign_in(&user).await?),
            created,
        })
    }

    pub(super) async fn do_link_password(
        &self,
        caller: Caller,
        req: pb::LinkPasswordRequest,
    ) -> Result<pb::LinkPasswordResponse> {
        let user_id = calling_guest(&caller)?;
        let username = Username::parse(&req.username)?;
        let password = Password::parse(&req.password)?;
        // Cheap check first, so a taken name costs no password hash; the unique index
        // still decides races.
        if self
            .inner
            .store
            .user_by_username(&username.key())
            .await?
            .is_some()
        {
            return Err(AccountsError::UsernameTaken);
        }
        let password_hash = self.inner.config.passwords.hash(&password).await?;
        let user = self
            .inner
            .store
            .upgrade_guest(GuestUpgrade {
                user_id,
                username,
                password_hash,
                display_name: None,
                now: domain::now(),
            })
            .await?;
        tracing::info!(user_id = %user.id, "guest linked to a password");
        Ok(pb::LinkPasswordResponse {
            tokens: Some(self.sign_in(&user).await?),
        })
    }

    pub(super) async fn do_link_provider(
        &self,
        caller: Caller,
        req: pb::LinkProviderRequest,
    ) -> Result<pb::LinkProviderResponse> {
        let user_id = calling_guest(&caller)?;
        let identity = self
            .verify_provider(req.provider, &req.id_token, &req.nonce)
            .await?;
        let user = self
            .inner
            .store
            .link_provider(user_id, &identity, domain::now())
            .await?;
        tracing::info!(user_id = %user.id, provider = identity.provider.as_str(), "guest linked to a provider");
        Ok(pb::LinkProviderResponse {
            tokens: Some(self.sign_in(&user).await?),
        })
    }

    /// Whether a provider proof (DeleteAccount) names one of `user_id`'s provider
    /// accounts. Errors: those of SignInWithProvider's checks; PERMISSION_DENIED when the
    /// token is valid but names another provider account.
    pub(super) async fn check_provider_proof(
        &self,
        user_id: Uuid,
        proof: &pb::ProviderProof,
    ) -> Result<()> {
        let identity = self
            .verify_provider(proof.provider, &proof.id_token, &proof.nonce)
            .await?;
        let linked = self.inner.store.linked_providers(user_id).await?;
        if linked.iter().any(|l| l.identity == identity) {
            Ok(())
        } else {
            tracing::info!(%user_id, "a provider proof for another provider account");
            Err(AccountsError::PermissionDenied(
                "the ID token names a provider account that is not this account's",
            ))
        }
    }
}
