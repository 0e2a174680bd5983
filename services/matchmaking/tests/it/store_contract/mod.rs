//! One contract per store role, [`QueueStore`](matchmaking::store::QueueStore)
//! (`queue.rs`) and [`LobbyStore`](matchmaking::store::LobbyStore) (`lobby.rs`): each
//! scenario runs against the in-memory store, against real Redis and against a real
//! Redis Cluster (a fresh key prefix per test).

mod lobby;
mod queue;

use std::sync::Arc;

use matchmaking::clock::Millis;

use self::{lobby::*, queue::*};

const T0: Millis = 1_800_000_000_000;
const TTL: Millis = 15_000;
const GRACE: Millis = 30_000;

macro_rules! contract {
    ($($name:ident),* $(,)?) => {
        mod memory {
            use super::*;
            $(
                #[tokio::test]
                async fn $name() {
                    super::$name(Arc::new(matchmaking::store::MemoryStore::new())).await;
                }
            )*
        }
        mod redis {
            $(
                #[tokio::test]
                async fn $name() {
                    let prefix = crate::helpers::unique_prefix();
                    super::$name(crate::helpers::redis_store(&prefix).await).await;
                    crate::helpers::forget_prefix(&prefix);
                }
            )*
        }
        mod redis_cluster {
            $(
                #[tokio::test]
                async fn $name() {
                    let prefix = crate::helpers::unique_prefix();
                    super::$name(crate::helpers::cluster_store(&prefix).await).await;
                    crate::helpers::forget_cluster_prefix(&prefix);
                }
            )*
        }
    };
}

contract!(
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
    rooms_seats_codes_and_lobby,
    rooms_nobody_joins_expire,
    requests_and_wrong_codes,
    invites_are_noted_per_account_and_room,
);

/// Two replicas: two handles on one store (two Redis connections on one
/// prefix; the same memory store twice).
mod two_replicas {
    use super::*;

    #[tokio::test]
    async fn memory() {
        let store = Arc::new(matchmaking::store::MemoryStore::new());
        a_taken_over_lease_cannot_requeue_the_group(store.clone(), store).await;
    }

    #[tokio::test]
    async fn redis() {
        let prefix = crate::helpers::unique_prefix();
        a_taken_over_lease_cannot_requeue_the_group(
            crate::helpers::redis_store(&prefix).await,
            crate::helpers::redis_store(&prefix).await,
        )
        .await;
        crate::helpers::forget_prefix(&prefix);
    }

    #[tokio::test]
    async fn redis_cluster() {
        let prefix = crate::helpers::unique_prefix();
        a_taken_over_lease_cannot_requeue_the_group(
            crate::helpers::cluster_store(&prefix).await,
            crate::helpers::cluster_store(&prefix).await,
        )
        .await;
        crate::helpers::forget_cluster_prefix(&prefix);
    }
}
