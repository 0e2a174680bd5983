//! One snapshot per watched event per replica, shared by every WatchEvent stream of it.
//!
//! A stream does not look at its event itself: it [`subscribe`](Hub::subscribe)s to the
//! event's slot, a [`tokio::sync::watch`] of the latest snapshot. The first subscriber
//! of an event starts its **poller** (one task); the poller takes the first snapshot,
//! then every `events.watch_poll_millis`, or at once when [`Hub::wake`] is called (the
//! clock's saves on this replica call it), reads the cheap [`Source::version`] and
//! builds a new snapshot only when that has changed. A subscriber joining a poller
//! already running makes it look at once too, and waits for that look: its first
//! snapshot is as new as one it would have built itself. The last subscriber leaving stops
//! the poller and frees the slot; so does the event's end (the snapshot of a finished or
//! cancelled event is the last one), an error (every stream ends with it, as each did
//! when it looked itself), and the replica's shutdown.
//!
//! So 1,000 watchers of one event cost one version read a poll and one snapshot a
//! change, not 1,000 of each; each stream still makes its own message from the shared
//! snapshot (what it has sent so far is its own), the snapshot's changes when it asked
//! for changes only and sent the snapshot before.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{Notify, watch};
use tokio_util::sync::CancellationToken;
use tonic::Status;

use crate::error::Result;

/// Where snapshots come from (the events' stores; a stand-in in the tests).
#[tonic::async_trait]
pub(crate) trait Source: Send + Sync + 'static {
    /// What the watchers share.
    type Snapshot: Send + Sync + 'static;

    /// The version of what a snapshot of `id` is made of, read cheaply: a snapshot is
    /// built again only when it differs from [`version_of`](Self::version_of) the last.
    async fn version(&self, id: &str) -> Result<Version>;

    /// A snapshot of `id`; after the first, given the last one and the version just
    /// read (it may keep the last one's parts whose version has not changed).
    async fn build(
        &self,
        id: &str,
        last: Option<(&Self::Snapshot, Version)>,
    ) -> Result<Self::Snapshot>;

    /// The version `snapshot` was built at.
    fn version_of(snapshot: &Self::Snapshot) -> Version;

    /// Whether `snapshot` is the last (the event is over: nothing changes any more).
    fn is_last(snapshot: &Self::Snapshot) -> bool;
}

/// The version of a snapshot's parts (an event's: its row's and its live state's).
pub(crate) type Version = (u64, u64);

/// What a slot holds: nothing before the first snapshot, then the latest snapshot, or
/// the error that ended the poller.
pub(crate) type Published<T> = Option<std::result::Result<Arc<T>, Status>>;

/// The subscribers' end of a slot.
pub(crate) type Subscription<T> = watch::Receiver<Published<T>>;

struct Slot<T> {
    tx: watch::Sender<Published<T>>,
    wake: Arc<Notify>,
    looks: Arc<Looks>,
}

/// A poller's looks: how many it has begun, and (watched) how many it has finished.
struct Looks {
    begun: AtomicU64,
    done: watch::Sender<u64>,
}

type Slots<T> = Arc<Mutex<HashMap<String, Slot<T>>>>;

/// The slots of the events watched on this replica.
pub(crate) struct Hub<S: Source> {
    slots: Slots<S::Snapshot>,
    every: Duration,
    shutdown: CancellationToken,
}

impl<S: Source> Hub<S> {
    /// A hub whose pollers look every `every` until `shutdown`.
    pub(crate) fn new(every: Duration, shutdown: CancellationToken) -> Hub<S> {
        Hub {
            slots: Arc::new(Mutex::new(HashMap::new())),
            every,
            shutdown,
        }
    }

