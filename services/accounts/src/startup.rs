//! The service's assembly: from [`Settings`] to a running server. [`App::build`] connects
//! the stores (PostgreSQL or memory, Redis or memory for presence) and loads the signing
//! key, failing before any socket is bound; [`App::mount`] adds the service beside others
//! (as `basra dev` does); [`App::run`] serves it alone. [`serve`] is the way in for tests
//! and tools that build the service themselves.

use std::sync::Arc;
use std::time::Duration;

use basra_platform::ServeOptions;
use basra_platform::auth::{AuthLayer, SigningKey, TokenIssuer, TokenVerifier};
use basra_platform::ratelimit::RateLimiter;
use secrecy::ExposeSecret;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tonic::service::Routes;

use crate::error::Result;
use crate::password::PasswordHasherPool;
use crate::service::{self, AccountsApi, PUBLIC_METHODS, SERVICE_NAMES, ServiceConfig};
use crate::settings::DatabaseKind;
use crate::store::{LeaderboardRules, MemoryStore, PgStore, Store};
use crate::{AccountsError, AccountsMetrics, Settings, friends, names, social};

/// Serves `service` on `listener` until `shutdown` is cancelled: access
/// tokens checked by the platform's auth layer (except [`PUBLIC_METHODS`]),
/// plus gRPC health and reflection; `serving` says how it drains and limits
/// connections. Tests and tools serve a service they built themselves this way;
/// the binary goes through [`App`].
pub async fn serve<S: Store>(
    listener: TcpListener,
    service: AccountsApi<S>,
    shutdown: CancellationToken,
    serving: impl Into<ServeOptions>,
) -> Result<()> {
    let auth =
        AuthLayer::new(service.verifier(), PUBLIC_METHODS).with_revocations(service.revocations());
    let routes = mount_service(service, Routes::default(), shutdown.clone());
    serve_routes(listener, routes, auth, shutdown, serving).await
}

/// Adds `service` to `routes` and, until `shutdown`, keeps its pool gauges current and
/// drops expired notices.
fn mount_service<S: Store>(
    service: AccountsApi<S>,
    routes: Routes,
    shutdown: CancellationToken,
) -> Routes {
    tokio::spawn(sweep_notices(service.store().clone(), shutdown.clone()));
    if service.store().pool_stats().is_some() {
        tokio::spawn(watch_pool(
            service.store().clone(),
            Arc::clone(service.metrics()),
            shutdown.clone(),
        ));
    }
    if let Some(pushing) = service.pushing() {
        crate::push::Worker::new(
            service.store().clone(),
            std::sync::Arc::clone(&pushing.pusher),
            &pushing.settings,
            service.metrics().pushes.clone(),
        )
        .spawn(shutdown.clone());
        if let Some(queue) = pushing.take_queue() {
            tokio::spawn(service.clone().forward_notices(queue, shutdown));
        }
    }
    let admin = service::AccountsAdmin::new(service.clone()).into_server();
    routes
        .add_service(service.clone().into_internal_server())
        .add_service(service.into_server())
        .add_service(admin)
}

async fn serve_routes(
    listener: TcpListener,
    routes: Routes,
    auth: AuthLayer,
    shutdown: CancellationToken,
    serving: impl Into<ServeOptions>,
) -> Result<()> {
    basra_platform::serve(listener, routes, SERVICE_NAMES, auth, shutdown, serving)
        .await
        .map_err(|e| AccountsError::Internal(format!("grpc server: {e}")))
}

/// The signing key `[identity]` names, or a fresh development key.
pub fn signing_key(settings: &Settings) -> Result<SigningKey> {
    let key = settings
        .identity
        .signing_key()
        .map_err(|e| AccountsError::bad_setting(format!("identity: {e}")))?;
    match key {
        Some(key) => {
            tracing::info!(kid = key.kid(), file = %settings.identity.signing_key_file.display(), "signing key loaded");
            Ok(key)
        }
        None => {
            let key = SigningKey::generate();
            tracing::warn!(
                kid = key.kid(),
                public_key = %key.public_pem(),
                "no identity.signing_key_file configured: generated a DEVELOPMENT signing key; \
                 tokens stop verifying when this process restarts"
            );
            Ok(key)
        }
    }
}

