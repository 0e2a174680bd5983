//! Redis Cluster failover while matches are played: every primary of the test cluster
//! (`REDIS_CLUSTER_URL`, `scripts/redis-cluster.sh start`) hands over to its replica
//! (`CLUSTER FAILOVER`) in turn, while two replicas of the service serve players who
//! keep playing. A client sees at most UNAVAILABLE and resumes from its last seq; no
//! event is lost or repeated (each player's model checks every seq); every match ends
//! and is recorded once through the outbox.
//!
//! This is its own test binary so that no other test shares the cluster while its
//! primaries move.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use basra_platform::auth::Role;
use basra_proto::basra::common::v1 as pb;
use basra_proto::basra::game::v1::{self as game, RejectCode};
use basra_testkit::game_session::*;
use basra_testkit::redis_cluster_url;
use tonic::Code;
use uuid::Uuid;

use basra_proto::basra::game::v1::play_response::Event as E;

/// The test cluster's nodes (primaries and replicas) from `CLUSTER NODES`: address and
/// whether it is a replica.
async fn nodes() -> Vec<(String, bool)> {
    let first = redis_cluster_url()
        .split(',')
        .next()
        .unwrap()
        .trim()
        .to_owned();
    let mut conn = redis::Client::open(first.as_str())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .expect("the test cluster (scripts/redis-cluster.sh start)");
    let text: String = redis::cmd("CLUSTER")
        .arg("NODES")
        .query_async(&mut conn)
        .await
        .unwrap();
    text.lines()
        .filter_map(|line| {
            let mut parts = line.split(' ');
            let _id = parts.next()?;
            let addr = parts.next()?.split('@').next()?.to_owned();
            let flags = parts.next()?;
            (!flags.contains("fail")).then(|| (addr, flags.contains("slave")))
        })
        .collect()
}

