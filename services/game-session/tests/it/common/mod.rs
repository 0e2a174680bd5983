//! Test helpers: replicas on port 0 over real Redis (a unique key prefix per test),
//! tokens minted here, real tonic clients, a fake accounts server recording RecordMatch.
#![allow(dead_code, unreachable_pub, missing_docs)]

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use basra_engine::{Card, CardSet};
use basra_platform::auth::ServiceCredentials;
use basra_platform::auth::{Caller, Role, SigningKey, TokenIssuer};
use basra_proto::basra::accounts::v1 as acc;
use basra_proto::basra::common::v1 as pb;
use basra_proto::basra::game::v1::{
    self as game, CreateRoomRequest, PlayRequest, PlayResponse, SeatAssignment,
    game_internal_service_client::GameInternalServiceClient,
    game_service_client::GameServiceClient, play_request::Kind, play_response::Event as E,
    seat_assignment::Occupant,
};
use game_session::GameSession;
use game_session::room::timing::Timing;
use game_session::{AccountsLink, RedisStore, RoomStore, ServiceConfig};
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tonic::transport::Channel;
use tonic::{Request, Status, Streaming};
use uuid::Uuid;

pub const WAIT: Duration = Duration::from_secs(20);

pub fn redis_url() -> String {
    std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into())
}

/// A unique key prefix, so tests never see each other's keys.
pub fn prefix() -> String {
    format!("test-gs-{}", Uuid::now_v7().simple())
}

/// Where the tests' Redis Cluster is: `REDIS_CLUSTER_URL` (comma-separated nodes), else
/// the Makefile's default (`scripts/redis-cluster.sh start`).
pub fn redis_cluster_url() -> String {
    std::env::var("REDIS_CLUSTER_URL").unwrap_or_else(|_| {
        "redis://127.0.0.1:7001,redis://127.0.0.1:7002,redis://127.0.0.1:7003".into()
    })
}

/// A Redis store; panics (the test fails) when Redis is unreachable.
pub async fn redis_store(prefix: &str) -> Arc<dyn RoomStore> {
    redis_store_at(&redis_url(), prefix).await
}

/// A Redis store on the test cluster; panics (the test fails) when it is unreachable.
pub async fn cluster_store(prefix: &str) -> Arc<dyn RoomStore> {
    redis_store_at(&redis_cluster_url(), prefix).await
}

/// A Redis store at `url` (one node or a cluster); panics when it is unreachable.
pub async fn redis_store_at(url: &str, prefix: &str) -> Arc<dyn RoomStore> {
    let store = RedisStore::connect(url, prefix, 600, CancellationToken::new())
        .await
        .unwrap_or_else(|err| {
            panic!("Redis at {url} is required (a cluster: scripts/redis-cluster.sh start): {err}")
        });
    Arc::new(store)
}

pub fn timing() -> Timing {
    Timing {
        turn_ms: 60_000,
        grace_ms: 60_000,
        bot_delay_ms: 0,
        rematch_ms: 60_000,
        turn_slack_ms: 0,
    }
}

pub fn config(replica: &str, timing: Timing) -> ServiceConfig {
    ServiceConfig {
        replica: replica.into(),
        timing,
        max_streams: 100,
        streams_per_account: Default::default(),
        join_concurrency: 16,
        join_timeout: Duration::from_secs(5),
        timer_poll: Duration::from_millis(20),
        resync: Duration::from_millis(500),
        lease: Duration::from_millis(600),
        bots: Default::default(),
        revocations: Default::default(),
    }
}

pub struct Tokens {
    pub issuer: Arc<TokenIssuer>,
}

