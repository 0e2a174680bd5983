//! The room state a replica holds after its own commit (`Hub::cached`) is only a guess:
//! the store's compare-and-set decides. Two replicas over one store; the first one's hub
//! gets no notices (as when a notice is lost or still in flight), so the state it holds
//! goes stale when the second one commits. Its next change must be detected as made
//! against a stale state and applied to the room as stored. On the memory store, one
//! Redis and the cluster.

use basra_testkit::game_session as kit;
use std::sync::Arc;

use basra_engine::{Card, Seed};
use game_session::replica::{Batch, Committed, Mutation, Replica};
use game_session::room::events::LogEvent;
use game_session::room::timing::now_ms;
use game_session::room::{Occupant, Room};
use game_session::store::{RoomFormat, move_key};
use game_session::{MemoryStore, RoomStore};
use tokio_util::sync::CancellationToken;

/// A replica's core over `store`, with no background task: its hub hears of nothing but
/// its own commits.
fn replica(name: &str, store: Arc<dyn RoomStore>) -> Arc<Replica> {
    let config = kit::test_config(name, kit::test_timing());
    Arc::new(Replica::new(store, config, None, CancellationToken::new()))
}

/// Two replicas' stores over one key prefix, on one Redis or on the cluster.
async fn two_replicas_stores(cluster: bool) -> (Arc<dyn RoomStore>, Arc<dyn RoomStore>) {
    let prefix = kit::test_prefix();
    if cluster {
        (
            kit::cluster_store(&prefix).await,
            kit::cluster_store(&prefix).await,
        )
    } else {
        (
            kit::redis_store(&prefix).await,
            kit::redis_store(&prefix).await,
        )
    }
}

/// The seat to play and its first legal card, as stored.
async fn next_play(store: &dyn RoomStore, id: &str) -> (u8, Card) {
    let room = store.load(id).await.unwrap().unwrap().room;
    let game = room.game.as_ref().unwrap();
    (game.turn().unwrap().0, game.legal_plays()[0].card)
}

async fn play(core: &Arc<Replica>, id: &str, seat: u8, card: Card, move_id: &str) -> Mutation<()> {
    core.mutate(id, Some((seat, move_id)), |room, now| {
        room.play(seat, card, None, false, move_id.into(), now)
    })
    .await
    .unwrap()
}

fn done_version(outcome: &Mutation<()>) -> u64 {
    match outcome {
        Mutation::Done { committed, .. } => committed.version,
        other => panic!("not applied: {other:?}"),
    }
}

