//! Test helpers: a fake game-session (a real tonic server that records
//! calls and can be made unavailable), token minting, and matchmaking
//! replicas on port 0 talking to real Redis.

#![allow(dead_code, unreachable_pub, missing_docs)]

use std::{
    collections::{HashMap, HashSet},
    net::SocketAddr,
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
    time::Duration,
};

use basra_platform::auth::ServiceCredentials;
use basra_platform::{
    AuthLayer, Caller, Role, TokenIssuer,
    auth::{self, SigningKey},
};
use basra_proto::basra::accounts::v1::{SendInviteRequest, SendInviteResponse};
use basra_proto::basra::{
    common::v1::RoomStatus,
    game::v1::{
        CreateRoomRequest, CreateRoomResponse, GetSeatRequest, GetSeatResponse, SeatPlayerRequest,
        SeatPlayerResponse,
        game_internal_service_server::{GameInternalService, GameInternalServiceServer},
        seat_assignment::Occupant as SeatOccupant,
    },
    matchmaking::v1::matchmaking_service_client::MatchmakingServiceClient,
};
use matchmaking::{
    Config, Deps, MatchmakingError,
    clock::ManualClock,
    metrics::Metrics,
    settings::Settings,
    store::{MemoryStore, RedisStore, Store},
    upstream::{GrpcGame, Invites, NameSource, RatingSource},
};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tonic::{Request, Response, Status, transport::Channel};
use uuid::Uuid;

pub use basra_testkit::{authed, redis_cluster_url, redis_url};

/// A key prefix no other test uses. Tests needing Redis fail (never skip) when it is
/// not there.
pub fn unique_prefix() -> String {
    basra_testkit::unique_prefix("test:mm:")
}

pub async fn redis_store(prefix: &str) -> Arc<dyn Store> {
    Arc::new(
        RedisStore::connect(&redis_url(), prefix)
            .await
            .expect("Redis must be reachable at REDIS_URL for these tests"),
    )
}

pub async fn cluster_store(prefix: &str) -> Arc<dyn Store> {
    Arc::new(
        RedisStore::connect(&redis_cluster_url(), prefix)
            .await
            .expect(
                "a Redis Cluster must be reachable at REDIS_CLUSTER_URL for these tests \
         (scripts/redis-cluster.sh start)",
            ),
    )
}

/// A game-session stand-in: records CreateRoom/SeatPlayer, answers like the
/// real one (idempotent), or UNAVAILABLE when told to, or makes the room and
/// loses the reply (what a caller whose deadline passed sees).
#[derive(Default)]
pub struct FakeGame {
    pub unavailable: AtomicBool,
    pub lose_replies: AtomicBool,
    pub created: Mutex<Vec<CreateRoomRequest>>,
    pub seated: Mutex<Vec<SeatPlayerRequest>>,
    rooms: Mutex<HashMap<String, CreateRoomRequest>>,
    finished: Mutex<HashSet<String>>,
    pub calls: AtomicU64,
}

impl FakeGame {
    pub fn set_unavailable(&self, down: bool) {
        self.unavailable.store(down, Ordering::SeqCst);
    }

    /// CreateRoom makes the room, then answers as if the caller's deadline
    /// had passed.
    pub fn set_lose_replies(&self, lose: bool) {
        self.lose_replies.store(lose, Ordering::SeqCst);
    }

    pub fn created(&self) -> Vec<CreateRoomRequest> {
        self.created.lock().unwrap().clone()
    }

    /// game-session forgets the room (as after it closed and expired).
    pub fn forget(&self, room_id: &str) {
        self.rooms.lock().unwrap().remove(room_id);
    }

    /// The room's match ended (GetSeat then answers FINISHED).
    pub fn finish(&self, room_id: &str) {
        self.finished.lock().unwrap().insert(room_id.to_owned());
    }

    /// The room's seats as game-session would hold them: the seats it was
    /// made with, then each SeatPlayer.
    fn seats(&self, room_id: &str) -> Option<Vec<Option<String>>> {
        let room = self.rooms.lock().unwrap().get(room_id).cloned()?;
        let mut seats: Vec<Option<String>> = room
            .seats
            .iter()
            .map(|s| match &s.occupant {
                Some(SeatOccupant::UserId(user)) => Some(user.clone()),
                Some(SeatOccupant::Bot(_)) => Some(String::new()),
                _ => None,
            })
            .collect();
        for seated in self.seated.lock().unwrap().iter() {
            if seated.room_id == room_id {
                let seat = seated.preferred_seat.unwrap_or(0) as usize;
                if let Some(slot) = seats.get_mut(seat) {
                    *slot = Some(seated.user_id.clone());
                }
            }
        }
        Some(seats)
    }
}