impl Tokens {
    pub fn new() -> Tokens {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_env("TEST_LOG"))
            .with_test_writer()
            .try_init();
        Tokens {
            issuer: Arc::new(TokenIssuer::new(
                SigningKey::generate(),
                "basra-accounts",
                "basra",
            )),
        }
    }

    pub fn token(&self, user_id: Uuid, role: Role) -> String {
        self.issuer
            .issue(
                &Caller {
                    user_id,
                    role,
                    guest: false,
                },
                Duration::from_secs(600),
            )
            .unwrap()
            .token
    }

    pub fn service(&self) -> String {
        self.token(Uuid::now_v7(), Role::Service)
    }

    pub fn service_credentials(&self) -> ServiceCredentials {
        ServiceCredentials::Issuer(
            Arc::clone(&self.issuer),
            Caller {
                user_id: Uuid::now_v7(),
                role: Role::Service,
                guest: false,
            },
        )
    }
}

pub struct Replica {
    pub addr: SocketAddr,
    pub shutdown: CancellationToken,
    pub metrics: Arc<game_session::metrics::GameMetrics>,
    pub handle: JoinHandle<Result<(), game_session::GameError>>,
}

impl Replica {
    pub async fn spawn(
        store: Arc<dyn RoomStore>,
        tokens: &Tokens,
        config: ServiceConfig,
        accounts: Option<AccountsLink>,
    ) -> Replica {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let shutdown = CancellationToken::new();
        let verifier = tokens.issuer.verifier();
        let background = shutdown.child_token();
        let session = GameSession::start(store, config, accounts, background.clone());
        let metrics = Arc::clone(session.replica().metrics());
        let handle = tokio::spawn({
            let shutdown = shutdown.clone();
            async move {
                let served = game_session::serve(
                    listener,
                    &session,
                    verifier,
                    shutdown,
                    Duration::from_millis(300),
                )
                .await;
                background.cancel();
                served
            }
        });
        Replica {
            addr,
            shutdown,
            metrics,
            handle,
        }
    }

    pub async fn channel(&self) -> Channel {
        channel(self.addr).await
    }

    pub async fn stop(self) {
        self.shutdown.cancel();
        let _ = tokio::time::timeout(Duration::from_secs(5), self.handle).await;
    }
}

pub async fn channel(addr: SocketAddr) -> Channel {
    tonic::transport::Endpoint::from_shared(format!("http://{addr}"))
        .unwrap()
        .connect()
        .await
        .unwrap()
}

pub fn authed<T>(message: T, token: &str) -> Request<T> {
    let mut request = Request::new(message);
    request
        .metadata_mut()
        .insert("authorization", format!("Bearer {token}").parse().unwrap());
    request
}

pub fn player_seat(user: Uuid) -> SeatAssignment {
    SeatAssignment {
        occupant: Some(Occupant::UserId(user.to_string())),
        ..Default::default()
    }
}

pub fn bot_seat(level: pb::BotLevel) -> SeatAssignment {
    SeatAssignment {
        occupant: Some(Occupant::Bot(game::BotSeat {
            level: level as i32,
        })),
        ..Default::default()
    }
}

pub fn low_target() -> pb::RuleSettings {
    pb::RuleSettings {
        target_score: Some(1),
        ..Default::default()
    }
}

/// A fresh room on `replica` for two new players (target score 1): its id and the players.
pub async fn two_player_room(replica: &Replica, tokens: &Tokens) -> (String, Uuid, Uuid) {
    let (ua, ub) = (Uuid::now_v7(), Uuid::now_v7());
    let room = Uuid::now_v7().to_string();
    create_room(
        replica.channel().await,
        tokens,
        &room,
        vec![player_seat(ua), player_seat(ub)],
        low_target(),
    )
    .await
    .unwrap();
    (room, ua, ub)
}

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

/// A player's stream, with a model of what the player knows.
pub struct Player {
    pub user: Uuid,
    pub seat: u32,
    pub tx: mpsc::Sender<PlayRequest>,
    pub events: Streaming<PlayResponse>,
    /// The cards the player holds, from its own events.
    pub hand: CardSet,
    /// Every event received, in order.
    pub log: Vec<PlayResponse>,
    pub last_seq: u64,
    pub moves: u32,
    /// Whose turn it is, as far as this player has seen and not yet acted on.
    pub turn: Option<u32>,
}

pub fn card(c: &pb::Card) -> Card {
    basra_proto::convert::card_from_pb(c).unwrap()
}

