//! The Redis store's new search is four steps in three slots (claim the ticket's
//! locator, swap it in as the account's live search, cancel or tombstone what it
//! superseded, insert it in its format's queue; see `ARCHITECTURE.md`). A replica can
//! die between two of them. Each test here writes the keys as such a crash leaves them
//! (the steps before it done, the rest not), then checks what the design promises:
//! the account is never in two pools, and the next call finishes the search. On one
//! Redis and on the cluster.

use std::sync::Arc;

use basra_platform::redis::{Connection, Redis};
use basra_testkit::{
    matchmaking::{
        GRACE, RANKED2, RANKED4, T0, TTL, UNRANKED2, cluster_prefix, redis_store, test_prefix,
    },
    redis::TestPrefix,
};
use matchmaking::{
    clock::Millis,
    domain::Format,
    store::{CancelCause, CancelOutcome, Enqueued, NewTicket, Store, TicketState},
};

fn ticket(id: &str, format: Format) -> NewTicket {
    NewTicket {
        id: id.into(),
        user_id: "me".into(),
        guest: false,
        format,
        rating: 1500.0,
        allow_bots: false,
        blocks: Vec::new(),
    }
}

/// A store and a raw connection on the same keys (deleted when it is dropped).
struct Setup {
    store: Arc<dyn Store>,
    raw: Connection,
    prefix: TestPrefix,
}

impl Setup {
    /// A Redis store and a raw connection under `prefix`.
    async fn on(prefix: TestPrefix) -> Setup {
        let raw = Redis::connect(&prefix.url()).await.unwrap().conn();
        let store = redis_store(&prefix).await;
        Setup { store, raw, prefix }
    }

    /// Step 1 done for `id` of account `me` in `format`: its locator.
    async fn claimed(&self, id: &str, format: Format) {
        let _: () = ::redis::cmd("SET")
            .arg(format!("{}:{{t:{id}}}", self.prefix))
            .arg(format!("{} me", format.key()))
            .query_async(&mut self.raw.clone())
            .await
            .unwrap();
    }

    /// Step 2 done for `id`: the account's live search, with `old` superseded.
    async fn swapped(&self, id: &str, old: Option<&str>) {
        let account = format!("{}:{{pl:me}}", self.prefix);
        let _: () = ::redis::cmd("HSET")
            .arg(format!("{account}:search"))
            .arg("cur")
            .arg(id)
            .query_async(&mut self.raw.clone())
            .await
            .unwrap();
        if let Some(old) = old {
            let _: () = ::redis::cmd("SADD")
                .arg(format!("{account}:old"))
                .arg(old)
                .query_async(&mut self.raw.clone())
                .await
                .unwrap();
        }
    }

    /// Ticket `id` of account `me` queued in `format` at `now`: the whole search, as a
    /// FindMatch does it.
    async fn enqueue(&self, id: &str, format: Format, now: Millis) -> Enqueued {
        self.store
            .enqueue(ticket(id, format), now, TTL, GRACE)
            .await
            .unwrap()
    }

    async fn state(&self, id: &str) -> Option<TicketState> {
        self.store
            .poll(id, T0 + 100, TTL)
            .await
            .unwrap()
            .map(|v| v.state)
    }

    async fn lengths(&self) -> Vec<(Format, u64)> {
        let mut lengths = self.store.queue_lengths().await.unwrap();
        lengths.sort_by_key(|(f, _)| f.key());
        lengths
    }
}

/// After step 1 (N claimed, nothing else): the player is in the old queue only; a
/// retry of N goes on from the claim, in the claimed format, and supersedes O.
async fn a_retry_after_the_claim_finishes_the_search(s: Setup) {
    s.enqueue("o", UNRANKED2, T0).await;
    s.claimed("n", RANKED2).await;
    assert_eq!(s.lengths().await, vec![(UNRANKED2, 1)]);
    assert_eq!(s.state("n").await, None);
    // The retry names another format: the claim's stands.
    let e = s.enqueue("n", RANKED4, T0 + 1).await;
    assert!(!e.resumed);
    assert_eq!(e.view.state, TicketState::Queued);
    assert_eq!(e.view.format, RANKED2);
    assert_eq!(
        s.state("o").await,
        Some(TicketState::Cancelled(CancelCause::Superseded))
    );
    assert_eq!(s.lengths().await, vec![(RANKED2, 1)]);
    assert_eq!(
        s.store.queued_ticket("me").await.unwrap().as_deref(),
        Some("n")
    );
}