/// The service's configuration from settings, with `key` signing tokens.
pub fn service_config(settings: &Settings, key: SigningKey) -> Result<ServiceConfig> {
    let limits = &settings.login_limits;
    let issuer = TokenIssuer::new(key, &settings.auth.issuer, &settings.auth.audience);
    let trusted_keys = basra_platform::auth::load_trusted(&settings.auth.trusted_keys)
        .map_err(|e| AccountsError::bad_setting(format!("auth.trusted_keys: {e}")))?;
    let push = crate::push::Pushing::from_settings(&settings.push)?;
    let push_hook = push
        .as_ref()
        .map(|p| std::sync::Arc::clone(&p.hook) as std::sync::Arc<dyn crate::inbox::NoticeHook>);
    let config = ServiceConfig {
        trusted_keys,
        issuer,
        access_ttl: settings.tokens.access_ttl(),
        refresh_ttl: settings.tokens.refresh_ttl(),
        passwords: PasswordHasherPool::new(
            settings.passwords.memory_kib,
            settings.passwords.iterations,
            settings.passwords.concurrency(),
            settings.passwords.queue_wait(),
        )?,
        account_limiter: RateLimiter::new(
            limits.per_account_max,
            Duration::from_secs(limits.per_account_window_seconds),
        ),
        peer_limiter: RateLimiter::new(
            limits.per_peer_max,
            Duration::from_secs(limits.per_peer_window_seconds),
        ),
        signup_by_address: RateLimiter::new(
            settings.signup_limits.per_address_max,
            Duration::from_secs(settings.signup_limits.per_address_window_seconds),
        ),
        signup_global: RateLimiter::new(
            settings.signup_limits.global_max,
            Duration::from_secs(settings.signup_limits.global_window_seconds),
        ),
        trusted_proxies: settings.server.trusted_proxies.clone(),
        leaderboard: LeaderboardRules {
            min_ranked_matches: settings.leaderboard.min_ranked_matches,
        },
        friends: friends::FriendLimits {
            max_friends: settings.friends.max_friends,
            requests_per_day: settings.friends.requests_per_day,
        },
        name_changes: names::NameChangeLimit {
            max_changes: settings.display_names.max_changes,
            window: Duration::from_secs(settings.display_names.window_seconds),
        },
        reports: settings.reports.rules(),
        providers: {
            let providers = crate::oidc::Providers::new(&settings.providers)?;
            tracing::info!(enabled = ?providers.enabled(), "sign-in with identity providers");
            providers
        },
        push,
        inbox: settings.inbox.limits(),
        notice_hook: push_hook,
        calendar: Arc::new(settings.seasons.clone()),
        analyst: crate::analysis::Analyst::new(&settings.analysis),
    };
    // A bad or duplicate kid fails here, before any socket is bound.
    config
        .verifier()
        .map_err(|e| AccountsError::bad_setting(format!("auth.trusted_keys: {e}")))?;
    Ok(config)
}

/// A service ready to serve: its store connected (and migrated) and its
/// signing key loaded, as the settings say.
#[derive(Debug)]
pub struct App {
    service: AppService,
    settings: Settings,
    /// Ends the social store's subscription (when the served app's shutdown comes).
    social_shutdown: CancellationToken,
}

#[derive(Debug)]
enum AppService {
    Memory(AccountsApi<MemoryStore>),
    Postgres(AccountsApi<PgStore>),
}

impl App {
    /// Connects the store and loads the key. Fails (before any socket is
    /// bound) when the database is unreachable or the key unusable.
    pub async fn build(settings: Settings) -> Result<App> {
        let config = service_config(&settings, signing_key(&settings)?)?;
        let social_shutdown = CancellationToken::new();
        let social = social::SocialStore::connect(&settings.redis, social_shutdown.clone()).await?;
        let revocations = basra_platform::revocation::Revocations::connect(
            &settings.redis.url,
            &settings.redis.shared_prefix,
            social_shutdown.clone(),
        )
        .await
        .map_err(|e| AccountsError::bad_setting(format!("redis (revoked accounts): {e}")))?;
        let social = service::Social::new(social, social_shutdown.clone())
            .with_revocations(revocations)
            .with_max_feeds(settings.friends.max_feeds_per_account);
        let service = match settings.database.kind() {
            DatabaseKind::Memory => {
                tracing::warn!("database.url is \"memory\": accounts live in this process only");
                AppService::Memory(AccountsApi::with_social(MemoryStore::new(), social, config))
            }
            DatabaseKind::Postgres => {
                let store = PgStore::connect(
                    settings.database.url.expose_secret(),
                    settings.database.max_connections,
                )
                .await?;
                if settings.database.migrate {
                    store.migrate().await?;
                    tracing::info!("database migrations applied");
                }
                AppService::Postgres(AccountsApi::with_social(store, social, config))
            }
        };
        Ok(App {
            service,
            settings,
            social_shutdown,
        })
    }

