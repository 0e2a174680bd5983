//! The matchmaking API as clients see it: real tonic servers and clients,
//! real Redis, a fake game-session over real gRPC, time on a manual clock.

use std::time::Duration;

use crate::helpers::{Env, authed, eventually, name_of, redis_commands_mentioning, test_settings};
use basra_proto::basra::{
    common::v1::{RoomStatus, RoomVisibility, RuleSettings, SeatOccupant},
    game::v1::seat_assignment,
    matchmaking::v1::{
        CancelFindRequest, CancelReason, CreateRoomRequest, FindMatchRequest, FindMatchResponse,
        GetCurrentSeatRequest, InviteFriendRequest, InviteFriendResponse, JoinRoomRequest,
        ListPublicRoomsRequest, MatchPreset, find_match_response::Update,
        join_room_request::Target, matchmaking_service_client::MatchmakingServiceClient,
    },
};
use matchmaking::clock::Clock as _;
use tonic::{Code, Request, Streaming, transport::Channel};
use uuid::Uuid;

const WAIT: Duration = Duration::from_secs(5);

async fn next(stream: &mut Streaming<FindMatchResponse>) -> Result<Update, tonic::Status> {
    let message = tokio::time::timeout(WAIT, stream.message())
        .await
        .expect("an update in time")?;
    Ok(message
        .expect("the stream is still open")
        .update
        .expect("an update"))
}

/// The next update that is not a (re)position.
async fn next_change(stream: &mut Streaming<FindMatchResponse>) -> Result<Update, tonic::Status> {
    loop {
        match next(stream).await? {
            Update::Queued(_) => continue,
            other => return Ok(other),
        }
    }
}

fn find(ticket: &str, ranked: bool) -> FindMatchRequest {
    FindMatchRequest {
        ticket_id: ticket.into(),
        ranked,
        preset: None,
        allow_bots: Some(false),
    }
}

#[tokio::test]
async fn two_players_are_matched_into_a_room_made_by_game_session() {
    let env = Env::new().await;
    let replica = env.replica().await;
    let mut client = replica.client().await;
    let (a, b) = (Uuid::now_v7(), Uuid::now_v7());
    let mut sa = client
        .find_match(authed(find("ta", false), &env.token(a, false)))
        .await
        .unwrap()
        .into_inner();
    match next(&mut sa).await.unwrap() {
        Update::Queued(q) => assert_eq!((q.position, q.players_waiting), (1, 1)),
        other => panic!("{other:?}"),
    }
    let mut sb = client
        .find_match(authed(find("tb", false), &env.token(b, true)))
        .await
        .unwrap()
        .into_inner();
    let Update::Matched(ma) = next_change(&mut sa).await.unwrap() else {
        panic!()
    };
    let Update::Matched(mb) = next_change(&mut sb).await.unwrap() else {
        panic!()
    };
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
            .any(|s| s.user_id == b.to_string() && s.is_guest)
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
    let created = env.game.created();
    assert_eq!(created.len(), 1);
    assert_eq!(created[0].room_id, ma.room_id);
    assert!(
        replica
            .metrics
            .render()
            .contains("basra_matchmaking_matches_total 1")
    );
    // Cancelling after the match says where to play.
    let answer = client
        .cancel_find(authed(
            CancelFindRequest {
                ticket_id: "ta".into(),
            },
            &env.token(a, false),
        ))
        .await
        .unwrap()
        .into_inner();
    assert!(!answer.cancelled);
    assert_eq!(answer.matched.unwrap().room_id, ma.room_id);
}

/// Players who block each other (either way) are never put in one group: a blocks b;
/// a and b wait side by side until c comes, who is matched with a (the older search).
#[tokio::test]
async fn players_who_block_each_other_never_meet_in_the_queue() {
    let env = Env::new().await;
    let replica = env.replica().await;
    let mut client = replica.client().await;
    let (a, b, c) = (Uuid::now_v7(), Uuid::now_v7(), Uuid::now_v7());
    env.ratings.block(a, b);
    let mut streams = Vec::new();
    for (ticket, user) in [("block-a", a), ("block-b", b)] {
        let mut stream = client
            .find_match(authed(find(ticket, false), &env.token(user, false)))
            .await
            .unwrap()
            .into_inner();
        assert!(matches!(
            next(&mut stream).await.unwrap(),
            Update::Queued(_)
        ));
        streams.push(stream);
    }
    // Many pairing rounds pass (a tick is 20 ms): the only two searchers stay apart.
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert!(
        env.game.created().is_empty(),
        "a blocks b: no room for them"
    );
    let mut sc = client
        .find_match(authed(find("block-c", false), &env.token(c, false)))
        .await
        .unwrap()
        .into_inner();
    let Update::Matched(mc) = next_change(&mut sc).await.unwrap() else {
        panic!("c is matched")
    };
    let Update::Matched(ma) = next_change(&mut streams[0]).await.unwrap() else {
        panic!("a is matched")
    };
    assert_eq!(ma.room_id, mc.room_id);
    let mut seated: Vec<String> = ma.seats.iter().map(|s| s.user_id.clone()).collect();
    seated.sort();
    let mut expected = vec![a.to_string(), c.to_string()];
    expected.sort();
    assert_eq!(seated, expected);
    assert_eq!(env.game.created().len(), 1);
    // b is still waiting, alone.
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(env.game.created().len(), 1);
    let b_ticket = replica
        .store
        .poll(
            "block-b",
            matchmaking::clock::Clock::now_ms(&env.clock),
            15_000,
        )
        .await
        .unwrap()
        .unwrap();
    assert_eq!(b_ticket.state, matchmaking::store::TicketState::Queued);
}