#[derive(Clone)]
struct FakeGameService(Arc<FakeGame>);

#[tonic::async_trait]
impl GameInternalService for FakeGameService {
    async fn create_room(
        &self,
        request: Request<CreateRoomRequest>,
    ) -> Result<Response<CreateRoomResponse>, Status> {
        auth::require_role(&auth::caller(&request)?, Role::Service)?;
        self.0.calls.fetch_add(1, Ordering::SeqCst);
        if self.0.unavailable.load(Ordering::SeqCst) {
            return Err(Status::unavailable("fake game-session is down"));
        }
        let request = request.into_inner();
        self.0.created.lock().unwrap().push(request.clone());
        let created = self
            .0
            .rooms
            .lock()
            .unwrap()
            .insert(request.room_id.clone(), request.clone())
            .is_none();
        if self.0.lose_replies.load(Ordering::SeqCst) {
            // tonic's answer when the client's timeout fires first.
            return Err(Status::cancelled("Timeout expired"));
        }
        Ok(Response::new(CreateRoomResponse {
            room_id: request.room_id,
            settings: request.settings,
            created,
        }))
    }

    async fn seat_player(
        &self,
        request: Request<SeatPlayerRequest>,
    ) -> Result<Response<SeatPlayerResponse>, Status> {
        auth::require_role(&auth::caller(&request)?, Role::Service)?;
        self.0.calls.fetch_add(1, Ordering::SeqCst);
        if self.0.unavailable.load(Ordering::SeqCst) {
            return Err(Status::unavailable("fake game-session is down"));
        }
        let request = request.into_inner();
        self.0.seated.lock().unwrap().push(request.clone());
        let rooms = self.0.rooms.lock().unwrap();
        let room = rooms
            .get(&request.room_id)
            .ok_or_else(|| Status::not_found("no such room"))?;
        Ok(Response::new(SeatPlayerResponse {
            seat: request.preferred_seat.unwrap_or(0),
            settings: room.settings,
            ranked: room.ranked,
        }))
    }

    async fn get_seat(
        &self,
        request: Request<GetSeatRequest>,
    ) -> Result<Response<GetSeatResponse>, Status> {
        auth::require_role(&auth::caller(&request)?, Role::Service)?;
        self.0.calls.fetch_add(1, Ordering::SeqCst);
        if self.0.unavailable.load(Ordering::SeqCst) {
            return Err(Status::unavailable("fake game-session is down"));
        }
        self.get_seat_answer(request.get_ref()).map(Response::new)
    }
}

impl FakeGameService {
    fn get_seat_answer(&self, request: &GetSeatRequest) -> Result<GetSeatResponse, Status> {
        let seats = self
            .0
            .seats(&request.room_id)
            .ok_or_else(|| Status::not_found("no such room"))?;
        let status = if self.0.finished.lock().unwrap().contains(&request.room_id) {
            RoomStatus::Finished
        } else if seats.iter().all(Option::is_some) {
            RoomStatus::InProgress
        } else {
            RoomStatus::Waiting
        };
        Ok(GetSeatResponse {
            status: status as i32,
            seat: seats
                .iter()
                .position(|s| s.as_deref() == Some(request.user_id.as_str()))
                .map(|seat| seat as u32),
        })
    }
}

/// Names made from user ids, as [`name_of`] says.
pub struct NamesFromIds;

/// The display name [`NamesFromIds`] gives a user.
pub fn name_of(user_id: &str) -> String {
    format!("name-{}", &user_id[user_id.len().saturating_sub(6)..])
}

#[tonic::async_trait]
impl NameSource for NamesFromIds {
    async fn names(
        &self,
        user_ids: &[String],
    ) -> Result<HashMap<String, String>, MatchmakingError> {
        Ok(user_ids
            .iter()
            .map(|id| (id.clone(), name_of(id)))
            .collect())
    }
}

/// Ratings by user id (1500 when unknown), and who blocks whom (as accounts'
/// GetPlayers tells matchmaking).
#[derive(Default)]
pub struct MapRatings(
    pub Mutex<HashMap<Uuid, f64>>,
    pub Mutex<HashMap<Uuid, Vec<String>>>,
);

impl MapRatings {
    pub fn set(&self, user: Uuid, rating: f64) {
        self.0.lock().unwrap().insert(user, rating);
    }

    /// `blocker` blocks `blocked`.
    pub fn block(&self, blocker: Uuid, blocked: Uuid) {
        self.1
            .lock()
            .unwrap()
            .entry(blocker)
            .or_default()
            .push(blocked.to_string());
    }
}

