//! Per-replica fan-out: one subscription to the store's notices, one `watch` channel per
//! room with local streams. A stream wakes on its room's watch and reads the missed
//! events from the stored log; there is no Redis connection per stream.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::{broadcast, watch};
use tokio_util::sync::CancellationToken;

use crate::store::Notice;

/// The rooms this replica has streams on.
#[derive(Debug, Default)]
pub struct Hub {
    rooms: Mutex<HashMap<Arc<str>, watch::Sender<u64>>>,
}

impl Hub {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Arc<str>, watch::Sender<u64>>> {
        self.rooms
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// A receiver woken whenever the room gets new events.
    pub fn watch(&self, room_id: &str) -> watch::Receiver<u64> {
        let mut rooms = self.lock();
        if let Some(sender) = rooms.get(room_id) {
            return sender.subscribe();
        }
        let (sender, receiver) = watch::channel(0);
        rooms.insert(room_id.into(), sender);
        receiver
    }

    /// Forgets the room if no stream watches it any more.
    pub fn release(&self, room_id: &str) {
        let mut rooms = self.lock();
        if rooms
            .get(room_id)
            .is_some_and(|sender| sender.receiver_count() == 0)
        {
            rooms.remove(room_id);
        }
    }

    /// Wakes the room's streams.
    pub fn notify(&self, room_id: &str, seq: u64) {
        if room_id == "*" {
            self.notify_all();
            return;
        }
        if let Some(sender) = self.lock().get(room_id) {
            // `send_modify` marks the value changed even when equal: streams re-check.
            sender.send_modify(|last| *last = (*last).max(seq));
        }
    }

    /// Wakes every local stream (after missed notices).
    pub fn notify_all(&self) {
        for sender in self.lock().values() {
            sender.send_modify(|_| {});
        }
    }

    /// Number of rooms watched here.
    pub fn rooms(&self) -> usize {
        self.lock().len()
    }

    /// Delivers the store's notices until `shutdown`.
    pub async fn run(
        self: Arc<Self>,
        mut notices: broadcast::Receiver<Notice>,
        shutdown: CancellationToken,
    ) {
        loop {
            let notice = tokio::select! {
                () = shutdown.cancelled() => return,
                notice = notices.recv() => notice,
            };
            match notice {
                Ok(notice) => self.notify(&notice.room_id, notice.seq),
                Err(broadcast::error::RecvError::Lagged(missed)) => {
                    tracing::warn!(missed, "notices lagged; waking every stream");
                    self.notify_all();
                }
                Err(broadcast::error::RecvError::Closed) => return,
            }
        }
    }
}
