//! The matchmaking service of Basra online: the rated queue, the public
//! lobby and private rooms (`basra.matchmaking.v1.MatchmakingService`).
//!
//! | module | what |
//! |---|---|
//! | [`domain`] | formats, the widening rating window, join codes, what ranked rooms may set |
//! | [`store`] | one trait per role, [`QueueStore`](store::QueueStore) and [`LobbyStore`](store::LobbyStore); Redis (production) and memory (dev) implement both |
//! | [`service`] | the gRPC handlers and the FindMatch streams, by concern: queue, lobby, invites |
//! | `state` | what the handlers, streams and the pairing loop of a replica share |
//! | `matcher` | the pairing loop and the housekeeping sweep |
//! | `convert` | store records ⇄ API messages |
//! | [`upstream`] | game-session (rooms) and accounts (ratings) behind traits |
//! | [`metrics`] | queue length, wait histogram, matches/s as Prometheus text |
//! | [`settings`] | typed settings with embedded defaults |
//! | [`events`] | tournaments (issue 47): `EventService`, `EventAdminService`, their stores and clock |
//! | `startup` | the assembly: [`App`] (build, mount, run), [`serve`] and [`start`] |
//!
//! Every replica serves streams and runs a pairing loop over the shared
//! queue; see [`store`] for why that is safe.
//!
//! Every service starts the same way: `Settings::load()` → [`App::build`] →
//! [`App::run`] (or [`App::mount`] beside other services, as `basra dev` does). Tests
//! that bring their own store or upstreams use [`serve`] (or [`start`]).

pub mod clock;
mod convert;
pub mod domain;
pub mod error;
pub mod events;
mod matcher;
pub mod metrics;
pub mod service;
pub mod settings;
mod startup;
mod state;
pub mod store;
pub mod upstream;

pub use error::{MatchmakingError, Result};
pub use service::MatchmakingApi;
pub use startup::{App, SERVICE_NAMES, serve, start};
pub use state::{Config, Deps};

/// The gRPC service name, for health and reflection.
pub const SERVICE_NAME: &str = "basra.matchmaking.v1.MatchmakingService";

/// The largest request accepted, in bytes; a larger one is answered RESOURCE_EXHAUSTED.
pub const MAX_MESSAGE_BYTES: usize = 16 * 1024;