#[tonic::async_trait]
impl RatingSource for MapRatings {
    async fn rating(&self, user_id: &str) -> Result<f64, MatchmakingError> {
        let user: Uuid = user_id.parse().expect("a user id");
        Ok(*self.0.lock().unwrap().get(&user).unwrap_or(&1500.0))
    }

    async fn searcher(
        &self,
        user_id: &str,
        ranked: bool,
    ) -> Result<matchmaking::upstream::Searcher, MatchmakingError> {
        let user: Uuid = user_id.parse().expect("a user id");
        Ok(matchmaking::upstream::Searcher {
            rating: if ranked {
                self.rating(user_id).await?
            } else {
                0.0
            },
            blocks: self
                .1
                .lock()
                .unwrap()
                .get(&user)
                .cloned()
                .unwrap_or_default(),
        })
    }
}

/// Invites as accounts would take them: recorded, or refused with the status set.
#[derive(Default)]
pub struct FakeInvites {
    pub sent: Mutex<Vec<SendInviteRequest>>,
    pub refuse_with: Mutex<Option<Status>>,
}

#[tonic::async_trait]
impl Invites for FakeInvites {
    async fn send_invite(&self, request: SendInviteRequest) -> Result<SendInviteResponse, Status> {
        if let Some(status) = self.refuse_with.lock().unwrap().clone() {
            return Err(status);
        }
        let mut sent = self.sent.lock().unwrap();
        sent.push(request);
        Ok(SendInviteResponse {
            seq: sent.len() as u64,
        })
    }
}

/// Everything replicas of one test share: tokens, time, game-session,
/// ratings, invites, and the Redis prefix.
pub struct Env {
    pub issuer: Arc<TokenIssuer>,
    pub clock: ManualClock,
    pub game: Arc<FakeGame>,
    pub game_addr: SocketAddr,
    pub ratings: Arc<MapRatings>,
    pub invites: Arc<FakeInvites>,
    pub prefix: String,
    pub settings: Settings,
    pub shutdown: CancellationToken,
    /// The banned and deleted accounts every replica of the test refuses.
    pub revocations: basra_platform::revocation::Revocations,
}

