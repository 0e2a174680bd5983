//! A replica's assembly: [`GameSession`] (the replica's state and its background tasks, and the
//! routes of its services), [`App`] (a replica as its settings describe it: store, keys,
//! the link to accounts) and [`serve`] (tests and tools that bring their own store).

use std::sync::Arc;
use std::time::Duration;

use basra_platform::ServeOptions;
use basra_platform::auth::ServiceCredentials;
use basra_platform::auth::{AuthLayer, TokenVerifier};
use basra_platform::config::ConfigError;
use basra_proto::basra::game::v1::game_admin_service_server::GameAdminServiceServer;
use basra_proto::basra::game::v1::game_internal_service_server::GameInternalServiceServer;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::replica::{Replica, ServiceConfig};
use crate::{
    AccountsLink, DRAINED_SERVICES, GameError, MAX_MESSAGE_BYTES, MemoryStore, RedisStore,
    RoomStore, SERVICE_NAMES, Settings, api, pod_cost,
};

/// A replica: its state and background tasks, ready to be served (alone by [`serve`], or
/// mounted with other services in one process by the dev mode).
#[derive(Debug)]
pub struct GameSession {
    replica: Arc<Replica>,
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
        let replica = Arc::new(Replica::new(
            Arc::clone(&store),
            config,
            accounts.clone(),
            shutdown.clone(),
        ));
        replica
            .metrics
            .max_streams
            .set(i64::try_from(replica.config.max_streams).unwrap_or(i64::MAX));
        tokio::spawn({
            // Stopping drains (DrainReplica sets the gauge itself).
            let metrics = Arc::clone(&replica.metrics);
            let shutdown = shutdown.clone();
            async move {
                shutdown.cancelled().await;
                metrics.draining.set(1);
            }
        });
        tokio::spawn({
            // The rooms this replica serves, for the dashboards' "matches running".
            let (metrics, hub) = (Arc::clone(&replica.metrics), Arc::clone(&replica.hub));
            let shutdown = shutdown.clone();
            async move {
                let mut tick = tokio::time::interval(Duration::from_secs(1));
                loop {
                    tokio::select! {
                        _ = tick.tick() => {
                            metrics
                                .rooms_watched
                                .set(i64::try_from(hub.rooms()).unwrap_or(i64::MAX));
                        }
                        () = shutdown.cancelled() => return,
                    }
                }
            }
        });
        tokio::spawn(crate::replica::signals::run(
            Arc::clone(&replica),
            shutdown.clone(),
        ));
        tokio::spawn(Arc::clone(&replica.hub).run(store.notices(), shutdown.clone()));
        tokio::spawn(Arc::clone(&replica.hub).run_resync(
            Arc::clone(&store),
            replica.config.resync,
            shutdown.clone(),
        ));
        tokio::spawn(crate::replica::walks::run(
            Arc::clone(&replica.walks),
            Arc::clone(&store),
            shutdown.clone(),
        ));
        tokio::spawn(crate::replica::timers::run(
            Arc::clone(&replica),
            shutdown.clone(),
        ));
        if let Some(link) = accounts {
            tokio::spawn(crate::replica::outbox::run(
                store,
                Arc::clone(&replica.walks),
                link,
                replica.config.replica.clone(),
                Arc::clone(&replica.metrics),
                shutdown,
            ));
        }
        GameSession { replica }
    }

    /// The replica's shared state (tests and the dev mode look inside).
    pub fn replica(&self) -> &Arc<Replica> {
        &self.replica
    }

    /// What health reports for the services that a drain closes (`GameService`,
    /// `GameInternalService`): NOT_SERVING while the replica drains.
    pub fn readiness(&self) -> basra_platform::Readiness {
        basra_platform::Readiness {
            services: DRAINED_SERVICES.to_vec(),
            ready: self.replica.drain.readiness(),
        }
    }

    /// The gRPC routes: `GameService`, `GameInternalService` and `GameAdminService`.
    pub fn routes(&self) -> tonic::service::Routes {
        self.add_to(tonic::service::Routes::default())
    }

    /// Adds the `GameService`, `GameInternalService` and `GameAdminService` services to `routes` (the one-process dev mode
    /// serves them beside the other services).
    pub fn add_to(&self, routes: tonic::service::Routes) -> tonic::service::Routes {
        let api = api::GameApi::new(Arc::clone(&self.replica));
        let internal = GameInternalServiceServer::new(api.clone())
            .max_decoding_message_size(crate::MAX_INTERNAL_MESSAGE_BYTES);
        let game = api::play_route::GameRoutes::new(api);
        let admin =
            GameAdminServiceServer::new(api::admin::AdminService::new(Arc::clone(&self.replica)))
                .max_decoding_message_size(MAX_MESSAGE_BYTES);
        routes
            .add_service(game)
            .add_service(internal)
            .add_service(admin)
    }
}

