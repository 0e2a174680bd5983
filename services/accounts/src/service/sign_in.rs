//! Sign-in: GuestLogin, Register (a guest upgraded in place), Login, Refresh (rotation,
//! reuse revokes the family) and Logout, with the per-address and per-account limits that
//! guard them. Each ends in a session: a refresh token family in the store and an access
//! token signed by the service's key.

use basra_platform::auth::{Caller, Role};
use basra_proto::basra::accounts::v1 as pb;
use basra_records::wire::timestamp_to_proto;
use uuid::Uuid;

use super::AccountsApi;
use crate::domain::{self, DeviceId, DisplayName, Password, USERNAME_MAX, Username};
use crate::error::{AccountsError, Result};
use crate::refresh::{NewRefreshToken, TokenState, hash_presented};
use crate::store::{GuestUpgrade, NewAccount, NewGuest, NewSession, Rotation, Store, User};

impl<S: Store> AccountsApi<S> {
    /// A new sign-in: a refresh token and the family it starts.
    pub(super) fn new_session(&self) -> (NewRefreshToken, NewSession) {
        let now = domain::now();
        let refresh = NewRefreshToken::generate();
        let session = NewSession {
            hash: refresh.hash,
            family_id: Uuid::now_v7(),
            issued_at: now,
            expires_at: now + self.inner.config.refresh_ttl,
        };
        (refresh, session)
    }

    /// Starts a new sign-in (refresh token family) for `user`.
    pub(super) async fn sign_in(&self, user: &User) -> Result<pb::AuthTokens> {
        let (refresh, session) = self.new_session();
        self.inner
            .store
            .insert_refresh_token(session.token_for(user.id))
            .await?;
        self.tokens(user, refresh, session.expires_at)
    }

    pub(super) fn tokens(
        &self,
        user: &User,
        refresh: NewRefreshToken,
        refresh_expires_at: chrono::DateTime<chrono::Utc>,
    ) -> Result<pb::AuthTokens> {
        // A banned account gets no tokens (every sign-in path ends here).
        self.refuse_revoked(user.id)?;
        let access = self
            .inner
            .config
            .issuer
            .issue(
                &Caller {
                    user_id: user.id,
                    role: Role::Player,
                    guest: user.is_guest,
                },
                self.inner.config.access_ttl,
            )
            .map_err(|e| AccountsError::Internal(format!("cannot issue an access token: {e}")))?;
        Ok(pb::AuthTokens {
            access_token: access.token,
            access_token_expires_at: Some(timestamp_to_proto(access.expires_at)),
            refresh_token: refresh.token,
            refresh_token_expires_at: Some(timestamp_to_proto(refresh_expires_at)),
            user_id: user.id.to_string(),
            is_guest: user.is_guest,
            display_name: user.display_name.clone(),
        })
    }

    /// Refuses `user` while they are banned (or deleted), with the reason.
    fn refuse_revoked(&self, user: Uuid) -> Result<()> {
        match self.inner.social.revocations().check(user) {
            Some(revoked) => Err(AccountsError::Banned(revoked.status().message().to_owned())),
            None => Ok(()),
        }
    }

    /// Notes the client app a sign-in came from (`basra-client`), for the analyst view
    /// `analyst.players` and the seats of the matches the player then plays.
    /// Informational: a call without it notes nothing, and a failure to note is logged
    /// while the sign-in stands.
    pub(super) async fn note_client(
        &self,
        app: Option<basra_platform::client_info::ClientInfo>,
        tokens: Option<&pb::AuthTokens>,
    ) {
        let (Some(app), Some(tokens)) = (app, tokens) else {
            return;
        };
        let Ok(user_id) = Uuid::parse_str(&tokens.user_id) else {
            return;
        };
        if let Err(error) = self
            .inner
            .store
            .note_sign_in_client(user_id, &app, domain::now())
            .await
        {
            tracing::warn!(%error, "cannot note the sign-in's client");
        }
    }

