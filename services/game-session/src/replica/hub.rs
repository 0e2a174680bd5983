//! Per-replica fan-out: one subscription to the store's notices, one `watch` channel per
//! room with local streams. A stream wakes on its room's watch and reads the missed
//! events from the stored log; there is no Redis connection per stream. The watch carries
//! the room's last announced seq, so a stream that already has it (its own play, or the
//! second notice of a commit: the local one and the one through Redis) does not read.
//!
//! A change committed by this replica also puts its events on the room's watch (the last
//! few commits, each with its first seq): the other local streams of the room deliver
//! them from there, and read the stored log only for what the watch does not hold
//! contiguously after their last delivered seq (commits of other replicas, a gap, or an
//! epoch bump).
//!
//! The hub also keeps, for each room with local streams, the state this replica last
//! committed to it and its version ([`Hub::take_cached`]): the next change to the room starts
//! from there instead of loading and decoding the room from the store. The store's
//! compare-and-set on the version stays the authority: a stale state fails its commit,
//! which then reloads. A notice of a newer seq (another replica's commit, or a change
//! without events) drops the state at once, so that case is rare; the state goes with
//! the room's last local stream. When the room's streams catch up with another replica's
//! commits and those were plain plays, the dropped state is brought up to them
//! ([`Hub::refresh`]): a room whose players stream from different replicas is not read
//! whole before each play.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{broadcast, watch};
use tokio_util::sync::CancellationToken;

use crate::room::Room;
use crate::store::{EventsAfter, Loaded, Notice, RoomStore, SHARDS, shard_of};

use super::commit::{Batch, Committed};

/// How many of a room's latest local commits its watch keeps.
const RECENT_COMMITS: usize = 8;

/// What a room's watch holds.
#[derive(Debug, Clone, Default)]
pub struct Wake {
    /// The highest seq announced for the room.
    pub seq: u64,
    /// Bumped when streams must look whatever their seq (the room changed without new
    /// events, or notices may have been lost).
    pub epoch: u64,
    /// The latest commits made on this replica, by first seq (not necessarily
    /// contiguous: other replicas commit too).
    pub recent: VecDeque<Batch>,
    /// Commits of this replica to the room in progress.
    in_flight: u32,
    /// The highest seq of notices that came meanwhile (announced when they finish).
    deferred: u64,
}

impl Wake {
    /// Whether a stream that has delivered every event up to `delivered` and last
    /// looked at `epoch` has anything to read.
    pub fn news_for(&self, delivered: u64, epoch: u64) -> bool {
        self.seq > delivered || self.epoch != epoch
    }

    /// The local events right after `delivered`: the batches that hold seqs
    /// `delivered + 1 ..` without a gap, each with how many of its events were delivered
    /// already. Empty when the next event is not held here.
    pub fn local_after(&self, delivered: u64) -> Vec<(Batch, usize)> {
        let mut out = Vec::new();
        let mut next = delivered + 1;
        for batch in &self.recent {
            if batch.first_seq <= next && next <= batch.last_seq() {
                out.push((batch.clone(), (next - batch.first_seq) as usize));
                next = batch.last_seq() + 1;
            }
        }
        out
    }
}

/// A room as this replica committed it, and its version. Shared with the change that
/// committed it ([`Mutation::Done`](super::Mutation::Done)): the next change takes it without a copy
/// once that one has let go of it (see [`Hub::take_cached`]).
#[derive(Debug, Clone)]
pub struct Held {
    /// The room after the commit.
    pub room: Arc<Room>,
    /// Its version.
    pub version: u64,
    /// Plain plays stored after its last snapshot ([`Loaded::tail`]).
    pub tail: usize,
}

/// A commit of this replica to a room, in progress (see [`Hub::commit_started`]).
#[derive(Debug)]
#[must_use]
pub struct InFlight {
    hub: Arc<Hub>,
    room_id: Arc<str>,
    counted: bool,
    done: bool,
}

impl InFlight {
    /// The commit is stored as `committed`: its events go on the room's watch (its
    /// streams share their encodings), and the room it left, with `tail` plain plays
    /// stored after its last snapshot, is kept for the next change unless a newer change
    /// was noticed meanwhile. No events: the streams look anyway (as for a notice with
    /// seq 0).
    pub fn committed(mut self, committed: &Committed, tail: usize) {
        self.done = true;
        self.hub.finish(
            &self.room_id,
            self.counted,
            Stored::of(&committed.batch),
            Some(Held {
                room: Arc::clone(&committed.room),
                version: committed.version,
                tail,
            }),
        );
    }
}