async fn stale_state_is_detected(store_a: Arc<dyn RoomStore>, store_b: Arc<dyn RoomStore>) {
    let a = replica("a", store_a);
    let b = replica("b", Arc::clone(&store_b));
    let store = store_b;
    let id = uuid::Uuid::now_v7().to_string();
    let mut room = Room::new(
        id.clone(),
        basra_engine::Settings::default(),
        vec![
            Occupant::Player {
                user_id: "p0".into(),
                name: "Nour".into(),
            },
            Occupant::Player {
                user_id: "p1".into(),
                name: String::new(),
            },
        ],
        false,
        false,
        game_session::room::Visibility::Private,
        kit::test_timing(),
        now_ms(),
    );
    room.start_if_full(Seed([5; 32]), "m".into(), now_ms());
    assert!(a.create(&mut room).await.unwrap());
    // A stream of the room on replica a: its hub holds what a commits.
    let _watch = a.hub().watch(&id);

    // 1. a plays; it holds the room at that version.
    let (seat, card) = next_play(&*store, &id).await;
    let v = done_version(&play(&a, &id, seat, card, "a1").await);
    assert_eq!(a.hub().cached(&id).map(|held| held.version), Some(v));
    assert_eq!(
        a.metrics().room_loads.get(),
        1,
        "the first play read the room (no stream watched it when it was created)"
    );

    // 2. b commits a chat (the game is unchanged, the room is not): a's state is stale
    // and a does not know it.
    let chatted = b
        .mutate(&id, None, |room, now| {
            room.chat(1, 3, now);
            Ok(())
        })
        .await
        .unwrap();
    let chat_version = done_version(&chatted);
    assert_eq!(chat_version, v + 1);
    assert_eq!(a.hub().cached(&id).map(|held| held.version), Some(v));
    let chat_seq = store.events_after(&id, 0).await.unwrap().events.len() as u64;

    // 3. a plays again: computed on the held state, refused by the compare-and-set,
    // applied to the stored room (after b's chat, not over it).
    let (seat, card) = next_play(&*store, &id).await;
    let outcome = play(&a, &id, seat, card, "a2").await;
    assert_eq!(done_version(&outcome), chat_version + 1);
    let Mutation::Done {
        committed:
            Committed {
                room,
                batch: Batch { events, .. },
                ..
            },
        ..
    } = &outcome
    else {
        unreachable!()
    };
    assert_eq!(room.seq - events.len() as u64 + 1, chat_seq + 1);
    assert_eq!(
        a.metrics().stale_states.get(),
        1,
        "the stale state was noticed"
    );
    assert_eq!(
        a.metrics().cas_conflicts.get(),
        0,
        "and not taken for contention"
    );
    assert_eq!(
        a.metrics().room_loads.get(),
        2,
        "the stale state refused, the room was read whole"
    );
    let log = store.events_after(&id, 0).await.unwrap().events;
    assert!(matches!(
        log[chat_seq as usize - 1].event,
        LogEvent::Chat { seat: 1, phrase: 3 }
    ));
    assert!(matches!(
        &log[chat_seq as usize].event,
        LogEvent::CardPlayed { client_move_id, .. } if client_move_id == "a2"
    ));
    assert_eq!(
        store
            .applied_move(&id, &move_key(seat, "a2"))
            .await
            .unwrap(),
        Some(chat_seq + 1)
    );
    // It holds the fresh room now.
    assert_eq!(
        a.hub().cached(&id).map(|held| held.version),
        Some(chat_version + 1)
    );

    // 4. b plays the next turn: on a's held state it is still that seat's turn, so the
    // other seat's play looks illegal there. a checks against the stored room and plays.
    let (seat_b, card_b) = next_play(&*store, &id).await;
    let by_b = done_version(&play(&b, &id, seat_b, card_b, "b1").await);
    let (seat, card) = next_play(&*store, &id).await;
    assert_ne!(seat, seat_b);
    let outcome = play(&a, &id, seat, card, "a3").await;
    assert_eq!(done_version(&outcome), by_b + 1);
    assert_eq!(
        b.metrics().room_loads.get(),
        2,
        "b, with no stream of the room, read it for each of its changes"
    );
    assert_eq!(
        a.metrics().room_loads.get(),
        3,
        "a's state went stale again"
    );
    let stored = store.load(&id).await.unwrap().unwrap();
    assert_eq!(stored.version, by_b + 1);
    assert_eq!(stored.room.action_count, 4);

    // 5. A play that is illegal on the stored room too is refused, and nothing is stored.
    let (seat, _) = next_play(&*store, &id).await;
    let other = 1 - seat;
    let hand_card = {
        let room = store.load(&id).await.unwrap().unwrap().room;
        room.game
            .as_ref()
            .unwrap()
            .view(Some(basra_engine::Seat(other)))
            .hand
            .iter()
            .next()
            .unwrap()
    };
    assert!(matches!(
        play(&a, &id, other, hand_card, "a4").await,
        Mutation::Rejected(_)
    ));
    assert_eq!(store.load(&id).await.unwrap().unwrap().version, by_b + 1);
}

#[tokio::test]
async fn a_stale_held_state_is_detected_on_the_memory_store() {
    let store: Arc<dyn RoomStore> = Arc::new(MemoryStore::new());
    stale_state_is_detected(Arc::clone(&store), store).await;
}

#[tokio::test]
async fn a_stale_held_state_is_detected_on_redis() {
    let (a, b) = two_replicas_stores(false).await;
    stale_state_is_detected(a, b).await;
}

#[tokio::test]
async fn a_stale_held_state_is_detected_on_a_cluster() {
    let (a, b) = two_replicas_stores(true).await;
    stale_state_is_detected(a, b).await;
}