    fn lock(
        slots: &Mutex<HashMap<String, Slot<S::Snapshot>>>,
    ) -> std::sync::MutexGuard<'_, HashMap<String, Slot<S::Snapshot>>> {
        slots.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Subscribes to `id`'s snapshots (starting its poller if it has none), once there
    /// is one: the first snapshot's error (NOT_FOUND: no such event) is answered
    /// instead.
    pub(crate) async fn subscribe(
        &self,
        source: &Arc<S>,
        id: &str,
    ) -> std::result::Result<Subscription<S::Snapshot>, Status> {
        let (mut rx, joined) = {
            let mut slots = Self::lock(&self.slots);
            match slots.get(id) {
                Some(slot) => {
                    // A look begun from now on sees what changed before this call.
                    let begun = slot.looks.begun.load(Ordering::SeqCst);
                    let done = slot.looks.done.subscribe();
                    slot.wake.notify_one();
                    (slot.tx.subscribe(), Some((begun, done)))
                }
                None => {
                    let (tx, rx) = watch::channel(None);
                    let wake = Arc::new(Notify::new());
                    let looks = Arc::new(Looks {
                        begun: AtomicU64::new(0),
                        done: watch::Sender::new(0),
                    });
                    slots.insert(
                        id.to_owned(),
                        Slot {
                            tx: tx.clone(),
                            wake: wake.clone(),
                            looks: looks.clone(),
                        },
                    );
                    let poller = Poller {
                        source: source.clone(),
                        slots: self.slots.clone(),
                        id: id.to_owned(),
                        tx,
                        wake,
                        looks,
                        every: self.every,
                        shutdown: self.shutdown.clone(),
                    };
                    tokio::spawn(poller.run());
                    (rx, None)
                }
            }
        };
        if let Some((begun, mut done)) = joined {
            // Its poller gone meanwhile (the event over): what it published last.
            let _ = done.wait_for(|n| *n > begun).await;
        }
        let first = match rx.wait_for(Option::is_some).await {
            Ok(first) => first.clone(),
            Err(_) => None,
        };
        match first {
            Some(Ok(_)) => Ok(rx),
            Some(Err(status)) => Err(status),
            None => Err(Status::unavailable(
                "the server is draining: reopen with last_seen_version",
            )),
        }
    }

    /// Makes `id`'s poller look now (its event was just saved on this replica); nothing
    /// when nobody watches it here.
    pub(crate) fn wake(&self, id: &str) {
        if let Some(slot) = Self::lock(&self.slots).get(id) {
            // A permit is kept when the poller is busy: it looks again right after.
            slot.wake.notify_one();
        }
    }

    /// How many events have a poller now.
    #[cfg(test)]
    pub(crate) fn polled(&self) -> usize {
        Self::lock(&self.slots).len()
    }
}

/// One event's poller.
struct Poller<S: Source> {
    source: Arc<S>,
    slots: Slots<S::Snapshot>,
    id: String,
    tx: watch::Sender<Published<S::Snapshot>>,
    wake: Arc<Notify>,
    looks: Arc<Looks>,
    every: Duration,
    shutdown: CancellationToken,
}

impl<S: Source> Poller<S> {
    async fn run(self) {
        let mut last: Option<Arc<S::Snapshot>> = None;
        loop {
            let this = self.looks.begun.fetch_add(1, Ordering::SeqCst) + 1;
            let looked = self.look(last.as_deref()).await;
            // Published before the look counts as done: a subscriber waiting for it
            // finds what it found.
            let go_on = match looked {
                Ok(None) => true,
                Ok(Some(snapshot)) => {
                    let snapshot = Arc::new(snapshot);
                    let more = !S::is_last(&snapshot);
                    self.tx.send_replace(Some(Ok(snapshot.clone())));
                    last = Some(snapshot);
                    more
                }
                Err(err) => {
                    self.tx.send_replace(Some(Err(err.into())));
                    false
                }
            };
            self.looks.done.send_replace(this);
            if !go_on {
                break;
            }
            tokio::select! {
                () = self.shutdown.cancelled() => break,
                () = self.tx.closed() => {
                    if self.leave_if_unwatched() {
                        return;
                    }
                    // Somebody subscribed meanwhile: go on.
                }
                () = tokio::time::sleep(self.every) => {}
                () = self.wake.notified() => {}
            }
        }
        self.leave();
    }

    /// A new snapshot, or `None` when the version has not changed since `last`.
    async fn look(&self, last: Option<&S::Snapshot>) -> Result<Option<S::Snapshot>> {
        let last = match last {
            Some(last) => {
                let now = self.source.version(&self.id).await?;
                if now == S::version_of(last) {
                    return Ok(None);
                }
                Some((last, now))
            }
            None => None,
        };
        Ok(Some(self.source.build(&self.id, last).await?))
    }

