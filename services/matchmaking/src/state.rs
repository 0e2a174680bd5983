//! What every FindMatch stream, gRPC handler and background task of a replica shares:
//! the settings ([`Config`]), what the matchmaker talks to ([`Deps`]), and the streams
//! open on this replica ([`Hub`]). It is its own module so that the service and the
//! pairing loop ([`crate::matcher`]) both read it without one importing the other.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use basra_platform::ServeOptions;
use basra_platform::presence::PresenceReporter;
use basra_platform::stream_limit::StreamsPerAccount;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::clock::{Clock, Millis};
use crate::metrics::Metrics;
use crate::settings::{QueueSettings, RoomSettings};
use crate::store::Store;
use crate::upstream::{GameRooms, Invites, NameSource, RatingSource};

/// The behaviour settings of a running matchmaker.
#[derive(Debug, Clone)]
pub struct Config {
    /// How the queue pairs players (from `[queue]`).
    pub queue: QueueSettings,
    /// Created rooms.
    pub rooms: RoomSettings,
    /// How the server drains at shutdown and limits its connections.
    pub serving: ServeOptions,
    /// The banned and deleted accounts: refused at every call, their searches ended.
    pub revocations: basra_platform::revocation::Revocations,
    /// Events: their clock and streams (`[events]`).
    pub events: crate::settings::EventSettings,
}

/// What the matchmaker talks to.
#[derive(Clone)]
pub struct Deps {
    /// Queue and lobby state.
    pub store: Arc<dyn Store>,
    /// game-session.
    pub game: Arc<dyn GameRooms>,
    /// Where players' ratings and blocks come from (accounts).
    pub ratings: Arc<dyn RatingSource>,
    /// Players' display names.
    pub names: Arc<dyn NameSource>,
    /// Invites to friends.
    pub invites: Arc<dyn Invites>,
    /// Tells accounts who is searching (their friends see it).
    pub presence: PresenceReporter,
    /// Time.
    pub clock: Arc<dyn Clock>,
    /// The service's Prometheus metrics.
    pub metrics: Arc<Metrics>,
    /// Where events live ([`EventDeps::memory`](crate::events::EventDeps::memory) for
    /// one process).
    pub events: crate::events::EventDeps,
}

/// Streams of this replica, by ticket id: poked when their ticket changes.
///
/// One stream per ticket: a second FindMatch with the same ticket id (the documented
/// resume) takes the ticket's wake-ups over, and the older stream's receiver closes,
/// which tells it to end ([`Wake::Taken`]).
#[derive(Debug, Default)]
pub(crate) struct Hub {
    streams: Mutex<HashMap<String, Waker>>,
    registrations: AtomicU64,
}

#[derive(Debug)]
struct Waker {
    registration: u64,
    tx: mpsc::Sender<()>,
}

/// A stream's hold on its ticket's wake-ups.
#[derive(Debug)]
pub(crate) struct Registration {
    id: u64,
    rx: mpsc::Receiver<()>,
}

/// Why a stream's wait for its ticket ended.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Wake {
    /// The ticket may have changed: read it again.
    Poked,
    /// A newer stream of the same ticket registered on this replica: this one ends.
    Taken,
}

impl Registration {
    /// Waits for a poke; [`Wake::Taken`] at once (and from then on) when a newer
    /// stream took the ticket over.
    pub(crate) async fn wait(&mut self) -> Wake {
        match self.rx.recv().await {
            Some(()) => Wake::Poked,
            None => Wake::Taken,
        }
    }
}

impl Hub {
    /// Registers a stream of `id`, taking it over from an older one.
    pub(crate) fn register(&self, id: &str) -> Registration {
        let (tx, rx) = mpsc::channel(1);
        let registration = self.registrations.fetch_add(1, Ordering::Relaxed);
        // The older stream's sender is dropped here: its wait answers `Taken`.
        self.lock()
            .insert(id.to_owned(), Waker { registration, tx });
        Registration {
            id: registration,
            rx,
        }
    }

    /// Forgets `registration` of `id`, unless a newer stream took the ticket over.
    pub(crate) fn remove(&self, id: &str, registration: &Registration) {
        let mut streams = self.lock();
        if streams
            .get(id)
            .is_some_and(|w| w.registration == registration.id)
        {
            streams.remove(id);
        }
    }

    /// Wakes the stream of `id`, if it is here.
    pub(crate) fn poke(&self, id: &str) {
        if let Some(waker) = self.lock().get(id) {
            // Full means a wake-up is already pending: enough.
            let _ = waker.tx.try_send(());
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Waker>> {
        self.streams.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// What every handler and background task shares.
pub(crate) struct Shared {
    pub(crate) config: Config,
    pub(crate) deps: Deps,
    pub(crate) hub: Hub,
    /// The FindMatch streams each account holds open here (`queue.max_streams_per_account`).
    pub(crate) searches: StreamsPerAccount,
    pub(crate) shutdown: CancellationToken,
}

impl Shared {
    pub(crate) fn now(&self) -> Millis {
        self.deps.clock.now_ms()
    }
}

/// How long matchmaking remembers the room a player sits in: longer than any
/// match lasts (turn timers end an abandoned one).
pub(crate) const PLAYER_ROOM_TTL_MS: Millis = 24 * 3_600_000;
