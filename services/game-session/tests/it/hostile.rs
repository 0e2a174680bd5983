//! Hostile clients (issue: reliability and security): each gets the documented answer and
//! leaves the room, the replica and other players as they were.

use std::time::Duration;

use basra_platform::auth::Role;
use basra_proto::basra::game::v1::{
    self as game, RejectCode, game_service_client::GameServiceClient, play_request::Kind,
    play_response::Event as E,
};
use basra_testkit::authed;
use basra_testkit::game_session::*;
use tonic::Code;
use uuid::Uuid;

/// The next `rejected` on a player's stream.
async fn rejected(p: &mut Player) -> game::Rejected {
    match p.until(|e| matches!(e, E::Rejected(_))).await.event {
        Some(E::Rejected(r)) => r,
        _ => unreachable!(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_that_never_joins_is_closed_and_frees_its_place() {
    let tokens = Tokens::new();
    let mut cfg = test_config("r1", test_timing());
    cfg.max_streams = 1;
    cfg.join_timeout = Duration::from_millis(300);
    let replica = TestApp::builder(&tokens).config(cfg).spawn().await;
    let (room, ua, _) = replica.room().create().await;

    // Opens the stream and says nothing: it holds the replica's only place until the join
    // timeout, then ends with INVALID_ARGUMENT.
    let (_silent_tx, rx) = tokio::sync::mpsc::channel::<game::PlayRequest>(1);
    let mut client = GameServiceClient::new(replica.channel().await);
    let silent = client.play(authed(
        tokio_stream::wrappers::ReceiverStream::new(rx),
        &tokens.token(Uuid::now_v7(), Role::Player),
    ));
    let err = tokio::time::timeout(Duration::from_secs(5), silent)
        .await
        .expect("answered within the join timeout")
        .unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument, "{err}");
    assert!(err.message().contains("join"), "{err}");

    // The place is free again: a real player gets in.
    let mut a = Player::join(replica.channel().await, &tokens, ua, 0, &room, None).await;
    assert!(matches!(
        a.next().await.unwrap().event,
        Some(E::Snapshot(_))
    ));
    replica.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_plays_out_of_turn_is_rejected_one_by_one_and_changes_nothing() {
    let tokens = Tokens::new();
    let store = redis_store(&test_prefix()).await;
    let replica = TestApp::builder(&tokens).store(store.clone()).spawn().await;
    let (room, mut a, mut b) = replica.room().settings(low_target()).join().await;
    let version = store.load(&room).await.unwrap().unwrap().version;
    // Seat 1 is not to play: 200 plays of a card it may not even hold.
    let card = basra_proto::convert::card_to_pb("AS".parse().unwrap());
    for i in 0..200 {
        b.send(Kind::PlayCard(game::PlayCard {
            card: Some(card),
            capture_choice: None,
            based_on_seq: None,
            client_move_id: format!("flood-{i}"),
        }))
        .await;
    }
    for _ in 0..200 {
        let r = rejected(&mut b).await;
        assert!(
            r.code == RejectCode::NotYourTurn as i32 || r.code == RejectCode::CardNotInHand as i32,
            "{r:?}"
        );
    }
    assert_eq!(
        store.load(&room).await.unwrap().unwrap().version,
        version,
        "nothing was written"
    );
    // The match goes on as if nothing happened.
    let ended = a.play_on(Some(1)).await;
    assert!(ended.is_none(), "one play, the match runs");
    b.until(|e| matches!(e, E::CardPlayed(p) if p.seat == 0))
        .await;
    replica.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_larger_than_the_codec_buffer_is_read_whole_and_answered() {
    // The codec's buffers start small (basra_proto::codec::BUFFER_BYTES): a bigger message
    // within the limit still arrives whole and gets its answer; the stream goes on.
    let tokens = Tokens::new();
    let store = redis_store(&test_prefix()).await;
    let replica = TestApp::builder(&tokens).store(store.clone()).spawn().await;
    let (room, mut a, mut b) = replica.room().settings(low_target()).join().await;
    let version = store.load(&room).await.unwrap().unwrap().version;
    let long_id = "m".repeat(8 * basra_proto::codec::BUFFER_BYTES);
    assert!(long_id.len() < game_session::MAX_MESSAGE_BYTES);
    let card = a.hand.iter().next().unwrap();
    a.send(Kind::PlayCard(game::PlayCard {
        card: Some(basra_proto::convert::card_to_pb(card)),
        capture_choice: None,
        based_on_seq: None,
        client_move_id: long_id,
    }))
    .await;
    let r = rejected(&mut a).await;
    assert!(r.message.contains("client_move_id"), "{r:?}");
    assert_eq!(store.load(&room).await.unwrap().unwrap().version, version);
    // The same stream plays on.
    assert!(a.play_on(Some(1)).await.is_none());
    b.until(|e| matches!(e, E::CardPlayed(p) if p.seat == 0))
        .await;
    replica.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_spectator_cannot_play_and_a_seat_token_does_not_open_another_room() {
    let tokens = Tokens::new();
    let store = redis_store(&test_prefix()).await;
    let replica = TestApp::builder(&tokens).store(store.clone()).spawn().await;
    let (room, _a, _b) = replica.room().settings(low_target()).join().await;
    let (other_room, _, _) = replica.room().create().await;
    let version = store.load(&room).await.unwrap().unwrap().version;

    // A spectator (allowed in these rooms) tries to play and to resign.
    let watcher = Uuid::now_v7();
    let join = spectate_message(&room);
    let (tx, mut events) = open(
        replica.channel().await,
        &tokens.token(watcher, Role::Player),
        join,
    )
    .await
    .unwrap();
    let card = basra_proto::convert::card_to_pb("AS".parse().unwrap());
    tx.send(game::PlayRequest {
        kind: Some(Kind::PlayCard(game::PlayCard {
            card: Some(card),
            client_move_id: "spectator".into(),
            ..Default::default()
        })),
    })
    .await
    .unwrap();
    tx.send(game::PlayRequest {
        kind: Some(Kind::Resign(game::Resign {})),
    })
    .await
    .unwrap();
    let mut refusals = Vec::new();
    while refusals.len() < 2 {
        let event = tokio::time::timeout(Duration::from_secs(5), events.message())
            .await
            .expect("an answer in time")
            .unwrap()
            .expect("the stream stays open");
        if let Some(E::Rejected(r)) = event.event {
            refusals.push(r.code);
        }
    }
    assert_eq!(refusals, [RejectCode::NotSeated as i32; 2]);
    assert_eq!(store.load(&room).await.unwrap().unwrap().version, version);

    // A player of the first room joins the second as a player: refused.
    let seated = store.load(&room).await.unwrap().unwrap().room;
    let user = match &seated.seats[0].occupant {
        game_session::room::Occupant::Player { user_id, .. } => user_id.parse().unwrap(),
        other => panic!("{other:?}"),
    };
    let err = open(
        replica.channel().await,
        &tokens.token(user, Role::Player),
        join_message(&other_room, None),
    )
    .await
    .expect_err("refused");
    assert_eq!(err.code(), Code::PermissionDenied, "{err}");
    replica.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_4_mb_message_ends_only_its_own_stream_and_changes_nothing() {
    let tokens = Tokens::new();
    let store = redis_store(&test_prefix()).await;
    let replica = TestApp::builder(&tokens).store(store.clone()).spawn().await;
    let (room, mut a, mut b) = replica.room().settings(low_target()).join().await;
    let version = store.load(&room).await.unwrap().unwrap().version;

    // A play whose move id alone is 4 MB: refused while decoding, never buffered whole.
    b.send(Kind::PlayCard(game::PlayCard {
        card: Some(basra_proto::convert::card_to_pb("AS".parse().unwrap())),
        capture_choice: None,
        based_on_seq: None,
        client_move_id: "x".repeat(4 * 1024 * 1024),
    }))
    .await;
    assert_eq!(stream_end(&mut b).await, Code::ResourceExhausted);
    // The only thing the room records is that seat 1's stream went away: no play.
    loop {
        let event = a.next().await.expect("a's stream stays up");
        match event.event.unwrap() {
            E::ConnectionChanged(c) if c.seat == 1 => {
                assert_eq!(c.state, game::ConnectionState::Disconnected as i32);
                break;
            }
            E::CardPlayed(p) => panic!("nothing may be played: {p:?}"),
            _ => {}
        }
    }
    assert_eq!(
        store.load(&room).await.unwrap().unwrap().version,
        version + 1,
        "one change: the disconnect"
    );

    // The other player's stream and the room carry on.
    let ended = a.play_on(Some(1)).await;
    assert!(ended.is_none(), "one play, the match runs");
    replica.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watcher_that_never_reads_holds_up_nobody() {
    let tokens = Tokens::new();
    let replica = TestApp::builder(&tokens).spawn().await;
    let (room, mut a, mut b) = replica.room().settings(low_target()).join().await;
    // A spectator that joins and then never reads: its events pile up only to its own
    // stream's bounded queue and HTTP/2 window, and its stream task waits alone.
    let join = spectate_message(&room);
    let (_tx, _unread) = open(
        replica.channel().await,
        &tokens.token(Uuid::now_v7(), Role::Player),
        join,
    )
    .await
    .unwrap();

    // The players play the whole match at full speed meanwhile.
    let ta = tokio::spawn(async move { a.play_on(None).await });
    let tb = tokio::spawn(async move { b.play_on(None).await });
    let (ea, eb) = tokio::time::timeout(Duration::from_secs(60), async {
        (ta.await.unwrap(), tb.await.unwrap())
    })
    .await
    .expect("the match ends although a watcher never reads");
    assert_eq!(ea.expect("a saw the end"), eb.expect("b saw the end"));
    replica.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_account_cannot_take_the_replicas_streams_from_the_players() {
    let tokens = Tokens::new();
    let mut cfg = test_config("r1", test_timing());
    // Room for the players' two streams besides the most one account may hold.
    cfg.max_streams = 7;
    cfg.streams_per_account = game_session::StreamsPerAccount::new(2, 3);
    let replica = TestApp::builder(&tokens).config(cfg).spawn().await;
    let (room, ua, ub) = replica.room().create().await;
    let guest = tokens.token(Uuid::now_v7(), Role::Player);
    let mut client = GameServiceClient::new(replica.channel().await);
    let watch = || {
        authed(
            game::WatchRequest {
                room_id: room.clone(),
                last_seen_seq: None,
                spectate: true,
            },
            &guest,
        )
    };

    // One guest spectates with as many streams as it can: Watch, then Play.
    let mut watches = Vec::new();
    let mut refusals = Vec::new();
    for _ in 0..10 {
        match client.watch(watch()).await {
            Ok(stream) => watches.push(stream.into_inner()),
            Err(status) => refusals.push(status),
        }
    }
    let mut plays = Vec::new();
    for _ in 0..10 {
        match open(replica.channel().await, &guest, spectate_message(&room)).await {
            Ok(stream) => plays.push(stream),
            Err(status) => refusals.push(status),
        }
    }
    assert_eq!((watches.len(), plays.len()), (3, 2));
    assert_eq!(refusals.len(), 15);
    for refused in &refusals {
        assert_eq!(refused.code(), Code::ResourceExhausted, "{refused:?}");
        assert_eq!(
            basra_platform::error::retry_after_of(refused),
            Some(basra_platform::stream_limit::RETRY_AFTER),
            "{refused:?}"
        );
    }
    assert!(refusals[0].message().contains("Watch"), "{:?}", refusals[0]);
    assert!(
        refusals[14].message().contains("Play"),
        "{:?}",
        refusals[14]
    );

    // The players still get in and play.
    let mut a = Player::join(replica.channel().await, &tokens, ua, 0, &room, None).await;
    let mut b = Player::join(replica.channel().await, &tokens, ub, 1, &room, None).await;
    assert!(matches!(
        a.next().await.unwrap().event,
        Some(E::Snapshot(_))
    ));
    assert!(matches!(
        b.next().await.unwrap().event,
        Some(E::Snapshot(_))
    ));

    // A closed stream frees its account's slot (and the replica's).
    drop(watches.pop());
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    loop {
        match client.watch(watch()).await {
            Ok(stream) => break watches.push(stream.into_inner()),
            Err(status) if tokio::time::Instant::now() < deadline => {
                assert_eq!(status.code(), Code::ResourceExhausted, "{status:?}");
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Err(status) => panic!("the slot was not freed: {status:?}"),
        }
    }
    replica.stop().await;
}
