//! game-session's `spawn_app()`: a replica served on a free port ([`TestApp`]), and the
//! rooms a test starts on it ([`RoomBuilder`]).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use basra_proto::basra::common::v1 as pb;
use basra_proto::basra::game::v1::{
    self as game, CreateRoomRequest, SeatAssignment,
    game_internal_service_client::GameInternalServiceClient, play_response::Event as E,
    seat_assignment::Occupant,
};
use game_session::metrics::GameMetrics;
use game_session::{AccountsLink, GameSession, MemoryStore, RoomStore, ServiceConfig};
use tonic::Status;
use tonic::transport::Channel;
use uuid::Uuid;

use super::{Player, Tokens, redis_store, test_config, test_prefix, test_timing};
use crate::{Served, authed};

/// How long a stopping replica lets its streams drain.
const DRAIN: Duration = Duration::from_millis(300);

/// A replica named `r1` with [`test_timing`], over Redis at a fresh prefix, trusting a
/// fresh [`Tokens`]: see the module docs.
pub async fn spawn_app() -> TestApp {
    TestApp::builder(&Tokens::new()).spawn().await
}

/// A replica under test on 127.0.0.1 and a free port, with what a test reaches it by.
/// Dropped (or [`TestApp::stop`]ped), the replica stops.
pub struct TestApp {
    server: Served,
    tokens: Tokens,
    store: Arc<dyn RoomStore>,
    metrics: Arc<GameMetrics>,
}

/// How a [`TestApp`] starts: over Redis at a fresh prefix, as replica `r1` with
/// [`test_timing`], without accounts, unless told otherwise.
#[must_use = "nothing starts until `spawn`"]
pub struct TestAppBuilder {
    tokens: Tokens,
    store: Option<Arc<dyn RoomStore>>,
    config: ServiceConfig,
    accounts: Option<AccountsLink>,
}

impl std::fmt::Debug for TestAppBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestAppBuilder")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl TestAppBuilder {
    /// This store (shared with other replicas of the test, or built by it).
    pub fn store(mut self, store: Arc<dyn RoomStore>) -> TestAppBuilder {
        self.store = Some(store);
        self
    }

    /// The embedded memory store (the dev mode's).
    pub fn memory(self) -> TestAppBuilder {
        self.store(Arc::new(MemoryStore::new()))
    }

    /// These settings, whole.
    pub fn config(mut self, config: ServiceConfig) -> TestAppBuilder {
        self.config = config;
        self
    }

    /// Records finished matches and asks for names through `accounts`.
    pub fn accounts(mut self, accounts: AccountsLink) -> TestAppBuilder {
        self.accounts = Some(accounts);
        self
    }

    /// Starts the replica and serves it until the app is dropped or stopped.
    pub async fn spawn(self) -> TestApp {
        let store = match self.store {
            Some(store) => store,
            None => redis_store(&test_prefix()).await,
        };
        let verifier = self.tokens.issuer.verifier();
        let mut metrics = None;
        let server = Served::spawn(|listener, shutdown| {
            // The background work stops once the server has drained.
            let background = shutdown.child_token();
            let session = GameSession::start(
                Arc::clone(&store),
                self.config,
                self.accounts,
                background.clone(),
            );
            metrics = Some(Arc::clone(session.replica().metrics()));
            async move {
                let served =
                    game_session::serve(listener, &session, verifier, shutdown, DRAIN).await;
                background.cancel();
                served
            }
        })
        .await;
        TestApp {
            server,
            tokens: self.tokens,
            store,
            metrics: metrics.expect("the replica's metrics"),
        }
    }
}

impl std::fmt::Debug for TestApp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestApp")
            .field("server", &self.server)
            .finish_non_exhaustive()
    }
}

impl TestApp {
    /// How to start one other than [`spawn_app`]'s way, trusting `tokens` (share them
    /// between the replicas of a test).
    pub fn builder(tokens: &Tokens) -> TestAppBuilder {
        TestAppBuilder {
            tokens: tokens.clone(),
            store: None,
            config: test_config("r1", test_timing()),
            accounts: None,
        }
    }

    /// Where it listens.
    pub fn addr(&self) -> SocketAddr {
        self.server.addr()
    }

    /// A new connection to it.
    pub async fn channel(&self) -> Channel {
        self.server.channel().await
    }

    /// The tokens it trusts.
    pub fn tokens(&self) -> &Tokens {
        &self.tokens
    }