/// A rolling upgrade: a room whose state a replica before the binary form stored as JSON
/// (as `serde_json` writes a `Room`, the form those replicas wrote) is loaded, played on
/// and stored again in the binary form by a new replica, on a real Redis.
#[tokio::test]
async fn a_room_stored_as_json_by_an_older_replica_is_played_on_redis() {
    let prefix = kit::test_prefix();
    let store = kit::redis_store(&prefix).await;
    let core = replica("new", Arc::clone(&store));
    let id = uuid::Uuid::now_v7().to_string();
    let mut room = Room::new(
        id.clone(),
        basra_engine::Settings::default(),
        vec![
            Occupant::Player {
                user_id: "p0".into(),
                name: "Nour".into(),
            },
            Occupant::Player {
                user_id: "p1".into(),
                name: String::new(),
            },
        ],
        false,
        true,
        game_session::room::Visibility::Private,
        kit::test_timing(),
        now_ms(),
    );
    room.start_if_full(Seed([8; 32]), "m".into(), now_ms());
    assert!(core.create(&mut room).await.unwrap());
    // What the older replica left in Redis: the same room, as JSON.
    let shard = game_session::store::shard_of(&id);
    let key = basra_platform::redis::Keys::new(&prefix)
        .unwrap()
        .key(&format!("gs:{shard}"), &format!("room:{id}:state"));
    let mut redis = redis::Client::open(basra_testkit::redis_url())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    let json = serde_json::to_string(&room).unwrap();
    let _: () = redis::cmd("HSET")
        .arg(&key)
        .arg("data")
        .arg(&json)
        .query_async(&mut redis)
        .await
        .unwrap();
    let loaded = store.load(&id).await.unwrap().unwrap();
    assert_eq!(serde_json::to_string(&loaded.room).unwrap(), json);

    let (seat, card) = next_play(&*store, &id).await;
    let v = done_version(&play(&core, &id, seat, card, "j1").await);
    let data: Vec<u8> = redis::cmd("HGET")
        .arg(&key)
        .arg("data")
        .query_async(&mut redis)
        .await
        .unwrap();
    assert_eq!(
        data[0],
        game_session::store::ROOM_FORMAT,
        "stored again in format 1"
    );
    assert!(data.len() * 4 < json.len());
    let stored = store.load(&id).await.unwrap().unwrap();
    assert_eq!(stored.version, v);
    assert_eq!(stored.room.action_count, 1);
    assert!(stored.room.game.as_ref().unwrap().turn().unwrap().0 != seat);
}

/// A store on one Redis writing rooms in `format`.
async fn writing(prefix: &str, format: RoomFormat) -> Arc<dyn RoomStore> {
    let store = game_session::RedisStore::connect(
        &basra_testkit::redis_url(),
        prefix,
        600,
        CancellationToken::new(),
    )
    .await
    .expect("Redis at REDIS_URL");
    Arc::new(store.with_room_format(format))
}

/// The raw stored state of a room (one Redis).
async fn stored_bytes(prefix: &str, id: &str) -> Vec<u8> {
    let shard = game_session::store::shard_of(id);
    let key = basra_platform::redis::Keys::new(prefix)
        .unwrap()
        .key(&format!("gs:{shard}"), &format!("room:{id}:state"));
    let mut redis = redis::Client::open(basra_testkit::redis_url())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    redis::cmd("HGET")
        .arg(&key)
        .arg("data")
        .query_async(&mut redis)
        .await
        .unwrap()
}

/// The first step of an upgrade: the new replicas write JSON (`game.room_state_format =
/// "json"`) while old ones still run; a fleet mixing JSON and binary writers (the second
/// step) plays one room in turns, each replica reading what the other wrote.
#[tokio::test]
async fn replicas_writing_json_and_binary_play_one_room_in_turns() {
    let prefix = kit::test_prefix();
    let json_writer = replica("json", writing(&prefix, RoomFormat::Json).await);
    let store = kit::redis_store(&prefix).await;
    let binary_writer = replica("binary", Arc::clone(&store));
    let id = uuid::Uuid::now_v7().to_string();
    let mut room = Room::new(
        id.clone(),
        basra_engine::Settings::default(),
        vec![
            Occupant::Player {
                user_id: "p0".into(),
                name: String::new(),
            },
            Occupant::Player {
                user_id: "p1".into(),
                name: "Karim".into(),
            },
        ],
        false,
        false,
        game_session::room::Visibility::Private,
        kit::test_timing(),
        now_ms(),
    );
    room.start_if_full(Seed([4; 32]), "m".into(), now_ms());
    assert!(json_writer.create(&mut room).await.unwrap());
    assert_eq!(stored_bytes(&prefix, &id).await[0], b'{');
    for turn in 0..6 {
        let (core, first) = if turn % 2 == 0 {
            (&binary_writer, game_session::store::ROOM_FORMAT)
        } else {
            (&json_writer, b'{')
        };
        let (seat, card) = next_play(&*store, &id).await;
        done_version(&play(core, &id, seat, card, &format!("t{turn}")).await);
        assert_eq!(stored_bytes(&prefix, &id).await[0], first, "turn {turn}");
    }
    let stored = store.load(&id).await.unwrap().unwrap();
    assert_eq!(stored.room.action_count, 6);
    assert_eq!(stored.version, 7);
}

