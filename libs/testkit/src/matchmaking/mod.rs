//! matchmaking started for a test, the way zero-to-production's `spawn_app()` starts its
//! app: [`spawn_app`] serves a replica on 127.0.0.1:0 over a fresh Redis key prefix,
//! with a fake game-session over real gRPC, accounts' ratings, names and invites in
//! memory and time on a manual clock, and answers a [`TestApp`]: the address, a client,
//! the store, and everything the test may steer or look at. Dropping it stops every
//! replica and deletes the prefix's keys. [`TestApp::builder`] changes the settings, the
//! store (memory) or game-session's address; [`TestApp::player`] signs a player in, and
//! [`TestApp::queued_pair`] has two of them search at once.
//!
//! ```no_run
//! # async fn example() {
//! use basra_testkit::matchmaking::{matched, spawn_app};
//!
//! let app = spawn_app().await;
//! let mut pair = app.queued_pair("a", "b").await;
//! let room = matched(&mut pair.sa).await.room_id;
//! assert_eq!(app.game().created()[0].room_id, room);
//! # }
//! ```

mod fakes;
mod player;
mod store;
mod updates;

use std::{net::SocketAddr, sync::Arc, time::Duration};

use basra_platform::{
    Caller, Role, TokenIssuer,
    auth::{ServiceCredentials, SigningKey},
    presence::PresenceReporter,
    revocation::Revocations,
};
use basra_proto::basra::matchmaking::v1::matchmaking_service_client::MatchmakingServiceClient;
use matchmaking::{
    Config, Deps,
    clock::{Clock as _, ManualClock, Millis},
    events::EventDeps,
    metrics::Metrics,
    settings::Settings,
    store::Store,
    upstream::GrpcGame,
};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tonic::transport::Channel;
use uuid::Uuid;

use crate::redis::TestPrefix;

pub use self::fakes::{FakeGame, FakeInvites, MapRatings, NamesFromIds, name_of};
pub use self::player::{Player, QueuedPair, find, join_code, join_id};
pub use self::store::{
    GRACE, PREFIX_TAG, RANKED2, RANKED4, T0, TTL, UNRANKED2, cluster_prefix, memory_store,
    redis_store, test_prefix,
};
pub use self::updates::{WAIT, cancelled, ended, matched, next, next_change, queued};

/// A matchmaking client.
pub type Client = MatchmakingServiceClient<Channel>;

/// The clock's first reading in every app (an instant in 2027).
pub const CLOCK_START: Millis = 1_800_000_000_000;

/// Test settings: fast ticks and heartbeats (real time), a 50-point rating window that
/// grows by 10 a second up to 300, bots after 20 s, tickets kept 15 s without a
/// heartbeat and 30 s for a resume, 3 wrong join codes per window; everything else as
/// shipped.
pub fn test_settings() -> Settings {
    let mut s = Settings::from_env(Vec::<(String, String)>::new()).expect("the shipped settings");
    s.queue.tick_millis = 20;
    s.queue.heartbeat_millis = 100;
    s.queue.window_start = 50.0;
    s.queue.window_growth_per_second = 10.0;
    s.queue.window_max = 300.0;
    s.queue.bot_fill_after_seconds = 20;
    s.queue.ticket_ttl_seconds = 15;
    s.queue.resume_grace_seconds = 30;
    s.rooms.wrong_code_max = 3;
    s
}

/// A replica on [`test_settings`] and Redis, its upstreams faked: see the module docs.
pub async fn spawn_app() -> TestApp {
    TestApp::builder().spawn().await
}

/// What [`TestApp::builder`] starts.
#[derive(Debug)]
pub struct AppBuilder {
    settings: Settings,
    memory: bool,
    game_url: Option<String>,
    events: Option<EventDeps>,
}

impl AppBuilder {
    /// Changes the settings (from [`test_settings`]).
    pub fn settings(mut self, change: impl FnOnce(&mut Settings)) -> AppBuilder {
        change(&mut self.settings);
        self
    }

    /// The first replica keeps its queue and rooms in memory (the embedded dev mode's
    /// store) instead of Redis.
    pub fn memory(mut self) -> AppBuilder {
        self.memory = true;
        self
    }

    /// Every replica keeps its events in `events` (all in memory, notices logged,
    /// unless set).
    pub fn events(mut self, events: EventDeps) -> AppBuilder {
        self.events = Some(events);
        self
    }