    /// A new player in a room of their own against a bot of `level` ([`low_target`]),
    /// their stream joined from the room's start.
    pub async fn player_against_bot(&self, level: pb::BotLevel) -> Player {
        let user = Uuid::now_v7();
        let room = Uuid::now_v7().to_string();
        create_room(
            self.channel().await,
            &self.tokens,
            &room,
            vec![player_seat(user), bot_seat(level)],
            low_target(),
        )
        .await
        .expect("a room against a bot");
        Player::join(self.channel().await, &self.tokens, user, 0, &room, Some(0)).await
    }

    /// Its store.
    pub fn store(&self) -> &Arc<dyn RoomStore> {
        &self.store
    }

    /// Its Prometheus metrics.
    pub fn metrics(&self) -> &Arc<GameMetrics> {
        &self.metrics
    }

    /// A fresh two-player room on it: [`RoomBuilder`].
    pub fn room(&self) -> RoomBuilder<'_> {
        RoomBuilder {
            app: self,
            settings: low_target(),
        }
    }

    /// Stops it and waits (up to 5 s) until its streams have drained.
    pub async fn stop(self) {
        self.server.stop().await;
    }
}

/// A fresh room for two new players, made through `CreateRoom` as matchmaking makes it:
/// to the first match point ([`low_target`]) unless given other rules.
#[derive(Debug)]
#[must_use = "nothing is made until `create` or `join`"]
pub struct RoomBuilder<'a> {
    app: &'a TestApp,
    settings: pb::RuleSettings,
}

impl RoomBuilder<'_> {
    /// These rules.
    pub fn settings(mut self, settings: pb::RuleSettings) -> Self {
        self.settings = settings;
        self
    }

    /// Creates it: its id and its two players, who have not joined.
    pub async fn create(self) -> (String, Uuid, Uuid) {
        let (ua, ub) = (Uuid::now_v7(), Uuid::now_v7());
        let room = Uuid::now_v7().to_string();
        create_room(
            self.app.channel().await,
            &self.app.tokens,
            &room,
            vec![player_seat(ua), player_seat(ub)],
            self.settings,
        )
        .await
        .expect("the room is created");
        (room, ua, ub)
    }

    /// Creates it and joins both players from seq 0: the match has started and each
    /// player has seen both connect.
    pub async fn join(self) -> (String, Player, Player) {
        let app = self.app;
        let (room, ua, ub) = self.create().await;
        let tokens = &app.tokens;
        let mut a = Player::join(app.channel().await, tokens, ua, 0, &room, Some(0)).await;
        let mut b = Player::join(app.channel().await, tokens, ub, 1, &room, Some(0)).await;
        for p in [&mut a, &mut b] {
            p.until(|e| matches!(e, E::ConnectionChanged(c) if c.seat == 1 && c.state == game::ConnectionState::Connected as i32))
                .await;
        }
        (room, a, b)
    }
}

/// A new connection to `addr`.
pub async fn channel(addr: SocketAddr) -> Channel {
    tonic::transport::Endpoint::from_shared(format!("http://{addr}"))
        .expect("a loopback URL")
        .connect()
        .await
        .expect("connect to the replica under test")
}

/// A seat for `user`.
pub fn player_seat(user: Uuid) -> SeatAssignment {
    SeatAssignment {
        occupant: Some(Occupant::UserId(user.to_string())),
        ..Default::default()
    }
}

/// A seat for a bot of `level`.
pub fn bot_seat(level: pb::BotLevel) -> SeatAssignment {
    SeatAssignment {
        occupant: Some(Occupant::Bot(game::BotSeat {
            level: level as i32,
        })),
        ..Default::default()
    }
}

/// Rules that end a match at its first point.
pub fn low_target() -> pb::RuleSettings {
    pb::RuleSettings {
        target_score: Some(1),
        ..Default::default()
    }
}

/// `CreateRoom` as matchmaking calls it (a service token; private, spectators allowed,
/// unranked).
pub async fn create_room(
    channel: Channel,
    tokens: &Tokens,
    room_id: &str,
    seats: Vec<SeatAssignment>,
    settings: pb::RuleSettings,
) -> Result<game::CreateRoomResponse, Status> {
    GameInternalServiceClient::new(channel)
        .create_room(authed(
            CreateRoomRequest {
                room_id: room_id.into(),
                seats,
                settings: Some(settings),
                ranked: false,
                allow_spectators: true,
                visibility: pb::RoomVisibility::Private as i32,
            },
            &tokens.service(),
        ))
        .await
        .map(|r| r.into_inner())
}