/// Whose turn it is in the room as stored.
async fn turn_of(store: &dyn RoomStore, id: &str) -> u8 {
    next_play(store, id).await.0
}

/// A started two-player room, not yet stored.
fn started_room(id: &str, seed: u8) -> Room {
    let players = ["p0", "p1"].map(|user| Occupant::Player {
        user_id: user.into(),
        name: String::new(),
    });
    let mut room = Room::new(
        id.into(),
        basra_engine::Settings::default(),
        players.to_vec(),
        false,
        false,
        game_session::room::Visibility::Private,
        kit::test_timing(),
        now_ms(),
    );
    room.start_if_full(Seed([seed; 32]), "m".into(), now_ms());
    room
}

/// A whole match played through `writer` as the Play stream plays (`Replica::mutate_play`,
/// now the default capture, now one named): after every play, another replica's store
/// (`reader`, no state held) loads the room the writer holds, byte for byte, with the
/// plain plays on its tail; reads every event the writer made, in order; finds each move
/// answered; and the match's action log has every action.
async fn plain_plays_replay(writer: Arc<dyn RoomStore>, reader: Arc<dyn RoomStore>) {
    let core = replica("writer", writer);
    let id = uuid::Uuid::now_v7().to_string();
    let mut room = started_room(&id, 11);
    assert!(core.create(&mut room).await.unwrap());
    let mut made = reader.events_after(&id, 0).await.unwrap().events;
    let (mut plays, mut on_tail) = (0, 0);
    loop {
        let stored = reader.load(&id).await.unwrap().unwrap().room;
        let Some(seat) = stored.game.as_ref().unwrap().turn() else {
            break;
        };
        let options = stored.game.as_ref().unwrap().legal_plays();
        let choice = options[plays % options.len()];
        let take = (plays % 2 == 0).then_some(choice.capture.taken);
        let move_id = format!("{plays}-{}", uuid::Uuid::now_v7());
        let outcome = core
            .mutate_play(&id, Some((seat.0, &move_id)), |room, now| {
                room.play(seat.0, choice.card, take, false, move_id.clone(), now)
            })
            .await
            .unwrap();
        let Mutation::Done {
            committed:
                Committed {
                    room,
                    version,
                    batch: Batch { events, .. },
                },
            ..
        } = outcome
        else {
            panic!("play {plays} not applied: {outcome:?}");
        };
        plays += 1;
        made.extend(events.iter().cloned());
        let loaded = reader.load(&id).await.unwrap().unwrap();
        assert_eq!(loaded.version, version);
        assert_eq!(
            game_session::store::encode_room(&loaded.room).unwrap(),
            game_session::store::encode_room(&room).unwrap(),
            "play {plays}: the room loaded is the room held"
        );
        on_tail += usize::from(loaded.tail > 0);
        assert!(loaded.tail < 48, "a round's plays at most");
        let first = room.seq + 1 - events.len() as u64;
        assert_eq!(
            reader
                .applied_move(&id, &move_key(seat.0, &move_id))
                .await
                .unwrap(),
            Some(first)
        );
        if room.game.as_ref().unwrap().turn().is_some() {
            assert_eq!(
                reader.match_actions(&id).await.unwrap().len(),
                room.action_count as usize
            );
        }
    }
    assert!(plays > 40, "a whole match: {plays} plays");
    assert!(
        on_tail * 8 >= plays * 6,
        "{on_tail} of {plays} plays on the tail"
    );
    let logged = reader.events_after(&id, 0).await.unwrap().events;
    assert_eq!(logged, made, "every event, in order, as made");
}

#[tokio::test]
async fn plain_plays_are_stored_on_the_tail_and_replayed_on_redis() {
    let (a, b) = two_replicas_stores(false).await;
    plain_plays_replay(a, b).await;
}

#[tokio::test]
async fn plain_plays_are_stored_on_the_tail_and_replayed_on_a_cluster() {
    let (a, b) = two_replicas_stores(true).await;
    plain_plays_replay(a, b).await;
}

