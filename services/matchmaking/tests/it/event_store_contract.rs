//! The event stores' contracts: [`EventStore`] (definitions, entries, results) on memory
//! and on PostgreSQL (a fresh database per test), and [`LiveStore`] (leases and the live
//! state) on memory, Redis and a Redis Cluster, by
//! [`store_contract!`](basra_testkit::store_contract).

use std::sync::Arc;

use basra_testkit::matchmaking::{cluster_prefix, test_prefix};
use matchmaking::events::live::{LiveStore, MemoryLiveStore, RedisLiveStore};
use matchmaking::events::model::{EntryStatus, EventRecord, Phase, Refusal, ResultRecord};
use matchmaking::events::spec::{EventSpec, Format};
use matchmaking::events::store::{EventStore, MemoryEventStore, PgEventStore, PhaseChange};
use tokio::task::JoinSet;

basra_testkit::store_contract! {
    stores {
        memory => Arc::new(MemoryEventStore::new()) as Arc<dyn EventStore>,
        #[sqlx::test(migrations = "./migrations")]
        postgres(pool: sqlx::PgPool) => Arc::new(PgEventStore::new(pool)) as Arc<dyn EventStore>,
    }
    cases {
        registration_rules_hold_and_refusals_change_nothing,
        the_cap_holds_under_concurrent_registrations,
        withdrawals_and_check_in,
        phases_change_once_and_results_are_recorded_once,
        requests_are_idempotent_and_listings_page,
        the_starting_notice_is_due_once,
        finished_entries_keep_their_status_and_place,
        cancelling_a_series_cancels_its_occurrences_not_started,
        an_occurrence_is_not_made_after_its_series_was_cancelled,
        the_version_is_read_alone,
    }
}

mod live {
    use super::*;

    basra_testkit::store_contract! {
        stores {
            memory => Arc::new(MemoryLiveStore::new()) as Arc<dyn LiveStore>,
            redis => |run| {
                let prefix = test_prefix();
                let store = RedisLiveStore::connect(&prefix.url(), prefix.as_str()).await.expect("Redis");
                run(Arc::new(store) as Arc<dyn LiveStore>).await;
            },
            redis_cluster => |run| {
                let prefix = cluster_prefix();
                let store = RedisLiveStore::connect(&prefix.url(), prefix.as_str()).await.expect("Redis Cluster");
                run(Arc::new(store) as Arc<dyn LiveStore>).await;
            },
        }
        cases {
            one_holder_at_a_time_and_a_lapsed_lease_is_taken_over,
            saves_are_fenced_by_the_lease_and_the_version,
            the_state_version_is_read_alone,
        }
    }

    async fn the_state_version_is_read_alone(live: Arc<dyn LiveStore>) {
        let event = uuid::Uuid::now_v7().to_string();
        assert_eq!(live.version(&event).await.unwrap(), None, "nothing saved");
        assert!(live.acquire(&event, "a", 0, 10_000).await.unwrap());
        assert!(live.save(&event, "a", 0, "one").await.unwrap());
        assert_eq!(live.version(&event).await.unwrap(), Some(1));
        assert!(live.save(&event, "a", 1, "two").await.unwrap());
        assert!(!live.save(&event, "a", 1, "stale").await.unwrap());
        assert_eq!(live.version(&event).await.unwrap(), Some(2));
        assert_eq!(
            live.version(&event).await.unwrap(),
            live.load(&event).await.unwrap().map(|s| s.version)
        );
    }

    async fn one_holder_at_a_time_and_a_lapsed_lease_is_taken_over(live: Arc<dyn LiveStore>) {
        let event = uuid::Uuid::now_v7().to_string();
        assert!(live.acquire(&event, "a", 0, 300).await.unwrap());
        assert!(
            !live.acquire(&event, "b", 0, 300).await.unwrap(),
            "a holds it"
        );
        assert!(
            live.acquire(&event, "a", 100, 300).await.unwrap(),
            "a renews"
        );
        // a dies: its lease lapses (Redis by its own clock, memory by the one given).
        tokio::time::sleep(std::time::Duration::from_millis(400)).await;
        assert!(
            live.acquire(&event, "b", 1000, 300).await.unwrap(),
            "b takes over"
        );
        assert!(!live.acquire(&event, "a", 1000, 300).await.unwrap());
        live.release(&event, "a").await.unwrap();
        assert!(
            !live.acquire(&event, "a", 1000, 300).await.unwrap(),
            "a cannot free b's"
        );
        live.release(&event, "b").await.unwrap();
        assert!(
            live.acquire(&event, "a", 1000, 300).await.unwrap(),
            "released"
        );
    }

