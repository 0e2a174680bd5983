//! One contract suite for every `RoomStore`, run by testkit's `store_contract!` on the
//! in-memory store, Redis and the Redis Cluster (`memory::CASE`, `redis::CASE`,
//! `redis_cluster::CASE`; real Redis at a unique prefix: a Redis run fails when Redis is
//! unreachable), and on a cluster store that waits for a replica.

use std::sync::Arc;

use basra_engine::Seed;
use basra_testkit::game_session as kit;
use game_session::room::{Occupant, Room};
use game_session::store::{
    ALL_SHARDS, Commit, CommitOutcome, ExpiredLease, LeasedSeat, MemoryStore, OutboxRecord,
    RoomHead, RoomStore, SHARDS, WalkLease, move_key, shard_of,
};

/// Every shard but `shard`.
fn all_but(shard: u32) -> Vec<u32> {
    ALL_SHARDS.iter().copied().filter(|s| *s != shard).collect()
}

fn room(id: &str, now: i64) -> Room {
    let mut room = Room::new(
        id.into(),
        basra_engine::Settings::default(),
        vec![
            Occupant::Player {
                user_id: "a".into(),
                name: "Ana".into(),
            },
            Occupant::Player {
                user_id: "b".into(),
                name: String::new(),
            },
        ],
        false,
        false,
        game_session::room::Visibility::Private,
        kit::test_timing(),
        now,
    );
    room.start_if_full(Seed([1; 32]), "m1".into(), now);
    room
}

