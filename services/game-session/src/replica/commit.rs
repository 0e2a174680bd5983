//! [`Replica::mutate`], the one way a room changes: load (or take the state this replica
//! last committed, [`Hub::take_cached`](super::hub::Hub::take_cached)), apply, store with
//! a compare-and-set on the version, retry on conflicts; and what a commit hands on.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::error::{GameError, Result};
use crate::metrics::EndLabel;
use crate::room::events::{LogEvent, StoredEvent};
use crate::room::record::encoded_record;
use crate::room::{Reject, Room};
use crate::store::{Commit, CommitOutcome, Loaded, OutboxRecord, move_key, plain_play};

use super::Replica;
use super::shared_bytes::SharedBytes;
use super::timers;
use crate::room::timing::now_ms;

/// How many times a change is tried on version conflicts before giving up.
const MAX_ATTEMPTS: u32 = 32;
/// The first retry waits up to this long; each next one up to twice as long ...
const BACKOFF_BASE: Duration = Duration::from_millis(1);
/// ... but never more than this.
const BACKOFF_CAP: Duration = Duration::from_millis(50);

/// How long to wait before retry number `attempt` (1 for the first retry) after a
/// version conflict: "full jitter", uniformly random up to an exponentially growing,
/// capped ceiling, so writers that collided spread out instead of colliding again.
/// `unit` is a random number in [0, 1).
pub fn conflict_backoff(attempt: u32, unit: f64) -> Duration {
    let ceiling = BACKOFF_BASE
        .saturating_mul(1u32 << attempt.saturating_sub(1).min(16))
        .min(BACKOFF_CAP);
    ceiling.mul_f64(unit.clamp(0.0, 1.0))
}

/// What a change does to a room, as far as storing it goes: whether the store may keep
/// it as a plain play (`store::plain_play`) instead of writing the whole room.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeKind {
    /// Any change: the store writes the whole room.
    Any,
    /// `Room::play` and nothing else: when it is a plain play, the store may keep the
    /// play instead of the whole room, and replay it on load.
    PlayAlone,
}

/// One change to a room as this replica stored it: made by [`Replica::mutate`], handed
/// to the hub (which keeps its events for the room's other local streams, and the room
/// for the next change) and to the stream or call that made the change.
#[derive(Debug, Clone)]
pub struct Committed {
    /// The room after the change (shared with the hub, which holds it for the next
    /// change: drop it soon, or that change copies it).
    pub room: Arc<Room>,
    /// Its version.
    pub version: u64,
    /// The events the change stored, the last with seq `room.seq`.
    pub batch: Batch,
}

/// The events of one commit made on this replica, as stored: the part of a [`Committed`]
/// that a room's watch keeps for its local streams (without the room, which the next
/// change takes without a copy only once nobody else holds it).
#[derive(Debug, Clone)]
pub struct Batch {
    /// The seq of the first event.
    pub first_seq: u64,
    /// The events, in order (seqs `first_seq..`).
    pub events: Arc<[StoredEvent]>,
    /// Whether the room was closed by this commit.
    pub closed: bool,
    /// The events' encodings, shared by the room's streams (kept by the latest commit
    /// only).
    pub shared: Arc<SharedBytes>,
}

impl Batch {
    /// The seq of the last event.
    pub fn last_seq(&self) -> u64 {
        self.first_seq + self.events.len() as u64 - 1
    }
}

/// The outcome of [`Replica::mutate`].
#[derive(Debug)]
pub enum Mutation<T> {
    /// Stored; the room as it is now and its version.
    Done {
        /// What the change returned.
        value: T,
        /// What was stored.
        committed: Committed,
    },
    /// The change was refused; nothing was stored.
    Rejected(Reject),
    /// The client move was applied before, answered by this seq.
    AlreadyApplied(u64),
}