pub fn join_message(room_id: &str, last_seen_seq: Option<u64>) -> PlayRequest {
    PlayRequest {
        kind: Some(Kind::Join(game::Join {
            room_id: room_id.into(),
            last_seen_seq,
            spectate: false,
        })),
    }
}

/// A Join that watches `room_id` as a spectator, from the start.
pub fn spectate_message(room_id: &str) -> PlayRequest {
    PlayRequest {
        kind: Some(Kind::Join(game::Join {
            room_id: room_id.into(),
            last_seen_seq: None,
            spectate: true,
        })),
    }
}

/// Opens a Play stream and sends Join; the error status if the server refuses.
pub async fn open(
    channel: Channel,
    token: &str,
    join: PlayRequest,
) -> Result<(mpsc::Sender<PlayRequest>, Streaming<PlayResponse>), Status> {
    let (tx, rx) = mpsc::channel(16);
    tx.send(join).await.unwrap();
    let request = authed(tokio_stream::wrappers::ReceiverStream::new(rx), token);
    let response = GameServiceClient::new(channel).play(request).await?;
    Ok((tx, response.into_inner()))
}

impl Player {
    pub async fn join(
        channel: Channel,
        tokens: &Tokens,
        user: Uuid,
        seat: u32,
        room_id: &str,
        last_seen_seq: Option<u64>,
    ) -> Player {
        let token = tokens.token(user, Role::Player);
        let (tx, events) = open(channel, &token, join_message(room_id, last_seen_seq))
            .await
            .expect("join");
        Player {
            user,
            seat,
            tx,
            events,
            hand: CardSet::EMPTY,
            log: Vec::new(),
            last_seq: last_seen_seq.unwrap_or(0),
            moves: 0,
            turn: None,
        }
    }

    /// The next event, checked against what this seat may know.
    pub async fn next(&mut self) -> Result<PlayResponse, Status> {
        let event = tokio::time::timeout(WAIT, self.events.message())
            .await
            .expect("an event in time")?
            .ok_or_else(|| Status::ok("stream ended"))?;
        self.observe(&event);
        Ok(event)
    }

    /// Updates the model and checks that nothing hidden shows up.
    pub fn observe(&mut self, event: &PlayResponse) {
        match event.event.as_ref().expect("an event") {
            E::Snapshot(snapshot) => {
                let view = snapshot.view.as_ref().unwrap();
                assert_eq!(view.your_seat, Some(self.seat));
                self.hand = view.hand.iter().map(card).collect();
                self.turn = view.turn;
                assert_eq!(
                    view.hand_counts
                        .get(self.seat as usize)
                        .copied()
                        .unwrap_or(0) as usize,
                    self.hand.len()
                );
                assert!(event.seq >= self.last_seq || self.last_seq == 0);
            }
            E::Rejected(_) | E::Pong(_) => {
                assert_eq!(event.seq, self.last_seq, "local events repeat the last seq");
            }
            logged => {
                assert_eq!(
                    event.seq,
                    self.last_seq + 1,
                    "logged events arrive in order, none lost or repeated: {logged:?}"
                );
                match logged {
                    // A new match (a rematch) starts with empty hands.
                    E::MatchStarted(_) => self.hand = CardSet::EMPTY,
                    E::TurnStarted(turn) => self.turn = Some(turn.seat),
                    E::MatchEnded(_) => self.turn = None,
                    E::HandDealt(dealt) => {
                        let cards: CardSet = dealt.cards.iter().map(card).collect();
                        assert!(cards.len() == 4 || cards.is_empty());
                        assert!(!cards.is_empty(), "a seat always gets its own deal");
                        assert!(self.hand.is_empty(), "deals come when hands are empty");
                        self.hand = cards;
                        assert_eq!(dealt.hand_counts[self.seat as usize], 4);
                    }
                    E::CardPlayed(played) => {
                        let c = card(played.card.as_ref().unwrap());
                        if played.seat == self.seat {
                            assert!(self.hand.contains(c), "I played a card of mine");
                            self.hand.remove(c);
                        } else {
                            assert!(
                                !self.hand.contains(c),
                                "another seat played {c}, which I was shown as mine"
                            );
                            assert!(
                                played.client_move_id.is_empty(),
                                "others' move ids stay theirs"
                            );
                        }
                    }
                    _ => {}
                }
            }
        }
        if !matches!(event.event, Some(E::Rejected(_)) | Some(E::Pong(_))) {
            self.last_seq = self.last_seq.max(event.seq);
        }
        self.log.push(event.clone());
    }