#[tokio::test]
async fn the_rating_window_widens_with_controlled_time() {
    let env = Env::new().await;
    let replica = env.replica().await;
    let mut client = replica.client().await;
    let (a, b) = (Uuid::now_v7(), Uuid::now_v7());
    env.ratings.set(a, 1500.0);
    env.ratings.set(b, 1620.0);
    let mut sa = client
        .find_match(authed(find("wa", true), &env.token(a, false)))
        .await
        .unwrap()
        .into_inner();
    let mut sb = client
        .find_match(authed(find("wb", true), &env.token(b, false)))
        .await
        .unwrap()
        .into_inner();
    assert!(matches!(next(&mut sa).await.unwrap(), Update::Queued(_)));
    assert!(matches!(next(&mut sb).await.unwrap(), Update::Queued(_)));
    // 120 apart, window 50: several rounds pass without a match.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(env.game.created().is_empty());
    // 5 s later the window is 100: widened, still no match.
    env.clock.advance(5_000);
    match next_change(&mut sa).await.unwrap() {
        Update::WindowWidened(w) => {
            assert_eq!((w.rating_min, w.rating_max), (1400.0, 1600.0));
            assert!(!w.bots_next);
        }
        other => panic!("{other:?}"),
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(env.game.created().is_empty());
    // At 7 s it is 120: matched.
    env.clock.advance(2_000);
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
    assert_eq!(env.game.created().len(), 1);
    assert!(env.game.created()[0].ranked);
}

#[tokio::test]
async fn four_ranked_players_are_seated_in_balanced_partnerships() {
    let env = Env::new().await;
    let replica = env.replica().await;
    let mut client = replica.client().await;
    // Within each other's windows; only 1500+1530 against 1505+1525 is even.
    let players: Vec<(Uuid, f64)> = [1500.0, 1505.0, 1525.0, 1530.0]
        .into_iter()
        .map(|rating| (Uuid::now_v7(), rating))
        .collect();
    let mut streams = Vec::new();
    for (i, (user, rating)) in players.iter().enumerate() {
        env.ratings.set(*user, *rating);
        let mut request = find(&format!("four-{i}"), true);
        request.preset = Some(MatchPreset {
            seats: Some(4),
            target_score: None,
        });
        let stream = client
            .find_match(authed(request, &env.token(*user, false)))
            .await
            .unwrap()
            .into_inner();
        streams.push(stream);
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
    let created = env.game.created();
    assert_eq!(created.len(), 1);
    let seat_rating = |seat: usize| {
        let user = match &created[0].seats[seat].occupant {
            Some(seat_assignment::Occupant::UserId(id)) => id.clone(),
            other => panic!("seat {seat}: {other:?}"),
        };
        players
            .iter()
            .find(|(id, _)| id.to_string() == user)
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
    let env = Env::new().await;
    let replica = env.replica().await;
    let client = replica.client().await;
    let search = |ticket: &'static str| {
        let token = env.token(Uuid::now_v7(), false);
        let mut client = client.clone();
        async move {
            client
                .find_match(authed(find(ticket, false), &token))
                .await
                .unwrap()
                .into_inner()
        }
    };
    // Two matches of this queue: one player waited 6 s, the other none.
    for (a, b) in [("ea1", "eb1"), ("ea2", "eb2")] {
        let mut sa = search(a).await;
        match next(&mut sa).await.unwrap() {
            // Nothing to go on yet for the first one.
            Update::Queued(q) if a == "ea1" => assert_eq!(q.estimated_wait, None),
            Update::Queued(_) => {}
            other => panic!("{other:?}"),
        }
        env.clock.advance(6_000);
        let mut sb = search(b).await;
        for s in [&mut sa, &mut sb] {
            assert!(matches!(next_change(s).await.unwrap(), Update::Matched(_)));
        }
    }
    // Recent waits 0, 0, 6 and 6 s: a new search is told about 6 s.
    let mut sc = search("ec").await;
    let Update::Queued(q) = next(&mut sc).await.unwrap() else {
        panic!()
    };
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
    let env = Env::new().await;
    let replica = env.replica().await;
    let mut client = replica.client().await;
    let a = Uuid::now_v7();
    let token = env.token(a, false);
    let mut s = client
        .find_match(authed(find("c1", true), &token))
        .await
        .unwrap()
        .into_inner();
    assert!(matches!(next(&mut s).await.unwrap(), Update::Queued(_)));
    let cancel = |id: &str| {
        authed(
            CancelFindRequest {
                ticket_id: id.into(),
            },
            &token,
        )
    };
    assert!(
        client
            .cancel_find(cancel("c1"))
            .await
            .unwrap()
            .into_inner()
            .cancelled
    );
    match next_change(&mut s).await.unwrap() {
        Update::Cancelled(c) => assert_eq!(c.reason, CancelReason::ByClient as i32),
        other => panic!("{other:?}"),
    }
    assert!(s.message().await.unwrap().is_none());
    // Idempotent; unknown and empty ids are errors; others' tickets unknown.
    assert!(
        client
            .cancel_find(cancel("c1"))
            .await
            .unwrap()
            .into_inner()
            .cancelled
    );
    assert_eq!(
        client.cancel_find(cancel("nope")).await.unwrap_err().code(),
        Code::NotFound
    );
    assert_eq!(
        client.cancel_find(cancel("")).await.unwrap_err().code(),
        Code::InvalidArgument
    );
    let other = authed(
        CancelFindRequest {
            ticket_id: "c1".into(),
        },
        &env.token(Uuid::now_v7(), false),
    );
    assert_eq!(
        client.cancel_find(other).await.unwrap_err().code(),
        Code::NotFound
    );
}

#[tokio::test]
async fn a_dropped_stream_takes_the_ticket_out_and_a_resume_keeps_the_place() {
    let env = Env::new().await;
    let replica = env.replica().await;
    let mut client = replica.client().await;
    let (a, b) = (Uuid::now_v7(), Uuid::now_v7());
    let mut sa = client
        .find_match(authed(find("d-a", false), &env.token(a, false)))
        .await
        .unwrap()
        .into_inner();
    assert!(matches!(next(&mut sa).await.unwrap(), Update::Queued(_)));
    drop(sa);
    let store = replica.store.clone();
    assert!(
        eventually(WAIT, || async {
            store.queue_lengths().await.unwrap().is_empty()
        })
        .await,
        "the dropped ticket left the pool"
    );
    // b is not matched with the absent a.
    let mut sb = client
        .find_match(authed(find("d-b", false), &env.token(b, false)))
        .await
        .unwrap()
        .into_inner();
    match next(&mut sb).await.unwrap() {
        Update::Queued(q) => assert_eq!((q.position, q.players_waiting), (1, 1)),
        other => panic!("{other:?}"),
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(env.game.created().is_empty());
    // a comes back within the grace period: first in line, matched with b.
    let mut sa = client
        .find_match(authed(find("d-a", false), &env.token(a, false)))
        .await
        .unwrap()
        .into_inner();
    let Update::Matched(m) = next_change(&mut sa).await.unwrap() else {
        panic!()
    };
    assert_eq!(m.seat, 0, "a, queued first, is the anchor");
    // A dropped ticket not resumed is gone after the grace period.
    let c = Uuid::now_v7();
    let sc = client
        .find_match(authed(find("d-c", false), &env.token(c, false)))
        .await
        .unwrap()
        .into_inner();
    drop(sc);
    assert!(
        eventually(WAIT, || async {
            store.queue_lengths().await.unwrap().is_empty()
        })
        .await
    );
    env.clock.advance(31_000);
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
    let env = Env::new().await;
    let replica = env.replica().await;
    let a = Uuid::now_v7();
    let ticket = Uuid::now_v7().to_string();
    let mut old = replica
        .client()
        .await
        .find_match(authed(find(&ticket, false), &env.token(a, false)))
        .await
        .unwrap()
        .into_inner();
    assert!(matches!(next(&mut old).await.unwrap(), Update::Queued(_)));
    // The phone switches networks: the same search again on a new connection,
    // while the server still holds the old one open.
    let mut client = replica.client().await;
    let mut new = client
        .find_match(authed(find(&ticket, false), &env.token(a, false)))
        .await
        .unwrap()
        .into_inner();
    assert!(matches!(next(&mut new).await.unwrap(), Update::Queued(_)));
    // One stream reading the ticket at its heartbeat (100 ms here): about ten reads
    // a second, not a loop re-reading it as fast as Redis answers.
    let reads = redis_commands_mentioning(&ticket, Duration::from_secs(1)).await;
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
            .cancel_find(authed(
                CancelFindRequest {
                    ticket_id: ticket.clone(),
                },
                &env.token(a, false),
            ))
            .await
            .unwrap()
            .into_inner()
            .cancelled
    );
    match next_change(&mut new).await.unwrap() {
        Update::Cancelled(c) => assert_eq!(c.reason, CancelReason::ByClient as i32),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn an_account_holds_at_most_its_share_of_find_match_streams() {
    let mut settings = test_settings();
    settings.queue.max_streams_per_account = 1;
    let env = Env::with_settings(settings).await;
    let replica = env.replica().await;
    let mut client = replica.client().await;
    let (a, b) = (Uuid::now_v7(), Uuid::now_v7());
    let mut first = client
        .find_match(authed(find("share-a1", false), &env.token(a, false)))
        .await
        .unwrap()
        .into_inner();
    assert!(matches!(next(&mut first).await.unwrap(), Update::Queued(_)));
    let refused = client
        .find_match(authed(find("share-a2", false), &env.token(a, false)))
        .await
        .unwrap_err();
    assert_eq!(refused.code(), Code::ResourceExhausted, "{refused:?}");
    assert!(refused.message().contains("FindMatch"), "{refused:?}");
    assert_eq!(
        basra_platform::error::retry_after_of(&refused),
        Some(basra_platform::stream_limit::RETRY_AFTER)
    );
    // The refused search changed nothing: the first one goes on.
    assert!(
        replica
            .store
            .poll("share-a2", 0, 0)
            .await
            .unwrap()
            .is_none(),
        "a refused stream queues nothing"
    );
    // Another account is not affected.
    let mut other = client
        .find_match(authed(find("share-b", true), &env.token(b, false)))
        .await
        .unwrap()
        .into_inner();
    assert!(matches!(next(&mut other).await.unwrap(), Update::Queued(_)));
    // A stream that ends frees its slot.
    drop(first);
    let token = env.token(a, false);
    assert!(
        eventually(WAIT, || {
            let mut client = client.clone();
            let token = token.clone();
            async move {
                client
                    .find_match(authed(find("share-a1", false), &token))
                    .await
                    .is_ok()
            }
        })
        .await,
        "the slot was freed"
    );
}

#[tokio::test]
async fn tickets_of_vanished_replicas_expire() {
    let env = Env::new().await;
    let replica = env.replica().await;
    let store = replica.store.clone();
    // What a replica that died mid-search leaves behind: an attached ticket
    // whose heartbeat stops.
    store
        .enqueue(
            matchmaking::store::NewTicket {
                id: "orphan".into(),
                user_id: "ghost".into(),
                guest: false,
                format: matchmaking::domain::Format {
                    ranked: true,
                    seats: 2,
                    target_score: 101,
                },
                rating: 1500.0,
                allow_bots: false,
                blocks: Vec::new(),
            },
            matchmaking::clock::Clock::now_ms(&env.clock),
            15_000,
            30_000,
        )
        .await
        .unwrap();
    assert_eq!(store.queue_lengths().await.unwrap().len(), 1);
    env.clock.advance(15_000);
    assert!(
        eventually(WAIT, || async {
            store.poll("orphan", 0, 0).await.unwrap().is_none()
        })
        .await
    );
    assert!(store.queue_lengths().await.unwrap().is_empty());
    assert!(
        replica
            .metrics
            .render()
            .contains("basra_matchmaking_expired_total 1")
    );
}

#[tokio::test]
async fn a_second_search_supersedes_the_first() {
    let env = Env::new().await;
    let replica = env.replica().await;
    let mut client = replica.client().await;
    let token = env.token(Uuid::now_v7(), false);
    let mut first = client
        .find_match(authed(find("s1", false), &token))
        .await
        .unwrap()
        .into_inner();
    assert!(matches!(next(&mut first).await.unwrap(), Update::Queued(_)));
    let mut second = client
        .find_match(authed(find("s2", true), &token))
        .await
        .unwrap()
        .into_inner();
    assert!(matches!(
        next(&mut second).await.unwrap(),
        Update::Queued(_)
    ));
    match next_change(&mut first).await.unwrap() {
        Update::Cancelled(c) => assert_eq!(c.reason, CancelReason::Superseded as i32),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn bots_fill_an_unranked_search_after_the_wait() {
    let env = Env::new().await;
    let replica = env.replica().await;
    let mut client = replica.client().await;
    let request = FindMatchRequest {
        ticket_id: "bot".into(),
        ranked: false,
        preset: Some(MatchPreset {
            seats: Some(4),
            target_score: Some(51),
        }),
        allow_bots: None, // default: on for unranked
    };
    let mut s = client
        .find_match(authed(request, &env.token(Uuid::now_v7(), false)))
        .await
        .unwrap()
        .into_inner();
    assert!(matches!(next(&mut s).await.unwrap(), Update::Queued(_)));
    env.clock.advance(20_000);
    let Update::Matched(m) = next_change(&mut s).await.unwrap() else {
        panic!()
    };
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
    let env = Env::new().await;
    let replica = env.replica().await;
    let mut client = replica.client().await;
    env.game.set_unavailable(true);
    let (a, b) = (Uuid::now_v7(), Uuid::now_v7());
    let (ta, tb) = (env.token(a, false), env.token(b, false));
    let mut sa = client
        .find_match(authed(find("ga", false), &ta))
        .await
        .unwrap()
        .into_inner();
    let mut sb = client
        .find_match(authed(find("gb", false), &tb))
        .await
        .unwrap()
        .into_inner();
    for s in [&mut sa, &mut sb] {
        let err = next_change(s).await.unwrap_err();
        assert_eq!(err.code(), Code::Unavailable, "{err}");
    }
    // Kept, together: game-session may have made their room, so they wait
    // for it rather than for anyone else.
    for id in ["ga", "gb"] {
        let v = replica.store.poll(id, 0, 0).await.unwrap().expect("kept");
        assert_eq!(v.state, matchmaking::store::TicketState::Pending);
    }
    // Rooms too (for a player who is not in the queue).
    let tc = env.token(Uuid::now_v7(), false);
    let err = client
        .create_room(authed(CreateRoomRequest::default(), &tc))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::Unavailable);
    // A queued player may not make a room meanwhile.
    let err = client
        .create_room(authed(CreateRoomRequest::default(), &ta))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::FailedPrecondition, "{err}");
    // Back up: the same tickets resume and match.
    env.game.set_unavailable(false);
    let mut sa = client
        .find_match(authed(find("ga", false), &ta))
        .await
        .unwrap()
        .into_inner();
    let mut sb = client
        .find_match(authed(find("gb", false), &tb))
        .await
        .unwrap()
        .into_inner();
    env.clock
        .advance(env.settings.queue.room_retry_millis as i64);
    let Update::Matched(ma) = next_change(&mut sa).await.unwrap() else {
        panic!()
    };
    let Update::Matched(mb) = next_change(&mut sb).await.unwrap() else {
        panic!()
    };
    assert_eq!(ma.room_id, mb.room_id);
    // Every attempt was for that one room.
    assert!(env.game.created().iter().all(|r| r.room_id == ma.room_id));
}

/// A group whose room game-session never confirms is given up after
/// queue.room_max_attempts: its players, resuming, are told why their search ended.
#[tokio::test]
async fn a_group_whose_room_cannot_be_made_is_given_up_and_its_players_told() {
    let mut settings = crate::helpers::test_settings();
    settings.queue.room_max_attempts = 2;
    let env = Env::with_settings(settings).await;
    let replica = env.replica().await;
    let client = replica.client().await;
    env.game.set_unavailable(true);
    let (a, b) = (Uuid::now_v7(), Uuid::now_v7());
    let (ta, tb) = (env.token(a, false), env.token(b, false));
    let open = |ticket: &'static str, token: String| {
        let mut client = client.clone();
        async move {
            client
                .find_match(authed(find(ticket, false), &token))
                .await
                .unwrap()
                .into_inner()
        }
    };
    // Attempt 1 fails: UNAVAILABLE, the tickets wait for that room.
    for mut stream in [open("ua", ta.clone()).await, open("ub", tb.clone()).await] {
        let err = next_change(&mut stream).await.unwrap_err();
        assert_eq!(err.code(), Code::Unavailable, "{err}");
    }
    // They resume; attempt 2 (the retry) fails too: the group is given up.
    let mut sa = open("ua", ta.clone()).await;
    let mut sb = open("ub", tb.clone()).await;
    env.clock
        .advance(env.settings.queue.room_retry_millis as i64);
    for stream in [&mut sa, &mut sb] {
        match next_change(stream).await.unwrap() {
            Update::Cancelled(c) => {
                assert_eq!(c.reason, CancelReason::RoomUnavailable as i32)
            }
            other => panic!("{other:?}"),
        }
        assert!(stream.message().await.unwrap().is_none(), "the stream ends");
    }
    // (Every call to the fake game-session here is a CreateRoom.)
    let calls = || env.game.calls.load(std::sync::atomic::Ordering::SeqCst);
    let attempts = calls();
    assert_eq!(attempts, 2, "one first attempt and one retry");
    // No more attempts, and a later resume hears the same.
    env.clock
        .advance(env.settings.queue.room_retry_millis as i64);
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(calls(), attempts);
    let mut again = open("ua", ta.clone()).await;
    match next_change(&mut again).await.unwrap() {
        Update::Cancelled(c) => assert_eq!(c.reason, CancelReason::RoomUnavailable as i32),
        other => panic!("{other:?}"),
    }
    // A new search starts afresh.
    env.game.set_unavailable(false);
    let mut fresh_a = open("ua-2", ta).await;
    let mut fresh_b = open("ub-2", tb).await;
    let Update::Matched(ma) = next_change(&mut fresh_a).await.unwrap() else {
        panic!("matched")
    };
    let Update::Matched(mb) = next_change(&mut fresh_b).await.unwrap() else {
        panic!("matched")
    };
    assert_eq!(ma.room_id, mb.room_id);
}

/// Each player's rooms as game-session saw them (distinct room ids).
fn rooms_of(env: &Env, user: Uuid) -> Vec<String> {
    let mut rooms: Vec<String> = env
        .game
        .created()
        .into_iter()
        .filter(|r| {
            r.seats.iter().any(|s| {
                matches!(
                    &s.occupant,
                    Some(basra_proto::basra::game::v1::seat_assignment::Occupant::UserId(u))
                        if *u == user.to_string()
                )
            })
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
    let env = Env::new().await;
    let replica = env.replica().await;
    let mut client = replica.client().await;
    env.game.set_lose_replies(true);
    let (a, b) = (Uuid::now_v7(), Uuid::now_v7());
    let (ta, tb) = (env.token(a, false), env.token(b, false));
    let mut sa = client
        .find_match(authed(find("la", false), &ta))
        .await
        .unwrap()
        .into_inner();
    let mut sb = client
        .find_match(authed(find("lb", false), &tb))
        .await
        .unwrap()
        .into_inner();
    for s in [&mut sa, &mut sb] {
        let err = next_change(s).await.unwrap_err();
        assert_eq!(err.code(), Code::Unavailable, "{err}");
    }
    // game-session did make the room; only its answer was lost.
    let first = rooms_of(&env, a);
    assert_eq!(first.len(), 1);
    env.game.set_lose_replies(false);
    // Both search again, as UNAVAILABLE asks, and wait for the retry.
    let mut sa = client
        .find_match(authed(find("la", false), &ta))
        .await
        .unwrap()
        .into_inner();
    let mut sb = client
        .find_match(authed(find("lb", false), &tb))
        .await
        .unwrap()
        .into_inner();
    env.clock
        .advance(env.settings.queue.room_retry_millis as i64);
    let Update::Matched(ma) = next_change(&mut sa).await.unwrap() else {
        panic!()
    };
    let Update::Matched(mb) = next_change(&mut sb).await.unwrap() else {
        panic!()
    };
    assert_eq!(ma.room_id, mb.room_id);
    assert_eq!(ma.room_id, first[0], "the room game-session already made");
    assert_eq!(rooms_of(&env, a), first, "{a} is in one room only");
    assert_eq!(rooms_of(&env, b), first, "{b} is in one room only");
}

/// A player who cancels (or searches anew) while its group's room is being
/// made stays in the group: the room may exist already, so the others are not
/// requeued and everyone ends in that one room.
#[tokio::test]
async fn cancel_during_room_creation_keeps_the_group_in_its_one_room() {
    let env = Env::new().await;
    let replica = env.replica().await;
    let mut client = replica.client().await;
    env.game.set_lose_replies(true);
    let (a, b) = (Uuid::now_v7(), Uuid::now_v7());
    let (ta, tb) = (env.token(a, false), env.token(b, false));
    let mut sa = client
        .find_match(authed(find("xa", false), &ta))
        .await
        .unwrap()
        .into_inner();
    let mut sb = client
        .find_match(authed(find("xb", false), &tb))
        .await
        .unwrap()
        .into_inner();
    for s in [&mut sa, &mut sb] {
        let err = next_change(s).await.unwrap_err();
        assert_eq!(err.code(), Code::Unavailable, "{err}");
    }
    let first = rooms_of(&env, a);
    assert_eq!(first.len(), 1);
    // a cancels while the room's fate is unknown: not cancelled, no match yet.
    let cancel = || {
        authed(
            CancelFindRequest {
                ticket_id: "xa".into(),
            },
            &ta,
        )
    };
    let answer = client.cancel_find(cancel()).await.unwrap().into_inner();
    assert!(!answer.cancelled && answer.matched.is_none(), "{answer:?}");
    // Nor does a new search take a out of the group.
    let err = client
        .find_match(authed(find("xa2", false), &ta))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::FailedPrecondition, "{err}");
    // b resumes; game-session answers again; the retry makes the same room.
    env.game.set_lose_replies(false);
    let mut sb = client
        .find_match(authed(find("xb", false), &tb))
        .await
        .unwrap()
        .into_inner();
    env.clock
        .advance(env.settings.queue.room_retry_millis as i64);
    // b was never requeued: its first update is the match.
    let Update::Matched(mb) = next(&mut sb).await.unwrap() else {
        panic!("b matched straight away")
    };
    assert_eq!(mb.room_id, first[0]);
    // a's CancelFind now answers where to play.
    let answer = client.cancel_find(cancel()).await.unwrap().into_inner();
    assert!(!answer.cancelled);
    assert_eq!(answer.matched.expect("matched").room_id, first[0]);
    assert_eq!(rooms_of(&env, a), first, "{a} is in one room only");
    assert_eq!(rooms_of(&env, b), first, "{b} is in one room only");
}

#[tokio::test]
async fn a_dead_game_session_address_answers_unavailable() {
    let env = Env::new().await;
    // Nothing listens there.
    let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", dead.local_addr().unwrap());
    drop(dead);
    let store = crate::helpers::redis_store(&env.prefix).await;
    let replica = env.replica_with_game(store, &url).await;
    let mut client = replica.client().await;
    let err = client
        .create_room(authed(
            CreateRoomRequest::default(),
            &env.token(Uuid::now_v7(), false),
        ))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::Unavailable, "{err}");
}

fn join_code(code: &str) -> JoinRoomRequest {
    JoinRoomRequest {
        target: Some(Target::JoinCode(code.into())),
        preferred_seat: None,
    }
}

fn join_id(id: &str) -> JoinRoomRequest {
    JoinRoomRequest {
        target: Some(Target::RoomId(id.into())),
        preferred_seat: None,
    }
}

#[tokio::test]
async fn private_rooms_are_joined_by_code_until_full() {
    let env = Env::new().await;
    let replica = env.replica().await;
    let mut client = replica.client().await;
    let owner = env.token(Uuid::now_v7(), false);
    let created = client
        .create_room(authed(
            CreateRoomRequest {
                request_id: "r-1".into(),
                settings: Some(RuleSettings {
                    seats: Some(4),
                    card_points: Some(true),
                    ..Default::default()
                }),
                ..Default::default()
            },
            &owner,
        ))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(created.seat, 0);
    assert_eq!(created.join_code.len(), 6);
    assert!(!created.join_code.contains(['0', 'O', '1', 'I', 'L']));
    assert_eq!(created.settings.unwrap().card_points, Some(true));
    // The same request id gets the same room.
    let again = client
        .create_room(authed(
            CreateRoomRequest {
                request_id: "r-1".into(),
                ..Default::default()
            },
            &owner,
        ))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        (again.room_id.as_str(), again.join_code.as_str()),
        (created.room_id.as_str(), created.join_code.as_str())
    );
    let game_req = &env.game.created()[0];
    assert_eq!(game_req.visibility, RoomVisibility::Private as i32);
    // Private: not listed, not joinable by id.
    let listed = client
        .list_public_rooms(authed(ListPublicRoomsRequest::default(), &owner))
        .await
        .unwrap()
        .into_inner();
    assert!(listed.rooms.is_empty());
    let p1 = env.token(Uuid::now_v7(), false);
    assert_eq!(
        client
            .join_room(authed(join_id(&created.room_id), &p1))
            .await
            .unwrap_err()
            .code(),
        Code::NotFound
    );
    // By code, case-insensitive; joining twice gives the same seat.
    let lower = created.join_code.to_lowercase();
    let j1 = client
        .join_room(authed(join_code(&lower), &p1))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        (j1.room_id.as_str(), j1.seat),
        (created.room_id.as_str(), 1)
    );
    let j1b = client
        .join_room(authed(join_code(&lower), &p1))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(j1b.seat, 1);
    // The owner joining their own room gets seat 0.
    let own = client
        .join_room(authed(join_code(&lower), &owner))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(own.seat, 0);
    // A taken preferred seat.
    let p2 = env.token(Uuid::now_v7(), false);
    let mut taken = join_code(&lower);
    taken.preferred_seat = Some(1);
    assert_eq!(
        client
            .join_room(authed(taken, &p2))
            .await
            .unwrap_err()
            .code(),
        Code::FailedPrecondition
    );
    let mut partner = join_code(&lower);
    partner.preferred_seat = Some(2);
    assert_eq!(
        client
            .join_room(authed(partner, &p2))
            .await
            .unwrap()
            .into_inner()
            .seat,
        2
    );
    let p3 = env.token(Uuid::now_v7(), false);
    assert_eq!(
        client
            .join_room(authed(join_code(&lower), &p3))
            .await
            .unwrap()
            .into_inner()
            .seat,
        3
    );
    // Full: the code still finds the room, which takes nobody.
    let p4 = env.token(Uuid::now_v7(), false);
    let err = client
        .join_room(authed(join_code(&lower), &p4))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::FailedPrecondition, "{err}");
    assert!(err.message().contains("full"), "{err}");
    let seated = env.game.seated.lock().unwrap().clone();
    assert!(seated.iter().any(|s| s.preferred_seat == Some(2)));
}