    async fn saves_are_fenced_by_the_lease_and_the_version(live: Arc<dyn LiveStore>) {
        let event = uuid::Uuid::now_v7().to_string();
        assert_eq!(live.load(&event).await.unwrap(), None);
        assert!(!live.save(&event, "a", 0, "x").await.unwrap(), "no lease");
        assert!(live.acquire(&event, "a", 0, 10_000).await.unwrap());
        assert!(live.save(&event, "a", 0, "one").await.unwrap());
        assert!(
            !live.save(&event, "a", 0, "stale").await.unwrap(),
            "version 0 is gone"
        );
        assert!(live.save(&event, "a", 1, "two").await.unwrap());
        let stored = live.load(&event).await.unwrap().unwrap();
        assert_eq!((stored.version, stored.json.as_str()), (2, "two"));
        assert!(
            !live.save(&event, "b", 2, "theirs").await.unwrap(),
            "b holds no lease"
        );
        assert_eq!(live.load(&event).await.unwrap().unwrap().json, "two");
    }
}

const T0: i64 = 1_800_000_000_000;

fn spec(cap: u32, band: Option<(i32, i32)>, check_in_seconds: u32) -> EventSpec {
    EventSpec {
        name: "test".into(),
        format: Format::Knockout,
        recurrence: None,
        registration_opens_seconds_before: 3600,
        cap,
        rating_band: band,
        check_in_seconds,
        join_deadline_seconds: 60,
        settings: Default::default(),
        rated: false,
        allow_spectators: true,
    }
}

fn event(spec: EventSpec) -> EventRecord {
    EventRecord {
        id: uuid::Uuid::now_v7().to_string(),
        series_id: None,
        request_id: None,
        spec,
        starts_at_ms: T0 + 60_000,
        phase: Phase::Upcoming,
        cancel_reason: String::new(),
        champion: None,
        current_round: 0,
        rounds_total: 0,
        ended_at_ms: 0,
        version: 0,
        registered: 0,
        starting_told: false,
    }
}

fn user() -> String {
    uuid::Uuid::now_v7().to_string()
}

async fn registration_rules_hold_and_refusals_change_nothing(store: Arc<dyn EventStore>) {
    let e = store
        .create(event(spec(2, Some((1000, 1600)), 0)))
        .await
        .unwrap();
    let (a, b, c) = (user(), user(), user());
    let entry = store.register(&e.id, &a, 1500, T0).await.unwrap().unwrap();
    assert_eq!(entry.status, EntryStatus::CheckedIn);
    let before = store.get(&e.id).await.unwrap().unwrap();
    assert_eq!(
        store.register(&e.id, &a, 1500, T0).await.unwrap(),
        Err(Refusal::AlreadyRegistered)
    );
    assert_eq!(
        store.register(&e.id, &b, 1700, T0).await.unwrap(),
        Err(Refusal::RatingBand)
    );
    assert_eq!(
        store
            .register(&e.id, &b, 1500, T0 - 3_600_001)
            .await
            .unwrap(),
        Err(Refusal::RegistrationNotOpen)
    );
    assert_eq!(
        store.register(&e.id, &b, 1500, T0 + 60_000).await.unwrap(),
        Err(Refusal::Started)
    );
    assert_eq!(
        store.get(&e.id).await.unwrap().unwrap(),
        before,
        "refusals change nothing"
    );
    store.register(&e.id, &b, 1000, T0).await.unwrap().unwrap();
    assert_eq!(
        store.register(&e.id, &c, 1600, T0).await.unwrap(),
        Err(Refusal::Full)
    );
    assert_eq!(store.entries(&e.id).await.unwrap().len(), 2);
    store
        .cancel(&e.id, "why", T0, false)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        store.register(&e.id, &c, 1500, T0).await.unwrap(),
        Err(Refusal::Cancelled)
    );
    let after = store.get(&e.id).await.unwrap().unwrap();
    assert_eq!((after.phase, after.registered), (Phase::Cancelled, 2));
}

