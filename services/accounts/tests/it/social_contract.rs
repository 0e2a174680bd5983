//! The presence and notes contract, run against every [`SocialStore`]: in memory, on
//! Redis (`REDIS_URL`) and on the Redis Cluster (`REDIS_CLUSTER_URL`,
//! `scripts/redis-cluster.sh start`). The Redis cases fail when Redis is unreachable.

use std::time::Duration;

use accounts::social::{Activity, Change, MemorySocial, Presence, RedisSocial, SocialStore};
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

/// Reports last this long in these tests.
const TTL: Duration = Duration::from_millis(400);

async fn redis_at(url: &str) -> SocialStore {
    let prefix = basra_testkit::unique_prefix("test-social-");
    let store = RedisSocial::connect(url, &prefix, CancellationToken::new())
        .await
        .unwrap_or_else(|err| panic!("Redis is needed at {url}: {err}"));
    SocialStore::Redis(store.with_report_ttl(TTL))
}

basra_testkit::store_contract! {
    stores {
        memory => SocialStore::Memory(MemorySocial::new().with_report_ttl(TTL)),
        redis => redis_at(&basra_testkit::redis_url()).await,
        cluster => redis_at(&basra_testkit::redis_cluster_url()).await,
    }
    cases in cases {
        presence_is_the_busiest_report_and_changes_are_announced,
        a_report_lapses_unless_repeated,
        notes_are_numbered_kept_and_read_after_a_seq,
        friend_list_changes_are_announced,
    }
}

/// The next announcement about anything, within a second.
async fn next(changes: &mut broadcast::Receiver<Change>) -> Change {
    tokio::time::timeout(Duration::from_secs(1), changes.recv())
        .await
        .expect("an announcement within a second")
        .expect("the announcements go on")
}

fn in_match(room: &str, spectatable: bool) -> Activity {
    Activity::Match {
        room_id: room.into(),
        spectatable,
    }
}

async fn presence_of(store: &SocialStore, user: Uuid) -> Presence {
    store.presence(&[user]).await.unwrap().remove(0).presence
}

async fn presences(store: &SocialStore, users: &[Uuid]) -> Vec<Presence> {
    let read = store.presence(users).await.unwrap();
    read.into_iter().map(|r| r.presence).collect()
}

mod cases {
    use super::*;

    pub(super) async fn presence_is_the_busiest_report_and_changes_are_announced(
        store: SocialStore,
    ) {
        let (me, marker) = (Uuid::now_v7(), Uuid::now_v7());
        let mut changes = store.changes();
        assert_eq!(presence_of(&store, me).await, Presence::Offline);

        store.begin(me, &Activity::Online).await.unwrap();
        assert_eq!(next(&mut changes).await, Change::Presence(me));
        assert_eq!(presence_of(&store, me).await, Presence::Online);

        store.begin(me, &Activity::Queue).await.unwrap();
        assert_eq!(next(&mut changes).await, Change::Presence(me));
        assert_eq!(presence_of(&store, me).await, Presence::InQueue);

        let r1 = in_match("room-1", true);
        store.begin(me, &r1).await.unwrap();
        assert_eq!(next(&mut changes).await, Change::Presence(me));
        assert_eq!(
            presence_of(&store, me).await,
            Presence::InMatch(Some("room-1".into()))
        );

        // Repeating a report changes nothing and announces nothing; nor does the end of
        // another room (the player moved on from it): the marker's change comes first.
        store.begin(me, &r1).await.unwrap();
        store.end(me, &in_match("room-0", true)).await.unwrap();
        store.begin(marker, &Activity::Online).await.unwrap();
        assert_eq!(next(&mut changes).await, Change::Presence(marker));
        assert_eq!(
            presence_of(&store, me).await,
            Presence::InMatch(Some("room-1".into()))
        );

        store.end(me, &r1).await.unwrap();
        assert_eq!(next(&mut changes).await, Change::Presence(me));
        assert_eq!(presence_of(&store, me).await, Presence::InQueue);
        store.end(me, &Activity::Queue).await.unwrap();
        store.end(me, &Activity::Online).await.unwrap();
        assert_eq!(presence_of(&store, me).await, Presence::Offline);

        // A room that may not be watched is not named; it too ends only as itself.
        store.begin(me, &in_match("room-2", false)).await.unwrap();
        store.end(me, &in_match("room-3", false)).await.unwrap();
        let both = presences(&store, &[me, marker]).await;
        assert_eq!(both, vec![Presence::InMatch(None), Presence::Online]);
        store.end(me, &in_match("room-2", false)).await.unwrap();
        assert_eq!(presence_of(&store, me).await, Presence::Offline);
    }

