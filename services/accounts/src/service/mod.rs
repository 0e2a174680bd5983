//! The `basra.accounts.v1.AccountsService` gRPC service over any [`Store`], one module per
//! concern, each adding its `do_…` methods to [`AccountsApi`]:
//!
//! - `account`, ChangePassword and DeleteAccount; `export`, ExportMyData; `admin`, the
//!   operators' AccountsAdminService (bans, renames, deletions, with the audit), and
//!   `admin_lookup`, its FindPlayers, GetPlayer and ExportPlayerData;
//! - `sign_in`, GuestLogin, Register, Login, Refresh and Logout, with their rate limits;
//!   `provider`, SignInWithProvider, LinkPassword and LinkProvider;
//! - `profile`, GetProfile, Leaderboard, MatchHistory and GetPlayers, continued by the
//!   page tokens of `page_token`; `seasons`, ListSeasons and the closing of finished
//!   seasons;
//! - `records`, RecordMatch and RecordMatches; `replays`, GetReplay (with the analysis);
//! - `friends`, `feed` and `names`: friend requests, presence and the friends' feed,
//!   display names;
//! - `reports`, ReportPlayer; `reports_admin`, the moderators' ListReports, GetReports and
//!   ResolveReports; `shown_names`, the one place a reported name is hidden from others;
//!   display names; `inbox`: the notices kept per player (ListNotices, MarkNoticesRead,
//!   CountUnreadNotices, SendNotice) and their delivery on the feed;
//! - `grpc`, the `AccountsService` trait: only glue (callers, span fields, metrics).
//!
//! This module holds what they all share: the service's state ([`AccountsApi`], its
//! configuration) and reading the caller of a request.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use basra_platform::auth::{
    self, Caller, IssuedToken, Role, TokenIssuer, TokenVerifier, TrustedKey,
};
use basra_platform::ratelimit::RateLimiter;
use basra_proto::basra::accounts::v1::accounts_internal_service_server::AccountsInternalServiceServer;
use basra_proto::basra::accounts::v1::accounts_service_server::AccountsServiceServer;
use tonic::{Request, Status};
use uuid::Uuid;

use crate::error::{AccountsError, Result};
use crate::friends::FriendLimits;
use crate::metrics::AccountsMetrics;
use crate::password::PasswordHasherPool;
use crate::store::{LeaderboardRules, Store};

mod account;
mod admin;
mod admin_lookup;
mod devices;
mod export;
mod feed;
mod friends;
mod grpc;
mod inbox;
mod internal;
mod names;
mod page_token;
mod profile;
mod provider;
mod pushes;
mod records;
mod replays;
mod reports;
mod reports_admin;
mod seasons;
mod shown_names;
mod sign_in;

pub use admin::{AccountsAdmin, MAX_REASON_CHARS};
pub use admin_lookup::MAX_QUERY_CHARS;
pub use devices::MAX_PUSH_TOKEN_BYTES;
pub use export::{EXPORT_CHUNK_BYTES, EXPORT_FORMAT};
pub use feed::{FeedStream, LOOK_AGAIN_EVERY, MAX_FEEDS_PER_PLAYER, MAX_REPORTS_PER_CALL, Social};
pub use profile::{HISTORY_DEFAULT_PAGE, LEADERBOARD_DEFAULT_PAGE, MAX_PAGE};
pub use records::MAX_RECORDS_PER_CALL;

/// The full gRPC name of the players' service.
pub const SERVICE_NAME: &str = "basra.accounts.v1.AccountsService";
/// The gRPC service names this server answers (health and reflection list them): the
/// players', the other services' (`AccountsInternalService`) and the operators'.
pub const SERVICE_NAMES: &[&str] = &[
    SERVICE_NAME,
    "basra.accounts.v1.AccountsInternalService",
    "basra.accounts.v1.AccountsAdminService",
];

/// The methods callable without an access token. Register and Logout read a
/// token themselves when one is sent (guest upgrade, sign out everywhere).
pub const PUBLIC_METHODS: &[&str] = &[
    "/basra.accounts.v1.AccountsService/GuestLogin",
    "/basra.accounts.v1.AccountsService/Register",
    "/basra.accounts.v1.AccountsService/Login",
    "/basra.accounts.v1.AccountsService/Refresh",
    "/basra.accounts.v1.AccountsService/Logout",
    "/basra.accounts.v1.AccountsService/SignInWithProvider",
];