async fn the_cap_holds_under_concurrent_registrations(store: Arc<dyn EventStore>) {
    let e = store.create(event(spec(5, None, 0))).await.unwrap();
    let mut tasks = JoinSet::new();
    for _ in 0..20 {
        let (store, id) = (store.clone(), e.id.clone());
        tasks.spawn(async move { store.register(&id, &user(), 1500, T0).await.unwrap() });
    }
    let mut admitted = 0;
    while let Some(done) = tasks.join_next().await {
        match done.unwrap() {
            Ok(_) => admitted += 1,
            Err(refusal) => assert_eq!(refusal, Refusal::Full),
        }
    }
    assert_eq!(admitted, 5);
    assert_eq!(store.get(&e.id).await.unwrap().unwrap().registered, 5);
    assert_eq!(store.entries(&e.id).await.unwrap().len(), 5);
}

async fn withdrawals_and_check_in(store: Arc<dyn EventStore>) {
    let e = store.create(event(spec(8, None, 20))).await.unwrap();
    let (a, b) = (user(), user());
    assert_eq!(
        store
            .register(&e.id, &a, 1500, T0)
            .await
            .unwrap()
            .unwrap()
            .status,
        EntryStatus::Registered
    );
    store.register(&e.id, &b, 1500, T0).await.unwrap().unwrap();
    assert_eq!(
        store.check_in(&e.id, &a, T0).await.unwrap(),
        Err(Refusal::CheckInClosed),
        "the window opens 20 s before the start"
    );
    let checked = store
        .check_in(&e.id, &a, T0 + 40_000)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(checked.status, EntryStatus::CheckedIn);
    assert_eq!(
        store.check_in(&e.id, &user(), T0 + 40_000).await.unwrap(),
        Err(Refusal::NotRegistered)
    );
    // Before the start a withdrawal removes the entry.
    assert_eq!(store.withdraw(&e.id, &b).await.unwrap(), Ok(None));
    assert_eq!(store.entry(&e.id, &b).await.unwrap(), None);
    assert_eq!(store.get(&e.id).await.unwrap().unwrap().registered, 1);
    assert_eq!(
        store.withdraw(&e.id, &b).await.unwrap(),
        Err(Refusal::NotRegistered)
    );
    // Once running, it marks the entry.
    let running = PhaseChange {
        from: Phase::Upcoming,
        to: Phase::Running,
        current_round: 1,
        rounds_total: 1,
        champion: None,
        cancel_reason: String::new(),
        ended_at_ms: 0,
    };
    assert!(store.change_phase(&e.id, &running).await.unwrap());
    let gone = store.withdraw(&e.id, &a).await.unwrap().unwrap().unwrap();
    assert_eq!(gone.status, EntryStatus::Withdrawn);
    assert_eq!(
        store.check_in(&e.id, &a, T0 + 50_000).await.unwrap(),
        Err(Refusal::Started)
    );
    let mine = store.entries_of(&a, 0, 10).await.unwrap();
    assert_eq!(mine.0.len(), 1);
}