    /// The settings it was built from.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// The token issuer: its key signs every access token.
    pub fn issuer(&self) -> &TokenIssuer {
        match &self.service {
            AppService::Memory(s) => s.issuer(),
            AppService::Postgres(s) => s.issuer(),
        }
    }

    /// The verifier of the calls it accepts: its own key for every role, plus
    /// `auth.trusted_keys`.
    pub fn verifier(&self) -> TokenVerifier {
        match &self.service {
            AppService::Memory(s) => s.verifier(),
            AppService::Postgres(s) => s.verifier(),
        }
    }

    /// The banned and deleted accounts it refuses (shared through `[redis]`).
    pub fn revocations(&self) -> basra_platform::revocation::Revocations {
        match &self.service {
            AppService::Memory(s) => s.revocations(),
            AppService::Postgres(s) => s.revocations(),
        }
    }

    /// Everything but the gRPC listener: serves the metrics on `metrics.listen` when it
    /// is set, starts the background work (until `shutdown`) and adds the `AccountsService`
    /// service to `routes`. [`run`](Self::run) serves the result alone; `basra dev`
    /// mounts the three services on one server.
    pub async fn mount(self, routes: Routes, shutdown: CancellationToken) -> Result<Routes> {
        let social_shutdown = self.social_shutdown.clone();
        let stop = shutdown.clone();
        tokio::spawn(async move {
            stop.cancelled().await;
            social_shutdown.cancel();
        });
        let registry = match &self.service {
            AppService::Memory(s) => s.metrics().registry(),
            AppService::Postgres(s) => s.metrics().registry(),
        };
        let metrics = &self.settings.metrics;
        basra_platform::metrics::spawn(metrics, registry, shutdown.clone())
            .await
            .map_err(|e| {
                AccountsError::bad_setting(format!("metrics.listen {}: {e}", metrics.listen))
            })?;
        Ok(match self.service {
            AppService::Memory(s) => mount_service(s, routes, shutdown),
            AppService::Postgres(s) => mount_service(s, routes, shutdown),
        })
    }

    /// Serves on `listener` until `shutdown` is cancelled, with the `[server]` settings
    /// (drain, connection limits), and the metrics on `metrics.listen` when it is set.
    pub async fn run(self, listener: TcpListener, shutdown: CancellationToken) -> Result<()> {
        let server = self.settings.server.clone();
        let auth =
            AuthLayer::new(self.verifier(), PUBLIC_METHODS).with_revocations(self.revocations());
        let routes = self.mount(Routes::default(), shutdown.clone()).await?;
        serve_routes(listener, routes, auth, shutdown, &server).await
    }
}

/// Keeps the pool gauges current (every 5 s) until `shutdown`.
async fn watch_pool<S: Store>(
    store: S,
    metrics: Arc<AccountsMetrics>,
    shutdown: CancellationToken,
) {
    let mut tick = tokio::time::interval(Duration::from_secs(5));
    loop {
        if let Some(stats) = store.pool_stats() {
            metrics.set_pool(stats.size, stats.idle, stats.max);
        }
        tokio::select! {
            () = shutdown.cancelled() => return,
            _ = tick.tick() => {}
        }
    }
}

/// Drops the expired inbox notices every [`crate::inbox::SWEEP_EVERY`] until `shutdown`
/// (listing never shows them; this frees their rows).
async fn sweep_notices<S: Store>(store: S, shutdown: CancellationToken) {
    let mut tick = tokio::time::interval(crate::inbox::SWEEP_EVERY);
    loop {
        tokio::select! {
            () = shutdown.cancelled() => return,
            _ = tick.tick() => {}
        }
        match store.drop_expired_notices(crate::domain::now()).await {
            Ok(0) => {}
            Ok(dropped) => tracing::debug!(dropped, "expired notices dropped"),
            Err(err) => tracing::warn!(error = %err, "cannot drop expired notices; next time"),
        }
    }
}

/// Applies the pending database migrations and returns: `accounts migrate`, the
/// deployment's migration Job. Needs only `database.url` (no signing key).
pub async fn migrate(settings: &Settings) -> Result<()> {
    if settings.database.kind() != DatabaseKind::Postgres {
        return Err(AccountsError::bad_setting(
            "database.url is \"memory\": nothing to migrate",
        ));
    }
    let store = PgStore::connect(settings.database.url.expose_secret(), 1).await?;
    store.migrate().await?;
    tracing::info!("database migrations applied");
    Ok(())
}