/// What a local commit stored.
enum Stored {
    /// Nothing (it failed or was refused).
    Nothing,
    /// A change without events.
    NoEvents,
    /// These events.
    Events(Batch),
}

impl Stored {
    fn of(batch: &Batch) -> Stored {
        if batch.events.is_empty() {
            Stored::NoEvents
        } else {
            Stored::Events(batch.clone())
        }
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        if !self.done {
            // Nothing was stored (a conflict, a refusal, an error): announce what
            // came meanwhile.
            self.hub
                .finish(&self.room_id, self.counted, Stored::Nothing, None);
        }
    }
}

/// A room with local streams: its watch, and the state this replica last committed.
#[derive(Debug)]
struct Watched {
    sender: watch::Sender<Wake>,
    /// The room as this replica last committed it, with its version; `None` when
    /// another change (or none yet) was noticed since.
    state: Option<Held>,
    /// The state dropped by a notice of another replica's commit, kept to be brought up
    /// to that commit's plain plays ([`Hub::refresh`]).
    stale: Option<Held>,
}

/// Every how many resync periods the resync reads every room's head, also the rooms of
/// shards whose notices were heard (see [`Hub::run_resync`]).
const FULL_RESYNC_EVERY: u64 = 15;

/// How many locks the rooms are spread over: a play takes its room's lock three times
/// (its held state, the commit's start and end, waking the room's streams under it), and
/// with one lock for every room the replica's threads queued on it and slept.
const LOCKS: u32 = 32;

type Rooms = HashMap<Arc<str>, Watched>;

/// The rooms this replica has streams on.
#[derive(Debug, Default)]
pub struct Hub {
    /// The rooms, spread over [`LOCKS`] maps by their id.
    rooms: [Mutex<Rooms>; LOCKS as usize],
    /// The notices heard from each shard's channel so far (see [`Hub::run_resync`]).
    heard: [AtomicU64; SHARDS as usize],
    /// Bumped by [`Hub::signal_all`]: a stream compares it on every wake-up.
    signals: AtomicU64,
}