/// Rooms, events, moves, deadlines, the outbox, the action log and the presence leases,
/// in the order one room goes through them.
async fn keeps_the_contract(store: Arc<dyn RoomStore>) {
    let mut notices = store.notices();
    let id = uuid::Uuid::now_v7().to_string();
    let now = 1_000;
    assert!(store.load(&id).await.unwrap().is_none());
    assert!(!store.events_after(&id, 0).await.unwrap().exists);

    // Create: version 0 → 1, the opening events at seqs 1..
    let mut r = room(&id, now);
    let events = r.take_pending();
    assert!(!events.is_empty());
    let create = Commit {
        room: &r,
        expected_version: 0,
        events: &events,
        actions: &Default::default(),
        applied_move: None,
        outbox: None,
        plain_play: false,
    };
    assert_eq!(
        store.commit(create).await.unwrap(),
        CommitOutcome::Committed { version: 1 }
    );
    let again = Commit {
        room: &r,
        expected_version: 0,
        events: &events,
        actions: &Default::default(),
        applied_move: None,
        outbox: None,
        plain_play: false,
    };
    assert_eq!(
        store.commit(again).await.unwrap(),
        CommitOutcome::Conflict,
        "create twice conflicts"
    );
    let notice = notices.recv().await.unwrap();
    assert_eq!((&*notice.room_id, notice.seq), (id.as_str(), r.seq));

    let loaded = store.load(&id).await.unwrap().unwrap();
    assert_eq!(loaded.version, 1);
    assert_eq!(loaded.room.seq, events.len() as u64);
    let after = store.events_after(&id, 0).await.unwrap();
    assert_eq!(after.events, events);
    assert!(after.exists && !after.closed);
    assert_eq!(
        store.events_after(&id, 2).await.unwrap().events,
        events[2..].to_vec()
    );
    assert_eq!(store.list_rooms(0, 10).await.unwrap(), vec![id.clone()]);
    let heads = store
        .room_heads(&[Arc::from(id.as_str()), Arc::from("no-such-room")])
        .await
        .unwrap();
    assert_eq!(
        heads,
        vec![
            Some(RoomHead {
                seq: r.seq,
                closed: false
            }),
            None
        ]
    );

    // A play with a move key: stored once; the key answers later attempts.
    let mut played = loaded.room.clone();
    let first_seq = played.seq + 1;
    let card = played.game.as_ref().unwrap().legal_plays()[0].card;
    played
        .play(0, card, None, false, "x".into(), now + 1)
        .unwrap();
    let play_events = played.take_pending();
    let played_actions = played.take_pending_actions();
    assert_eq!(played_actions.actions.len(), 1);
    let key = move_key(0, "x");
    let commit = Commit {
        room: &played,
        expected_version: 1,
        events: &play_events,
        actions: &played_actions,
        applied_move: Some((key.clone(), first_seq)),
        outbox: None,
        plain_play: false,
    };
    assert_eq!(
        store.commit(commit).await.unwrap(),
        CommitOutcome::Committed { version: 2 }
    );
    assert_eq!(
        store.applied_move(&id, &key).await.unwrap(),
        Some(first_seq)
    );
    assert_eq!(
        store.applied_move(&id, &move_key(1, "x")).await.unwrap(),
        None
    );
    assert_eq!(
        store.match_actions(&id).await.unwrap(),
        played_actions.actions,
        "the action log holds the play"
    );
    let stale = Commit {
        room: &played,
        expected_version: 1,
        events: &play_events,
        actions: &played_actions,
        applied_move: None,
        outbox: None,
        plain_play: false,
    };
    assert_eq!(
        store.commit(stale).await.unwrap(),
        CommitOutcome::Conflict,
        "a stale version is refused"
    );
    let dup = Commit {
        room: &played,
        expected_version: 2,
        events: &play_events,
        actions: &played_actions,
        applied_move: Some((key.clone(), 99)),
        outbox: None,
        plain_play: false,
    };
    assert_eq!(
        store.commit(dup).await.unwrap(),
        CommitOutcome::AlreadyApplied { seq: first_seq }
    );
    let loaded = store.load(&id).await.unwrap().unwrap();
    assert_eq!(loaded.version, 2, "refused commits write nothing");
    assert_eq!(
        store.events_after(&id, 0).await.unwrap().events.len() as u64,
        loaded.room.seq
    );

    // Deadlines: due, claimed once, synced back.
    let deadline = loaded.room.next_deadline().unwrap();
    assert!(
        store
            .due_rooms(&ALL_SHARDS, deadline - 1, 10)
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        store.due_rooms(&ALL_SHARDS, deadline, 10).await.unwrap(),
        vec![id.clone()]
    );
    assert_eq!(
        store
            .due_rooms(&[shard_of(&id)], deadline, 10)
            .await
            .unwrap(),
        vec![id.clone()]
    );
    assert!(
        store
            .due_rooms(&all_but(shard_of(&id)), deadline, 10)
            .await
            .unwrap()
            .is_empty(),
        "only the shards asked for"
    );
    assert!(store.claim_due(&id, deadline, 5_000).await.unwrap());
    assert!(
        !store.claim_due(&id, deadline, 5_000).await.unwrap(),
        "claimed once"
    );
    assert!(
        store
            .due_rooms(&ALL_SHARDS, deadline, 10)
            .await
            .unwrap()
            .is_empty()
    );
    store.sync_deadline(&id, 1, Some(0)).await.unwrap();
    assert!(
        store
            .due_rooms(&ALL_SHARDS, deadline, 10)
            .await
            .unwrap()
            .is_empty(),
        "an old version does not sync"
    );
    store.sync_deadline(&id, 2, Some(deadline)).await.unwrap();
    assert_eq!(
        store.due_rooms(&ALL_SHARDS, deadline, 10).await.unwrap(),
        vec![id.clone()]
    );

    // Outbox: delivered, redelivered after the idle time until acked.
    let mut closed = loaded.room.clone();
    closed.close("test", now + 2);
    let close_events = closed.take_pending();
    let close_actions = closed.take_pending_actions();
    let commit = Commit {
        room: &closed,
        expected_version: 2,
        events: &close_events,
        actions: &close_actions,
        applied_move: None,
        outbox: Some(OutboxRecord {
            payload: b"record".to_vec(),
            trace_context: "traceparent=00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
                .into(),
        }),
        plain_play: false,
    };
    assert_eq!(
        store.commit(commit).await.unwrap(),
        CommitOutcome::Committed { version: 3 }
    );
    assert!(store.events_after(&id, 0).await.unwrap().closed);
    assert_eq!(
        store.room_heads(&[Arc::from(id.as_str())]).await.unwrap(),
        vec![Some(RoomHead {
            seq: closed.seq,
            closed: true
        })]
    );
    assert!(
        store
            .due_rooms(&ALL_SHARDS, i64::MAX, 10)
            .await
            .unwrap()
            .is_empty(),
        "closed rooms have no deadline"
    );
    assert!(
        store
            .outbox_fetch(&all_but(shard_of(&id)), "c0", 60_000, 10)
            .await
            .unwrap()
            .is_empty(),
        "only the shards asked for"
    );
    let got = store
        .outbox_fetch(&[shard_of(&id)], "c1", 60_000, 10)
        .await
        .unwrap();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].record.payload, b"record");
    assert_eq!(
        got[0].record.trace_context,
        "traceparent=00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
        "the trace context travels with the record"
    );
    assert!(
        store
            .outbox_fetch(&ALL_SHARDS, "c2", 60_000, 10)
            .await
            .unwrap()
            .is_empty(),
        "in flight"
    );
    let retry = store.outbox_fetch(&ALL_SHARDS, "c2", 0, 10).await.unwrap();
    assert_eq!(retry.len(), 1, "redelivered once idle");
    store.outbox_ack(&retry[0].id).await.unwrap();
    assert!(
        store
            .outbox_fetch(&ALL_SHARDS, "c3", 0, 10)
            .await
            .unwrap()
            .is_empty()
    );

    // A new match starts a new action log; actions append in order.
    let mut next = room(&id, now + 3);
    let mut pending = next.take_pending_actions();
    assert!(pending.reset, "a started match starts a new log");
    let card = next.game.as_ref().unwrap().legal_plays()[0].card;
    next.play(0, card, None, false, String::new(), now + 4)
        .unwrap();
    pending.actions = next.take_pending_actions().actions;
    let events = next.take_pending();
    let commit = Commit {
        room: &next,
        expected_version: 3,
        events: &events,
        actions: &pending,
        applied_move: None,
        outbox: None,
        plain_play: false,
    };
    assert_eq!(
        store.commit(commit).await.unwrap(),
        CommitOutcome::Committed { version: 4 }
    );
    assert_eq!(store.match_actions(&id).await.unwrap(), pending.actions);

    // Presence leases: seats recorded under an instance; an expired instance is claimed
    // by one sweeper at a time and is swept for good.
    let seat = LeasedSeat {
        room_id: "a room".into(),
        seat: 1,
        conn_id: "c1".into(),
    };
    assert_eq!(LeasedSeat::decode(&seat.encode()), Some(seat.clone()));
    let other = LeasedSeat {
        seat: 0,
        conn_id: "c0".into(),
        ..seat.clone()
    };
    let instance = format!("replica/{id}");
    assert!(store.lease_add(&instance, &seat, 10_000).await.unwrap());
    assert!(store.lease_add(&instance, &other, 10_000).await.unwrap());
    store.lease_remove(&instance, &other).await.unwrap();
    assert!(
        store.lease_refresh(&instance, 5_000).await.unwrap(),
        "a refresh never shortens"
    );
    assert!(
        store
            .lease_claim_expired(&ALL_SHARDS, 9_999, 1_000, 10)
            .await
            .unwrap()
            .is_empty()
    );
    let claimed = store
        .lease_claim_expired(&ALL_SHARDS, 10_000, 1_000, 10)
        .await
        .unwrap();
    assert_eq!(
        claimed,
        vec![ExpiredLease {
            instance: instance.clone(),
            seats: vec![seat.clone()]
        }]
    );
    assert!(
        store
            .lease_claim_expired(&ALL_SHARDS, 10_999, 1_000, 10)
            .await
            .unwrap()
            .is_empty(),
        "claimed by one sweeper"
    );
    assert!(
        !store.lease_refresh(&instance, 50_000).await.unwrap(),
        "a swept instance cannot come back"
    );
    assert!(!store.lease_add(&instance, &seat, 50_000).await.unwrap());
    assert_eq!(
        store
            .lease_claim_expired(&ALL_SHARDS, 11_000, 1_000, 10)
            .await
            .unwrap(),
        claimed,
        "an unfinished sweep is claimed again"
    );
    store.lease_release(&instance).await.unwrap();
    assert!(
        store
            .lease_claim_expired(&ALL_SHARDS, i64::MAX / 2, 1_000, 10)
            .await
            .unwrap()
            .is_empty()
    );
}

