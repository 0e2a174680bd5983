//! The matchmaking API as clients see it: real tonic servers and clients,
//! real Redis, a fake game-session over real gRPC, time on a manual clock
//! (`basra_testkit::matchmaking`: `spawn_app()`, players, a queued pair).

use std::time::Duration;

use basra_proto::basra::{
    common::v1::{RoomStatus, RoomVisibility, RuleSettings, SeatOccupant},
    game::v1::seat_assignment,
    matchmaking::v1::{
        CancelFindRequest, CancelReason, CreateRoomRequest, FindMatchRequest,
        GetCurrentSeatRequest, InviteFriendResponse, JoinRoomRequest, ListPublicRoomsRequest,
        MatchPreset, find_match_response::Update,
    },
};
use basra_testkit::{
    authed, eventually,
    matchmaking::{
        Player, QueuedPair, RANKED2, TestApp, WAIT, cancelled, find, join_code, join_id, matched,
        name_of, next, next_change, queued, spawn_app,
    },
    redis::commands_mentioning,
};
use matchmaking::store::{NewTicket, TicketState};
use tonic::{Code, Request};
use uuid::Uuid;

#[tokio::test]
async fn two_players_are_matched_into_a_room_made_by_game_session() {
    let app = spawn_app().await;
    let (a, b) = (app.player(), app.guest());
    let mut sa = a.find("ta", false).await;
    let q = queued(&mut sa).await;
    assert_eq!((q.position, q.players_waiting), (1, 1));
    let mut sb = b.find("tb", false).await;
    let ma = matched(&mut sa).await;
    let mb = matched(&mut sb).await;
    assert_eq!(ma.room_id, mb.room_id);
    let mut seats = [ma.seat, mb.seat];
    seats.sort();
    assert_eq!(seats, [0, 1]);
    assert!(!ma.ranked);
    assert_eq!(ma.settings.unwrap().target_score, Some(101));
    assert_eq!(ma.seats.len(), 2);
    assert!(
        ma.seats
            .iter()
            .any(|s| s.user_id == b.user_id() && s.is_guest)
    );
    for seat in &ma.seats {
        assert_eq!(
            seat.display_name,
            name_of(&seat.user_id),
            "names from accounts"
        );
    }
    // The stream ends after `matched`.
    assert!(sa.message().await.unwrap().is_none());
    let created = app.game().created();
    assert_eq!(created.len(), 1);
    assert_eq!(created[0].room_id, ma.room_id);
    assert!(
        app.metrics
            .render()
            .contains("basra_matchmaking_matches_total 1")
    );
    // Cancelling after the match says where to play.
    let answer = a.cancel("ta").await.unwrap();
    assert!(!answer.cancelled);
    assert_eq!(answer.matched.unwrap().room_id, ma.room_id);
}

/// Players who block each other (either way) are never put in one group: a blocks b;
/// a and b wait side by side until c comes, who is matched with a (the older search).
#[tokio::test]
async fn players_who_block_each_other_never_meet_in_the_queue() {
    let app = spawn_app().await;
    let (a, b, c) = (app.player(), app.player(), app.player());
    app.ratings().block(a.id, b.id);
    let mut streams = Vec::new();
    for (ticket, player) in [("block-a", &a), ("block-b", &b)] {
        streams.push(player.find_queued(ticket, false).await);
    }
    // Many pairing rounds pass (a tick is 20 ms): the only two searchers stay apart.
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert!(
        app.game().created().is_empty(),
        "a blocks b: no room for them"
    );
    let mut sc = c.find("block-c", false).await;
    let mc = matched(&mut sc).await;
    let ma = matched(&mut streams[0]).await;
    assert_eq!(ma.room_id, mc.room_id);
    let mut seated: Vec<String> = ma.seats.iter().map(|s| s.user_id.clone()).collect();
    seated.sort();
    let mut expected = vec![a.user_id(), c.user_id()];
    expected.sort();
    assert_eq!(seated, expected);
    assert_eq!(app.game().created().len(), 1);
    // b is still waiting, alone.
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(app.game().created().len(), 1);
    let b_ticket = app
        .store
        .poll("block-b", app.now_ms(), 15_000)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(b_ticket.state, TicketState::Queued);
}

