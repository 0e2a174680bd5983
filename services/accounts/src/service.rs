//! The `basra.accounts.v1.AccountsService` gRPC service over any [`Store`].

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use basra_platform::auth::{
    self, Caller, IssuedToken, Role, TokenIssuer, TokenVerifier, TrustedKey,
};
use basra_platform::ratelimit::RateLimiter;
use basra_proto::basra::accounts::v1 as pb;
use basra_proto::basra::accounts::v1::accounts_service_server::{
    AccountsService, AccountsServiceServer,
};
use basra_proto::basra::common::v1 as common;
use basra_proto::convert::settings_to_pb;
use basra_records::MatchRecord;
use basra_records::wire::{basras_to_proto, timestamp_to_proto};
use tonic::{Request, Response, Status};
use uuid::Uuid;

use crate::domain::{self, DeviceId, DisplayName, Password, USERNAME_MAX, Username};
use crate::error::{AccountsError, Result};
use crate::friends::{Action, FriendLimits};
use crate::metrics::{AccountsMetrics, ResultLabel, code_label};
use crate::password::PasswordHasherPool;
use crate::refresh::{NewRefreshToken, TokenState, hash_presented};
use crate::store::{
    GuestUpgrade, HistoryCursor, HistoryEntry, LeaderboardCursor, LeaderboardRow, LeaderboardRules,
    NewAccount, NewGuest, NewSession, RatingChange, Recorded, Rotation, Store, User,
};

mod feed;
mod friends;
mod names;

pub use feed::{FeedStream, LOOK_AGAIN_EVERY, MAX_FEEDS_PER_PLAYER, MAX_REPORTS_PER_CALL, Social};

/// The full gRPC name of the service (health and reflection list it).
pub const SERVICE_NAME: &str = "basra.accounts.v1.AccountsService";

/// The methods callable without an access token. Register and Logout read a
/// token themselves when one is sent (guest upgrade, sign out everywhere).
pub const PUBLIC_METHODS: &[&str] = &[
    "/basra.accounts.v1.AccountsService/GuestLogin",
    "/basra.accounts.v1.AccountsService/Register",
    "/basra.accounts.v1.AccountsService/Login",
    "/basra.accounts.v1.AccountsService/Refresh",
    "/basra.accounts.v1.AccountsService/Logout",
];

/// The largest request accepted, in bytes (RecordMatch, with a long match's action
/// log, is the largest by far); a larger one is answered RESOURCE_EXHAUSTED.
pub const MAX_MESSAGE_BYTES: usize = 256 * 1024;

/// Leaderboard page size when the request says 0.
pub const LEADERBOARD_DEFAULT_PAGE: u32 = 50;
/// Match history page size when the request says 0.
pub const HISTORY_DEFAULT_PAGE: u32 = 20;
/// The largest page of either.
pub const MAX_PAGE: u32 = 100;

/// What the service needs besides its store.
#[derive(Debug)]
pub struct ServiceConfig {
    /// Keys trusted besides the signing key, each for one role: the callers' service
    /// keys (RecordMatch), an operator key, and accounts' previous keys while they rotate.
    pub trusted_keys: Vec<TrustedKey>,
    /// Signs access tokens.
    pub issuer: TokenIssuer,
    /// Access token lifetime.
    pub access_ttl: Duration,
    /// Refresh token lifetime.
    pub refresh_ttl: Duration,
    /// Hashes passwords.
    pub passwords: PasswordHasherPool,
    /// Login attempts per account.
    pub account_limiter: RateLimiter,
    /// Login attempts per client address.
    pub peer_limiter: RateLimiter,
    /// Register and GuestLogin calls per client address.
    pub signup_by_address: RateLimiter,
    /// Register and GuestLogin calls across this replica.
    pub signup_global: RateLimiter,
    /// The proxies whose forwarding headers name the client (per-address limits).
    pub trusted_proxies: Vec<ipnet::IpNet>,
    /// Who is listed on the leaderboard.
    pub leaderboard: LeaderboardRules,
    /// The friend limits.
    pub friends: FriendLimits,
    /// How often a player may change their display name.
    pub name_changes: crate::names::NameChangeLimit,
}

/// The accounts service: cheap to clone, shared by every connection.
#[derive(Debug)]
pub struct AccountsApi<S> {
    inner: Arc<Inner<S>>,
}

