//! The presence lease, end to end: a replica that dies without ending its streams has its
//! players disconnected by another replica once its lease runs out; a replica that finds
//! its own lease swept ends its streams, which resume.

use std::sync::Arc;
use std::time::{Duration, Instant};

use basra_proto::basra::common::v1 as pb;
use basra_proto::basra::game::v1::{self as game, play_response::Event as E};
use basra_testkit::game_session::*;
use game_session::ServiceConfig;
use game_session::store::ALL_SHARDS;
use tokio_util::sync::CancellationToken;
use tonic::Code;
use uuid::Uuid;

/// A replica on its own runtime, so that it can die at once: dropping the runtime drops
/// every task of the replica without running any of its shutdown path.
struct Crashable {
    addr: std::net::SocketAddr,
    runtime: tokio::runtime::Runtime,
}

impl Crashable {
    fn spawn(prefix: &str, tokens: &Tokens, config: ServiceConfig) -> Crashable {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let verifier = tokens.issuer.verifier();
        let prefix = prefix.to_owned();
        runtime.spawn(async move {
            let store = redis_store(&prefix).await;
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            let session =
                game_session::GameSession::start(store, config, None, CancellationToken::new());
            game_session::serve(
                listener,
                &session,
                verifier,
                CancellationToken::new(),
                Duration::from_millis(300),
            )
            .await
        });
        Crashable { addr, runtime }
    }

    fn crash(self) {
        self.runtime.shutdown_background();
    }
}

fn disconnected(seat: u32) -> impl FnMut(&E) -> bool {
    move |e| matches!(e, E::ConnectionChanged(c) if c.seat == seat && c.state == game::ConnectionState::Disconnected as i32)
}

