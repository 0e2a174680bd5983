//! The replica's rare signals, passed to its streams: a drain (or its end), the replica's
//! stop, a lost presence lease, a changed list of revoked accounts. One task waits on them
//! all and, when one moves, wakes every local stream through its room's watch
//! ([`Hub::signal_all`](super::hub::Hub::signal_all)); each stream then looks at what
//! concerns it. A stream's loop thus waits on two things (its client and its room's
//! watch) instead of five: every turn of it registered with, and later left, three more
//! wait lists, on every play.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::Replica;

/// Until `shutdown` (which it passes on too).
pub(crate) async fn run(replica: Arc<Replica>, shutdown: CancellationToken) {
    let mut revoked = replica.config.revocations.subscribe();
    let mut readiness = replica.drain.readiness();
    let mut lease_lost = replica.lease_lost();
    loop {
        tokio::select! {
            () = shutdown.cancelled() => {
                replica.hub.signal_all();
                return;
            }
            Ok(()) = revoked.changed() => {}
            Ok(()) = readiness.changed() => {}
            Ok(()) = lease_lost.changed() => {}
        }
        replica.hub.signal_all();
    }
}