    pub async fn send(&self, kind: Kind) {
        self.tx
            .send(PlayRequest { kind: Some(kind) })
            .await
            .unwrap();
    }

    pub async fn play(&mut self, card: Card, move_id: &str) {
        self.moves += 1;
        self.send(Kind::PlayCard(game::PlayCard {
            card: Some(basra_proto::convert::card_to_pb(card)),
            capture_choice: None,
            based_on_seq: Some(self.last_seq),
            client_move_id: move_id.into(),
        }))
        .await;
    }

    /// Plays whenever it is this seat's turn until the match ends (or `stop_after` of
    /// this seat's plays have been made); returns the MatchEnded if it came.
    pub async fn play_on(&mut self, stop_after: Option<u32>) -> Option<game::MatchEnded> {
        loop {
            if stop_after.is_some_and(|n| self.moves >= n) {
                return None;
            }
            if self.turn == Some(self.seat) {
                // Once per turn: the next TurnStarted sets it again.
                self.turn = None;
                let card = self.hand.iter().next().expect("a card to play");
                let id = Uuid::now_v7().to_string();
                self.play(card, &id).await;
                continue;
            }
            let event = self.next().await.expect("the stream stays up");
            match event.event.unwrap() {
                E::MatchEnded(ended) => return Some(ended),
                E::Rejected(rejected) => panic!("unexpected reject: {rejected:?}"),
                _ => {}
            }
        }
    }

    /// Reads events until every play this seat sent has come back as its `card_played`.
    pub async fn until_own_plays_applied(&mut self) {
        let seat = self.seat;
        let own = |log: &[PlayResponse]| {
            log.iter()
                .filter(|e| matches!(&e.event, Some(E::CardPlayed(p)) if p.seat == seat))
                .count()
        };
        while own(&self.log) < self.moves as usize {
            self.next().await.expect("the stream stays up");
        }
    }

    /// Reads events until one matches.
    pub async fn until(&mut self, mut pred: impl FnMut(&E) -> bool) -> PlayResponse {
        loop {
            let event = self.next().await.expect("the stream stays up");
            if pred(event.event.as_ref().unwrap()) {
                return event;
            }
        }
    }
}

/// The logged events of a log (no snapshot, reject or pong), by seq.
pub fn logged(log: &[PlayResponse]) -> Vec<&PlayResponse> {
    log.iter()
        .filter(|e| {
            !matches!(
                e.event,
                Some(E::Snapshot(_)) | Some(E::Rejected(_)) | Some(E::Pong(_))
            )
        })
        .collect()
}

/// The display name [`FakeAccounts`] gives a user.
pub fn fake_name(user_id: &str) -> String {
    format!("name-{}", &user_id[user_id.len().saturating_sub(6)..])
}

/// A fake accounts server: records RecordMatch calls by match id; refuses them while
/// `down` is set.
#[derive(Default, Clone)]
pub struct FakeAccounts {
    pub recorded: Arc<Mutex<HashMap<String, (acc::MatchRecord, u32)>>>,
    pub calls: Arc<Mutex<u32>>,
    /// Every presence report received, in order.
    pub presence: Arc<Mutex<Vec<acc::PresenceReport>>>,
}

