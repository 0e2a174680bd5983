//! The event clock, served: a four-player knockout started on its second, rooms made in
//! (the fake) game-session, "your match is ready" through GetMyMatch and the notices, a
//! forfeit at the join deadline, the final, the champion and the standings; every
//! result recorded once; the live standings on WatchEvent; a player in an event match
//! held from the queue and the lobby.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use basra_proto::basra::matchmaking::v1::{CreateRoomRequest, GetCurrentSeatRequest};
use basra_proto::basra::matchmaking::v1::{
    EventStatus, GetEventRequest, GetMyMatchRequest, GetStandingsRequest, ListMyEventsRequest,
    Pairing, PairingResult, RegisterRequest, WatchEventRequest, WatchEventResponse,
};
use basra_testkit::authed;
use basra_testkit::matchmaking::{Player, TestApp, find};
use matchmaking::events::EventDeps;
use matchmaking::events::live::RedisLiveStore;
use matchmaking::events::notices::{Notice, RecordedNotices};
use matchmaking::events::store::PgEventStore;
use tonic::Code;

use super::{Operator, assert_refused, events_client, knockout};
use basra_proto::convert::timestamp;
use basra_testkit::matchmaking::CLOCK_START;
use std::collections::{BTreeMap, HashMap};

/// Waits (real time, up to 10 s) until `done` holds.
async fn until(what: &str, mut done: impl FnMut() -> bool) {
    for _ in 0..500 {
        if done() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("timed out waiting for {what}");
}

fn room_of(app: &TestApp, key: &str) -> Option<String> {
    app.game()
        .created()
        .into_iter()
        .map(|r| r.room_id)
        .find(|id| id.ends_with(key))
}

async fn my_match(app: &TestApp, p: &Player, event: &str) -> Result<(String, u32), tonic::Status> {
    let m = events_client(app)
        .get_my_match(authed(
            GetMyMatchRequest {
                event_id: event.into(),
            },
            &p.token,
        ))
        .await?
        .into_inner();
    Ok((m.room_id, m.seat))
}

/// Waits until the player's match is ready (the room is made before the state saying so
/// is saved).
async fn ready(app: &TestApp, p: &Player, event: &str) {
    for _ in 0..500 {
        if my_match(app, p, event).await.is_ok() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("no match ready");
}

#[tokio::test]
async fn a_knockout_is_played_to_its_final_and_every_result_is_recorded_once() {
    let (app, _, _) = knockout_to_its_final(EventDeps::memory(), true).await;
    assert!(
        app.game().bulk_served.load(Ordering::SeqCst) > 0,
        "rooms made and results asked with CreateRooms and GetSeats"
    );
}

/// The same against a game-session of a release before CreateRooms and GetSeats (they
/// answer UNIMPLEMENTED during an upgrade): the clock falls back to CreateRoom and
/// GetSeat, and the knockout plays exactly the same.
#[tokio::test]
async fn a_knockout_is_played_the_same_against_a_game_session_without_the_bulk_calls() {
    let (app, _, _) = knockout_to_its_final(EventDeps::memory(), false).await;
    assert_eq!(app.game().bulk_served.load(Ordering::SeqCst), 0);
}

/// The whole state a client that does not stream asks for (GetEvent `with_state`).
async fn state(app: &TestApp, p: &Player, event: &str) -> WatchEventResponse {
    events_client(app)
        .get_event(authed(
            GetEventRequest {
                event_id: event.into(),
                with_state: true,
            },
            &p.token,
        ))
        .await
        .expect("GetEvent")
        .into_inner()
        .state
        .expect("the state, asked for")
}

/// A pairing's round, table, result and winner.
type Row = (u32, u32, i32, String);

fn rows(pairings: &[Pairing]) -> Vec<Row> {
    pairings
        .iter()
        .map(|p| (p.round, p.table, p.result, p.winner.clone()))
        .collect()
}

/// The first message of a WatchEvent stream opened with `last_seen_version`.
async fn first_message(
    app: &TestApp,
    p: &Player,
    event: &str,
    last_seen_version: u64,
) -> WatchEventResponse {
    let mut watch = events_client(app)
        .watch_event(authed(
            WatchEventRequest {
                event_id: event.into(),
                last_seen_version,
                changes_only: false,
            },
            &p.token,
        ))
        .await
        .expect("WatchEvent")
        .into_inner();
    tokio::time::timeout(Duration::from_secs(10), watch.message())
        .await
        .expect("a first message")
        .expect("no error")
        .expect("not the end")
}

/// The same on the production stores: PostgreSQL (a fresh database) and a Redis Cluster.
#[sqlx::test(migrations = "./migrations")]
async fn a_knockout_on_postgres_and_a_redis_cluster(pool: sqlx::PgPool) {
    let prefix = basra_testkit::matchmaking::cluster_prefix();
    let events = EventDeps {
        store: Arc::new(PgEventStore::new(pool)),
        live: Arc::new(
            RedisLiveStore::connect(&prefix.url(), prefix.as_str())
                .await
                .expect("the Redis Cluster"),
        ),
        ..EventDeps::memory()
    };
    let (app, event, whole) = knockout_to_its_final(events, true).await;
    // Its live state expired (kept 7 days): the finished knockout's rounds are rebuilt
    // from the results stored in PostgreSQL.
    let key = format!("{}:{{ev:{event}}}:state", prefix.as_str());
    let redis = basra_platform::redis::Redis::connect(&prefix.url())
        .await
        .unwrap();
    let removed: i64 = redis::cmd("DEL")
        .arg(&key)
        .query_async(&mut redis.conn())
        .await
        .unwrap();
    assert_eq!(removed, 1, "{key}");
    let asked = state(&app, &app.player(), &event).await;
    assert_eq!(rows(&asked.earlier_pairings), whole[..2]);
    assert_eq!(rows(&asked.pairings), whole[2..]);
    assert!(asked.earlier_pairings.iter().all(|p| !p.room_id.is_empty()));
    // Each match played to its end still names its match, for its replay (kept in
    // PostgreSQL with the result); the forfeit none.
    for p in asked.earlier_pairings.iter().chain(&asked.pairings) {
        let played = p.result == PairingResult::Won as i32;
        let expected = if played {
            format!("match-{}", p.room_id)
        } else {
            String::new()
        };
        assert_eq!(p.match_id, expected, "{p:?}");
    }
    assert_eq!(first_message(&app, &app.player(), &event, 0).await, asked);
}

/// Plays a four-player knockout to its final, against a game-session serving the bulk
/// calls (`bulk`) or one before them; answers the app, the event and its bracket's rows
/// (round 1's two matches, then the final).
async fn knockout_to_its_final(mut events: EventDeps, bulk: bool) -> (TestApp, String, Vec<Row>) {
    let notices = Arc::new(RecordedNotices::default());
    events.notices = notices.clone();
    let app = TestApp::builder()
        .memory()
        .events(events)
        .settings(|s| s.events.tick_millis = 20)
        .spawn()
        .await;
    app.game().set_no_bulk(!bulk);
    let op = Operator::of(&app);
    let event = op.create(knockout(8)).await.unwrap().event_id;
    // Seeds 1-4 by rating.
    let seeds = seeded(&app, 4, &event).await;
    let mut watch = events_client(&app)
        .watch_event(authed(
            WatchEventRequest {
                event_id: event.clone(),
                last_seen_version: 0,
                changes_only: false,
            },
            &seeds[0].token,
        ))
        .await
        .expect("WatchEvent")
        .into_inner();
    let first = watch.message().await.unwrap().unwrap();
    // A stream that asked for changes only, read at the end.
    let mut changes_watch = events_client(&app)
        .watch_event(authed(
            WatchEventRequest {
                event_id: event.clone(),
                last_seen_version: 0,
                changes_only: true,
            },
            &seeds[1].token,
        ))
        .await
        .expect("WatchEvent")
        .into_inner();
    assert_eq!(
        first.event.unwrap().status,
        EventStatus::Registration as i32
    );

    // The start second: seed 1 meets seed 4 at table 1, seed 2 meets seed 3 at table 2.
    app.clock().advance(60_000);
    until("round 1's rooms", || app.game().created().len() >= 2).await;
    let t1 = room_of(&app, "r1t1").expect("table 1");
    let t2 = room_of(&app, "r1t2").expect("table 2");
    ready(&app, &seeds[3], &event).await;
    assert_eq!(
        my_match(&app, &seeds[0], &event).await.unwrap(),
        (t1.clone(), 0)
    );
    assert_eq!(
        my_match(&app, &seeds[3], &event).await.unwrap(),
        (t1.clone(), 1)
    );
    assert_eq!(
        my_match(&app, &seeds[2], &event).await.unwrap(),
        (t2.clone(), 1)
    );
    until("match-ready notices", || {
        notices
            .sent
            .lock()
            .unwrap()
            .iter()
            .filter(|(_, _, n)| matches!(n, Notice::MatchReady { .. }))
            .count()
            == 4
    })
    .await;

    // Table 1 is played: seed 1 wins. At table 2 only seed 3 joins: seed 2 forfeits at
    // the join deadline.
    for p in [&seeds[0], &seeds[3]] {
        app.game().join(&t1, &p.id.to_string());
    }
    app.game().join(&t2, &seeds[2].id.to_string());
    app.game().finish_won(&t1, 0);
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(
        room_of(&app, "r2t1").is_none(),
        "the final waits for table 2"
    );
    app.clock().advance(60_000);
    until("the final's room", || room_of(&app, "r2t1").is_some()).await;
    let fin = room_of(&app, "r2t1").unwrap();
    ready(&app, &seeds[0], &event).await;
    assert_eq!(
        my_match(&app, &seeds[0], &event).await.unwrap(),
        (fin.clone(), 0)
    );
    assert_eq!(
        my_match(&app, &seeds[2], &event).await.unwrap(),
        (fin.clone(), 1)
    );
    let out = my_match(&app, &seeds[1], &event).await.unwrap_err();
    assert_refused(&out, Code::NotFound, None);

    // A client that (re)opens now, mid-knockout, gets round 1 whole with its results:
    // on a new stream's first message and from GetEvent with_state alike.
    let round1 = vec![
        (1, 1, PairingResult::Won as i32, seeds[0].id.to_string()),
        (1, 2, PairingResult::Forfeit as i32, seeds[2].id.to_string()),
    ];
    let asked = state(&app, &seeds[1], &event).await;
    assert_eq!(rows(&asked.earlier_pairings), round1);
    assert_eq!(
        rows(&asked.pairings),
        [(2, 1, PairingResult::Unspecified as i32, String::new())]
    );
    assert_eq!(asked.earlier_pairings[0].room_id, t1);
    // The match played at table 1 replays by its id; a forfeit and a match not ended
    // name none.
    assert_eq!(asked.earlier_pairings[0].match_id, format!("match-{t1}"));
    assert_eq!(asked.earlier_pairings[1].match_id, "", "a forfeit");
    assert_eq!(asked.pairings[0].match_id, "", "the final is being played");
    assert_eq!(
        asked.earlier_pairings[0].user_ids,
        [seeds[0].id.to_string(), seeds[3].id.to_string()]
    );
    let reopened = first_message(&app, &seeds[1], &event, 0).await;
    assert_eq!(reopened.version, asked.version);
    assert_eq!(reopened.earlier_pairings, asked.earlier_pairings);
    assert_eq!(reopened.pairings, asked.pairings);
    // Without the state, GetEvent answers as before.
    let plain = events_client(&app)
        .get_event(authed(
            GetEventRequest {
                event_id: event.clone(),
                with_state: false,
            },
            &seeds[1].token,
        ))
        .await
        .unwrap()
        .into_inner();
    assert!(plain.state.is_none());
    // Reopened after a break at that version, the first message is the next change
    // (the final's result) and it has round 1 too.
    let resumed_at = reopened.version;
    let resumed = tokio::spawn({
        let app_events = events_client(&app);
        let token = seeds[1].token.clone();
        let event = event.clone();
        async move {
            let mut client = app_events;
            let mut watch = client
                .watch_event(authed(
                    WatchEventRequest {
                        event_id: event,
                        last_seen_version: resumed_at,
                        changes_only: false,
                    },
                    &token,
                ))
                .await
                .expect("WatchEvent")
                .into_inner();
            watch.message().await.expect("no error").expect("a message")
        }
    });

    // Seed 3 wins the final.
    for p in [&seeds[0], &seeds[2]] {
        app.game().join(&fin, &p.id.to_string());
    }
    app.game().finish_won(&fin, 1);
    let resumed = tokio::time::timeout(Duration::from_secs(10), resumed)
        .await
        .expect("the resumed stream's first message")
        .unwrap();
    assert!(resumed.version > resumed_at, "{resumed:?}");
    assert_eq!(rows(&resumed.earlier_pairings), round1);
    assert_eq!(resumed.pairings[0].round, 2);

    // The stream open from the start: its first message (before the start) had no
    // rounds; later ones carry the earlier rounds only when the round has moved on
    // since the message before, so keeping each table's newest pairing gives the
    // whole bracket.
    assert!(first.earlier_pairings.is_empty() && first.pairings.is_empty());
    let mut last = first.version;
    let mut last_round = 0;
    let mut bracket: BTreeMap<(u32, u32), Pairing> = BTreeMap::new();
    let mut end = None;
    while let Some(update) = tokio::time::timeout(Duration::from_secs(10), watch.message())
        .await
        .expect("an update")
        .unwrap()
    {
        assert!(update.version > last, "versions rise");
        last = update.version;
        let round = update.pairings.iter().map(|p| p.round).max().unwrap_or(0);
        if round > last_round {
            let earlier: Vec<u32> = update.earlier_pairings.iter().map(|p| p.round).collect();
            assert!(
                earlier
                    .iter()
                    .all(|r| (last_round.max(1)..round).contains(r)),
                "only the rounds since round {last_round}: {earlier:?}"
            );
        } else {
            assert!(update.earlier_pairings.is_empty(), "{update:?}");
        }
        last_round = last_round.max(round);
        for p in update.earlier_pairings.iter().chain(&update.pairings) {
            bracket.insert((p.round, p.table), p.clone());
        }
        end = Some(update);
    }
    let mut whole = round1.clone();
    whole.push((2, 1, PairingResult::Won as i32, seeds[2].id.to_string()));
    assert_eq!(rows(&bracket.into_values().collect::<Vec<_>>()), whole);
    let end = end.expect("the last update");
    // The stream of changes: each message applied to what the ones before left gives
    // the same last state as the whole one's; within a round, results came as changes.
    let mut held = WatchEventResponse::default();
    let mut partial = 0;
    while let Some(update) = tokio::time::timeout(Duration::from_secs(10), changes_watch.message())
        .await
        .expect("an update")
        .unwrap()
    {
        if let Some(changes) = &update.changes {
            partial += 1;
            assert!(update.standings.is_empty() && update.pairings.is_empty());
            assert!(update.earlier_pairings.is_empty());
            assert_eq!(changes.since_version, held.version);
        }
        basra_proto::event_changes::apply(&mut held, update).expect("changes that apply");
    }
    assert!(partial > 0, "no message carried changes");
    assert_eq!(held.version, end.version);
    assert_eq!(held.event, end.event);
    assert_eq!(held.standings, end.standings);
    assert_eq!(held.pairings, end.pairings);
    let ended = end.event.unwrap();
    assert_eq!(ended.status, EventStatus::Finished as i32);
    assert_eq!(ended.champion, seeds[2].id.to_string());
    assert_eq!(end.pairings.len(), 1);
    assert_eq!(end.pairings[0].result, PairingResult::Won as i32);
    // Finished: asked again, the whole bracket.
    let done = state(&app, &seeds[3], &event).await;
    assert_eq!(rows(&done.earlier_pairings), round1);
    assert_eq!(rows(&done.pairings), &whole[2..]);

    let standings = events_client(&app)
        .get_standings(authed(
            GetStandingsRequest {
                event_id: event.clone(),
            },
            &seeds[1].token,
        ))
        .await
        .unwrap()
        .into_inner();
    assert!(standings.r#final);
    let ranks: Vec<(String, u32)> = standings
        .standings
        .iter()
        .map(|s| (s.user_id.clone(), s.rank))
        .collect();
    assert_eq!(ranks[0], (seeds[2].id.to_string(), 1));
    assert_eq!(ranks[1], (seeds[0].id.to_string(), 2));
    assert!(ranks[2..].iter().all(|(_, r)| *r == 3));

    // Every result once; no room made twice; nobody paired twice in a round.
    let results = app.events().store.results(&event).await.unwrap();
    let mut keys: Vec<&str> = results.iter().map(|r| r.match_key.as_str()).collect();
    keys.sort_unstable();
    assert_eq!(keys, ["r1t1", "r1t2", "r2t1"]);
    let forfeit = results.iter().find(|r| r.match_key == "r1t2").unwrap();
    assert_eq!(forfeit.outcome, "forfeit");
    assert_eq!(
        forfeit.winner.as_deref(),
        Some(seeds[2].id.to_string().as_str())
    );
    let mut rooms: Vec<String> = app
        .game()
        .created()
        .into_iter()
        .map(|r| r.room_id)
        .collect();
    rooms.sort();
    rooms.dedup();
    assert_eq!(rooms.len(), 3);

    // History: the champion's rank.
    let mine = events_client(&app)
        .list_my_events(authed(ListMyEventsRequest::default(), &seeds[2].token))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(mine.events[0].rank, 1);
    (app, event, whole)
}

/// `n` new players registered for `event`, seeded in order (ratings 1900, 1800, …).
async fn seeded(app: &TestApp, n: usize, event: &str) -> Vec<Player> {
    let seeds: Vec<Player> = (0..n).map(|_| app.player()).collect();
    for (i, p) in seeds.iter().enumerate() {
        app.ratings().set(p.id, 1900.0 - 100.0 * i as f64);
        register(app, p, event).await;
    }
    seeds
}

async fn register(app: &TestApp, p: &Player, event: &str) {
    events_client(app)
        .register(authed(
            RegisterRequest {
                event_id: event.into(),
            },
            &p.token,
        ))
        .await
        .expect("registered");
}

/// The "starts soon" notices sent, by player.
fn starting(notices: &RecordedNotices) -> HashMap<String, usize> {
    let mut told = HashMap::new();
    for (user, _, notice) in notices.sent.lock().unwrap().iter() {
        if matches!(notice, Notice::Starting { .. }) {
            *told.entry(user.clone()).or_default() += 1;
        }
    }
    told
}

/// "The event starts soon": the registered players are told by the clock when check-in
/// opens, once each; a player who registers after that is told at once by Register.
#[tokio::test]
async fn players_are_told_once_that_the_event_starts_soon() {
    let notices = Arc::new(RecordedNotices::default());
    let events = EventDeps {
        notices: notices.clone(),
        ..EventDeps::memory()
    };
    let app = TestApp::builder()
        .memory()
        .events(events)
        .settings(|s| s.events.tick_millis = 20)
        .spawn()
        .await;
    let mut definition = knockout(8);
    definition.start_at = Some(timestamp(CLOCK_START + 7_200_000));
    definition.registration_opens_seconds_before = 86_400;
    definition.check_in_seconds = 3600;
    let event = Operator::of(&app)
        .create(definition)
        .await
        .unwrap()
        .event_id;
    let early: Vec<Player> = (0..2).map(|_| app.player()).collect();
    for p in &early {
        register(&app, p, &event).await;
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(
        starting(&notices).is_empty(),
        "nobody is told before check-in opens"
    );
    app.clock().advance(3_600_000);
    until("the clock tells the registered", || {
        starting(&notices).len() == 2
    })
    .await;
    let late = app.player();
    register(&app, &late, &event).await;
    assert_eq!(
        starting(&notices).get(&late.id.to_string()),
        Some(&1),
        "told by Register itself"
    );
    // More ticks tell nobody again.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let told = starting(&notices);
    assert_eq!(told.len(), 3, "{told:?}");
    assert!(told.values().all(|n| *n == 1), "{told:?}");
}

/// "Two games at once" (issue 47): a player whose event match is made, joined or not, is
/// refused a quick or ranked search and a room of their own exactly as a player seated
/// in an unfinished room is (FAILED_PRECONDITION, `SEATED_IN_UNFINISHED_MATCH` with the
/// event's room, the message naming the event), and GetCurrentSeat answers that room to
/// go back to. A player without a match now (a bye) searches; so does one whose match
/// has ended, and the next round's match holds its players again.
#[tokio::test]
async fn a_player_in_an_event_match_may_not_search_or_make_a_room() {
    let app = TestApp::builder()
        .memory()
        .events(EventDeps::memory())
        .settings(|s| s.events.tick_millis = 20)
        .spawn()
        .await;
    let event = Operator::of(&app)
        .create(knockout(8))
        .await
        .unwrap()
        .event_id;
    // Three players: seed 1 has a bye, seeds 2 and 3 meet in round 1.
    let seeds = seeded(&app, 3, &event).await;
    app.clock().advance(60_000);
    ready(&app, &seeds[1], &event).await;
    let (room, seat) = my_match(&app, &seeds[1], &event).await.unwrap();
    assert_eq!(seat, 0, "the better seed first");
    let held = |err: tonic::Status, room: &str| {
        assert_refused(
            &err,
            Code::FailedPrecondition,
            Some("SEATED_IN_UNFINISHED_MATCH"),
        );
        assert_eq!(
            basra_platform::error::error_metadata_of(&err, "room_id").as_deref(),
            Some(room),
            "{err:?}"
        );
        assert!(
            err.message().contains(&format!("event {event}")),
            "the message names the event: {err:?}"
        );
    };
    // Neither has joined the room yet: both are held by it.
    for p in &seeds[1..] {
        held(p.search(find("quick", false)).await.unwrap_err(), &room);
        held(p.search(find("ranked", true)).await.unwrap_err(), &room);
        held(
            p.create_room(CreateRoomRequest::default())
                .await
                .unwrap_err(),
            &room,
        );
        let seat = p
            .client()
            .get_current_seat(p.request(GetCurrentSeatRequest::default()))
            .await
            .expect("the event match is where the player sits")
            .into_inner();
        assert_eq!((seat.room_id.as_str(), seat.started), (room.as_str(), true));
    }
    // The seed, on a bye, has no match now.
    let mut bye = seeds[0].find_queued("bye", false).await;
    seeds[0].cancel("bye").await.unwrap();
    while bye.message().await.unwrap().is_some() {}

    // Seed 2 wins: seed 3 is free at once; seed 2 and the seed are held by the final.
    app.game().finish_won(&room, 0);
    let mut free = seeds[2].find_queued("after", false).await;
    seeds[2].cancel("after").await.unwrap();
    while free.message().await.unwrap().is_some() {}
    until("the final's room", || room_of(&app, "r2t1").is_some()).await;
    let fin = room_of(&app, "r2t1").unwrap();
    ready(&app, &seeds[0], &event).await;
    for p in [&seeds[0], &seeds[1]] {
        held(p.search(find("final", false)).await.unwrap_err(), &fin);
    }
}