impl Hub {
    /// The map that holds `room_id`, locked.
    fn lock(&self, room_id: &str) -> std::sync::MutexGuard<'_, Rooms> {
        Self::locked(&self.rooms[basra_platform::redis::shard_of(room_id, LOCKS) as usize])
    }

    /// Every map, each locked in turn.
    fn each(&self) -> impl Iterator<Item = std::sync::MutexGuard<'_, Rooms>> {
        self.rooms.iter().map(Self::locked)
    }

    fn locked(rooms: &Mutex<Rooms>) -> std::sync::MutexGuard<'_, Rooms> {
        rooms
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Wakes every local stream to look at the replica's rare signals (a drain, the stop,
    /// a lost presence lease, a changed list of revoked accounts): the count a stream
    /// compares on each wake-up ([`Hub::signals`]) moves, then every room's watch. A
    /// stream's loop thus waits on its client and its room's watch alone, and looks at
    /// the signals with one atomic load when it wakes.
    pub fn signal_all(&self) {
        self.signals.fetch_add(1, Ordering::SeqCst);
        for rooms in self.each() {
            for watched in rooms.values() {
                watched.sender.send_modify(|_| {});
            }
        }
    }

    /// How many times [`Hub::signal_all`] was called.
    pub fn signals(&self) -> u64 {
        self.signals.load(Ordering::Acquire)
    }

    /// A receiver woken whenever the room gets new events.
    pub fn watch(&self, room_id: &str) -> watch::Receiver<Wake> {
        let mut rooms = self.lock(room_id);
        if let Some(watched) = rooms.get(room_id) {
            return watched.sender.subscribe();
        }
        let (sender, receiver) = watch::channel(Wake::default());
        rooms.insert(
            room_id.into(),
            Watched {
                sender,
                state: None,
                stale: None,
            },
        );
        receiver
    }

    /// Forgets the room (and its state) if no stream watches it any more.
    pub fn release(&self, room_id: &str) {
        let mut rooms = self.lock(room_id);
        if rooms
            .get(room_id)
            .is_some_and(|watched| watched.sender.receiver_count() == 0)
        {
            rooms.remove(room_id);
        }
    }

    /// The room as this replica last committed it, with its version, if nothing newer was
    /// noticed since: a look at what [`Hub::take_cached`] would hand the next change (a
    /// guess to commit against: the version check decides).
    pub fn cached(&self, room_id: &str) -> Option<Held> {
        self.lock(room_id)
            .get(room_id)
            .and_then(|watched| watched.state.clone())
    }

    /// Takes the room as this replica last committed it for a change to start from: the
    /// change's commit leaves its own state here; a change that stores nothing leaves
    /// none, and the next one loads the room. Not copied when the change that committed
    /// it has let go of it (the usual case: a change takes a room some time after the
    /// last one).
    pub fn take_cached(&self, room_id: &str) -> Option<Loaded> {
        let held = self
            .lock(room_id)
            .get_mut(room_id)
            .and_then(|watched| watched.state.take())?;
        Some(Loaded {
            room: Arc::try_unwrap(held.room).unwrap_or_else(|shared| Room::clone(&shared)),
            version: held.version,
            tail: held.tail,
        })
    }

    /// Drops the room's state (a commit against it found a newer version).
    pub fn forget_state(&self, room_id: &str) {
        if let Some(watched) = self.lock(room_id).get_mut(room_id) {
            watched.state = None;
            watched.stale = None;
        }
    }

    /// Brings the state this replica held before another replica's commits up to them,
    /// so that its next change to the room need not load it: `after` holds the events
    /// read after seq `from` with, when they were all stored by plain plays, the room's
    /// version and those plays (read in one step). Done only when the held state is
    /// within the events read, every change since it was one of those plays (one version
    /// each), they replay onto it to the last event read, and no commit of this replica
    /// to the room is in progress; otherwise the next change loads the room, as before.
    /// The store's compare-and-set stays the authority. Whether it was brought up.
    pub fn refresh(&self, room_id: &str, from: u64, after: &EventsAfter) -> bool {
        let Some(plain) = after.plain.as_ref().filter(|_| !after.closed) else {
            return false;
        };
        let end = from + after.events.len() as u64;
        let mut rooms = self.lock(room_id);
        let Some(watched) = rooms.get_mut(room_id) else {
            return false;
        };
        if watched.state.is_some() || watched.sender.borrow().in_flight > 0 {
            return false;
        }
        let Some(stale) = watched.stale.take() else {
            return false;
        };
        let held = stale.room.seq;
        // Within the events read: no snapshot after it (the store answers plain plays
        // only when the snapshot is at or before `from`).
        if held < from || held >= end {
            return false;
        }
        let plays: Vec<_> = plain
            .plays
            .iter()
            .filter(|(seq, _)| *seq > held)
            .map(|(_, action)| action)
            .collect();
        if stale.version + plays.len() as u64 != plain.version {
            return false;
        }
        let mut room = Room::clone(&stale.room);
        if plays.iter().any(|action| room.replay(action).is_err()) || room.seq != end {
            return false;
        }
        watched.state = Some(Held {
            room: Arc::new(room),
            version: plain.version,
            tail: stale.tail + plays.len(),
        });
        true
    }

    /// Rooms whose state is held here.
    pub fn cached_rooms(&self) -> usize {
        self.each()
            .map(|rooms| {
                rooms
                    .values()
                    .filter(|watched| watched.state.is_some())
                    .count()
            })
            .sum()
    }

    /// Wakes the room's streams (`seq` 0: all of them, see [`Notice`]). A notice that
    /// comes while this replica commits to the room waits for that commit to finish (it
    /// is most likely the commit's own notice, back through Redis, and the commit's
    /// events are then delivered from the watch instead of read back).
    pub fn notify(&self, room_id: &str, seq: u64) {
        self.wake(room_id, seq, true);
    }

    fn wake(&self, room_id: &str, seq: u64, may_wait: bool) {
        if room_id == "*" {
            self.notify_all();
            return;
        }
        if let Some(watched) = self.lock(room_id).get_mut(room_id) {
            if watched
                .state
                .as_ref()
                .is_some_and(|held| seq == 0 || seq > held.room.seq)
            {
                // The room changed after the state held here: kept aside, to be brought
                // up to the change if it was plain plays (a seq 0 notice says nothing).
                let held = watched.state.take();
                watched.stale = if seq == 0 { None } else { held };
            }
            watched.sender.send_if_modified(|wake| {
                if seq == 0 {
                    wake.epoch += 1;
                    true
                } else if seq <= wake.seq {
                    // Announced already (the local notice came first): nobody wakes.
                    false
                } else if may_wait && wake.in_flight > 0 {
                    wake.deferred = wake.deferred.max(seq);
                    false
                } else {
                    wake.seq = seq;
                    true
                }
            });
        }
    }

    /// Marks a commit of this replica to the room as in progress until the returned
    /// guard is dropped or [`InFlight::committed`] is called.
    pub fn commit_started(self: &Arc<Self>, room_id: &str) -> InFlight {
        let counted = self.lock(room_id).get(room_id).is_some_and(|watched| {
            watched.sender.send_if_modified(|wake| {
                wake.in_flight += 1;
                false
            });
            true
        });
        InFlight {
            hub: Arc::clone(self),
            room_id: room_id.into(),
            counted,
            done: false,
        }
    }

    /// A commit made on this replica, outside [`Hub::commit_started`]: its events are
    /// announced and kept on the room's watch, so its local streams need not read them
    /// back. No events: like a notice with seq 0.
    pub fn committed(&self, room_id: &str, batch: &Batch) {
        self.finish(room_id, false, Stored::of(batch), None);
    }

    fn finish(&self, room_id: &str, counted: bool, stored: Stored, state: Option<Held>) {
        let mut rooms = self.lock(room_id);
        let Some(watched) = rooms.get_mut(room_id) else {
            return;
        };
        if let Some(state) = state {
            // A notice of a later seq that came during the commit: the room moved on.
            let newer = watched.sender.borrow().deferred > state.room.seq;
            let closed = state.room.status == crate::room::Status::Closed;
            watched.state = (!newer && !closed).then_some(state);
            watched.stale = None;
        }
        watched.sender.send_if_modified(|wake| {
            if counted {
                wake.in_flight = wake.in_flight.saturating_sub(1);
            }
            let mut target = if wake.in_flight == 0 {
                std::mem::take(&mut wake.deferred)
            } else {
                0
            };
            let mut changed = false;
            match stored {
                Stored::Nothing => {}
                Stored::NoEvents => {
                    // A change without events (the room closed): every stream looks.
                    wake.epoch += 1;
                    changed = true;
                }
                Stored::Events(batch) => {
                    target = target.max(batch.last_seq());
                    // Commits of one room may finish here out of order (a timer and a
                    // play): keep the batches sorted by seq.
                    let first_seq = batch.first_seq;
                    let at = wake
                        .recent
                        .iter()
                        .rposition(|held| held.first_seq < first_seq)
                        .map_or(0, |i| i + 1);
                    if wake
                        .recent
                        .get(at)
                        .is_none_or(|held| held.first_seq != first_seq)
                    {
                        // Only the room's latest commit keeps its events' encodings.
                        let latest = at == wake.recent.len();
                        if !latest {
                            batch.shared.clear();
                        } else if let Some(before) = wake.recent.back() {
                            before.shared.clear();
                        }
                        wake.recent.insert(at, batch);
                    }
                    while wake.recent.len() > RECENT_COMMITS {
                        wake.recent.pop_front();
                    }
                }
            }
            if target > wake.seq {
                wake.seq = target;
                changed = true;
            }
            // Otherwise announced already (the notice through Redis came first): the
            // streams woke for it and read it.
            changed
        });
    }

    /// Wakes every local stream (after missed notices).
    pub fn notify_all(&self) {
        for mut rooms in self.each() {
            for watched in rooms.values_mut() {
                watched.state = None;
                watched.stale = None;
                watched.sender.send_modify(|wake| wake.epoch += 1);
            }
        }
    }

    /// Number of rooms watched here.
    pub fn rooms(&self) -> usize {
        self.each().map(|rooms| rooms.len()).sum()
    }

    /// The rooms watched here on the `shards` marked, each with its announced seq.
    fn rooms_of(&self, shards: &[bool; SHARDS as usize]) -> Vec<(Arc<str>, u64)> {
        let mut out = Vec::new();
        for rooms in self.each() {
            out.extend(
                rooms
                    .iter()
                    .filter(|(id, _)| shards[shard_of(id) as usize])
                    .map(|(id, watched)| (Arc::clone(id), watched.sender.borrow().seq)),
            );
        }
        out
    }

    /// A notice from the store: counted for its shard, then the room's streams woken.
    fn hear(&self, notice: &Notice) {
        if &*notice.room_id != "*" {
            self.heard[shard_of(&notice.room_id) as usize].fetch_add(1, Ordering::Relaxed);
        }
        self.notify(&notice.room_id, notice.seq);
    }

    /// How many notices each shard's channel has brought so far.
    fn heard_counts(&self) -> [u64; SHARDS as usize] {
        std::array::from_fn(|shard| self.heard[shard].load(Ordering::Relaxed))
    }

    /// The safety net under lost notices (pub/sub delivers at most once): every
    /// `period`, reads the last seq and status of the rooms watched here whose shard's
    /// channel was silent during the period, in one round trip per thousand rooms, and
    /// wakes the streams of rooms that moved on unannounced or closed; every
    /// `FULL_RESYNC_EVERY`th period it reads every room's.
    ///
    /// A channel that brought a notice cannot have lost an earlier one unheard: notices
    /// come in order on one connection, and a connection that breaks (or a slot that
    /// moves) resubscribes and wakes every stream (`PubSubEvent::Resubscribed`). What the
    /// resync is for is the subscription that dies without a word — every channel then
    /// falls silent and every room is read, as before. A busy replica thus reads nothing
    /// between full periods (the reads queued its plays' commits behind them: at 40,000
    /// paced streams this halved the p99, docs/performance.md), and idle streams cost
    /// nothing else.
    pub async fn run_resync(
        self: Arc<Self>,
        store: Arc<dyn RoomStore>,
        period: Duration,
        shutdown: CancellationToken,
    ) {
        let mut tick = tokio::time::interval(period);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        tick.reset();
        let mut before = self.heard_counts();
        for period in 1u64.. {
            tokio::select! {
                () = shutdown.cancelled() => return,
                _ = tick.tick() => {}
            }
            let heard = self.heard_counts();
            let silent = silent_shards(&before, &heard, period % FULL_RESYNC_EVERY == 0);
            before = heard;
            let rooms = self.rooms_of(&silent);
            for chunk in rooms.chunks(1000) {
                let ids: Vec<Arc<str>> = chunk.iter().map(|(id, _)| Arc::clone(id)).collect();
                let heads = match store.room_heads(&ids).await {
                    Ok(heads) => heads,
                    Err(err) => {
                        tracing::warn!(error = %err, "cannot re-check rooms");
                        continue;
                    }
                };
                for ((id, announced), head) in chunk.iter().zip(heads) {
                    match head {
                        Some(head) if !head.closed && head.seq <= *announced => {}
                        // Not held back by commits in progress: this is the safety net.
                        Some(head) if !head.closed => self.wake(id, head.seq, false),
                        // Closed or gone: every stream looks (and ends).
                        _ => self.notify(id, 0),
                    }
                }
            }
        }
    }

    /// Delivers the store's notices until `shutdown`.
    pub async fn run(
        self: Arc<Self>,
        mut notices: broadcast::Receiver<Notice>,
        shutdown: CancellationToken,
    ) {
        loop {
            let notice = tokio::select! {
                () = shutdown.cancelled() => return,
                notice = notices.recv() => notice,
            };
            match notice {
                Ok(notice) => self.hear(&notice),
                Err(broadcast::error::RecvError::Lagged(missed)) => {
                    tracing::warn!(missed, "notices lagged; waking every stream");
                    self.notify_all();
                }
                Err(broadcast::error::RecvError::Closed) => return,
            }
        }
    }
}

