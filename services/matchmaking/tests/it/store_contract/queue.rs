//! The queue's contract ([`QueueStore`]): positions and resumes, pairing within the
//! rating window, blocks, groups and their leases, commits, cancels, supersedes across
//! formats, expiry and bots.

use std::sync::Arc;

use basra_testkit::matchmaking::{GRACE, RANKED2, RANKED4, T0, TTL, UNRANKED2};
use matchmaking::{
    clock::Millis,
    domain::{Format, PairingParams, WindowParams},
    store::{
        CancelCause, CancelOutcome, CommitOutcome, Enqueued, Group, MatchRecord, NewTicket,
        Occupant, QueueStore, TicketState,
    },
};

fn params() -> PairingParams {
    PairingParams {
        window: WindowParams {
            start: 50.0,
            growth_per_second: 10.0,
            max: 300.0,
        },
        bot_after_ms: 20_000,
        lease_ms: 10_000,
        max_groups: 100,
        scan_limit: 1000,
        candidates: 16,
        min_round_interval_ms: 0,
    }
}

fn rooms(n: usize) -> Vec<String> {
    (0..n)
        .map(|i| format!("room-{i}-{}", uuid::Uuid::now_v7()))
        .collect()
}

fn ticket(id: &str, user: &str, format: Format, rating: f64) -> NewTicket {
    NewTicket {
        id: id.into(),
        user_id: user.into(),
        guest: false,
        format,
        rating,
        allow_bots: false,
        blocks: Vec::new(),
    }
}

/// Ticket `id` of account `u-ID` queued in `format` at `now`.
async fn put(
    store: &dyn QueueStore,
    id: &str,
    format: Format,
    rating: f64,
    now: Millis,
) -> Enqueued {
    store
        .enqueue(
            ticket(id, &format!("u-{id}"), format, rating),
            now,
            TTL,
            GRACE,
        )
        .await
        .unwrap()
}

fn record(group: &Group, seat: usize) -> MatchRecord {
    MatchRecord {
        room_id: group.room_id.clone(),
        seat: seat as u32,
        ranked: group.format.ranked,
        settings: group.format.settings(),
        seats: group
            .members
            .iter()
            .map(|m| Occupant::Player {
                user_id: m.user_id.clone(),
                guest: m.guest,
                rating: Some(m.rating),
            })
            .collect(),
    }
}
/// Ticket `id` of account `me` queued in `format` at `now`.
async fn mine(s: &dyn QueueStore, id: &str, format: Format, rating: f64, now: Millis) -> Enqueued {
    s.enqueue(ticket(id, "me", format, rating), now, TTL, GRACE)
        .await
        .unwrap()
}

/// Ticket `id`'s state, polled at `now` (panics if it is gone).
async fn state(s: &dyn QueueStore, id: &str, now: Millis) -> TicketState {
    s.poll(id, now, TTL).await.unwrap().unwrap().state
}

/// CancelFind of `user`'s ticket `id` at `now`.
async fn cancel(s: &dyn QueueStore, user: &str, id: &str, now: Millis) -> CancelOutcome {
    s.cancel(user, id, CancelCause::ByClient, now, GRACE)
        .await
        .unwrap()
}

/// One pairing round at `now` with `room_count` fresh room ids: the groups it formed.
async fn round(s: &dyn QueueStore, now: Millis, room_count: usize) -> Vec<Group> {
    s.form_groups(now, &params(), &rooms(room_count))
        .await
        .unwrap()
}

/// One pairing round at `now` that must form a group: that group.
async fn form_one(s: &dyn QueueStore, now: Millis) -> Group {
    round(s, now, 1).await.remove(0)
}

/// Tickets `a` and `b` (accounts `u-a`, `u-b`) queued unranked at T0 and formed into
/// a group.
async fn unranked_pair(s: &dyn QueueStore) -> Group {
    put(s, "a", UNRANKED2, 0.0, T0).await;
    put(s, "b", UNRANKED2, 0.0, T0).await;
    form_one(s, T0).await
}

/// A new search `t` at `now` is refused (its account's ticket is in a formed group)
/// and leaves nothing behind.
async fn refused_in_group(s: &dyn QueueStore, t: NewTicket, now: Millis) {
    let id = t.id.clone();
    let err = s.enqueue(t, now, TTL, GRACE).await.unwrap_err();
    assert!(
        matches!(
            err,
            matchmaking::error::MatchmakingError::FailedPrecondition(_)
        ),
        "{err:?}"
    );
    assert!(s.poll(&id, now, TTL).await.unwrap().is_none());
}