/// Test defaults: fast ticks and heartbeats (real time), everything else on
/// the manual clock.
pub fn test_settings() -> Settings {
    let mut s = Settings::from_env(Vec::<(String, String)>::new()).unwrap();
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

impl Env {
    pub async fn new() -> Env {
        Env::with_settings(test_settings()).await
    }

    pub async fn with_settings(settings: Settings) -> Env {
        let issuer = Arc::new(TokenIssuer::new(
            SigningKey::generate(),
            "basra-accounts",
            "basra",
        ));
        let game = Arc::new(FakeGame::default());
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let game_addr = listener.local_addr().unwrap();
        let shutdown = CancellationToken::new();
        let incoming = tokio_stream::wrappers::TcpListenerStream::new(listener);
        let service = FakeGameService(game.clone());
        let auth = AuthLayer::new(issuer.verifier(), &[]);
        let stop = shutdown.clone();
        tokio::spawn(async move {
            tonic::transport::Server::builder()
                .layer(auth)
                .add_service(GameInternalServiceServer::new(service))
                .serve_with_incoming_shutdown(incoming, stop.cancelled_owned())
                .await
                .unwrap();
        });
        Env {
            issuer,
            clock: ManualClock::new(1_800_000_000_000),
            game,
            game_addr,
            ratings: Arc::new(MapRatings::default()),
            invites: Arc::default(),
            prefix: unique_prefix(),
            settings,
            shutdown,
            revocations: Default::default(),
        }
    }

    pub fn token(&self, user: Uuid, guest: bool) -> String {
        self.issuer
            .issue(
                &Caller {
                    user_id: user,
                    role: Role::Player,
                    guest,
                },
                Duration::from_secs(3600),
            )
            .unwrap()
            .token
    }

    pub fn service_token(&self) -> String {
        self.issuer
            .issue(
                &Caller {
                    user_id: Uuid::now_v7(),
                    role: Role::Service,
                    guest: false,
                },
                Duration::from_secs(3600),
            )
            .unwrap()
            .token
    }

    /// A replica on Redis (shared by every replica of this env).
    pub async fn replica(&self) -> Replica {
        let store = redis_store(&self.prefix).await;
        self.replica_with(store).await
    }

    /// A replica on the given store.
    pub async fn replica_with(&self, store: Arc<dyn Store>) -> Replica {
        self.replica_with_game(store, &format!("http://{}", self.game_addr))
            .await
    }

    pub async fn replica_with_game(&self, store: Arc<dyn Store>, game_url: &str) -> Replica {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let metrics = Arc::new(Metrics::new());
        let deps = Deps {
            store: store.clone(),
            game: Arc::new(
                GrpcGame::new(
                    game_url,
                    ServiceCredentials::Static(self.service_token()),
                    Duration::from_secs(5),
                )
                .unwrap(),
            ),
            ratings: self.ratings.clone(),
            names: Arc::new(NamesFromIds),
            invites: self.invites.clone(),
            presence: basra_platform::presence::PresenceReporter::disabled(),
            clock: Arc::new(self.clock.clone()),
            metrics: metrics.clone(),
        };
        let config = Config {
            queue: self.settings.queue.clone(),
            rooms: self.settings.rooms.clone(),
            serving: Duration::from_millis(200).into(),
            revocations: self.revocations.clone(),
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
            addr,
            store,
            metrics,
            shutdown,
        }
    }

    /// A replica on a fresh in-memory store.
    pub async fn memory_replica(&self) -> Replica {
        self.replica_with(Arc::new(MemoryStore::new())).await
    }
}

impl Drop for Env {
    fn drop(&mut self) {
        self.shutdown.cancel();
        forget_prefix(&self.prefix);
    }
}

/// Deletes a test's keys (best effort, on a plain thread: Drop cannot
/// await).
pub fn forget_prefix(prefix: &str) {
    let pattern = format!("{prefix}:*");
    let _ = std::thread::spawn(move || {
        let Ok(client) = redis::Client::open(redis_url()) else {
            return;
        };
        let Ok(mut conn) = client.get_connection() else {
            return;
        };
        let keys: Vec<String> = redis::cmd("KEYS")
            .arg(&pattern)
            .query(&mut conn)
            .unwrap_or_default();
        for chunk in keys.chunks(500) {
            let _: redis::RedisResult<()> = redis::cmd("UNLINK").arg(chunk).query(&mut conn);
        }
    })
    .join();
}

/// [`forget_prefix`] on the cluster: every node, one key at a time (a multi-key command
/// must stay in one slot; replicas refuse the deletes, their primaries do them).
pub fn forget_cluster_prefix(prefix: &str) {
    let pattern = format!("{prefix}:*");
    let _ = std::thread::spawn(move || {
        for node in redis_cluster_url().split(',') {
            let Ok(mut conn) = redis::Client::open(node.trim()).and_then(|c| c.get_connection())
            else {
                continue;
            };
            let keys: Vec<String> = redis::cmd("KEYS")
                .arg(&pattern)
                .query(&mut conn)
                .unwrap_or_default();
            for key in keys {
                let _: redis::RedisResult<()> = redis::cmd("UNLINK").arg(key).query(&mut conn);
            }
        }
    })
    .join();
}

pub struct Replica {
    pub addr: SocketAddr,
    pub store: Arc<dyn Store>,
    pub metrics: Arc<Metrics>,
    pub shutdown: CancellationToken,
}

impl Replica {
    /// A client on a new connection.
    pub async fn client(&self) -> MatchmakingServiceClient<Channel> {
        let channel = tonic::transport::Endpoint::from_shared(format!("http://{}", self.addr))
            .unwrap()
            .connect()
            .await
            .unwrap();
        MatchmakingServiceClient::new(channel)
    }
}

/// Polls `check` every 10 ms until it holds or `timeout` passes.
pub async fn eventually<F, Fut>(timeout: Duration, mut check: F) -> bool
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        if check().await {
            return true;
        }
        if tokio::time::Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// How many commands clients send Redis that mention `needle` (a key or an argument)
/// within `window`, as Redis's `MONITOR` reports them (a script's own commands, `[0 lua]`,
/// are not counted: a script call is one read).
pub async fn redis_commands_mentioning(needle: &str, window: Duration) -> usize {
    let needle = needle.to_owned();
    tokio::task::spawn_blocking(move || {
        let client = redis::Client::open(redis_url()).expect("REDIS_URL");
        let mut conn = client.get_connection().expect("Redis must be running");
        conn.set_read_timeout(Some(Duration::from_millis(50)))
            .unwrap();
        conn.send_packed_command(&redis::cmd("MONITOR").get_packed_command())
            .unwrap();
        let deadline = std::time::Instant::now() + window;
        let mut seen = 0;
        while std::time::Instant::now() < deadline {
            match conn.recv_response() {
                Ok(redis::Value::SimpleString(line))
                    if line.contains(&needle) && !line.contains(" lua]") =>
                {
                    seen += 1
                }
                Ok(_) => {}
                Err(err) if err.is_timeout() => {}
                Err(err) => panic!("MONITOR: {err}"),
            }
        }
        seen
    })
    .await
    .unwrap()
}
