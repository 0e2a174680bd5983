//! The browser shape of Play (Watch + one unary call per action): the same events, the
//! same refusals as statuses, the same idempotency, through real tonic clients on a real
//! replica over real Redis; and gRPC-Web over HTTP/1.1 with CORS, as a browser sends it.

use std::net::SocketAddr;
use std::time::Duration;

use basra_engine::{Card, CardSet};
use basra_platform::ServeOptions;
use basra_platform::auth::Role;
use basra_proto::basra::common::v1 as pb;
use basra_proto::basra::game::v1::{
    self as game, PlayResponse, WatchResponse, game_service_client::GameServiceClient,
    play_response::Event as E,
};
use basra_proto::convert::card_to_pb;
use basra_testkit::authed;
use basra_testkit::game_session::*;
use game_session::GameSession;
use game_session::api::web::REJECT_CODE_KEY;
use http_body_util::{BodyExt as _, Full};
use hyper::body::Bytes;
use prost::Message as _;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tonic::transport::Channel;
use tonic::{Code, Status, Streaming};
use uuid::Uuid;

/// The page origin the test replica allows.
const ORIGIN: &str = "http://play.example.test";

/// A player on the browser shape: a Watch stream for events, unary calls for actions.
struct WebPlayer {
    client: GameServiceClient<Channel>,
    token: String,
    room: String,
    seat: u32,
    events: Streaming<WatchResponse>,
    hand: CardSet,
    turn: Option<u32>,
    last_seq: u64,
    log: Vec<PlayResponse>,
}

impl WebPlayer {
    async fn watch(
        channel: Channel,
        tokens: &Tokens,
        user: Uuid,
        seat: u32,
        room: &str,
        last_seen_seq: Option<u64>,
    ) -> WebPlayer {
        let token = tokens.token(user, Role::Player);
        let mut client = GameServiceClient::new(channel);
        let events = client
            .watch(authed(watch_request(room, last_seen_seq), &token))
            .await
            .expect("watch")
            .into_inner();
        WebPlayer {
            client,
            token,
            room: room.into(),
            seat,
            events,
            hand: CardSet::EMPTY,
            turn: None,
            last_seq: last_seen_seq.unwrap_or(0),
            log: Vec::new(),
        }
    }

    /// The next event; logged ones come in seq order, none lost or repeated.
    async fn next(&mut self) -> PlayResponse {
        let response = tokio::time::timeout(WAIT, self.events.message())
            .await
            .expect("an event in time")
            .expect("the stream stays up")
            .expect("the stream goes on");
        let event = response.event.expect("every message holds an event");
        match event.event.as_ref().expect("an event") {
            E::Snapshot(snapshot) => {
                let view = snapshot.view.as_ref().unwrap();
                self.hand = view.hand.iter().map(card).collect();
                self.turn = view.turn;
            }
            logged => {
                assert_eq!(event.seq, self.last_seq + 1, "in order: {logged:?}");
                match logged {
                    E::HandDealt(dealt) => self.hand = dealt.cards.iter().map(card).collect(),
                    E::TurnStarted(turn) => self.turn = Some(turn.seat),
                    E::MatchEnded(_) => self.turn = None,
                    E::CardPlayed(played) if played.seat == self.seat => {
                        self.hand.remove(card(played.card.as_ref().unwrap()));
                    }
                    _ => {}
                }
            }
        }
        self.last_seq = self.last_seq.max(event.seq);
        self.log.push(event.clone());
        event
    }

    async fn until(&mut self, mut pred: impl FnMut(&E) -> bool) -> PlayResponse {
        loop {
            let event = self.next().await;
            if pred(event.event.as_ref().unwrap()) {
                return event;
            }
        }
    }

    fn play_request(&self, card: Card, move_id: &str) -> game::PlayCardRequest {
        game::PlayCardRequest {
            room_id: self.room.clone(),
            card: Some(card_to_pb(card)),
            capture_choice: None,
            based_on_seq: Some(self.last_seq),
            client_move_id: move_id.into(),
        }
    }