/// Commits `g` (its room was made) at `now`.
async fn commit(s: &dyn QueueStore, g: &Group, now: Millis) -> CommitOutcome {
    s.commit(&g.room_id, g.format, &records(g), now, GRACE)
        .await
        .unwrap()
}

/// The room ticket `id` is matched into, polled at `now` (panics unless it is matched).
async fn matched_room(s: &dyn QueueStore, id: &str, now: Millis) -> String {
    let v = s.poll(id, now, TTL).await.unwrap().unwrap();
    let TicketState::Matched(m) = v.state else {
        panic!("{v:?}")
    };
    m.room_id
}

fn records(group: &Group) -> Vec<(String, MatchRecord)> {
    group
        .members
        .iter()
        .enumerate()
        .map(|(i, m)| (m.ticket_id.clone(), record(group, i)))
        .collect()
}

fn ids(group: &Group) -> Vec<&str> {
    group.members.iter().map(|m| m.ticket_id.as_str()).collect()
}

pub(super) async fn queue_positions_and_resume(store: Arc<dyn QueueStore>) {
    let s = &*store;
    put(s, "a", RANKED2, 1000.0, T0).await;
    put(s, "b", RANKED2, 2000.0, T0 + 1).await;
    let v = s.poll("b", T0 + 2, TTL).await.unwrap().unwrap();
    assert_eq!((v.position, v.waiting), (2, 2));
    assert_eq!(v.state, TicketState::Queued);
    assert_eq!(v.enqueued_ms, T0 + 1);
    // Another account cannot take the id.
    let err = s
        .enqueue(ticket("b", "intruder", RANKED2, 1.0), T0, TTL, GRACE)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("another account"), "{err}");
    // A dropped stream leaves the pool; a resume comes back at its place.
    s.detach("a", T0 + 3, GRACE).await.unwrap();
    let v = s.poll("b", T0 + 3, TTL).await.unwrap().unwrap();
    assert_eq!((v.position, v.waiting), (1, 1));
    let e = put(s, "a", RANKED2, 1234.0, T0 + 4).await;
    assert!(e.resumed);
    assert_eq!(e.view.enqueued_ms, T0, "the original queue time is kept");
    assert_eq!(e.view.rating, 1000.0);
    assert_eq!((e.view.position, e.view.waiting), (1, 2));
    let lengths = s.queue_lengths().await.unwrap();
    assert_eq!(lengths, vec![(RANKED2, 2)]);
}

pub(super) async fn pairs_within_the_window_and_widens_with_time(store: Arc<dyn QueueStore>) {
    let s = &*store;
    put(s, "a", RANKED2, 1500.0, T0).await;
    put(s, "b", RANKED2, 1580.0, T0).await;
    put(s, "c", RANKED2, 1530.0, T0).await;
    // Window 50: a-c (30) pair, b (50 from c, but c is taken) waits.
    let groups = round(s, T0, 10).await;
    assert_eq!(groups.len(), 1);
    assert_eq!(ids(&groups[0]), vec!["a", "c"]);
    assert_eq!(groups[0].formed_ms, T0);
    assert_eq!(state(s, "a", T0).await, TicketState::Pending);
    // d at 1700: 120 from b. Window at t: 50 + 10/s; b waited since T0, d
    // since T0+1s: both must accept, so d's window decides.
    put(s, "d", RANKED2, 1700.0, T0 + 1_000).await;
    assert!(round(s, T0 + 5_000, 10).await.is_empty());
    // d waited 7 s: 120 → still no (50+70=120 is enough: <=).
    let groups = round(s, T0 + 7_999, 10).await;
    assert!(groups.is_empty(), "119.99 is not 120");
    let groups = round(s, T0 + 8_000, 10).await;
    assert_eq!(groups.len(), 1);
    let mut got = ids(&groups[0]);
    got.sort();
    assert_eq!(got, vec!["b", "d"]);
}

/// `put`, for an account that blocks `blocks` (account ids `u-ID`).
async fn put_blocking(
    s: &dyn QueueStore,
    id: &str,
    format: Format,
    rating: f64,
    now: Millis,
    blocks: &[&str],
) {
    let t = NewTicket {
        blocks: blocks.iter().map(|b| format!("u-{b}")).collect(),
        ..ticket(id, &format!("u-{id}"), format, rating)
    };
    s.enqueue(t, now, TTL, GRACE).await.unwrap();
}

