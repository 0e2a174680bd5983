//! Sign-in and tokens in the memory store ([`SignIn`]): devices, passwords, provider
//! identities and refresh tokens, each step under the store's one lock.

use basra_platform::client_info::ClientInfo;
use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::{Inner, MemoryStore};
use crate::domain::DeviceId;
use crate::error::{AccountsError, Result};
use crate::oidc::ProviderIdentity;
use crate::refresh::{RefreshTokenRecord, TokenHash, TokenState};
use crate::store::{
    AccountRecords, GuestUpgrade, LinkedProvider, NewAccount, NewGuest, NewProviderAccount,
    NewSession, Rotation, SignIn, User,
};

impl Inner {
    pub(super) fn change_password(
        &mut self,
        user_id: Uuid,
        password_hash: &str,
        now: DateTime<Utc>,
    ) -> Result<u64> {
        let stored = self
            .passwords
            .get_mut(&user_id)
            .ok_or(AccountsError::UserNotFound)?;
        password_hash.clone_into(stored);
        self.password_dates.insert(user_id, now);
        let mut revoked = 0;
        for token in self.refresh.values_mut() {
            if token.user_id == user_id
                && token.revoked_at.is_none()
                && token.used_at.is_none()
                && token.expires_at > now
            {
                token.revoked_at = Some(now);
                revoked += 1;
            }
        }
        Ok(revoked)
    }

    pub(super) fn account_records(&self, user_id: Uuid) -> AccountRecords {
        let Some(user) = self.users.get(&user_id) else {
            return AccountRecords::default();
        };
        // A device is bound when its guest is created.
        let mut devices: Vec<(String, DateTime<Utc>)> = self
            .devices
            .iter()
            .filter(|(_, owner)| **owner == user_id)
            .map(|(device, _)| (device.clone(), user.created_at))
            .collect();
        devices.sort();
        let mut sessions: Vec<_> = self
            .refresh
            .values()
            .filter(|token| token.user_id == user_id)
            .cloned()
            .collect();
        sessions.sort_by_key(|token| (token.issued_at, token.hash));
        AccountRecords {
            devices,
            password_updated_at: self.password_dates.get(&user_id).copied(),
            sessions,
            name_changes: self.name_changes.get(&user_id).cloned().unwrap_or_default(),
        }
    }

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
}

impl SignIn for MemoryStore {
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

    async fn account_records(&self, user_id: Uuid) -> Result<AccountRecords> {
        Ok(self.lock().account_records(user_id))
    }

    async fn device_user(&self, device: &DeviceId) -> Result<Option<Uuid>> {
        Ok(self.lock().devices.get(device.as_str()).copied())
    }

    async fn provider_sign_in(
        &self,
        identity: &ProviderIdentity,
        new: NewProviderAccount,
    ) -> Result<(User, bool)> {
        self.lock().provider_sign_in(identity, new)
    }

    async fn link_provider(
        &self,
        user_id: Uuid,
        identity: &ProviderIdentity,
        now: DateTime<Utc>,
    ) -> Result<User> {
        self.lock().link_provider(user_id, identity, now)
    }

    async fn linked_providers(&self, user_id: Uuid) -> Result<Vec<LinkedProvider>> {
        Ok(self.lock().linked_providers(user_id))
    }
}
