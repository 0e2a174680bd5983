//! The rest of a Play stream's life, end to end (real replicas, real Redis, real tonic
//! clients): resigning, quick chat, leaving, rematches, the disconnect grace period, an
//! oversized message and spectators.

use std::time::{Duration, Instant};

use basra_engine::CardSet;
use basra_platform::auth::Role;
use basra_proto::basra::common::v1 as pb;
use basra_proto::basra::game::v1::{
    self as game, PlayResponse, RejectCode,
    game_internal_service_client::GameInternalServiceClient, play_request::Kind,
    play_response::Event as E,
};
use basra_testkit::game_session::*;
use basra_testkit::{authed, redis_url};
use game_session::room::{Occupant, Status};
use game_session::store::ALL_SHARDS;
use prost::Message as _;
use sha2::Digest as _;
use tonic::Code;
use uuid::Uuid;

async fn reject(p: &mut Player, code: RejectCode) -> game::Rejected {
    let e = p.until(|e| matches!(e, E::Rejected(_))).await;
    let Some(E::Rejected(r)) = e.event else {
        unreachable!()
    };
    assert_eq!(r.code, code as i32, "{}", r.message);
    assert!(!r.message.is_empty());
    r
}

async fn match_ended(p: &mut Player) -> game::MatchEnded {
    match p.until(|e| matches!(e, E::MatchEnded(_))).await.event {
        Some(E::MatchEnded(ended)) => ended,
        _ => unreachable!(),
    }
}

fn commitment(p: &Player) -> Vec<u8> {
    p.log
        .iter()
        .rev()
        .find_map(|e| match &e.event {
            Some(E::MatchStarted(m)) => Some(m.seed_commitment.clone()),
            _ => None,
        })
        .expect("a match_started")
}