/// Promotes every replica in turn with a coordinated `CLUSTER FAILOVER`, waiting for
/// each to report itself primary. Returns how many primaries moved.
async fn fail_over_every_primary() -> usize {
    let replicas: Vec<String> = nodes()
        .await
        .into_iter()
        .filter(|(_, replica)| *replica)
        .map(|(addr, _)| addr)
        .collect();
    assert_eq!(replicas.len(), 3, "the test cluster has 3 replicas");
    for addr in &replicas {
        let mut conn = redis::Client::open(format!("redis://{addr}"))
            .unwrap()
            .get_multiplexed_async_connection()
            .await
            .unwrap();
        let () = redis::cmd("CLUSTER")
            .arg("FAILOVER")
            .query_async(&mut conn)
            .await
            .unwrap();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
        loop {
            let role: Vec<redis::Value> = redis::cmd("ROLE").query_async(&mut conn).await.unwrap();
            if matches!(role.first(), Some(redis::Value::BulkString(r)) if r == b"master") {
                break;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "{addr} becomes primary"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        // Let play go on between two failovers.
        tokio::time::sleep(Duration::from_millis(400)).await;
    }
    replicas.len()
}

/// Plays a seat to the end of the match, resuming whenever the stream breaks. A play in
/// flight when it broke is sent again with the same move id after the resume: applied
/// then, or answered ALREADY_APPLIED. Returns the player and the end.
async fn play_through(
    mut p: Player,
    replicas: Arc<Vec<std::net::SocketAddr>>,
    tokens: Arc<Tokens>,
    room: String,
    breaks: Arc<AtomicU32>,
) -> (Player, game::MatchEnded) {
    let mut pending: Option<(basra_engine::Card, String)> = None;
    let mut attempt = p.seat as usize;
    loop {
        if p.turn == Some(p.seat) && pending.is_none() {
            p.turn = None;
            // Slow enough for the failovers to land mid-match.
            tokio::time::sleep(Duration::from_millis(15)).await;
            let card = p.hand.iter().next().expect("a card to play");
            let id = Uuid::now_v7().to_string();
            // A stream the server has just ended refuses it: the read that follows gets
            // the stream's status, and the play is sent again after the resume.
            p.try_send(play_card(card, &id, Some(p.last_seq))).await;
            pending = Some((card, id));
        }
        let Ok(message) = tokio::time::timeout(WAIT, p.events.message()).await else {
            panic!(
                "no event in {WAIT:?} on room {room}, seat {} (last seq {}, turn {:?}, \
                 pending {pending:?}, {} cards held, {} breaks so far); its last events: {:?}",
                p.seat,
                p.last_seq,
                p.turn,
                p.hand.len(),
                breaks.load(Ordering::Relaxed),
                &p.log[p.log.len().saturating_sub(4)..],
            );
        };
        let status = match message {
            Ok(Some(event)) => {
                p.observe(&event);
                match event.event.unwrap() {
                    E::MatchEnded(ended) => return (p, ended),
                    E::CardPlayed(played)
                        if played.seat == p.seat
                            && pending
                                .as_ref()
                                .is_some_and(|(_, id)| *id == played.client_move_id) =>
                    {
                        pending = None;
                    }
                    E::Rejected(r) if r.code == RejectCode::AlreadyApplied as i32 => {
                        assert!(
                            pending
                                .as_ref()
                                .is_some_and(|(_, id)| *id == r.client_move_id)
                        );
                        pending = None;
                    }
                    E::Rejected(r) => panic!("unexpected reject: {r:?}"),
                    _ => {}
                }
                continue;
            }
            Ok(None) => tonic::Status::ok("stream ended"),
            Err(status) => status,
        };
        assert_eq!(
            status.code(),
            Code::Unavailable,
            "a client sees at most UNAVAILABLE: {status:?}"
        );
        breaks.fetch_add(1, Ordering::Relaxed);
        // Resume from the last seq seen, on either replica, until one takes it.
        let token = tokens.token(p.user, Role::Player);
        let (tx, events) = loop {
            attempt += 1;
            let addr = replicas[attempt % replicas.len()];
            match open(
                channel(addr).await,
                &token,
                join_message(&room, Some(p.last_seq)),
            )
            .await
            {
                Ok(stream) => break stream,
                Err(status) => {
                    assert_eq!(status.code(), Code::Unavailable, "{status:?}");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        };
        p.tx = tx;
        p.events = events;
        if let Some((card, id)) = &pending {
            p.try_send(play_card(*card, id, None)).await;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn matches_survive_a_failover_of_every_primary() {
    const ROOMS: usize = 6;
    let tokens = Arc::new(Tokens::new());
    let url = redis_cluster_url();
    let prefix = test_prefix();
    let fake = FakeAccounts::default();
    let accounts = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let accounts_addr = accounts.local_addr().unwrap();
    let stop_accounts = tokio_util::sync::CancellationToken::new();
    let accounts_server = serve_accounts(accounts, fake.clone(), &tokens, stop_accounts.clone());
    let link = |tokens: &Tokens| {
        let mut link = game_session::AccountsLink::new(
            &format!("http://{accounts_addr}"),
            tokens.service_credentials(),
        )
        .unwrap();
        link.retry_min = Duration::from_millis(50);
        link.retry_max = Duration::from_millis(400);
        link.poll = Duration::from_millis(50);
        link
    };
    // A longer presence lease than the other tests: a failover may hold a refresh up.
    let cfg = |name: &str| {
        let mut cfg = test_config(name, test_timing());
        cfg.lease = Duration::from_secs(10);
        cfg
    };
    let r1 = TestApp::builder(&tokens)
        .store(redis_store_at(&url, &prefix).await)
        .config(cfg("r1"))
        .accounts(link(&tokens))
        .spawn()
        .await;
    let r2 = TestApp::builder(&tokens)
        .store(redis_store_at(&url, &prefix).await)
        .config(cfg("r2"))
        .accounts(link(&tokens))
        .spawn()
        .await;
    let addrs = Arc::new(vec![r1.addr(), r2.addr()]);

    // Rooms spread over the shards (so over the three primaries), two players each,
    // one on each replica; a match of a few rounds.
    let breaks = Arc::new(AtomicU32::new(0));
    let mut players = Vec::new();
    let mut rooms = Vec::new();
    for _ in 0..ROOMS {
        let (ua, ub) = (Uuid::now_v7(), Uuid::now_v7());
        let room = Uuid::now_v7().to_string();
        create_room(
            r1.channel().await,
            &tokens,
            &room,
            vec![player_seat(ua), player_seat(ub)],
            pb::RuleSettings {
                target_score: Some(21),
                ..Default::default()
            },
        )
        .await
        .unwrap();
        let a = Player::join(r1.channel().await, &tokens, ua, 0, &room, Some(0)).await;
        let b = Player::join(r2.channel().await, &tokens, ub, 1, &room, Some(0)).await;
        for p in [a, b] {
            players.push(tokio::spawn(play_through(
                p,
                addrs.clone(),
                tokens.clone(),
                room.clone(),
                breaks.clone(),
            )));
        }
        rooms.push(room);
    }

    tokio::time::sleep(Duration::from_millis(300)).await;
    let moved = fail_over_every_primary().await;
    assert_eq!(moved, 3);

    let mut ends = Vec::new();
    for p in players {
        let (p, ended) = p.await.unwrap();
        // Every logged event of the seat, across resumes: 1..=n, once each.
        let seqs: Vec<u64> = logged(&p.log).iter().map(|e| e.seq).collect();
        assert_eq!(seqs, (1..=seqs.len() as u64).collect::<Vec<_>>());
        ends.push(ended);
    }
    for pair in ends.chunks(2) {
        assert_eq!(pair[0], pair[1], "both seats see the same end");
        assert_eq!(pair[0].reason, pb::MatchEndReason::TargetReached as i32);
    }

    // Every match recorded once.
    let deadline = tokio::time::Instant::now() + WAIT;
    while fake.recorded.lock().unwrap().len() < ROOMS {
        assert!(tokio::time::Instant::now() < deadline, "every record lands");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_millis(1000)).await;
    // Delivery is at least once (a forwarder slowed down by a failover can see its entry
    // claimed by another replica's forwarder); RecordMatch is idempotent by match id, so
    // each match is one record (the fake answers `already_recorded` to a repeat, as
    // accounts does).
    let deliveries = {
        let recorded = fake.recorded.lock().unwrap();
        assert_eq!(recorded.len(), ROOMS, "one record per match");
        for (record, _) in recorded.values() {
            assert!(rooms.contains(&record.room_id));
        }
        recorded.values().map(|(_, times)| *times).sum::<u32>()
    };
    eprintln!(
        "failover: {moved} primaries moved, {} stream breaks resumed, {deliveries} deliveries for {ROOMS} records",
        breaks.load(Ordering::Relaxed)
    );
    stop_accounts.cancel();
    let _ = accounts_server.await;
    r1.stop().await;
    r2.stop().await;
}