async fn phases_change_once_and_results_are_recorded_once(store: Arc<dyn EventStore>) {
    let e = store.create(event(spec(8, None, 0))).await.unwrap();
    assert_eq!(
        store.due(T0, 0).await.unwrap().len(),
        0,
        "not due before its start"
    );
    assert_eq!(store.due(T0 + 60_000, 0).await.unwrap().len(), 1);
    let start = PhaseChange {
        from: Phase::Upcoming,
        to: Phase::Running,
        current_round: 1,
        rounds_total: 2,
        champion: None,
        cancel_reason: String::new(),
        ended_at_ms: 0,
    };
    assert!(store.change_phase(&e.id, &start).await.unwrap());
    assert!(
        !store.change_phase(&e.id, &start).await.unwrap(),
        "a start happens once"
    );
    let result = ResultRecord {
        event_id: e.id.clone(),
        match_key: "r1t1".into(),
        room_id: "ev-r1t1".into(),
        players: [user(), user()],
        winner: None,
        outcome: "both_absent".into(),
        recorded_at_ms: T0,
        match_id: String::new(),
    };
    assert!(store.record_result(&result).await.unwrap());
    let mut again = result.clone();
    again.outcome = "won".into();
    again.match_id = "m-late".into();
    assert!(
        !store.record_result(&again).await.unwrap(),
        "one result a match"
    );
    // A match played to its end keeps the id of the match played (its replay).
    let played = ResultRecord {
        match_key: "r1t2".into(),
        room_id: "ev-r1t2".into(),
        winner: Some(result.players[0].clone()),
        outcome: "won".into(),
        match_id: "0190aaaa-0000-7000-8000-00000000000a".into(),
        ..result.clone()
    };
    assert!(store.record_result(&played).await.unwrap());
    let results = store.results(&e.id).await.unwrap();
    assert_eq!(results, vec![result, played]);
    let end = PhaseChange {
        from: Phase::Running,
        to: Phase::Finished,
        current_round: 2,
        rounds_total: 2,
        champion: Some("x".into()),
        cancel_reason: String::new(),
        ended_at_ms: T0 + 1,
    };
    assert!(store.change_phase(&e.id, &end).await.unwrap());
    assert_eq!(
        store.cancel(&e.id, "late", T0, false).await.unwrap(),
        Err(Refusal::Finished)
    );
    assert!(
        store
            .due(T0 + 1_000_000, 86_400_000)
            .await
            .unwrap()
            .is_empty()
    );
    let done = store.get(&e.id).await.unwrap().unwrap();
    assert_eq!(
        (done.phase, done.champion.as_deref()),
        (Phase::Finished, Some("x"))
    );
}

async fn the_starting_notice_is_due_once(store: Arc<dyn EventStore>) {
    let e = store.create(event(spec(8, None, 0))).await.unwrap();
    assert!(!e.starting_told);
    assert!(
        store.due(T0, 59_999).await.unwrap().is_empty(),
        "its start is beyond the horizon"
    );
    let due = store.due(T0, 60_000).await.unwrap();
    assert_eq!(due.len(), 1, "within the horizon, not told yet");
    assert!(store.mark_starting_told(&e.id).await.unwrap());
    assert!(!store.mark_starting_told(&e.id).await.unwrap(), "told once");
    assert!(store.get(&e.id).await.unwrap().unwrap().starting_told);
    assert!(
        store.due(T0, 60_000).await.unwrap().is_empty(),
        "told: nothing to do before its start"
    );
    assert_eq!(
        store.due(T0 + 60_000, 60_000).await.unwrap().len(),
        1,
        "its start is still due"
    );
    let other = store.create(event(spec(8, None, 0))).await.unwrap();
    store
        .cancel(&other.id, "no", T0, false)
        .await
        .unwrap()
        .unwrap();
    assert!(
        !store.mark_starting_told(&other.id).await.unwrap(),
        "no longer upcoming"
    );
}

async fn finished_entries_keep_their_status_and_place(store: Arc<dyn EventStore>) {
    let e = store.create(event(spec(8, None, 0))).await.unwrap();
    let a = user();
    let mut entry = store.register(&e.id, &a, 1500, T0).await.unwrap().unwrap();
    entry.status = EntryStatus::Finished;
    entry.rank = 1;
    entry.points = 3;
    store
        .update_entries(std::slice::from_ref(&entry))
        .await
        .unwrap();
    assert_eq!(store.entry(&e.id, &a).await.unwrap(), Some(entry));
    // Many at once (an event's start sets them all, in one statement on PostgreSQL):
    // each as given, the entries not given unchanged.
    let (b, c) = (user(), user());
    let mut b_entry = store.register(&e.id, &b, 1400, T0).await.unwrap().unwrap();
    let c_entry = store.register(&e.id, &c, 1300, T0).await.unwrap().unwrap();
    let mut a_entry = store.entry(&e.id, &a).await.unwrap().unwrap();
    a_entry.status = EntryStatus::Eliminated;
    a_entry.rank = 2;
    b_entry.status = EntryStatus::Playing;
    b_entry.points = 7;
    store
        .update_entries(&[a_entry.clone(), b_entry.clone()])
        .await
        .unwrap();
    assert_eq!(store.entry(&e.id, &a).await.unwrap(), Some(a_entry));
    assert_eq!(store.entry(&e.id, &b).await.unwrap(), Some(b_entry));
    assert_eq!(store.entry(&e.id, &c).await.unwrap(), Some(c_entry));
}