    async fn play_card(
        &mut self,
        request: game::PlayCardRequest,
    ) -> Result<game::PlayCardResponse, Status> {
        let request = authed(request, &self.token);
        self.client.play_card(request).await.map(|r| r.into_inner())
    }

    /// Plays whenever it is this seat's turn until the match ends; each play's answer
    /// names the seq of its own `card_played`, which echoes the move id.
    async fn play_on(&mut self) -> game::MatchEnded {
        loop {
            if self.turn == Some(self.seat) {
                self.turn = None;
                let card = self.hand.iter().next().expect("a card to play");
                let id = Uuid::now_v7().to_string();
                let answer = self
                    .play_card(self.play_request(card, &id))
                    .await
                    .expect("my play in my turn is taken");
                assert!(!answer.already_applied);
                let played = self
                    .until(|e| matches!(e, E::CardPlayed(p) if p.client_move_id == id))
                    .await;
                assert_eq!(played.seq, answer.seq, "the answer names the play's event");
                continue;
            }
            if let Some(E::MatchEnded(ended)) = self.next().await.event {
                return ended;
            }
        }
    }
}

fn watch_request(room: &str, last_seen_seq: Option<u64>) -> game::WatchRequest {
    game::WatchRequest {
        room_id: room.into(),
        last_seen_seq,
        spectate: false,
    }
}

/// The status's refusal code, from its `google.rpc.ErrorInfo` reason (domain
/// `basra.online`), which the `basra-reject-code` metadata of the last release repeats.
fn reject_code(status: &Status) -> &str {
    let reason = basra_platform::error::reason_of(status).unwrap_or_default();
    let metadata = status
        .metadata()
        .get(REJECT_CODE_KEY)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    assert_eq!(reason, metadata, "ErrorInfo and the old metadata agree");
    metadata
}