/// A replica as its settings describe it: its store connected, its keys loaded, its link
/// to accounts made; nothing started yet.
pub struct App {
    settings: Settings,
    store: Arc<dyn RoomStore>,
    verifier: TokenVerifier,
    accounts: Option<AccountsLink>,
    pod_cost: Option<pod_cost::PodPatcher>,
    /// The banned and deleted accounts, shared through `[redis]` with accounts.
    revocations: basra_platform::revocation::Revocations,
    /// Stops the store's subscription when the app is dropped unstarted, or when the
    /// background work it was mounted with stops.
    store_guard: tokio_util::sync::DropGuard,
}

impl std::fmt::Debug for App {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("App")
            .field("replica", &self.settings.game.replica)
            .finish_non_exhaustive()
    }
}

impl App {
    /// Connects the store (Redis, or memory when `redis.url = "memory"`), reads the
    /// trusted keys and the identity. Fails, before any socket is bound, when Redis is
    /// unreachable or a key unusable.
    pub async fn build(settings: Settings) -> Result<App, GameError> {
        let invalid =
            |err: basra_platform::auth::AuthError| bad_setting(format!("auth.trusted_keys: {err}"));
        let verifier = settings.auth.verifier().map_err(invalid)?;
        let accounts = accounts_link(&settings)?;
        let pod_cost = if settings.kubernetes.pod_deletion_cost {
            let pod = match settings.kubernetes.pod_name.as_str() {
                "" => settings.game.replica.as_str(),
                name => name,
            };
            if pod.is_empty() {
                return Err(bad_setting(
                    "kubernetes.pod_deletion_cost needs kubernetes.pod_name or game.replica",
                ));
            }
            Some(pod_cost::PodPatcher::new(&settings.kubernetes, pod).map_err(bad_setting)?)
        } else {
            None
        };
        let store_stop = CancellationToken::new();
        let store: Arc<dyn RoomStore> = if settings.redis.is_memory() {
            tracing::warn!("redis.url is \"memory\": rooms live in this process only");
            Arc::new(MemoryStore::new())
        } else {
            Arc::new(
                RedisStore::connect(
                    &settings.redis.url,
                    &settings.redis.prefix,
                    settings.game.closed_room_ttl_seconds,
                    store_stop.clone(),
                )
                .await?
                .with_replica_wait(settings.redis.wait_replicas, settings.redis.wait_timeout_ms)
                .with_room_format(settings.game.room_state_format),
            )
        };
        let revocations = basra_platform::revocation::Revocations::connect(
            &settings.redis.url,
            &settings.redis.shared_prefix,
            store_stop.clone(),
        )
        .await
        .map_err(|err| GameError::Internal(format!("redis (revoked accounts): {err}")))?;
        Ok(App {
            settings,
            store,
            verifier,
            accounts,
            pod_cost,
            revocations,
            store_guard: store_stop.drop_guard(),
        })
    }

    /// The settings it was built from.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// The banned and deleted accounts it refuses (shared through `[redis]`).
    pub fn revocations(&self) -> &basra_platform::revocation::Revocations {
        &self.revocations
    }

    /// The verifier of the calls it accepts (`auth.trusted_keys`).
    pub fn verifier(&self) -> &TokenVerifier {
        &self.verifier
    }