/// After step 2 (`cur` = N, O in `old`, O still queued): one queue. A retry of N
/// cancels O and inserts N.
async fn a_retry_after_the_swap_cancels_the_old_one(s: Setup) {
    s.enqueue("o", UNRANKED2, T0).await;
    s.claimed("n", RANKED2).await;
    s.swapped("n", Some("o")).await;
    assert_eq!(s.lengths().await, vec![(UNRANKED2, 1)]);
    let e = s.enqueue("n", RANKED2, T0 + 1).await;
    assert_eq!(e.view.state, TicketState::Queued);
    assert_eq!(
        s.state("o").await,
        Some(TicketState::Cancelled(CancelCause::Superseded))
    );
    assert_eq!(s.lengths().await, vec![(RANKED2, 1)]);
}

/// After step 2, the account's next search M comes instead of N's retry: it cancels
/// O and tombstones N, so N's late retry is refused (N's cancelled view) and M is the
/// one search left.
async fn the_next_search_tombstones_an_unfinished_one(s: Setup) {
    s.enqueue("o", UNRANKED2, T0).await;
    s.claimed("n", RANKED2).await;
    s.swapped("n", Some("o")).await;
    let e = s.enqueue("m", RANKED4, T0 + 1).await;
    assert_eq!(e.view.state, TicketState::Queued);
    assert_eq!(
        s.state("o").await,
        Some(TicketState::Cancelled(CancelCause::Superseded))
    );
    assert_eq!(s.lengths().await, vec![(RANKED4, 1)]);
    let late = s.enqueue("n", RANKED2, T0 + 2).await;
    assert_eq!(
        late.view.state,
        TicketState::Cancelled(CancelCause::Superseded)
    );
    assert!(!late.view.attached);
    assert_eq!(late.view.format, RANKED2);
    assert_eq!(s.lengths().await, vec![(RANKED4, 1)]);
    assert_eq!(
        s.store.queued_ticket("me").await.unwrap().as_deref(),
        Some("m")
    );
}

/// After step 3 (O cancelled, N not inserted): no queue at all; the retry of N
/// inserts it.
async fn a_retry_after_the_cancel_inserts(s: Setup) {
    s.enqueue("o", UNRANKED2, T0).await;
    s.store
        .cancel("me", "o", CancelCause::Superseded, T0 + 1, GRACE)
        .await
        .unwrap();
    s.claimed("n", RANKED2).await;
    s.swapped("n", None).await;
    assert!(s.lengths().await.is_empty());
    assert_eq!(s.store.queued_ticket("me").await.unwrap(), None);
    let e = s.enqueue("n", RANKED2, T0 + 2).await;
    assert_eq!(e.view.state, TicketState::Queued);
    assert_eq!(s.lengths().await, vec![(RANKED2, 1)]);
}

/// CancelFind of a ticket claimed but not inserted yet tombstones it: its insert is
/// refused with the cancel's cause, and no pool ever holds it.
async fn a_cancel_before_the_insert_is_kept(s: Setup) {
    s.claimed("n", RANKED2).await;
    s.swapped("n", None).await;
    assert_eq!(
        s.store
            .cancel("you", "n", CancelCause::ByClient, T0, GRACE)
            .await
            .unwrap(),
        CancelOutcome::NotFound
    );
    assert_eq!(
        s.store
            .cancel("me", "n", CancelCause::ByClient, T0, GRACE)
            .await
            .unwrap(),
        CancelOutcome::Cancelled
    );
    let e = s.enqueue("n", RANKED2, T0 + 1).await;
    assert_eq!(e.view.state, TicketState::Cancelled(CancelCause::ByClient));
    assert!(s.lengths().await.is_empty());
    assert_eq!(s.store.queued_ticket("me").await.unwrap(), None);
    // The tombstone expires like any cancelled ticket.
    s.store.expire(T0 + GRACE + 1, 100).await.unwrap();
    assert_eq!(s.state("n").await, None);
}

/// A crash can leave a locator behind (claimed and never inserted; expired but not yet
/// deleted): every locator expires by itself, after a day.
async fn locators_expire_by_themselves(s: Setup) {
    s.enqueue("n", RANKED2, T0).await;
    let ttl_ms: i64 = ::redis::cmd("PTTL")
        .arg(format!("{}:{{t:n}}", s.prefix))
        .query_async(&mut s.raw.clone())
        .await
        .unwrap();
    assert!(
        (1..=86_400_000).contains(&ttl_ms),
        "the locator's time to live: {ttl_ms} ms"
    );
}

basra_testkit::store_contract! {
    stores {
        redis => Setup::on(test_prefix()).await,
        redis_cluster => Setup::on(cluster_prefix()).await,
    }
    cases {
        a_retry_after_the_claim_finishes_the_search,
        a_retry_after_the_swap_cancels_the_old_one,
        the_next_search_tombstones_an_unfinished_one,
        a_retry_after_the_cancel_inserts,
        a_cancel_before_the_insert_is_kept,
        locators_expire_by_themselves,
    }
}
