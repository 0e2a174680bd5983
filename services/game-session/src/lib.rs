//! The Basra online game-session service: authoritative play over a bidirectional gRPC
//! stream per player, with every room's state in Redis so that any replica serves any
//! player of any room.
//!
//! - [`room`]: a room (seats, the engine's full [`Game`](basra_engine::Game), timers) and
//!   its pure state changes; [`events`]: the stored event log.
//! - [`store`]: the [`RoomStore`](store::RoomStore) trait, [`RedisStore`](store::RedisStore)
//!   (one atomic Lua compare-and-set per change) and [`MemoryStore`](store::MemoryStore).
//! - [`core`]: load → apply → compare-and-set → retry ([`Core::mutate`]), timers, admission,
//!   the presence lease that lets other replicas disconnect a dead replica's players.
//! - [`hub`]: per-replica fan-out of the store's notices to the local streams, and the
//!   resync under lost notices.
//! - [`service`]: `Game` (Play, CreateRoom, SeatPlayer); [`admin`]: `GameAdmin`.
//! - [`convert`]: the only way anything reaches a client: the engine's per-seat view and
//!   `Event::for_viewer`.
//! - [`metrics`]: the replica's Prometheus metrics.
//! - [`outbox`]: finished matches to `Accounts.RecordMatch`, retried until they land.
//!
//! ```no_run
//! # async fn demo() -> Result<(), game_session::GameError> {
//! let settings = game_session::Settings::load().expect("valid settings");
//! let listener = tokio::net::TcpListener::bind(settings.server.listen).await.expect("bind");
//! game_session::run_with_settings(listener, &settings, tokio_util::sync::CancellationToken::new()).await
//! # }
//! ```

pub mod admin;
pub mod convert;
pub mod core;
pub mod error;
pub mod events;
pub mod hub;
pub mod metrics;
pub mod names;
pub mod outbox;
pub mod record;
pub mod room;
pub mod service;
pub mod settings;
pub mod store;
pub mod walks;

use std::sync::Arc;
use std::sync::atomic::AtomicI64;
use std::time::Duration;

use basra_platform::ServeOptions;
use basra_platform::auth::{AuthLayer, Role, TokenVerifier, TrustedKey, load_trusted};
use basra_proto::basra::game::v1::{game_admin_server::GameAdminServer, game_server::GameServer};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

pub use crate::core::{Core, ServiceConfig};
pub use error::GameError;
pub use outbox::{AccountsLink, Credentials};
pub use settings::Settings;
pub use store::{MemoryStore, RedisStore, RoomStore};

/// The gRPC service names this server answers (health and reflection list them).
pub const SERVICE_NAMES: &[&str] = &["basra.game.v1.Game", "basra.game.v1.GameAdmin"];

/// The largest client message accepted (a Play message is a few dozen bytes).
pub const MAX_MESSAGE_BYTES: usize = 16 * 1024;

/// A replica: its core and background tasks, ready to be served (alone by [`run`], or
/// mounted with other services in one process by the dev mode).
#[derive(Debug)]
pub struct GameSession {
    core: Arc<Core>,
}

impl GameSession {
    /// Builds the replica and starts its background tasks (fan-out, timers, the outbox
    /// forwarder when `accounts` is given); they stop when `shutdown` is cancelled.
    pub fn start(
        store: Arc<dyn RoomStore>,
        config: ServiceConfig,
        accounts: Option<AccountsLink>,
        shutdown: CancellationToken,
    ) -> GameSession {
        let walks = Arc::new(config.walks());
        let core = Arc::new(Core {
            store: Arc::clone(&store),
            hub: Arc::default(),
            stream_slots: Arc::new(tokio::sync::Semaphore::new(config.max_streams)),
            config,
            shutdown: shutdown.clone(),
            drain: CancellationToken::new(),
            drain_deadline_ms: AtomicI64::new(0),
            lease: Default::default(),
            walks,
            accounts: accounts.clone(),
            metrics: Arc::default(),
        });
        core.metrics
            .max_streams
            .set(i64::try_from(core.config.max_streams).unwrap_or(i64::MAX));
        tokio::spawn({
            // Draining: by DrainReplica, or because the replica stops.
            let (metrics, drain) = (Arc::clone(&core.metrics), core.drain.clone());
            let shutdown = shutdown.clone();
            async move {
                tokio::select! {
                    () = drain.cancelled() => {}
                    () = shutdown.cancelled() => {}
                }
                metrics.draining.set(1);
            }
        });
        tokio::spawn(Arc::clone(&core.hub).run(store.notices(), shutdown.clone()));
        tokio::spawn(Arc::clone(&core.hub).run_resync(
            Arc::clone(&store),
            core.config.resync,
            shutdown.clone(),
        ));
        tokio::spawn(Arc::clone(&core).run_walks(shutdown.clone()));
        tokio::spawn(Arc::clone(&core).run_timers(shutdown.clone()));
        if let Some(link) = accounts {
            tokio::spawn(outbox::run(
                store,
                Arc::clone(&core.walks),
                link,
                core.config.replica.clone(),
                Arc::clone(&core.metrics),
                shutdown,
            ));
        }
        GameSession { core }
    }

    /// The replica's core (tests and the dev mode look inside).
    pub fn core(&self) -> &Arc<Core> {
        &self.core
    }