    pub(super) async fn a_report_lapses_unless_repeated(store: SocialStore) {
        let (kept, lapsed) = (Uuid::now_v7(), Uuid::now_v7());
        store.begin(kept, &Activity::Queue).await.unwrap();
        store.begin(lapsed, &Activity::Queue).await.unwrap();
        tokio::time::sleep(TTL / 2).await;
        store.begin(kept, &Activity::Queue).await.unwrap();
        // Each read says when the player's soonest report lapses: the repeated one later.
        let read = store.presence(&[kept, lapsed]).await.unwrap();
        let (kept_lapses, lapsed_lapses) = (read[0].lapses_in.unwrap(), read[1].lapses_in.unwrap());
        assert!(kept_lapses <= TTL, "{kept_lapses:?}");
        assert!(lapsed_lapses <= TTL / 2, "{lapsed_lapses:?}");
        assert!(
            kept_lapses > lapsed_lapses,
            "{kept_lapses:?} {lapsed_lapses:?}"
        );
        tokio::time::sleep(TTL * 3 / 4).await;
        let read = store.presence(&[kept, lapsed]).await.unwrap();
        assert_eq!(
            read.iter().map(|r| r.presence.clone()).collect::<Vec<_>>(),
            vec![Presence::InQueue, Presence::Offline],
            "the repeated report holds, the other lapsed by itself"
        );
        assert_eq!(read[1].lapses_in, None, "nothing left to lapse");
        assert!(read[0].lapses_in.is_some());
    }

    pub(super) async fn notes_are_numbered_kept_and_read_after_a_seq(store: SocialStore) {
        let (me, other) = (Uuid::now_v7(), Uuid::now_v7());
        let mut changes = store.changes();
        for i in 1..=3u64 {
            let seq = store
                .push_note(me, format!("note {i}").as_bytes())
                .await
                .unwrap();
            assert_eq!(seq, i);
            assert_eq!(next(&mut changes).await, Change::Note(me));
        }
        assert_eq!(store.push_note(other, b"theirs").await.unwrap(), 1);
        let after_one = store.notes_after(me, 1).await.unwrap();
        assert_eq!(
            after_one
                .iter()
                .map(|n| (n.seq, n.payload.clone()))
                .collect::<Vec<_>>(),
            vec![(2, b"note 2".to_vec()), (3, b"note 3".to_vec())]
        );
        assert!(store.notes_after(me, 3).await.unwrap().is_empty());
        assert_eq!(store.notes_after(me, 0).await.unwrap().len(), 3);

        // Only the last ones are kept; numbers go on rising.
        let keep = accounts::social::KEEP_NOTES as u64;
        for _ in 0..keep {
            store.push_note(me, b"more").await.unwrap();
        }
        let all = store.notes_after(me, 0).await.unwrap();
        assert_eq!(all.len() as u64, keep);
        assert_eq!(all.first().unwrap().seq, 4);
        assert_eq!(all.last().unwrap().seq, 3 + keep);
        assert_eq!(store.notes_after(other, 0).await.unwrap().len(), 1);
    }

    pub(super) async fn friend_list_changes_are_announced(store: SocialStore) {
        let me = Uuid::now_v7();
        let mut changes = store.changes();
        store.friends_changed(me).await.unwrap();
        assert_eq!(next(&mut changes).await, Change::Friends(me));
    }
}