/// A public room nobody joins within rooms.ttl_seconds leaves the lobby, and its code
/// then answers "closed"; CreateRoom and the listing say when that happens.
#[tokio::test]
async fn rooms_nobody_joins_expire() {
    let env = Env::new().await;
    let replica = env.replica().await;
    let mut client = replica.client().await;
    let owner = env.token(Uuid::now_v7(), false);
    let created = client
        .create_room(authed(
            CreateRoomRequest {
                visibility: RoomVisibility::Public as i32,
                ..Default::default()
            },
            &owner,
        ))
        .await
        .unwrap()
        .into_inner();
    let now_ms = matchmaking::clock::Clock::now_ms(&env.clock);
    let ttl_ms = (env.settings.rooms.ttl_seconds * 1000) as i64;
    let expires = created.expires_at.expect("an expiry");
    assert_eq!(
        expires.seconds * 1000,
        (now_ms + ttl_ms).div_euclid(1000) * 1000
    );
    let listed = client
        .list_public_rooms(authed(ListPublicRoomsRequest::default(), &owner))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(listed.rooms.len(), 1);
    assert_eq!(listed.rooms[0].expires_at, Some(expires));

    // A minute before: still there. At the expiry: gone from the lobby, closed by code.
    env.clock.advance(ttl_ms - 60_000);
    tokio::time::sleep(Duration::from_millis(1_300)).await;
    let listed = client
        .list_public_rooms(authed(ListPublicRoomsRequest::default(), &owner))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(listed.rooms.len(), 1, "not expired yet");
    env.clock.advance(60_000);
    assert!(
        eventually(WAIT, || {
            let mut client = client.clone();
            let owner = owner.clone();
            async move {
                client
                    .list_public_rooms(authed(ListPublicRoomsRequest::default(), &owner))
                    .await
                    .unwrap()
                    .into_inner()
                    .rooms
                    .is_empty()
            }
        })
        .await,
        "the sweep unlists the expired room"
    );
    let late = env.token(Uuid::now_v7(), false);
    let err = client
        .join_room(authed(join_code(&created.join_code), &late))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::FailedPrecondition, "{err}");
    assert!(err.message().contains("closed"), "{err}");
    let err = client
        .join_room(authed(join_id(&created.room_id), &late))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::FailedPrecondition, "{err}");
}