async fn single_replica(timing: game_session::room::timing::Timing) -> TestApp {
    TestApp::builder(&Tokens::new())
        .config(test_config("r1", timing))
        .spawn()
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resign_ends_the_match_for_the_other_side() {
    let tokens = Tokens::new();
    let store = redis_store(&test_prefix()).await;
    let replica = TestApp::builder(&tokens).store(store.clone()).spawn().await;
    let (room, mut a, mut b) = replica
        .room()
        .settings(pb::RuleSettings::default())
        .join()
        .await;

    // Seat 1 resigns, whether or not it is its turn.
    b.send(Kind::Resign(game::Resign {})).await;
    let ea = match_ended(&mut a).await;
    let eb = match_ended(&mut b).await;
    assert_eq!(ea, eb, "both sides see the same end");
    assert_eq!(ea.reason, pb::MatchEndReason::Resigned as i32);
    assert_eq!(ea.winner_side, Some(0), "the other side wins");
    assert_eq!(ea.forfeit_seat, Some(1));
    assert_eq!(
        sha2::Sha256::digest(&ea.seed).as_slice(),
        commitment(&a),
        "the seed is revealed and matches its commitment"
    );

    // The match is over: playing or resigning again is refused, and changes nothing.
    let version = store.load(&room).await.unwrap().unwrap().version;
    let card = a.hand.iter().next().unwrap();
    a.play(card, "after-resign").await;
    reject(&mut a, RejectCode::NotInProgress).await;
    b.send(Kind::Resign(game::Resign {})).await;
    reject(&mut b, RejectCode::NotInProgress).await;
    let loaded = store.load(&room).await.unwrap().unwrap();
    assert_eq!(loaded.version, version);
    assert_eq!(loaded.room.status, Status::Finished);

    // The record waiting in the outbox says who resigned.
    let entries = store
        .outbox_fetch(&ALL_SHARDS, "check", 0, 10)
        .await
        .unwrap();
    assert_eq!(entries.len(), 1);
    let record =
        basra_proto::basra::accounts::v1::MatchRecord::decode(entries[0].record.payload.as_slice())
            .unwrap();
    assert_eq!(record.end_reason, pb::MatchEndReason::Resigned as i32);
    assert_eq!(record.winner_side, Some(0));
    replica.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quick_chat_reaches_the_other_seat_and_is_rate_limited() {
    let replica = single_replica(test_timing()).await;
    let (_room, mut a, mut b) = replica
        .room()
        .settings(pb::RuleSettings::default())
        .join()
        .await;
    let chat = |phrase: game::QuickChatPhrase| {
        Kind::QuickChat(game::QuickChat {
            phrase: phrase as i32,
        })
    };

    a.send(chat(game::QuickChatPhrase::GoodLuck)).await;
    let got = b.until(|e| matches!(e, E::Chat(_))).await;
    assert_eq!(
        got.event,
        Some(E::Chat(game::ChatMessage {
            seat: 0,
            phrase: game::QuickChatPhrase::GoodLuck as i32,
        }))
    );
    // The sender sees its own message in the log too, at the same seq.
    let own = a.until(|e| matches!(e, E::Chat(_))).await;
    assert_eq!(own.seq, got.seq);

    // An unknown phrase is malformed.
    a.send(Kind::QuickChat(game::QuickChat { phrase: 999 }))
        .await;
    reject(&mut a, RejectCode::Malformed).await;

    // Five messages per ten seconds per seat: the first went through, four more do,
    // the sixth is refused.
    for _ in 0..4 {
        a.send(chat(game::QuickChatPhrase::Hello)).await;
    }
    a.send(chat(game::QuickChatPhrase::HurryUp)).await;
    reject(&mut a, RejectCode::RateLimited).await;
    let chats = |p: &Player| {
        logged(&p.log)
            .iter()
            .filter(|e| matches!(e.event, Some(E::Chat(_))))
            .count()
    };
    assert_eq!(chats(&a), 5);
    // The limit is per seat: b may still talk, and a hears it.
    b.send(chat(game::QuickChatPhrase::WellPlayed)).await;
    a.until(|e| matches!(e, E::Chat(c) if c.seat == 1)).await;
    b.until(|e| matches!(e, E::Chat(c) if c.seat == 1)).await;
    assert_eq!(chats(&b), 6, "b saw a's five and its own");
    assert!(
        !logged(&b.log)
            .iter()
            .any(|e| matches!(&e.event, Some(E::Chat(c)) if c.phrase == game::QuickChatPhrase::HurryUp as i32)),
        "the refused message reached nobody"
    );

    // Chat does not change the game: a play based on a seq before the chats is not stale.
    let (mover, _) = if a.log.iter().rev().find_map(|e| match &e.event {
        Some(E::TurnStarted(t)) => Some(t.seat),
        _ => None,
    }) == Some(0)
    {
        (&mut a, &mut b)
    } else {
        (&mut b, &mut a)
    };
    let based_on = logged(&mover.log)
        .iter()
        .rev()
        .find(|e| matches!(e.event, Some(E::TurnStarted(_))))
        .unwrap()
        .seq;
    let card = mover.hand.iter().next().unwrap();
    mover
        .send(Kind::PlayCard(game::PlayCard {
            card: Some(basra_proto::convert::card_to_pb(card)),
            capture_choice: None,
            based_on_seq: Some(based_on),
            client_move_id: "after-chat".into(),
        }))
        .await;
    let seat = mover.seat;
    mover
        .until(|e| matches!(e, E::CardPlayed(p) if p.seat == seat))
        .await;
    replica.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leave_frees_a_waiting_seat_is_refused_in_a_match_and_closes_a_finished_room() {
    let tokens = Tokens::new();
    let store = redis_store(&test_prefix()).await;
    let replica = TestApp::builder(&tokens).store(store.clone()).spawn().await;

    // A waiting room: seat 0 taken, seat 1 open. Leaving frees the seat and ends the
    // stream cleanly.
    let ua = Uuid::now_v7();
    let waiting = Uuid::now_v7().to_string();
    create_room(
        replica.channel().await,
        &tokens,
        &waiting,
        vec![
            player_seat(ua),
            game::SeatAssignment {
                occupant: Some(game::seat_assignment::Occupant::Open(game::OpenSeat {})),
                ..Default::default()
            },
        ],
        pb::RuleSettings::default(),
    )
    .await
    .unwrap();
    let mut w = Player::join(replica.channel().await, &tokens, ua, 0, &waiting, None).await;
    w.next().await.unwrap(); // snapshot
    w.send(Kind::Leave(game::Leave {})).await;
    let freed = w.until(|e| matches!(e, E::SeatChanged(_))).await;
    assert!(matches!(
        &freed.event,
        Some(E::SeatChanged(game::SeatChanged { seat: Some(s) }))
            if s.seat == 0 && s.occupant == pb::SeatOccupant::Open as i32
    ));
    assert_eq!(stream_end(&mut w).await, Code::Ok);
    let room = store.load(&waiting).await.unwrap().unwrap().room;
    assert_eq!(room.seats[0].occupant, Occupant::Open);
    assert_eq!(room.status, Status::Waiting);
    assert_eq!(
        get_seat(&replica, &tokens, &waiting, ua).await.unwrap(),
        (pb::RoomStatus::Waiting, None),
        "GetSeat: the seat is free again"
    );
    let err = open(
        replica.channel().await,
        &tokens.token(ua, Role::Player),
        join_message(&waiting, None),
    )
    .await
    .err()
    .unwrap();
    assert_eq!(
        err.code(),
        Code::PermissionDenied,
        "the seat is not theirs any more"
    );

    // During a match, leaving is refused (resign instead) and the stream stays.
    let (room, mut a, mut b) = replica
        .room()
        .settings(pb::RuleSettings::default())
        .join()
        .await;
    assert_eq!(
        get_seat(&replica, &tokens, &room, b.user).await.unwrap(),
        (pb::RoomStatus::InProgress, Some(1))
    );
    let version = store.load(&room).await.unwrap().unwrap().version;
    a.send(Kind::Leave(game::Leave {})).await;
    reject(&mut a, RejectCode::NotInProgress).await;
    assert_eq!(store.load(&room).await.unwrap().unwrap().version, version);
    a.send(Kind::Ping(game::Ping { nonce: 3 })).await;
    a.until(|e| matches!(e, E::Pong(p) if p.nonce == 3)).await;

    // After the match, leaving declines the rematch: the room closes and both streams
    // end cleanly.
    a.send(Kind::Resign(game::Resign {})).await;
    match_ended(&mut a).await;
    match_ended(&mut b).await;
    assert_eq!(
        get_seat(&replica, &tokens, &room, a.user).await.unwrap(),
        (pb::RoomStatus::Finished, Some(0))
    );
    a.send(Kind::Leave(game::Leave {})).await;
    assert_eq!(stream_end(&mut a).await, Code::Ok);
    assert_eq!(stream_end(&mut b).await, Code::Ok);
    let loaded = store.load(&room).await.unwrap().unwrap();
    assert_eq!(loaded.room.status, Status::Closed);
    assert_eq!(
        get_seat(&replica, &tokens, &room, a.user).await.unwrap().0,
        pb::RoomStatus::Closed
    );
    replica.stop().await;
}

/// Game/GetSeat as matchmaking calls it: the room's status and the user's seat.
async fn get_seat(
    replica: &TestApp,
    tokens: &Tokens,
    room_id: &str,
    user: Uuid,
) -> Result<(pb::RoomStatus, Option<u32>), tonic::Status> {
    let answer = GameInternalServiceClient::new(replica.channel().await)
        .get_seat(authed(
            game::GetSeatRequest {
                room_id: room_id.into(),
                user_id: user.to_string(),
            },
            &tokens.service(),
        ))
        .await?
        .into_inner();
    Ok((answer.status(), answer.seat))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_seat_is_for_services_and_checks_its_input() {
    let replica = single_replica(test_timing()).await;
    let tokens = replica.tokens().clone();
    let (room, ua, _) = replica.room().create().await;
    let mut client = GameInternalServiceClient::new(replica.channel().await);
    let ask = |room_id: &str, user: &str| game::GetSeatRequest {
        room_id: room_id.into(),
        user_id: user.into(),
    };
    let err = client
        .get_seat(authed(
            ask(&room, &ua.to_string()),
            &tokens.token(ua, Role::Player),
        ))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::PermissionDenied, "{err}");
    for (room_id, user) in [("", "u"), (room.as_str(), "")] {
        let err = client
            .get_seat(authed(ask(room_id, user), &tokens.service()))
            .await
            .unwrap_err();
        assert_eq!(err.code(), Code::InvalidArgument, "{err}");
    }
    let err = client
        .get_seat(authed(ask("no-such-room", "u"), &tokens.service()))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::NotFound, "{err}");
    assert_eq!(
        get_seat(&replica, &tokens, &room, Uuid::now_v7())
            .await
            .unwrap(),
        (pb::RoomStatus::InProgress, None),
        "a stranger holds no seat"
    );
    replica.stop().await;
}

/// GetSeat names the room's match as game-session records it to accounts (the id a
/// finished event match is replayed by): none while the room waits for a player, the
/// match's own from its start, the same from either seat and once it has ended.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_seat_names_the_match_played_in_the_room() {
    let replica = single_replica(test_timing()).await;
    let tokens = replica.tokens().clone();
    let mut client = GameInternalServiceClient::new(replica.channel().await);
    let mut match_of = async |room: &str, user: Uuid| {
        client
            .get_seat(authed(
                game::GetSeatRequest {
                    room_id: room.into(),
                    user_id: user.to_string(),
                },
                &tokens.service(),
            ))
            .await
            .expect("GetSeat")
            .into_inner()
            .match_id
    };
    let ua = Uuid::now_v7();
    let waiting = Uuid::now_v7().to_string();
    create_room(
        replica.channel().await,
        &tokens,
        &waiting,
        vec![
            player_seat(ua),
            game::SeatAssignment {
                occupant: Some(game::seat_assignment::Occupant::Open(game::OpenSeat {})),
                ..Default::default()
            },
        ],
        pb::RuleSettings::default(),
    )
    .await
    .unwrap();
    assert_eq!(
        match_of(&waiting, ua).await,
        "",
        "no match before the room fills"
    );
    let (room, mut a, mut b) = replica
        .room()
        .settings(pb::RuleSettings::default())
        .join()
        .await;
    let started = match_of(&room, a.user).await;
    assert!(!started.is_empty(), "a match from the start");
    a.send(Kind::Resign(game::Resign {})).await;
    let ended = match_ended(&mut a).await;
    match_ended(&mut b).await;
    assert_eq!(ended.match_id, started, "the match that ended");
    assert_eq!(
        match_of(&room, b.user).await,
        started,
        "from either seat, after the end"
    );
    replica.stop().await;
}

/// The service-to-service calls answered only at their internal paths: the previous
/// release's paths in the client service (`GameService/GetSeat`, reachable through the
/// gateway's route for `GameService`) are gone, UNIMPLEMENTED even with a service token.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_previous_paths_of_the_internal_calls_are_gone() {
    let replica = single_replica(test_timing()).await;
    let tokens = replica.tokens().clone();
    let (room, ua, _) = replica.room().create().await;
    let mut grpc = tonic::client::Grpc::new(replica.channel().await);
    let mut call = async |path: &'static str| {
        grpc.ready().await.expect("the channel is ready");
        grpc.unary::<_, game::GetSeatResponse, _>(
            authed(
                game::GetSeatRequest {
                    room_id: room.clone(),
                    user_id: ua.to_string(),
                },
                &tokens.service(),
            ),
            tonic::codegen::http::uri::PathAndQuery::from_static(path),
            basra_proto::codec::LeanCodec::default(),
        )
        .await
        .map(tonic::Response::into_inner)
    };
    let gone = call("/basra.game.v1.GameService/GetSeat")
        .await
        .unwrap_err();
    assert_eq!(gone.code(), Code::Unimplemented, "{gone}");
    let answer = call("/basra.game.v1.GameInternalService/GetSeat")
        .await
        .expect("served at the internal path");
    assert_eq!(answer.seat, Some(0));
    replica.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rematch_accepted_by_both_starts_a_new_match() {
    let replica = single_replica(test_timing()).await;
    let (_room, mut a, mut b) = replica.room().settings(low_target()).join().await;

    // No rematch while the match runs.
    a.send(Kind::Rematch(game::RematchRequest {})).await;
    reject(&mut a, RejectCode::NotInProgress).await;

    a.send(Kind::Resign(game::Resign {})).await;
    let first = match_ended(&mut a).await;
    match_ended(&mut b).await;
    let first_commitment = commitment(&a);

    // a asks; both are told, with who has accepted so far.
    a.send(Kind::Rematch(game::RematchRequest {})).await;
    for p in [&mut a, &mut b] {
        let offer = p.until(|e| matches!(e, E::RematchOffered(_))).await;
        let Some(E::RematchOffered(offer)) = offer.event else {
            unreachable!()
        };
        assert_eq!(offer.seat, 0);
        assert_eq!(offer.accepted_seats, vec![0]);
        assert!(offer.deadline.is_some());
    }
    // b accepts: a new match starts, with a new id and a new seed.
    b.send(Kind::Rematch(game::RematchRequest {})).await;
    let mut started = Vec::new();
    for p in [&mut a, &mut b] {
        let offer = p.until(|e| matches!(e, E::RematchOffered(_))).await;
        assert!(
            matches!(&offer.event, Some(E::RematchOffered(o)) if o.seat == 1 && o.accepted_seats == vec![0, 1])
        );
        let next = p.next().await.unwrap();
        let Some(E::MatchStarted(m)) = next.event else {
            panic!("the match starts right after the last acceptance: {next:?}")
        };
        assert_eq!(next.seq, offer.seq + 1);
        started.push(m);
    }
    assert_eq!(started[0], started[1]);
    assert_ne!(started[0].match_id, first.match_id);
    assert_ne!(started[0].seed_commitment, first_commitment);

    // The new match is played to its end.
    let ta = tokio::spawn(async move { a.play_on(None).await });
    let tb = tokio::spawn(async move { b.play_on(None).await });
    let (ea, eb) = (ta.await.unwrap().unwrap(), tb.await.unwrap().unwrap());
    assert_eq!(ea, eb);
    assert_eq!(ea.match_id, started[0].match_id);
    assert_eq!(ea.reason, pb::MatchEndReason::TargetReached as i32);
    replica.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bot_accepts_a_rematch_at_once() {
    let replica = single_replica(test_timing()).await;
    let mut a = replica.player_against_bot(pb::BotLevel::Medium).await;
    a.send(Kind::Resign(game::Resign {})).await;
    let first = match_ended(&mut a).await;
    a.send(Kind::Rematch(game::RematchRequest {})).await;
    let offer = a.until(|e| matches!(e, E::RematchOffered(_))).await;
    assert!(matches!(&offer.event, Some(E::RematchOffered(o)) if o.accepted_seats == vec![0, 1]));
    let started = a.until(|e| matches!(e, E::MatchStarted(_))).await;
    assert!(matches!(&started.event, Some(E::MatchStarted(m)) if m.match_id != first.match_id));
    replica.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_player_out_of_grace_abandons_the_match() {
    let mut t = test_timing();
    t.grace_ms = 300;
    let replica = single_replica(t).await;
    let (_room, mut a, b) = replica
        .room()
        .settings(pb::RuleSettings::default())
        .join()
        .await;

    let dropped = Instant::now();
    drop(b);
    let gone = a
        .until(|e| matches!(e, E::ConnectionChanged(c) if c.seat == 1 && c.state == game::ConnectionState::Disconnected as i32))
        .await;
    let Some(E::ConnectionChanged(c)) = &gone.event else {
        unreachable!()
    };
    let deadline = c.grace_deadline.expect("a grace deadline");
    let deadline_ms = deadline.seconds * 1000 + i64::from(deadline.nanos) / 1_000_000;
    let ended = a.until(|e| matches!(e, E::MatchEnded(_))).await;
    let Some(E::MatchEnded(ended_event)) = &ended.event else {
        unreachable!()
    };
    assert_eq!(ended_event.reason, pb::MatchEndReason::Abandoned as i32);
    assert_eq!(ended_event.forfeit_seat, Some(1));
    assert_eq!(ended_event.winner_side, Some(0));
    let at = ended.server_time.unwrap();
    let at_ms = at.seconds * 1000 + i64::from(at.nanos) / 1_000_000;
    assert!(
        at_ms >= deadline_ms,
        "not before the grace deadline ({at_ms} < {deadline_ms})"
    );
    assert!(dropped.elapsed() >= Duration::from_millis(300));
    assert!(
        dropped.elapsed() < Duration::from_secs(5),
        "soon after the deadline"
    );
    replica.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oversized_message_is_refused_and_changes_nothing() {
    let tokens = Tokens::new();
    let store = redis_store(&test_prefix()).await;
    let replica = TestApp::builder(&tokens).store(store.clone()).spawn().await;
    let (room, mut a, mut b) = replica
        .room()
        .settings(pb::RuleSettings::default())
        .join()
        .await;
    let before = store.load(&room).await.unwrap().unwrap().room;
    let actions_before = store.match_actions(&room).await.unwrap();
    let huge = "x".repeat(game_session::MAX_MESSAGE_BYTES + 1);

    // Mid-stream: the stream ends with RESOURCE_EXHAUSTED; nothing is played.
    let card = a.hand.iter().next().unwrap();
    a.send(Kind::PlayCard(game::PlayCard {
        card: Some(basra_proto::convert::card_to_pb(card)),
        capture_choice: None,
        based_on_seq: None,
        client_move_id: huge.clone(),
    }))
    .await;
    assert_eq!(stream_end(&mut a).await, Code::ResourceExhausted);
    b.until(|e| matches!(e, E::ConnectionChanged(c) if c.seat == 0 && c.state == game::ConnectionState::Disconnected as i32))
        .await;
    let after = store.load(&room).await.unwrap().unwrap().room;
    assert_eq!(after.action_count, before.action_count);
    assert_eq!(store.match_actions(&room).await.unwrap(), actions_before);
    assert_eq!(after.game_seq, before.game_seq, "the game did not change");
    assert!(
        logged(&b.log)
            .iter()
            .all(|e| !matches!(e.event, Some(E::CardPlayed(_))))
    );

    // As the first message: refused the same way.
    let mut join = join_message(&room, None);
    if let Some(Kind::Join(j)) = &mut join.kind {
        j.room_id = huge;
    }
    let err = open(
        replica.channel().await,
        &tokens.token(a.user, Role::Player),
        join,
    )
    .await
    .err()
    .unwrap();
    assert_eq!(err.code(), Code::ResourceExhausted, "{}", err.message());

    // The player comes back and the match goes on.
    let mut a2 = Player::join(
        replica.channel().await,
        &tokens,
        a.user,
        0,
        &room,
        Some(a.last_seq),
    )
    .await;
    a2.hand = a.hand;
    a2.until(|e| matches!(e, E::ConnectionChanged(c) if c.seat == 0 && c.state == game::ConnectionState::Connected as i32))
        .await;
    replica.stop().await;
}

/// Every event a spectator receives, checked: no seat, no hand, no dealt card, no move id.
fn check_spectator_event(event: &PlayResponse) {
    match event.event.as_ref().expect("an event") {
        E::Snapshot(s) => {
            let view = s.view.as_ref().unwrap();
            assert_eq!(view.your_seat, None);
            assert!(view.hand.is_empty(), "a spectator's view has no hand");
        }
        E::HandDealt(d) => assert!(d.cards.is_empty(), "a spectator saw dealt cards: {d:?}"),
        E::CardPlayed(p) => assert!(p.client_move_id.is_empty()),
        _ => {}
    }
}

/// Reads a spectator's stream until the match ends; its events.
async fn spectate_to_the_end(events: &mut tonic::Streaming<PlayResponse>) -> Vec<PlayResponse> {
    let mut seen = Vec::new();
    loop {
        let event = tokio::time::timeout(WAIT, events.message())
            .await
            .expect("an event in time")
            .expect("the stream stays up")
            .expect("the stream stays open until the match ends");
        check_spectator_event(&event);
        let end = matches!(event.event, Some(E::MatchEnded(_)));
        seen.push(event);
        if end {
            return seen;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_spectator_never_sees_a_hand_card() {
    let replica = single_replica(test_timing()).await;
    let tokens = replica.tokens().clone();
    let (room, mut a, mut b) = replica.room().settings(low_target()).join().await;
    let watcher = tokens.token(Uuid::now_v7(), Role::Player);
    let spectate = |last_seen_seq| game::PlayRequest {
        kind: Some(Kind::Join(game::Join {
            room_id: room.clone(),
            last_seen_seq,
            spectate: true,
        })),
    };
    // One spectator from the very start (every deal of the log), one mid-match (a
    // snapshot of a running game).
    let (from_start_tx, mut from_start) =
        open(replica.channel().await, &watcher, spectate(Some(0)))
            .await
            .unwrap();
    a.play_on(Some(1)).await;
    b.play_on(Some(1)).await;
    let (late_tx, mut late) = open(replica.channel().await, &watcher, spectate(None))
        .await
        .unwrap();
    let first = tokio::time::timeout(WAIT, late.message())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    check_spectator_event(&first);
    let Some(E::Snapshot(snapshot)) = &first.event else {
        panic!("a late spectator starts with a snapshot: {first:?}")
    };
    let view = snapshot.view.as_ref().unwrap();
    assert!(
        view.hand_counts.iter().any(|&n| n > 0),
        "the players hold cards"
    );
    // Every card is somewhere a spectator may count it (the table may be empty: the
    // second play can sweep it).
    let counted: u32 = view.hand_counts.iter().sum::<u32>()
        + view.table.len() as u32
        + view.pile_sizes.iter().sum::<u32>()
        + view.deck_remaining;
    assert_eq!(counted, 52, "{view:?}");
    assert!(view.hand.is_empty(), "a spectator holds no hand: {view:?}");

    // A spectator cannot act.
    late_tx
        .send(game::PlayRequest {
            kind: Some(Kind::PlayCard(game::PlayCard {
                card: Some(pb::Card { rank: 1, suit: 1 }),
                ..Default::default()
            })),
        })
        .await
        .unwrap();
    loop {
        let event = tokio::time::timeout(WAIT, late.message())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        check_spectator_event(&event);
        if let Some(E::Rejected(r)) = &event.event {
            assert_eq!(r.code, RejectCode::NotSeated as i32);
            break;
        }
    }

    let spectators = tokio::spawn(async move {
        let whole = spectate_to_the_end(&mut from_start).await;
        let rest = spectate_to_the_end(&mut late).await;
        drop((from_start_tx, late_tx));
        (whole, rest)
    });
    let ta = tokio::spawn(async move {
        a.play_on(None).await;
        a
    });
    let tb = tokio::spawn(async move {
        b.play_on(None).await;
        b
    });
    let (a, b) = (ta.await.unwrap(), tb.await.unwrap());
    let (whole, _rest) = spectators.await.unwrap();

    // The spectator saw every deal happen (with counts) while the players got cards.
    let player_deals: Vec<(u64, usize)> = logged(&a.log)
        .iter()
        .filter_map(|e| match &e.event {
            Some(E::HandDealt(d)) => Some((e.seq, d.cards.len())),
            _ => None,
        })
        .collect();
    assert!(player_deals.len() >= 6, "a whole round was dealt");
    assert!(player_deals.iter().all(|&(_, n)| n == 4));
    let spectator_deals: Vec<u64> = whole
        .iter()
        .filter(
            |e| matches!(&e.event, Some(E::HandDealt(d)) if d.hand_counts.iter().all(|&n| n == 4)),
        )
        .map(|e| e.seq)
        .collect();
    assert_eq!(
        spectator_deals,
        player_deals.iter().map(|&(s, _)| s).collect::<Vec<_>>()
    );
    // Every card the spectator is shown comes from the table or a play: taken cards
    // and leftovers were on the table before, so no hand card leaks through them.
    let mut seen_public = CardSet::EMPTY;
    for e in &whole {
        match &e.event {
            Some(E::TableDealt(t)) => t.cards.iter().for_each(|c| seen_public.insert(card(c))),
            Some(E::CardPlayed(p)) => {
                for taken in &p.taken {
                    assert!(seen_public.contains(card(taken)), "taken from the table");
                }
                seen_public.insert(card(p.card.as_ref().unwrap()));
            }
            Some(E::RoundEnded(r)) => {
                for c in &r.leftover {
                    assert!(seen_public.contains(card(c)), "left on the table");
                }
            }
            _ => {}
        }
    }
    assert!(logged(&b.log).len() > 10);
    replica.stop().await;
}

/// The spectators of a room share the bytes of each event this replica commits (encoded
/// once for all who see them alike: `game_session::replica::shared_bytes`), and those bytes say
/// exactly what a fresh projection says: a spectator who reads the whole log afterwards
/// gets the same events (all but their server time).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spectators_share_the_bytes_of_each_event() {
    let replica = single_replica(test_timing()).await;
    let tokens = replica.tokens().clone();
    let (room, a, b) = replica.room().settings(low_target()).join().await;
    let watcher = tokens.token(Uuid::now_v7(), Role::Player);
    let spectate = game::PlayRequest {
        kind: Some(Kind::Join(game::Join {
            room_id: room.clone(),
            last_seen_seq: Some(0),
            spectate: true,
        })),
    };
    let shared_before = replica.metrics().events_shared.get();
    let mut spectators = Vec::new();
    for _ in 0..3 {
        let (tx, mut events) = open(replica.channel().await, &watcher, spectate.clone())
            .await
            .unwrap();
        spectators.push(tokio::spawn(async move {
            let seen = spectate_to_the_end(&mut events).await;
            drop(tx);
            seen
        }));
    }
    for mut player in [a, b] {
        tokio::spawn(async move { player.play_on(None).await });
    }
    let mut live = Vec::new();
    for spectator in spectators {
        live.push(spectator.await.unwrap());
    }
    let shared = replica.metrics().events_shared.get() - shared_before;

    let (_late_tx, mut late) = open(replica.channel().await, &watcher, spectate)
        .await
        .unwrap();
    let replayed = spectate_to_the_end(&mut late).await;
    let untimed = |events: &[PlayResponse]| -> Vec<PlayResponse> {
        events
            .iter()
            .map(|e| PlayResponse {
                server_time: None,
                ..e.clone()
            })
            .collect()
    };
    assert!(replayed.len() > 20, "a whole match: {}", replayed.len());
    for seen in &live {
        assert_eq!(untimed(seen), untimed(&replayed));
    }
    // Three spectators (and, for most events, both players) see each event alike: each
    // encoded once leaves two or more of them sending bytes another one made.
    let events = replayed.len() as u64;
    eprintln!("{shared} shared sends for {events} events");
    assert!(
        shared >= events,
        "{shared} shared sends for {events} events"
    );
    replica.stop().await;
}

/// A store that hears no other replica's notices (as if pub/sub lost them all).
struct Deaf(std::sync::Arc<dyn game_session::RoomStore>);

#[tonic::async_trait]
impl game_session::RoomStore for Deaf {
    async fn load(
        &self,
        room_id: &str,
    ) -> game_session::error::Result<Option<game_session::store::Loaded>> {
        self.0.load(room_id).await
    }
    async fn commit(
        &self,
        commit: game_session::store::Commit<'_>,
    ) -> game_session::error::Result<game_session::store::CommitOutcome> {
        self.0.commit(commit).await
    }
    async fn events_after(
        &self,
        room_id: &str,
        after: u64,
    ) -> game_session::error::Result<game_session::store::EventsAfter> {
        self.0.events_after(room_id, after).await
    }
    async fn room_heads(
        &self,
        room_ids: &[std::sync::Arc<str>],
    ) -> game_session::error::Result<Vec<Option<game_session::store::RoomHead>>> {
        self.0.room_heads(room_ids).await
    }
    async fn match_actions(
        &self,
        room_id: &str,
    ) -> game_session::error::Result<Vec<game_session::room::ActionRecord>> {
        self.0.match_actions(room_id).await
    }
    async fn applied_move(
        &self,
        room_id: &str,
        key: &str,
    ) -> game_session::error::Result<Option<u64>> {
        self.0.applied_move(room_id, key).await
    }
    async fn due_rooms(
        &self,
        shards: &[u32],
        now_ms: i64,
        limit: usize,
    ) -> game_session::error::Result<Vec<String>> {
        self.0.due_rooms(shards, now_ms, limit).await
    }
    async fn claim_due(
        &self,
        room_id: &str,
        now_ms: i64,
        lease_ms: i64,
    ) -> game_session::error::Result<bool> {
        self.0.claim_due(room_id, now_ms, lease_ms).await
    }
    async fn sync_deadline(
        &self,
        room_id: &str,
        version: u64,
        deadline: Option<i64>,
    ) -> game_session::error::Result<()> {
        self.0.sync_deadline(room_id, version, deadline).await
    }
    async fn list_rooms(
        &self,
        offset: usize,
        count: usize,
    ) -> game_session::error::Result<Vec<String>> {
        self.0.list_rooms(offset, count).await
    }
    async fn outbox_fetch(
        &self,
        shards: &[u32],
        consumer: &str,
        min_idle_ms: u64,
        count: usize,
    ) -> game_session::error::Result<Vec<game_session::store::OutboxEntry>> {
        self.0
            .outbox_fetch(shards, consumer, min_idle_ms, count)
            .await
    }
    async fn outbox_ack(&self, id: &str) -> game_session::error::Result<()> {
        self.0.outbox_ack(id).await
    }
    async fn lease_add(
        &self,
        instance: &str,
        seat: &game_session::store::LeasedSeat,
        until_ms: i64,
    ) -> game_session::error::Result<bool> {
        self.0.lease_add(instance, seat, until_ms).await
    }
    async fn lease_remove(
        &self,
        instance: &str,
        seat: &game_session::store::LeasedSeat,
    ) -> game_session::error::Result<()> {
        self.0.lease_remove(instance, seat).await
    }
    async fn lease_refresh(
        &self,
        instance: &str,
        until_ms: i64,
    ) -> game_session::error::Result<bool> {
        self.0.lease_refresh(instance, until_ms).await
    }
    async fn lease_claim_expired(
        &self,
        shards: &[u32],
        now_ms: i64,
        claim_ms: i64,
        limit: usize,
    ) -> game_session::error::Result<Vec<game_session::store::ExpiredLease>> {
        self.0
            .lease_claim_expired(shards, now_ms, claim_ms, limit)
            .await
    }
    async fn lease_release(&self, instance: &str) -> game_session::error::Result<()> {
        self.0.lease_release(instance).await
    }
    async fn walk_shards(
        &self,
        walker: &str,
        now_ms: i64,
        until_ms: i64,
        leaving: bool,
    ) -> game_session::error::Result<Vec<game_session::store::WalkLease>> {
        self.0.walk_shards(walker, now_ms, until_ms, leaving).await
    }
    fn notices(&self) -> tokio::sync::broadcast::Receiver<game_session::store::Notice> {
        tokio::sync::broadcast::channel(1).1
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lost_notices_are_made_up_for_by_the_resync() {
    let tokens = Tokens::new();
    let prefix = test_prefix();
    let r1 = TestApp::builder(&tokens)
        .store(redis_store(&prefix).await)
        .spawn()
        .await;
    // r2 never hears r1's notices; only its resync (every 500 ms here) finds the news.
    let r2 = TestApp::builder(&tokens)
        .store(std::sync::Arc::new(Deaf(redis_store(&prefix).await)))
        .config(test_config("r2", test_timing()))
        .spawn()
        .await;
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
    let mut b = Player::join(r2.channel().await, &tokens, ub, 1, &room, Some(0)).await;
    b.until(|e| matches!(e, E::ConnectionChanged(c) if c.seat == 1))
        .await;
    // Both play a few cards; b learns of each of a's plays only through the resync.
    let ta = tokio::spawn(async move {
        a.play_on(Some(3)).await;
        a
    });
    let started = Instant::now();
    b.play_on(Some(3)).await;
    let a = ta.await.unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "the resync kept the match going"
    );
    assert!(a.moves == 3 && b.moves == 3);
    r1.stop().await;
    r2.stop().await;
}

/// A storm of joins on a replica that lets only two do their Redis work at once: every
/// join waits its turn and is served (none refused), each stream starting where its join
/// asked: a snapshot, or every event after the last seen seq (older than its own connect
/// commit: read from the log; only its own connect: from the commit).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_storm_of_joins_is_queued_and_every_join_is_served() {
    const ROOMS: usize = 40;
    let tokens = Tokens::new();
    let mut config = test_config("r1", test_timing());
    config.join_concurrency = 2;
    config.max_streams = 4 * ROOMS;
    let replica = TestApp::builder(&tokens).config(config).spawn().await;
    let mut rooms = Vec::new();
    for _ in 0..ROOMS {
        rooms.push(replica.room().create().await);
    }
    // A first join, left again: the rooms' logs start with the deal.
    let channel = replica.channel().await;
    let (room0, ua0, _) = &rooms[0];
    let mut probe = Player::join(channel.clone(), &tokens, *ua0, 0, room0, None).await;
    let first = probe.next().await.unwrap();
    assert!(matches!(first.event, Some(E::Snapshot(_))), "{first:?}");
    drop(probe);
    tokio::time::sleep(Duration::from_millis(200)).await;

    let channels = [
        channel.clone(),
        replica.channel().await,
        replica.channel().await,
    ];
    let mut joins = tokio::task::JoinSet::new();
    for (i, (room, ua, ub)) in rooms.iter().enumerate() {
        for (seat, user) in [(0u32, *ua), (1, *ub)] {
            // Seat 0 asks for everything from the start, seat 1 for a snapshot.
            let last_seen = (seat == 0).then_some(0);
            let token = tokens.token(user, Role::Player);
            let (room, channel) = (room.clone(), channels[i % channels.len()].clone());
            joins.spawn(async move {
                let (tx, mut events) =
                    open(channel, &token, join_message(&room, last_seen)).await?;
                let first = events.message().await?.expect("a first event");
                drop(tx);
                Ok::<_, tonic::Status>((last_seen, first))
            });
        }
    }
    let mut served = 0;
    while let Some(joined) = tokio::time::timeout(Duration::from_secs(30), joins.join_next())
        .await
        .expect("every join is served within 30 s")
    {
        let (last_seen, first) = joined.unwrap().expect("no join is refused");
        match last_seen {
            Some(0) => assert_eq!(first.seq, 1, "a resume starts after its last seen seq"),
            _ => assert!(matches!(first.event, Some(E::Snapshot(_))), "{first:?}"),
        }
        served += 1;
    }
    assert_eq!(served, 2 * ROOMS);

    // A resume that missed only its own connect gets exactly that event next.
    let (room, ua, _) = &rooms[1];
    let mut a = Player::join(channel.clone(), &tokens, *ua, 0, room, None).await;
    a.next().await.unwrap();
    let seen = a.last_seq;
    drop(a);
    // Its disconnect is committed meanwhile (seq `seen + 1`).
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut again = Player::join(channel, &tokens, *ua, 0, room, Some(seen + 1)).await;
    let next = again.next().await.unwrap();
    assert_eq!(
        next.seq,
        seen + 2,
        "after the disconnect it saw, its own connect"
    );
    assert!(
        matches!(&next.event, Some(E::ConnectionChanged(c)) if c.seat == 0 && c.state == game::ConnectionState::Connected as i32),
        "{next:?}"
    );
    replica.stop().await;
}

/// A player banned by accounts (the revoked list shared through Redis, as production
/// runs it): their Play stream ends with PERMISSION_DENIED and the reason within 5 s,
/// their next Play is refused, the other player's stream goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_banned_players_play_stream_ends_within_five_seconds() {
    use basra_platform::revocation::{Revocations, Revoked};
    let tokens = Tokens::new();
    let prefix = test_prefix();
    let shutdown = tokio_util::sync::CancellationToken::new();
    let connect = || async {
        let redis = basra_platform::redis::Redis::connect(&redis_url())
            .await
            .expect("Redis must be running at REDIS_URL");
        Revocations::shared(redis, &prefix, shutdown.clone())
            .await
            .unwrap()
    };
    let (ours, accounts) = (connect().await, connect().await);
    let config = game_session::ServiceConfig {
        revocations: ours,
        ..test_config("r1", test_timing())
    };
    let replica = TestApp::builder(&tokens)
        .store(redis_store(&prefix).await)
        .config(config)
        .spawn()
        .await;
    let (room, mut a, mut b) = replica
        .room()
        .settings(pb::RuleSettings::default())
        .join()
        .await;

    let started = std::time::Instant::now();
    accounts
        .revoke(
            a.user,
            Revoked::banned_for("cheating", Duration::from_secs(3600)),
        )
        .await
        .unwrap();
    let status = loop {
        match tokio::time::timeout(Duration::from_secs(5), a.events.message())
            .await
            .expect("the banned player's stream ends within 5 s")
        {
            Ok(Some(event)) => a.observe(&event),
            Ok(None) => panic!("ended OK, not with the ban"),
            Err(status) => break status,
        }
    };
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(status.code(), tonic::Code::PermissionDenied, "{status:?}");
    assert!(status.message().contains("cheating"), "{status:?}");
    // The next call is refused.
    let (_tx, rx) = tokio::sync::mpsc::channel::<basra_proto::basra::game::v1::PlayRequest>(1);
    let refused = basra_proto::basra::game::v1::game_service_client::GameServiceClient::new(
        replica.channel().await,
    )
    .play(authed(
        tokio_stream::wrappers::ReceiverStream::new(rx),
        &tokens.token(a.user, basra_platform::auth::Role::Player),
    ))
    .await
    .unwrap_err();
    assert_eq!(refused.code(), tonic::Code::PermissionDenied);
    // The other player's stream stays open: it sees the banned seat go.
    b.until(|e| matches!(e, E::ConnectionChanged(c) if c.seat == 0 && c.state == game::ConnectionState::Disconnected as i32))
        .await;
    let _ = room;
    shutdown.cancel();
}
