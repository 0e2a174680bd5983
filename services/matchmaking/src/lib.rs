//! The matchmaking service of Basra online: the rated queue, the public
//! lobby and private rooms (`basra.matchmaking.v1.Matchmaking`).
//!
//! | module | what |
//! |---|---|
//! | [`domain`] | formats, the widening rating window, join codes, what ranked rooms may set |
//! | [`store`] | the [`Store`](store::Store) trait; Redis (production) and memory (dev) |
//! | [`service`] | the gRPC handlers and the FindMatch streams |
//! | [`upstream`] | game-session (rooms) and accounts (ratings) behind traits |
//! | [`metrics`] | queue length, wait histogram, matches/s as Prometheus text |
//! | [`settings`] | typed settings with embedded defaults |
//!
//! Every replica serves streams and runs a pairing loop over the shared
//! queue; see [`store`] for why that is safe.

pub mod clock;
pub mod domain;
pub mod error;
mod matcher;
pub mod metrics;
pub mod service;
pub mod settings;
pub mod store;
pub mod upstream;

use std::sync::Arc;

use basra_platform::{AuthLayer, ServeOptions, TokenVerifier, serve::serve};
use basra_proto::basra::matchmaking::v1::matchmaking_server::MatchmakingServer;
use tokio::{net::TcpListener, task::JoinHandle};
use tokio_util::sync::CancellationToken;
use tonic::service::Routes;

pub use error::{MatchmakingError, Result};
pub use service::MatchmakingService;

use crate::{
    clock::Clock,
    metrics::Metrics,
    service::{Hub, Inner},
    settings::{QueueSettings, RoomSettings},
    store::Store,
    upstream::{GameRooms, NameSource, RatingSource},
};

/// The gRPC service name, for health and reflection.
pub const SERVICE_NAME: &str = "basra.matchmaking.v1.Matchmaking";

/// The largest request accepted, in bytes; a larger one is answered RESOURCE_EXHAUSTED.
pub const MAX_MESSAGE_BYTES: usize = 16 * 1024;

/// The behaviour settings of a running matchmaker.
#[derive(Debug, Clone)]
pub struct Config {
    /// The queue.
    pub queue: QueueSettings,
    /// Created rooms.
    pub rooms: RoomSettings,
    /// How the server drains at shutdown and limits its connections.
    pub serving: ServeOptions,
}

/// What the matchmaker talks to.
#[derive(Clone)]
pub struct Deps {
    /// Queue and lobby state.
    pub store: Arc<dyn Store>,
    /// game-session.
    pub game: Arc<dyn GameRooms>,
    /// Ratings.
    pub ratings: Arc<dyn RatingSource>,
    /// Players' display names.
    pub names: Arc<dyn NameSource>,
    /// Time.
    pub clock: Arc<dyn Clock>,
    /// Metrics.
    pub metrics: Arc<Metrics>,
}

/// Builds the service and starts this replica's background work (pairing
/// loop, event dispatch), which stops when `shutdown` is cancelled. The
/// embedded dev mode adds the service to its own server; [`run`] serves it
/// alone.
pub fn start(
    config: Config,
    deps: Deps,
    shutdown: CancellationToken,
) -> (MatchmakingService, JoinHandle<()>) {
    let inner = Arc::new(Inner {
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
    (MatchmakingService { inner }, background)
}

/// Wakes local streams when the store says their ticket changed.
async fn dispatch(inner: Arc<Inner>) {
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
/// tickets for a resume on another replica).
pub async fn run(
    listener: TcpListener,
    config: Config,
    verifier: TokenVerifier,
    deps: Deps,
    shutdown: CancellationToken,
) -> Result<()> {
    let serving = config.serving.clone();
    let (service, background) = start(config, deps, shutdown.clone());
    let routes =
        Routes::new(MatchmakingServer::new(service).max_decoding_message_size(MAX_MESSAGE_BYTES));
    let auth = AuthLayer::new(verifier, &[]);
    serve(listener, routes, &[SERVICE_NAME], auth, shutdown, serving).await?;
    let _ = background.await;
    Ok(())
}