    pub(super) fn check_login_rate(&self, account_key: &str, client: &str) -> Result<()> {
        let config = &self.inner.config;
        let by_client = config.peer_limiter.check(client);
        let by_account = config.account_limiter.check(account_key);
        match (by_client, by_account) {
            (Ok(()), Ok(())) => Ok(()),
            (Err(wait), _) | (_, Err(wait)) => {
                tracing::warn!(client, "login rate limited");
                Err(AccountsError::RateLimited { retry_after: wait })
            }
        }
    }

    /// Register and GuestLogin may create an account: limited per client address and
    /// across the replica, so a flood cannot fill the database or the hashing pool.
    pub(super) fn check_signup_rate(&self, client: &str) -> Result<()> {
        let config = &self.inner.config;
        let limited = config
            .signup_by_address
            .check(client)
            .and_then(|()| config.signup_global.check("all"));
        limited.map_err(|wait| {
            tracing::warn!(client, "sign-up rate limited");
            AccountsError::SignupLimited { retry_after: wait }
        })
    }

    pub(super) async fn do_guest_login(
        &self,
        req: pb::GuestLoginRequest,
    ) -> Result<pb::GuestLoginResponse> {
        let device = DeviceId::parse(&req.device_id)?;
        let display_name = DisplayName::parse_optional(&req.display_name)?
            .unwrap_or_else(DisplayName::random_guest);
        let (refresh, session) = self.new_session();
        let user = self
            .inner
            .store
            .guest_login(
                &device,
                NewGuest {
                    id: Uuid::now_v7(),
                    display_name,
                    now: session.issued_at,
                },
                session,
            )
            .await?;
        if !user.is_guest {
            return Err(AccountsError::GuestUpgraded);
        }
        Ok(pb::GuestLoginResponse {
            tokens: Some(self.tokens(&user, refresh, session.expires_at)?),
        })
    }

    pub(super) async fn do_register(
        &self,
        caller: Option<Caller>,
        req: pb::RegisterRequest,
    ) -> Result<pb::RegisterResponse> {
        let username = Username::parse(&req.username)?;
        let password = Password::parse(&req.password)?;
        let display_name = DisplayName::parse_optional(&req.display_name)?;
        let guest = match caller {
            None => None,
            Some(c) if c.role != Role::Player => {
                return Err(AccountsError::PermissionDenied(
                    "only a player's token can be upgraded by Register",
                ));
            }
            Some(c) if !c.guest => return Err(AccountsError::AlreadyRegistered),
            Some(c) => Some(c.user_id),
        };
        // A new account without a display name goes by its username, which must then be
        // a valid display name too (checked before the password is hashed).
        let display_name = match (display_name, guest) {
            (None, None) => Some(DisplayName::from_username(&username)?),
            (name, _) => name,
        };
        // Cheap check first, so a taken name costs no password hash; the
        // unique index still decides races.
        if self
            .inner
            .store
            .password_credentials(&username.key())
            .await?
            .is_some()
        {
            return Err(AccountsError::UsernameTaken);
        }
        let password_hash = self.inner.config.passwords.hash(&password).await?;
        let now = domain::now();
        let (user, upgraded) = match guest {
            Some(user_id) => {
                let user = self
                    .inner
                    .store
                    .upgrade_guest(GuestUpgrade {
                        user_id,
                        username,
                        password_hash,
                        display_name,
                        now,
                    })
                    .await?;
                (user, true)
            }
            None => {
                let display_name = match display_name {
                    Some(name) => name,
                    None => DisplayName::from_username(&username)?,
                };
                let user = self
                    .inner
                    .store
                    .create_account(NewAccount {
                        id: Uuid::now_v7(),
                        username,
                        password_hash,
                        display_name,
                        now,
                    })
                    .await?;
                (user, false)
            }
        };
        tracing::info!(user_id = %user.id, upgraded, "account registered");
        Ok(pb::RegisterResponse {
            tokens: Some(self.sign_in(&user).await?),
            upgraded_guest: upgraded,
        })
    }