/// A series' occurrence starting at `start`, made when the one before it starts.
fn occurrence(series: &str, start: i64) -> EventRecord {
    EventRecord {
        series_id: Some(series.to_owned()),
        request_id: Some(format!("series-{series}-{start}")),
        starts_at_ms: start,
        ..event(spec(8, None, 0))
    }
}

/// A series' first occurrence, started, and its next one made.
async fn running_series(store: &Arc<dyn EventStore>) -> (EventRecord, EventRecord) {
    let mut first = event(spec(8, None, 0));
    first.series_id = Some(first.id.clone());
    let first = store.create(first).await.unwrap();
    let next = store
        .create_occurrence(&first.id, occurrence(&first.id, T0 + 86_400_000))
        .await
        .unwrap()
        .expect("made while the first is upcoming");
    let start = PhaseChange {
        from: Phase::Upcoming,
        to: Phase::Running,
        current_round: 1,
        rounds_total: 1,
        champion: None,
        cancel_reason: String::new(),
        ended_at_ms: 0,
    };
    assert!(store.change_phase(&first.id, &start).await.unwrap());
    (first, next)
}

async fn cancelling_a_series_cancels_its_occurrences_not_started(store: Arc<dyn EventStore>) {
    // A running occurrence alone: the series goes on.
    let (first, next) = running_series(&store).await;
    let alone = store
        .cancel(&first.id, "rain", T0, false)
        .await
        .unwrap()
        .unwrap();
    assert!(alone.now);
    assert_eq!(alone.event.phase, Phase::Cancelled);
    assert!(alone.series.is_empty());
    assert_eq!(
        store.get(&next.id).await.unwrap().unwrap().phase,
        Phase::Upcoming
    );
    // The series, from the cancelled occurrence: the next one goes with it, once.
    let ended = store
        .cancel(&first.id, "over", T0 + 1, true)
        .await
        .unwrap()
        .unwrap();
    assert!(!ended.now, "cancelled already");
    assert_eq!(ended.series.len(), 1);
    assert_eq!(ended.series[0].id, next.id);
    assert_eq!(
        (
            ended.series[0].phase,
            ended.series[0].cancel_reason.as_str()
        ),
        (Phase::Cancelled, "over")
    );
    let again = store
        .cancel(&first.id, "over", T0 + 2, true)
        .await
        .unwrap()
        .unwrap();
    assert!(again.series.is_empty(), "nothing left to cancel");

    // A finished occurrence: refused alone, ends its series with `series`.
    let (first, next) = running_series(&store).await;
    let end = PhaseChange {
        from: Phase::Running,
        to: Phase::Finished,
        current_round: 1,
        rounds_total: 1,
        champion: None,
        cancel_reason: String::new(),
        ended_at_ms: T0,
    };
    assert!(store.change_phase(&first.id, &end).await.unwrap());
    assert_eq!(
        store.cancel(&first.id, "x", T0, false).await.unwrap(),
        Err(Refusal::Finished)
    );
    let ended = store
        .cancel(&first.id, "x", T0, true)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(ended.event.phase, Phase::Finished, "it stays finished");
    assert_eq!(
        ended.series.iter().map(|e| &e.id).collect::<Vec<_>>(),
        [&next.id]
    );

    // An occurrence not started: cancelling it ends the series, one made already too.
    let (first, next) = running_series(&store).await;
    let later = store
        .create_occurrence(&next.id, occurrence(&first.id, T0 + 2 * 86_400_000))
        .await
        .unwrap()
        .expect("made while the next is upcoming");
    let ended = store
        .cancel(&next.id, "x", T0, false)
        .await
        .unwrap()
        .unwrap();
    assert!(ended.now);
    assert_eq!(
        ended.series.iter().map(|e| &e.id).collect::<Vec<_>>(),
        [&later.id]
    );
    assert_eq!(
        store.get(&first.id).await.unwrap().unwrap().phase,
        Phase::Running
    );
    // A one-off finished event with `series`: still refused.
    let one_off = store.create(event(spec(8, None, 0))).await.unwrap();
    let ended = PhaseChange {
        from: Phase::Upcoming,
        ..end
    };
    assert!(store.change_phase(&one_off.id, &ended).await.unwrap());
    assert_eq!(
        store.cancel(&one_off.id, "x", T0, true).await.unwrap(),
        Err(Refusal::Finished)
    );
}