impl<S> Clone for AccountsApi<S> {
    fn clone(&self) -> Self {
        AccountsApi {
            inner: Arc::clone(&self.inner),
        }
    }
}

#[derive(Debug)]
struct Inner<S> {
    store: S,
    /// Presence and the friends' feed.
    social: Social,
    verifier: TokenVerifier,
    config: ServiceConfig,
    metrics: Arc<AccountsMetrics>,
}

/// A token for service-to-service calls (e.g. game-session's RecordMatch):
/// role [`Role::Service`], subject `service_id`.
pub fn issue_service_token(
    issuer: &TokenIssuer,
    service_id: Uuid,
    ttl: Duration,
) -> Result<IssuedToken> {
    issuer
        .issue(
            &Caller {
                user_id: service_id,
                role: Role::Service,
                guest: false,
            },
            ttl,
        )
        .map_err(|e| AccountsError::Internal(format!("cannot issue a service token: {e}")))
}

impl<S: Store> AccountsApi<S> {
    /// A service on `store`, with presence and notifications in this process.
    pub fn new(store: S, config: ServiceConfig) -> AccountsApi<S> {
        let social = Social::new(
            crate::social::SocialStore::Memory(crate::social::MemorySocial::new()),
            tokio_util::sync::CancellationToken::new(),
        );
        AccountsApi::with_social(store, social, config)
    }

    /// A service on `store`, with presence and notifications in `social`.
    pub fn with_social(store: S, social: Social, config: ServiceConfig) -> AccountsApi<S> {
        AccountsApi {
            inner: Arc::new(Inner {
                store,
                social,
                verifier: config
                    .issuer
                    .verifier()
                    .and_trusting(config.trusted_keys.clone())
                    .expect("trusted keys are checked by service_config"),
                config,
                metrics: Arc::default(),
            }),
        }
    }

    /// The store.
    pub fn store(&self) -> &S {
        &self.inner.store
    }

    /// A verifier for this service's access tokens (for the [`auth::AuthLayer`]).
    pub fn verifier(&self) -> TokenVerifier {
        self.inner.verifier.clone()
    }

    /// The service's Prometheus metrics.
    pub fn metrics(&self) -> &Arc<AccountsMetrics> {
        &self.inner.metrics
    }

    /// The token issuer.
    pub fn issuer(&self) -> &TokenIssuer {
        &self.inner.config.issuer
    }

    /// The tonic server wrapping this service.
    pub fn into_server(self) -> AccountsServiceServer<AccountsApi<S>> {
        AccountsServiceServer::new(self).max_decoding_message_size(MAX_MESSAGE_BYTES)
    }

