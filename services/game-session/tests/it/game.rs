//! End to end: real replicas on port 0, real Redis (unique prefix per test), real tonic
//! clients. Redis must be reachable: these tests fail, never skip, without it.

use std::time::Duration;

use basra_engine::{Action, Card, Event, Seat, Seed, Settings};
use basra_platform::auth::Role;
use basra_proto::basra::accounts::v1 as acc;
use basra_proto::basra::common::v1 as pb;
use basra_proto::basra::game::v1::{
    self as game, RejectCode, game_admin_service_client::GameAdminServiceClient,
    game_internal_service_client::GameInternalServiceClient, play_request::Kind,
    play_response::Event as E,
};
use basra_testkit::game_session::*;
use basra_testkit::{authed, redis_cluster_url, redis_url};
use game_session::store::ALL_SHARDS;
use sha2::Digest as _;
use tonic::Code;
use uuid::Uuid;

fn settings_low() -> Settings {
    Settings {
        target_score: 1,
        ..Settings::default()
    }
}

/// Replays the match from the revealed seed and the plays both streams saw, and checks
/// that each seat was dealt exactly the engine's cards for it, and nobody else's.
fn check_against_replay(players: &[&Player], ended: &game::MatchEnded, commitment: &[u8]) {
    assert_eq!(
        sha2::Sha256::digest(&ended.seed).as_slice(),
        commitment,
        "seed matches its commitment"
    );
    let seed = Seed(ended.seed.clone().try_into().unwrap());
    let actions: Vec<Action> = logged(&players[0].log)
        .iter()
        .filter_map(|e| match &e.event {
            Some(E::CardPlayed(p)) => Some(Action::Play {
                seat: Seat(p.seat as u8),
                card: card(p.card.as_ref().unwrap()),
                take: None,
            }),
            _ => None,
        })
        .collect();
    let (game, events) =
        basra_engine::replay(settings_low(), seed, &actions).expect("the log replays");
    assert!(game.is_over());
    for player in players {
        let expected: Vec<Vec<Card>> = events
            .iter()
            .filter_map(|e| match e.for_viewer(Some(Seat(player.seat as u8))) {
                Event::HandDealt {
                    cards: Some(cards), ..
                } => Some(cards.iter().collect()),
                _ => None,
            })
            .collect();
        let received: Vec<Vec<Card>> = logged(&player.log)
            .iter()
            .filter_map(|e| match &e.event {
                Some(E::HandDealt(d)) => Some(d.cards.iter().map(card).collect()),
                _ => None,
            })
            .collect();
        assert_eq!(
            received, expected,
            "seat {} got exactly its own cards",
            player.seat
        );
    }
}

fn commitment(player: &Player) -> Vec<u8> {
    player
        .log
        .iter()
        .find_map(|e| match &e.event {
            Some(E::MatchStarted(m)) => Some(m.seed_commitment.clone()),
            _ => None,
        })
        .expect("a match_started")
}