impl Replica {
    /// Applies `change` to the room and stores the result atomically, retrying on version
    /// conflicts. With `client_move` (seat, id), the first event `change` makes answers
    /// that move id, and a move already applied is answered instead of applied.
    pub async fn mutate<T>(
        self: &Arc<Self>,
        room_id: &str,
        client_move: Option<(u8, &str)>,
        change: impl FnMut(&mut Room, i64) -> Result<T, Reject>,
    ) -> Result<Mutation<T>> {
        self.mutate_from(room_id, None, client_move, ChangeKind::Any, change)
            .await
    }

    /// [`Replica::mutate`] for a change that is `Room::play` alone: when it is a plain play
    /// (`store::plain_play`), the store may keep the play instead of the whole room, and
    /// replay it on load. `change` must do nothing else to the room, or a load would miss it.
    pub async fn mutate_play(
        self: &Arc<Self>,
        room_id: &str,
        client_move: Option<(u8, &str)>,
        change: impl FnMut(&mut Room, i64) -> Result<(), Reject>,
    ) -> Result<Mutation<()>> {
        self.mutate_from(room_id, None, client_move, ChangeKind::PlayAlone, change)
            .await
    }

    /// [`Replica::mutate`] starting from `loaded`, a state of the room just read (a join
    /// loads the room to find the seat, then connects it without reading it again). The
    /// newer of it and the state this replica last committed is tried first.
    pub async fn mutate_from<T>(
        self: &Arc<Self>,
        room_id: &str,
        loaded: Option<Loaded>,
        client_move: Option<(u8, &str)>,
        kind: ChangeKind,
        mut change: impl FnMut(&mut Room, i64) -> Result<T, Reject>,
    ) -> Result<Mutation<T>> {
        let key = client_move
            .filter(|(_, id)| !id.is_empty())
            .map(|(seat, id)| move_key(seat, id));
        // The state this replica last committed, if it still holds it (or the one just
        // read): tried first, and at most once (a stale one fails the commit's version
        // check, and a refusal is confirmed against the stored room).
        let mut cached = match (self.hub.take_cached(room_id), loaded) {
            (Some(held), Some(read)) if held.version >= read.version => Some(held),
            (held, read) => read.or(held),
        };
        let mut conflicts = 0;
        for _ in 0..MAX_ATTEMPTS + 1 {
            let from_cache = cached.is_some();
            let loaded = match cached.take() {
                Some(loaded) => loaded,
                None => {
                    self.metrics.room_loads.inc();
                    self.store
                        .load(room_id)
                        .await?
                        .ok_or_else(|| GameError::RoomNotFound(room_id.to_owned()))?
                }
            };
            let mut room = loaded.room;
            let first_seq = room.seq + 1;
            let now = now_ms();
            let value = match change(&mut room, now) {
                Ok(value) => value,
                Err(_) if from_cache => continue,
                Err(reject) => return Ok(Mutation::Rejected(reject)),
            };
            let events = room.take_pending();
            let actions = room.take_pending_actions();
            let ended = events
                .iter()
                .any(|e| matches!(e.event, LogEvent::MatchEnded { .. }));
            let outbox = if ended {
                // The one read of the whole action log, at the match's end. A commit by
                // someone else since our load fails the version check below, so the log
                // read here is the one this change extends.
                let mut all = if actions.reset {
                    Vec::new()
                } else {
                    self.store.match_actions(room_id).await?
                };
                all.extend(actions.actions.iter().cloned());
                Some(OutboxRecord {
                    payload: encoded_record(&room, &all),
                    trace_context: basra_platform::telemetry::current_traceparent(),
                })
            } else {
                None
            };
            let plain_play = kind == ChangeKind::PlayAlone
                && outbox.is_none()
                && loaded.tail < self.store.tail_limit()
                && plain_play::is_plain_play(&events, &actions);
            let in_flight = self.hub.commit_started(room_id);
            let started = Instant::now();
            let outcome = self
                .store
                .commit(Commit {
                    room: &room,
                    expected_version: loaded.version,
                    events: &events,
                    actions: &actions,
                    applied_move: key.clone().map(|key| (key, first_seq)),
                    plain_play,
                    outbox,
                })
                .await;
            self.metrics
                .commit_seconds
                .observe(started.elapsed().as_secs_f64());
            match outcome? {
                CommitOutcome::Committed { version } => {
                    self.count_committed(&events);
                    // The room's other local streams get the events from here.
                    let events: Arc<[StoredEvent]> = events.into();
                    debug_assert_eq!(first_seq + events.len() as u64, room.seq + 1);
                    let batch = Batch {
                        first_seq: room.seq + 1 - events.len() as u64,
                        events,
                        closed: room.status == crate::room::Status::Closed,
                        shared: Arc::default(),
                    };
                    let committed = Committed {
                        room: Arc::new(room),
                        version,
                        batch,
                    };
                    in_flight.committed(&committed, if plain_play { loaded.tail + 1 } else { 0 });
                    timers::schedule(self, &committed.room);
                    return Ok(Mutation::Done { value, committed });
                }
                CommitOutcome::AlreadyApplied { seq } => return Ok(Mutation::AlreadyApplied(seq)),
                CommitOutcome::Conflict if from_cache => {
                    // The state held here was stale: not contention, reload at once.
                    self.hub.forget_state(room_id);
                    self.metrics.stale_states.inc();
                }
                CommitOutcome::Conflict => {
                    self.metrics.cas_conflicts.inc();
                    conflicts += 1;
                    if conflicts == MAX_ATTEMPTS {
                        break;
                    }
                    tokio::time::sleep(conflict_backoff(conflicts, rand::random::<f64>())).await;
                }
            }
        }
        self.metrics.contention_failures.inc();
        Err(GameError::Contention(room_id.to_owned()))
    }