    /// The first replica calls game-session at `url` instead of the fake.
    pub fn game_url(mut self, url: impl Into<String>) -> AppBuilder {
        self.game_url = Some(url.into());
        self
    }

    /// Starts the fake game-session and the first replica.
    pub async fn spawn(self) -> TestApp {
        let issuer = Arc::new(TokenIssuer::new(
            SigningKey::generate(),
            "basra-accounts",
            "basra",
        ));
        let shutdown = CancellationToken::new();
        let game = Arc::new(FakeGame::default());
        let game_address = FakeGame::serve(game.clone(), &issuer, shutdown.clone()).await;
        let world = World {
            issuer,
            clock: ManualClock::new(CLOCK_START),
            game,
            game_address,
            ratings: Arc::default(),
            invites: Arc::default(),
            prefix: test_prefix(),
            settings: self.settings,
            revocations: Revocations::default(),
            shutdown,
            events: self.events.unwrap_or_else(EventDeps::memory),
        };
        let store: Arc<dyn Store> = if self.memory {
            memory_store()
        } else {
            redis_store(&world.prefix).await
        };
        let game_url = self
            .game_url
            .unwrap_or_else(|| format!("http://{}", world.game_address));
        let first = world.spawn_replica(store, &game_url).await;
        let client = first.client().await;
        TestApp {
            address: first.address,
            client,
            store: first.store,
            metrics: first.metrics,
            first_shutdown: first.shutdown,
            world,
        }
    }
}

/// What every replica of one app shares: tokens, time, game-session, ratings, invites,
/// the Redis prefix and the settings.
struct World {
    issuer: Arc<TokenIssuer>,
    clock: ManualClock,
    game: Arc<FakeGame>,
    game_address: SocketAddr,
    ratings: Arc<MapRatings>,
    invites: Arc<FakeInvites>,
    prefix: TestPrefix,
    settings: Settings,
    revocations: Revocations,
    shutdown: CancellationToken,
    /// Where every replica keeps its events (memory unless the builder said otherwise).
    events: EventDeps,
}

impl World {
    fn service_token(&self) -> String {
        self.token(&Caller {
            user_id: Uuid::now_v7(),
            role: Role::Service,
            guest: false,
        })
    }

    fn token(&self, caller: &Caller) -> String {
        self.issuer
            .issue(caller, Duration::from_secs(3600))
            .expect("a token")
            .token
    }

    async fn spawn_replica(&self, store: Arc<dyn Store>, game_url: &str) -> Replica {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a loopback port");
        let address = listener.local_addr().expect("a bound address");
        let metrics = Arc::new(Metrics::new());
        let game = GrpcGame::new(
            game_url,
            ServiceCredentials::Static(self.service_token()),
            Duration::from_secs(5),
        )
        .expect("game-session's address");
        let deps = Deps {
            store: store.clone(),
            game: Arc::new(game),
            ratings: self.ratings.clone(),
            names: Arc::new(NamesFromIds),
            invites: self.invites.clone(),
            presence: PresenceReporter::disabled(),
            clock: Arc::new(self.clock.clone()),
            metrics: metrics.clone(),
            events: self.events.clone(),
        };
        let config = Config {
            queue: self.settings.queue.clone(),
            rooms: self.settings.rooms.clone(),
            serving: Duration::from_millis(200).into(),
            revocations: self.revocations.clone(),
            events: self.settings.events.clone(),
        };
        let shutdown = self.shutdown.child_token();
        tokio::spawn(matchmaking::serve(
            listener,
            config,
            self.issuer.verifier(),
            deps,
            shutdown.clone(),
        ));
        Replica {
            address,
            store,
            metrics,
            shutdown,
        }
    }
}

impl Drop for World {
    fn drop(&mut self) {
        // The prefix's keys go after this (TestPrefix's own drop).
        self.shutdown.cancel();
    }
}

/// A running matchmaker and everything its test steers (see the module docs).
pub struct TestApp {
    /// The first replica's address.
    pub address: SocketAddr,
    /// A client of the first replica (clone it: one connection).
    pub client: Client,
    /// The first replica's store (under [`TestApp::prefix`] on Redis, or in memory).
    pub store: Arc<dyn Store>,
    /// The first replica's metrics.
    pub metrics: Arc<Metrics>,
    first_shutdown: CancellationToken,
    world: World,
}

impl std::fmt::Debug for TestApp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestApp")
            .field("address", &self.address)
            .field("prefix", &self.world.prefix)
            .finish_non_exhaustive()
    }
}