/// A room split over two replicas, as when its players' streams are on different ones:
/// seat 0 plays through `a`, seat 1 through `b`, each replica with a stream of the room.
/// After each commit the other replica hears the notice and its stream catches up
/// (`events_after`, then `Hub::refresh`, as `stream::catch_up` does). A replica whose
/// held state was brought up to the other's plain play makes its player's next play
/// without reading the room, and that play is the room as stored; after a snapshot commit
/// (a deal's end, a round's) the state is not brought up and the next play reads the room.
async fn split_room_follows_plain_plays(
    store_a: Arc<dyn RoomStore>,
    store_b: Arc<dyn RoomStore>,
    reader: Arc<dyn RoomStore>,
) {
    let replicas = [
        replica("a", Arc::clone(&store_a)),
        replica("b", Arc::clone(&store_b)),
    ];
    let stores = [store_a, store_b];
    let id = uuid::Uuid::now_v7().to_string();
    let mut room = started_room(&id, 13);
    assert!(replicas[0].create(&mut room).await.unwrap());
    let _watches = replicas.each_ref().map(|core| core.hub().watch(&id));
    let start = reader.events_after(&id, 0).await.unwrap().events.len() as u64;
    let mut delivered = [start; 2];
    let (mut plays, mut refreshed, mut loads) = (0, 0, 0);
    loop {
        let stored = reader.load(&id).await.unwrap().unwrap().room;
        let Some(seat) = stored.game.as_ref().unwrap().turn() else {
            break;
        };
        let (me, other) = (usize::from(seat.0), 1 - usize::from(seat.0));
        let held = replicas[me].hub().cached(&id).is_some();
        let loads_before = replicas[me].metrics().room_loads.get();
        let card = stored.game.as_ref().unwrap().legal_plays()[0].card;
        let move_id = format!("{plays}-{}", uuid::Uuid::now_v7());
        let outcome = replicas[me]
            .mutate_play(&id, Some((seat.0, &move_id)), |room, now| {
                room.play(seat.0, card, None, false, move_id.clone(), now)
            })
            .await
            .unwrap();
        let Mutation::Done {
            committed: Committed { room, version, .. },
            ..
        } = outcome
        else {
            panic!("play {plays} not applied: {outcome:?}");
        };
        plays += 1;
        let read = replicas[me].metrics().room_loads.get() - loads_before;
        assert_eq!(
            read,
            u64::from(!held),
            "play {plays}: read the room only without a state"
        );
        loads += read;
        let loaded = reader.load(&id).await.unwrap().unwrap();
        assert_eq!(loaded.version, version);
        assert_eq!(
            game_session::store::encode_room(&loaded.room).unwrap(),
            game_session::store::encode_room(&room).unwrap(),
            "play {plays}: the room committed is the room stored"
        );
        delivered[me] = room.seq;
        // The other replica hears of the commit and its stream catches up.
        let had_state = replicas[other].hub().cached(&id).is_some();
        replicas[other].hub().notify(&id, room.seq);
        assert!(
            replicas[other].hub().cached(&id).is_none(),
            "the notice drops the state"
        );
        let after = stores[other]
            .events_after(&id, delivered[other])
            .await
            .unwrap();
        let up = replicas[other].hub().refresh(&id, delivered[other], &after);
        let plain = loaded.tail > 0;
        assert_eq!(
            up,
            plain && had_state,
            "play {plays}: plain {plain}, held {had_state}"
        );
        if up {
            refreshed += 1;
            assert_eq!(
                replicas[other].hub().cached(&id).map(|held| held.version),
                Some(version)
            );
        }
        delivered[other] = room.seq;
    }
    assert!(plays > 40, "a whole match: {plays} plays");
    assert!(
        refreshed * 4 >= plays * 3,
        "{refreshed} of {plays} states brought up"
    );
    assert!(loads * 4 <= plays, "{loads} rooms read for {plays} plays");
    for core in &replicas {
        assert_eq!(
            core.metrics().stale_states.get(),
            0,
            "no state brought up was stale"
        );
    }
}

#[tokio::test]
async fn a_split_room_follows_the_other_replicas_plain_plays_on_redis() {
    let (a, b) = two_replicas_stores(false).await;
    split_room_follows_plain_plays(Arc::clone(&a), b, a).await;
}

#[tokio::test]
async fn a_split_room_follows_the_other_replicas_plain_plays_on_a_cluster() {
    let (a, b) = two_replicas_stores(true).await;
    split_room_follows_plain_plays(Arc::clone(&a), b, a).await;
}

/// A play as the Play stream makes it, by `core`, on the room as `store` has it.
async fn stream_play(core: &Arc<Replica>, store: &dyn RoomStore, id: &str) -> Mutation<()> {
    let (seat, card) = next_play(store, id).await;
    let move_id = uuid::Uuid::now_v7().to_string();
    core.mutate_play(id, Some((seat, &move_id)), |room, now| {
        room.play(seat, card, None, false, move_id.clone(), now)
    })
    .await
    .unwrap()
}