    /// Everything but the gRPC listener: starts the replica's background work (fan-out,
    /// timers, the outbox forwarder, the metrics on `metrics.listen` when set), which
    /// stops when `shutdown` is cancelled, and adds `GameService` and `GameAdminService` to `routes`;
    /// with them, what their health follows ([`GameSession::readiness`]).
    /// [`run`](Self::run) serves the result alone; `basra dev` mounts the three services
    /// on one server.
    pub async fn mount(
        self,
        routes: tonic::service::Routes,
        shutdown: CancellationToken,
    ) -> Result<(tonic::service::Routes, basra_platform::Readiness), GameError> {
        let App {
            settings,
            store,
            accounts,
            pod_cost,
            store_guard,
            revocations,
            ..
        } = self;
        tokio::spawn({
            let shutdown = shutdown.clone();
            async move {
                shutdown.cancelled().await;
                drop(store_guard);
            }
        });
        let config = crate::ServiceConfig {
            revocations,
            ..settings.service_config()
        };
        let session = GameSession::start(store, config, accounts, shutdown.clone());
        if let Some(patcher) = pod_cost {
            tokio::spawn(pod_cost::run(
                patcher,
                Arc::clone(&session.replica().metrics),
                Duration::from_millis(settings.kubernetes.min_interval_ms),
                shutdown.clone(),
            ));
        }
        basra_platform::metrics::spawn(
            &settings.metrics,
            session.replica().metrics.registry(),
            shutdown,
        )
        .await
        .map_err(|err| bad_setting(format!("metrics.listen {}: {err}", settings.metrics.listen)))?;
        Ok((session.add_to(routes), session.readiness()))
    }

    /// Serves on `listener` until `shutdown` is cancelled, with the `[server]` settings
    /// (drain, connection limits). The background work (the outbox among it) goes on
    /// through the drain and stops when the server has.
    pub async fn run(
        self,
        listener: TcpListener,
        shutdown: CancellationToken,
    ) -> Result<(), GameError> {
        let mut serving = ServeOptions::from(&self.settings.server);
        let auth =
            AuthLayer::new(self.verifier.clone(), &[]).with_revocations(self.revocations.clone());
        let background = CancellationToken::new();
        let result = match self
            .mount(tonic::service::Routes::default(), background.clone())
            .await
        {
            Ok((routes, readiness)) => {
                serving.readiness.push(readiness);
                serve_routes(listener, routes, auth, shutdown, serving).await
            }
            Err(err) => Err(err),
        };
        background.cancel();
        result
    }
}

/// The link to accounts the settings describe: none when `accounts.url` is empty;
/// credentials from `[identity]` (preferred) or the static `accounts.service_token`.
fn accounts_link(settings: &Settings) -> Result<Option<AccountsLink>, GameError> {
    if settings.accounts.url.is_empty() {
        return Ok(None);
    }
    let identity = settings
        .identity
        .load(&settings.auth.issuer, &settings.auth.audience)
        .map_err(|err| bad_setting(format!("identity: {err}")))?
        .map(Arc::new);
    let credentials = ServiceCredentials::choose(
        identity.as_ref(),
        &settings.accounts.service_token,
        "accounts.service_token",
        "accounts",
    )?;
    let mut link = AccountsLink::new(&settings.accounts.url, credentials).map_err(bad_setting)?;
    link.retry_min = Duration::from_millis(settings.accounts.retry_min_ms);
    link.retry_max = Duration::from_millis(settings.accounts.retry_max_ms);
    Ok(Some(link))
}

/// Serves a started replica's routes (with auth, health and reflection) on `listener`
/// until `shutdown`; `serving` says how it drains and limits connections. The replica's
/// background tasks run until the `shutdown` given to [`GameSession::start`]. Tests and
/// tools that bring their own store or keys serve this way; the binary goes through
/// [`App`].
pub async fn serve(
    listener: TcpListener,
    session: &GameSession,
    verifier: TokenVerifier,
    shutdown: CancellationToken,
    serving: impl Into<ServeOptions>,
) -> Result<(), GameError> {
    let auth = AuthLayer::new(verifier, &[])
        .with_revocations(session.replica().config.revocations.clone());
    let mut serving = serving.into();
    serving.readiness.push(session.readiness());
    serve_routes(listener, session.routes(), auth, shutdown, serving).await
}

async fn serve_routes(
    listener: TcpListener,
    routes: tonic::service::Routes,
    auth: AuthLayer,
    shutdown: CancellationToken,
    serving: impl Into<ServeOptions>,
) -> Result<(), GameError> {
    basra_platform::serve(listener, routes, SERVICE_NAMES, auth, shutdown, serving)
        .await
        .map_err(|err| GameError::Internal(format!("grpc server: {err}")))
}

/// A setting the replica cannot use (the message names the key).
fn bad_setting(message: impl Into<String>) -> GameError {
    ConfigError::invalid(message).into()
}
