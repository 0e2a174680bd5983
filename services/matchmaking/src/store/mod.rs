//! Where queue and room state lives, one trait per role: [`QueueStore`] (tickets,
//! pools, groups: the [`queue`] module) and [`LobbyStore`] (rooms, seats, join codes,
//! invites: the [`lobby`] module). Each backend implements both, one file per role:
//! Redis ([`RedisStore`], production: several replicas share one queue) and memory
//! ([`MemoryStore`], the embedded dev mode). One contract suite per role holds both
//! backends to the same behaviour (`tests/it/store_contract/`). A replica holds its
//! backend as the combined [`Store`] bound.
//!
//! Every state change of the queue is one atomic step (one Lua script in
//! Redis, one critical section in memory), so a ticket is never in two groups
//! and never dropped, whichever replica runs the step. Time always comes from
//! the caller (the injected [`Clock`](crate::clock::Clock)), never from the
//! store, so tests control it.

pub mod lobby;
mod memory;
pub mod queue;
mod redis;

use serde::{Deserialize, Serialize};

pub use self::lobby::{LobbyFilter, LobbyPage, LobbyStore, RoomRecord, RoomStatus, TakeSeat};
pub use self::memory::MemoryStore;
pub use self::queue::{
    CancelCause, CancelOutcome, CommitOutcome, Enqueued, Group, GroupMember, MatchRecord,
    NewTicket, QueueStore, TicketState, TicketView,
};
pub use self::redis::{RedisStore, pairing_script};

/// Who sits in a seat.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Occupant {
    /// Nobody yet.
    Open,
    /// A bot of this level (a `basra.common.v1.BotLevel` value).
    Bot {
        /// The bot level.
        level: i32,
    },
    /// A player.
    Player {
        /// The account.
        user_id: String,
        /// Whether it is a guest.
        guest: bool,
        /// The rating used for matching, if any.
        #[serde(default)]
        rating: Option<f64>,
    },
}

/// Both roles of one backend: what a replica's handlers, streams and pairing loop hold
/// (`Arc<dyn Store>`). Every type that implements [`QueueStore`] and [`LobbyStore`] is
/// one.
pub trait Store: QueueStore + LobbyStore {}

impl<T: QueueStore + LobbyStore> Store for T {}
