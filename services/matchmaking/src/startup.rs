//! The service's assembly: from [`Settings`] to a running matchmaker. [`App::build`]
//! connects the store (Redis, or memory), reads the keys and credentials and sets up the
//! upstreams, failing before any socket is bound; [`App::mount`] adds the service beside
//! others (as `basra dev` does); [`App::run`] serves it alone. [`start`] and [`serve`] are
//! the ways in for tests that bring their own store or upstreams.

use std::sync::Arc;

use basra_platform::auth::ServiceCredentials;
use basra_platform::{AuthLayer, TokenVerifier};
use basra_proto::basra::matchmaking::v1::matchmaking_service_server::MatchmakingServiceServer;
use tokio::{net::TcpListener, task::JoinHandle};
use tokio_util::sync::CancellationToken;
use tonic::service::Routes;

use crate::{
    Config, Deps, MAX_MESSAGE_BYTES, MatchmakingApi, MatchmakingError, Result, SERVICE_NAME,
    clock::SystemClock,
    domain::Format,
    matcher,
    metrics::Metrics,
    settings::Settings,
    state::{Hub, Shared},
    store::{MemoryStore, RedisStore, Store},
    upstream::{GrpcGame, GrpcPlayers},
};

/// Builds the service and starts this replica's background work (pairing
/// loop, event dispatch), which stops when `shutdown` is cancelled. The
/// embedded dev mode adds the service to its own server; [`serve`] serves it
/// alone.
pub fn start(
    config: Config,
    deps: Deps,
    shutdown: CancellationToken,
) -> (MatchmakingApi, JoinHandle<()>) {
    deps.metrics
        .offer_formats(Format::offered(&config.queue.target_scores).map(|f| f.key()));
    let inner = Arc::new(Shared {
        searches: basra_platform::stream_limit::StreamsPerAccount::new(
            "FindMatch",
            config.queue.max_streams_per_account,
        ),
        config,
        deps,
        hub: Hub::default(),
        shutdown,
    });
    let background = tokio::spawn({
        let inner = inner.clone();
        async move {
            let dispatch = tokio::spawn(dispatch(inner.clone()));
            matcher::run(inner).await;
            dispatch.abort();
        }
    });
    (MatchmakingApi { inner }, background)
}

/// Wakes local streams when the store says their ticket changed.
async fn dispatch(inner: Arc<Shared>) {
    let mut events = inner.deps.store.subscribe();
    loop {
        match events.recv().await {
            Ok(id) => inner.hub.poke(&id),
            // Missed some: every stream polls on its own heartbeat anyway.
            Err(tokio::sync::broadcast::error::RecvError::Lagged(n)) => {
                tracing::debug!(missed = n, "ticket events lagged");
            }
            Err(tokio::sync::broadcast::error::RecvError::Closed) => break,
        }
    }
}

/// Serves matchmaking on `listener` until `shutdown` is cancelled, then
/// drains (open FindMatch streams end with UNAVAILABLE and keep their
/// tickets for a resume on another replica). Tests and tools that bring their own
/// store or upstreams serve this way; the binary goes through [`App`].
pub async fn serve(
    listener: TcpListener,
    config: Config,
    verifier: TokenVerifier,
    deps: Deps,
    shutdown: CancellationToken,
) -> Result<()> {
    let serving = config.serving.clone();
    let auth = AuthLayer::new(verifier, &[]).with_revocations(config.revocations.clone());
    let (routes, background) = mount_service(config, deps, Routes::default(), shutdown.clone());
    basra_platform::serve(listener, routes, &SERVICE_NAMES, auth, shutdown, serving).await?;
    let _ = background.await;
    Ok(())
}

fn mount_service(
    config: Config,
    deps: Deps,
    routes: Routes,
    shutdown: CancellationToken,
) -> (Routes, JoinHandle<()>) {
    let events = config.events.clone();
    let event_deps = deps.events.clone();
    let (service, background) = start(config, deps.clone(), shutdown.clone());
    let routes = routes.add_service(
        MatchmakingServiceServer::new(service).max_decoding_message_size(MAX_MESSAGE_BYTES),
    );
    let (routes, clock) = crate::events::mount(routes, events, event_deps, &deps, shutdown);
    let background = tokio::spawn(async move {
        let _ = background.await;
        let _ = clock.await;
    });
    (routes, background)
}

/// A matchmaker as its settings describe it: its store connected, its keys loaded,
/// its upstreams (game-session, accounts) set up; nothing started yet.
pub struct App {
    settings: Settings,
    verifier: TokenVerifier,
    deps: Deps,
    /// The banned and deleted accounts, shared through `[redis]` with accounts.
    revocations: basra_platform::revocation::Revocations,
}

impl std::fmt::Debug for App {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("App").finish_non_exhaustive()
    }
}

