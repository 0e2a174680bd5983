//! The in-memory store of the embedded dev mode: one process, the same behaviour as
//! the Redis scripts (the contract tests check it). Each role keeps its state behind
//! its own mutex (`queue.rs`, `lobby.rs`); no step touches both, and each step holds
//! its role's lock throughout, so every step is atomic as a script is in Redis.

mod lobby;
mod queue;

use std::sync::{Mutex, MutexGuard};

use tokio::sync::broadcast;

use self::{lobby::LobbyState, queue::QueueState};

/// The in-memory store. Cheap to create; dropped with everything in it.
#[derive(Debug)]
pub struct MemoryStore {
    queue: Mutex<QueueState>,
    lobby: Mutex<LobbyState>,
    /// Ids of tickets whose state changed.
    events: broadcast::Sender<String>,
}

impl Default for MemoryStore {
    fn default() -> Self {
        MemoryStore::new()
    }
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> MemoryStore {
        MemoryStore {
            queue: Mutex::new(QueueState::default()),
            lobby: Mutex::new(LobbyState::default()),
            events: broadcast::channel(4096).0,
        }
    }
}

/// The state behind `mutex`, also after a panic elsewhere held it (every step leaves
/// it whole before anything can panic).
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}
