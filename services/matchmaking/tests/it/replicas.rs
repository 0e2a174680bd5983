//! Two replicas, one Redis, 1,000 players: every ticket is matched exactly
//! once or is still queued, and every pair respects the rating window at
//! the time it formed.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::Duration,
};

use basra_proto::basra::matchmaking::v1::{FindMatchRequest, find_match_response::Update};
use basra_testkit::{authed, matchmaking::TestApp};
use matchmaking::store::{QueueStore, TicketState};
use rand::{Rng, SeedableRng, rngs::StdRng};
use uuid::Uuid;

const PLAYERS: usize = 1000;
/// Streams per HTTP/2 connection (servers allow a few hundred each).
const STREAMS_PER_CONNECTION: usize = 100;

#[derive(Debug, Clone)]
struct Seen {
    room_id: String,
    seat: u32,
    phase: usize,
    updates_after_match: usize,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_tickets_across_two_replicas() {
    let app = TestApp::builder()
        .settings(|settings| {
            settings.queue.heartbeat_millis = 250;
            settings.queue.ticket_ttl_seconds = 3600; // the test jumps the clock
            settings.queue.resume_grace_seconds = 3600; // results outlive the test
            settings.queue.max_groups_per_round = 16; // so both replicas take part
        })
        .spawn()
        .await;
    let window = app.settings().queue.window();
    let replicas = [app.first_replica(), app.spawn_replica().await];

    let mut rng = StdRng::seed_from_u64(20_261_001);
    let players: Vec<(Uuid, f64)> = (0..PLAYERS)
        .map(|_| {
            let rating = (rng.random_range(1000.0..2000.0f64) * 100.0).round() / 100.0;
            (Uuid::now_v7(), rating)
        })
        .collect();
    for (user, rating) in &players {
        app.ratings().set(*user, *rating);
    }
    let rating_of: HashMap<String, f64> =
        players.iter().map(|(u, r)| (u.to_string(), *r)).collect();

    let phase = Arc::new(Mutex::new(0usize));
    let started = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let resumes = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let seen: Arc<Mutex<HashMap<String, Seen>>> = Arc::default();
    let mut clients = Vec::new();
    for replica in &replicas {
        for _ in 0..PLAYERS / 2 / STREAMS_PER_CONNECTION {
            clients.push(replica.client().await);
        }
    }
    let mut tasks = Vec::new();
    for (i, (user, _)) in players.iter().enumerate() {
        let mut client = clients[i % clients.len()].clone();
        let token = app.token(*user, false);
        let (seen, phase, started, resumes) = (
            seen.clone(),
            phase.clone(),
            started.clone(),
            resumes.clone(),
        );
        let user = user.to_string();
        tasks.push(tokio::spawn(async move {
            let request = FindMatchRequest {
                ticket_id: format!("t-{user}"),
                ranked: true,
                preset: None,
                allow_bots: Some(false),
            };
            let mut first = true;
            // As the API asks: on UNAVAILABLE, search again with the same
            // ticket (the place in the queue is kept).
            'search: loop {
                let mut stream = match client.find_match(authed(request.clone(), &token)).await {
                    Ok(response) => response.into_inner(),
                    Err(status) if status.code() == tonic::Code::Unavailable => {
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                    Err(status) => panic!("{user}: FindMatch: {status:?}"),
                };
                // The search is in once FindMatch answers. (Not "once an
                // update arrives": a resumed ticket whose group is waiting
                // for its room gets none until the room is made, which may
                // need the clock to move.)
                if first {
                    first = false;
                    started.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                }
                loop {
                    let message = match stream.message().await {
                        Ok(Some(message)) => message,
                        Ok(None) => break 'search,
                        Err(status) if status.code() == tonic::Code::Unavailable => {
                            resumes.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                            continue 'search;
                        }
                        Err(status) => panic!("{user}: stream: {status:?}"),
                    };
                    if let Some(Update::Matched(m)) = message.update {
                        let p = *phase.lock().unwrap();
                        let mut seen = seen.lock().unwrap();
                        if let Some(previous) = seen.get_mut(&user) {
                            // A resume may repeat the same match; another
                            // room would be a double match.
                            if previous.room_id != m.room_id {
                                previous.updates_after_match += 1;
                            }
                        } else {
                            seen.insert(
                                user.clone(),
                                Seen {
                                    room_id: m.room_id,
                                    seat: m.seat,
                                    phase: p,
                                    updates_after_match: 0,
                                },
                            );
                        }
                    }
                }
            }
        }));
    }

    // Phases of controlled time: everyone queued at T0; then the clock jumps
    // and the replicas settle (no new match for a while) before the next.
    // Then, while some group still waits for its room (game-session did not
    // confirm it in time, as happens on a loaded machine), the clock moves
    // on by the retry wait so that the group is tried again.
    let t0 = app.now_ms();
    let retry = app.settings().queue.room_retry_millis as i64;
    let mut offsets = vec![0i64, 2_000, 5_000, 10_000, 20_000, 40_000];
    let planned = offsets.len();
    let mut matched_at_phase = Vec::new();
    // A bound on the whole run, so that a stuck search fails the test with
    // what it saw instead of hanging CI (a quiet run takes well under a
    // minute; a heavily loaded machine a few).
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15 * 60);
    let check_deadline = |what: &str| {
        assert!(
            tokio::time::Instant::now() < deadline,
            "15 minutes passed waiting for {what}: {} searches in, {} players matched",
            started.load(std::sync::atomic::Ordering::SeqCst),
            seen.lock().unwrap().len(),
        );
    };
    for p in 0.. {
        if p >= planned {
            let now = t0 + offsets[p - 1];
            let waiting = pending_tickets(&*replicas[0].store, &players, now).await;
            if waiting == 0 {
                break;
            }
            assert!(p < planned + 10, "{waiting} tickets still wait for a room");
            offsets.push(offsets[p - 1] + retry);
        }
        let offset = offsets[p];
        *phase.lock().unwrap() = p;
        app.clock().set(t0 + offset);
        // Every search is in before time moves (opening 1,000 streams takes
        // a while in a debug build: each token is verified).
        while started.load(std::sync::atomic::Ordering::SeqCst) < PLAYERS {
            check_deadline("every search to be in");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let mut last = usize::MAX;
        let mut stable_since = tokio::time::Instant::now();
        loop {
            check_deadline("the replicas to settle");
            tokio::time::sleep(Duration::from_millis(100)).await;
            let n = seen.lock().unwrap().len();
            if n != last {
                last = n;
                stable_since = tokio::time::Instant::now();
            } else if stable_since.elapsed() > Duration::from_millis(1_500) {
                break;
            }
        }
        matched_at_phase.push(last);
    }
    let seen = seen.lock().unwrap().clone();

    // Rooms from game-session's point of view: each user in at most one.
    let created = app.game().created();
    let mut room_of_user: HashMap<String, String> = HashMap::new();
    let mut rooms: HashMap<String, Vec<String>> = HashMap::new();
    for room in &created {
        let users: Vec<String> = room
            .seats
            .iter()
            .filter_map(|s| match &s.occupant {
                Some(basra_proto::basra::game::v1::seat_assignment::Occupant::UserId(u)) => {
                    Some(u.clone())
                }
                _ => None,
            })
            .collect();
        assert_eq!(users.len(), 2, "a full 2-seat room of players");
        if let Some(existing) = rooms.insert(room.room_id.clone(), users.clone()) {
            assert_eq!(existing, users, "a retried CreateRoom has the same seats");
            continue;
        }
        for u in users {
            if let Some(other) = room_of_user.insert(u.clone(), room.room_id.clone()) {
                panic!("{u} was put in two rooms: {other} and {}", room.room_id);
            }
        }
    }

    // Every matched player saw exactly one `matched`, for the room game-session
    // made with them, and every pair respects the window of its phase.
    for (user, s) in &seen {
        assert_eq!(s.updates_after_match, 0, "{user} was matched twice");
        assert_eq!(room_of_user.get(user), Some(&s.room_id));
    }
    for (room, users) in &rooms {
        let (a, b) = (&seen[&users[0]], &seen[&users[1]]);
        assert_eq!(a.room_id, *room);
        assert_ne!(a.seat, b.seat);
        let formed_by = offsets[a.phase.max(b.phase)];
        let diff = (rating_of[&users[0]] - rating_of[&users[1]]).abs();
        let allowed = window.width(formed_by);
        assert!(
            diff <= allowed + 1e-9,
            "room {room}: ratings {diff} apart, window {allowed} at +{formed_by} ms"
        );
    }
    // Everyone else is still queued, nobody lost.
    let store = &replicas[0].store;
    let mut queued = 0;
    for (user, _) in &players {
        let user = user.to_string();
        let view = store
            .poll(
                &format!("t-{user}"),
                t0 + offsets[offsets.len() - 1],
                3_600_000,
            )
            .await
            .unwrap()
            .expect("no ticket is lost");
        match view.state {
            TicketState::Matched(_) => assert!(seen.contains_key(&user)),
            TicketState::Queued => {
                assert!(!seen.contains_key(&user));
                queued += 1;
            }
            other => panic!("{user}: {other:?}"),
        }
    }
    assert_eq!(seen.len() + queued, PLAYERS);
    assert_eq!(seen.len(), rooms.len() * 2);
    let per_replica: Vec<u64> = replicas.iter().map(|r| r.metrics.matches()).collect();
    assert_eq!(per_replica.iter().sum::<u64>() as usize, rooms.len());
    assert!(
        per_replica.iter().all(|n| *n > 0),
        "both replicas formed groups: {per_replica:?}"
    );
    eprintln!(
        "matched {} of {PLAYERS} (cumulative per phase {matched_at_phase:?}), {queued} still queued, rooms per replica {per_replica:?}, resumes after UNAVAILABLE {}",
        seen.len(),
        resumes.load(std::sync::atomic::Ordering::SeqCst)
    );
    assert!(seen.len() >= PLAYERS * 9 / 10, "most players are matched");
    for task in tasks {
        task.abort();
    }
}

/// Tickets in a group still waiting for its room (polled as their streams
/// do, at `now`).
async fn pending_tickets(store: &dyn QueueStore, players: &[(Uuid, f64)], now: i64) -> usize {
    let mut n = 0;
    for (user, _) in players {
        let view = store
            .poll(&format!("t-{user}"), now, 3_600_000)
            .await
            .unwrap();
        if view.is_some_and(|v| v.state == TicketState::Pending) {
            n += 1;
        }
    }
    n
}