#[tokio::test]
async fn the_rating_window_widens_with_controlled_time() {
    let app = spawn_app().await;
    let (a, b) = (app.player(), app.player());
    app.ratings().set(a.id, 1500.0);
    app.ratings().set(b.id, 1620.0);
    let mut sa = a.find_queued("wa", true).await;
    let _sb = b.find_queued("wb", true).await;
    // 120 apart, window 50: several rounds pass without a match.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(app.game().created().is_empty());
    // 5 s later the window is 100: widened, still no match.
    app.clock().advance(5_000);
    match next_change(&mut sa).await.unwrap() {
        Update::WindowWidened(w) => {
            assert_eq!((w.rating_min, w.rating_max), (1400.0, 1600.0));
            assert!(!w.bots_next);
        }
        other => panic!("{other:?}"),
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(app.game().created().is_empty());
    // At 7 s it is 120: matched.
    app.clock().advance(2_000);
    loop {
        match next_change(&mut sa).await.unwrap() {
            Update::WindowWidened(_) => continue,
            Update::Matched(m) => {
                assert!(m.ranked);
                let ratings: Vec<f64> = m.seats.iter().filter_map(|s| s.rating).collect();
                assert_eq!(ratings.len(), 2);
                break;
            }
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(app.game().created().len(), 1);
    assert!(app.game().created()[0].ranked);
}

#[tokio::test]
async fn four_ranked_players_are_seated_in_balanced_partnerships() {
    let app = spawn_app().await;
    // Within each other's windows; only 1500+1530 against 1505+1525 is even.
    let players: Vec<(Player, f64)> = [1500.0, 1505.0, 1525.0, 1530.0]
        .into_iter()
        .map(|rating| (app.player(), rating))
        .collect();
    let mut streams = Vec::new();
    for (i, (player, rating)) in players.iter().enumerate() {
        app.ratings().set(player.id, *rating);
        let mut request = find(&format!("four-{i}"), true);
        request.preset = Some(MatchPreset {
            seats: Some(4),
            target_score: None,
        });
        streams.push(player.search(request).await.unwrap());
    }
    for stream in &mut streams {
        loop {
            match next_change(stream).await.unwrap() {
                Update::Matched(m) => {
                    assert!(m.ranked);
                    break;
                }
                Update::Queued(_) | Update::WindowWidened(_) => continue,
                other => panic!("{other:?}"),
            }
        }
    }
    let created = app.game().created();
    assert_eq!(created.len(), 1);
    let seat_rating = |seat: usize| {
        let user = match &created[0].seats[seat].occupant {
            Some(seat_assignment::Occupant::UserId(id)) => id.clone(),
            other => panic!("seat {seat}: {other:?}"),
        };
        players
            .iter()
            .find(|(player, _)| player.user_id() == user)
            .map(|(_, rating)| *rating)
            .unwrap()
    };
    let teams = (
        seat_rating(0) + seat_rating(2),
        seat_rating(1) + seat_rating(3),
    );
    assert_eq!(teams, (3030.0, 3030.0), "seats 0+2 against 1+3");
}

#[tokio::test]
async fn queued_updates_estimate_the_wait_from_recent_matches() {
    let app = spawn_app().await;
    let search = |ticket: &'static str| {
        let player = app.player();
        async move { player.find(ticket, false).await }
    };
    // Two matches of this queue: one player waited 6 s, the other none.
    for (a, b) in [("ea1", "eb1"), ("ea2", "eb2")] {
        let mut sa = search(a).await;
        let q = queued(&mut sa).await;
        if a == "ea1" {
            // Nothing to go on yet for the first one.
            assert_eq!(q.estimated_wait, None);
        }
        app.clock().advance(6_000);
        let mut sb = search(b).await;
        for s in [&mut sa, &mut sb] {
            matched(s).await;
        }
    }
    // Recent waits 0, 0, 6 and 6 s: a new search is told about 6 s.
    let mut sc = search("ec").await;
    let q = queued(&mut sc).await;
    assert_eq!(
        q.estimated_wait,
        Some(prost_types::Duration {
            seconds: 6,
            nanos: 0
        })
    );
}

#[tokio::test]
async fn cancel_find_ends_the_search() {
    let app = spawn_app().await;
    let a = app.player();
    let mut s = a.find_queued("c1", true).await;
    assert!(a.cancel("c1").await.unwrap().cancelled);
    assert_eq!(
        cancelled(&mut s).await.reason,
        CancelReason::ByClient as i32
    );
    assert!(s.message().await.unwrap().is_none());
    // Idempotent; unknown and empty ids are errors; others' tickets unknown.
    assert!(a.cancel("c1").await.unwrap().cancelled);
    assert_eq!(a.cancel("nope").await.unwrap_err().code(), Code::NotFound);
    assert_eq!(
        a.cancel("").await.unwrap_err().code(),
        Code::InvalidArgument
    );
    assert_eq!(
        app.player().cancel("c1").await.unwrap_err().code(),
        Code::NotFound
    );
}

#[tokio::test]
async fn a_dropped_stream_takes_the_ticket_out_and_a_resume_keeps_the_place() {
    let app = spawn_app().await;
    let (a, b) = (app.player(), app.player());
    let sa = a.find_queued("d-a", false).await;
    drop(sa);
    let store = app.store.clone();
    assert!(
        eventually(WAIT, || async {
            store.queue_lengths().await.unwrap().is_empty()
        })
        .await,
        "the dropped ticket left the pool"
    );
    // b is not matched with the absent a.
    let mut sb = b.find("d-b", false).await;
    let q = queued(&mut sb).await;
    assert_eq!((q.position, q.players_waiting), (1, 1));
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(app.game().created().is_empty());
    // a comes back within the grace period: first in line, matched with b.
    let mut sa = a.find("d-a", false).await;
    let m = matched(&mut sa).await;
    assert_eq!(m.seat, 0, "a, queued first, is the anchor");
    // A dropped ticket not resumed is gone after the grace period.
    let sc = app.player().find("d-c", false).await;
    drop(sc);
    assert!(
        eventually(WAIT, || async {
            store.queue_lengths().await.unwrap().is_empty()
        })
        .await
    );
    app.clock().advance(31_000);
    assert!(
        eventually(WAIT, || async {
            store.poll("d-c", 0, 0).await.unwrap().is_none()
        })
        .await,
        "expired after the grace period"
    );
}

#[tokio::test]
async fn a_resumed_search_ends_the_older_stream_instead_of_spinning_on_it() {
    let app = spawn_app().await;
    let a = app.player();
    let ticket = Uuid::now_v7().to_string();
    let mut old = app
        .new_client()
        .await
        .find_match(a.request(find(&ticket, false)))
        .await
        .unwrap()
        .into_inner();
    queued(&mut old).await;
    // The phone switches networks: the same search again on a new connection,
    // while the server still holds the old one open.
    let mut client = app.new_client().await;
    let mut new = client
        .find_match(a.request(find(&ticket, false)))
        .await
        .unwrap()
        .into_inner();
    queued(&mut new).await;
    // One stream reading the ticket at its heartbeat (100 ms here): about ten reads
    // a second, not a loop re-reading it as fast as Redis answers.
    let reads = commands_mentioning(&ticket, Duration::from_secs(1)).await;
    assert!(
        reads <= 30,
        "{reads} commands on the held ticket in one second"
    );
    let ended = next(&mut old).await.unwrap_err();
    assert_eq!(ended.code(), Code::Aborted, "{ended:?}");
    assert!(ended.message().contains("resumed"), "{ended:?}");
    // The newer stream follows the search: it is still queued and ends as told.
    assert!(
        client
            .cancel_find(a.request(CancelFindRequest {
                ticket_id: ticket.clone(),
            }))
            .await
            .unwrap()
            .into_inner()
            .cancelled
    );
    assert_eq!(
        cancelled(&mut new).await.reason,
        CancelReason::ByClient as i32
    );
}

#[tokio::test]
async fn an_account_holds_at_most_its_share_of_find_match_streams() {
    let app = TestApp::builder()
        .settings(|s| s.queue.max_streams_per_account = 1)
        .spawn()
        .await;
    let (a, b) = (app.player(), app.player());
    let first = a.find_queued("share-a1", false).await;
    let refused = a.search(find("share-a2", false)).await.unwrap_err();
    assert_eq!(refused.code(), Code::ResourceExhausted, "{refused:?}");
    assert!(refused.message().contains("FindMatch"), "{refused:?}");
    assert_eq!(
        basra_platform::error::retry_after_of(&refused),
        Some(basra_platform::stream_limit::RETRY_AFTER)
    );
    // The refused search changed nothing: the first one goes on.
    assert!(
        app.store.poll("share-a2", 0, 0).await.unwrap().is_none(),
        "a refused stream queues nothing"
    );
    // Another account is not affected.
    let _other = b.find_queued("share-b", true).await;
    // A stream that ends frees its slot.
    drop(first);
    assert!(
        eventually(WAIT, || {
            let a = a.clone();
            async move { a.search(find("share-a1", false)).await.is_ok() }
        })
        .await,
        "the slot was freed"
    );
}

#[tokio::test]
async fn tickets_of_vanished_replicas_expire() {
    let app = spawn_app().await;
    let store = app.store.clone();
    // What a replica that died mid-search leaves behind: an attached ticket
    // whose heartbeat stops.
    store
        .enqueue(
            NewTicket {
                id: "orphan".into(),
                user_id: "ghost".into(),
                guest: false,
                format: RANKED2,
                rating: 1500.0,
                allow_bots: false,
                blocks: Vec::new(),
            },
            app.now_ms(),
            15_000,
            30_000,
        )
        .await
        .unwrap();
    assert_eq!(store.queue_lengths().await.unwrap().len(), 1);
    app.clock().advance(15_000);
    assert!(
        eventually(WAIT, || async {
            store.poll("orphan", 0, 0).await.unwrap().is_none()
        })
        .await
    );
    assert!(store.queue_lengths().await.unwrap().is_empty());
    assert!(
        app.metrics
            .render()
            .contains("basra_matchmaking_expired_total 1")
    );
}

#[tokio::test]
async fn a_second_search_supersedes_the_first() {
    let app = spawn_app().await;
    let player = app.player();
    let mut first = player.find_queued("s1", false).await;
    let _second = player.find_queued("s2", true).await;
    assert_eq!(
        cancelled(&mut first).await.reason,
        CancelReason::Superseded as i32
    );
}

#[tokio::test]
async fn bots_fill_an_unranked_search_after_the_wait() {
    let app = spawn_app().await;
    let request = FindMatchRequest {
        ticket_id: "bot".into(),
        ranked: false,
        preset: Some(MatchPreset {
            seats: Some(4),
            target_score: Some(51),
        }),
        allow_bots: None, // default: on for unranked
    };
    let mut s = app.player().search(request).await.unwrap();
    queued(&mut s).await;
    app.clock().advance(20_000);
    let m = matched(&mut s).await;
    assert!(!m.ranked);
    assert_eq!(m.seats.len(), 4);
    let bots = m
        .seats
        .iter()
        .filter(|s| s.occupant == SeatOccupant::Bot as i32)
        .count();
    assert_eq!(bots, 3);
    // A bot goes by its level, the same name game-session shows at the table.
    for seat in m
        .seats
        .iter()
        .filter(|s| s.occupant == SeatOccupant::Bot as i32)
    {
        assert_eq!(seat.display_name, "Bot (medium)");
    }
    assert_eq!(m.settings.unwrap().target_score, Some(51));
}

#[tokio::test]
async fn game_session_unavailable_answers_unavailable_and_keeps_the_tickets() {
    let app = spawn_app().await;
    app.game().set_unavailable(true);
    let mut pair = app.queued_pair("ga", "gb").await;
    pair.end_unavailable().await;
    let QueuedPair { a, b, .. } = pair;
    // Kept, together: game-session may have made their room, so they wait
    // for it rather than for anyone else.
    for id in ["ga", "gb"] {
        let v = app.store.poll(id, 0, 0).await.unwrap().expect("kept");
        assert_eq!(v.state, TicketState::Pending);
    }
    // Rooms too (for a player who is not in the queue).
    let err = app
        .player()
        .create_room(CreateRoomRequest::default())
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::Unavailable);
    // A queued player may not make a room meanwhile.
    let err = a
        .create_room(CreateRoomRequest::default())
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::FailedPrecondition, "{err}");
    // Back up: the same tickets resume and match.
    app.game().set_unavailable(false);
    let mut sa = a.find("ga", false).await;
    let mut sb = b.find("gb", false).await;
    app.clock()
        .advance(app.settings().queue.room_retry_millis as i64);
    let ma = matched(&mut sa).await;
    let mb = matched(&mut sb).await;
    assert_eq!(ma.room_id, mb.room_id);
    // Every attempt was for that one room.
    assert!(app.game().created().iter().all(|r| r.room_id == ma.room_id));
}