#[tokio::test]
async fn a_code_keeps_finding_its_room_and_answers_with_the_rooms_state() {
    let env = Env::new().await;
    let replica = env.replica().await;
    let mut client = replica.client().await;
    let owner = env.token(Uuid::now_v7(), false);
    let room = client
        .create_room(authed(CreateRoomRequest::default(), &owner))
        .await
        .unwrap()
        .into_inner();
    // Any six characters of A-Z and 2-9 are a well-formed code, also the
    // letters the server leaves out of its own codes: no such room.
    let guesser = env.token(Uuid::now_v7(), false);
    for code in ["LILO42", "lilo42", "LI-LO 42"] {
        let err = client
            .join_room(authed(join_code(code), &guesser))
            .await
            .unwrap_err();
        assert_eq!(err.code(), Code::NotFound, "{code}: {err}");
    }
    for code in ["LILO4", "LILO421", "LILO10", "LIL*42"] {
        let err = client
            .join_room(authed(join_code(code), &guesser))
            .await
            .unwrap_err();
        assert_eq!(err.code(), Code::InvalidArgument, "{code}: {err}");
    }
    // game-session no longer has the room: the join closes it here too, and
    // the code then answers that the room is closed, not that it never was.
    env.game.forget(&room.room_id);
    let joiner = env.token(Uuid::now_v7(), false);
    for _ in 0..2 {
        let err = client
            .join_room(authed(join_code(&room.join_code), &joiner))
            .await
            .unwrap_err();
        assert_eq!(err.code(), Code::FailedPrecondition, "{err}");
        assert!(err.message().contains("closed"), "{err}");
    }
}