    /// Counts the plays and match ends of a committed change.
    fn count_committed(&self, events: &[StoredEvent]) {
        for event in events {
            match &event.event {
                LogEvent::CardPlayed { .. } => {
                    self.metrics.plays.inc();
                }
                LogEvent::MatchEnded { winner_side, .. } => {
                    let result = if winner_side.is_some() {
                        "won"
                    } else {
                        "drawn"
                    };
                    self.metrics
                        .matches_ended
                        .get_or_create(&EndLabel { result })
                        .inc();
                }
                _ => {}
            }
        }
    }

    /// Creates a room (`Conflict` answers `false`: it existed).
    pub async fn create(self: &Arc<Self>, room: &mut Room) -> Result<bool> {
        let events = room.take_pending();
        let actions = room.take_pending_actions();
        let started = Instant::now();
        let outcome = self
            .store
            .commit(Commit {
                room,
                expected_version: 0,
                events: &events,
                actions: &actions,
                applied_move: None,
                outbox: None,
                plain_play: false,
            })
            .await;
        self.metrics
            .commit_seconds
            .observe(started.elapsed().as_secs_f64());
        match outcome? {
            CommitOutcome::Committed { .. } => {
                self.metrics.rooms_created.inc();
                timers::schedule(self, room);
                Ok(true)
            }
            _ => Ok(false),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conflict_backoff_grows_with_jitter_up_to_the_cap() {
        // The ceiling doubles from 1 ms and stops at the cap.
        assert_eq!(
            conflict_backoff(1, 0.999_999),
            Duration::from_nanos(999_999)
        );
        assert_eq!(conflict_backoff(3, 0.5), Duration::from_millis(2));
        assert_eq!(conflict_backoff(6, 0.5), Duration::from_millis(16));
        assert_eq!(conflict_backoff(7, 1.0), BACKOFF_CAP);
        assert_eq!(conflict_backoff(31, 1.0), BACKOFF_CAP);
        // Jitter: the whole range from nothing to the ceiling.
        assert_eq!(conflict_backoff(5, 0.0), Duration::ZERO);
        assert!(conflict_backoff(5, 0.25) < conflict_backoff(5, 0.75));
    }
}
