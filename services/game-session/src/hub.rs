//! Per-replica fan-out: one subscription to the store's notices, one `watch` channel per
//! room with local streams. A stream wakes on its room's watch and reads the missed
//! events from the stored log; there is no Redis connection per stream. The watch carries
//! the room's last announced seq, so a stream that already has it (its own play, or the
//! second notice of a commit: the local one and the one through Redis) does not read.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{broadcast, watch};
use tokio_util::sync::CancellationToken;

use crate::store::{Notice, RoomStore};

/// What a room's watch holds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Wake {
    /// The highest seq announced for the room.
    pub seq: u64,
    /// Bumped when streams must look whatever their seq (the room changed without new
    /// events, or notices may have been lost).
    pub epoch: u64,
}

impl Wake {
    /// Whether a stream that has delivered every event up to `delivered` and last
    /// looked at `epoch` has anything to read.
    pub fn news_for(&self, delivered: u64, epoch: u64) -> bool {
        self.seq > delivered || self.epoch != epoch
    }
}

/// The rooms this replica has streams on.
#[derive(Debug, Default)]
pub struct Hub {
    rooms: Mutex<HashMap<Arc<str>, watch::Sender<Wake>>>,
}

impl Hub {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Arc<str>, watch::Sender<Wake>>> {
        self.rooms
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// A receiver woken whenever the room gets new events.
    pub fn watch(&self, room_id: &str) -> watch::Receiver<Wake> {
        let mut rooms = self.lock();
        if let Some(sender) = rooms.get(room_id) {
            return sender.subscribe();
        }
        let (sender, receiver) = watch::channel(Wake::default());
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

    /// Wakes the room's streams (`seq` 0: all of them, see [`Notice`]).
    pub fn notify(&self, room_id: &str, seq: u64) {
        if room_id == "*" {
            self.notify_all();
            return;
        }
        if let Some(sender) = self.lock().get(room_id) {
            sender.send_if_modified(|wake| {
                if seq == 0 {
                    wake.epoch += 1;
                    true
                } else if seq > wake.seq {
                    wake.seq = seq;
                    true
                } else {
                    // Announced already (the local notice came first): nobody wakes.
                    false
                }
            });
        }
    }

    /// Wakes every local stream (after missed notices).
    pub fn notify_all(&self) {
        for sender in self.lock().values() {
            sender.send_modify(|wake| wake.epoch += 1);
        }
    }

    /// Number of rooms watched here.
    pub fn rooms(&self) -> usize {
        self.lock().len()
    }

    /// The safety net under lost notices (pub/sub delivers at most once): every
    /// `period`, reads the last seq and status of every room watched here, in one round
    /// trip per thousand rooms, and wakes the streams of rooms that moved on unannounced
    /// or closed. Idle streams cost nothing else.
    pub async fn run_resync(
        self: Arc<Self>,
        store: Arc<dyn RoomStore>,
        period: Duration,
        shutdown: CancellationToken,
    ) {
        let mut tick = tokio::time::interval(period);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        tick.reset();
        loop {
            tokio::select! {
                () = shutdown.cancelled() => return,
                _ = tick.tick() => {}
            }
            let rooms: Vec<(Arc<str>, u64)> = self
                .lock()
                .iter()
                .map(|(id, sender)| (Arc::clone(id), sender.borrow().seq))
                .collect();
            for chunk in rooms.chunks(1000) {
                let ids: Vec<Arc<str>> = chunk.iter().map(|(id, _)| Arc::clone(id)).collect();
                let heads = match store.room_heads(&ids).await {
                    Ok(heads) => heads,
                    Err(err) => {
                        tracing::warn!(error = %err, "cannot re-check rooms");
                        continue;
                    }
                };
                for ((id, announced), head) in chunk.iter().zip(heads) {
                    match head {
                        Some(head) if !head.closed && head.seq <= *announced => {}
                        Some(head) if !head.closed => self.notify(id, head.seq),
                        // Closed or gone: every stream looks (and ends).
                        _ => self.notify(id, 0),
                    }
                }
            }
        }
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
