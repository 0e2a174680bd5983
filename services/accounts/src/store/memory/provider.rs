//! Provider sign-in in the memory store, as `pg/provider.rs` does it on PostgreSQL.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::Inner;
use crate::error::{AccountsError, Result};
use crate::oidc::ProviderIdentity;
use crate::store::{LinkedProvider, NewProviderAccount, User};

impl Inner {
    pub(super) fn provider_sign_in(
        &mut self,
        identity: &ProviderIdentity,
        new: NewProviderAccount,
    ) -> Result<(User, bool)> {
        if let Some((id, _)) = self.providers.get(identity) {
            let user =
                self.users.get(id).cloned().ok_or_else(|| {
                    AccountsError::Internal("provider identity without user".into())
                })?;
            return Ok((user, false));
        }
        let user = User {
            id: new.id,
            username: None,
            display_name: new.display_name.as_str().to_owned(),
            is_guest: false,
            created_at: new.now,
        };
        self.providers.insert(identity.clone(), (user.id, new.now));
        self.new_user(user.clone());
        Ok((user, true))
    }

    pub(super) fn link_provider(
        &mut self,
        user_id: Uuid,
        identity: &ProviderIdentity,
        now: DateTime<Utc>,
    ) -> Result<User> {
        let user = self
            .users
            .get(&user_id)
            .cloned()
            .ok_or(AccountsError::UserNotFound)?;
        if !user.is_guest {
            return Err(AccountsError::AlreadyRegistered);
        }
        if self.providers.contains_key(identity) {
            return Err(AccountsError::ProviderTaken(identity.provider.title()));
        }
        let user = User {
            is_guest: false,
            ..user
        };
        self.providers.insert(identity.clone(), (user_id, now));
        self.users.insert(user_id, user.clone());
        for token in self.refresh.values_mut() {
            if token.user_id == user_id && token.revoked_at.is_none() {
                token.revoked_at = Some(now);
            }
        }
        Ok(user)
    }

    pub(super) fn linked_providers(&self, user_id: Uuid) -> Vec<LinkedProvider> {
        let mut linked: Vec<LinkedProvider> = self
            .providers
            .iter()
            .filter(|(_, (owner, _))| *owner == user_id)
            .map(|(identity, (_, at))| LinkedProvider {
                identity: identity.clone(),
                linked_at: *at,
            })
            .collect();
        linked.sort_by_key(|l| (l.linked_at, l.identity.provider));
        linked
    }

    pub(super) fn find_by_display_name(&self, fragment: &str, limit: u32) -> Vec<User> {
        let fragment = fragment.to_lowercase();
        let mut found: Vec<User> = self
            .users
            .values()
            .filter(|u| u.display_name.to_lowercase().contains(&fragment))
            .cloned()
            .collect();
        found.sort_by(|a, b| a.display_name.cmp(&b.display_name).then(a.id.cmp(&b.id)));
        found.truncate(limit as usize);
        found
    }
}
