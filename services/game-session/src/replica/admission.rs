//! Admission: the replica's stream slots (`max_streams`), each account's Play and Watch
//! stream limits, and the joins' turns at their Redis work.

use std::sync::Arc;

use basra_platform::stream_limit::{self, AccountStream};
use tokio::sync::OwnedSemaphorePermit;

use crate::error::{GameError, Result};
use crate::metrics::GameMetrics;

use super::Replica;

/// The Play and Watch streams each account holds open on this replica (clones share the
/// counts), each kind refused past its limit.
#[derive(Debug, Clone)]
pub struct StreamsPerAccount {
    play: stream_limit::StreamsPerAccount,
    watch: stream_limit::StreamsPerAccount,
}

impl StreamsPerAccount {
    /// At most `play` Play and `watch` Watch streams per account.
    pub fn new(play: usize, watch: usize) -> StreamsPerAccount {
        StreamsPerAccount {
            play: stream_limit::StreamsPerAccount::new("Play", play),
            watch: stream_limit::StreamsPerAccount::new("Watch", watch),
        }
    }
}

impl Default for StreamsPerAccount {
    /// The limits of `config/default.toml`.
    fn default() -> StreamsPerAccount {
        StreamsPerAccount::new(4, 8)
    }
}

/// The kind of a stream, for its account's limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamKind {
    /// `GameService.Play`.
    Play,
    /// `GameService.Watch`.
    Watch,
}

impl Replica {
    /// Waits for a turn to do a join's Redis work (the room's load, the presence lease,
    /// the connect commit, the first read of the log). A storm of joins (every player of
    /// a dead replica resuming here at once) then queues in this replica, each join
    /// waiting for a permit, instead of putting thousands of calls at once on the Redis
    /// connection, where the last ones would wait past the response timeout and fail
    /// with UNAVAILABLE. The wait has no bound of its own: the admitted streams
    /// (`max_streams`) bound the queue, and a client that gives up ends its wait.
    pub async fn join_turn(&self) -> Result<OwnedSemaphorePermit> {
        if let Ok(permit) = Arc::clone(&self.join_slots).try_acquire_owned() {
            return Ok(permit);
        }
        self.metrics.joins_queued.inc();
        Arc::clone(&self.join_slots)
            .acquire_owned()
            .await
            .map_err(|_| GameError::Unavailable("this replica is stopping".into()))
    }

    /// Takes a stream slot of the replica and one of `user`'s for `kind`, or refuses the
    /// stream at either limit or while draining.
    pub fn admit(self: &Arc<Self>, user: uuid::Uuid, kind: StreamKind) -> Result<StreamPermit> {
        if self.drain.is_draining() || self.shutdown.is_cancelled() {
            return Err(GameError::Unavailable(
                "this replica is draining; reconnect elsewhere".into(),
            ));
        }
        let limits = &self.config.streams_per_account;
        let account = match kind {
            StreamKind::Play => limits.play.open(user),
            StreamKind::Watch => limits.watch.open(user),
        }?;
        let Ok(slot) = Arc::clone(&self.stream_slots).try_acquire_owned() else {
            self.metrics.streams_refused.inc();
            return Err(GameError::Exhausted(format!(
                "this replica serves its maximum of {} streams; retry with backoff",
                self.config.max_streams
            )));
        };
        self.metrics.open_streams.inc();
        Ok(StreamPermit {
            _slot: slot,
            _account: account,
            metrics: Arc::clone(&self.metrics),
        })
    }

    /// Play streams open on this replica now.
    pub fn open_streams(&self) -> usize {
        self.config.max_streams - self.stream_slots.available_permits()
    }
}

/// One admitted stream; dropping it frees its slot.
#[derive(Debug)]
pub struct StreamPermit {
    _slot: OwnedSemaphorePermit,
    _account: AccountStream,
    metrics: Arc<GameMetrics>,
}

impl Drop for StreamPermit {
    fn drop(&mut self) {
        self.metrics.open_streams.dec();
    }
}