#[tokio::test]
async fn a_player_seated_in_an_unfinished_match_may_not_search_or_make_rooms() {
    let env = Env::new().await;
    let replica = env.replica().await;
    let mut client = replica.client().await;
    let (owner, guest) = (
        env.token(Uuid::now_v7(), false),
        env.token(Uuid::now_v7(), false),
    );
    let room = client
        .create_room(authed(CreateRoomRequest::default(), &owner))
        .await
        .unwrap()
        .into_inner();
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
    refused(
        client
            .find_match(authed(find("owner-1", false), &owner))
            .await
            .unwrap_err(),
    );
    refused(
        client
            .create_room(authed(CreateRoomRequest::default(), &owner))
            .await
            .unwrap_err(),
    );
    // The guest joins; the match runs. Both are held to it.
    client
        .join_room(authed(join_code(&room.join_code), &guest))
        .await
        .unwrap();
    refused(
        client
            .find_match(authed(find("guest-1", false), &guest))
            .await
            .unwrap_err(),
    );
    let elsewhere = client
        .create_room(authed(
            CreateRoomRequest::default(),
            &env.token(Uuid::now_v7(), false),
        ))
        .await
        .unwrap()
        .into_inner();
    refused(
        client
            .join_room(authed(join_code(&elsewhere.join_code), &guest))
            .await
            .unwrap_err(),
    );
    // Joining the same room again is not another match: the seat comes back.
    let again = client
        .join_room(authed(join_code(&room.join_code), &guest))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(again.seat, 1);
    // The match ends: both are free again.
    env.game.finish(&room.room_id);
    client
        .create_room(authed(CreateRoomRequest::default(), &owner))
        .await
        .unwrap();
    let mut search = client
        .find_match(authed(find("guest-2", false), &guest))
        .await
        .unwrap()
        .into_inner();
    assert!(matches!(
        next(&mut search).await.unwrap(),
        Update::Queued(_)
    ));
}

