//! One contract per store role, [`QueueStore`](matchmaking::store::QueueStore)
//! (`queue.rs`) and [`LobbyStore`](matchmaking::store::LobbyStore) (`lobby.rs`): each
//! case runs against the in-memory store, against real Redis and against a real Redis
//! Cluster (a fresh key prefix per test, its keys deleted after it), by
//! [`store_contract!`](basra_testkit::store_contract).

mod lobby;
mod queue;

use basra_testkit::{
    matchmaking::{cluster_prefix, memory_store, redis_store, test_prefix},
    redis::TestPrefix,
};

basra_testkit::store_contract! {
    stores {
        memory => memory_store(),
        redis => |run| {
            let prefix = test_prefix();
            run(redis_store(&prefix).await).await;
        },
        redis_cluster => |run| {
            let prefix = cluster_prefix();
            run(redis_store(&prefix).await).await;
        },
    }
    cases in queue {
        queue_positions_and_resume,
        pairs_within_the_window_and_widens_with_time,
        unranked_is_first_come_first_served_and_four_seats_group,
        players_who_block_each_other_are_never_grouped,
        a_group_given_up_ends_its_searches,
        commit_matches_and_cancel_answers_where_to_play,
        cancel_is_idempotent,
        a_group_member_cannot_leave_its_group,
        release_keeps_tickets_for_a_resume,
        stale_groups_are_reclaimed,
        an_unconfirmed_room_keeps_its_group,
        tickets_expire,
        a_new_search_supersedes_the_old_one,
        a_new_search_supersedes_across_formats,
        cancel_and_resume_across_formats,
        a_group_in_one_format_blocks_a_search_in_another,
        two_formats_pair_independently,
        bots_fill_after_the_wait,
    }
    cases in lobby {
        rooms_seats_codes_and_lobby,
        rooms_nobody_joins_expire,
        requests_and_wrong_codes,
        invites_are_noted_per_account_and_room,
    }
}

/// Two replicas: two handles on one store (two Redis connections on one
/// prefix; the same memory store twice).
mod two_replicas {
    use super::*;

    use super::queue::a_taken_over_lease_cannot_requeue_the_group;

    #[tokio::test]
    async fn memory() {
        let store = memory_store();
        a_taken_over_lease_cannot_requeue_the_group(store.clone(), store).await;
    }

    #[tokio::test]
    async fn redis() {
        on_redis(test_prefix()).await;
    }

    #[tokio::test]
    async fn redis_cluster() {
        on_redis(cluster_prefix()).await;
    }

    /// Two Redis stores under `prefix`.
    async fn on_redis(prefix: TestPrefix) {
        a_taken_over_lease_cannot_requeue_the_group(
            redis_store(&prefix).await,
            redis_store(&prefix).await,
        )
        .await;
    }
}

/// A room's mode is looked up at its locator once per process: the process that made
/// the room, or once read its locator, finds the room without it (one round trip less
/// before each read and seat), and a process that never did finds nothing once the
/// locator is gone. On one Redis and on the cluster.
mod room_modes {
    use super::*;

    use basra_platform::redis::Redis;
    use matchmaking::store::{LobbyStore, TakeSeat};

    #[tokio::test]
    async fn redis() {
        remembered_past_the_locator(test_prefix()).await;
    }

    #[tokio::test]
    async fn redis_cluster() {
        remembered_past_the_locator(cluster_prefix()).await;
    }

    async fn remembered_past_the_locator(prefix: TestPrefix) {
        let (maker, reader, stranger) = (
            redis_store(&prefix).await,
            redis_store(&prefix).await,
            redis_store(&prefix).await,
        );
        for (id, code) in [("m1", "MMMMM1"), ("m2", "MMMMM2")] {
            maker
                .insert_room(&lobby::room(id, code, false, 2, 101, false))
                .await
                .unwrap();
        }
        // `reader` reads m1 through its locator (and remembers its mode).
        assert!(reader.room("m1").await.unwrap().is_some());
        let mut raw = Redis::connect(&prefix.url()).await.unwrap().conn();
        for id in ["m1", "m2"] {
            let deleted: i64 = ::redis::cmd("DEL")
                .arg(format!("{prefix}:{{rm:{id}}}:mode"))
                .query_async(&mut raw)
                .await
                .unwrap();
            assert_eq!(deleted, 1, "the locator of {id}");
        }
        assert!(maker.room("m1").await.unwrap().is_some());
        assert!(maker.room("m2").await.unwrap().is_some());
        assert!(reader.room("m1").await.unwrap().is_some());
        assert!(reader.room("m2").await.unwrap().is_none());
        assert!(stranger.room("m1").await.unwrap().is_none());
        assert!(matches!(
            reader.take_seat("m1", "joiner", false, None).await.unwrap(),
            TakeSeat::Seated { seat: 1, .. }
        ));
        assert!(matches!(
            stranger
                .take_seat("m2", "joiner", false, None)
                .await
                .unwrap(),
            TakeSeat::NotFound
        ));
        // Closing goes to the remembered slot too.
        maker.close_room("m2").await.unwrap();
        assert_eq!(
            maker.room("m2").await.unwrap().map(|room| room.status),
            Some(matchmaking::store::RoomStatus::Closed)
        );
    }
}