/// An upgrade's first step and a rollback's: a replica writing `binary_2` (the whole
/// room every commit, what releases before the tail read) among replicas writing
/// `binary`. Its first commit to a room folds the room's tail into the snapshot (a
/// release that reads no tail then reads the whole room), and the tail's plays stay in
/// the match's action log, once.
#[tokio::test]
async fn a_replica_writing_binary_2_folds_the_tail_into_the_snapshot() {
    let prefix = kit::test_prefix();
    let whole = writing(&prefix, RoomFormat::Binary2).await;
    assert_eq!(whole.tail_limit(), 0);
    let tail_writer = replica("binary", kit::redis_store(&prefix).await);
    let whole_writer = replica("binary_2", Arc::clone(&whole));
    let store = kit::redis_store(&prefix).await;
    let id = uuid::Uuid::now_v7().to_string();
    let mut room = started_room(&id, 21);
    assert!(tail_writer.create(&mut room).await.unwrap());

    for _ in 0..3 {
        done_version(&stream_play(&tail_writer, &*store, &id).await);
    }
    assert_eq!(store.load(&id).await.unwrap().unwrap().tail, 3);
    let Mutation::Done {
        committed: Committed { room: held, .. },
        ..
    } = stream_play(&whole_writer, &*store, &id).await
    else {
        panic!("not applied");
    };
    let folded = store.load(&id).await.unwrap().unwrap();
    assert_eq!(
        folded.tail, 0,
        "the whole room, as a release before the tail reads it"
    );
    assert_eq!(
        game_session::store::encode_room(&folded.room).unwrap(),
        game_session::store::encode_room(&held).unwrap()
    );
    // In format 2: what such a release reads.
    assert_eq!(
        stored_bytes(&prefix, &id).await,
        game_session::store::encode_room_as(&held, game_session::store::RoomFormat::Binary2)
            .unwrap()
    );
    let actions = store.match_actions(&id).await.unwrap();
    assert_eq!(actions.len(), 4);
    assert_eq!(actions.len(), held.action_count as usize);

    // The binary writers go on with the tail.
    done_version(&stream_play(&tail_writer, &*store, &id).await);
    let loaded = store.load(&id).await.unwrap().unwrap();
    assert_eq!(loaded.tail, 1);
    assert_eq!(store.match_actions(&id).await.unwrap().len(), 5);
    let events = store.events_after(&id, 0).await.unwrap().events;
    assert_eq!(events.len() as u64, loaded.room.seq);
}