#[tokio::test]
async fn get_current_seat_finds_the_callers_room_until_its_match_ends() {
    let env = Env::new().await;
    let replica = env.replica().await;
    let mut client = replica.client().await;
    let (owner, guest) = (
        env.token(Uuid::now_v7(), false),
        env.token(Uuid::now_v7(), true),
    );
    let current = |client: &mut MatchmakingServiceClient<Channel>, token: &str| {
        let mut client = client.clone();
        let request = authed(GetCurrentSeatRequest::default(), token);
        async move { client.get_current_seat(request).await }
    };
    // Seated nowhere: NOT_FOUND.
    let err = current(&mut client, &owner).await.unwrap_err();
    assert_eq!(err.code(), Code::NotFound, "{err}");
    let room = client
        .create_room(authed(CreateRoomRequest::default(), &owner))
        .await
        .unwrap()
        .into_inner();
    let seat = current(&mut client, &owner).await.unwrap().into_inner();
    assert_eq!(
        (seat.room_id.as_str(), seat.seat, seat.status, seat.started),
        (room.room_id.as_str(), 0, RoomStatus::Waiting as i32, false)
    );
    client
        .join_room(authed(join_code(&room.join_code), &guest))
        .await
        .unwrap();
    let seat = current(&mut client, &guest).await.unwrap().into_inner();
    assert_eq!(seat.room_id, room.room_id);
    assert_eq!(seat.seat, 1);
    assert_eq!(seat.status, RoomStatus::InProgress as i32);
    assert!(seat.started);
    // The match ends: nobody is seated any more.
    env.game.finish(&room.room_id);
    for token in [&owner, &guest] {
        let err = current(&mut client, token).await.unwrap_err();
        assert_eq!(err.code(), Code::NotFound, "{err}");
    }
    // A service token is not a player's.
    let err = current(&mut client, &env.service_token())
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::PermissionDenied, "{err}");
    // game-session unreachable: UNAVAILABLE, retry.
    let other = env.token(Uuid::now_v7(), false);
    client
        .create_room(authed(CreateRoomRequest::default(), &other))
        .await
        .unwrap();
    env.game.set_unavailable(true);
    let err = current(&mut client, &other).await.unwrap_err();
    assert_eq!(err.code(), Code::Unavailable, "{err}");
}

#[tokio::test]
async fn wrong_codes_are_rate_limited_per_account() {
    let env = Env::new().await; // 3 wrong codes per window
    let replica = env.replica().await;
    let mut client = replica.client().await;
    let owner = env.token(Uuid::now_v7(), false);
    let room = client
        .create_room(authed(CreateRoomRequest::default(), &owner))
        .await
        .unwrap()
        .into_inner();
    let guesser = env.token(Uuid::now_v7(), false);
    assert_eq!(
        client
            .join_room(authed(join_code("0O1IL!"), &guesser))
            .await
            .unwrap_err()
            .code(),
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
            client
                .join_room(authed(join_code(wrong), &guesser))
                .await
                .unwrap_err()
                .code(),
            Code::NotFound
        );
    }
    let err = client
        .join_room(authed(join_code(&room.join_code), &guesser))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::ResourceExhausted, "{err}");
    // Another account is not affected; the window passes.
    let other = env.token(Uuid::now_v7(), false);
    assert_eq!(
        client
            .join_room(authed(join_code(wrong), &other))
            .await
            .unwrap_err()
            .code(),
        Code::NotFound
    );
    env.clock.advance(600_000);
    let ok = client
        .join_room(authed(join_code(&room.join_code), &guesser))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(ok.seat, 1);
}

#[tokio::test]
async fn the_public_lobby_lists_filters_pages_and_forgets_full_rooms() {
    let env = Env::new().await;
    let replica = env.replica().await;
    let mut client = replica.client().await;
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
        let token = env.token(Uuid::now_v7(), false);
        let room = client
            .create_room(authed(public(seats, target, ranked), &token))
            .await
            .unwrap()
            .into_inner();
        ids.push(room.room_id);
    }
    let token = env.token(Uuid::now_v7(), false);
    let list = |req: ListPublicRoomsRequest| authed(req, &token);
    let all = client
        .list_public_rooms(list(ListPublicRoomsRequest::default()))
        .await
        .unwrap()
        .into_inner();
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
    let filtered = client
        .list_public_rooms(list(ListPublicRoomsRequest {
            seats: Some(2),
            target_score: Some(101),
            ranked: Some(false),
            ..Default::default()
        }))
        .await
        .unwrap()
        .into_inner();
    let got: Vec<_> = filtered.rooms.iter().map(|r| r.room_id.clone()).collect();
    assert_eq!(got, vec![ids[0].clone(), ids[3].clone()]);
    let ranked = client
        .list_public_rooms(list(ListPublicRoomsRequest {
            ranked: Some(true),
            ..Default::default()
        }))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(ranked.rooms.len(), 2);
    // Pages of 2.
    let mut pages = Vec::new();
    let mut token_ = String::new();
    loop {
        let page = client
            .list_public_rooms(list(ListPublicRoomsRequest {
                page_size: 2,
                page_token: token_.clone(),
                ..Default::default()
            }))
            .await
            .unwrap()
            .into_inner();
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
    let joiner = env.token(Uuid::now_v7(), false);
    let joined = client
        .join_room(authed(join_id(&ids[0]), &joiner))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(joined.seat, 1);
    let after = client
        .list_public_rooms(list(ListPublicRoomsRequest::default()))
        .await
        .unwrap()
        .into_inner();
    assert!(!after.rooms.iter().any(|r| r.room_id == ids[0]));
    assert_eq!(after.rooms.len(), 4);
    let late = env.token(Uuid::now_v7(), false);
    assert_eq!(
        client
            .join_room(authed(join_id(&ids[0]), &late))
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
            client
                .list_public_rooms(list(bad))
                .await
                .unwrap_err()
                .code(),
            Code::InvalidArgument
        );
    }
}

