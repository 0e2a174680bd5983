//! The Basra online game-session service: authoritative play over a bidirectional gRPC
//! stream per player, with every room's state in Redis so that any replica serves any
//! player of any room.
//!
//! - [`room`]: a room (seats, the engine's full [`Game`](basra_engine::Game), timers) and
//!   its pure state changes; [`seats`]: who sits where, as both the room and the log
//!   hold it; [`events`]: the stored event log.
//! - [`store`]: the [`RoomStore`] trait, [`RedisStore`]
//!   (one atomic Lua compare-and-set per change) and [`MemoryStore`].
//! - [`core`]: load → apply → compare-and-set → retry ([`Core::mutate`]), timers, admission,
//!   the presence lease that lets other replicas disconnect a dead replica's players.
//! - [`hub`]: per-replica fan-out of the store's notices to the local streams, and the
//!   resync under lost notices.
//! - [`api`]: the gRPC services side by side: `GameService` (Play, and its browser shape:
//!   Watch and one unary call per action, through the same per-action logic as Play,
//!   `actions`), `GameInternalService` (matchmaking's CreateRoom, SeatPlayer, GetSeat) and
//!   `GameAdminService`.
//! - [`convert`]: the only way anything reaches a client: the engine's per-seat view and
//!   `Event::for_viewer`.
//! - [`drain`]: draining the replica (`DrainReplica`) and taking it back (`UndrainReplica`),
//!   with gRPC health following.
//! - [`metrics`]: the replica's Prometheus metrics.
//! - [`outbox`]: finished matches to `AccountsInternalService.RecordMatch`, retried until they land.
//! - [`pod_cost`]: the pod's `controller.kubernetes.io/pod-deletion-cost`, kept equal to
//!   its open streams so a scale-down removes the emptiest pods first.
//!
//! - `startup`: the assembly, [`GameSession`] (a replica's core, background tasks and
//!   routes) and [`App`] (a replica as its settings describe it).
//!
//! Every service starts the same way: `Settings::load()` → [`App::build`] →
//! [`App::run`] (or [`App::mount`] beside other services, as `basra dev` does). Tests
//! that bring their own store or keys use [`GameSession::start`] and [`serve`].
//!
//! ```no_run
//! # async fn demo() -> Result<(), game_session::GameError> {
//! let settings = game_session::Settings::load().expect("valid settings");
//! let listener = tokio::net::TcpListener::bind(settings.server.listen).await.expect("bind");
//! let app = game_session::App::build(settings).await?;
//! app.run(listener, tokio_util::sync::CancellationToken::new()).await
//! # }
//! ```

mod actions;
pub mod api;
pub mod bots;
pub mod convert;
pub mod core;
pub mod drain;
pub mod error;
pub mod events;
pub mod hub;
pub mod metrics;
pub mod names;
pub mod outbox;
pub mod pod_cost;
pub mod record;
pub mod response;
pub mod room;
pub mod search_threads;
pub mod seats;
mod session;
pub mod settings;
pub mod shared_bytes;
mod startup;
pub mod store;
pub mod timing;
pub mod walks;

pub use crate::core::{Core, ServiceConfig, StreamsPerAccount};
pub use error::GameError;
pub use outbox::AccountsLink;
pub use settings::Settings;
pub use startup::{App, GameSession, serve};
pub use store::{MemoryStore, RedisStore, RoomStore};

/// The gRPC service names this server answers (health and reflection list them).
pub const SERVICE_NAMES: &[&str] = &[
    "basra.game.v1.GameService",
    "basra.game.v1.GameInternalService",
    "basra.game.v1.GameAdminService",
];

/// The services a drain closes: health reports them NOT_SERVING while the replica drains
/// (`GameAdminService` stays SERVING: an operator takes the replica back through it).
pub const DRAINED_SERVICES: &[&str] = &[
    "basra.game.v1.GameService",
    "basra.game.v1.GameInternalService",
];

/// The largest client message accepted (a Play message is a few dozen bytes).
pub const MAX_MESSAGE_BYTES: usize = 16 * 1024;
