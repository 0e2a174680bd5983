//! The pairing step exists twice: the Lua script the Redis store runs
//! (`src/store/redis/queue/form.lua`) and the memory store's Rust. This pins them
//! together: random ticket sets (formats, ratings, queue times, bots, blocks between
//! players) go into both
//! stores, one pairing round runs on each with the same clock, parameters and room ids,
//! and the groups formed (rooms, formats, members in seat order) and the queues left
//! must be the same.

use std::sync::Arc;

use basra_testkit::matchmaking::{memory_store, redis_store, test_prefix};
use matchmaking::{
    domain::{Format, PairingParams, WindowParams},
    store::{Group, NewTicket, QueueStore},
};
use proptest::prelude::*;

const FORMATS: [Format; 4] = [
    Format {
        ranked: true,
        seats: 2,
        target_score: 101,
    },
    Format {
        ranked: false,
        seats: 2,
        target_score: 101,
    },
    Format {
        ranked: true,
        seats: 4,
        target_score: 51,
    },
    Format {
        ranked: false,
        seats: 4,
        target_score: 51,
    },
];

#[derive(Debug, Clone)]
struct Ticket {
    format: usize,
    /// Half points, so that equal and near-equal ratings both occur.
    rating_halves: u32,
    enqueued_ms: i64,
    allow_bots: bool,
}

fn ticket() -> impl Strategy<Value = Ticket> {
    (0..FORMATS.len(), 2000u32..3600, 0i64..60_000, any::<bool>()).prop_map(
        |(format, rating_halves, enqueued_ms, allow_bots)| Ticket {
            format,
            rating_halves,
            enqueued_ms,
            allow_bots,
        },
    )
}

fn params(max_groups: usize, candidates: usize) -> PairingParams {
    PairingParams {
        window: WindowParams {
            start: 50.0,
            growth_per_second: 10.0,
            max: 400.0,
        },
        bot_after_ms: 20_000,
        lease_ms: 10_000,
        max_groups,
        scan_limit: 2000,
        candidates,
        min_round_interval_ms: 0,
    }
}

/// What must agree: room, format, members (ticket ids, in seat order), formation time.
fn shape(groups: &[Group]) -> Vec<(String, String, Vec<String>, i64)> {
    groups
        .iter()
        .map(|g| {
            (
                g.room_id.clone(),
                g.format.key(),
                g.members.iter().map(|m| m.ticket_id.clone()).collect(),
                g.formed_ms,
            )
        })
        .collect()
}

async fn round(
    store: Arc<dyn QueueStore>,
    tickets: &[Ticket],
    blocks: &[(usize, usize)],
    now: i64,
    params: &PairingParams,
) -> (Vec<(String, String, Vec<String>, i64)>, Vec<(String, u64)>) {
    // Queue time order, as players arrive (ties keep the generated order).
    let mut order: Vec<usize> = (0..tickets.len()).collect();
    order.sort_by_key(|&i| tickets[i].enqueued_ms);
    for i in order {
        let t = &tickets[i];
        let format = FORMATS[t.format];
        store
            .enqueue(
                NewTicket {
                    id: format!("t{i:02}"),
                    user_id: format!("u{i:02}"),
                    guest: false,
                    format,
                    rating: if format.ranked {
                        f64::from(t.rating_halves) / 2.0
                    } else {
                        0.0
                    },
                    allow_bots: t.allow_bots,
                    blocks: blocks
                        .iter()
                        .filter(|(from, _)| *from == i)
                        .map(|(_, to)| format!("u{to:02}"))
                        .collect(),
                },
                t.enqueued_ms,
                600_000,
                30_000,
            )
            .await
            .unwrap();
    }
    let rooms: Vec<String> = (0..64).map(|i| format!("room-{i:02}")).collect();
    let groups = store.form_groups(now, params, &rooms).await.unwrap();
    let mut left: Vec<(String, u64)> = store
        .queue_lengths()
        .await
        .unwrap()
        .into_iter()
        .map(|(f, n)| (f.key(), n))
        .collect();
    left.sort();
    (shape(&groups), left)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn lua_and_memory_pairing_form_the_same_groups(
        tickets in proptest::collection::vec(ticket(), 0..28),
        // (i, j): player i blocks player j.
        blocks in proptest::collection::vec((0usize..28, 0usize..28), 0..16),
        later in 0i64..40_000,
        max_groups in 1usize..12,
        // Up to 16 (the service's K): form.lua reads candidates 4 at a time, so this
        // crosses its pages.
        candidates in 1usize..17,
    ) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let now = 60_000 + later;
        let params = params(max_groups, candidates);
        let (memory, redis) = rt.block_on(async {
            let memory = round(memory_store(), &tickets, &blocks, now, &params).await;
            let prefix = test_prefix();
            let redis = round(redis_store(&prefix).await, &tickets, &blocks, now, &params).await;
            (memory, redis)
        });
        prop_assert_eq!(memory, redis);
    }
}
