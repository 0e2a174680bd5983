//! Which shards this replica walks. The timer loop, the outbox forwarder and the lease
//! sweep each read their shards' indexes on every tick; with every replica walking all
//! [`SHARDS`] shards, every replica would pay for every shard (the per-item claims would
//! keep the work itself single, but not the reads). So the walks are divided between the
//! live replicas with leases in Redis ([`RoomStore::walk_shards`]): a replica holds a
//! shard's walk for [`Walks::lease`], renews it on every timer tick, and the others skip
//! that shard. A replica that stops gives its walks up at once; one that crashes or
//! stalls loses them when its lease runs out, and the others take them over on their next
//! tick. A replica joining makes the share smaller and the others give up their extra
//! walks.
//!
//! The lease is only an economy, never what makes an item's work single: a replica that
//! stalled past its lease (a long pause) may walk a shard another replica now holds
//! until its next renewal tells it otherwise. The items stay claimed one by one (a
//! deadline's claim script, the outbox consumer group, the presence lease claim), so the
//! overlap costs a few reads, not a double timer or a double record. Each hand-over bumps
//! the walk's epoch (its fencing number), which the logs show.
//!
//! A replica's own view of its walks expires on its own clock [`Walks::lease`] after it
//! asked for them, so a replica cut off from Redis stops walking about when the others
//! may take over.
//!
//! [`SHARDS`]: crate::store::SHARDS

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use crate::room::timing::now_ms;
use crate::store::{RoomStore, WalkLease};

/// The shard walks this replica holds.
#[derive(Debug)]
pub struct Walks {
    walker: String,
    lease: Duration,
    held: Mutex<Held>,
    /// Where the next walk starts, so no shard waits behind the others.
    turn: AtomicU32,
}

#[derive(Debug, Default)]
struct Held {
    walks: Vec<WalkLease>,
    /// Until when (this replica's clock) `walks` may be walked without a renewal.
    until: Option<Instant>,
}

impl Walks {
    /// The walks of `walker` (a replica's unique id), held `lease` at a time.
    pub fn new(walker: String, lease: Duration) -> Walks {
        Walks {
            walker,
            lease,
            held: Mutex::default(),
            turn: AtomicU32::new(0),
        }
    }

    /// How long a walk is held without a renewal.
    pub fn lease(&self) -> Duration {
        self.lease
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Held> {
        self.held
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Renews the walks (and takes this replica's share) at `now_ms`; on a store error
    /// the walks held so far stay good until their lease runs out.
    pub async fn renew(&self, store: &dyn RoomStore, now_ms: i64) {
        let asked = Instant::now();
        let until_ms = now_ms + self.lease.as_millis() as i64;
        match store
            .walk_shards(&self.walker, now_ms, until_ms, false)
            .await
        {
            Ok(walks) => {
                let mut held = self.lock();
                for walk in &walks {
                    if !held.walks.iter().any(|w| w.shard == walk.shard) {
                        tracing::debug!(
                            shard = walk.shard,
                            epoch = walk.epoch,
                            "took a shard walk"
                        );
                    }
                }
                held.walks = walks;
                held.until = Some(asked + self.lease);
            }
            Err(err) => tracing::warn!(error = %err, "cannot renew the shard walks"),
        }
    }

    /// Gives every walk up (the replica stops), so other replicas take them at once.
    pub async fn leave(&self, store: &dyn RoomStore, now_ms: i64) {
        *self.lock() = Held::default();
        if let Err(err) = store.walk_shards(&self.walker, now_ms, now_ms, true).await {
            tracing::warn!(error = %err, "cannot give up the shard walks");
        }
    }

    /// The shards to walk now (none once the lease ran out unrenewed), starting one
    /// further at each call.
    pub fn shards(&self) -> Vec<u32> {
        let held = self.lock();
        if held.until.is_none_or(|until| Instant::now() >= until) {
            return Vec::new();
        }
        let mut shards: Vec<u32> = held.walks.iter().map(|walk| walk.shard).collect();
        drop(held);
        if !shards.is_empty() {
            let turn = self.turn.fetch_add(1, Ordering::Relaxed) as usize;
            let len = shards.len();
            shards.rotate_left(turn % len);
        }
        shards
    }

    /// The walks held now, with their epochs (for tests and the admin view).
    pub fn held(&self) -> Vec<WalkLease> {
        let held = self.lock();
        if held.until.is_none_or(|until| Instant::now() >= until) {
            return Vec::new();
        }
        held.walks.clone()
    }
}

/// Renews `walks` four times per walk lease until `shutdown`, then gives them up. Apart
/// from the timer loop, so that a long tick (many rooms due) does not let the walks lapse.
pub(crate) async fn run(walks: Arc<Walks>, store: Arc<dyn RoomStore>, shutdown: CancellationToken) {
    let mut tick = tokio::time::interval(walks.lease() / 4);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            () = shutdown.cancelled() => break,
            _ = tick.tick() => {}
        }
        walks.renew(store.as_ref(), now_ms()).await;
    }
    walks.leave(store.as_ref(), now_ms()).await;
}