/// A group whose room game-session never confirms is given up after
/// queue.room_max_attempts: its players, resuming, are told why their search ended.
#[tokio::test]
async fn a_group_whose_room_cannot_be_made_is_given_up_and_its_players_told() {
    let app = TestApp::builder()
        .settings(|s| s.queue.room_max_attempts = 2)
        .spawn()
        .await;
    app.game().set_unavailable(true);
    // Attempt 1 fails: UNAVAILABLE, the tickets wait for that room.
    let mut pair = app.queued_pair("ua", "ub").await;
    pair.end_unavailable().await;
    let QueuedPair { a, b, .. } = pair;
    // They resume; attempt 2 (the retry) fails too: the group is given up.
    let mut sa = a.find("ua", false).await;
    let mut sb = b.find("ub", false).await;
    app.clock()
        .advance(app.settings().queue.room_retry_millis as i64);
    for stream in [&mut sa, &mut sb] {
        assert_eq!(
            cancelled(stream).await.reason,
            CancelReason::RoomUnavailable as i32
        );
        assert!(stream.message().await.unwrap().is_none(), "the stream ends");
    }
    // (Every call to the fake game-session here is a CreateRoom.)
    let calls = || app.game().calls.load(std::sync::atomic::Ordering::SeqCst);
    let attempts = calls();
    assert_eq!(attempts, 2, "one first attempt and one retry");
    // No more attempts, and a later resume hears the same.
    app.clock()
        .advance(app.settings().queue.room_retry_millis as i64);
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(calls(), attempts);
    let mut again = a.find("ua", false).await;
    assert_eq!(
        cancelled(&mut again).await.reason,
        CancelReason::RoomUnavailable as i32
    );
    // A new search starts afresh.
    app.game().set_unavailable(false);
    let mut fresh_a = a.find("ua-2", false).await;
    let mut fresh_b = b.find("ub-2", false).await;
    let ma = matched(&mut fresh_a).await;
    let mb = matched(&mut fresh_b).await;
    assert_eq!(ma.room_id, mb.room_id);
}

/// Each player's rooms as game-session saw them (distinct room ids).
fn rooms_of(app: &TestApp, player: &Player) -> Vec<String> {
    let user = player.user_id();
    let mut rooms: Vec<String> = app
        .game()
        .created()
        .into_iter()
        .filter(|r| {
            r.seats.iter().any(
                |s| matches!(&s.occupant, Some(seat_assignment::Occupant::UserId(u)) if *u == user),
            )
        })
        .map(|r| r.room_id)
        .collect();
    rooms.dedup();
    rooms
}

