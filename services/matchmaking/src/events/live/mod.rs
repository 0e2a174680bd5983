//! The live state of running events and the lease that says which replica drives each:
//! Redis in production ([`RedisLiveStore`], Cluster-safe: an event's lease and state
//! share one hash slot, `P:{ev:<id>}`, so each step is one atomic script), memory for
//! `basra dev` and tests ([`MemoryLiveStore`]).
//!
//! **The lease.** A replica drives an event only while it holds the event's lease (a
//! holder name and a deadline): [`LiveStore::acquire`] takes a free or lapsed lease, or
//! renews the caller's own. A holder that dies stops renewing; after the lease's time
//! another replica takes it and continues from the stored state. **Fencing**: every
//! write of the state ([`LiveStore::save`]) checks, in the same atomic step, that the
//! writer still holds the lease and that the state is the version it read; a replica
//! that lost its lease (paused, partitioned) cannot overwrite its successor's work, so a
//! round advances once and a result is taken once.

use crate::clock::Millis;
use crate::error::Result;

mod memory;
mod redis;

pub use memory::MemoryLiveStore;
pub use redis::RedisLiveStore;

/// The stored state of a running event: its version (rising by 1 a save) and its
/// serialized form (the driver's business).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stored {
    /// Rises by 1 with each save.
    pub version: u64,
    /// The state.
    pub json: String,
}

/// Live state and leases.
#[tonic::async_trait]
pub trait LiveStore: Send + Sync + 'static {
    /// Takes the event's lease for `holder` until `now + ttl_ms` if it is free, lapsed
    /// or already `holder`'s (a renewal); `false` when another holds it.
    async fn acquire(
        &self,
        event_id: &str,
        holder: &str,
        now: Millis,
        ttl_ms: Millis,
    ) -> Result<bool>;

    /// Gives the lease up, if `holder` holds it.
    async fn release(&self, event_id: &str, holder: &str) -> Result<()>;

    /// The event's state, if any was saved.
    async fn load(&self, event_id: &str) -> Result<Option<Stored>>;

    /// The version of the event's state alone (a watcher's cheap look: has it
    /// changed?), if any was saved.
    async fn version(&self, event_id: &str) -> Result<Option<u64>>;

    /// Saves `json` as version `expected + 1` if `holder` holds the lease and the stored
    /// version is `expected` (0: none stored); `false` (nothing written) otherwise.
    async fn save(&self, event_id: &str, holder: &str, expected: u64, json: &str) -> Result<bool>;
}