    /// The gRPC routes: `Game` and `GameAdmin`.
    pub fn routes(&self) -> tonic::service::Routes {
        self.add_to(tonic::service::Routes::default())
    }

    /// Adds the `Game` and `GameAdmin` services to `routes` (the one-process dev mode
    /// serves them beside the other services).
    pub fn add_to(&self, routes: tonic::service::Routes) -> tonic::service::Routes {
        let game = GameServer::new(service::GameService::new(Arc::clone(&self.core)))
            .max_decoding_message_size(MAX_MESSAGE_BYTES);
        let admin = GameAdminServer::new(admin::AdminService::new(Arc::clone(&self.core)))
            .max_decoding_message_size(MAX_MESSAGE_BYTES);
        routes.add_service(game).add_service(admin)
    }
}

/// Serves a replica on `listener` until `shutdown` is cancelled. Tokens are checked with
/// `verifier`; `serving` says how it drains and limits connections.
pub async fn run(
    listener: TcpListener,
    store: Arc<dyn RoomStore>,
    verifier: TokenVerifier,
    config: ServiceConfig,
    accounts: Option<AccountsLink>,
    serving: impl Into<ServeOptions>,
    shutdown: CancellationToken,
) -> Result<(), GameError> {
    let background = shutdown.child_token();
    let session = GameSession::start(store, config, accounts, background.clone());
    let result = serve_session(&session, listener, verifier, serving, shutdown).await;
    background.cancel();
    result
}

/// [`run`] from loaded [`Settings`]: connects to Redis, reads the verification key and
/// the accounts link.
pub async fn run_with_settings(
    listener: TcpListener,
    settings: &Settings,
    shutdown: CancellationToken,
) -> Result<(), GameError> {
    let verifier = verifier(settings)?;
    let store = RedisStore::connect(
        &settings.redis.url,
        &settings.redis.prefix,
        settings.game.closed_room_ttl_seconds,
        shutdown.clone(),
    )
    .await?
    .with_replica_wait(settings.redis.wait_replicas, settings.redis.wait_timeout_ms);
    let config = settings.game.service_config();
    let accounts = if settings.accounts.url.is_empty() {
        None
    } else {
        let identity = settings
            .identity
            .load(&settings.auth.issuer, &settings.auth.audience)
            .map_err(|err| GameError::Invalid(err.to_string()))?;
        let credentials = match identity {
            Some(identity) => Credentials::Identity(Arc::new(identity)),
            None if !settings.accounts.service_token.is_empty() => {
                Credentials::Static(settings.accounts.service_token.clone())
            }
            None => {
                return Err(GameError::Invalid(
                    "no credentials for accounts: set identity.signing_key_file (preferred) \
                     or accounts.service_token"
                        .into(),
                ));
            }
        };
        let mut link =
            AccountsLink::new(&settings.accounts.url, credentials).map_err(GameError::Invalid)?;
        link.retry_min = Duration::from_millis(settings.accounts.retry_min_ms);
        link.retry_max = Duration::from_millis(settings.accounts.retry_max_ms);
        Some(link)
    };
    let background = shutdown.child_token();
    let session = GameSession::start(Arc::new(store), config, accounts, background.clone());
    basra_platform::metrics::spawn(
        &settings.metrics,
        session.core().metrics.registry(),
        background.clone(),
    )
    .await
    .map_err(|err| {
        GameError::Invalid(format!("metrics.listen {}: {err}", settings.metrics.listen))
    })?;
    let result = serve_session(&session, listener, verifier, &settings.server, shutdown).await;
    background.cancel();
    result
}

/// The token verifier the settings describe: `auth.trusted_keys`, each for its role,
/// plus the older `auth.public_key_file` for every role when set.
fn verifier(settings: &Settings) -> Result<TokenVerifier, GameError> {
    let invalid = |err: basra_platform::auth::AuthError| GameError::Invalid(err.to_string());
    let mut keys = load_trusted(&settings.auth.trusted_keys).map_err(invalid)?;
    if !settings.auth.public_key_file.is_empty() {
        let pem = std::fs::read_to_string(&settings.auth.public_key_file).map_err(|err| {
            GameError::Invalid(format!(
                "auth.public_key_file {:?}: {err}",
                settings.auth.public_key_file
            ))
        })?;
        keys.push(TrustedKey {
            kid: settings.auth.key_id.clone(),
            public_pem: pem,
            roles: vec![Role::Player, Role::Service, Role::Operator],
        });
    }
    TokenVerifier::trusting(keys, &settings.auth.issuer, &settings.auth.audience).map_err(invalid)
}

/// Serves a started replica's routes (with auth, health and reflection) on `listener`
/// until `shutdown`; `serving` says how it drains and limits connections. The replica's background
/// tasks run until the `shutdown` given to [`GameSession::start`].
pub async fn serve_session(
    session: &GameSession,
    listener: TcpListener,
    verifier: TokenVerifier,
    serving: impl Into<ServeOptions>,
    shutdown: CancellationToken,
) -> Result<(), GameError> {
    let auth = AuthLayer::new(verifier, &[]);
    basra_platform::serve(
        listener,
        session.routes(),
        SERVICE_NAMES,
        auth,
        shutdown,
        serving,
    )
    .await
    .map_err(|err| GameError::Internal(format!("grpc server: {err}")))
}