pub(super) async fn players_who_block_each_other_are_never_grouped(store: Arc<dyn QueueStore>) {
    let s = &*store;
    // Ranked: a blocks b, the nearest rating; a pairs with c instead, and b waits
    // for d (whom nobody blocks), even though b is the older ticket.
    put_blocking(s, "a", RANKED2, 1500.0, T0, &["b"]).await;
    put_blocking(s, "b", RANKED2, 1505.0, T0 + 1, &[]).await;
    put_blocking(s, "c", RANKED2, 1520.0, T0 + 2, &[]).await;
    let groups = round(s, T0 + 10, 10).await;
    assert_eq!(groups.len(), 1);
    assert_eq!(ids(&groups[0]), vec!["a", "c"]);
    // The block works both ways: e blocks nobody, but f (the only other) blocks e.
    put_blocking(s, "e", UNRANKED2, 0.0, T0, &[]).await;
    put_blocking(s, "f", UNRANKED2, 0.0, T0 + 1, &["e"]).await;
    put_blocking(s, "g", UNRANKED2, 0.0, T0 + 2, &[]).await;
    let groups = round(s, T0 + 20, 10).await;
    assert_eq!(groups.len(), 1, "{groups:?}");
    assert_eq!(
        ids(&groups[0]),
        vec!["e", "g"],
        "unranked looks past the blocked"
    );
    // f is left alone: nobody else waits in its format.
    assert_eq!(state(s, "f", T0 + 20).await, TicketState::Queued);
    // Four seats: h blocks k; of h, i, j, k, l the group is h, i, j, l.
    const UNRANKED4: Format = Format {
        ranked: false,
        seats: 4,
        target_score: 101,
    };
    for (i, id) in ["h", "i", "j", "k", "l"].iter().enumerate() {
        let blocks: &[&str] = if *id == "h" { &["k"] } else { &[] };
        put_blocking(s, id, UNRANKED4, 0.0, T0 + i as i64, blocks).await;
    }
    let groups = round(s, T0 + 30, 10).await;
    let four = groups.iter().find(|g| g.format == UNRANKED4).unwrap();
    assert_eq!(ids(four), vec!["h", "i", "j", "l"]);
}