fn shards_of(walks: &[WalkLease]) -> Vec<u32> {
    let mut shards: Vec<u32> = walks.iter().map(|w| w.shard).collect();
    shards.sort_unstable();
    shards
}

/// The shard walks: divided between the live walkers, each shard held by one, a
/// stopped walker's shards taken over when its lease ends, a leaving walker's at once.
async fn divides_the_shard_walks(store: Arc<dyn RoomStore>) {
    let all: Vec<u32> = ALL_SHARDS.to_vec();
    // Alone: every shard, each taken for the first time.
    let w1 = store.walk_shards("w1", 1_000, 2_000, false).await.unwrap();
    assert_eq!(shards_of(&w1), all);
    assert!(w1.iter().all(|w| w.epoch == 1), "{w1:?}");
    // A second walker: nothing free yet; the first gives half up on its next renewal,
    // the second takes it, under a new epoch.
    assert!(
        store
            .walk_shards("w2", 1_100, 2_100, false)
            .await
            .unwrap()
            .is_empty()
    );
    let w1 = store.walk_shards("w1", 1_200, 2_200, false).await.unwrap();
    assert_eq!(w1.len(), SHARDS as usize / 2, "{w1:?}");
    let w2 = store.walk_shards("w2", 1_300, 2_300, false).await.unwrap();
    assert_eq!(w2.len(), SHARDS as usize / 2, "{w2:?}");
    assert!(w2.iter().all(|w| w.epoch == 2), "handed over: {w2:?}");
    let mut both = [shards_of(&w1), shards_of(&w2)].concat();
    both.sort_unstable();
    assert_eq!(both, all, "each shard walked by exactly one");
    // Renewing keeps the same walks and epochs.
    assert_eq!(
        store.walk_shards("w2", 1_400, 2_400, false).await.unwrap(),
        w2
    );
    // w1 stops renewing: once its lease ends (2,200), w2 takes everything.
    let w2 = store.walk_shards("w2", 2_100, 3_100, false).await.unwrap();
    assert_eq!(w2.len(), SHARDS as usize / 2, "w1 still holds its lease");
    let w2 = store.walk_shards("w2", 2_201, 3_201, false).await.unwrap();
    assert_eq!(shards_of(&w2), all, "taken over after the lease");
    // w2 leaves: a newcomer gets every shard at once.
    assert!(
        store
            .walk_shards("w2", 2_300, 2_300, true)
            .await
            .unwrap()
            .is_empty()
    );
    let w3 = store.walk_shards("w3", 2_301, 3_301, false).await.unwrap();
    assert_eq!(shards_of(&w3), all, "a leaving walker frees its walks");
    assert!(
        w3.iter().all(|w| w.epoch >= 3),
        "each hand-over bumps the epoch: {w3:?}"
    );
}