/// The largest request accepted, in bytes (RecordMatch, with a long match's action
/// log, is the largest by far); a larger one is answered RESOURCE_EXHAUSTED.
pub const MAX_MESSAGE_BYTES: usize = 256 * 1024;

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
    /// The identity providers whose ID tokens sign in (SignInWithProvider).
    pub providers: crate::oidc::Providers,
    /// What is pushed and through what (`[push]`); `None`: pushing is off.
    pub push: Option<crate::push::Pushing>,
    /// `[reports]`: the per-reporter limit and when a reported name is hidden.
    pub reports: crate::reports::ReportRules,
    /// How many notices each player keeps, and for how long.
    pub inbox: crate::inbox::InboxLimits,
    /// Told of every notice kept (push delivery hooks in here; [`crate::inbox`]).
    pub notice_hook: crate::inbox::SharedNoticeHook,
    /// The rating seasons and tiers (the store holds the same calendar).
    pub calendar: Arc<crate::seasons::Calendar>,
    /// Analyses players' plays (GetReplay).
    pub analyst: crate::analysis::Analyst,
}

impl ServiceConfig {
    /// The verifier of the calls: the signing key for `player` tokens only, each trusted
    /// key for its own roles. An operator or service token signed with the player key is
    /// refused; to let one key sign more roles (`basra dev`'s development key), list it
    /// in `trusted_keys` with those roles.
    pub fn verifier(&self) -> Result<TokenVerifier, auth::AuthError> {
        self.issuer
            .verifier_for(&[Role::Player])
            .and_trusting(self.trusted_keys.clone())
    }
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
    /// The finished seasons this replica knows are closed ([`seasons`]).
    closed_seasons: std::sync::Mutex<std::collections::HashSet<String>>,
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

    /// A service on `store` (given the configuration's seasons), with presence and
    /// notifications in `social`.
    pub fn with_social(store: S, social: Social, config: ServiceConfig) -> AccountsApi<S> {
        AccountsApi {
            inner: Arc::new(Inner {
                store: store.with_calendar(Arc::clone(&config.calendar)),
                social,
                verifier: config
                    .verifier()
                    .expect("trusted keys are checked by service_config"),
                config,
                metrics: Arc::default(),
                closed_seasons: std::sync::Mutex::default(),
            }),
        }
    }

    /// The accounts store the service reads and writes (tests inspect it).
    pub fn store(&self) -> &S {
        &self.inner.store
    }

    /// The banned and deleted accounts this service refuses (its auth layer checks them).
    pub fn revocations(&self) -> basra_platform::revocation::Revocations {
        self.inner.social.revocations().clone()
    }

    /// A verifier for this service's access tokens (for the [`auth::AuthLayer`]).
    pub fn verifier(&self) -> TokenVerifier {
        self.inner.verifier.clone()
    }

    /// The service's Prometheus metrics.
    pub fn metrics(&self) -> &Arc<AccountsMetrics> {
        &self.inner.metrics
    }

    /// What is pushed and through what; `None`: pushing is off.
    pub fn pushing(&self) -> Option<&crate::push::Pushing> {
        self.inner.config.push.as_ref()
    }

    /// The token issuer.
    pub fn issuer(&self) -> &TokenIssuer {
        &self.inner.config.issuer
    }

    /// The tonic server wrapping this service.
    pub fn into_server(self) -> AccountsServiceServer<AccountsApi<S>> {
        AccountsServiceServer::new(self).max_decoding_message_size(MAX_MESSAGE_BYTES)
    }

    /// The tonic server of the internal calls (`AccountsInternalService`), on the same
    /// state: `RecordMatches` carries the largest requests.
    pub fn into_internal_server(self) -> AccountsInternalServiceServer<AccountsApi<S>> {
        AccountsInternalServiceServer::new(self).max_decoding_message_size(MAX_MESSAGE_BYTES)
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
}

/// The player calling: the caller put into the request by the auth layer, with a
/// player's token.
fn required_caller<T>(request: &Request<T>) -> Result<Caller, Status> {
    auth::player(request)
}
