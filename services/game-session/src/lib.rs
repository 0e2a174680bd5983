//! The Basra online game-session service: authoritative play over a bidirectional gRPC
//! stream per player, with every room's state in Redis so that any replica serves any
//! player of any room.
//!
//! A played card's path, folder by folder:
//!
//! - [`api`]: the gRPC services, translation only: `GameService` (Play, and its browser
//!   shape: Watch and one unary call per action), `GameInternalService` (matchmaking's
//!   CreateRoom, SeatPlayer, GetSeat) and `GameAdminService`.
//! - [`stream`]: one Play (or Watch) stream's session: `Session::open`
//!   admits and connects the seat, the session reads the client's messages and delivers
//!   the room's events ([`stream::convert`]: the only way anything reaches a client) from
//!   the response it runs in ([`stream::response`]).
//! - [`room`]: a room (seats, the engine's full [`Game`](basra_engine::Game), timers),
//!   its pure state changes, its event log and record, and the players' actions on it
//!   (`room::actions`).
//! - [`replica`]: the replica's shared state, [`Replica`]: its commits
//!   ([`Replica::mutate`]: load → apply → compare-and-set → retry), the fan-out hub, the
//!   presence lease, the timer loop, the bots' search, the shard walks and the drain.
//! - [`store`]: the [`RoomStore`] trait, [`RedisStore`] (one atomic Lua compare-and-set
//!   per change) and [`MemoryStore`].
//!
//! Beside them: [`metrics`] (the replica's Prometheus metrics), [`accounts`] (the link
//! to accounts, and players' names and guest flags from it), [`pod_cost`] (the pod's
//! `controller.kubernetes.io/pod-deletion-cost`, kept equal to its open streams so a
//! scale-down removes the emptiest pods first), [`settings`] and [`error`]; `startup`
//! holds the assembly, [`GameSession`] (a replica's state, background tasks and routes)
//! and [`App`] (a replica as its settings describe it).
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

pub mod accounts;
pub mod api;
pub mod error;
pub mod metrics;
pub mod pod_cost;
pub mod replica;
pub mod room;
pub mod settings;
mod startup;
pub mod store;
pub mod stream;

pub use accounts::AccountsLink;
pub use error::GameError;
pub use replica::{Replica, ServiceConfig, StreamsPerAccount};
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

/// The largest `GameInternalService` request accepted: a CreateRooms of its 256 rooms or
/// a GetSeats of its 1,000 seats, with room to spare (the service takes a service token
/// only, and the gateway does not route it).
pub const MAX_INTERNAL_MESSAGE_BYTES: usize = 256 * 1024;