/// Plain plays of many rooms of one shard at once, which go to Redis in shared calls
/// (`store/play_batch.rs`): each is still its room's own step, answered on its own (of
/// two plays computed from the same state of one room, one is written and the other
/// refused as a conflict), and another replica hears every room's new seq.
async fn plain_plays_at_once(store: Arc<dyn RoomStore>, other: Arc<dyn RoomStore>) {
    use game_session::store::{Commit, CommitOutcome, shard_of};
    let core = replica("writer", Arc::clone(&store));
    let mut ids = Vec::new();
    while ids.len() < 24 {
        let id = uuid::Uuid::now_v7().to_string();
        if shard_of(&id) == 5 {
            ids.push(id);
        }
    }
    for id in &ids {
        assert!(core.create(&mut started_room(id, 31)).await.unwrap());
    }
    let mut heard = other.notices();
    let mut calls = tokio::task::JoinSet::new();
    for (i, id) in ids.iter().enumerate() {
        let loaded = store.load(id).await.unwrap().unwrap();
        for option in 0..if i == 0 { 2 } else { 1 } {
            let (store, mut room, id) = (Arc::clone(&store), loaded.room.clone(), id.clone());
            calls.spawn(async move {
                let game = room.game.as_ref().unwrap();
                let (seat, card) = (game.turn().unwrap().0, game.legal_plays()[option].card);
                let move_id = format!("m{option}");
                room.play(seat, card, None, false, move_id.clone(), now_ms())
                    .unwrap();
                let (events, actions) = (room.take_pending(), room.take_pending_actions());
                let first = room.seq + 1 - events.len() as u64;
                let commit = Commit {
                    room: &room,
                    expected_version: loaded.version,
                    events: &events,
                    actions: &actions,
                    applied_move: Some((move_key(seat, &move_id), first)),
                    outbox: None,
                    plain_play: true,
                };
                (id, room.seq, store.commit(commit).await.unwrap())
            });
        }
    }
    let outcomes = calls.join_all().await;
    let mut written: std::collections::HashMap<String, u64> = outcomes
        .iter()
        .filter(|(_, _, outcome)| matches!(outcome, CommitOutcome::Committed { .. }))
        .map(|(id, seq, _)| (id.clone(), *seq))
        .collect();
    assert_eq!(written.len(), ids.len(), "{outcomes:?}");
    let conflicts = outcomes.iter().filter(|o| o.2 == CommitOutcome::Conflict);
    assert_eq!(conflicts.count(), 1, "{outcomes:?}");
    for id in &ids {
        let loaded = other.load(id).await.unwrap().unwrap();
        assert_eq!((loaded.tail, loaded.room.seq), (1, written[id]));
    }
    // A move played again (its seat, card and id, on the room as it is now) is refused by
    // the rules (its card is gone: the version check makes the room the one stored) and
    // answered with the seq of the first one, found on the log.
    let (id, first_seat) = (&ids[1], 1 - turn_of(&*other, &ids[1]).await);
    let loaded = other.load(id).await.unwrap().unwrap();
    let first_card = match &other
        .events_after(id, written[id] - 2)
        .await
        .unwrap()
        .events[0]
        .event
    {
        LogEvent::CardPlayed {
            played: basra_engine::Event::CardPlayed { card, .. },
            ..
        } => *card,
        other => panic!("not the play: {other:?}"),
    };
    let mut room = loaded.room.clone();
    assert!(
        room.play(first_seat, first_card, None, false, "m0".into(), now_ms())
            .is_err()
    );
    let played = written[id] - 1;
    assert_eq!(
        other
            .applied_move(id, &move_key(first_seat, "m0"))
            .await
            .unwrap(),
        Some(played)
    );
    assert_eq!(
        other
            .applied_move(id, &move_key(1 - first_seat, "m0"))
            .await
            .unwrap(),
        None,
        "the same id from the other seat is another move"
    );
    // A play on a stale version, or on a room that does not exist, writes nothing.
    let game = room.game.as_ref().unwrap();
    let (seat, card) = (game.turn().unwrap().0, game.legal_plays()[0].card);
    room.play(seat, card, None, false, "m1".into(), now_ms())
        .unwrap();
    let (events, actions) = (room.take_pending(), room.take_pending_actions());
    for (room_id, version) in [(id.as_str(), loaded.version - 1), ("no-such-room", 3)] {
        let mut room = room.clone();
        room.id = room_id.to_owned();
        let refused = other
            .commit(Commit {
                room: &room,
                expected_version: version,
                events: &events,
                actions: &actions,
                applied_move: Some((move_key(seat, "m1"), room.seq)),
                outbox: None,
                plain_play: true,
            })
            .await
            .unwrap();
        assert_eq!(refused, CommitOutcome::Conflict, "{room_id}");
    }
    let after = other.load(id).await.unwrap().unwrap();
    assert_eq!(
        (after.version, after.room.seq),
        (loaded.version, loaded.room.seq)
    );
    assert_eq!(
        other.events_after(id, 0).await.unwrap().events.len() as u64,
        loaded.room.seq
    );
    assert!(other.load("no-such-room").await.unwrap().is_none());
    let heads = other
        .room_heads(&[Arc::from("no-such-room")])
        .await
        .unwrap();
    assert_eq!(heads, vec![None], "the refused play left no key behind");
    tokio::time::timeout(std::time::Duration::from_secs(5), async {
        while !written.is_empty() {
            let notice = heard.recv().await.unwrap();
            if written.get(&*notice.room_id) == Some(&notice.seq) {
                written.remove(&*notice.room_id);
            }
        }
    })
    .await
    .expect("a notice of every room's new seq");
}

#[tokio::test]
async fn plain_plays_at_once_are_each_their_rooms_step_on_redis() {
    let (a, b) = two_replicas_stores(false).await;
    plain_plays_at_once(a, b).await;
}

#[tokio::test]
async fn plain_plays_at_once_are_each_their_rooms_step_on_a_cluster() {
    let (a, b) = two_replicas_stores(true).await;
    plain_plays_at_once(a, b).await;
}