/// A replica over Redis serving `ORIGIN`'s pages.
async fn replica_for_browsers(tokens: &Tokens) -> (SocketAddr, CancellationToken) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let shutdown = CancellationToken::new();
    let session = GameSession::start(
        redis_store(&test_prefix()).await,
        test_config("web", test_timing()),
        None,
        shutdown.clone(),
    );
    let verifier = tokens.issuer.verifier();
    let options = ServeOptions {
        allowed_origins: vec![ORIGIN.into()],
        ..ServeOptions::with_drain(Duration::from_millis(300))
    };
    tokio::spawn({
        let shutdown = shutdown.clone();
        async move { game_session::serve(listener, &session, verifier, shutdown, options).await }
    });
    (addr, shutdown)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_whole_match_with_one_seat_on_play_and_one_on_watch_and_unary_calls() {
    let tokens = Tokens::new();
    let replica = TestApp::builder(&tokens).spawn().await;
    let (room, ua, ub) = replica.room().create().await;
    let mut a = Player::join(replica.channel().await, &tokens, ua, 0, &room, Some(0)).await;
    let mut b = WebPlayer::watch(replica.channel().await, &tokens, ub, 1, &room, Some(0)).await;
    let ta = tokio::spawn(async move {
        let end = a.play_on(None).await;
        (a, end)
    });
    let ended = b.play_on().await;
    let (a, a_end) = ta.await.unwrap();
    assert_eq!(Some(&ended), a_end.as_ref(), "both shapes see the same end");
    assert_eq!(ended.reason, pb::MatchEndReason::TargetReached as i32);
    let plays = |log: &[PlayResponse]| {
        log.iter()
            .filter(|e| matches!(e.event, Some(E::CardPlayed(_))))
            .count()
    };
    assert!(plays(&b.log) >= 48, "at least a whole round was played");
    assert_eq!(plays(&a.log), plays(&b.log));

    // What Watch sent seat 1 is exactly what Play sends seat 1: replay the room from
    // seq 0 on a Play stream and compare event for event up to the match's end.
    let end_seq = b.log.last().unwrap().seq;
    drop(b.events);
    let mut replayed = Player::join(replica.channel().await, &tokens, ub, 1, &room, Some(0)).await;
    let mut play_log = Vec::new();
    while play_log.len() < end_seq as usize {
        play_log.push(replayed.next().await.expect("the log replays"));
    }
    let watched: Vec<_> = b.log.iter().map(|e| (e.seq, e.event.clone())).collect();
    let played: Vec<_> = play_log.iter().map(|e| (e.seq, e.event.clone())).collect();
    assert_eq!(
        watched, played,
        "Watch and Play send seat 1 the same events"
    );
    replica.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unary_actions_answer_plays_refusals_and_retries_as_play_does() {
    let tokens = Tokens::new();
    let store = redis_store(&test_prefix()).await;
    let replica = TestApp::builder(&tokens).store(store.clone()).spawn().await;
    let (room, ua, ub) = replica.room().create().await;
    let mut a = WebPlayer::watch(replica.channel().await, &tokens, ua, 0, &room, Some(0)).await;
    let mut b = WebPlayer::watch(replica.channel().await, &tokens, ub, 1, &room, Some(0)).await;
    a.until(|e| matches!(e, E::TurnStarted(t) if t.seat == 0))
        .await;
    b.until(|e| matches!(e, E::TurnStarted(t) if t.seat == 0))
        .await;

    // Refusals are statuses with the code Play's RejectCode documents.
    let b_card = b.hand.iter().next().unwrap();
    let err = b.play_card(b.play_request(b_card, "b1")).await.unwrap_err();
    assert_eq!(
        (err.code(), reject_code(&err)),
        (Code::FailedPrecondition, "REJECT_CODE_NOT_YOUR_TURN"),
        "{}",
        err.message()
    );
    let err = a.play_card(a.play_request(b_card, "a1")).await.unwrap_err();
    assert_eq!(
        (err.code(), reject_code(&err)),
        (Code::FailedPrecondition, "REJECT_CODE_CARD_NOT_IN_HAND")
    );
    let a_card = a.hand.iter().next().unwrap();
    let mut stale = a.play_request(a_card, "a2");
    stale.based_on_seq = Some(1);
    let err = a.play_card(stale).await.unwrap_err();
    assert_eq!(
        (err.code(), reject_code(&err)),
        (Code::FailedPrecondition, "REJECT_CODE_STALE")
    );
    let mut no_card = a.play_request(a_card, "a3");
    no_card.card = None;
    let err = a.play_card(no_card).await.unwrap_err();
    assert_eq!(
        (err.code(), reject_code(&err)),
        (Code::InvalidArgument, "REJECT_CODE_MALFORMED")
    );
    let long_id = "x".repeat(129);
    let err = a
        .play_card(a.play_request(a_card, &long_id))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument);
    let err = a
        .client
        .ask_rematch(authed(
            game::AskRematchRequest {
                room_id: room.clone(),
            },
            &a.token,
        ))
        .await
        .unwrap_err();
    assert_eq!(
        (err.code(), reject_code(&err)),
        (Code::FailedPrecondition, "REJECT_CODE_NOT_IN_PROGRESS")
    );
    let version = store.load(&room).await.unwrap().unwrap().version;

    // A play, then the same move again: answered with the original seq, not replayed.
    let answer = a.play_card(a.play_request(a_card, "a1")).await.unwrap();
    assert!(!answer.already_applied);
    let played = a
        .until(|e| matches!(e, E::CardPlayed(p) if p.seat == 0))
        .await;
    assert_eq!(played.seq, answer.seq);
    let Some(E::CardPlayed(p)) = &played.event else {
        unreachable!()
    };
    assert_eq!(
        p.client_move_id, "a1",
        "the move id comes back on my stream"
    );
    let mut retry = a.play_request(a_card, "a1");
    retry.based_on_seq = None;
    let again = a.play_card(retry).await.unwrap();
    assert!(again.already_applied);
    assert_eq!(again.seq, answer.seq);
    assert_eq!(store.match_actions(&room).await.unwrap().len(), 1);
    assert!(store.load(&room).await.unwrap().unwrap().version > version);
    let seen_by_b = b
        .until(|e| matches!(e, E::CardPlayed(p) if p.seat == 0))
        .await;
    let Some(E::CardPlayed(p)) = &seen_by_b.event else {
        unreachable!()
    };
    assert!(p.client_move_id.is_empty(), "others' move ids stay theirs");

    // Quick chat: an event for everyone; unknown phrases and floods are refused.
    let chat = |phrase: game::QuickChatPhrase| {
        authed(
            game::QuickChatRequest {
                room_id: room.clone(),
                phrase: phrase as i32,
            },
            &b.token,
        )
    };
    let sent = b
        .client
        .quick_chat(chat(game::QuickChatPhrase::NiceBasra))
        .await
        .unwrap()
        .into_inner();
    let heard = a.until(|e| matches!(e, E::Chat(_))).await;
    assert_eq!(heard.seq, sent.seq);
    assert!(
        matches!(&heard.event, Some(E::Chat(c)) if c.seat == 1 && c.phrase == game::QuickChatPhrase::NiceBasra as i32)
    );
    let err = b
        .client
        .quick_chat(chat(game::QuickChatPhrase::Unspecified))
        .await
        .unwrap_err();
    assert_eq!(
        (err.code(), reject_code(&err)),
        (Code::InvalidArgument, "REJECT_CODE_MALFORMED")
    );
    let mut limited = None;
    for _ in 0..10 {
        if let Err(err) = b
            .client
            .quick_chat(chat(game::QuickChatPhrase::Hello))
            .await
        {
            limited = Some(err);
            break;
        }
    }
    let err = limited.expect("chat is rate limited");
    assert_eq!(
        (err.code(), reject_code(&err)),
        (Code::ResourceExhausted, "REJECT_CODE_RATE_LIMITED")
    );

    // Calls that cannot be tried at all.
    let stranger = tokens.token(Uuid::now_v7(), Role::Player);
    let resign = |room_id: &str, token: &str| {
        authed(
            game::ResignRequest {
                room_id: room_id.into(),
            },
            token,
        )
    };
    let mut client = a.client.clone();
    let err = client.resign(resign(&room, &stranger)).await.unwrap_err();
    assert_eq!(err.code(), Code::PermissionDenied);
    let err = client
        .resign(resign("no-such-room", &a.token))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::NotFound);
    let err = client.resign(resign("", &a.token)).await.unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument);
    let err = client.resign(resign(&room, "garbage")).await.unwrap_err();
    assert_eq!(err.code(), Code::Unauthenticated);
    let err = client
        .watch(authed(watch_request(&room, None), &stranger))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::PermissionDenied);
    let err = client
        .watch(authed(watch_request("no-such-room", None), &a.token))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::NotFound);

    // Resigning ends the match for both; a second resignation is refused.
    let resigned = client
        .resign(resign(&room, &b.token))
        .await
        .unwrap()
        .into_inner();
    let ended = a.until(|e| matches!(e, E::MatchEnded(_))).await;
    assert!(ended.seq >= resigned.seq);
    assert!(matches!(
        &ended.event,
        Some(E::MatchEnded(m)) if m.reason == pb::MatchEndReason::Resigned as i32 && m.forfeit_seat == Some(1)
    ));
    let err = client.resign(resign(&room, &b.token)).await.unwrap_err();
    assert_eq!(reject_code(&err), "REJECT_CODE_NOT_IN_PROGRESS");
    // After the match, a rematch request is taken.
    let asked = client
        .ask_rematch(authed(
            game::AskRematchRequest {
                room_id: room.clone(),
            },
            &a.token,
        ))
        .await
        .unwrap()
        .into_inner();
    let offered = b.until(|e| matches!(e, E::RematchOffered(_))).await;
    assert_eq!(offered.seq, asked.seq);
    replica.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_watch_disconnects_the_seat_and_a_new_one_resumes_from_its_seq() {
    let tokens = Tokens::new();
    let replica = TestApp::builder(&tokens).spawn().await;
    let (room, ua, ub) = replica.room().create().await;
    let mut a = Player::join(replica.channel().await, &tokens, ua, 0, &room, Some(0)).await;
    let mut b = WebPlayer::watch(replica.channel().await, &tokens, ub, 1, &room, Some(0)).await;
    b.until(|e| matches!(e, E::ConnectionChanged(c) if c.seat == 1))
        .await;
    let seen = b.last_seq;
    // A browser going away: its Watch response is dropped, nothing else is sent.
    drop(b.events);
    a.until(|e| {
        matches!(e, E::ConnectionChanged(c) if c.seat == 1 && c.state == game::ConnectionState::Disconnected as i32)
    })
    .await;
    let mut back =
        WebPlayer::watch(replica.channel().await, &tokens, ub, 1, &room, Some(seen)).await;
    let first = back.next().await;
    assert_eq!(
        first.seq,
        seen + 1,
        "exactly the missed events, no snapshot"
    );
    back.until(|e| {
        matches!(e, E::ConnectionChanged(c) if c.seat == 1 && c.state == game::ConnectionState::Connected as i32)
    })
    .await;
    replica.stop().await;
}