#[tokio::test]
async fn bad_input_gets_clear_statuses() {
    let env = Env::new().await;
    let replica = env.replica().await;
    let mut client = replica.client().await;
    let token = env.token(Uuid::now_v7(), false);
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
        let err = client
            .find_match(authed(request, &token))
            .await
            .unwrap_err();
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
        let err = client
            .create_room(authed(request, &token))
            .await
            .unwrap_err();
        assert_eq!(err.code(), Code::InvalidArgument);
        assert!(err.message().contains(what), "{what}: {}", err.message());
    }
    let err = client
        .join_room(authed(JoinRoomRequest::default(), &token))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument);
    assert_eq!(
        client
            .join_room(authed(join_id("no-such-room"), &token))
            .await
            .unwrap_err()
            .code(),
        Code::NotFound
    );
    // A bot room: playing alone against the computer is full at once.
    let solo = client
        .create_room(authed(
            room(RuleSettings::default(), false, vec![1]),
            &token,
        ))
        .await
        .unwrap()
        .into_inner();
    let other = env.token(Uuid::now_v7(), false);
    assert_eq!(
        client
            .join_room(authed(join_code(&solo.join_code), &other))
            .await
            .unwrap_err()
            .code(),
        Code::FailedPrecondition
    );
    // No token, a bad token, a service token.
    assert_eq!(
        client
            .find_match(Request::new(FindMatchRequest::default()))
            .await
            .unwrap_err()
            .code(),
        Code::Unauthenticated
    );
    assert_eq!(
        client
            .create_room(authed(CreateRoomRequest::default(), "not.a.jwt"))
            .await
            .unwrap_err()
            .code(),
        Code::Unauthenticated
    );
    assert_eq!(
        client
            .list_public_rooms(Request::new(ListPublicRoomsRequest::default()))
            .await
            .unwrap_err()
            .code(),
        Code::Unauthenticated
    );
    assert_eq!(
        client
            .join_room(Request::new(join_code("ABCDEF")))
            .await
            .unwrap_err()
            .code(),
        Code::Unauthenticated
    );
    assert_eq!(
        client
            .cancel_find(Request::new(CancelFindRequest {
                ticket_id: "x".into()
            }))
            .await
            .unwrap_err()
            .code(),
        Code::Unauthenticated
    );
}

#[tokio::test]
async fn guests_may_be_kept_out_of_ranked() {
    let mut settings = crate::helpers::test_settings();
    settings.queue.guests_may_play_ranked = false;
    let env = Env::with_settings(settings).await;
    let replica = env.replica().await;
    let mut client = replica.client().await;
    let guest = env.token(Uuid::now_v7(), true);
    let err = client
        .find_match(authed(find("g", true), &guest))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::PermissionDenied);
    // Nor may a guest make or join a ranked room.
    let ranked_room = CreateRoomRequest {
        ranked: true,
        visibility: RoomVisibility::Public as i32,
        ..Default::default()
    };
    let err = client
        .create_room(authed(ranked_room.clone(), &guest))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::PermissionDenied, "{err}");
    let member = env.token(Uuid::now_v7(), false);
    let room = client
        .create_room(authed(ranked_room, &member))
        .await
        .unwrap()
        .into_inner();
    let err = client
        .join_room(authed(join_id(&room.room_id), &guest))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::PermissionDenied, "{err}");
    // Unranked is fine.
    let mut s = client
        .find_match(authed(find("g", false), &guest))
        .await
        .unwrap()
        .into_inner();
    assert!(matches!(next(&mut s).await.unwrap(), Update::Queued(_)));
}

#[tokio::test]
async fn the_embedded_memory_store_serves_the_same_api() {
    let env = Env::new().await;
    let replica = env.memory_replica().await;
    let mut client = replica.client().await;
    let mut sa = client
        .find_match(authed(find("ma", false), &env.token(Uuid::now_v7(), false)))
        .await
        .unwrap()
        .into_inner();
    let mut sb = client
        .find_match(authed(find("mb", false), &env.token(Uuid::now_v7(), false)))
        .await
        .unwrap()
        .into_inner();
    let Update::Matched(ma) = next_change(&mut sa).await.unwrap() else {
        panic!()
    };
    let Update::Matched(mb) = next_change(&mut sb).await.unwrap() else {
        panic!()
    };
    assert_eq!(ma.room_id, mb.room_id);
}

/// InviteFriend checks the room and the caller's seat, then hands the invite (the room's
/// code, rules and expiry) to accounts; accounts' refusals keep their meaning.
#[tokio::test]
async fn a_seated_player_invites_a_friend_to_a_waiting_room() {
    let env = Env::new().await;
    let replica = env.replica().await;
    let mut client = replica.client().await;
    let (owner, friend, stranger) = (Uuid::now_v7(), Uuid::now_v7(), Uuid::now_v7());
    let owner_token = env.token(owner, false);
    let created = client
        .create_room(authed(
            CreateRoomRequest {
                request_id: "invite-1".into(),
                ..Default::default()
            },
            &owner_token,
        ))
        .await
        .unwrap()
        .into_inner();
    let invite = |room_id: &str, user: Uuid| InviteFriendRequest {
        room_id: room_id.into(),
        user_id: user.to_string(),
    };
    let answer = client
        .invite_friend(authed(invite(&created.room_id, friend), &owner_token))
        .await
        .unwrap()
        .into_inner();
    let sent = env.invites.sent.lock().unwrap().clone();
    assert_eq!(sent.len(), 1);
    assert_eq!(
        (
            sent[0].from_user_id.as_str(),
            sent[0].to_user_id.as_str(),
            sent[0].room_id.as_str(),
            sent[0].join_code.as_str(),
        ),
        (
            owner.to_string().as_str(),
            friend.to_string().as_str(),
            created.room_id.as_str(),
            created.join_code.as_str(),
        )
    );
    assert_eq!(sent[0].settings, created.settings);
    assert_eq!(sent[0].expires_at, answer.expires_at);
    assert!(answer.expires_at.unwrap().seconds > env.clock.now_ms() / 1000);
    assert_eq!(
        answer.expires_at, created.expires_at,
        "the invite expires with the room"
    );

    let code_of = |result: Result<tonic::Response<InviteFriendResponse>, tonic::Status>| {
        result.expect_err("refused").code()
    };
    // Bad input, a room the caller is not in, a room that does not exist.
    assert_eq!(
        code_of(
            client
                .invite_friend(authed(invite("", friend), &owner_token))
                .await
        ),
        Code::InvalidArgument
    );
    assert_eq!(
        code_of(
            client
                .invite_friend(authed(
                    InviteFriendRequest {
                        room_id: created.room_id.clone(),
                        user_id: "not-a-user".into(),
                    },
                    &owner_token,
                ))
                .await
        ),
        Code::InvalidArgument
    );
    assert_eq!(
        code_of(
            client
                .invite_friend(authed(invite(&created.room_id, owner), &owner_token))
                .await
        ),
        Code::InvalidArgument
    );
    assert_eq!(
        code_of(
            client
                .invite_friend(authed(
                    invite(&created.room_id, friend),
                    &env.token(stranger, false)
                ))
                .await
        ),
        Code::PermissionDenied
    );
    assert_eq!(
        code_of(
            client
                .invite_friend(authed(invite("no-such-room", friend), &owner_token))
                .await
        ),
        Code::NotFound
    );
    // accounts says they are not friends, or cannot be reached.
    *env.invites.refuse_with.lock().unwrap() = Some(tonic::Status::failed_precondition(
        "the two players are not friends",
    ));
    assert_eq!(
        code_of(
            client
                .invite_friend(authed(invite(&created.room_id, stranger), &owner_token))
                .await
        ),
        Code::FailedPrecondition
    );
    *env.invites.refuse_with.lock().unwrap() = Some(tonic::Status::unavailable("down"));
    assert_eq!(
        code_of(
            client
                .invite_friend(authed(invite(&created.room_id, friend), &owner_token))
                .await
        ),
        Code::Unavailable
    );
    *env.invites.refuse_with.lock().unwrap() = None;
    // The friend joins with the code: inviting them again is refused, and so is any
    // invite once the room is full.
    client
        .join_room(authed(
            join_code(&created.join_code),
            &env.token(friend, false),
        ))
        .await
        .unwrap();
    assert_eq!(
        code_of(
            client
                .invite_friend(authed(invite(&created.room_id, stranger), &owner_token))
                .await
        ),
        Code::FailedPrecondition,
        "full"
    );
    assert_eq!(
        env.invites.sent.lock().unwrap().len(),
        1,
        "no refused invite was sent"
    );
}