/// The shards whose rooms the resync reads: those whose channel brought nothing between
/// the counts `before` and `now`, or all of them (`all`).
fn silent_shards(
    before: &[u64; SHARDS as usize],
    now: &[u64; SHARDS as usize],
    all: bool,
) -> [bool; SHARDS as usize] {
    std::array::from_fn(|shard| all || before[shard] == now[shard])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replica::shared_bytes::SharedBytes;
    use crate::room::events::{LogEvent, StoredEvent};

    fn events(n: usize) -> Arc<[StoredEvent]> {
        (0..n)
            .map(|i| StoredEvent {
                at_ms: i as i64,
                event: LogEvent::Chat { seat: 0, phrase: 1 },
            })
            .collect()
    }

    /// A commit made outside `commit_started`, as the hub's callers made it with its
    /// first seq, events and whether it closed the room.
    fn local(hub: &Hub, room_id: &str, first_seq: u64, events: &Arc<[StoredEvent]>, closed: bool) {
        hub.committed(
            room_id,
            &Batch {
                first_seq,
                events: Arc::clone(events),
                closed,
                shared: Arc::default(),
            },
        );
    }

    /// [`InFlight::committed`] from the parts of a [`Committed`]: its first seq, events,
    /// closing, the room it left (with its tail) and the events' shared encodings.
    trait CommitParts {
        fn committed_as(
            self,
            first_seq: u64,
            events: &Arc<[StoredEvent]>,
            closed: bool,
            state: Held,
            shared: &Arc<SharedBytes>,
        );
    }

    impl CommitParts for InFlight {
        fn committed_as(
            self,
            first_seq: u64,
            events: &Arc<[StoredEvent]>,
            closed: bool,
            state: Held,
            shared: &Arc<SharedBytes>,
        ) {
            let committed = Committed {
                room: state.room,
                version: state.version,
                batch: Batch {
                    first_seq,
                    events: Arc::clone(events),
                    closed,
                    shared: Arc::clone(shared),
                },
            };
            self.committed(&committed, state.tail);
        }
    }

    fn held(wake: &Wake, delivered: u64) -> Vec<(u64, usize)> {
        wake.local_after(delivered)
            .iter()
            .map(|(batch, skip)| (batch.first_seq, *skip))
            .collect()
    }

    #[test]
    fn local_commits_are_held_in_order_and_used_only_without_a_gap() {
        let hub = Hub::default();
        let mut watch = hub.watch("r");
        // Finished out of order: 4..=5 before 1..=3, then 8 (6..=7 came from elsewhere).
        local(&hub, "r", 4, &events(2), false);
        local(&hub, "r", 1, &events(3), false);
        hub.notify("r", 7);
        local(&hub, "r", 8, &events(1), true);
        let wake = watch.borrow_and_update().clone();
        assert_eq!(wake.seq, 8);
        let firsts: Vec<u64> = wake.recent.iter().map(|b| b.first_seq).collect();
        assert_eq!(firsts, [1, 4, 8]);
        assert_eq!(held(&wake, 0), [(1, 0), (4, 0)]);
        assert_eq!(held(&wake, 2), [(1, 2), (4, 0)]);
        assert_eq!(held(&wake, 5), []);
        assert_eq!(held(&wake, 7), [(8, 0)]);
        assert!(wake.recent[2].closed);
        // An old commit announced already wakes nobody.
        local(&hub, "r", 6, &events(1), false);
        assert!(!watch.has_changed().unwrap());
    }

    #[test]
    fn a_notice_during_a_local_commit_waits_for_it() {
        let hub = Arc::new(Hub::default());
        let mut watch = hub.watch("r");
        // The commit's own notice, back through Redis before the commit's answer.
        let in_flight = hub.commit_started("r");
        hub.notify("r", 2);
        assert!(!watch.has_changed().unwrap());
        in_flight.committed_as(1, &events(2), false, state(2, 1), &Arc::default());
        let wake = watch.borrow_and_update().clone();
        assert_eq!(wake.seq, 2);
        assert_eq!(held(&wake, 0), [(1, 0)]);
        // Another replica's commit noticed meanwhile, ours refused: announced at the end.
        let in_flight = hub.commit_started("r");
        hub.notify("r", 3);
        assert!(!watch.has_changed().unwrap());
        drop(in_flight);
        assert!(watch.has_changed().unwrap());
        let wake = watch.borrow_and_update().clone();
        assert_eq!(wake.seq, 3);
        assert_eq!(held(&wake, 2), []);
        // Without a commit in progress a notice wakes at once.
        hub.notify("r", 4);
        assert_eq!(watch.borrow_and_update().seq, 4);
    }

    fn state(seq: u64, version: u64) -> Held {
        let timing = crate::room::timing::Timing {
            turn_ms: 1,
            grace_ms: 1,
            bot_delay_ms: 1,
            rematch_ms: 1,
            turn_slack_ms: 0,
        };
        let mut room = crate::room::Room::new(
            "r".into(),
            basra_engine::Settings::default(),
            Vec::new(),
            false,
            false,
            crate::room::Visibility::Private,
            timing,
            0,
        );
        room.seq = seq;
        Held {
            room: Arc::new(room),
            version,
            tail: 0,
        }
    }

    fn held_version(hub: &Hub) -> Option<u64> {
        hub.cached("r").map(|loaded| loaded.version)
    }

    #[test]
    fn the_committed_state_is_held_until_the_room_moves_on_elsewhere() {
        let hub = Arc::new(Hub::default());
        // Not watched: nothing is held.
        hub.commit_started("r")
            .committed_as(1, &events(1), false, state(1, 1), &Arc::default());
        assert_eq!(held_version(&hub), None);
        let watch = hub.watch("r");
        hub.commit_started("r")
            .committed_as(2, &events(1), false, state(2, 2), &Arc::default());
        assert_eq!(held_version(&hub), Some(2));
        // Its own notice, back through Redis, keeps it; so does the resync's.
        hub.notify("r", 2);
        assert_eq!(held_version(&hub), Some(2));
        // Another replica's commit drops it.
        hub.notify("r", 3);
        assert_eq!(held_version(&hub), None);
        // A change without events (seq 0) drops it too.
        hub.commit_started("r")
            .committed_as(4, &events(1), false, state(4, 4), &Arc::default());
        assert_eq!(held_version(&hub), Some(4));
        hub.notify("r", 0);
        assert_eq!(held_version(&hub), None);
        // A later commit noticed while ours was in flight: ours is not kept.
        let in_flight = hub.commit_started("r");
        hub.notify("r", 9);
        in_flight.committed_as(5, &events(1), false, state(5, 5), &Arc::default());
        assert_eq!(held_version(&hub), None);
        // Ours noticed during its own commit: kept.
        let in_flight = hub.commit_started("r");
        hub.notify("r", 10);
        in_flight.committed_as(10, &events(1), false, state(10, 7), &Arc::default());
        assert_eq!(held_version(&hub), Some(7));
        // A stale state found by a commit, lost notices, a closed room: dropped.
        hub.forget_state("r");
        assert_eq!(held_version(&hub), None);
        hub.commit_started("r")
            .committed_as(11, &events(1), false, state(11, 8), &Arc::default());
        hub.notify_all();
        assert_eq!(held_version(&hub), None);
        let mut closed = state(12, 9);
        Arc::make_mut(&mut closed.room).status = crate::room::Status::Closed;
        hub.commit_started("r")
            .committed_as(12, &events(1), true, closed, &Arc::default());
        assert_eq!(held_version(&hub), None);
        // It goes with the room's last stream.
        hub.commit_started("r")
            .committed_as(13, &events(1), false, state(13, 10), &Arc::default());
        assert_eq!(hub.cached_rooms(), 1);
        drop(watch);
        hub.release("r");
        assert_eq!(hub.cached_rooms(), 0);
        assert_eq!(held_version(&hub), None);
    }

    #[test]
    fn a_change_takes_the_held_state_and_its_commit_leaves_the_next() {
        let hub = Arc::new(Hub::default());
        let _watch = hub.watch("r");
        hub.commit_started("r")
            .committed_as(2, &events(1), false, state(2, 2), &Arc::default());
        let taken = hub.take_cached("r").map(|loaded| loaded.version);
        assert_eq!(taken, Some(2));
        // Taken, not copied: a concurrent change finds none and loads the room.
        assert_eq!(held_version(&hub), None);
        assert!(hub.take_cached("r").is_none());
        // The change's commit leaves its state for the next one.
        hub.commit_started("r")
            .committed_as(3, &events(1), false, state(3, 3), &Arc::default());
        assert_eq!(held_version(&hub), Some(3));
        // A change that stores nothing leaves none.
        assert!(hub.take_cached("r").is_some());
        drop(hub.commit_started("r"));
        assert_eq!(held_version(&hub), None);
    }

    #[test]
    fn only_the_latest_commits_are_kept_and_only_for_watched_rooms() {
        let hub = Hub::default();
        local(&hub, "unwatched", 1, &events(1), false);
        assert_eq!(hub.rooms(), 0);
        let watch = hub.watch("r");
        for seq in 1..=20 {
            local(&hub, "r", seq, &events(1), false);
        }
        let wake = watch.borrow().clone();
        assert_eq!(wake.recent.len(), RECENT_COMMITS);
        assert_eq!(
            held(&wake, 20 - RECENT_COMMITS as u64).len(),
            RECENT_COMMITS
        );
        assert_eq!(held(&wake, 0), []);
    }

    /// Shared encodings are for the streams delivering a commit as it happens: only the
    /// room's latest commit keeps them.
    #[test]
    fn only_the_latest_commit_keeps_its_shared_encodings() {
        let hub = Arc::new(Hub::default());
        let watch = hub.watch("r");
        let commit = |first_seq: u64| {
            let shared: Arc<SharedBytes> = Arc::default();
            shared.get_or_encode(0, 1, || "bytes".into());
            hub.commit_started("r").committed_as(
                first_seq,
                &events(1),
                false,
                state(first_seq, first_seq),
                &shared,
            );
            shared
        };
        let first = commit(1);
        let third = commit(3);
        assert_eq!((first.kept(), third.kept()), (0, 1));
        // A commit that finishes after a later one is not the latest either.
        let second = commit(2);
        assert_eq!((second.kept(), third.kept()), (0, 1));
        let fourth = commit(4);
        assert_eq!((third.kept(), fourth.kept()), (0, 1));
        let firsts: Vec<u64> = watch.borrow().recent.iter().map(|b| b.first_seq).collect();
        assert_eq!(firsts, [1, 2, 3, 4]);
    }

    /// The resync reads the rooms of the shards whose channel was silent since its last
    /// period, and every room on a full period; the wildcard notice of a resubscription
    /// counts for no shard.
    #[test]
    fn the_resync_reads_the_rooms_of_silent_shards() {
        let hub = Hub::default();
        let id = |shard: u32| {
            (0..)
                .map(|n| format!("room-{n}"))
                .find(|id| shard_of(id) == shard)
                .unwrap()
        };
        let (busy, quiet) = (id(3), id(11));
        let _watches = (hub.watch(&busy), hub.watch(&quiet));
        let before = hub.heard_counts();
        hub.hear(&Notice {
            room_id: busy.as_str().into(),
            seq: 4,
        });
        hub.hear(&Notice {
            room_id: "*".into(),
            seq: 0,
        });
        let now = hub.heard_counts();
        let read = |all| {
            let mut rooms: Vec<String> = hub
                .rooms_of(&silent_shards(&before, &now, all))
                .into_iter()
                .map(|(id, _)| id.to_string())
                .collect();
            rooms.sort();
            rooms
        };
        assert_eq!(read(false), vec![quiet.clone()]);
        let mut both = vec![busy.clone(), quiet.clone()];
        both.sort();
        assert_eq!(read(true), both);
        // The heard room's announced seq is what the resync compares with.
        assert!(
            hub.rooms_of(&[true; SHARDS as usize])
                .contains(&(Arc::from(busy.as_str()), 4))
        );
    }

    /// A signal wakes the streams of every room, over all the locks, and moves the count
    /// they compare; it announces nothing and drops no held state, so a stream that wakes
    /// for it reads nothing.
    #[test]
    fn a_signal_wakes_every_room_and_moves_the_count() {
        let hub = Hub::default();
        let ids: Vec<String> = std::iter::once("r".to_owned())
            .chain((1..100).map(|n| format!("room-{n}")))
            .collect();
        let mut watches: Vec<_> = ids.iter().map(|id| hub.watch(id)).collect();
        assert_eq!(hub.rooms(), 100);
        hub.finish(&ids[0], false, Stored::Nothing, Some(state(5, 7)));
        let before = hub.signals();
        hub.signal_all();
        assert_eq!(hub.signals(), before + 1);
        for watch in &mut watches {
            assert!(watch.has_changed().unwrap());
            let wake = watch.borrow_and_update();
            assert!(!wake.news_for(0, 0));
        }
        assert_eq!(held_version(&hub), Some(7));
        // Nothing moves without a signal.
        assert!(watches.iter().all(|watch| !watch.has_changed().unwrap()));
    }
}