/// A CreateRoom whose reply is lost (the deadline passed while game-session
/// made the room) may have made the room: its players are matched into that
/// room once game-session answers again, never into a second one.
#[tokio::test]
async fn a_room_whose_reply_was_lost_stays_the_only_room_of_its_players() {
    let app = spawn_app().await;
    app.game().set_lose_replies(true);
    let mut pair = app.queued_pair("la", "lb").await;
    pair.end_unavailable().await;
    let QueuedPair { a, b, .. } = pair;
    // game-session did make the room; only its answer was lost.
    let first = rooms_of(&app, &a);
    assert_eq!(first.len(), 1);
    app.game().set_lose_replies(false);
    // Both search again, as UNAVAILABLE asks, and wait for the retry.
    let mut sa = a.find("la", false).await;
    let mut sb = b.find("lb", false).await;
    app.clock()
        .advance(app.settings().queue.room_retry_millis as i64);
    let ma = matched(&mut sa).await;
    let mb = matched(&mut sb).await;
    assert_eq!(ma.room_id, mb.room_id);
    assert_eq!(ma.room_id, first[0], "the room game-session already made");
    assert_eq!(rooms_of(&app, &a), first, "{} is in one room only", a.id);
    assert_eq!(rooms_of(&app, &b), first, "{} is in one room only", b.id);
}

/// A player who cancels (or searches anew) while its group's room is being
/// made stays in the group: the room may exist already, so the others are not
/// requeued and everyone ends in that one room.
#[tokio::test]
async fn cancel_during_room_creation_keeps_the_group_in_its_one_room() {
    let app = spawn_app().await;
    app.game().set_lose_replies(true);
    let mut pair = app.queued_pair("xa", "xb").await;
    pair.end_unavailable().await;
    let QueuedPair { a, b, .. } = pair;
    let first = rooms_of(&app, &a);
    assert_eq!(first.len(), 1);
    // a cancels while the room's fate is unknown: not cancelled, no match yet.
    let answer = a.cancel("xa").await.unwrap();
    assert!(!answer.cancelled && answer.matched.is_none(), "{answer:?}");
    // Nor does a new search take a out of the group.
    let err = a.search(find("xa2", false)).await.unwrap_err();
    assert_eq!(err.code(), Code::FailedPrecondition, "{err}");
    // b resumes; game-session answers again; the retry makes the same room.
    app.game().set_lose_replies(false);
    let mut sb = b.find("xb", false).await;
    app.clock()
        .advance(app.settings().queue.room_retry_millis as i64);
    // b was never requeued: its first update is the match.
    let Update::Matched(mb) = next(&mut sb).await.unwrap() else {
        panic!("b matched straight away")
    };
    assert_eq!(mb.room_id, first[0]);
    // a's CancelFind now answers where to play.
    let answer = a.cancel("xa").await.unwrap();
    assert!(!answer.cancelled);
    assert_eq!(answer.matched.expect("matched").room_id, first[0]);
    assert_eq!(rooms_of(&app, &a), first, "{} is in one room only", a.id);
    assert_eq!(rooms_of(&app, &b), first, "{} is in one room only", b.id);
}

#[tokio::test]
async fn a_dead_game_session_address_answers_unavailable() {
    // Nothing listens there.
    let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", dead.local_addr().unwrap());
    drop(dead);
    let app = TestApp::builder().game_url(url).spawn().await;
    let err = app
        .player()
        .create_room(CreateRoomRequest::default())
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::Unavailable, "{err}");
}

