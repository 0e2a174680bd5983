//! The presence lease: a replica that dies without ending its streams (a crash, a lost
//! node) leaves its players' seats connected in Redis. So each replica instance holds a
//! lease it refreshes every third of [`ServiceConfig::lease`](super::ServiceConfig::lease),
//! and records the seats it connects under it ([`RoomStore::lease_add`](crate::store::RoomStore::lease_add)).
//! The timer loop of every replica claims expired leases and disconnects their seats, as
//! the dead replica would have: the other players see the disconnect, and the grace
//! period runs from there. An instance that finds its own lease swept (it stalled longer
//! than the lease) ends its streams, which resume, and continues under a new instance id.

use std::sync::{Arc, Mutex};

use tokio::sync::watch;

use crate::error::{GameError, Result};
use crate::room::Reject;
use crate::room::timing::now_ms;
use crate::store::LeasedSeat;

use super::Replica;

/// This replica's presence lease: the instance id it is held under, and a signal to the
/// streams when it was lost.
#[derive(Debug)]
pub struct Lease {
    instance: Mutex<Option<Arc<str>>>,
    lost: watch::Sender<u64>,
}

impl Default for Lease {
    fn default() -> Lease {
        Lease {
            instance: Mutex::new(None),
            lost: watch::channel(0).0,
        }
    }
}

impl Replica {
    /// The instance id this replica's presence lease is held under: the replica name and
    /// a random part (a restarted replica with the same name is another instance).
    pub fn instance(&self) -> Arc<str> {
        let mut current = self
            .lease
            .instance
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        Arc::clone(current.get_or_insert_with(|| {
            format!("{}/{}", self.config.replica, uuid::Uuid::now_v7().simple()).into()
        }))
    }

    /// A receiver that changes when the lease is lost: streams then end (and resume).
    pub fn lease_lost(&self) -> watch::Receiver<u64> {
        self.lease.lost.subscribe()
    }

    /// The lease of `instance` was swept: take a new instance id and end the streams
    /// connected under the old one.
    fn lose_lease(&self, instance: &str) {
        let mut current = self
            .lease
            .instance
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if current.as_deref() == Some(instance) {
            tracing::warn!(instance, "the presence lease was lost; streams resume");
            *current = None;
            drop(current);
            self.lease.lost.send_modify(|n| *n += 1);
        }
    }

    fn lease_until(&self, now: i64) -> i64 {
        now + self.config.lease.as_millis() as i64
    }

    /// Records `seat` under this replica's lease before its stream connects it; the
    /// instance it was recorded under.
    pub async fn lease_seat(&self, seat: &LeasedSeat) -> Result<Arc<str>> {
        for _ in 0..2 {
            let instance = self.instance();
            if self
                .store
                .lease_add(&instance, seat, self.lease_until(now_ms()))
                .await?
            {
                return Ok(instance);
            }
            self.lose_lease(&instance);
        }
        Err(GameError::Unavailable(
            "this replica cannot hold a presence lease; retry".into(),
        ))
    }
}

/// Renews this replica's lease (the timer loop's, every third of the lease).
pub(super) async fn refresh(replica: &Replica, now: i64) {
    replica.refresh_lease(now).await
}

impl Replica {
    async fn refresh_lease(&self, now: i64) {
        let instance = self.instance();
        match self
            .store
            .lease_refresh(&instance, self.lease_until(now))
            .await
        {
            Ok(true) => {}
            Ok(false) => self.lose_lease(&instance),
            Err(err) => tracing::warn!(error = %err, "cannot refresh the presence lease"),
        }
    }
}

/// Disconnects the seats of replicas whose lease expired (the timer loop's, on the
/// shards this replica walks).
pub(super) async fn sweep(replica: &Arc<Replica>, shards: &[u32], now: i64) -> Result<()> {
    replica.sweep_leases(shards, now).await
}

impl Replica {
    async fn sweep_leases(self: &Arc<Self>, shards: &[u32], now: i64) -> Result<()> {
        let claim = self.config.lease.as_millis() as i64;
        for expired in self
            .store
            .lease_claim_expired(shards, now, claim, 8)
            .await?
        {
            let mut done = true;
            for seat in &expired.seats {
                let result = self
                    .mutate(&seat.room_id, None, |room, now| {
                        if room.disconnect(seat.seat, &seat.conn_id, now) {
                            Ok(())
                        } else {
                            Err(Reject::new(
                                basra_proto::basra::game::v1::RejectCode::Unspecified,
                                "not connected through this stream any more",
                            ))
                        }
                    })
                    .await;
                match result {
                    Ok(_) | Err(GameError::RoomNotFound(_)) => {}
                    Err(err) => {
                        tracing::warn!(room_id = seat.room_id, error = %err, "cannot disconnect a swept seat");
                        done = false;
                    }
                }
            }
            tracing::info!(
                instance = expired.instance,
                seats = expired.seats.len(),
                "swept an expired presence lease"
            );
            // Unfinished: the claim runs out and a sweeper (maybe this one) tries again.
            if done {
                self.store.lease_release(&expired.instance).await?;
            }
        }
        Ok(())
    }
}