    pub(super) async fn do_login(
        &self,
        client: &str,
        req: pb::LoginRequest,
    ) -> Result<pb::LoginResponse> {
        if req.username.is_empty() {
            return Err(AccountsError::invalid("username", "must not be empty"));
        }
        // Any password up to the maximum may be tried: the strength rules are
        // Register's, and accounts created under older rules keep working.
        let password = Password::presented(&req.password)?;
        // Usernames are ASCII; anything else simply matches no account. The
        // key is bounded so an absurd username cannot bloat the limiter.
        let key = req
            .username
            .chars()
            .take(USERNAME_MAX + 1)
            .collect::<String>()
            .to_ascii_lowercase();
        self.check_login_rate(&key, client)?;
        if req.username.chars().count() > USERNAME_MAX {
            // No account can have it: answer like an unknown user (after the
            // rate limit, so probing costs the same).
            return Err(AccountsError::BadCredentials);
        }
        let found = self.inner.store.password_credentials(&key).await?;
        let (user, hash) = match found {
            Some((user, hash)) => (Some(user), Some(hash)),
            None => (None, None),
        };
        let ok = self.inner.config.passwords.verify(&password, hash).await?;
        match user {
            Some(user) if ok => Ok(pb::LoginResponse {
                tokens: Some(self.sign_in(&user).await?),
            }),
            _ => {
                tracing::info!("login failed");
                Err(AccountsError::BadCredentials)
            }
        }
    }

    pub(super) async fn do_refresh(&self, req: pb::RefreshRequest) -> Result<pb::RefreshResponse> {
        let presented = hash_presented(&req.refresh_token).ok_or(AccountsError::BadRefreshToken)?;
        let now = domain::now();
        // A ban refuses the refresh before the token is used up, so that it works again
        // after an unban. Only a token that could be exchanged: a replayed one still
        // revokes its family below, ban or not.
        if let Some(stored) = self.inner.store.refresh_token(presented).await?
            && stored.state(now) == TokenState::Valid
        {
            self.refuse_revoked(stored.user_id)?;
        }
        let next = NewRefreshToken::generate();
        let expires_at = now + self.inner.config.refresh_ttl;
        match self
            .inner
            .store
            .rotate_refresh_token(presented, next.hash, expires_at, now)
            .await?
        {
            Rotation::Rotated { user } => Ok(pb::RefreshResponse {
                tokens: Some(self.tokens(&user, next, expires_at)?),
            }),
            Rotation::Rejected(TokenState::Reused) => {
                tracing::warn!("refresh token reused: its sign-in is revoked");
                Err(AccountsError::BadRefreshToken)
            }
            Rotation::Unknown | Rotation::Rejected(_) => Err(AccountsError::BadRefreshToken),
        }
    }

    pub(super) async fn do_logout(
        &self,
        caller: Result<Option<Caller>>,
        req: pb::LogoutRequest,
    ) -> Result<pb::LogoutResponse> {
        let now = domain::now();
        if !req.push_token.is_empty() {
            super::devices::check_push_token("push_token", &req.push_token)?;
        }
        if req.all_sessions {
            let caller = caller?.ok_or_else(|| {
                AccountsError::Unauthenticated(
                    "signing out everywhere needs `authorization: Bearer <access token>`".into(),
                )
            })?;
            let revoked = self
                .inner
                .store
                .revoke_user_refresh_tokens(caller.user_id, now)
                .await?;
            let devices = self.inner.store.remove_push_devices(caller.user_id).await?;
            tracing::info!(user_id = %caller.user_id, revoked, devices, "signed out everywhere");
        } else if req.refresh_token.is_empty() {
            return Err(AccountsError::invalid(
                "refresh_token",
                "must not be empty (or set all_sessions)",
            ));
        }
        if let Some(hash) = hash_presented(&req.refresh_token) {
            let owner = self.inner.store.revoke_refresh_family(hash, now).await?;
            // The device's push token goes with its sign-in, if it is the signed-out
            // account's (no push for an account no longer signed in there).
            if let Some(owner) = owner
                && !req.push_token.is_empty()
            {
                self.inner
                    .store
                    .remove_push_device(owner, &req.push_token)
                    .await?;
            }
        }
        Ok(pb::LogoutResponse {})
    }
}