/// One gRPC-Web message frame (flag 0, big-endian length, the message).
fn grpc_web_frame(message: &impl prost::Message) -> Vec<u8> {
    let body = message.encode_to_vec();
    let mut frame = vec![0u8];
    frame.extend_from_slice(&(body.len() as u32).to_be_bytes());
    frame.extend_from_slice(&body);
    frame
}

/// The frames of a gRPC-Web body: (flag, payload).
fn grpc_web_frames(mut body: &[u8]) -> Vec<(u8, Vec<u8>)> {
    let mut frames = Vec::new();
    while body.len() >= 5 {
        let length = u32::from_be_bytes(body[1..5].try_into().unwrap()) as usize;
        frames.push((body[0], body[5..5 + length].to_vec()));
        body = &body[5 + length..];
    }
    frames
}

/// An HTTP/1.1 request to `addr`; the response head and, for `whole`, the whole body
/// (else the body's first chunk).
async fn http1(
    addr: SocketAddr,
    request: http::Request<Full<Bytes>>,
    whole: bool,
) -> (http::response::Parts, Vec<u8>) {
    let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (mut sender, connection) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
            .await
            .unwrap();
    tokio::spawn(connection);
    let response = sender.send_request(request).await.unwrap();
    let (parts, mut body) = response.into_parts();
    let bytes = if whole {
        body.collect().await.unwrap().to_bytes().to_vec()
    } else {
        let frame = tokio::time::timeout(WAIT, body.frame())
            .await
            .expect("a first chunk in time")
            .expect("a chunk")
            .unwrap();
        frame.into_data().unwrap().to_vec()
    };
    (parts, bytes)
}