fn connected(seat: u32) -> impl FnMut(&E) -> bool {
    move |e| matches!(e, E::ConnectionChanged(c) if c.seat == seat && c.state == game::ConnectionState::Connected as i32)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crashed_replicas_players_are_disconnected_when_its_lease_runs_out() {
    let tokens = Tokens::new();
    let prefix = test_prefix();
    let lease = Duration::from_millis(600);
    let r1 = TestApp::builder(&tokens)
        .store(redis_store(&prefix).await)
        .spawn()
        .await;
    let r2 = Crashable::spawn(&prefix, &tokens, test_config("r2", test_timing()));
    let (ua, ub) = (Uuid::now_v7(), Uuid::now_v7());
    let room = Uuid::now_v7().to_string();
    create_room(
        r1.channel().await,
        &tokens,
        &room,
        vec![player_seat(ua), player_seat(ub)],
        pb::RuleSettings::default(),
    )
    .await
    .unwrap();
    let mut a = Player::join(r1.channel().await, &tokens, ua, 0, &room, Some(0)).await;
    let mut b = Player::join(channel(r2.addr).await, &tokens, ub, 1, &room, Some(0)).await;
    a.until(connected(1)).await;
    b.until(connected(1)).await;
    // Let r2 refresh its lease a few times: only its death ends it.
    tokio::time::sleep(lease * 2).await;

    let crashed = Instant::now();
    r2.crash();
    let gone = a.until(disconnected(1)).await;
    let waited = crashed.elapsed();
    let Some(E::ConnectionChanged(c)) = &gone.event else {
        unreachable!()
    };
    assert!(
        c.grace_deadline.is_some(),
        "the grace period starts as for any disconnect"
    );
    assert!(
        waited >= lease / 3,
        "not before the lease could have run out ({waited:?})"
    );
    assert!(
        waited < lease * 5,
        "soon after the lease ran out ({waited:?})"
    );
    // The room says so too, and nothing else changed.
    let loaded = redis_store(&prefix)
        .await
        .load(&room)
        .await
        .unwrap()
        .unwrap();
    assert!(!loaded.room.seats[1].connected);
    assert!(loaded.room.seats[0].connected);

    // b resumes on r1 with exactly what it missed (the disconnect), then plays on.
    drop(b.tx);
    let mut b2 = Player::join(r1.channel().await, &tokens, ub, 1, &room, Some(b.last_seq)).await;
    b2.hand = b.hand;
    b2.log = b.log;
    let missed = b2.next().await.unwrap();
    assert_eq!(missed.seq, b.last_seq + 1);
    assert!(disconnected(1)(missed.event.as_ref().unwrap()));
    b2.until(connected(1)).await;
    a.until(connected(1)).await;
    let ta = tokio::spawn(async move {
        a.play_on(Some(2)).await;
        a
    });
    b2.play_on(Some(2)).await;
    ta.await.unwrap();
    r1.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crashed_replicas_player_abandons_after_lease_and_grace() {
    let tokens = Tokens::new();
    let prefix = test_prefix();
    let mut t = test_timing();
    t.grace_ms = 400;
    let r1 = TestApp::builder(&tokens)
        .store(redis_store(&prefix).await)
        .config(test_config("r1", t))
        .spawn()
        .await;
    let r2 = Crashable::spawn(&prefix, &tokens, test_config("r2", t));
    let (ua, ub) = (Uuid::now_v7(), Uuid::now_v7());
    let room = Uuid::now_v7().to_string();
    create_room(
        r1.channel().await,
        &tokens,
        &room,
        vec![player_seat(ua), player_seat(ub)],
        pb::RuleSettings::default(),
    )
    .await
    .unwrap();
    let mut a = Player::join(r1.channel().await, &tokens, ua, 0, &room, Some(0)).await;
    let mut b = Player::join(channel(r2.addr).await, &tokens, ub, 1, &room, Some(0)).await;
    a.until(connected(1)).await;
    b.until(connected(1)).await;
    r2.crash();
    a.until(disconnected(1)).await;
    let ended = a.until(|e| matches!(e, E::MatchEnded(_))).await;
    assert!(matches!(
        &ended.event,
        Some(E::MatchEnded(m)) if m.reason == pb::MatchEndReason::Abandoned as i32
            && m.forfeit_seat == Some(1)
            && m.winner_side == Some(0)
    ));
    r1.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_whose_lease_was_swept_ends_its_streams_and_they_resume() {
    let tokens = Tokens::new();
    let store = redis_store(&test_prefix()).await;
    let replica = TestApp::builder(&tokens)
        .store(Arc::clone(&store))
        .spawn()
        .await;
    let (_room, mut a, mut b) = replica
        .room()
        .settings(pb::RuleSettings::default())
        .join()
        .await;

    // As if the replica had stalled past its lease and another one had swept it.
    let swept = store
        .lease_claim_expired(
            &ALL_SHARDS,
            game_session::room::timing::now_ms() + 3_600_000,
            60_000,
            100,
        )
        .await
        .unwrap();
    assert_eq!(swept.len(), 1, "one live instance");
    assert_eq!(swept[0].seats.len(), 2, "both seats are recorded under it");

    // Its next refresh finds out: both streams end and ask to resume.
    assert_eq!(stream_end(&mut a).await, Code::Unavailable);
    assert_eq!(stream_end(&mut b).await, Code::Unavailable);
    // They resume on the same replica, now under a new instance id, and play on.
    let room = _room;
    let mut a2 = Player::join(replica.channel().await, &tokens, a.user, 0, &room, None).await;
    let mut b2 = Player::join(replica.channel().await, &tokens, b.user, 1, &room, None).await;
    a2.next().await.unwrap();
    b2.next().await.unwrap();
    let ta = tokio::spawn(async move {
        a2.play_on(Some(2)).await;
        a2
    });
    b2.play_on(Some(2)).await;
    ta.await.unwrap();
    let instances = store
        .lease_claim_expired(
            &ALL_SHARDS,
            game_session::room::timing::now_ms() + 3_600_000,
            60_000,
            100,
        )
        .await
        .unwrap();
    assert_eq!(instances.len(), 1);
    assert_ne!(
        instances[0].instance, swept[0].instance,
        "a new instance id"
    );
    replica.stop().await;
}

/// A replica's core on its own runtime, so that it can die at once (as [`Crashable`]).
async fn crashable_session(
    store: Arc<dyn game_session::RoomStore>,
    config: ServiceConfig,
) -> (
    tokio::runtime::Runtime,
    Arc<game_session::replica::walks::Walks>,
) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let (tx, rx) = tokio::sync::oneshot::channel();
    runtime.spawn(async move {
        let session =
            game_session::GameSession::start(store, config, None, CancellationToken::new());
        let _ = tx.send(Arc::clone(session.replica().walks()));
        // The session lives until the runtime dies.
        std::future::pending::<()>().await;
        drop(session);
    });
    (runtime, rx.await.unwrap())
}

fn held(walks: &game_session::replica::walks::Walks) -> Vec<u32> {
    let mut shards: Vec<u32> = walks.held().iter().map(|w| w.shard).collect();
    shards.sort_unstable();
    shards
}

/// Waits (up to 10 s) until `done` holds; how long that took.
async fn eventually(what: &str, mut done: impl FnMut() -> bool) -> Duration {
    let started = Instant::now();
    while !done() {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{what}: not within 10 s"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    started.elapsed()
}

async fn two_replicas_split_the_shard_walks_and_one_takes_over(
    store: Arc<dyn game_session::RoomStore>,
) {
    use game_session::store::SHARDS;
    let all: Vec<u32> = ALL_SHARDS.to_vec();
    let r1_shutdown = CancellationToken::new();
    let r1 = game_session::GameSession::start(
        Arc::clone(&store),
        test_config("r1", test_timing()),
        None,
        r1_shutdown.clone(),
    );
    let r1 = Arc::clone(r1.replica().walks());
    eventually("r1 alone walks every shard", || held(&r1) == all).await;

    // A second replica: each walks half, none twice.
    let (runtime, r2) =
        crashable_session(Arc::clone(&store), test_config("r2", test_timing())).await;
    eventually("the two split the shards", || {
        let (a, b) = (held(&r1), held(&r2));
        let mut both = [a.clone(), b.clone()].concat();
        both.sort_unstable();
        a.len() == SHARDS as usize / 2 && b.len() == SHARDS as usize / 2 && both == all
    })
    .await;

    // r2 crashes (no shutdown path, its walks are not given up): r1 takes them over
    // once their lease runs out.
    let lease = test_config("r2", test_timing()).walk_lease();
    let crashed = Instant::now();
    runtime.shutdown_background();
    eventually("r1 takes over every shard", || held(&r1) == all).await;
    let took = crashed.elapsed();
    assert!(
        took >= lease / 2,
        "not before the crashed replica's lease ran out ({took:?}, lease {lease:?})"
    );
    eprintln!("crashed replica's shards taken over after {took:?} (walk lease {lease:?})");

    // A third replica joins and r1 stops cleanly: the third gets every shard at once,
    // without waiting for r1's lease.
    let r3_shutdown = CancellationToken::new();
    let r3 = game_session::GameSession::start(
        Arc::clone(&store),
        test_config("r3", test_timing()),
        None,
        r3_shutdown.clone(),
    );
    let r3 = Arc::clone(r3.replica().walks());
    eventually("r1 and r3 split the shards", || {
        held(&r3).len() == SHARDS as usize / 2
    })
    .await;
    r1_shutdown.cancel();
    let handed = eventually("r3 takes over from a stopped replica", || held(&r3) == all).await;
    eprintln!("stopped replica's shards taken over after {handed:?} (walk lease {lease:?})");
    r3_shutdown.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_replicas_split_the_shards_and_a_crashed_ones_are_taken_over() {
    two_replicas_split_the_shard_walks_and_one_takes_over(redis_store(&test_prefix()).await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_replicas_split_the_shards_and_a_crashed_ones_are_taken_over_on_a_cluster() {
    two_replicas_split_the_shard_walks_and_one_takes_over(cluster_store(&test_prefix()).await)
        .await;
}

/// What a resumed player saw: the DISCONNECTED announcements of its own seat after it
/// resumed, the automatic plays of its seat, and how long its first event took.
struct Resumed {
    spurious_disconnects: usize,
    automatic_plays: usize,
    first_event: Duration,
}

fn automatic_play_of(seat: u32) -> impl Fn(&E) -> bool {
    move |e| matches!(e, E::CardPlayed(p) if p.seat == seat && p.automatic)
}

/// A replica dies mid-match with players of many rooms on it; each of them resumes at
/// once on the other replica, before the dead replica's presence lease runs out. When the
/// lease is swept, none of them may be announced DISCONNECTED (they are connected) and
/// none of their turns may be played automatically; every resumed stream gets its first
/// event promptly.
///
/// The players share one connection per replica, as a client that multiplexes players
/// (a proxy, a test client, a bot farm) does: the survivor then carries more streams on
/// that connection than before the death (the default limit per connection was once 32:
/// the resumes beyond it waited in the client's HTTP/2 layer, unseen by the server, and
/// their seats were swept disconnected and played automatically).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn players_who_resumed_before_the_lease_ran_out_stay_connected() {
    const ROOMS: usize = 24;
    let tokens = Tokens::new();
    let prefix = test_prefix();
    let mut t = test_timing();
    // Turns long enough that no timer plays while the rooms are set up on a loaded
    // machine (a play based on a seq the timer moved past is refused as stale).
    t.turn_ms = 20_000;
    let r1 = TestApp::builder(&tokens)
        .store(redis_store(&prefix).await)
        .config(test_config("r1", t))
        .spawn()
        .await;
    let r2 = Crashable::spawn(&prefix, &tokens, test_config("r2", t));
    let lease = test_config("r2", t).lease;

    // Each room: seat 0 on r1 (survives), seat 1 on r2 (dies); a few plays each. One
    // connection per replica carries all its players.
    let (to_r1, to_r2) = (r1.channel().await, channel(r2.addr).await);
    let mut rooms = Vec::new();
    for _ in 0..ROOMS {
        let (ua, ub) = (Uuid::now_v7(), Uuid::now_v7());
        let room = Uuid::now_v7().to_string();
        create_room(
            r1.channel().await,
            &tokens,
            &room,
            vec![player_seat(ua), player_seat(ub)],
            pb::RuleSettings::default(),
        )
        .await
        .unwrap();
        let mut a = Player::join(to_r1.clone(), &tokens, ua, 0, &room, Some(0)).await;
        let mut b = Player::join(to_r2.clone(), &tokens, ub, 1, &room, Some(0)).await;
        a.until(connected(1)).await;
        b.until(connected(1)).await;
        rooms.push((room, a, b));
    }
    let mut played = Vec::new();
    for (room, mut a, mut b) in rooms {
        played.push(tokio::spawn(async move {
            let ta = tokio::spawn(async move {
                a.play_on(Some(2)).await;
                a.until_own_plays_applied().await;
                a
            });
            b.play_on(Some(2)).await;
            // b's last play is sent to r2, which is crashed below: seen applied first, or
            // a loaded machine can lose it in the crash, and the resumed seat would wait
            // for a turn it already had (this model of a client does not resend plays).
            b.until_own_plays_applied().await;
            (room, ta.await.unwrap(), b)
        }));
    }
    let mut rooms = Vec::new();
    for room in played {
        rooms.push(room.await.unwrap());
    }
    // Let r2 refresh its lease: only its death ends it.
    tokio::time::sleep(lease).await;

    r2.crash();
    // Every player of r2 resumes on r1 at once, then both seats play on past the time the
    // dead replica's lease runs out and is swept.
    let tokens = Arc::new(tokens);
    let mut resuming = Vec::new();
    for (room, a, b) in rooms {
        let channel = to_r1.clone();
        let tokens = Arc::clone(&tokens);
        resuming.push(tokio::spawn(async move {
            drop(b.tx);
            let asked = Instant::now();
            let resumed = tokio::time::timeout(Duration::from_secs(5), async {
                let mut b2 =
                    Player::join(channel, &tokens, b.user, 1, &room, Some(b.last_seq)).await;
                b2.hand = b.hand;
                b2.moves = b.moves;
                b2.next().await.unwrap();
                b2
            })
            .await;
            let b2 = resumed.unwrap_or_else(|_| {
                panic!("a resumed stream was not served within 5 s (room {room})")
            });
            (room, a, b2, asked.elapsed())
        }));
    }
    let mut resumed = Vec::new();
    for resume in resuming {
        resumed.push(resume.await.unwrap());
    }
    let swept_by = Instant::now() + lease * 4;
    let mut games = Vec::new();
    for (_room, mut a, mut b, first_event) in resumed {
        games.push(tokio::spawn(async move {
            let seen_before = a.log.len();
            let b_seen_before = b.log.len();
            while Instant::now() < swept_by {
                // Slow play: each side takes its time, so that turns span the sweep.
                let ta = tokio::spawn(async move {
                    a.play_on(Some(a.moves + 1)).await;
                    a
                });
                b.play_on(Some(b.moves + 1)).await;
                a = ta.await.unwrap();
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            let after = |log: &[game::PlayResponse], from: usize, pred: &dyn Fn(&E) -> bool| {
                log[from..]
                    .iter()
                    .filter(|e| e.event.as_ref().is_some_and(pred))
                    .count()
            };
            let gone = |e: &E| disconnected(1)(e);
            Resumed {
                spurious_disconnects: after(&a.log, seen_before, &gone)
                    + after(&b.log, b_seen_before, &gone),
                automatic_plays: after(&a.log, seen_before, &automatic_play_of(1))
                    + after(&a.log, seen_before, &automatic_play_of(0)),
                first_event,
            }
        }));
    }
    let mut seen = Vec::new();
    for game in games {
        seen.push(game.await.unwrap());
    }
    let spurious: usize = seen.iter().map(|r| r.spurious_disconnects).sum();
    let automatic: usize = seen.iter().map(|r| r.automatic_plays).sum();
    let slowest = seen.iter().map(|r| r.first_event).max().unwrap();
    eprintln!(
        "{ROOMS} rooms resumed: {spurious} spurious disconnects, {automatic} automatic plays, \
         slowest first event {slowest:?}"
    );
    assert_eq!(spurious, 0, "no resumed seat is announced DISCONNECTED");
    assert_eq!(
        automatic, 0,
        "no connected player's turn is played automatically"
    );
    // The failure this guards against held resumed streams until the join timeout
    // (10 s); a resume takes 11–15 ms on a quiet machine, up to 1.5 s on two cores that
    // other builds hold at load 10 (seen), hence the margin.
    assert!(
        slowest < Duration::from_secs(3),
        "every resumed stream's first event within 3 s ({slowest:?})"
    );
    r1.stop().await;
}