async fn an_occurrence_is_not_made_after_its_series_was_cancelled(store: Arc<dyn EventStore>) {
    let (first, next) = running_series(&store).await;
    store
        .cancel(&next.id, "x", T0, false)
        .await
        .unwrap()
        .unwrap();
    // The next occurrence's start, seen by a clock that read it before the cancellation.
    let made = store
        .create_occurrence(&next.id, occurrence(&first.id, T0 + 2 * 86_400_000))
        .await
        .unwrap();
    assert_eq!(made, None, "the series was cancelled");
    let (events, _) = store.list(&[Phase::Upcoming], true, 0, 100).await.unwrap();
    assert!(
        events
            .iter()
            .all(|e| e.series_id.as_deref() != Some(first.id.as_str()))
    );
    // Made twice (a driver retried after a takeover): the first one is answered.
    let (first, next) = running_series(&store).await;
    let again = store
        .create_occurrence(&first.id, occurrence(&first.id, T0 + 86_400_000))
        .await
        .unwrap();
    assert_eq!(again, None, "the first has started: nothing made");
    let retried = store
        .create_occurrence(&next.id, occurrence(&first.id, T0 + 2 * 86_400_000))
        .await
        .unwrap()
        .unwrap();
    let same = store
        .create_occurrence(&next.id, occurrence(&first.id, T0 + 2 * 86_400_000))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(same.id, retried.id);
}

async fn requests_are_idempotent_and_listings_page(store: Arc<dyn EventStore>) {
    let mut first = event(spec(8, None, 0));
    first.request_id = Some(format!("op-{}", user()));
    let made = store.create(first.clone()).await.unwrap();
    let mut retry = first.clone();
    retry.id = user();
    assert_eq!(
        store.create(retry).await.unwrap().id,
        made.id,
        "the same event"
    );
    for i in 1..=4 {
        let mut e = event(spec(8, None, 0));
        e.starts_at_ms += i * 1000;
        store.create(e).await.unwrap();
    }
    let (page, next) = store.list(&[Phase::Upcoming], true, 0, 3).await.unwrap();
    assert_eq!(page.len(), 3);
    assert_eq!(page[0].id, made.id, "soonest first");
    let (rest, end) = store
        .list(&[Phase::Upcoming], true, next.unwrap(), 3)
        .await
        .unwrap();
    assert_eq!((rest.len(), end), (2, None));
    let (newest, _) = store.list(&[Phase::Upcoming], false, 0, 1).await.unwrap();
    assert!(newest[0].starts_at_ms > made.starts_at_ms);
}

/// An event's version alone is its record's, rising with each change.
async fn the_version_is_read_alone(store: Arc<dyn EventStore>) {
    assert_eq!(store.version("no-such-event").await.unwrap(), None);
    let e = store.create(event(spec(8, None, 0))).await.unwrap();
    let before = store.version(&e.id).await.unwrap().expect("a version");
    assert_eq!(before, e.version);
    store
        .register(&e.id, &user(), 1500, T0)
        .await
        .unwrap()
        .unwrap();
    let after = store.version(&e.id).await.unwrap().expect("a version");
    assert!(after > before, "a registration changes it");
    assert_eq!(after, store.get(&e.id).await.unwrap().unwrap().version);
}