#[tokio::test]
async fn private_rooms_are_joined_by_code_until_full() {
    let app = spawn_app().await;
    let owner = app.player();
    let created = owner
        .create_room(CreateRoomRequest {
            request_id: "r-1".into(),
            settings: Some(RuleSettings {
                seats: Some(4),
                card_points: Some(true),
                ..Default::default()
            }),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(created.seat, 0);
    assert_eq!(created.join_code.len(), 6);
    assert!(!created.join_code.contains(['0', 'O', '1', 'I', 'L']));
    assert_eq!(created.settings.unwrap().card_points, Some(true));
    // The same request id gets the same room.
    let again = owner
        .create_room(CreateRoomRequest {
            request_id: "r-1".into(),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(
        (again.room_id.as_str(), again.join_code.as_str()),
        (created.room_id.as_str(), created.join_code.as_str())
    );
    let game_req = &app.game().created()[0];
    assert_eq!(game_req.visibility, RoomVisibility::Private as i32);
    // Private: not listed, not joinable by id.
    let listed = owner.list(ListPublicRoomsRequest::default()).await.unwrap();
    assert!(listed.rooms.is_empty());
    let p1 = app.player();
    assert_eq!(
        p1.join(join_id(&created.room_id)).await.unwrap_err().code(),
        Code::NotFound
    );
    // By code, case-insensitive; joining twice gives the same seat.
    let lower = created.join_code.to_lowercase();
    let j1 = p1.join(join_code(&lower)).await.unwrap();
    assert_eq!(
        (j1.room_id.as_str(), j1.seat),
        (created.room_id.as_str(), 1)
    );
    let j1b = p1.join(join_code(&lower)).await.unwrap();
    assert_eq!(j1b.seat, 1);
    // The owner joining their own room gets seat 0.
    let own = owner.join(join_code(&lower)).await.unwrap();
    assert_eq!(own.seat, 0);
    // A taken preferred seat.
    let p2 = app.player();
    let mut taken = join_code(&lower);
    taken.preferred_seat = Some(1);
    assert_eq!(
        p2.join(taken).await.unwrap_err().code(),
        Code::FailedPrecondition
    );
    let mut partner = join_code(&lower);
    partner.preferred_seat = Some(2);
    assert_eq!(p2.join(partner).await.unwrap().seat, 2);
    assert_eq!(app.player().join(join_code(&lower)).await.unwrap().seat, 3);
    // Full: the code still finds the room, which takes nobody.
    let err = app.player().join(join_code(&lower)).await.unwrap_err();
    assert_eq!(err.code(), Code::FailedPrecondition, "{err}");
    assert!(err.message().contains("full"), "{err}");
    let seated = app.game().seated.lock().unwrap().clone();
    assert!(seated.iter().any(|s| s.preferred_seat == Some(2)));
}

/// A public room nobody joins within rooms.ttl_seconds leaves the lobby, and its code
/// then answers "closed"; CreateRoom and the listing say when that happens.
#[tokio::test]
async fn rooms_nobody_joins_expire() {
    let app = spawn_app().await;
    let owner = app.player();
    let created = owner
        .create_room(CreateRoomRequest {
            visibility: RoomVisibility::Public as i32,
            ..Default::default()
        })
        .await
        .unwrap();
    let now_ms = app.now_ms();
    let ttl_ms = (app.settings().rooms.ttl_seconds * 1000) as i64;
    let expires = created.expires_at.expect("an expiry");
    assert_eq!(
        expires.seconds * 1000,
        (now_ms + ttl_ms).div_euclid(1000) * 1000
    );
    let listed = owner.list(ListPublicRoomsRequest::default()).await.unwrap();
    assert_eq!(listed.rooms.len(), 1);
    assert_eq!(listed.rooms[0].expires_at, Some(expires));

    // A minute before: still there. At the expiry: gone from the lobby, closed by code.
    app.clock().advance(ttl_ms - 60_000);
    tokio::time::sleep(Duration::from_millis(1_300)).await;
    let listed = owner.list(ListPublicRoomsRequest::default()).await.unwrap();
    assert_eq!(listed.rooms.len(), 1, "not expired yet");
    app.clock().advance(60_000);
    assert!(
        eventually(WAIT, || {
            let owner = owner.clone();
            async move {
                let listed = owner.list(ListPublicRoomsRequest::default()).await;
                listed.unwrap().rooms.is_empty()
            }
        })
        .await,
        "the sweep unlists the expired room"
    );
    let late = app.player();
    let err = late.join(join_code(&created.join_code)).await.unwrap_err();
    assert_eq!(err.code(), Code::FailedPrecondition, "{err}");
    assert!(err.message().contains("closed"), "{err}");
    let err = late.join(join_id(&created.room_id)).await.unwrap_err();
    assert_eq!(err.code(), Code::FailedPrecondition, "{err}");
}

#[tokio::test]
async fn a_code_keeps_finding_its_room_and_answers_with_the_rooms_state() {
    let app = spawn_app().await;
    let room = app.player().make_room().await;
    // Any six characters of A-Z and 2-9 are a well-formed code, also the
    // letters the server leaves out of its own codes: no such room.
    let guesser = app.player();
    for code in ["LILO42", "lilo42", "LI-LO 42"] {
        let err = guesser.join(join_code(code)).await.unwrap_err();
        assert_eq!(err.code(), Code::NotFound, "{code}: {err}");
    }
    for code in ["LILO4", "LILO421", "LILO10", "LIL*42"] {
        let err = guesser.join(join_code(code)).await.unwrap_err();
        assert_eq!(err.code(), Code::InvalidArgument, "{code}: {err}");
    }
    // game-session no longer has the room: the join closes it here too, and
    // the code then answers that the room is closed, not that it never was.
    app.game().forget(&room.room_id);
    let joiner = app.player();
    for _ in 0..2 {
        let err = joiner.join(join_code(&room.join_code)).await.unwrap_err();
        assert_eq!(err.code(), Code::FailedPrecondition, "{err}");
        assert!(err.message().contains("closed"), "{err}");
    }
}

#[tokio::test]
async fn a_player_seated_in_an_unfinished_match_may_not_search_or_make_rooms() {
    let app = spawn_app().await;
    let (owner, guest) = (app.player(), app.player());
    let room = owner.make_room().await;
    // Waiting for an opponent counts: the owner sits in the room, and the refusal names
    // it in its details.
    let refused = |err: tonic::Status| {
        assert_eq!(err.code(), Code::FailedPrecondition, "{err}");
        assert!(err.message().contains(&room.room_id), "{err}");
        assert_eq!(
            basra_platform::error::reason_of(&err).as_deref(),
            Some("SEATED_IN_UNFINISHED_MATCH"),
            "{err:?}"
        );
        assert_eq!(
            basra_platform::error::error_metadata_of(&err, "room_id").as_deref(),
            Some(room.room_id.as_str()),
            "{err:?}"
        );
    };
    refused(owner.search(find("owner-1", false)).await.unwrap_err());
    refused(
        owner
            .create_room(CreateRoomRequest::default())
            .await
            .unwrap_err(),
    );
    // The guest joins; the match runs. Both are held to it.
    guest.join(join_code(&room.join_code)).await.unwrap();
    refused(guest.search(find("guest-1", false)).await.unwrap_err());
    let elsewhere = app.player().make_room().await;
    refused(
        guest
            .join(join_code(&elsewhere.join_code))
            .await
            .unwrap_err(),
    );
    // Joining the same room again is not another match: the seat comes back.
    let again = guest.join(join_code(&room.join_code)).await.unwrap();
    assert_eq!(again.seat, 1);
    // The match ends: both are free again.
    app.game().finish(&room.room_id);
    owner.make_room().await;
    let _search = guest.find_queued("guest-2", false).await;
}

#[tokio::test]
async fn get_current_seat_finds_the_callers_room_until_its_match_ends() {
    let app = spawn_app().await;
    let (owner, guest) = (app.player(), app.guest());
    // Seated nowhere: NOT_FOUND.
    let err = owner.current_seat().await.unwrap_err();
    assert_eq!(err.code(), Code::NotFound, "{err}");
    let room = owner.make_room().await;
    let seat = owner.current_seat().await.unwrap();
    assert_eq!(
        (seat.room_id.as_str(), seat.seat, seat.status, seat.started),
        (room.room_id.as_str(), 0, RoomStatus::Waiting as i32, false)
    );
    guest.join(join_code(&room.join_code)).await.unwrap();
    let seat = guest.current_seat().await.unwrap();
    assert_eq!(seat.room_id, room.room_id);
    assert_eq!(seat.seat, 1);
    assert_eq!(seat.status, RoomStatus::InProgress as i32);
    assert!(seat.started);
    // The match ends: nobody is seated any more.
    app.game().finish(&room.room_id);
    for player in [&owner, &guest] {
        let err = player.current_seat().await.unwrap_err();
        assert_eq!(err.code(), Code::NotFound, "{err}");
    }
    // A service token is not a player's.
    let as_service = authed(GetCurrentSeatRequest::default(), &app.service_token());
    let err = app
        .client
        .clone()
        .get_current_seat(as_service)
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::PermissionDenied, "{err}");
    // game-session unreachable: UNAVAILABLE, retry.
    let other = app.player();
    other.make_room().await;
    app.game().set_unavailable(true);
    let err = other.current_seat().await.unwrap_err();
    assert_eq!(err.code(), Code::Unavailable, "{err}");
}

#[tokio::test]
async fn wrong_codes_are_rate_limited_per_account() {
    let app = spawn_app().await; // 3 wrong codes per window
    let room = app.player().make_room().await;
    let guesser = app.player();
    assert_eq!(
        guesser.join(join_code("0O1IL!")).await.unwrap_err().code(),
        Code::InvalidArgument,
        "malformed codes are not guesses"
    );
    let wrong = if room.join_code == "ZZZZZZ" {
        "YYYYYY"
    } else {
        "ZZZZZZ"
    };
    for _ in 0..3 {
        assert_eq!(
            guesser.join(join_code(wrong)).await.unwrap_err().code(),
            Code::NotFound
        );
    }
    let err = guesser.join(join_code(&room.join_code)).await.unwrap_err();
    assert_eq!(err.code(), Code::ResourceExhausted, "{err}");
    // Another account is not affected; the window passes.
    assert_eq!(
        app.player()
            .join(join_code(wrong))
            .await
            .unwrap_err()
            .code(),
        Code::NotFound
    );
    app.clock().advance(600_000);
    let ok = guesser.join(join_code(&room.join_code)).await.unwrap();
    assert_eq!(ok.seat, 1);
}

#[tokio::test]
async fn the_public_lobby_lists_filters_pages_and_forgets_full_rooms() {
    let app = spawn_app().await;
    let public = |seats: u32, target: u32, ranked: bool| CreateRoomRequest {
        visibility: RoomVisibility::Public as i32,
        settings: Some(RuleSettings {
            seats: Some(seats),
            target_score: Some(target),
            ..Default::default()
        }),
        ranked,
        ..Default::default()
    };
    let mut ids = Vec::new();
    for (seats, target, ranked) in [
        (2, 101, false),
        (4, 101, false),
        (2, 51, true),
        (2, 101, false),
        (2, 101, true),
    ] {
        let owner = app.player();
        let room = owner
            .create_room(public(seats, target, ranked))
            .await
            .unwrap();
        ids.push(room.room_id);
    }
    let viewer = app.player();
    let all = viewer
        .list(ListPublicRoomsRequest::default())
        .await
        .unwrap();
    let got: Vec<_> = all.rooms.iter().map(|r| r.room_id.clone()).collect();
    assert_eq!(got, ids, "oldest first");
    assert!(all.next_page_token.is_empty());
    let room0 = &all.rooms[0];
    assert_eq!(room0.seats.len(), 2);
    assert_eq!(room0.seats[1].occupant, SeatOccupant::Open as i32);
    assert_eq!(
        room0.seats[0].display_name,
        name_of(&room0.seats[0].user_id),
        "the owner's name, from accounts"
    );
    assert!(room0.created_at.is_some());
    // Filters.
    let filtered = viewer
        .list(ListPublicRoomsRequest {
            seats: Some(2),
            target_score: Some(101),
            ranked: Some(false),
            ..Default::default()
        })
        .await
        .unwrap();
    let got: Vec<_> = filtered.rooms.iter().map(|r| r.room_id.clone()).collect();
    assert_eq!(got, vec![ids[0].clone(), ids[3].clone()]);
    let ranked = viewer
        .list(ListPublicRoomsRequest {
            ranked: Some(true),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(ranked.rooms.len(), 2);
    // Pages of 2.
    let mut pages = Vec::new();
    let mut token_ = String::new();
    loop {
        let page = viewer
            .list(ListPublicRoomsRequest {
                page_size: 2,
                page_token: token_.clone(),
                ..Default::default()
            })
            .await
            .unwrap();
        pages.push(
            page.rooms
                .iter()
                .map(|r| r.room_id.clone())
                .collect::<Vec<_>>(),
        );
        if page.next_page_token.is_empty() {
            break;
        }
        token_ = page.next_page_token;
    }
    assert_eq!(pages.len(), 3);
    assert_eq!(pages.concat(), ids);
    // Join by id; the full room leaves the list.
    let joined = app.player().join(join_id(&ids[0])).await.unwrap();
    assert_eq!(joined.seat, 1);
    let after = viewer
        .list(ListPublicRoomsRequest::default())
        .await
        .unwrap();
    assert!(!after.rooms.iter().any(|r| r.room_id == ids[0]));
    assert_eq!(after.rooms.len(), 4);
    assert_eq!(
        app.player()
            .join(join_id(&ids[0]))
            .await
            .unwrap_err()
            .code(),
        Code::FailedPrecondition
    );
    // Bad filters and tokens.
    for bad in [
        ListPublicRoomsRequest {
            seats: Some(3),
            ..Default::default()
        },
        ListPublicRoomsRequest {
            page_token: "garbage".into(),
            ..Default::default()
        },
    ] {
        assert_eq!(
            viewer.list(bad).await.unwrap_err().code(),
            Code::InvalidArgument
        );
    }
}

#[tokio::test]
async fn bad_input_gets_clear_statuses() {
    let app = spawn_app().await;
    let player = app.player();
    let preset = |seats, target| FindMatchRequest {
        preset: Some(MatchPreset {
            seats: Some(seats),
            target_score: Some(target),
        }),
        ..Default::default()
    };
    for (request, what) in [
        (preset(3, 101), "seats"),
        (preset(2, 77), "target_score"),
        (
            FindMatchRequest {
                ticket_id: "bad id with spaces".into(),
                ..Default::default()
            },
            "ticket_id",
        ),
    ] {
        let err = player.search(request).await.unwrap_err();
        assert_eq!(err.code(), Code::InvalidArgument);
        assert!(err.message().contains(what), "{}", err.message());
    }
    let room = |settings: RuleSettings, ranked: bool, bots: Vec<u32>| CreateRoomRequest {
        settings: Some(settings),
        ranked,
        bot_seats: bots,
        ..Default::default()
    };
    for (request, what) in [
        (
            room(
                RuleSettings {
                    seats: Some(3),
                    ..Default::default()
                },
                false,
                vec![],
            ),
            "seats",
        ),
        (
            room(
                RuleSettings {
                    target_score: Some(0),
                    ..Default::default()
                },
                false,
                vec![],
            ),
            "target_score",
        ),
        (
            room(
                RuleSettings {
                    basra_points: Some(5000),
                    ..Default::default()
                },
                false,
                vec![],
            ),
            "basra_points",
        ),
        (
            room(
                RuleSettings {
                    card_points: Some(true),
                    ..Default::default()
                },
                true,
                vec![],
            ),
            "ranked",
        ),
        (room(RuleSettings::default(), true, vec![1]), "bot"),
        (room(RuleSettings::default(), false, vec![0]), "bot_seats"),
        (room(RuleSettings::default(), false, vec![2]), "bot_seats"),
        (
            CreateRoomRequest {
                bot_level: 99,
                ..room(RuleSettings::default(), false, vec![1])
            },
            "bot_level",
        ),
    ] {
        let err = player.create_room(request).await.unwrap_err();
        assert_eq!(err.code(), Code::InvalidArgument);
        assert!(err.message().contains(what), "{what}: {}", err.message());
    }
    let err = player.join(JoinRoomRequest::default()).await.unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument);
    assert_eq!(
        player
            .join(join_id("no-such-room"))
            .await
            .unwrap_err()
            .code(),
        Code::NotFound
    );
    // A bot room: playing alone against the computer is full at once.
    let solo = player
        .create_room(room(RuleSettings::default(), false, vec![1]))
        .await
        .unwrap();
    assert_eq!(
        app.player()
            .join(join_code(&solo.join_code))
            .await
            .unwrap_err()
            .code(),
        Code::FailedPrecondition
    );
    // No token, a bad token, a service token.
    let mut client = app.client.clone();
    let refusals = [
        client
            .find_match(Request::new(FindMatchRequest::default()))
            .await
            .err(),
        client
            .create_room(authed(CreateRoomRequest::default(), "not.a.jwt"))
            .await
            .err(),
        client
            .list_public_rooms(Request::new(ListPublicRoomsRequest::default()))
            .await
            .err(),
        client
            .join_room(Request::new(join_code("ABCDEF")))
            .await
            .err(),
        client
            .cancel_find(Request::new(CancelFindRequest {
                ticket_id: "x".into(),
            }))
            .await
            .err(),
    ];
    let codes = refusals.map(|refusal| refusal.map(|status| status.code()));
    assert_eq!(codes, [Some(Code::Unauthenticated); 5]);
}

#[tokio::test]
async fn guests_may_be_kept_out_of_ranked() {
    let app = TestApp::builder()
        .settings(|s| s.queue.guests_may_play_ranked = false)
        .spawn()
        .await;
    let guest = app.guest();
    let err = guest.search(find("g", true)).await.unwrap_err();
    assert_eq!(err.code(), Code::PermissionDenied);
    // Nor may a guest make or join a ranked room.
    let ranked_room = CreateRoomRequest {
        ranked: true,
        visibility: RoomVisibility::Public as i32,
        ..Default::default()
    };
    let err = guest.create_room(ranked_room.clone()).await.unwrap_err();
    assert_eq!(err.code(), Code::PermissionDenied, "{err}");
    let room = app.player().create_room(ranked_room).await.unwrap();
    let err = guest.join(join_id(&room.room_id)).await.unwrap_err();
    assert_eq!(err.code(), Code::PermissionDenied, "{err}");
    // Unranked is fine.
    let _s = guest.find_queued("g", false).await;
}

#[tokio::test]
async fn the_embedded_memory_store_serves_the_same_api() {
    let app = TestApp::builder().memory().spawn().await;
    let QueuedPair { mut sa, mut sb, .. } = app.queued_pair("ma", "mb").await;
    let ma = matched(&mut sa).await;
    let mb = matched(&mut sb).await;
    assert_eq!(ma.room_id, mb.room_id);
}

/// InviteFriend checks the room and the caller's seat, then hands the invite (the room's
/// code, rules and expiry) to accounts; accounts' refusals keep their meaning.
#[tokio::test]
async fn a_seated_player_invites_a_friend_to_a_waiting_room() {
    let app = spawn_app().await;
    let (owner, friend, stranger) = (app.player(), app.player(), app.player());
    let created = owner
        .create_room(CreateRoomRequest {
            request_id: "invite-1".into(),
            ..Default::default()
        })
        .await
        .unwrap();
    let answer = owner
        .invite(&created.room_id, &friend.user_id())
        .await
        .unwrap();
    let sent = app.invites().sent.lock().unwrap().clone();
    assert_eq!(sent.len(), 1);
    assert_eq!(
        (
            sent[0].from_user_id.as_str(),
            sent[0].to_user_id.as_str(),
            sent[0].room_id.as_str(),
            sent[0].join_code.as_str(),
        ),
        (
            owner.user_id().as_str(),
            friend.user_id().as_str(),
            created.room_id.as_str(),
            created.join_code.as_str(),
        )
    );
    assert_eq!(sent[0].settings, created.settings);
    assert_eq!(sent[0].expires_at, answer.expires_at);
    assert!(answer.expires_at.unwrap().seconds > app.now_ms() / 1000);
    assert_eq!(
        answer.expires_at, created.expires_at,
        "the invite expires with the room"
    );

    let code_of =
        |result: Result<InviteFriendResponse, tonic::Status>| result.expect_err("refused").code();
    // Bad input, a room the caller is not in, a room that does not exist.
    let room = created.room_id.as_str();
    let to = |player: &Player| player.user_id();
    assert_eq!(
        code_of(owner.invite("", &to(&friend)).await),
        Code::InvalidArgument
    );
    assert_eq!(
        code_of(owner.invite(room, "not-a-user").await),
        Code::InvalidArgument
    );
    assert_eq!(
        code_of(owner.invite(room, &to(&owner)).await),
        Code::InvalidArgument
    );
    assert_eq!(
        code_of(stranger.invite(room, &to(&friend)).await),
        Code::PermissionDenied
    );
    assert_eq!(
        code_of(owner.invite("no-such-room", &to(&friend)).await),
        Code::NotFound
    );
    // accounts says they are not friends, or cannot be reached.
    *app.invites().refuse_with.lock().unwrap() = Some(tonic::Status::failed_precondition(
        "the two players are not friends",
    ));
    assert_eq!(
        code_of(owner.invite(room, &to(&stranger)).await),
        Code::FailedPrecondition
    );
    *app.invites().refuse_with.lock().unwrap() = Some(tonic::Status::unavailable("down"));
    assert_eq!(
        code_of(owner.invite(room, &to(&friend)).await),
        Code::Unavailable
    );
    *app.invites().refuse_with.lock().unwrap() = None;
    // The friend joins with the code: inviting them again is refused, and so is any
    // invite once the room is full.
    friend.join(join_code(&created.join_code)).await.unwrap();
    assert_eq!(
        code_of(owner.invite(room, &to(&stranger)).await),
        Code::FailedPrecondition,
        "full"
    );
    assert_eq!(
        app.invites().sent.lock().unwrap().len(),
        1,
        "no refused invite was sent"
    );
}

#[tokio::test]
async fn a_banned_players_search_ends_and_their_next_call_is_refused() {
    use basra_platform::revocation::Revoked;
    let app = spawn_app().await;
    let (banned, other) = (app.player(), app.player());
    let mut search = banned.find_queued("t-banned", false).await;
    let started = std::time::Instant::now();
    app.revocations()
        .revoke(
            banned.id,
            Revoked::banned_for("abuse in chat", Duration::from_secs(3600)),
        )
        .await
        .unwrap();
    let status = loop {
        match tokio::time::timeout(WAIT, search.message())
            .await
            .expect("within 5 s")
        {
            Ok(Some(_)) => continue,
            Ok(None) => panic!("the stream ended OK, not with the ban"),
            Err(status) => break status,
        }
    };
    assert!(started.elapsed() < WAIT);
    assert_eq!(status.code(), Code::PermissionDenied, "{status:?}");
    assert!(status.message().contains("abuse in chat"), "{status:?}");
    // The next call is refused, and the ticket is gone: another player is not matched
    // with the banned one.
    let refused = banned.search(find("t-banned-2", false)).await.unwrap_err();
    assert_eq!(refused.code(), Code::PermissionDenied);
    let mut theirs = other.find("t-other", false).await;
    assert_eq!(
        queued(&mut theirs).await.players_waiting,
        1,
        "alone in the queue"
    );
    // An unban restores access.
    app.revocations().restore(banned.id).await.unwrap();
    banned
        .search(find("t-banned-3", false))
        .await
        .expect("unbanned: the call is served");
}

/// Matchmaking tells game-session how each seat was filled: queue seats with the time
/// their player searched (from the first queueing to the group), the room's creator as
/// its host, bots as bots, and a join by code, from the lobby or after an invite as such.
#[tokio::test]
async fn game_session_is_told_how_each_seat_was_filled() {
    use basra_proto::basra::common::v1::SeatFill;
    let app = spawn_app().await;

    // The queue: a searches 3 s before b comes.
    let (a, b) = (app.player(), app.player());
    let mut sa = a.find_queued("fill-a", false).await;
    app.clock().advance(3_000);
    let _sb = b.find("fill-b", false).await;
    let found = matched(&mut sa).await;
    let room = app
        .game()
        .created()
        .into_iter()
        .find(|r| r.room_id == found.room_id)
        .unwrap();
    let mut waits: Vec<(String, i32, u32)> = room
        .seats
        .iter()
        .map(|s| {
            let Some(seat_assignment::Occupant::UserId(user)) = &s.occupant else {
                panic!("{s:?}")
            };
            (user.clone(), s.fill, s.queue_wait_ms)
        })
        .collect();
    waits.sort_by_key(|(_, _, wait)| *wait);
    assert_eq!(
        waits,
        [
            (b.user_id(), SeatFill::Queue as i32, 0),
            (a.user_id(), SeatFill::Queue as i32, 3_000)
        ]
    );

    // A public room with a bot: the host, the bot; joined from the list, by code after
    // an invite, and by code.
    let owner = app.player();
    let created = owner
        .create_room(CreateRoomRequest {
            request_id: "fill-room".into(),
            settings: Some(RuleSettings {
                seats: Some(4),
                ..Default::default()
            }),
            bot_seats: vec![3],
            visibility: RoomVisibility::Public as i32,
            ..Default::default()
        })
        .await
        .unwrap();
    let room = app
        .game()
        .created()
        .into_iter()
        .find(|r| r.room_id == created.room_id)
        .unwrap();
    let fills: Vec<i32> = room.seats.iter().map(|s| s.fill).collect();
    assert_eq!(
        fills,
        [
            SeatFill::Host as i32,
            SeatFill::Unspecified as i32,
            SeatFill::Unspecified as i32,
            SeatFill::Bot as i32
        ]
    );
    let (lobby, invited) = (app.player(), app.player());
    lobby.join(join_id(&created.room_id)).await.unwrap();
    owner
        .invite(&created.room_id, &invited.user_id())
        .await
        .unwrap();
    invited.join(join_code(&created.join_code)).await.unwrap();
    let seated: Vec<(String, i32)> = app
        .game()
        .seated
        .lock()
        .unwrap()
        .iter()
        .filter(|s| s.room_id == created.room_id)
        .map(|s| (s.user_id.clone(), s.fill))
        .collect();
    assert_eq!(
        seated,
        [
            (lobby.user_id(), SeatFill::Lobby as i32),
            (invited.user_id(), SeatFill::Invite as i32)
        ]
    );
    // A private room joined by code, nobody invited.
    let private = app
        .player()
        .create_room(CreateRoomRequest {
            request_id: "fill-private".into(),
            ..Default::default()
        })
        .await
        .unwrap();
    let coder = app.player();
    coder.join(join_code(&private.join_code)).await.unwrap();
    let seated = app.game().seated.lock().unwrap().clone();
    let by_code = seated
        .iter()
        .find(|s| s.room_id == private.room_id)
        .unwrap();
    assert_eq!(
        (by_code.user_id.clone(), by_code.fill),
        (coder.user_id(), SeatFill::Code as i32)
    );
}

/// Before anyone searches, every queue a search may enter is measured at zero (a
/// dashboard shows 0, not "No data"): ranked or not, 2 or 4 seats, each offered target.
#[tokio::test]
async fn every_offered_queue_is_measured_at_zero_before_any_search() {
    let app = spawn_app().await;
    let scores = &app.settings().queue.target_scores;
    assert_eq!(scores.len(), 3, "{scores:?}");
    let mut want = Vec::new();
    for ranked in ["u", "r"] {
        for seats in [2, 4] {
            for score in scores {
                want.push(format!(
                    "basra_matchmaking_queue_length{{format=\"{ranked}.{seats}.{score}\"}} 0"
                ));
            }
        }
    }
    let served = || {
        let text = app.metrics.render();
        want.iter().all(|series| text.contains(series.as_str()))
    };
    assert!(
        eventually(WAIT, || async { served() }).await,
        "{want:?} in:\n{}",
        app.metrics.render()
    );
    assert_eq!(
        app.metrics
            .render()
            .matches("basra_matchmaking_queue_length{")
            .count(),
        12
    );
}
