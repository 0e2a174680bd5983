//! One replica's shared machinery, [`Replica`]: the store, the fan-out hub, the
//! admission counts, the presence lease, the shard walks, the metrics; and what runs on
//! it beside the streams:
//!
//! - [`commit`]: [`Replica::mutate`], the one way a room changes (load, apply,
//!   compare-and-set, retry);
//! - [`hub`]: per-replica fan-out of the store's notices and of this replica's commits
//!   to the local streams, and the resync under lost notices;
//! - [`admission`]: the stream slots, each account's stream limits and the joins' turns;
//! - [`lease`]: the presence lease that lets other replicas disconnect a dead replica's
//!   players;
//! - [`outbox`]: finished matches forwarded to accounts (`RecordMatch`) until each lands;
//! - [`timers`]: the timer loop (due rooms, the lease's refresh and sweep) and a room's
//!   next deadline fired from here when it is close;
//! - [`bots`]: the hard bot's search off the runtime, on [`search_threads`];
//! - [`walks`]: which shards this replica walks;
//! - [`drain`]: draining the replica and taking it back;
//! - [`signals`]: a drain, the stop, a lost lease or a revocation passed to every stream;
//! - [`shared_bytes`]: a commit's events encoded once for the room's local streams.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use crate::accounts::AccountsLink;
use crate::metrics::GameMetrics;
use crate::room::timing::Timing;
use crate::store::RoomStore;

pub mod admission;
pub mod bots;
pub mod commit;
pub mod drain;
pub mod hub;
pub mod lease;
pub mod outbox;
/// The search threads, shared with accounts' analysis (`basra-platform`).
pub use basra_platform::search_threads;
pub mod shared_bytes;
pub mod signals;
pub mod timers;
pub mod walks;

pub use admission::{StreamKind, StreamPermit, StreamsPerAccount};
pub use commit::{Batch, ChangeKind, Committed, Mutation};

use drain::Drain;
use hub::Hub;
use lease::Lease;
use walks::Walks;

/// What the service needs to know, already validated (tests build it directly).
#[derive(Debug, Clone)]
pub struct ServiceConfig {
    /// This replica's name.
    pub replica: String,
    /// Timings given to new rooms.
    pub timing: Timing,
    /// Most open Play streams on this replica.
    pub max_streams: usize,
    /// The open Play and Watch streams of each account here, and their limits.
    pub streams_per_account: StreamsPerAccount,
    /// Most joins doing their Redis work at once on this replica; the others wait for a
    /// turn (see [`Replica::join_turn`]).
    pub join_concurrency: usize,
    /// How long a new stream may take to send its Join.
    pub join_timeout: Duration,
    /// How often the timer loop looks for due rooms.
    pub timer_poll: Duration,
    /// How often the replica re-checks the last seq of every room it has streams on (a
    /// safety net under lost notices).
    pub resync: Duration,
    /// How long a replica's presence lease lasts without a refresh: after that, another
    /// replica disconnects the seats it served (see [`lease`]).
    pub lease: Duration,
    /// The hard bot's budget and thinking slots (`[bots]`).
    pub bots: bots::Bots,
    /// The banned and deleted accounts: refused at every call, their streams ended.
    pub revocations: basra_platform::revocation::Revocations,
}

impl ServiceConfig {
    /// How long a replica holds a shard walk without renewing it: ten timer polls (one
    /// second by default), at least half a second. A crashed replica's shards are walked
    /// again by the others within about this long, which the turn slack (one second by
    /// default) mostly absorbs.
    pub fn walk_lease(&self) -> Duration {
        (self.timer_poll * 10).clamp(Duration::from_millis(500), Duration::from_secs(5))
    }

    /// A new [`Walks`] for this replica: its name and a random part.
    pub fn walks(&self) -> Walks {
        Walks::new(
            format!("{}/{}", self.replica, uuid::Uuid::now_v7().simple()),
            self.walk_lease(),
        )
    }
}

/// The replica's state, shared by its streams, its services and its background tasks.
pub struct Replica {
    /// Where rooms live.
    pub(crate) store: Arc<dyn RoomStore>,
    /// Local fan-out.
    pub(crate) hub: Arc<Hub>,
    /// Settings.
    pub(crate) config: ServiceConfig,
    /// One permit per Play stream this replica may hold (`max_streams`).
    pub(crate) stream_slots: Arc<Semaphore>,
    /// One permit per join doing its Redis work (`join_concurrency`).
    pub(crate) join_slots: Arc<Semaphore>,
    /// Cancelled when the replica stops: streams end with UNAVAILABLE.
    pub(crate) shutdown: CancellationToken,
    /// Draining: by `DrainReplica` (until `UndrainReplica`), and when the replica stops.
    pub(crate) drain: Drain,
    /// The presence lease.
    pub(crate) lease: Lease,
    /// The shards this replica walks (timers, outbox, lease sweep).
    pub(crate) walks: Arc<Walks>,
    /// accounts, for players' names (and the outbox).
    pub(crate) accounts: Option<AccountsLink>,
    /// Tells accounts who plays where (their friends see it).
    pub(crate) presence: basra_platform::presence::PresenceReporter,
    /// Prometheus metrics.
    pub(crate) metrics: Arc<GameMetrics>,
}

impl std::fmt::Debug for Replica {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Replica")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl Replica {
    /// The replica over `store`, with nothing running yet (its background tasks are
    /// [`GameSession::start`](crate::GameSession::start)'s): `accounts` for players'
    /// names and presence reports, `shutdown` its stop (which drains it too).
    pub fn new(
        store: Arc<dyn RoomStore>,
        config: ServiceConfig,
        accounts: Option<AccountsLink>,
        shutdown: CancellationToken,
    ) -> Replica {
        let walks = Arc::new(config.walks());
        let metrics: Arc<GameMetrics> = Arc::default();
        Replica {
            store,
            hub: Arc::default(),
            stream_slots: Arc::new(Semaphore::new(config.max_streams)),
            join_slots: Arc::new(Semaphore::new(config.join_concurrency.max(1))),
            config,
            shutdown: shutdown.clone(),
            // Stopping drains too: a stream then waits on one token, not two.
            drain: Drain::new(shutdown.clone(), metrics.draining.clone()),
            lease: Lease::default(),
            walks,
            presence: match &accounts {
                Some(link) => basra_platform::presence::PresenceReporter::spawn(
                    link.channel.clone(),
                    {
                        let credentials = link.credentials.clone();
                        Arc::new(move || credentials.token())
                    },
                    shutdown,
                ),
                None => basra_platform::presence::PresenceReporter::disabled(),
            },
            accounts,
            metrics,
        }
    }

    /// The replica's Prometheus metrics.
    pub fn metrics(&self) -> &Arc<GameMetrics> {
        &self.metrics
    }

    /// The shards this replica walks.
    pub fn walks(&self) -> &Arc<Walks> {
        &self.walks
    }

    /// The replica's fan-out to its local streams, and the room states it holds.
    pub fn hub(&self) -> &Arc<Hub> {
        &self.hub
    }

    /// Where the replica's rooms live.
    pub fn store(&self) -> &Arc<dyn RoomStore> {
        &self.store
    }

    /// The replica's settings.
    pub fn config(&self) -> &ServiceConfig {
        &self.config
    }
}