/// Rooms whose plain plays a release before the version-bump form stored (its play script,
/// `tests/fixtures/play-before-version-bump.lua`: the version, last seq, `st` and the
/// move's answer written in the room's state) are read and carried on: their tail
/// replayed, their answers found, new plain plays added to that tail, and the next
/// snapshot folding both into the action log.
#[tokio::test]
async fn plain_plays_stored_the_previous_way_are_read_and_carried_on() {
    use game_session::store::plain_play;
    let prefix = kit::test_prefix();
    let store = kit::redis_store(&prefix).await;
    let core = replica("new", Arc::clone(&store));
    let id = uuid::Uuid::now_v7().to_string();
    assert!(core.create(&mut started_room(&id, 41)).await.unwrap());
    let mut redis = redis::Client::open(basra_testkit::redis_url())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    let room_prefix = basra_platform::redis::Keys::new(&prefix).unwrap().key(
        &format!("gs:{}", game_session::store::shard_of(&id)),
        &format!("room:{id}:"),
    );
    let old_script = redis::Script::new(include_str!("../fixtures/play-before-version-bump.lua"));
    let mut answers = Vec::new();
    for n in 0..3 {
        let loaded = store.load(&id).await.unwrap().unwrap();
        let mut room = loaded.room;
        let game = room.game.as_ref().unwrap();
        let (seat, card) = (game.turn().unwrap().0, game.legal_plays()[0].card);
        let move_id = format!("old-{n}");
        room.play(seat, card, None, false, move_id.clone(), now_ms())
            .unwrap();
        let (events, actions) = (room.take_pending(), room.take_pending_actions());
        let mut compact = plain_play::encode(&events, &actions.actions[0]).unwrap();
        // That script appended the move id itself.
        let played = &mut compact[0];
        played.truncate(played.len() - move_id.len());
        let mut call = old_script.key(&room_prefix);
        call.arg("")
            .arg(loaded.version)
            .arg(seat)
            .arg(&move_id)
            .arg(room.next_deadline().unwrap())
            .arg(compact.len());
        for event in &compact {
            call.arg(event.as_slice());
        }
        let answer: Vec<u64> = call.invoke_async(&mut redis).await.unwrap();
        assert_eq!(answer, vec![1, loaded.version + 1]);
        answers.push((move_key(seat, &move_id), room.seq + 1 - events.len() as u64));
        let read = store.load(&id).await.unwrap().unwrap();
        assert_eq!(read.tail, n + 1);
        assert_eq!(
            game_session::store::encode_room(&read.room).unwrap(),
            game_session::store::encode_room(&room).unwrap()
        );
    }
    // This release's plain plays go on that tail; its answers are on the log.
    for n in 0..2 {
        let (seat, card) = next_play(&*store, &id).await;
        let move_id = format!("new-{n}");
        let Mutation::Done { committed, .. } = core
            .mutate_play(&id, Some((seat, &move_id)), |room, now| {
                room.play(seat, card, None, false, move_id.clone(), now)
            })
            .await
            .unwrap()
        else {
            panic!("not applied");
        };
        answers.push((move_key(seat, &move_id), committed.batch.first_seq));
    }
    let loaded = store.load(&id).await.unwrap().unwrap();
    assert_eq!(loaded.tail, 5);
    let head = store.room_heads(&[Arc::from(id.as_str())]).await.unwrap();
    assert_eq!(head[0].map(|head| head.seq), Some(loaded.room.seq));
    assert_eq!(
        store.match_actions(&id).await.unwrap().len(),
        loaded.room.action_count as usize
    );
    for (key, seq) in &answers {
        assert_eq!(
            store.applied_move(&id, key).await.unwrap(),
            Some(*seq),
            "{key}"
        );
    }
    // A snapshot (a chat is no plain play) folds the whole tail into the action log.
    done_version(
        &core
            .mutate(&id, None, |room, now| {
                room.chat(0, 2, now);
                Ok(())
            })
            .await
            .unwrap(),
    );
    let folded = store.load(&id).await.unwrap().unwrap();
    assert_eq!(folded.tail, 0);
    assert_eq!(
        store.match_actions(&id).await.unwrap().len(),
        folded.room.action_count as usize
    );
    for (key, seq) in &answers {
        assert_eq!(
            store.applied_move(&id, key).await.unwrap(),
            Some(*seq),
            "{key}"
        );
    }
    // And plays go on, on a tail after the snapshot.
    done_version(&stream_play(&core, &*store, &id).await);
    let loaded = store.load(&id).await.unwrap().unwrap();
    assert_eq!(loaded.tail, 1);
    assert_eq!(
        store.events_after(&id, 0).await.unwrap().events.len() as u64,
        loaded.room.seq
    );
}