basra_testkit::store_contract! {
    stores {
        memory => Arc::new(MemoryStore::new()),
        redis => kit::redis_store(&kit::test_prefix()).await,
        redis_cluster => kit::cluster_store(&kit::test_prefix()).await,
    }
    cases { keeps_the_contract, divides_the_shard_walks }
}

#[tokio::test]
async fn the_redis_store_keeps_the_contract_on_a_cluster_waiting_for_a_replica() {
    let store = game_session::RedisStore::connect(
        &basra_testkit::redis_cluster_url(),
        &kit::test_prefix(),
        600,
        tokio_util::sync::CancellationToken::new(),
    )
    .await
    .expect("the test cluster (scripts/redis-cluster.sh start)")
    .with_replica_wait(1, 2_000);
    keeps_the_contract(Arc::new(store)).await;
}

/// A primary without replicas (here a single Redis; on a cluster, a promoted primary
/// whose old peer is gone) is not asked to WAIT: a WAIT that can only time out would hold
/// the connection every call to that primary shares, commit after commit. With a minute's
/// wait configured, the whole contract still runs at once; the plays stand unreplicated.
#[tokio::test]
async fn a_primary_without_replicas_is_not_waited_on() {
    let store = game_session::RedisStore::connect(
        &basra_testkit::redis_url(),
        &kit::test_prefix(),
        600,
        tokio_util::sync::CancellationToken::new(),
    )
    .await
    .expect("Redis at REDIS_URL")
    .with_replica_wait(1, 60_000);
    tokio::time::timeout(
        std::time::Duration::from_secs(30),
        keeps_the_contract(Arc::new(store)),
    )
    .await
    .expect("no commit waited for the replica that is not there");
}