impl TestApp {
    /// An app to set up before it starts.
    pub fn builder() -> AppBuilder {
        AppBuilder {
            settings: test_settings(),
            memory: false,
            game_url: None,
            events: None,
        }
    }

    /// Where every replica keeps its events.
    pub fn events(&self) -> &EventDeps {
        &self.world.events
    }

    /// The settings every replica runs on.
    pub fn settings(&self) -> &Settings {
        &self.world.settings
    }

    /// Every replica's clock: move it with `advance` or `set`.
    pub fn clock(&self) -> &ManualClock {
        &self.world.clock
    }

    /// The clock's reading.
    pub fn now_ms(&self) -> Millis {
        self.world.clock.now_ms()
    }

    /// The fake game-session every replica makes rooms in (unless the builder named
    /// another address).
    pub fn game(&self) -> &FakeGame {
        &self.world.game
    }

    /// Ratings and blocks, as accounts would tell them.
    pub fn ratings(&self) -> &MapRatings {
        &self.world.ratings
    }

    /// The invites accounts was handed.
    pub fn invites(&self) -> &FakeInvites {
        &self.world.invites
    }

    /// The banned and deleted accounts every replica refuses.
    pub fn revocations(&self) -> &Revocations {
        &self.world.revocations
    }

    /// The Redis key prefix of every replica's store.
    pub fn prefix(&self) -> &TestPrefix {
        &self.world.prefix
    }

    /// A player token of `user`.
    pub fn token(&self, user: Uuid, guest: bool) -> String {
        self.world.token(&Caller {
            user_id: user,
            role: Role::Player,
            guest,
        })
    }

    /// An operator's token (the admin services).
    pub fn operator_token(&self) -> String {
        self.world.token(&Caller {
            user_id: Uuid::now_v7(),
            role: Role::Operator,
            guest: false,
        })
    }

    /// A service token (what game-session and accounts call with).
    pub fn service_token(&self) -> String {
        self.world.service_token()
    }

    /// A new member account, signed in on the app's client.
    pub fn player(&self) -> Player {
        self.player_as(Uuid::now_v7(), false)
    }

    /// A new guest account, signed in on the app's client.
    pub fn guest(&self) -> Player {
        self.player_as(Uuid::now_v7(), true)
    }

    /// `id` signed in (a guest or not) on the app's client.
    pub fn player_as(&self, id: Uuid, guest: bool) -> Player {
        Player::new(id, self.token(id, guest), self.client.clone())
    }

    /// Two new members search the unranked default queue with tickets `a` then `b`.
    pub async fn queued_pair(&self, a: &str, b: &str) -> QueuedPair {
        let (first, second) = (self.player(), self.player());
        let sa = first.find(a, false).await;
        let sb = second.find(b, false).await;
        QueuedPair {
            a: first,
            b: second,
            sa,
            sb,
        }
    }

    /// A client of the first replica on a connection of its own.
    pub async fn new_client(&self) -> Client {
        connect(self.address).await
    }

    /// The first replica as a [`Replica`] (to list it beside others).
    pub fn first_replica(&self) -> Replica {
        Replica {
            address: self.address,
            store: self.store.clone(),
            metrics: self.metrics.clone(),
            shutdown: self.first_shutdown.clone(),
        }
    }

    /// Another replica on the app's Redis prefix (the same queue and rooms).
    pub async fn spawn_replica(&self) -> Replica {
        let store = redis_store(&self.world.prefix).await;
        self.world
            .spawn_replica(store, &format!("http://{}", self.world.game_address))
            .await
    }
}

/// One replica of an app.
#[derive(Clone)]
pub struct Replica {
    /// Where it serves.
    pub address: SocketAddr,
    /// Its store.
    pub store: Arc<dyn Store>,
    /// Its metrics.
    pub metrics: Arc<Metrics>,
    /// Stops it (the app's drop stops it too).
    pub shutdown: CancellationToken,
}

impl std::fmt::Debug for Replica {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Replica")
            .field("address", &self.address)
            .finish_non_exhaustive()
    }
}

impl Replica {
    /// A client on a new connection.
    pub async fn client(&self) -> Client {
        connect(self.address).await
    }
}

async fn connect(address: SocketAddr) -> Client {
    let channel = tonic::transport::Endpoint::from_shared(format!("http://{address}"))
        .expect("an address")
        .connect()
        .await
        .expect("the replica answers");
    MatchmakingServiceClient::new(channel)
}
