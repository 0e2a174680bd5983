//! Events (issue 47): scheduled knockout, Swiss and arena tournaments, served beside the
//! queue as `basra.matchmaking.v1.EventService` (players) and `EventAdminService`
//! (operators). The pairing and scoring are `basra-events`'; this module stores events,
//! drives their clock and serves the API. Rooms are made and played in game-session as
//! any other.
//!
//! | module | what |
//! |---|---|
//! | [`spec`] | an event's definition, validated ([`EventSpec`](spec::EventSpec)) |
//! | [`model`] | stored records and the rules of registration, withdrawal, check-in (pure) |
//! | [`store`] | the durable store (definitions, entries, results): PostgreSQL or memory |
//! | [`live`] | the live state and the per-event lease: Redis (Cluster-safe) or memory |
//! | [`play`] | a running event's live state and its changes (pure) |
//! | `driver` | the event clock: leases, starts, rooms, results, rounds, the end |
//! | [`notices`] | what players are told (accounts' inbox) |
//! | `seated` | a player's event match in play, which the queue and the lobby refuse another beside |
//! | `api`, `admin` | the gRPC services; `convert` the API forms, `bracket` the earlier rounds |
//! | `snapshot`, `hub`, `names` | what WatchEvent streams show: one snapshot per watched event per replica, shared by its watchers, rebuilt when the event changes (the clock's saves wake it), names kept a minute |

use std::sync::Arc;

use basra_platform::stream_limit::StreamsPerAccount;
use basra_proto::basra::matchmaking::v1::{
    event_admin_service_server::EventAdminServiceServer, event_service_server::EventServiceServer,
};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tonic::service::Routes;

use crate::clock::{Clock, Millis};
use crate::settings::EventSettings;
use crate::upstream::{GameRooms, NameSource, RatingSource};

mod admin;
mod api;
mod bracket;
mod convert;
mod driver;
mod hub;
pub mod live;
pub mod model;
mod names;
pub mod notices;
pub mod play;
pub(crate) mod seated;
mod snapshot;
pub mod spec;
pub mod store;

pub use live::LiveStore;
pub use notices::{Notice, Notices};
pub use store::EventStore;

/// The gRPC names of the two services, for health and reflection.
pub const SERVICE_NAMES: [&str; 2] = [
    "basra.matchmaking.v1.EventService",
    "basra.matchmaking.v1.EventAdminService",
];

/// Where events live and whom their players are told through.
#[derive(Clone)]
pub struct EventDeps {
    /// Definitions, entries, results.
    pub store: Arc<dyn EventStore>,
    /// Live state and leases.
    pub live: Arc<dyn LiveStore>,
    /// "Your match is ready" and the rest.
    pub notices: Arc<dyn Notices>,
}

impl std::fmt::Debug for EventDeps {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventDeps").finish_non_exhaustive()
    }
}

impl EventDeps {
    /// Everything in this process, notices logged (`basra dev`, tests of other parts).
    pub fn memory() -> EventDeps {
        EventDeps {
            store: Arc::new(store::MemoryEventStore::new()),
            live: Arc::new(live::MemoryLiveStore::new()),
            notices: Arc::new(notices::LoggedNotices),
        }
    }
}

/// What the event services and the clock of one replica share.
pub(crate) struct EventsShared {
    pub(crate) settings: EventSettings,
    pub(crate) store: Arc<dyn EventStore>,
    pub(crate) live: Arc<dyn LiveStore>,
    pub(crate) notices: Arc<dyn Notices>,
    pub(crate) game: Arc<dyn GameRooms>,
    pub(crate) ratings: Arc<dyn RatingSource>,
    pub(crate) names: Arc<dyn NameSource>,
    pub(crate) clock: Arc<dyn Clock>,
    /// This replica's name as a lease holder: `mm-<process id>-<uuid>`, so that an
    /// operator (or the fault suite) reading an event's lease in Redis can tell which
    /// process drives it.
    pub(crate) holder: String,
    pub(crate) watchers: StreamsPerAccount,
    /// The snapshots of the events watched on this replica, shared by their watchers.
    pub(crate) hub: hub::Hub<EventsShared>,
    /// Display names for the standings.
    pub(crate) name_cache: names::NameCache,
    pub(crate) shutdown: CancellationToken,
}

impl EventsShared {
    pub(crate) fn now(&self) -> Millis {
        self.clock.now_ms()
    }

    /// The watchers' hub of a replica stopping at `shutdown`.
    pub(crate) fn new_hub(
        settings: &EventSettings,
        shutdown: &CancellationToken,
    ) -> hub::Hub<EventsShared> {
        hub::Hub::new(
            std::time::Duration::from_millis(settings.watch_poll_millis),
            shutdown.clone(),
        )
    }
}

/// The two event services of one replica (clone freely).
#[derive(Clone)]
pub struct EventsApi {
    pub(crate) inner: Arc<EventsShared>,
}

/// Adds the event services to `routes` and starts this replica's event clock (until
/// `shutdown`).
pub(crate) fn mount(
    routes: Routes,
    settings: EventSettings,
    events: EventDeps,
    deps: &crate::Deps,
    shutdown: CancellationToken,
) -> (Routes, JoinHandle<()>) {
    let shared = Arc::new(EventsShared {
        watchers: StreamsPerAccount::new("WatchEvent", settings.max_watchers_per_account),
        hub: EventsShared::new_hub(&settings, &shutdown),
        name_cache: names::NameCache::default(),
        settings,
        store: events.store,
        live: events.live,
        notices: events.notices,
        game: deps.game.clone(),
        ratings: deps.ratings.clone(),
        names: deps.names.clone(),
        clock: deps.clock.clone(),
        holder: format!("mm-{}-{}", std::process::id(), uuid::Uuid::now_v7()),
        shutdown: shutdown.clone(),
    });
    let clock = tokio::spawn(driver::run(shared.clone(), shutdown));
    let api = EventsApi { inner: shared };
    let routes = routes
        .add_service(
            EventServiceServer::new(api.clone())
                .max_decoding_message_size(crate::MAX_MESSAGE_BYTES),
        )
        .add_service(
            EventAdminServiceServer::new(api).max_decoding_message_size(crate::MAX_MESSAGE_BYTES),
        );
    (routes, clock)
}

#[cfg(test)]
mod tests;