    /// Frees the slot if nobody subscribes to it any more (checked under the hub's lock,
    /// so that nobody subscribes to a poller that stops). Whether it did.
    fn leave_if_unwatched(&self) -> bool {
        let mut slots = Hub::<S>::lock(&self.slots);
        if self.tx.receiver_count() > 0 {
            return false;
        }
        Self::remove(&mut slots, &self.id, &self.tx);
        true
    }

    /// Frees the slot (its subscribers keep the last snapshot; a new subscriber starts a
    /// new poller).
    fn leave(&self) {
        let mut slots = Hub::<S>::lock(&self.slots);
        Self::remove(&mut slots, &self.id, &self.tx);
    }

    fn remove(
        slots: &mut HashMap<String, Slot<S::Snapshot>>,
        id: &str,
        tx: &watch::Sender<Published<S::Snapshot>>,
    ) {
        if slots.get(id).is_some_and(|s| s.tx.same_channel(tx)) {
            slots.remove(id);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

    use super::*;
    use crate::error::MatchmakingError;

    /// A source whose version the test sets, counting its reads and builds.
    #[derive(Default)]
    struct Counter {
        version: AtomicU64,
        missing: bool,
        versions: AtomicUsize,
        builds: AtomicUsize,
    }

    #[tonic::async_trait]
    impl Source for Counter {
        type Snapshot = u64;

        async fn version(&self, _: &str) -> Result<Version> {
            self.versions.fetch_add(1, Ordering::SeqCst);
            Ok((self.version.load(Ordering::SeqCst), 0))
        }

        async fn build(&self, id: &str, _: Option<(&u64, Version)>) -> Result<u64> {
            if self.missing {
                return Err(MatchmakingError::NotFound(format!("no event {id:?}")));
            }
            self.builds.fetch_add(1, Ordering::SeqCst);
            Ok(self.version.load(Ordering::SeqCst))
        }

        fn version_of(snapshot: &u64) -> Version {
            (*snapshot, 0)
        }

        fn is_last(snapshot: &u64) -> bool {
            *snapshot == u64::MAX
        }
    }

    impl Counter {
        fn at(version: u64) -> Arc<Counter> {
            let c = Counter::default();
            c.version.store(version, Ordering::SeqCst);
            Arc::new(c)
        }
        fn builds(&self) -> usize {
            self.builds.load(Ordering::SeqCst)
        }
        fn reads(&self) -> usize {
            self.versions.load(Ordering::SeqCst)
        }
    }

    fn value(rx: &Subscription<u64>) -> u64 {
        match &*rx.borrow() {
            Some(Ok(v)) => **v,
            other => panic!("no snapshot: {other:?}"),
        }
    }

    const POLL: Duration = Duration::from_millis(100);

    /// Lets the pollers run for `d`.
    async fn pass(d: Duration) {
        tokio::time::sleep(d).await;
        for _ in 0..10 {
            tokio::task::yield_now().await;
        }
    }

    #[tokio::test]
    async fn one_poller_serves_every_watcher_of_an_event() {
        let hub = Hub::new(POLL, CancellationToken::new());
        let source = Counter::at(1);
        let mut watchers = Vec::new();
        for _ in 0..50 {
            watchers.push(hub.subscribe(&source, "e").await.expect("subscribed"));
        }
        let other = hub.subscribe(&source, "f").await.expect("subscribed");
        assert_eq!(hub.polled(), 2, "one poller an event");
        assert_eq!(
            source.builds(),
            2,
            "one first snapshot an event, not one a watcher"
        );
        // Two pollers looking ~10 times each, whatever the number of watchers.
        let before = source.reads();
        pass(POLL * 10).await;
        let reads = source.reads() - before;
        assert!((1..=2 * 11).contains(&reads), "{reads} version reads");
        source.version.store(2, Ordering::SeqCst);
        pass(POLL * 2).await;
        assert_eq!(source.builds(), 4, "one new snapshot an event a change");
        for w in &watchers {
            assert_eq!(value(w), 2);
        }
        assert_eq!(value(&other), 2);
    }

    #[tokio::test]
    async fn an_unchanged_version_publishes_nothing() {
        let hub = Hub::new(POLL, CancellationToken::new());
        let source = Counter::at(7);
        let mut rx = hub.subscribe(&source, "e").await.unwrap();
        rx.borrow_and_update();
        pass(POLL * 10).await;
        assert!(source.reads() >= 2, "it looked: {}", source.reads());
        assert_eq!(source.builds(), 1, "built once");
        assert!(!rx.has_changed().unwrap(), "nothing sent");
        source.version.store(8, Ordering::SeqCst);
        tokio::time::timeout(Duration::from_secs(2), rx.changed())
            .await
            .expect("a change is published within a poll")
            .unwrap();
        assert_eq!(value(&rx), 8);
    }

    #[tokio::test]
    async fn the_poller_stops_when_the_last_watcher_leaves() {
        let hub = Hub::new(POLL, CancellationToken::new());
        let source = Counter::at(1);
        let a = hub.subscribe(&source, "e").await.unwrap();
        let b = hub.subscribe(&source, "e").await.unwrap();
        drop(a);
        pass(POLL * 3).await;
        assert_eq!(hub.polled(), 1, "b still watches");
        drop(b);
        pass(POLL * 3).await;
        assert_eq!(hub.polled(), 0, "stopped");
        let reads = source.reads();
        pass(POLL * 10).await;
        assert_eq!(source.reads(), reads, "nobody looks any more");
        // A new watcher starts a new poller, with a new first snapshot.
        let c = hub.subscribe(&source, "e").await.unwrap();
        assert_eq!((hub.polled(), source.builds()), (1, 2));
        assert_eq!(value(&c), 1);
    }

    #[tokio::test]
    async fn a_save_wakes_the_poller_at_once() {
        // A poll so long that only the wake can explain the change being seen.
        let hub = Hub::new(Duration::from_secs(3600), CancellationToken::new());
        let source = Counter::at(1);
        let mut rx = hub.subscribe(&source, "e").await.unwrap();
        rx.borrow_and_update();
        source.version.store(2, Ordering::SeqCst);
        hub.wake("e");
        hub.wake("nobody watches this one");
        tokio::time::timeout(Duration::from_secs(2), rx.changed())
            .await
            .expect("published after the wake, not an hour later")
            .unwrap();
        assert_eq!(value(&rx), 2);
    }

    #[tokio::test]
    async fn a_new_watcher_gets_the_state_as_it_is_when_it_subscribes() {
        // A poll so long that the poller would not look on its own.
        let hub = Hub::new(Duration::from_secs(3600), CancellationToken::new());
        let source = Counter::at(1);
        let a = hub.subscribe(&source, "e").await.unwrap();
        source.version.store(2, Ordering::SeqCst);
        let b = hub.subscribe(&source, "e").await.unwrap();
        assert_eq!(value(&b), 2, "not the snapshot of before it came");
        assert_eq!(value(&a), 2, "and the others get it too");
        assert_eq!(source.builds(), 2);
        let c = hub.subscribe(&source, "e").await.unwrap();
        assert_eq!(
            (value(&c), source.builds()),
            (2, 2),
            "unchanged: not built again"
        );
    }

    #[tokio::test]
    async fn the_last_snapshot_and_errors_end_the_poller() {
        let hub = Hub::new(POLL, CancellationToken::new());
        let missing = Arc::new(Counter {
            missing: true,
            ..Counter::default()
        });
        let refused = hub.subscribe(&missing, "x").await.unwrap_err();
        assert_eq!(refused.code(), tonic::Code::NotFound);
        pass(POLL * 3).await;
        assert_eq!(hub.polled(), 0, "no poller kept for an unknown event");

        let source = Counter::at(1);
        let mut rx = hub.subscribe(&source, "e").await.unwrap();
        rx.borrow_and_update();
        source.version.store(u64::MAX, Ordering::SeqCst);
        rx.changed().await.unwrap();
        assert_eq!(
            value(&rx),
            u64::MAX,
            "the last snapshot reaches the watcher"
        );
        pass(POLL * 3).await;
        assert_eq!(hub.polled(), 0, "an event over is not polled");
        assert!(rx.changed().await.is_err(), "and its watchers are told so");
    }

    #[tokio::test]
    async fn shutdown_stops_every_poller() {
        let shutdown = CancellationToken::new();
        let hub = Hub::new(POLL, shutdown.clone());
        let source = Counter::at(1);
        let mut rx = hub.subscribe(&source, "e").await.unwrap();
        rx.borrow_and_update();
        shutdown.cancel();
        assert!(rx.changed().await.is_err());
        assert_eq!(hub.polled(), 0);
    }
}