#[tonic::async_trait]
impl acc::accounts_internal_service_server::AccountsInternalService for FakeAccounts {
    async fn get_players(
        &self,
        request: Request<acc::GetPlayersRequest>,
    ) -> Result<tonic::Response<acc::GetPlayersResponse>, Status> {
        let caller = basra_platform::auth::caller(&request)?;
        basra_platform::auth::require_role(&caller, Role::Service)?;
        let players = request
            .into_inner()
            .user_ids
            .into_iter()
            .map(|user_id| acc::PlayerSummary {
                display_name: fake_name(&user_id),
                user_id,
                ..Default::default()
            })
            .collect();
        Ok(tonic::Response::new(acc::GetPlayersResponse { players }))
    }
    async fn record_match(
        &self,
        request: Request<acc::RecordMatchRequest>,
    ) -> Result<tonic::Response<acc::RecordMatchResponse>, Status> {
        let caller = basra_platform::auth::caller(&request)?;
        basra_platform::auth::require_role(&caller, Role::Service)?;
        *self.calls.lock().unwrap() += 1;
        let record = request.into_inner().record.unwrap();
        let mut recorded = self.recorded.lock().unwrap();
        let already = recorded.contains_key(&record.match_id);
        recorded
            .entry(record.match_id.clone())
            .or_insert((record, 0))
            .1 += 1;
        Ok(tonic::Response::new(acc::RecordMatchResponse {
            rating_changes: Vec::new(),
            already_recorded: already,
        }))
    }
    async fn record_matches(
        &self,
        _: Request<acc::RecordMatchesRequest>,
    ) -> Result<tonic::Response<acc::RecordMatchesResponse>, Status> {
        Err(Status::unimplemented("fake"))
    }
    async fn report_presence(
        &self,
        request: Request<acc::ReportPresenceRequest>,
    ) -> Result<tonic::Response<acc::ReportPresenceResponse>, Status> {
        self.presence
            .lock()
            .unwrap()
            .extend(request.into_inner().reports);
        Ok(tonic::Response::new(acc::ReportPresenceResponse {}))
    }
    async fn send_invite(
        &self,
        _: Request<acc::SendInviteRequest>,
    ) -> Result<tonic::Response<acc::SendInviteResponse>, Status> {
        Err(Status::unimplemented("fake"))
    }
}

/// Serves the fake accounts on `listener` until `shutdown`.
pub fn serve_accounts(
    listener: TcpListener,
    fake: FakeAccounts,
    tokens: &Tokens,
    shutdown: CancellationToken,
) -> JoinHandle<()> {
    let auth = basra_platform::AuthLayer::new(tokens.issuer.verifier(), &[]);
    let routes = tonic::service::Routes::new(
        acc::accounts_internal_service_server::AccountsInternalServiceServer::new(fake),
    );
    tokio::spawn(async move {
        basra_platform::serve(
            listener,
            routes,
            &["basra.accounts.v1.AccountsInternalService"],
            auth,
            shutdown,
            Duration::from_millis(100),
        )
        .await
        .unwrap();
    })
}

/// A two-player room on `replica` (rule `settings`); both players joined from seq 0 and
/// each has seen both connect.
pub async fn two_players(
    replica: &Replica,
    tokens: &Tokens,
    settings: pb::RuleSettings,
) -> (String, Player, Player) {
    let (ua, ub) = (Uuid::now_v7(), Uuid::now_v7());
    let room = Uuid::now_v7().to_string();
    create_room(
        replica.channel().await,
        tokens,
        &room,
        vec![player_seat(ua), player_seat(ub)],
        settings,
    )
    .await
    .unwrap();
    let mut a = Player::join(replica.channel().await, tokens, ua, 0, &room, Some(0)).await;
    let mut b = Player::join(replica.channel().await, tokens, ub, 1, &room, Some(0)).await;
    for p in [&mut a, &mut b] {
        p.until(|e| matches!(e, E::ConnectionChanged(c) if c.seat == 1 && c.state == game::ConnectionState::Connected as i32))
            .await;
    }
    (room, a, b)
}

/// Waits for the stream to end; its final status (`Ok` for a clean end).
pub async fn stream_end(p: &mut Player) -> tonic::Code {
    loop {
        match tokio::time::timeout(WAIT, p.events.message())
            .await
            .expect("the stream ends in time")
        {
            Ok(Some(event)) => p.observe(&event),
            Ok(None) => return tonic::Code::Ok,
            Err(status) => return status.code(),
        }
    }
}