    /// A new sign-in: a refresh token and the family it starts.
    fn new_session(&self) -> (NewRefreshToken, NewSession) {
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
    async fn sign_in(&self, user: &User) -> Result<pb::AuthTokens> {
        let (refresh, session) = self.new_session();
        self.inner
            .store
            .insert_refresh_token(session.token_for(user.id))
            .await?;
        self.tokens(user, refresh, session.expires_at)
    }

    fn tokens(
        &self,
        user: &User,
        refresh: NewRefreshToken,
        refresh_expires_at: chrono::DateTime<chrono::Utc>,
    ) -> Result<pb::AuthTokens> {
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

    /// The caller of a public method that may carry a token: `None` when no
    /// `authorization` metadata was sent, an error when one was sent but is
    /// not valid (never silently ignored).
    fn optional_caller<T>(&self, request: &Request<T>) -> Result<Option<Caller>> {
        let Some(value) = request.metadata().get("authorization") else {
            return Ok(None);
        };
        let token = value
            .to_str()
            .ok()
            .and_then(|v| v.split_once(' '))
            .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
            .map(|(_, token)| token.trim())
            .ok_or_else(|| {
                AccountsError::Unauthenticated(
                    "malformed access token: expected the metadata `authorization: Bearer <JWT>`"
                        .into(),
                )
            })?;
        self.inner
            .verifier
            .verify(token)
            .map(Some)
            .map_err(|e| AccountsError::Unauthenticated(e.to_string()))
    }

    /// The client's address (behind the trusted proxies), as a limiter key.
    fn client_key<T>(&self, request: &Request<T>) -> String {
        let ip: Option<IpAddr> = basra_platform::client_addr::client_ip(
            request.remote_addr(),
            request.metadata(),
            &self.inner.config.trusted_proxies,
        );
        ip.map_or_else(|| "unknown".to_owned(), |ip| ip.to_string())
    }

    fn check_login_rate(&self, account_key: &str, client: &str) -> Result<()> {
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
    fn check_signup_rate(&self, client: &str) -> Result<()> {
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

    async fn do_guest_login(&self, req: pb::GuestLoginRequest) -> Result<pb::GuestLoginResponse> {
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

    async fn do_register(
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

    async fn do_login(&self, client: &str, req: pb::LoginRequest) -> Result<pb::LoginResponse> {
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

    async fn do_refresh(&self, req: pb::RefreshRequest) -> Result<pb::RefreshResponse> {
        let presented = hash_presented(&req.refresh_token).ok_or(AccountsError::BadRefreshToken)?;
        let now = domain::now();
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

    async fn do_logout(
        &self,
        caller: Result<Option<Caller>>,
        req: pb::LogoutRequest,
    ) -> Result<pb::LogoutResponse> {
        let now = domain::now();
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
            tracing::info!(user_id = %caller.user_id, revoked, "signed out everywhere");
        } else if req.refresh_token.is_empty() {
            return Err(AccountsError::invalid(
                "refresh_token",
                "must not be empty (or set all_sessions)",
            ));
        }
        if let Some(hash) = hash_presented(&req.refresh_token) {
            self.inner.store.revoke_refresh_family(hash, now).await?;
        }
        Ok(pb::LogoutResponse {})
    }

    async fn do_get_profile(
        &self,
        caller: Caller,
        req: pb::GetProfileRequest,
    ) -> Result<pb::GetProfileResponse> {
        let user_id = if req.user_id.is_empty() {
            caller.user_id
        } else {
            Uuid::parse_str(&req.user_id)
                .map_err(|_| AccountsError::invalid("user_id", "is not a user id"))?
        };
        let own = user_id == caller.user_id;
        let profile = self
            .inner
            .store
            .profile(user_id, self.inner.config.leaderboard)
            .await?
            .ok_or(AccountsError::UserNotFound)?;
        let friend_code = if own {
            let code = self.inner.store.friend_code(user_id).await?;
            code.map(|c| c.to_string()).unwrap_or_default()
        } else {
            String::new()
        };
        Ok(pb::GetProfileResponse {
            profile: Some(pb::Profile {
                user_id: profile.user.id.to_string(),
                display_name: profile.user.display_name,
                username: if own {
                    profile.user.username.unwrap_or_default()
                } else {
                    String::new()
                },
                is_guest: profile.user.is_guest,
                rating: profile.rating.rating,
                rating_deviation: profile.rating.deviation,
                ranked_matches: profile.ranked_matches,
                matches_played: profile.matches_played,
                wins: profile.wins,
                losses: profile.losses,
                basras: Some(basras_to_proto(profile.basras)),
                leaderboard_rank: profile.leaderboard_rank,
                created_at: Some(timestamp_to_proto(profile.user.created_at)),
                friend_code,
            }),
        })
    }

    async fn do_leaderboard(
        &self,
        caller: Caller,
        req: pb::LeaderboardRequest,
    ) -> Result<pb::LeaderboardResponse> {
        let limit = page_size(req.page_size, LEADERBOARD_DEFAULT_PAGE);
        let (first_rank, after) = if req.page_token.is_empty() {
            (1, None)
        } else {
            let (rank, cursor) = decode_leaderboard_token(&req.page_token)?;
            (rank + 1, Some(cursor))
        };
        let rules = self.inner.config.leaderboard;
        let mut rows = self
            .inner
            .store
            .leaderboard(rules, after, limit + 1)
            .await?;
        let more = rows.len() > limit as usize;
        rows.truncate(limit as usize);
        let next_page_token = match rows.last() {
            Some(last) if more => {
                encode_leaderboard_token(first_rank + rows.len() as u32 - 1, &last.cursor())
            }
            _ => String::new(),
        };
        let caller_row = self
            .inner
            .store
            .leaderboard_position(caller.user_id, rules)
            .await?
            .map(|(rank, row)| leaderboard_entry(rank, row));
        Ok(pb::LeaderboardResponse {
            entries: rows
                .into_iter()
                .enumerate()
                .map(|(i, row)| leaderboard_entry(first_rank + i as u32, row))
                .collect(),
            next_page_token,
            caller: caller_row,
        })
    }

    async fn do_match_history(
        &self,
        caller: Caller,
        req: pb::MatchHistoryRequest,
    ) -> Result<pb::MatchHistoryResponse> {
        let limit = page_size(req.page_size, HISTORY_DEFAULT_PAGE);
        let after = if req.page_token.is_empty() {
            None
        } else {
            Some(decode_history_token(&req.page_token)?)
        };
        let mut entries = self
            .inner
            .store
            .match_history(caller.user_id, after, limit + 1)
            .await?;
        let more = entries.len() > limit as usize;
        entries.truncate(limit as usize);
        let next_page_token = match entries.last() {
            Some(last) if more => encode_history_token(&last.cursor()),
            _ => String::new(),
        };
        Ok(pb::MatchHistoryResponse {
            matches: entries.into_iter().map(match_summary).collect(),
            next_page_token,
        })
    }

    async fn do_get_players(
        &self,
        caller: Caller,
        req: pb::GetPlayersRequest,
    ) -> Result<pb::GetPlayersResponse> {
        if caller.role != Role::Service {
            return Err(AccountsError::PermissionDenied(
                "GetPlayers needs a service token; players use GetProfile",
            ));
        }
        if req.user_ids.is_empty() || req.user_ids.len() > MAX_PLAYERS_PER_CALL {
            return Err(AccountsError::invalid(
                "user_ids",
                "must hold 1 to 100 user ids",
            ));
        }
        let ids = req
            .user_ids
            .iter()
            .map(|id| Uuid::parse_str(id))
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(|_| {
                AccountsError::invalid("user_ids", "holds a value that is not a user id")
            })?;
        let players = self.inner.store.players(&ids).await?;
        let mut blocks: std::collections::HashMap<Uuid, Vec<String>> =
            std::collections::HashMap::new();
        if req.include_blocks {
            for (blocker, blocked) in self.inner.store.blocks(&ids).await? {
                blocks.entry(blocker).or_default().push(blocked.to_string());
            }
        }
        Ok(pb::GetPlayersResponse {
            players: players
                .into_iter()
                .map(|(user, rating)| pb::PlayerSummary {
                    user_id: user.id.to_string(),
                    blocked_user_ids: blocks.remove(&user.id).unwrap_or_default(),
                    display_name: user.display_name,
                    is_guest: user.is_guest,
                    rating: rating.rating,
                    rating_deviation: rating.deviation,
                })
                .collect(),
        })
    }

    async fn do_record_match(
        &self,
        caller: Caller,
        req: pb::RecordMatchRequest,
    ) -> Result<pb::RecordMatchResponse> {
        if caller.role != Role::Service {
            return Err(AccountsError::PermissionDenied(
                "RecordMatch needs a service token; players cannot record matches",
            ));
        }
        let record = MatchRecord::from_proto(
            req.record
                .ok_or_else(|| AccountsError::invalid("record", "is missing"))?,
        )?;
        let recorded = self
            .inner
            .store
            .record_match(&record, domain::now())
            .await?;
        tracing::info!(
            match_id = %record.match_id,
            already_recorded = recorded.already_recorded,
            rated = !recorded.rating_changes.is_empty(),
            "match recorded"
        );
        Ok(recorded_to_proto(&recorded))
    }

    async fn do_record_matches(
        &self,
        caller: Caller,
        req: pb::RecordMatchesRequest,
    ) -> Result<pb::RecordMatchesResponse> {
        if caller.role != Role::Service {
            return Err(AccountsError::PermissionDenied(
                "RecordMatches needs a service token; players cannot record matches",
            ));
        }
        if req.records.is_empty() || req.records.len() > MAX_RECORDS_PER_CALL {
            return Err(AccountsError::invalid(
                "records",
                format!("must hold 1 to {MAX_RECORDS_PER_CALL} records"),
            ));
        }
        let records = req
            .records
            .into_iter()
            .enumerate()
            .map(|(index, record)| {
                MatchRecord::from_proto(record).map_err(|e| AccountsError::from(e).in_record(index))
            })
            .collect::<Result<Vec<_>>>()?;
        let recorded = self
            .inner
            .store
            .record_matches(&records, domain::now())
            .await?;
        tracing::info!(
            records = records.len(),
            already_recorded = recorded.iter().filter(|r| r.already_recorded).count(),
            "matches recorded"
        );
        Ok(pb::RecordMatchesResponse {
            results: recorded.iter().map(recorded_to_proto).collect(),
        })
    }
}

fn recorded_to_proto(recorded: &Recorded) -> pb::RecordMatchResponse {
    pb::RecordMatchResponse {
        rating_changes: recorded
            .rating_changes
            .iter()
            .map(rating_change_to_proto)
            .collect(),
        already_recorded: recorded.already_recorded,
    }
}

fn page_size(requested: u32, default: u32) -> u32 {
    match requested {
        0 => default,
        n => n.min(MAX_PAGE),
    }
}

fn leaderboard_entry(rank: u32, row: LeaderboardRow) -> pb::LeaderboardEntry {
    pb::LeaderboardEntry {
        rank,
        user_id: row.user_id.to_string(),
        display_name: row.display_name,
        rating: row.rating,
        ranked_matches: row.ranked_matches,
    }
}

fn rating_change_to_proto(c: &RatingChange) -> common::RatingChange {
    common::RatingChange {
        user_id: c.user_id.to_string(),
        seat: u32::from(c.seat),
        rating_before: c.rating_before,
        rating_after: c.rating_after,
        deviation_after: c.deviation_after,
    }
}

fn match_summary(e: HistoryEntry) -> pb::MatchSummary {
    pb::MatchSummary {
        match_id: e.match_id,
        room_id: e.room_id,
        ranked: e.ranked,
        settings: Some(settings_to_pb(&e.settings)),
        seats: e
            .seats
            .into_iter()
            .map(|s| pb::MatchSeat {
                seat: u32::from(s.seat),
                side: u32::from(s.side),
                user_id: s.user_id.map(|id| id.to_string()).unwrap_or_default(),
                display_name: s.display_name,
                is_bot: s.is_bot,
            })
            .collect(),
        your_seat: u32::from(e.your_seat),
        winner_side: e.winner_side.map(u32::from),
        end_reason: e.end_reason.to_proto() as i32,
        final_totals: e.final_totals,
        rounds: e.rounds,
        your_rating_change: e.your_rating_change.as_ref().map(rating_change_to_proto),
        started_at: Some(timestamp_to_proto(e.started_at)),
        ended_at: Some(timestamp_to_proto(e.ended_at)),
    }
}

fn bad_page_token() -> AccountsError {
    AccountsError::invalid(
        "page_token",
        "is not a next_page_token from a previous response",
    )
}

/// `lb1.<rank of the last row>.<rating bits>.<ranked matches>.<user id>`.
fn encode_leaderboard_token(rank: u32, c: &LeaderboardCursor) -> String {
    format!(
        "lb1.{rank}.{:016x}.{}.{}",
        c.rating.to_bits(),
        c.ranked_matches,
        c.user_id.simple()
    )
}

fn decode_leaderboard_token(token: &str) -> Result<(u32, LeaderboardCursor)> {
    let mut parts = token.split('.');
    let (Some("lb1"), Some(rank), Some(bits), Some(ranked), Some(user), None) = (
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
    ) else {
        return Err(bad_page_token());
    };
    let rating = f64::from_bits(u64::from_str_radix(bits, 16).map_err(|_| bad_page_token())?);
    if !rating.is_finite() {
        return Err(bad_page_token());
    }
    Ok((
        rank.parse().map_err(|_| bad_page_token())?,
        LeaderboardCursor {
            rating,
            ranked_matches: ranked.parse().map_err(|_| bad_page_token())?,
            user_id: Uuid::parse_str(user).map_err(|_| bad_page_token())?,
        },
    ))
}

/// `mh1.<ended_at in µs>.<match id>` (the match id last: it may hold dots).
fn encode_history_token(c: &HistoryCursor) -> String {
    format!("mh1.{}.{}", c.ended_at.timestamp_micros(), c.match_id)
}

fn decode_history_token(token: &str) -> Result<HistoryCursor> {
    let mut parts = token.splitn(3, '.');
    let (Some("mh1"), Some(micros), Some(match_id)) = (parts.next(), parts.next(), parts.next())
    else {
        return Err(bad_page_token());
    };
    let ended_at = micros
        .parse::<i64>()
        .ok()
        .and_then(chrono::DateTime::from_timestamp_micros)
        .ok_or_else(bad_page_token)?;
    let match_id = domain::parse_opaque_id("page_token", match_id).map_err(|_| bad_page_token())?;
    Ok(HistoryCursor { ended_at, match_id })
}

/// The caller put into the request by the auth layer.
fn required_caller<T>(request: &Request<T>) -> Result<Caller, Status> {
    auth::caller(request)
}

#[tonic::async_trait]
impl<S: Store> AccountsService for AccountsApi<S> {
    #[tracing::instrument(skip_all)]
    async fn guest_login(
        &self,
        request: Request<pb::GuestLoginRequest>,
    ) -> Result<Response<pb::GuestLoginResponse>, Status> {
        let client = self.client_key(&request);
        let outcome = match self.check_signup_rate(&client) {
            Ok(()) => self.do_guest_login(request.into_inner()).await,
            Err(limited) => Err(limited),
        }
        .map_err(Status::from);
        self.inner.metrics.sign_in("guest", &outcome);
        Ok(Response::new(outcome?))
    }

    #[tracing::instrument(skip_all)]
    async fn register(
        &self,
        request: Request<pb::RegisterRequest>,
    ) -> Result<Response<pb::RegisterResponse>, Status> {
        let caller = self.optional_caller(&request)?;
        let client = self.client_key(&request);
        let outcome = match self.check_signup_rate(&client) {
            Ok(()) => self.do_register(caller, request.into_inner()).await,
            Err(limited) => Err(limited),
        }
        .map_err(Status::from);
        self.inner.metrics.sign_in("register", &outcome);
        Ok(Response::new(outcome?))
    }

    #[tracing::instrument(skip_all)]
    async fn login(
        &self,
        request: Request<pb::LoginRequest>,
    ) -> Result<Response<pb::LoginResponse>, Status> {
        let client = self.client_key(&request);
        let outcome = self
            .do_login(&client, request.into_inner())
            .await
            .map_err(Status::from);
        self.inner.metrics.sign_in("login", &outcome);
        Ok(Response::new(outcome?))
    }

    #[tracing::instrument(skip_all)]
    async fn refresh(
        &self,
        request: Request<pb::RefreshRequest>,
    ) -> Result<Response<pb::RefreshResponse>, Status> {
        let outcome = self
            .do_refresh(request.into_inner())
            .await
            .map_err(Status::from);
        self.inner.metrics.sign_in("refresh", &outcome);
        Ok(Response::new(outcome?))
    }

    #[tracing::instrument(skip_all)]
    async fn logout(
        &self,
        request: Request<pb::LogoutRequest>,
    ) -> Result<Response<pb::LogoutResponse>, Status> {
        let caller = self.optional_caller(&request);
        Ok(Response::new(
            self.do_logout(caller, request.into_inner()).await?,
        ))
    }

    #[tracing::instrument(skip_all, fields(user_id))]
    async fn get_profile(
        &self,
        request: Request<pb::GetProfileRequest>,
    ) -> Result<Response<pb::GetProfileResponse>, Status> {
        let caller = required_caller(&request)?;
        tracing::Span::current().record("user_id", tracing::field::display(caller.user_id));
        Ok(Response::new(
            self.do_get_profile(caller, request.into_inner()).await?,
        ))
    }

    #[tracing::instrument(skip_all, fields(user_id))]
    async fn set_display_name(
        &self,
        request: Request<pb::SetDisplayNameRequest>,
    ) -> Result<Response<pb::SetDisplayNameResponse>, Status> {
        let caller = required_caller(&request)?;
        tracing::Span::current().record("user_id", tracing::field::display(caller.user_id));
        Ok(Response::new(
            self.do_set_display_name(caller, request.into_inner())
                .await?,
        ))
    }

    #[tracing::instrument(skip_all, fields(user_id))]
    async fn leaderboard(
        &self,
        request: Request<pb::LeaderboardRequest>,
    ) -> Result<Response<pb::LeaderboardResponse>, Status> {
        let caller = required_caller(&request)?;
        tracing::Span::current().record("user_id", tracing::field::display(caller.user_id));
        Ok(Response::new(
            self.do_leaderboard(caller, request.into_inner()).await?,
        ))
    }

    #[tracing::instrument(skip_all, fields(user_id))]
    async fn match_history(
        &self,
        request: Request<pb::MatchHistoryRequest>,
    ) -> Result<Response<pb::MatchHistoryResponse>, Status> {
        let caller = required_caller(&request)?;
        tracing::Span::current().record("user_id", tracing::field::display(caller.user_id));
        Ok(Response::new(
            self.do_match_history(caller, request.into_inner()).await?,
        ))
    }

    #[tracing::instrument(skip_all, fields(user_id))]
    async fn add_friend(
        &self,
        request: Request<pb::AddFriendRequest>,
    ) -> Result<Response<pb::AddFriendResponse>, Status> {
        let caller = self.friend_caller(&request)?;
        Ok(Response::new(
            self.do_add_friend(caller, request.into_inner()).await?,
        ))
    }

    #[tracing::instrument(skip_all, fields(user_id))]
    async fn accept_friend(
        &self,
        request: Request<pb::AcceptFriendRequest>,
    ) -> Result<Response<pb::AcceptFriendResponse>, Status> {
        let caller = self.friend_caller(&request)?;
        self.do_friend_action(&caller, &request.get_ref().user_id, Action::Accept)
            .await?;
        Ok(Response::new(pb::AcceptFriendResponse {}))
    }

    #[tracing::instrument(skip_all, fields(user_id))]
    async fn decline_friend(
        &self,
        request: Request<pb::DeclineFriendRequest>,
    ) -> Result<Response<pb::DeclineFriendResponse>, Status> {
        let caller = self.friend_caller(&request)?;
        self.do_friend_action(&caller, &request.get_ref().user_id, Action::Decline)
            .await?;
        Ok(Response::new(pb::DeclineFriendResponse {}))
    }

    #[tracing::instrument(skip_all, fields(user_id))]
    async fn cancel_friend(
        &self,
        request: Request<pb::CancelFriendRequest>,
    ) -> Result<Response<pb::CancelFriendResponse>, Status> {
        let caller = self.friend_caller(&request)?;
        self.do_friend_action(&caller, &request.get_ref().user_id, Action::Cancel)
            .await?;
        Ok(Response::new(pb::CancelFriendResponse {}))
    }

    #[tracing::instrument(skip_all, fields(user_id))]
    async fn remove_friend(
        &self,
        request: Request<pb::RemoveFriendRequest>,
    ) -> Result<Response<pb::RemoveFriendResponse>, Status> {
        let caller = self.friend_caller(&request)?;
        self.do_friend_action(&caller, &request.get_ref().user_id, Action::Remove)
            .await?;
        Ok(Response::new(pb::RemoveFriendResponse {}))
    }

    #[tracing::instrument(skip_all, fields(user_id))]
    async fn block_player(
        &self,
        request: Request<pb::BlockPlayerRequest>,
    ) -> Result<Response<pb::BlockPlayerResponse>, Status> {
        let caller = self.friend_caller(&request)?;
        self.do_friend_action(&caller, &request.get_ref().user_id, Action::Block)
            .await?;
        Ok(Response::new(pb::BlockPlayerResponse {}))
    }

    #[tracing::instrument(skip_all, fields(user_id))]
    async fn unblock_player(
        &self,
        request: Request<pb::UnblockPlayerRequest>,
    ) -> Result<Response<pb::UnblockPlayerResponse>, Status> {
        let caller = self.friend_caller(&request)?;
        self.do_friend_action(&caller, &request.get_ref().user_id, Action::Unblock)
            .await?;
        Ok(Response::new(pb::UnblockPlayerResponse {}))
    }

    #[tracing::instrument(skip_all, fields(user_id))]
    async fn list_friends(
        &self,
        request: Request<pb::ListFriendsRequest>,
    ) -> Result<Response<pb::ListFriendsResponse>, Status> {
        let caller = self.friend_caller(&request)?;
        Ok(Response::new(self.do_list_friends(caller).await?))
    }

    type WatchFriendsStream = FeedStream;

    #[tracing::instrument(skip_all, fields(user_id))]
    async fn watch_friends(
        &self,
        request: Request<pb::WatchFriendsRequest>,
    ) -> Result<Response<Self::WatchFriendsStream>, Status> {
        let caller = self.friend_caller(&request)?;
        Ok(Response::new(
            self.do_watch_friends(caller, request.into_inner()).await?,
        ))
    }

    #[tracing::instrument(skip_all, fields(caller))]
    async fn report_presence(
        &self,
        request: Request<pb::ReportPresenceRequest>,
    ) -> Result<Response<pb::ReportPresenceResponse>, Status> {
        let caller = required_caller(&request)?;
        tracing::Span::current().record("caller", tracing::field::display(caller.user_id));
        Ok(Response::new(
            self.do_report_presence(caller, request.into_inner())
                .await?,
        ))
    }

    #[tracing::instrument(skip_all, fields(caller))]
    async fn send_invite(
        &self,
        request: Request<pb::SendInviteRequest>,
    ) -> Result<Response<pb::SendInviteResponse>, Status> {
        let caller = required_caller(&request)?;
        tracing::Span::current().record("caller", tracing::field::display(caller.user_id));
        Ok(Response::new(
            self.do_send_invite(caller, request.into_inner()).await?,
        ))
    }

    #[tracing::instrument(skip_all, fields(caller))]
    async fn get_players(
        &self,
        request: Request<pb::GetPlayersRequest>,
    ) -> Result<Response<pb::GetPlayersResponse>, Status> {
        let caller = required_caller(&request)?;
        tracing::Span::current().record("caller", tracing::field::display(caller.user_id));
        Ok(Response::new(
            self.do_get_players(caller, request.into_inner()).await?,
        ))
    }

    #[tracing::instrument(skip_all, fields(caller))]
    async fn record_match(
        &self,
        request: Request<pb::RecordMatchRequest>,
    ) -> Result<Response<pb::RecordMatchResponse>, Status> {
        let caller = required_caller(&request)?;
        tracing::Span::current().record("caller", tracing::field::display(caller.user_id));
        let started = std::time::Instant::now();
        let outcome = self
            .do_record_match(caller, request.into_inner())
            .await
            .map_err(Status::from);
        let metrics = &self.inner.metrics;
        metrics
            .record_match_seconds
            .observe(started.elapsed().as_secs_f64());
        let result = match &outcome {
            Ok(answer) if answer.already_recorded => "duplicate".to_owned(),
            Ok(_) => "recorded".to_owned(),
            Err(status) => code_label(status.code()),
        };
        metrics
            .record_match
            .get_or_create(&ResultLabel { result })
            .inc();
        Ok(Response::new(outcome?))
    }

    #[tracing::instrument(skip_all, fields(caller))]
    async fn record_matches(
        &self,
        request: Request<pb::RecordMatchesRequest>,
    ) -> Result<Response<pb::RecordMatchesResponse>, Status> {
        let caller = required_caller(&request)?;
        tracing::Span::current().record("caller", tracing::field::display(caller.user_id));
        let outcome = self
            .do_record_matches(caller, request.into_inner())
            .await
            .map_err(Status::from);
        // The same counter as RecordMatch, one count per record.
        let counter = &self.inner.metrics.record_match;
        match &outcome {
            Ok(answer) => {
                for result in &answer.results {
                    let result = if result.already_recorded {
                        "duplicate"
                    } else {
                        "recorded"
                    };
                    counter
                        .get_or_create(&ResultLabel {
                            result: result.to_owned(),
                        })
                        .inc();
                }
            }
            Err(status) => {
                counter
                    .get_or_create(&ResultLabel {
                        result: code_label(status.code()),
                    })
                    .inc();
            }
        }
        Ok(Response::new(outcome?))
    }
}

/// The most records one RecordMatches call may carry.
pub const MAX_RECORDS_PER_CALL: usize = 100;

/// The most players one GetPlayers call may ask for.
const MAX_PLAYERS_PER_CALL: usize = 100;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_tokens_round_trip_and_reject_garbage() {
        let c = LeaderboardCursor {
            rating: 1612.25,
            ranked_matches: 7,
            user_id: Uuid::now_v7(),
        };
        let t = encode_leaderboard_token(50, &c);
        assert_eq!(decode_leaderboard_token(&t).unwrap(), (50, c));
        for bad in ["", "lb1", "lb1.1.2.3", "lb2.1.0.1.x", &format!("{t}.x")] {
            assert!(decode_leaderboard_token(bad).is_err(), "{bad}");
        }
        let h = HistoryCursor {
            ended_at: domain::now(),
            match_id: "m.1-2".into(),
        };
        assert_eq!(decode_history_token(&encode_history_token(&h)).unwrap(), h);
        assert!(decode_history_token("mh1.x.y").is_err());
        assert!(decode_history_token("mh1.1.").is_err());
    }

    #[test]
    fn page_sizes() {
        assert_eq!(page_size(0, 50), 50);
        assert_eq!(page_size(7, 50), 7);
        assert_eq!(page_size(1000, 50), 100);
    }
}