/// A group given up (its room could not be made) ends its members' searches with the
/// reason; only the current lease holder may give it up.
pub(super) async fn a_group_given_up_ends_its_searches(store: Arc<dyn QueueStore>) {
    let s = &*store;
    put(s, "x", UNRANKED2, 0.0, T0).await;
    put(s, "y", UNRANKED2, 0.0, T0 + 1).await;
    let groups = round(s, T0 + 10, 4).await;
    let g = &groups[0];
    assert!(
        !s.abandon(&g.room_id, g.format, g.lease + 1, T0 + 20, GRACE)
            .await
            .unwrap(),
        "not the current lease"
    );
    assert!(
        s.abandon(&g.room_id, g.format, g.lease, T0 + 20, GRACE)
            .await
            .unwrap()
    );
    for id in ["x", "y"] {
        let v = s.poll(id, T0 + 20, TTL).await.unwrap().unwrap();
        assert_eq!(
            v.state,
            TicketState::Cancelled(CancelCause::RoomUnavailable)
        );
    }
    // The group is gone: nothing to reclaim, to commit or to give up again.
    assert!(
        s.reclaim(T0 + 100_000, 10_000, 10)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(
        !s.abandon(&g.room_id, g.format, g.lease, T0 + 30, GRACE)
            .await
            .unwrap()
    );
    assert_eq!(
        s.commit(&g.room_id, g.format, &records(g), T0 + 30, GRACE)
            .await
            .unwrap(),
        CommitOutcome::Gone
    );
    // A resume of the same ticket hears the same end.
    let e = put(s, "x", UNRANKED2, 0.0, T0 + 40).await;
    assert_eq!(
        e.view.state,
        TicketState::Cancelled(CancelCause::RoomUnavailable)
    );
}

pub(super) async fn unranked_is_first_come_first_served_and_four_seats_group(
    store: Arc<dyn QueueStore>,
) {
    let s = &*store;
    put(s, "u1", UNRANKED2, 0.0, T0).await;
    put(s, "u2", UNRANKED2, 0.0, T0 + 1).await;
    put(s, "u3", UNRANKED2, 0.0, T0 + 2).await;
    for (i, r) in [1500.0, 1510.0, 1900.0, 1520.0, 1530.0].iter().enumerate() {
        put(s, &format!("f{i}"), RANKED4, *r, T0 + i as i64).await;
    }
    let groups = round(s, T0 + 10, 10).await;
    assert_eq!(groups.len(), 2);
    let four = groups.iter().find(|g| g.format == RANKED4).unwrap();
    let mut got = ids(four);
    got.sort();
    assert_eq!(got, vec!["f0", "f1", "f3", "f4"]);
    let two = groups.iter().find(|g| g.format == UNRANKED2).unwrap();
    assert_eq!(ids(two), vec!["u1", "u2"]);
    let v = s.poll("u3", T0 + 10, TTL).await.unwrap().unwrap();
    assert_eq!((v.position, v.waiting), (1, 1));
}

pub(super) async fn commit_matches_and_cancel_answers_where_to_play(store: Arc<dyn QueueStore>) {
    let s = &*store;
    let mut events = s.subscribe();
    let g = unranked_pair(s).await;
    assert_eq!(commit(s, &g, T0).await, CommitOutcome::Committed);
    // A second commit (another replica) finds nothing to do.
    assert_eq!(commit(s, &g, T0).await, CommitOutcome::Gone);
    let v = s.poll("a", T0, TTL).await.unwrap().unwrap();
    assert_eq!(v.state, TicketState::Matched(record(&g, 0)));
    match s
        .cancel("u-b", "b", CancelCause::ByClient, T0, GRACE)
        .await
        .unwrap()
    {
        CancelOutcome::AlreadyMatched(r) => assert_eq!(r, record(&g, 1)),
        other => panic!("{other:?}"),
    }
    assert_eq!(cancel(s, "u-a", "nope", T0).await, CancelOutcome::NotFound);
    assert_eq!(cancel(s, "someone", "a", T0).await, CancelOutcome::NotFound);
    // Both tickets were announced.
    let mut seen = Vec::new();
    while seen.len() < 2 {
        let id = tokio::time::timeout(std::time::Duration::from_secs(2), events.recv())
            .await
            .expect("an event")
            .unwrap();
        if !seen.contains(&id) {
            seen.push(id);
        }
    }
    seen.sort();
    assert_eq!(seen, vec!["a", "b"]);
    // A resume of a matched ticket gets the match.
    let e = put(s, "a", UNRANKED2, 0.0, T0 + 5).await;
    assert!(matches!(e.view.state, TicketState::Matched(_)));
}

pub(super) async fn cancel_is_idempotent(store: Arc<dyn QueueStore>) {
    let s = &*store;
    put(s, "a", UNRANKED2, 0.0, T0).await;
    assert_eq!(cancel(s, "u-a", "a", T0).await, CancelOutcome::Cancelled);
    assert_eq!(cancel(s, "u-a", "a", T0).await, CancelOutcome::Cancelled);
    assert_eq!(
        state(s, "a", T0).await,
        TicketState::Cancelled(CancelCause::ByClient)
    );
    assert!(s.queue_lengths().await.unwrap().is_empty());
}

/// A group is final: a member that cancels, drops its stream or starts a new
/// search while its room is being made (or retried after a lost reply) stays
/// in the group; nobody goes back to the queue and all get the one room.
pub(super) async fn a_group_member_cannot_leave_its_group(store: Arc<dyn QueueStore>) {
    let s = &*store;
    put(s, "b", UNRANKED2, 0.0, T0 + 1).await;
    put(s, "c", UNRANKED2, 0.0, T0 + 2).await;
    let g = form_one(s, T0 + 3).await;
    // c cancels while the room is being made: refused, nothing moves.
    assert_eq!(cancel(s, "u-c", "c", T0 + 4).await, CancelOutcome::InGroup);
    // A new search of c's account is refused too.
    refused_in_group(s, ticket("c2", "u-c", UNRANKED2, 0.0), T0 + 4).await;
    // The reply is lost: the group waits for its retry; c cancels again and
    // its stream drops; b's too.
    assert!(
        s.defer(&g.room_id, g.format, g.lease, T0 + 2_000)
            .await
            .unwrap()
    );
    assert_eq!(cancel(s, "u-c", "c", T0 + 5).await, CancelOutcome::InGroup);
    s.detach("c", T0 + 5, GRACE).await.unwrap();
    for id in ["b", "c"] {
        let v = s.poll(id, T0 + 6, TTL).await.unwrap().unwrap();
        assert_eq!(v.state, TicketState::Pending, "{id}");
    }
    assert!(s.queue_lengths().await.unwrap().is_empty());
    // Expiry leaves the group alone as well.
    s.expire(T0 + 1_000 + GRACE, 100).await.unwrap();
    let again = s.reclaim(T0 + 2_000, 10_000, 10).await.unwrap();
    assert_eq!(again.len(), 1);
    assert_eq!(again[0].room_id, g.room_id);
    assert_eq!(commit(s, &g, T0 + 2_001).await, CommitOutcome::Committed);
    for id in ["b", "c"] {
        assert_eq!(matched_room(s, id, T0 + 2_002).await, g.room_id);
    }
    // Now CancelFind answers where to play.
    let CancelOutcome::AlreadyMatched(m) = s
        .cancel("u-c", "c", CancelCause::ByClient, T0 + 2_003, GRACE)
        .await
        .unwrap()
    else {
        panic!("matched")
    };
    assert_eq!(m.room_id, g.room_id);
}

pub(super) async fn release_keeps_tickets_for_a_resume(store: Arc<dyn QueueStore>) {
    let s = &*store;
    let g = unranked_pair(s).await;
    assert!(
        s.release(&g.room_id, g.format, g.lease, T0 + 1, GRACE)
            .await
            .unwrap()
    );
    let v = s.poll("a", T0 + 1, TTL).await.unwrap().unwrap();
    assert_eq!(v.state, TicketState::Queued);
    assert!(v.unavailable && !v.attached);
    // Not in the pool until resumed.
    assert!(round(s, T0 + 2, 1).await.is_empty());
    for id in ["a", "b"] {
        let e = put(s, id, UNRANKED2, 0.0, T0 + 3).await;
        assert!(e.resumed && e.view.attached && !e.view.unavailable);
        assert_eq!(e.view.enqueued_ms, T0);
    }
    assert_eq!(round(s, T0 + 4, 1).await.len(), 1);
}

pub(super) async fn stale_groups_are_reclaimed(store: Arc<dyn QueueStore>) {
    let s = &*store;
    let g = unranked_pair(s).await;
    assert_eq!(g.lease, 1);
    assert!(s.reclaim(T0 + 9_999, 10_000, 10).await.unwrap().is_empty());
    let again = s.reclaim(T0 + 10_000, 10_000, 10).await.unwrap();
    assert_eq!(
        again,
        vec![Group {
            lease: 2,
            ..g.clone()
        }]
    );
    // Re-leased: not handed out twice.
    assert!(s.reclaim(T0 + 10_001, 10_000, 10).await.unwrap().is_empty());
    assert_eq!(commit(s, &g, T0 + 10_002).await, CommitOutcome::Committed);
}

/// game-session did not confirm the room (unreachable, or its answer lost):
/// the group keeps its room id, its members wait out of the pool, and the
/// group is handed out again when the retry is due.
pub(super) async fn an_unconfirmed_room_keeps_its_group(store: Arc<dyn QueueStore>) {
    let s = &*store;
    let g = unranked_pair(s).await;
    assert!(
        s.defer(&g.room_id, g.format, g.lease, T0 + 2_000)
            .await
            .unwrap()
    );
    for id in ["a", "b"] {
        let v = s.poll(id, T0 + 1, TTL).await.unwrap().unwrap();
        assert_eq!(v.state, TicketState::Pending);
        assert!(v.unavailable && !v.attached);
    }
    // A resume waits for that room: back on its stream, still in the group,
    // never in the pool (a newcomer finds nobody to pair with).
    let e = put(s, "a", UNRANKED2, 0.0, T0 + 2).await;
    assert!(e.resumed && e.view.attached && !e.view.unavailable);
    assert_eq!(e.view.state, TicketState::Pending);
    put(s, "c", UNRANKED2, 0.0, T0 + 3).await;
    assert!(round(s, T0 + 4, 1).await.is_empty());
    // Not before the retry is due; then the same group, the same room.
    assert!(s.reclaim(T0 + 1_999, 10_000, 10).await.unwrap().is_empty());
    let again = s.reclaim(T0 + 2_000, 10_000, 10).await.unwrap();
    assert_eq!(
        again,
        vec![Group {
            lease: 2,
            ..g.clone()
        }]
    );
    assert_eq!(commit(s, &g, T0 + 2_001).await, CommitOutcome::Committed);
    assert_eq!(matched_room(s, "b", T0 + 2_002).await, g.room_id);
}

/// Replica X forms a group and hangs in CreateRoom past its lease; replica Y
/// takes the group over. X (whose call may yet have made the room) can no
/// longer release or defer the group; whichever of them learns that the room
/// exists commits it, and the players get that one room.
pub(super) async fn a_taken_over_lease_cannot_requeue_the_group(
    x: Arc<dyn QueueStore>,
    y: Arc<dyn QueueStore>,
) {
    put(&*x, "a", RANKED2, 1500.0, T0).await;
    put(&*y, "b", RANKED2, 1510.0, T0).await;
    let gx = form_one(&*x, T0).await;
    let gy = y.reclaim(T0 + 10_000, 10_000, 10).await.unwrap().remove(0);
    assert_eq!((gx.lease, gy.lease), (1, 2));
    assert_eq!(gy.room_id, gx.room_id);
    // X's call timed out: too late to requeue or to set the retry.
    assert!(
        !x.release(&gx.room_id, gx.format, gx.lease, T0 + 10_001, GRACE)
            .await
            .unwrap()
    );
    assert!(
        !x.defer(&gx.room_id, gx.format, gx.lease, T0 + 10_001)
            .await
            .unwrap()
    );
    let v = y.poll("a", T0 + 10_001, TTL).await.unwrap().unwrap();
    assert_eq!(v.state, TicketState::Pending);
    assert!(!v.unavailable);
    // Y's call times out too: it holds the lease, so the group waits.
    assert!(
        y.defer(&gy.room_id, gy.format, gy.lease, T0 + 12_000)
            .await
            .unwrap()
    );
    // X's call did make the room after all: its commit stands.
    assert_eq!(
        commit(&*x, &gx, T0 + 10_002).await,
        CommitOutcome::Committed
    );
    for id in ["a", "b"] {
        assert_eq!(matched_room(&*y, id, T0 + 10_003).await, gx.room_id);
    }
    assert!(y.reclaim(T0 + 12_000, 10_000, 10).await.unwrap().is_empty());
    assert!(
        !y.release(&gy.room_id, gy.format, gy.lease, T0 + 12_001, GRACE)
            .await
            .unwrap()
    );
}

pub(super) async fn tickets_expire(store: Arc<dyn QueueStore>) {
    let s = &*store;
    put(s, "alive", UNRANKED2, 0.0, T0).await;
    put(s, "dead", RANKED2, 1500.0, T0).await;
    put(s, "gone", RANKED2, 3000.0, T0).await;
    s.detach("gone", T0, GRACE).await.unwrap();
    // Only "alive" keeps its heartbeat.
    s.poll("alive", T0 + 10_000, TTL).await.unwrap();
    assert_eq!(s.expire(T0 + TTL - 1, 100).await.unwrap(), 0);
    assert_eq!(s.expire(T0 + TTL, 100).await.unwrap(), 1);
    assert!(s.poll("dead", T0 + TTL, TTL).await.unwrap().is_none());
    assert!(s.poll("gone", T0 + TTL, TTL).await.unwrap().is_some());
    // The detached one after its grace, and "alive" whose heartbeat stopped
    // at T0 + 10 s (deadline T0 + 25 s).
    assert_eq!(s.expire(T0 + GRACE, 100).await.unwrap(), 2);
    assert!(s.poll("gone", T0 + GRACE, TTL).await.unwrap().is_none());
    assert!(s.poll("alive", T0 + GRACE, TTL).await.unwrap().is_none());
}

pub(super) async fn a_new_search_supersedes_the_old_one(store: Arc<dyn QueueStore>) {
    let s = &*store;
    mine(s, "one", RANKED2, 1500.0, T0).await;
    mine(s, "two", UNRANKED2, 0.0, T0).await;
    assert_eq!(
        state(s, "one", T0).await,
        TicketState::Cancelled(CancelCause::Superseded)
    );
    assert_eq!(s.queue_lengths().await.unwrap(), vec![(UNRANKED2, 1)]);
}

/// A player has one live search, whatever the formats: a new search in another
/// format cancels the old one (which then never pairs), and the next one
/// cancels that in turn. These are the cases a per-format queue layout must
/// keep across its slots.
pub(super) async fn a_new_search_supersedes_across_formats(store: Arc<dyn QueueStore>) {
    let s = &*store;
    mine(s, "one", RANKED2, 1500.0, T0).await;
    mine(s, "two", RANKED4, 1500.0, T0 + 1).await;
    assert_eq!(
        state(s, "one", T0 + 1).await,
        TicketState::Cancelled(CancelCause::Superseded)
    );
    assert_eq!(s.queued_ticket("me").await.unwrap().as_deref(), Some("two"));
    assert_eq!(s.queue_lengths().await.unwrap(), vec![(RANKED4, 1)]);
    // Someone in the old format finds nobody: the superseded ticket left it.
    put(s, "other", RANKED2, 1500.0, T0 + 2).await;
    assert!(round(s, T0 + 3, 5).await.is_empty());
    // Back to the first format with a third ticket: the second one goes.
    mine(s, "three", RANKED2, 1500.0, T0 + 4).await;
    assert_eq!(
        state(s, "two", T0 + 4).await,
        TicketState::Cancelled(CancelCause::Superseded)
    );
    assert_eq!(
        s.queued_ticket("me").await.unwrap().as_deref(),
        Some("three")
    );
    assert_eq!(s.queue_lengths().await.unwrap(), vec![(RANKED2, 2)]);
    let groups = round(s, T0 + 5, 5).await;
    assert_eq!(groups.len(), 1);
    let mut got = ids(&groups[0]);
    got.sort();
    assert_eq!(got, vec!["other", "three"]);
}

/// Cancel and resume across formats: cancelling or resuming a superseded
/// ticket neither brings it back nor touches the live search in the other
/// format; a resume keeps its ticket's own format whatever the request says.
pub(super) async fn cancel_and_resume_across_formats(store: Arc<dyn QueueStore>) {
    let s = &*store;
    mine(s, "one", RANKED2, 1500.0, T0).await;
    mine(s, "two", UNRANKED2, 0.0, T0 + 1).await;
    // The old ticket: cancel answers cancelled, a resume sees it cancelled.
    assert_eq!(
        cancel(s, "me", "one", T0 + 2).await,
        CancelOutcome::Cancelled
    );
    let e = mine(s, "one", RANKED2, 1500.0, T0 + 3).await;
    assert!(e.resumed);
    assert_eq!(
        e.view.state,
        TicketState::Cancelled(CancelCause::Superseded)
    );
    let v = s.poll("two", T0 + 3, TTL).await.unwrap().unwrap();
    assert_eq!(v.state, TicketState::Queued);
    assert_eq!(s.queued_ticket("me").await.unwrap().as_deref(), Some("two"));
    assert_eq!(s.queue_lengths().await.unwrap(), vec![(UNRANKED2, 1)]);
    // The live one drops its stream and resumes, naming another format: it
    // comes back in its own format at its old queue time.
    s.detach("two", T0 + 4, GRACE).await.unwrap();
    assert!(
        s.queue_lengths()
            .await
            .unwrap()
            .iter()
            .all(|(_, n)| *n == 0)
    );
    let e = mine(s, "two", RANKED4, 1800.0, T0 + 5).await;
    assert!(e.resumed && e.view.attached);
    assert_eq!(e.view.format, UNRANKED2);
    assert_eq!(e.view.enqueued_ms, T0 + 1);
    assert_eq!(s.queue_lengths().await.unwrap(), vec![(UNRANKED2, 1)]);
    // Cancelled by its owner only; then the account has no search.
    assert_eq!(
        cancel(s, "you", "two", T0 + 6).await,
        CancelOutcome::NotFound
    );
    assert_eq!(
        cancel(s, "me", "two", T0 + 6).await,
        CancelOutcome::Cancelled
    );
    assert_eq!(s.queued_ticket("me").await.unwrap(), None);
    assert!(
        s.queue_lengths()
            .await
            .unwrap()
            .iter()
            .all(|(_, n)| *n == 0)
    );
}

/// A search whose old ticket sits in a formed group of another format is
/// refused, and the group is unharmed.
pub(super) async fn a_group_in_one_format_blocks_a_search_in_another(store: Arc<dyn QueueStore>) {
    let s = &*store;
    mine(s, "one", UNRANKED2, 0.0, T0).await;
    put(s, "mate", UNRANKED2, 0.0, T0).await;
    let g = form_one(s, T0 + 1).await;
    refused_in_group(s, ticket("two", "me", RANKED4, 1500.0), T0 + 2).await;
    assert!(
        s.queue_lengths()
            .await
            .unwrap()
            .iter()
            .all(|(_, n)| *n == 0)
    );
    assert_eq!(s.queued_ticket("me").await.unwrap().as_deref(), Some("one"));
    assert_eq!(commit(s, &g, T0 + 3).await, CommitOutcome::Committed);
    assert!(matches!(
        state(s, "one", T0 + 3).await,
        TicketState::Matched(_)
    ));
}

/// Formats pair independently: one round forms groups in each format from
/// that format's tickets only, and a released group goes back to its own
/// format.
pub(super) async fn two_formats_pair_independently(store: Arc<dyn QueueStore>) {
    let s = &*store;
    put(s, "r1", RANKED2, 1500.0, T0).await;
    put(s, "r2", RANKED2, 1510.0, T0 + 1).await;
    for (i, id) in ["f1", "f2", "f3", "f4"].into_iter().enumerate() {
        put(s, id, RANKED4, 1500.0 + i as f64, T0 + 2).await;
    }
    // Alone in its format: pairs with nobody from the others.
    put(s, "u1", UNRANKED2, 0.0, T0 + 3).await;
    let mut lengths = s.queue_lengths().await.unwrap();
    lengths.sort_by_key(|(f, _)| f.key());
    assert_eq!(lengths, vec![(RANKED2, 2), (RANKED4, 4), (UNRANKED2, 1)]);
    let mut groups = round(s, T0 + 4, 5).await;
    groups.sort_by_key(|g| g.format.key());
    assert_eq!(groups.len(), 2, "{groups:?}");
    assert_eq!(groups[0].format, RANKED2);
    let mut got = ids(&groups[0]);
    got.sort();
    assert_eq!(got, vec!["r1", "r2"]);
    assert_eq!(groups[1].format, RANKED4);
    let mut got = ids(&groups[1]);
    got.sort();
    assert_eq!(got, vec!["f1", "f2", "f3", "f4"]);
    let left: Vec<_> = s
        .queue_lengths()
        .await
        .unwrap()
        .into_iter()
        .filter(|(_, n)| *n > 0)
        .collect();
    assert_eq!(left, vec![(UNRANKED2, 1)]);
    // The ranked 2-seat group is released: back to its format, not the others.
    assert!(
        s.release(
            &groups[0].room_id,
            groups[0].format,
            groups[0].lease,
            T0 + 5,
            GRACE
        )
        .await
        .unwrap()
    );
    for id in ["r1", "r2"] {
        let e = put(s, id, UNRANKED2, 0.0, T0 + 6).await;
        assert!(e.resumed);
        assert_eq!(e.view.format, RANKED2);
    }
    assert_eq!(
        s.commit(
            &groups[1].room_id,
            groups[1].format,
            &records(&groups[1]),
            T0 + 7,
            GRACE
        )
        .await
        .unwrap(),
        CommitOutcome::Committed
    );
    let mut lengths: Vec<_> = s
        .queue_lengths()
        .await
        .unwrap()
        .into_iter()
        .filter(|(_, n)| *n > 0)
        .collect();
    lengths.sort_by_key(|(f, _)| f.key());
    assert_eq!(lengths, vec![(RANKED2, 2), (UNRANKED2, 1)]);
}

pub(super) async fn bots_fill_after_the_wait(store: Arc<dyn QueueStore>) {
    let s = &*store;
    let mut t = ticket("lonely", "u", RANKED2, 1500.0);
    t.allow_bots = true;
    s.enqueue(t, T0, TTL, GRACE).await.unwrap();
    put(s, "far", RANKED2, 2500.0, T0).await;
    assert!(round(s, T0 + 19_999, 5).await.is_empty());
    let groups = round(s, T0 + 20_000, 5).await;
    assert_eq!(groups.len(), 1);
    assert_eq!(ids(&groups[0]), vec!["lonely"]);
    assert_eq!(groups[0].bots(), 1);
}