impl App {
    /// Connects the store (Redis, or memory when `redis.url = "memory"`), reads the
    /// trusted keys and the identity and sets up the upstreams. Fails, before any socket
    /// is bound, when Redis is unreachable, a key unusable or credentials missing.
    pub async fn build(settings: Settings) -> Result<App> {
        let verifier = settings
            .auth
            .verifier()
            .map_err(|err| MatchmakingError::bad_setting(format!("auth.trusted_keys: {err}")))?;
        let identity = settings
            .identity
            .load(&settings.auth.issuer, &settings.auth.audience)
            .map_err(|err| MatchmakingError::bad_setting(format!("identity: {err}")))?
            .map(Arc::new);
        let game_credentials = ServiceCredentials::choose(
            identity.as_ref(),
            &settings.game.service_token,
            "game.service_token",
            "game-session",
        )?;
        let accounts_credentials = ServiceCredentials::choose(
            identity.as_ref(),
            &settings.accounts.service_token,
            "accounts.service_token",
            "accounts",
        )?;
        let store: Arc<dyn Store> = if settings.redis.is_memory() {
            tracing::warn!("redis.url is \"memory\": the queue lives in this process only");
            Arc::new(MemoryStore::new())
        } else {
            Arc::new(RedisStore::connect(&settings.redis.url, &settings.redis.prefix).await?)
        };
        let game = GrpcGame::new(
            &settings.game.url,
            game_credentials,
            settings.game.timeout(),
        )?;
        let players = GrpcPlayers::new(
            &settings.accounts.url,
            accounts_credentials,
            settings.accounts.timeout(),
        )?;
        let deps = Deps {
            store,
            game: Arc::new(game),
            ratings: Arc::new(players.clone()),
            names: Arc::new(players.clone()),
            invites: Arc::new(players.clone()),
            presence: players.presence_reporter(CancellationToken::new()),
            clock: Arc::new(SystemClock),
            metrics: Arc::new(Metrics::new()),
            events: event_deps(&settings, &players).await?,
        };
        let revocations = basra_platform::revocation::Revocations::connect(
            &settings.redis.url,
            &settings.redis.shared_prefix,
            CancellationToken::new(),
        )
        .await
        .map_err(|err| MatchmakingError::bad_setting(format!("redis (revoked accounts): {err}")))?;
        Ok(App {
            settings,
            verifier,
            deps,
            revocations,
        })
    }

    /// The settings it was built from.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// The verifier of the calls it accepts (`auth.trusted_keys`).
    pub fn verifier(&self) -> &TokenVerifier {
        &self.verifier
    }

    /// Everything but the gRPC listener: serves the metrics on `metrics.listen` when it
    /// is set, starts the pairing loop (until `shutdown`) and adds `MatchmakingService` to
    /// `routes`. [`run`](Self::run) serves the result alone; `basra dev` mounts the
    /// three services on one server.
    pub async fn mount(self, routes: Routes, shutdown: CancellationToken) -> Result<Routes> {
        Ok(self.mount_with_handle(routes, shutdown).await?.0)
    }

    async fn mount_with_handle(
        self,
        routes: Routes,
        shutdown: CancellationToken,
    ) -> Result<(Routes, JoinHandle<()>)> {
        let metrics = &self.settings.metrics;
        basra_platform::metrics::spawn(metrics, self.deps.metrics.registry(), shutdown.clone())
            .await
            .map_err(|err| {
                MatchmakingError::bad_setting(format!("metrics.listen {}: {err}", metrics.listen))
            })?;
        let config = Config {
            queue: self.settings.queue.clone(),
            rooms: self.settings.rooms.clone(),
            serving: (&self.settings.server).into(),
            revocations: self.revocations.clone(),
            events: self.settings.events.clone(),
        };
        Ok(mount_service(config, self.deps, routes, shutdown))
    }

    /// Serves on `listener` until `shutdown` is cancelled, with the `[server]` settings
    /// (drain, connection limits), and the metrics on `metrics.listen` when it is set.
    pub async fn run(self, listener: TcpListener, shutdown: CancellationToken) -> Result<()> {
        let server = self.settings.server.clone();
        let auth =
            AuthLayer::new(self.verifier.clone(), &[]).with_revocations(self.revocations.clone());
        let (routes, background) = self
            .mount_with_handle(Routes::default(), shutdown.clone())
            .await?;
        basra_platform::serve(listener, routes, &SERVICE_NAMES, auth, shutdown, &server).await?;
        let _ = background.await;
        Ok(())
    }
}

/// Every gRPC service a matchmaking replica serves, for health and reflection.
pub const SERVICE_NAMES: [&str; 3] = [
    SERVICE_NAME,
    crate::events::SERVICE_NAMES[0],
    crate::events::SERVICE_NAMES[1],
];

/// The event stores the settings name: PostgreSQL (`[events] database_url`, migrated
/// when `migrate`) or memory, and the live state in `[redis]` (or memory).
async fn event_deps(
    settings: &Settings,
    players: &GrpcPlayers,
) -> Result<crate::events::EventDeps> {
    use secrecy::ExposeSecret as _;
    let mut deps = crate::events::EventDeps::memory();
    // Players are told through accounts' inbox.
    deps.notices = Arc::new(players.clone());
    if !settings.events.is_memory() {
        let store = crate::events::store::PgEventStore::connect_lazy(
            settings.events.database_url.expose_secret(),
            settings.events.max_connections,
        )?;
        if settings.events.migrate {
            store.migrate().await?;
        }
        deps.store = Arc::new(store);
    } else {
        tracing::warn!("events.database_url is \"memory\": events live in this process only");
    }
    if !settings.redis.is_memory() {
        deps.live = Arc::new(
            crate::events::live::RedisLiveStore::connect(
                &settings.redis.url,
                &settings.redis.prefix,
            )
            .await?,
        );
    }
    Ok(deps)
}