fn grpc_web_request(
    path: &str,
    token: &str,
    origin: &str,
    frame: Vec<u8>,
) -> http::Request<Full<Bytes>> {
    http::Request::post(path)
        .header("host", "localhost")
        .header("content-type", "application/grpc-web+proto")
        .header("x-grpc-web", "1")
        .header("origin", origin)
        .header("authorization", format!("Bearer {token}"))
        .body(Full::new(frame.into()))
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_endpoint_answers_grpc_web_over_http1_with_cors_for_allowed_origins() {
    let tokens = Tokens::new();
    let (addr, shutdown) = replica_for_browsers(&tokens).await;
    let channel = channel(addr).await;
    let (ua, ub) = (Uuid::now_v7(), Uuid::now_v7());
    let room = Uuid::now_v7().to_string();
    create_room(
        channel.clone(),
        &tokens,
        &room,
        vec![player_seat(ua), player_seat(ub)],
        low_target(),
    )
    .await
    .unwrap();
    let token = tokens.token(ua, Role::Player);

    // The preflight a browser sends first: allowed for the page's origin only.
    let preflight = |origin: &str| {
        http::Request::builder()
            .method("OPTIONS")
            .uri("/basra.game.v1.GameService/QuickChat")
            .header("host", "localhost")
            .header("origin", origin)
            .header("access-control-request-method", "POST")
            .header(
                "access-control-request-headers",
                "authorization,content-type,x-grpc-web,x-user-agent",
            )
            .body(Full::new(Bytes::new()))
            .unwrap()
    };
    let (head, _) = http1(addr, preflight(ORIGIN), true).await;
    assert!(head.status.is_success(), "{:?}", head.status);
    assert_eq!(head.headers["access-control-allow-origin"], ORIGIN);
    let allowed = head.headers["access-control-allow-headers"]
        .to_str()
        .unwrap()
        .to_ascii_lowercase();
    assert!(
        allowed.contains("authorization") && allowed.contains("x-grpc-web"),
        "{allowed}"
    );
    let (head, _) = http1(addr, preflight("http://elsewhere.test"), true).await;
    assert!(
        !head.headers.contains_key("access-control-allow-origin"),
        "another origin is not allowed: {:?}",
        head.headers
    );

    // A unary call: one message frame, then the trailers frame with grpc-status 0.
    let request = grpc_web_request(
        "/basra.game.v1.GameService/QuickChat",
        &token,
        ORIGIN,
        grpc_web_frame(&game::QuickChatRequest {
            room_id: room.clone(),
            phrase: game::QuickChatPhrase::Hello as i32,
        }),
    );
    let (head, body) = http1(addr, request, true).await;
    assert_eq!(head.status, http::StatusCode::OK);
    assert_eq!(head.version, http::Version::HTTP_11);
    assert_eq!(head.headers["access-control-allow-origin"], ORIGIN);
    assert!(
        head.headers["access-control-expose-headers"]
            .to_str()
            .unwrap()
            .contains("grpc-status")
    );
    assert!(
        head.headers["content-type"]
            .to_str()
            .unwrap()
            .starts_with("application/grpc-web")
    );
    let frames = grpc_web_frames(&body);
    assert_eq!(frames.len(), 2, "{frames:?}");
    let answer = game::QuickChatResponse::decode(frames[0].1.as_slice()).unwrap();
    assert!(answer.seq > 0);
    assert_eq!(frames[1].0, 0x80, "the trailers frame");
    let trailers = String::from_utf8(frames[1].1.clone()).unwrap();
    assert!(trailers.contains("grpc-status:0"), "{trailers}");

    // A refusal: the status (and the reject code) readable by the page.
    let request = grpc_web_request(
        "/basra.game.v1.GameService/QuickChat",
        &token,
        ORIGIN,
        grpc_web_frame(&game::QuickChatRequest {
            room_id: room.clone(),
            phrase: 0,
        }),
    );
    let (head, body) = http1(addr, request, true).await;
    // (Trailers-only: in the headers; tonic-web may also send a trailers frame.)
    let all = format!("{:?} {}", head.headers, String::from_utf8_lossy(&body));
    assert!(all.contains(r#""grpc-status": "3""#), "{all}");
    assert!(all.contains("REJECT_CODE_MALFORMED"), "{all}");

    // The server stream over HTTP/1.1: the first chunk is the snapshot's frame.
    let request = grpc_web_request(
        "/basra.game.v1.GameService/Watch",
        &token,
        ORIGIN,
        grpc_web_frame(&watch_request(&room, None)),
    );
    let (head, chunk) = http1(addr, request, false).await;
    assert_eq!(head.status, http::StatusCode::OK);
    assert_eq!(head.headers["access-control-allow-origin"], ORIGIN);
    let frames = grpc_web_frames(&chunk);
    let first = WatchResponse::decode(frames[0].1.as_slice()).unwrap();
    let Some(E::Snapshot(snapshot)) = first.event.unwrap().event else {
        panic!("a snapshot first")
    };
    assert_eq!(snapshot.view.unwrap().your_seat, Some(0));
    shutdown.cancel();
}