#[tokio::test]
async fn a_banned_players_search_ends_and_their_next_call_is_refused() {
    use basra_platform::revocation::Revoked;
    let env = Env::new().await;
    let replica = env.replica().await;
    let mut client = replica.client().await;
    let (banned, other) = (Uuid::now_v7(), Uuid::now_v7());
    let token = env.token(banned, false);
    let mut search = client
        .find_match(authed(find("t-banned", false), &token))
        .await
        .unwrap()
        .into_inner();
    assert!(matches!(
        next(&mut search).await.unwrap(),
        Update::Queued(_)
    ));
    let started = std::time::Instant::now();
    env.revocations
        .revoke(
            banned,
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
    let refused = client
        .find_match(authed(find("t-banned-2", false), &token))
        .await
        .unwrap_err();
    assert_eq!(refused.code(), Code::PermissionDenied);
    let mut theirs = client
        .find_match(authed(find("t-other", false), &env.token(other, false)))
        .await
        .unwrap()
        .into_inner();
    match next(&mut theirs).await.unwrap() {
        Update::Queued(q) => assert_eq!(q.players_waiting, 1, "alone in the queue"),
        other => panic!("{other:?}"),
    }
    // An unban restores access.
    env.revocations.restore(banned).await.unwrap();
    client
        .find_match(authed(find("t-banned-3", false), &token))
        .await
        .expect("unbanned: the call is served");
}

/// Matchmaking tells game-session how each seat was filled: queue seats with the time
/// their player searched (from the first queueing to the group), the room's creator as
/// its host, bots as bots, and a join by code, from the lobby or after an invite as such.
#[tokio::test]
async fn game_session_is_told_how_each_seat_was_filled() {
    use basra_proto::basra::common::v1::SeatFill;
    let env = Env::new().await;
    let replica = env.replica().await;
    let mut client = replica.client().await;

    // The queue: a searches 3 s before b comes.
    let (a, b) = (Uuid::now_v7(), Uuid::now_v7());
    let mut sa = client
        .find_match(authed(find("fill-a", false), &env.token(a, false)))
        .await
        .unwrap()
        .into_inner();
    assert!(matches!(next(&mut sa).await.unwrap(), Update::Queued(_)));
    env.clock.advance(3_000);
    let _sb = client
        .find_match(authed(find("fill-b", false), &env.token(b, false)))
        .await
        .unwrap()
        .into_inner();
    let Update::Matched(matched) = next_change(&mut sa).await.unwrap() else {
        panic!()
    };
    let room = env
        .game
        .created()
        .into_iter()
        .find(|r| r.room_id == matched.room_id)
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
            (b.to_string(), SeatFill::Queue as i32, 0),
            (a.to_string(), SeatFill::Queue as i32, 3_000)
        ]
    );

    // A public room with a bot: the host, the bot; joined from the list, by code after
    // an invite, and by code.
    let owner = Uuid::now_v7();
    let owner_token = env.token(owner, false);
    let created = client
        .create_room(authed(
            CreateRoomRequest {
                request_id: "fill-room".into(),
                settings: Some(RuleSettings {
                    seats: Some(4),
                    ..Default::default()
                }),
                bot_seats: vec![3],
                visibility: RoomVisibility::Public as i32,
                ..Default::default()
            },
            &owner_token,
        ))
        .await
        .unwrap()
        .into_inner();
    let room = env
        .game
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
    let (lobby, invited) = (Uuid::now_v7(), Uuid::now_v7());
    client
        .join_room(authed(join_id(&created.room_id), &env.token(lobby, false)))
        .await
        .unwrap();
    client
        .invite_friend(authed(
            InviteFriendRequest {
                room_id: created.room_id.clone(),
                user_id: invited.to_string(),
            },
            &owner_token,
        ))
        .await
        .unwrap();
    client
        .join_room(authed(
            join_code(&created.join_code),
            &env.token(invited, false),
        ))
        .await
        .unwrap();
    let seated: Vec<(String, i32)> = env
        .game
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
            (lobby.to_string(), SeatFill::Lobby as i32),
            (invited.to_string(), SeatFill::Invite as i32)
        ]
    );
    // A private room joined by code, nobody invited.
    let private = client
        .create_room(authed(
            CreateRoomRequest {
                request_id: "fill-private".into(),
                ..Default::default()
            },
            &env.token(Uuid::now_v7(), false),
        ))
        .await
        .unwrap()
        .into_inner();
    let coder = Uuid::now_v7();
    client
        .join_room(authed(
            join_code(&private.join_code),
            &env.token(coder, false),
        ))
        .await
        .unwrap();
    let seated = env.game.seated.lock().unwrap().clone();
    let by_code = seated
        .iter()
        .find(|s| s.room_id == private.room_id)
        .unwrap();
    assert_eq!(
        (by_code.user_id.clone(), by_code.fill),
        (coder.to_string(), SeatFill::Code as i32)
    );
}

/// Before anyone searches, every queue a search may enter is measured at zero (a
/// dashboard shows 0, not "No data"): ranked or not, 2 or 4 seats, each offered target.
#[tokio::test]
async fn every_offered_queue_is_measured_at_zero_before_any_search() {
    let env = Env::new().await;
    let replica = env.replica().await;
    let scores = &env.settings.queue.target_scores;
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
        let text = replica.metrics.render();
        want.iter().all(|series| text.contains(series.as_str()))
    };
    assert!(
        eventually(WAIT, || async { served() }).await,
        "{want:?} in:\n{}",
        replica.metrics.render()
    );
    assert_eq!(
        replica
            .metrics
            .render()
            .matches("basra_matchmaking_queue_length{")
            .count(),
        12
    );
}