/// Both logs agree on every event both may see in full.
fn same_public_events(a: &Player, b: &Player) {
    let a_events = logged(&a.log);
    for eb in logged(&b.log) {
        if let Some(ea) = a_events.iter().find(|e| e.seq == eb.seq) {
            match (&ea.event, &eb.event) {
                (Some(E::HandDealt(x)), Some(E::HandDealt(y))) => {
                    assert_eq!(x.hand_counts, y.hand_counts);
                    assert_ne!(x.cards, y.cards, "each seat sees its own deal");
                }
                (Some(E::CardPlayed(x)), Some(E::CardPlayed(y))) => {
                    assert_eq!((x.seat, &x.card, &x.taken), (y.seat, &y.card, &y.taken));
                }
                (x, y) => assert_eq!(
                    std::mem::discriminant(x.as_ref().unwrap()),
                    std::mem::discriminant(y.as_ref().unwrap()),
                    "seq {} is the same event for both",
                    eb.seq
                ),
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_players_play_a_whole_match_seeing_only_their_own_cards() {
    let tokens = Tokens::new();
    let store = redis_store(&test_prefix()).await;
    let replica = TestApp::builder(&tokens).store(store).spawn().await;
    let (ua, ub) = (Uuid::now_v7(), Uuid::now_v7());
    let room = Uuid::now_v7().to_string();
    let created = create_room(
        replica.channel().await,
        &tokens,
        &room,
        vec![player_seat(ua), player_seat(ub)],
        low_target(),
    )
    .await
    .unwrap();
    assert!(created.created);
    assert_eq!(created.settings.unwrap().target_score, Some(1));
    let again = create_room(
        replica.channel().await,
        &tokens,
        &room,
        vec![player_seat(ua), player_seat(ub)],
        low_target(),
    )
    .await
    .unwrap();
    assert!(!again.created, "CreateRoom is idempotent by room id");

    let mut a = Player::join(replica.channel().await, &tokens, ua, 0, &room, Some(0)).await;
    let mut b = Player::join(replica.channel().await, &tokens, ub, 1, &room, Some(0)).await;
    let ta = tokio::spawn(async move {
        let end = a.play_on(None).await;
        (a, end)
    });
    let tb = tokio::spawn(async move {
        let end = b.play_on(None).await;
        (b, end)
    });
    let (a, ea) = ta.await.unwrap();
    let (b, eb) = tb.await.unwrap();
    let (ea, eb) = (ea.unwrap(), eb.unwrap());
    assert_eq!(ea, eb, "both see the same end");
    assert_eq!(ea.reason, pb::MatchEndReason::TargetReached as i32);
    assert!(ea.totals.iter().any(|&t| t >= 1));
    check_against_replay(&[&a, &b], &ea, &commitment(&a));
    same_public_events(&a, &b);
    replica.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn players_on_two_replicas_and_one_replica_stops_mid_match() {
    two_replicas_and_one_stops(&redis_url()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn players_on_two_replicas_over_a_redis_cluster_and_one_replica_stops_mid_match() {
    two_replicas_and_one_stops(&redis_cluster_url()).await;
}

async fn two_replicas_and_one_stops(url: &str) {
    let tokens = Tokens::new();
    let prefix = test_prefix();
    let r1 = TestApp::builder(&tokens)
        .store(redis_store_at(url, &prefix).await)
        .spawn()
        .await;
    let r2 = TestApp::builder(&tokens)
        .store(redis_store_at(url, &prefix).await)
        .config(test_config("r2", test_timing()))
        .spawn()
        .await;
    let (room, ua, ub) = r1.room().create().await;
    let mut a = Player::join(r1.channel().await, &tokens, ua, 0, &room, Some(0)).await;
    let mut b = Player::join(r2.channel().await, &tokens, ub, 1, &room, Some(0)).await;

    // Six plays each across the two replicas.
    let ta = tokio::spawn(async move {
        a.play_on(Some(6)).await;
        a
    });
    let tb = tokio::spawn(async move {
        b.play_on(Some(6)).await;
        b
    });
    let mut a = ta.await.unwrap();
    let mut b = tb.await.unwrap();
    // b's last play went through before the stop.
    b.until(|e| matches!(e, E::CardPlayed(p) if p.seat == 1))
        .await;

    // r2 stops: b's stream ends with UNAVAILABLE (or the connection is cut).
    let r2_addr = r2.addr();
    r2.stop().await;
    let end = loop {
        match tokio::time::timeout(WAIT, b.events.message())
            .await
            .unwrap()
        {
            // Events already on their way before the stop are fine, in order.
            Ok(Some(event)) => b.observe(&event),
            Ok(None) => break Code::Ok,
            Err(status) => break status.code(),
        }
    };
    assert!(
        matches!(
            end,
            Code::Unavailable | Code::Unknown | Code::Internal | Code::Cancelled | Code::Ok
        ),
        "{end:?}"
    );
    let _ = r2_addr;

    // Meanwhile a goes on where it can (its turn, if it is).
    let last_b = b
        .log
        .iter()
        .rev()
        .find(|e| !matches!(e.event, Some(E::Rejected(_)) | Some(E::Pong(_))))
        .map_or(0, |e| e.seq);
    // Drain what a has been sent so far.
    tokio::time::sleep(Duration::from_millis(300)).await;
    // b resumes on r1 with its last seq and gets exactly what it missed, then live ones.
    let mut b2 = Player::join(r1.channel().await, &tokens, ub, 1, &room, Some(last_b)).await;
    b2.hand = b.hand;
    b2.log = b.log.clone();
    b2.moves = b.moves;
    let first = b2.next().await.unwrap();
    assert_eq!(
        first.seq,
        last_b + 1,
        "resume starts right after the last seen event"
    );

    let ta = tokio::spawn(async move {
        let end = a.play_on(None).await;
        (a, end)
    });
    let tb = tokio::spawn(async move {
        let end = b2.play_on(None).await;
        (b2, end)
    });
    let (a, ea) = ta.await.unwrap();
    let (b2, eb) = tb.await.unwrap();
    assert_eq!(ea.unwrap(), eb.clone().unwrap());
    // b's whole log, across both replicas, is 1..=n with nothing lost or repeated.
    let seqs: Vec<u64> = logged(&b2.log).iter().map(|e| e.seq).collect();
    assert_eq!(seqs, (1..=seqs.len() as u64).collect::<Vec<_>>());
    check_against_replay(&[&a, &b2], &eb.unwrap(), &commitment(&a));
    same_public_events(&a, &b2);
    r1.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reconnect_with_the_last_seq_gets_exactly_the_missed_events() {
    let tokens = Tokens::new();
    let replica = TestApp::builder(&tokens).spawn().await;
    let (room, ua, ub) = replica.room().create().await;
    let mut a = Player::join(replica.channel().await, &tokens, ua, 0, &room, Some(0)).await;
    let mut b = Player::join(replica.channel().await, &tokens, ub, 1, &room, Some(0)).await;
    // a plays once; b sees it and the turn, then drops.
    a.play_on(Some(1)).await;
    b.until(|e| matches!(e, E::TurnStarted(t) if t.seat == 1))
        .await;
    let seen = b.last_seq;
    let hand = b.hand;
    drop(b);
    // a watches b leave, then plays... it is b's turn, so a only sees the disconnect.
    let gone = a
        .until(|e| matches!(e, E::ConnectionChanged(c) if c.seat == 1 && c.state == game::ConnectionState::Disconnected as i32))
        .await;
    let Some(E::ConnectionChanged(c)) = &gone.event else {
        unreachable!()
    };
    assert_eq!(c.state, game::ConnectionState::Disconnected as i32);
    assert!(c.grace_deadline.is_some());

    let mut b = Player::join(replica.channel().await, &tokens, ub, 1, &room, Some(seen)).await;
    b.hand = hand;
    // Exactly the missed events: the disconnect, then b's own reconnect.
    let missed = b.next().await.unwrap();
    assert_eq!(missed.seq, seen + 1);
    assert!(
        matches!(&missed.event, Some(E::ConnectionChanged(c)) if c.state == game::ConnectionState::Disconnected as i32)
    );
    let back = b.next().await.unwrap();
    assert!(
        matches!(&back.event, Some(E::ConnectionChanged(c)) if c.state == game::ConnectionState::Connected as i32)
    );
    // a is told b came back.
    a.until(|e| matches!(e, E::ConnectionChanged(c) if c.seat == 1 && c.state == game::ConnectionState::Connected as i32)).await;
    // The game goes on from where it was.
    let card = b.hand.iter().next().unwrap();
    b.play(card, "m1").await;
    b.until(|e| matches!(e, E::CardPlayed(p) if p.seat == 1))
        .await;
    replica.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retried_play_is_applied_once() {
    let tokens = Tokens::new();
    let store = redis_store(&test_prefix()).await;
    let replica = TestApp::builder(&tokens).store(store.clone()).spawn().await;
    let (room, ua, _) = replica.room().create().await;
    let mut a = Player::join(replica.channel().await, &tokens, ua, 0, &room, Some(0)).await;
    a.until(|e| matches!(e, E::TurnStarted(t) if t.seat == 0))
        .await;
    let card = a.hand.iter().next().unwrap();
    a.play(card, "move-1").await;
    let played = a.until(|e| matches!(e, E::CardPlayed(_))).await;
    let Some(E::CardPlayed(p)) = &played.event else {
        unreachable!()
    };
    assert_eq!(p.client_move_id, "move-1");
    a.until(|e| matches!(e, E::TurnStarted(_))).await;
    let version = store.load(&room).await.unwrap().unwrap().version;

    // The same move again (e.g. the answer was lost): answered, not applied.
    a.send(Kind::PlayCard(game::PlayCard {
        card: Some(basra_proto::convert::card_to_pb(card)),
        capture_choice: None,
        based_on_seq: None,
        client_move_id: "move-1".into(),
    }))
    .await;
    let answer = a.until(|e| matches!(e, E::Rejected(_))).await;
    let Some(E::Rejected(r)) = &answer.event else {
        unreachable!()
    };
    assert_eq!(r.code, RejectCode::AlreadyApplied as i32);
    assert_eq!(r.applied_seq, Some(played.seq));
    assert_eq!(r.client_move_id, "move-1");
    // And from a new stream (a reconnect), too.
    let mut again = Player::join(replica.channel().await, &tokens, ua, 0, &room, None).await;
    again.next().await.unwrap(); // snapshot
    again
        .send(Kind::PlayCard(game::PlayCard {
            card: Some(basra_proto::convert::card_to_pb(card)),
            capture_choice: None,
            based_on_seq: None,
            client_move_id: "move-1".into(),
        }))
        .await;
    let answer = again.until(|e| matches!(e, E::Rejected(_))).await;
    assert!(
        matches!(&answer.event, Some(E::Rejected(r)) if r.code == RejectCode::AlreadyApplied as i32 && r.applied_seq == Some(played.seq))
    );
    let loaded = store.load(&room).await.unwrap().unwrap();
    // Only connection changes happened since: no second play.
    assert_eq!(store.match_actions(&room).await.unwrap().len(), 1);
    assert_eq!(loaded.room.action_count, 1);
    assert!(loaded.version >= version);
    replica.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn illegal_plays_leave_the_room_unchanged() {
    let tokens = Tokens::new();
    let store = redis_store(&test_prefix()).await;
    let replica = TestApp::builder(&tokens).store(store.clone()).spawn().await;
    let (room, ua, ub) = replica.room().create().await;
    let mut a = Player::join(replica.channel().await, &tokens, ua, 0, &room, Some(0)).await;
    let mut b = Player::join(replica.channel().await, &tokens, ub, 1, &room, Some(0)).await;
    a.until(|e| matches!(e, E::ConnectionChanged(c) if c.seat == 1))
        .await;
    b.until(|e| matches!(e, E::ConnectionChanged(c) if c.seat == 1))
        .await;
    let before = store.load(&room).await.unwrap().unwrap();

    // Not b's turn.
    let b_card = b.hand.iter().next().unwrap();
    b.play(b_card, "b1").await;
    reject(&mut b, RejectCode::NotYourTurn).await;
    // A card a does not hold.
    let not_mine = b_card;
    a.play(not_mine, "a1").await;
    reject(&mut a, RejectCode::CardNotInHand).await;
    // A stale play: based on an old seq.
    a.send(Kind::PlayCard(game::PlayCard {
        card: Some(basra_proto::convert::card_to_pb(
            a.hand.iter().next().unwrap(),
        )),
        capture_choice: None,
        based_on_seq: Some(1),
        client_move_id: "a2".into(),
    }))
    .await;
    reject(&mut a, RejectCode::Stale).await;
    // A malformed card.
    a.send(Kind::PlayCard(game::PlayCard {
        card: Some(pb::Card { rank: 0, suit: 9 }),
        capture_choice: None,
        based_on_seq: None,
        client_move_id: "a3".into(),
    }))
    .await;
    reject(&mut a, RejectCode::Malformed).await;
    // An impossible named capture.
    a.send(Kind::PlayCard(game::PlayCard {
        card: Some(basra_proto::convert::card_to_pb(
            a.hand.iter().next().unwrap(),
        )),
        capture_choice: Some(game::CaptureChoice {
            cards: vec![basra_proto::convert::card_to_pb(not_mine)],
        }),
        based_on_seq: None,
        client_move_id: "a4".into(),
    }))
    .await;
    reject(&mut a, RejectCode::IllegalCapture).await;
    // Chat is fine, and a rejected move id can be used again.
    let after = store.load(&room).await.unwrap().unwrap();
    assert_eq!(after.version, before.version, "nothing was written");
    assert_eq!(after.room.seq, before.room.seq);
    assert_eq!(
        serde_json::to_string(&after.room).unwrap(),
        serde_json::to_string(&before.room).unwrap()
    );
    let card = a.hand.iter().next().unwrap();
    a.play(card, "a1").await;
    a.until(|e| matches!(e, E::CardPlayed(p) if p.seat == 0))
        .await;
    replica.stop().await;
}

async fn reject(p: &mut Player, code: RejectCode) {
    let e = p.until(|e| matches!(e, E::Rejected(_))).await;
    let Some(E::Rejected(r)) = e.event else {
        unreachable!()
    };
    assert_eq!(r.code, code as i32, "{}", r.message);
    assert!(!r.message.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_joins_get_clear_statuses() {
    let tokens = Tokens::new();
    let replica = TestApp::builder(&tokens).spawn().await;
    let (room, ua, _) = replica.room().create().await;
    let token = tokens.token(Uuid::now_v7(), Role::Player);
    let err = open(
        replica.channel().await,
        &token,
        join_message("no-such-room", None),
    )
    .await
    .err()
    .unwrap();
    assert_eq!(err.code(), Code::NotFound);
    let err = open(replica.channel().await, &token, join_message(&room, None))
        .await
        .err()
        .unwrap();
    assert_eq!(err.code(), Code::PermissionDenied, "{}", err.message());
    let not_join = game::PlayRequest {
        kind: Some(Kind::Ping(game::Ping { nonce: 1 })),
    };
    let err = open(replica.channel().await, &token, not_join)
        .await
        .err()
        .unwrap();
    assert_eq!(err.code(), Code::InvalidArgument);
    let err = open(
        replica.channel().await,
        "garbage",
        join_message(&room, None),
    )
    .await
    .err()
    .unwrap();
    assert_eq!(err.code(), Code::Unauthenticated);
    // CreateRoom is for services only, and checks its input.
    let err =
        game::game_internal_service_client::GameInternalServiceClient::new(replica.channel().await)
            .create_room(authed(
                game::CreateRoomRequest {
                    room_id: "x".into(),
                    ..Default::default()
                },
                &token,
            ))
            .await
            .unwrap_err();
    assert_eq!(err.code(), Code::PermissionDenied);
    let err = create_room(
        replica.channel().await,
        &tokens,
        "y",
        vec![player_seat(ua)],
        low_target(),
    )
    .await
    .unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument);
    // A bot level or a visibility that names none is refused, not stored.
    let bot = |level: i32| game::SeatAssignment {
        occupant: Some(game::seat_assignment::Occupant::Bot(game::BotSeat {
            level,
        })),
        ..Default::default()
    };
    let mut internal =
        game::game_internal_service_client::GameInternalServiceClient::new(replica.channel().await);
    for (seats, visibility, names) in [
        (vec![player_seat(ua), bot(42)], 0, "BotLevel"),
        (
            vec![player_seat(ua), bot(pb::BotLevel::Hard as i32)],
            9,
            "RoomVisibility",
        ),
    ] {
        let err = internal
            .create_room(authed(
                game::CreateRoomRequest {
                    room_id: format!("refused-{names}"),
                    seats,
                    settings: Some(low_target()),
                    visibility,
                    ..Default::default()
                },
                &tokens.service(),
            ))
            .await
            .unwrap_err();
        assert_eq!(err.code(), Code::InvalidArgument, "{err}");
        assert!(err.message().contains(names), "{err}");
    }
    // Ping answers with the last seq.
    let mut a = Player::join(replica.channel().await, &tokens, ua, 0, &room, None).await;
    let snap = a.next().await.unwrap();
    a.send(Kind::Ping(game::Ping { nonce: 7 })).await;
    let pong = a.until(|e| matches!(e, E::Pong(_))).await;
    assert!(pong.seq >= snap.seq);
    replica.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timed_out_turn_is_played_automatically() {
    let tokens = Tokens::new();
    let mut t = test_timing();
    t.turn_ms = 300;
    // The players connect after the match has started: their first turns last the grace
    // (`Room::turn_allowance_ms`), here no longer than a turn.
    t.grace_ms = 300;
    let replica = TestApp::builder(&tokens)
        .config(test_config("r1", t))
        .spawn()
        .await;
    let (room, ua, _) = replica.room().create().await;
    let mut a = Player::join(replica.channel().await, &tokens, ua, 0, &room, Some(0)).await;
    // a never plays: the server plays for it, with a card from its hand.
    let played = a.until(|e| matches!(e, E::CardPlayed(_))).await;
    let Some(E::CardPlayed(p)) = &played.event else {
        unreachable!()
    };
    assert_eq!(p.seat, 0);
    assert!(p.automatic);
    // And b's turn times out too (b is not even connected).
    let played = a.until(|e| matches!(e, E::CardPlayed(_))).await;
    assert!(matches!(&played.event, Some(E::CardPlayed(p)) if p.seat == 1 && p.automatic));
    replica.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_play_landing_within_the_slack_past_the_deadline_beats_the_timer() {
    let tokens = Tokens::new();
    let mut t = test_timing();
    t.turn_ms = 300;
    // A first turn before the player connects lasts the grace: no longer here.
    t.grace_ms = 300;
    t.turn_slack_ms = 1_500;
    let replica = TestApp::builder(&tokens)
        .config(test_config("r1", t))
        .spawn()
        .await;
    let (room, ua, _) = replica.room().create().await;
    let mut a = Player::join(replica.channel().await, &tokens, ua, 0, &room, Some(0)).await;
    let turn = a
        .until(|e| matches!(e, E::TurnStarted(t) if t.seat == 0))
        .await;
    let Some(E::TurnStarted(started)) = turn.event else {
        unreachable!()
    };
    // Play 300 ms after the advertised deadline, as a play stuck in a queue would land.
    let deadline = started.deadline.unwrap();
    let deadline_ms = deadline.seconds * 1000 + i64::from(deadline.nanos) / 1_000_000;
    let late = deadline_ms + 300 - chrono::Utc::now().timestamp_millis();
    tokio::time::sleep(Duration::from_millis(late.max(0) as u64)).await;
    let card = a.hand.iter().next().unwrap();
    a.play(card, "late-but-in-flight").await;
    let played = a.until(|e| matches!(e, E::CardPlayed(_))).await;
    assert!(
        matches!(&played.event, Some(E::CardPlayed(p)) if p.seat == 0 && !p.automatic),
        "the player's own play counts: {played:?}"
    );
    // Past deadline + slack, the timer plays for the absent seat 1 as before.
    let played = a.until(|e| matches!(e, E::CardPlayed(_))).await;
    assert!(matches!(&played.event, Some(E::CardPlayed(p)) if p.seat == 1 && p.automatic));
    replica.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bot_seat_plays_a_whole_match() {
    bot_plays_a_whole_match(pb::BotLevel::Medium, "Bot (medium)").await;
}

/// The hard bot thinks on its search threads (game_session::replica::bots) and plays its card in a
/// second pass over the room.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hard_bot_seat_plays_a_whole_match() {
    bot_plays_a_whole_match(pb::BotLevel::Hard, "Bot (hard)").await;
}

async fn bot_plays_a_whole_match(level: pb::BotLevel, name: &str) {
    let tokens = Tokens::new();
    let store = redis_store(&test_prefix()).await;
    let replica = TestApp::builder(&tokens).store(store.clone()).spawn().await;
    let mut a = replica.player_against_bot(level).await;
    let ended = a.play_on(None).await.unwrap();
    assert_eq!(ended.reason, pb::MatchEndReason::TargetReached as i32);
    let bot_seat = logged(&a.log)
        .iter()
        .find_map(|e| match &e.event {
            Some(E::MatchStarted(m)) => m.seats.get(1).cloned(),
            _ => None,
        })
        .expect("match_started with the seats");
    assert_eq!(bot_seat.display_name, name, "a bot goes by its level");
    let bot_plays = logged(&a.log)
        .iter()
        .filter(|e| matches!(&e.event, Some(E::CardPlayed(p)) if p.seat == 1 && !p.automatic))
        .count();
    assert!(bot_plays >= 24, "the bot played its cards: {bot_plays}");
    check_against_replay(&[&a], &ended, &commitment(&a));
    replica.stop().await;
}

/// The hard bot searches through its think delay (game_session::replica::timers::Early):
/// with a search of 300 ms and a delay of 400 ms, its card comes when the delay ends,
/// not 300 ms after (as when the search started only then).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hard_bot_thinks_through_its_think_delay() {
    const DELAY_MS: u64 = 400;
    const SEARCH_MS: u64 = 300;
    let tokens = Tokens::new();
    let mut timing = test_timing();
    timing.bot_delay_ms = DELAY_MS;
    let mut config = test_config("r1", timing);
    // Far more worlds than 300 ms can deal: every search runs its whole time.
    config.bots =
        game_session::replica::bots::Bots::new(&game_session::replica::bots::BotSettings {
            hard_worlds: 100_000,
            hard_max_ms: SEARCH_MS,
            ..Default::default()
        });
    let replica = TestApp::builder(&tokens).config(config).spawn().await;
    let mut a = replica.player_against_bot(pb::BotLevel::Hard).await;
    let mut answers = Vec::new();
    while answers.len() < 4 {
        a.until(|e| matches!(e, E::TurnStarted(t) if t.seat == 0))
            .await;
        let card = a.hand.iter().next().expect("a card to play");
        let played = std::time::Instant::now();
        a.play(card, &Uuid::now_v7().to_string()).await;
        let answer = a
            .until(|e| matches!(e, E::CardPlayed(p) if p.seat == 1))
            .await;
        if let Some(E::CardPlayed(p)) = answer.event {
            assert!(!p.automatic, "the bot played its own card");
        }
        answers.push(played.elapsed());
    }
    let delay = Duration::from_millis(DELAY_MS);
    assert!(
        answers.iter().all(|&answer| answer >= delay),
        "never before the delay: {answers:?}"
    );
    // Thinking only after the delay, every answer would take DELAY_MS + SEARCH_MS.
    let fastest = *answers.iter().min().unwrap();
    assert!(
        fastest < Duration::from_millis(DELAY_MS + SEARCH_MS * 3 / 4),
        "the search ran through the delay: {answers:?}"
    );
    replica.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_outbox_records_a_finished_match_once_even_when_accounts_is_down_at_first() {
    // Down long enough for a backoff without the 2 s cap to reach 6.4 s.
    outbox_records_once(&redis_url(), Duration::from_millis(6500)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_outbox_records_a_finished_match_once_on_a_redis_cluster() {
    outbox_records_once(&redis_cluster_url(), Duration::from_millis(800)).await;
}

/// A finished match is recorded exactly once although accounts is down for `down`, and
/// lands within the forwarder's default retry cap (plus slack) of accounts coming back.
async fn outbox_records_once(url: &str, down: Duration) {
    let tokens = Tokens::new();
    // Reserve a port for accounts, then leave it closed: accounts is down.
    let accounts_addr = {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        l.local_addr().unwrap()
    };
    let link = |tokens: &Tokens| {
        let mut link = game_session::AccountsLink::new(
            &format!("http://{accounts_addr}"),
            tokens.service_credentials(),
        )
        .unwrap();
        // The shipped cap (retry_max): how soon after accounts is back the record lands.
        link.retry_min = Duration::from_millis(50);
        link.poll = Duration::from_millis(50);
        link
    };
    let prefix = test_prefix();
    let store = redis_store_at(url, &prefix).await;
    let r1 = TestApp::builder(&tokens)
        .store(store.clone())
        .accounts(link(&tokens))
        .spawn()
        .await;
    let r2 = TestApp::builder(&tokens)
        .store(redis_store_at(url, &prefix).await)
        .config(test_config("r2", test_timing()))
        .accounts(link(&tokens))
        .spawn()
        .await;
    let room = Uuid::now_v7().to_string();
    create_room(
        r1.channel().await,
        &tokens,
        &room,
        vec![bot_seat(pb::BotLevel::Easy), bot_seat(pb::BotLevel::Medium)],
        low_target(),
    )
    .await
    .unwrap();
    // Two bots finish the match by themselves.
    let deadline = tokio::time::Instant::now() + WAIT;
    let match_id = loop {
        let room = store.load(&room).await.unwrap().unwrap().room;
        if room.status == game_session::room::Status::Finished {
            break room.match_id;
        }
        assert!(tokio::time::Instant::now() < deadline, "the bots finish");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    // Accounts is down for a while: the forwarders keep retrying.
    tokio::time::sleep(down).await;
    let fake = FakeAccounts::default();
    let listener = tokio::net::TcpListener::bind(accounts_addr).await.unwrap();
    let stop = tokio_util::sync::CancellationToken::new();
    let server = serve_accounts(listener, fake.clone(), &tokens, stop.clone());
    let back = tokio::time::Instant::now();
    let deadline = back + WAIT;
    loop {
        if fake.recorded.lock().unwrap().contains_key(&match_id) {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "the record lands");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let landed = back.elapsed();
    assert!(
        landed < game_session::accounts::RETRY_MAX + Duration::from_millis(1000),
        "the record landed {landed:?} after accounts came back (cap {:?})",
        game_session::accounts::RETRY_MAX
    );
    tokio::time::sleep(Duration::from_millis(1000)).await;
    {
        let recorded = fake.recorded.lock().unwrap();
        let (record, times) = &recorded[&match_id];
        assert_eq!(*times, 1, "recorded exactly once");
        assert_eq!(recorded.len(), 1);
        assert_eq!(record.room_id, room);
        assert_eq!(record.seed.len(), 32);
        assert!(record.seats.iter().all(|s| s.is_bot));
        let names: Vec<&str> = record
            .seats
            .iter()
            .map(|s| s.display_name.as_str())
            .collect();
        assert_eq!(
            names,
            ["Bot (easy)", "Bot (medium)"],
            "bots go by their level"
        );
        assert_eq!(record.end_reason, pb::MatchEndReason::TargetReached as i32);
        // The record replays to the recorded totals.
        let actions: Vec<Action> = record
            .actions
            .iter()
            .map(|a| match a.action.as_ref().unwrap() {
                basra_proto::basra::accounts::v1::recorded_action::Action::Play(p) => {
                    Action::Play {
                        seat: Seat(a.seat as u8),
                        card: card(p.card.as_ref().unwrap()),
                        take: None,
                    }
                }
                _ => Action::Resign {
                    seat: Seat(a.seat as u8),
                },
            })
            .collect();
        let (game, _) = basra_engine::replay(
            settings_low(),
            Seed(record.seed.clone().try_into().unwrap()),
            &actions,
        )
        .unwrap();
        assert_eq!(game.totals().to_vec(), record.final_totals);
    }
    assert_eq!(
        store
            .outbox_fetch(&ALL_SHARDS, "check", 0, 10)
            .await
            .unwrap(),
        vec![],
        "the outbox is empty"
    );
    stop.cancel();
    let _ = server.await;
    r1.stop().await;
    r2.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_stream_cap_answers_resource_exhausted() {
    let tokens = Tokens::new();
    let mut cfg = test_config("r1", test_timing());
    cfg.max_streams = 1;
    let replica = TestApp::builder(&tokens).config(cfg).spawn().await;
    let (room, ua, ub) = replica.room().create().await;
    let mut a = Player::join(replica.channel().await, &tokens, ua, 0, &room, None).await;
    a.next().await.unwrap();
    let err = open(
        replica.channel().await,
        &tokens.token(ub, Role::Player),
        join_message(&room, None),
    )
    .await
    .err()
    .unwrap();
    assert_eq!(err.code(), Code::ResourceExhausted);
    drop(a);
    // The slot frees when the stream ends.
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        match open(
            replica.channel().await,
            &tokens.token(ub, Role::Player),
            join_message(&room, None),
        )
        .await
        {
            Ok(_) => break,
            Err(e)
                if e.code() == Code::ResourceExhausted
                    && tokio::time::Instant::now() < deadline =>
            {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(e) => panic!("{e}"),
        }
    }
    replica.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admin_needs_the_operator_role_and_closes_rooms() {
    let tokens = Tokens::new();
    let replica = TestApp::builder(&tokens).spawn().await;
    let (room, ua, _) = replica.room().create().await;
    let mut admin = GameAdminServiceClient::new(replica.channel().await);
    let player = tokens.token(ua, Role::Player);
    let err = admin
        .list_rooms(authed(game::ListRoomsRequest::default(), &player))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::PermissionDenied);
    let err = admin
        .list_rooms(game::ListRoomsRequest::default())
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::Unauthenticated);
    let operator = tokens.token(Uuid::now_v7(), Role::Operator);
    let list = admin
        .list_rooms(authed(game::ListRoomsRequest::default(), &operator))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(list.rooms.len(), 1);
    assert_eq!(list.rooms[0].room_id, room);
    let got = admin
        .get_room(authed(
            game::GetRoomRequest {
                room_id: room.clone(),
            },
            &operator,
        ))
        .await
        .unwrap()
        .into_inner();
    let view = got.public_view.unwrap();
    assert!(
        view.hand.is_empty() && view.your_seat.is_none(),
        "operators never see hands"
    );
    let err = admin
        .get_room(authed(
            game::GetRoomRequest {
                room_id: "nope".into(),
            },
            &operator,
        ))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::NotFound);
    // Every documented refusal.
    let err = admin
        .list_rooms(authed(
            game::ListRoomsRequest {
                page_token: "not-a-token".into(),
                ..Default::default()
            },
            &operator,
        ))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument, "{err}");
    for (room_id, reason, code) in [
        ("", "test", Code::InvalidArgument),
        (room.as_str(), "", Code::InvalidArgument),
        ("nope", "test", Code::NotFound),
    ] {
        let err = admin
            .close_room(authed(
                game::CloseRoomRequest {
                    room_id: room_id.into(),
                    reason: reason.into(),
                },
                &operator,
            ))
            .await
            .unwrap_err();
        assert_eq!(err.code(), code, "{room_id:?} {reason:?}: {err}");
    }
    let err = admin
        .drain_replica(authed(
            game::DrainReplicaRequest {
                replica: "no-such-replica".into(),
                deadline: None,
            },
            &operator,
        ))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::NotFound, "{err}");

    let mut a = Player::join(replica.channel().await, &tokens, ua, 0, &room, None).await;
    a.next().await.unwrap();
    let closed = admin
        .close_room(authed(
            game::CloseRoomRequest {
                room_id: room.clone(),
                reason: "test".into(),
            },
            &operator,
        ))
        .await
        .unwrap()
        .into_inner();
    assert!(closed.match_ended && closed.closed_now);
    let ended = a.until(|e| matches!(e, E::MatchEnded(_))).await;
    assert!(
        matches!(&ended.event, Some(E::MatchEnded(m)) if m.reason == pb::MatchEndReason::Closed as i32 && m.winner_side.is_none())
    );
    // Then the stream ends OK.
    let end = tokio::time::timeout(WAIT, a.events.message())
        .await
        .unwrap();
    assert!(matches!(end, Ok(None)), "{end:?}");
    let again = admin
        .close_room(authed(
            game::CloseRoomRequest {
                room_id: room.clone(),
                reason: "test".into(),
            },
            &operator,
        ))
        .await
        .unwrap()
        .into_inner();
    assert!(
        !again.closed_now && !again.match_ended,
        "closing is idempotent"
    );
    replica.stop().await;
}

/// A draining replica makes no new rooms (nobody would serve their streams), and the
/// streams open on it end with UNAVAILABLE to resume elsewhere, by the drain's deadline.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_draining_replica_refuses_new_rooms_and_ends_its_streams() {
    let tokens = Tokens::new();
    let replica = TestApp::builder(&tokens).spawn().await;
    let player = Uuid::now_v7();
    let seats = |user| vec![player_seat(user), bot_seat(pb::BotLevel::Easy)];
    let room = Uuid::now_v7().to_string();
    create_room(
        replica.channel().await,
        &tokens,
        &room,
        seats(player),
        low_target(),
    )
    .await
    .unwrap();
    let mut open = Player::join(replica.channel().await, &tokens, player, 0, &room, None).await;
    open.next().await.unwrap();
    let operator = tokens.token(Uuid::now_v7(), Role::Operator);
    GameAdminServiceClient::new(replica.channel().await)
        .drain_replica(authed(
            game::DrainReplicaRequest {
                replica: String::new(),
                deadline: Some(prost_types::Duration {
                    seconds: 1,
                    nanos: 0,
                }),
            },
            &operator,
        ))
        .await
        .unwrap();
    let ended = loop {
        match tokio::time::timeout(WAIT, open.events.message()).await {
            Ok(Ok(Some(_))) => {}
            other => break other,
        }
    };
    match ended {
        Ok(Err(status)) => {
            assert_eq!(status.code(), Code::Unavailable, "{status}");
            assert!(status.message().contains("draining"), "{status}");
        }
        other => panic!("the stream should end UNAVAILABLE: {other:?}"),
    }
    let room = Uuid::now_v7().to_string();
    let err = create_room(
        replica.channel().await,
        &tokens,
        &room,
        seats(Uuid::now_v7()),
        low_target(),
    )
    .await
    .unwrap_err();
    assert_eq!(err.code(), Code::Unavailable, "{err}");
    replica.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_embedded_memory_store_serves_a_whole_match_too() {
    let tokens = Tokens::new();
    let store: std::sync::Arc<dyn game_session::RoomStore> =
        std::sync::Arc::new(game_session::MemoryStore::new());
    let replica = TestApp::builder(&tokens)
        .store(store)
        .config(test_config("dev", test_timing()))
        .spawn()
        .await;
    let mut a = replica.player_against_bot(pb::BotLevel::Easy).await;
    let ended = a.play_on(None).await.unwrap();
    check_against_replay(&[&a], &ended, &commitment(&a));
    replica.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn seats_show_the_names_accounts_gives_in_views_events_and_the_record() {
    let tokens = Tokens::new();
    let accounts = FakeAccounts::spawn(&tokens).await;
    let fake = accounts.fake.clone();
    let mut link = accounts.link(&tokens);
    link.poll = Duration::from_millis(50);
    let replica = TestApp::builder(&tokens).accounts(link).spawn().await;
    // One player seated when the room is made, one by SeatPlayer (as JoinRoom does).
    let (ua, ub) = (Uuid::now_v7(), Uuid::now_v7());
    let room = Uuid::now_v7().to_string();
    let open = game::SeatAssignment {
        occupant: Some(game::seat_assignment::Occupant::Open(game::OpenSeat {})),
        ..Default::default()
    };
    create_room(
        replica.channel().await,
        &tokens,
        &room,
        vec![player_seat(ua), open],
        low_target(),
    )
    .await
    .unwrap();
    GameInternalServiceClient::new(replica.channel().await)
        .seat_player(authed(
            game::SeatPlayerRequest {
                room_id: room.clone(),
                user_id: ub.to_string(),
                preferred_seat: None,
                ..Default::default()
            },
            &tokens.service(),
        ))
        .await
        .unwrap();
    let expected = [fake_name(&ua.to_string()), fake_name(&ub.to_string())];
    let mut a = Player::join(replica.channel().await, &tokens, ua, 0, &room, Some(0)).await;
    let started = a.until(|e| matches!(e, E::MatchStarted(_))).await;
    let Some(E::MatchStarted(m)) = started.event else {
        unreachable!()
    };
    let names: Vec<String> = m.seats.iter().map(|s| s.display_name.clone()).collect();
    assert_eq!(names, expected, "match_started names the players");
    a.send(Kind::Resign(game::Resign {})).await;
    a.until(|e| matches!(e, E::MatchEnded(_))).await;
    let deadline = tokio::time::Instant::now() + WAIT;
    let record = loop {
        if let Some((record, _)) = fake.recorded.lock().unwrap().values().next() {
            break record.clone();
        }
        assert!(tokio::time::Instant::now() < deadline, "the record lands");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let names: Vec<String> = record
        .seats
        .iter()
        .map(|s| s.display_name.clone())
        .collect();
    assert_eq!(names, expected, "the record names the players");
    accounts.stop().await;
    replica.stop().await;
}

/// Each seat of the record says how it was filled, as matchmaking told CreateRoom and
/// SeatPlayer (with the queue wait of a queue seat), and every seat of a rematch is a
/// rematch; a fill that is not a SeatFill is INVALID_ARGUMENT.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_seat_of_the_record_says_how_it_was_filled() {
    let tokens = Tokens::new();
    let accounts = FakeAccounts::spawn(&tokens).await;
    let fake = accounts.fake.clone();
    let mut link = accounts.link(&tokens);
    link.poll = Duration::from_millis(50);
    let replica = TestApp::builder(&tokens).accounts(link).spawn().await;
    let (ua, ub) = (Uuid::now_v7(), Uuid::now_v7());
    let room = Uuid::now_v7().to_string();
    let queued = game::SeatAssignment {
        fill: pb::SeatFill::Queue as i32,
        queue_wait_ms: 12_345,
        ..player_seat(ua)
    };
    let open = game::SeatAssignment {
        occupant: Some(game::seat_assignment::Occupant::Open(game::OpenSeat {})),
        ..Default::default()
    };
    let bad = game::SeatAssignment {
        fill: 99,
        ..player_seat(ua)
    };
    let refused = create_room(
        replica.channel().await,
        &tokens,
        &room,
        vec![bad, open.clone()],
        low_target(),
    )
    .await
    .unwrap_err();
    assert_eq!(refused.code(), tonic::Code::InvalidArgument, "{refused:?}");
    create_room(
        replica.channel().await,
        &tokens,
        &room,
        vec![queued, open],
        low_target(),
    )
    .await
    .unwrap();
    let seat = |fill: i32| {
        authed(
            game::SeatPlayerRequest {
                room_id: room.clone(),
                user_id: ub.to_string(),
                preferred_seat: None,
                fill,
            },
            &tokens.service(),
        )
    };
    let refused = GameInternalServiceClient::new(replica.channel().await)
        .seat_player(seat(42))
        .await
        .unwrap_err();
    assert_eq!(refused.code(), tonic::Code::InvalidArgument, "{refused:?}");
    GameInternalServiceClient::new(replica.channel().await)
        .seat_player(seat(pb::SeatFill::Invite as i32))
        .await
        .unwrap();
    let mut a = Player::join(replica.channel().await, &tokens, ua, 0, &room, Some(0)).await;
    let mut b = Player::join(replica.channel().await, &tokens, ub, 1, &room, Some(0)).await;
    let record_number = |n: usize| {
        let fake = fake.clone();
        async move {
            let deadline = tokio::time::Instant::now() + WAIT;
            loop {
                let mut records: Vec<acc::MatchRecord> = fake
                    .recorded
                    .lock()
                    .unwrap()
                    .values()
                    .map(|(record, _)| record.clone())
                    .collect();
                if records.len() >= n {
                    records.sort_by_key(|r| r.started_at.map(|t| (t.seconds, t.nanos)));
                    break records.swap_remove(n - 1);
                }
                assert!(tokio::time::Instant::now() < deadline, "record {n} lands");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    };
    a.send(Kind::Resign(game::Resign {})).await;
    a.until(|e| matches!(e, E::MatchEnded(_))).await;
    let first = record_number(1).await;
    let fills: Vec<(i32, Option<u32>)> = first
        .seats
        .iter()
        .map(|s| (s.fill, s.queue_wait_ms))
        .collect();
    assert_eq!(
        fills,
        [
            (pb::SeatFill::Queue as i32, Some(12_345)),
            (pb::SeatFill::Invite as i32, None)
        ]
    );
    b.until(|e| matches!(e, E::MatchEnded(_))).await;
    a.send(Kind::Rematch(game::RematchRequest {})).await;
    b.send(Kind::Rematch(game::RematchRequest {})).await;
    a.until(|e| matches!(e, E::MatchStarted(_))).await;
    a.send(Kind::Resign(game::Resign {})).await;
    a.until(|e| matches!(e, E::MatchEnded(_))).await;
    let second = record_number(2).await;
    assert_ne!(second.match_id, first.match_id);
    let fills: Vec<(i32, Option<u32>)> = second
        .seats
        .iter()
        .map(|s| (s.fill, s.queue_wait_ms))
        .collect();
    assert_eq!(
        fills,
        [
            (pb::SeatFill::Rematch as i32, None),
            (pb::SeatFill::Rematch as i32, None)
        ]
    );
    accounts.stop().await;
    replica.stop().await;
}

/// A seat's stream tells accounts the player is in this match (friends may watch: the
/// room is named), and that it ended when the stream closes; a spectator is not reported.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_seated_stream_reports_its_player_in_the_match_until_it_closes() {
    let tokens = Tokens::new();
    let accounts = FakeAccounts::spawn(&tokens).await;
    let fake = accounts.fake.clone();
    let link = accounts.link(&tokens);
    let replica = TestApp::builder(&tokens).accounts(link).spawn().await;
    let (room, ua, _ub) = replica.room().create().await;
    let reports_of = |user: Uuid| {
        fake.presence
            .lock()
            .unwrap()
            .iter()
            .filter(|r| r.user_id == user.to_string())
            .map(|r| (r.activity, r.room_id.clone(), r.spectatable, r.ended))
            .collect::<Vec<_>>()
    };
    let wait_for = |user: Uuid, ended: bool| {
        let reports_of = &reports_of;
        async move {
            let deadline = tokio::time::Instant::now() + WAIT;
            loop {
                if reports_of(user).iter().any(|r| r.3 == ended) {
                    return;
                }
                assert!(
                    tokio::time::Instant::now() < deadline,
                    "no report (ended: {ended})"
                );
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    };
    let a = Player::join(replica.channel().await, &tokens, ua, 0, &room, Some(0)).await;
    wait_for(ua, false).await;
    assert_eq!(
        reports_of(ua),
        vec![(acc::Activity::InMatch as i32, room.clone(), true, false)],
        "in this match, which friends may watch"
    );
    // A spectator is nobody's presence.
    let watcher = Uuid::now_v7();
    let (_spectator_tx, mut spectator) = open(
        replica.channel().await,
        &tokens.token(watcher, Role::Player),
        spectate_message(&room),
    )
    .await
    .unwrap();
    tokio::time::timeout(WAIT, spectator.message())
        .await
        .expect("the spectator's snapshot in time")
        .unwrap();
    drop(a);
    wait_for(ua, true).await;
    assert_eq!(
        reports_of(ua).last().unwrap(),
        &(acc::Activity::InMatch as i32, room.clone(), true, true),
        "the match ended for friends when the stream closed"
    );
    assert!(
        reports_of(watcher).is_empty(),
        "spectators are not reported"
    );
    accounts.stop().await;
    replica.stop().await;
}
