//! What every FindMatch stream, gRPC handler and background task of a replica shares:
//! the settings ([`Config`]), what the matchmaker talks to ([`Deps`]), and the streams
//! open on this replica ([`Hub`]). It is its own module so that the service and the
//! pairing loop ([`crate::matcher`]) both read it without one importing the other.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use basra_platform::ServeOptions;
use basra_platform::presence::PresenceReporter;
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
    /// The queue.
    pub queue: QueueSettings,
    /// Created rooms.
    pub rooms: RoomSettings,
    /// How the server drains at shutdown and limits its connections.
    pub serving: ServeOptions,
    /// The banned and deleted accounts: refused at every call, their searches ended.
    pub revocations: basra_platform::revocation::Revocations,
}

/// What the matchmaker talks to.
#[derive(Clone)]
pub struct Deps {
    /// Queue and lobby state.
    pub store: Arc<dyn Store>,
    /// game-session.
    pub game: Arc<dyn GameRooms>,
    /// Ratings.
    pub ratings: Arc<dyn RatingSource>,
    /// Players' display names.
    pub names: Arc<dyn NameSource>,
    /// Invites to friends.
    pub invites: Arc<dyn Invites>,
    /// Tells accounts who is searching (their friends see it).
    pub presence: PresenceReporter,
    /// Time.
    pub clock: Arc<dyn Clock>,
    /// Metrics.
    pub metrics: Arc<Metrics>,
}

/// Streams of this replica, by ticket id: poked when their ticket changes.
#[derive(Debug, Default)]
pub(crate) struct Hub {
    streams: Mutex<HashMap<String, mpsc::Sender<()>>>,
}

impl Hub {
    pub(crate) fn register(&self, id: &str) -> mpsc::Receiver<()> {
        let (tx, rx) = mpsc::channel(1);
        self.lock().insert(id.to_owned(), tx);
        rx
    }

    pub(crate) fn remove(&self, id: &str) {
        self.lock().remove(id);
    }

    /// Wakes the stream of `id`, if it is here.
    pub(crate) fn poke(&self, id: &str) {
        if let Some(tx) = self.lock().get(id) {
            // Full means a wake-up is already pending: enough.
            let _ = tx.try_send(());
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, mpsc::Sender<()>>> {
        self.streams.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// What every handler and background task shares.
pub(crate) struct Shared {
    pub(crate) config: Config,
    pub(crate) deps: Deps,
    pub(crate) hub: Hub,
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
