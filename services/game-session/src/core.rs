//! The replica's shared machinery: the store, the fan-out hub, the admission count, and
//! [`Core::mutate`], the one way a room changes (load, apply, compare-and-set, retry).

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::time::Duration;

use basra_engine::Seed;
use rand::RngCore as _;
use tokio_util::sync::CancellationToken;

use crate::error::{GameError, Result};
use crate::events::LogEvent;
use crate::hub::Hub;
use crate::record::encoded_record;
use crate::room::{Reject, Room};
use crate::settings::Timing;
use crate::store::{Commit, CommitOutcome, RoomStore, move_key};

/// How many times a change is retried on version conflicts before giving up.
const MAX_ATTEMPTS: usize = 64;

/// What the service needs to know, already validated (tests build it directly).
#[derive(Debug, Clone)]
pub struct ServiceConfig {
    /// This replica's name.
    pub replica: String,
    /// Timings given to new rooms.
    pub timing: Timing,
    /// Most open Play streams on this replica.
    pub max_streams: usize,
    /// How long a new stream may take to send its Join.
    pub join_timeout: Duration,
    /// How often the timer loop looks for due rooms.
    pub timer_poll: Duration,
    /// How often an idle stream re-checks its room's log.
    pub resync: Duration,
}

/// The outcome of [`Core::mutate`].
#[derive(Debug)]
pub enum Mutation<T> {
    /// Stored; the room as it is now and its version.
    Done {
        /// What the change returned.
        value: T,
        /// The room after the change.
        room: Box<Room>,
        /// Its version.
        version: u64,
    },
    /// The change was refused; nothing was stored.
    Rejected(Reject),
    /// The client move was applied before, answered by this seq.
    AlreadyApplied(u64),
}

/// The replica's state.
pub struct Core {
    /// Where rooms live.
    pub store: Arc<dyn RoomStore>,
    /// Local fan-out.
    pub hub: Arc<Hub>,
    /// Settings.
    pub config: ServiceConfig,
    /// Open Play streams on this replica.
    pub open_streams: AtomicUsize,
    /// Cancelled when the replica stops: streams end with UNAVAILABLE.
    pub shutdown: CancellationToken,
    /// Cancelled by `DrainReplica`.
    pub drain: CancellationToken,
    /// The drain deadline (Unix ms) once draining.
    pub drain_deadline_ms: AtomicI64,
}

impl std::fmt::Debug for Core {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Core")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

/// Now, in Unix milliseconds.
pub fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

/// A fresh seed from the operating system's CSPRNG-seeded generator.
pub fn fresh_seed() -> Seed {
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    Seed(bytes)
}

/// A fresh match id.
pub fn fresh_id() -> String {
    uuid::Uuid::now_v7().to_string()
}

impl Core {
    /// Applies `change` to the room and stores the result atomically, retrying on version
    /// conflicts. With `client_move` (seat, id), the first event `change` makes answers
    /// that move id, and a move already applied is answered instead of applied.
    pub async fn mutate<T>(
        self: &Arc<Self>,
        room_id: &str,
        client_move: Option<(u8, &str)>,
        mut change: impl FnMut(&mut Room, i64) -> Result<T, Reject>,
    ) -> Result<Mutation<T>> {
        let key = client_move
            .filter(|(_, id)| !id.is_empty())
            .map(|(seat, id)| move_key(seat, id));
        for _ in 0..MAX_ATTEMPTS {
            let loaded = self
                .store
                .load(room_id)
                .await?
                .ok_or_else(|| GameError::RoomNotFound(room_id.to_owned()))?;
            let mut room = loaded.room;
            let first_seq = room.seq + 1;
            let now = now_ms();
            let value = match change(&mut room, now) {
                Ok(value) => value,
                Err(reject) => return Ok(Mutation::Rejected(reject)),
            };
            let events = room.take_pending();
            let ended = events
                .iter()
                .any(|e| matches!(e.event, LogEvent::MatchEnded { .. }));
            let outbox = ended.then(|| encoded_record(&room));
            let outcome = self
                .store
                .commit(Commit {
                    room: &room,
                    expected_version: loaded.version,
                    events: &events,
                    applied_move: key.clone().map(|key| (key, first_seq)),
                    outbox,
                })
                .await?;
            match outcome {
                CommitOutcome::Committed { version } => {
                    self.hub.notify(room_id, room.seq);
                    self.schedule(room_id, room.next_deadline());
                    return Ok(Mutation::Done {
                        value,
                        room: Box::new(room),
                        version,
                    });
                }
                CommitOutcome::AlreadyApplied { seq } => return Ok(Mutation::AlreadyApplied(seq)),
                CommitOutcome::Conflict => continue,
            }
        }
        Err(GameError::Contention(room_id.to_owned()))
    }

    /// Creates a room (`Conflict` answers `false`: it existed).
    pub async fn create(self: &Arc<Self>, room: &mut Room) -> Result<bool> {
        let events = room.take_pending();
        let outcome = self
            .store
            .commit(Commit {
                room,
                expected_version: 0,
                events: &events,
                applied_move: None,
                outbox: None,
            })
            .await?;
        match outcome {
            CommitOutcome::Committed { .. } => {
                self.schedule(&room.id, room.next_deadline());
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    /// When a room's next deadline is close, fires it from here rather than waiting for
    /// the timer loop (bots with no delay play at once). The claim keeps it to one replica.
    pub fn schedule(self: &Arc<Self>, room_id: &str, deadline: Option<i64>) {
        let Some(at) = deadline else { return };
        let wait = at - now_ms();
        if wait > self.config.timer_poll.as_millis() as i64 {
            return;
        }
        let core = Arc::clone(self);
        let room_id = room_id.to_owned();
        tokio::spawn(async move {
            if wait > 0 {
                tokio::time::sleep(Duration::from_millis(wait as u64)).await;
            }
            if let Err(err) = core.fire(&room_id).await {
                tracing::warn!(room_id, error = %err, "timer failed");
            }
        });
    }

    /// Claims the room's due deadline and does what is due.
    pub async fn fire(self: &Arc<Self>, room_id: &str) -> Result<()> {
        let now = now_ms();
        let lease = 5_000;
        if !self.store.claim_due(room_id, now, lease).await? {
            return Ok(());
        }
        let outcome = self
            .mutate(room_id, None, |room, now| {
                if room.on_timer(now) {
                    Ok(())
                } else {
                    Err(Reject::new(
                        basra_proto::basra::game::v1::RejectCode::Unspecified,
                        "nothing due",
                    ))
                }
            })
            .await;
        match outcome {
            Ok(Mutation::Rejected(_)) => {
                // Nothing was due after all (another replica acted first): put the real
                // deadline back in place of the lease.
                if let Some(loaded) = self.store.load(room_id).await? {
                    self.store
                        .sync_deadline(room_id, loaded.version, loaded.room.next_deadline())
                        .await?;
                    self.schedule(room_id, loaded.room.next_deadline());
                }
                Ok(())
            }
            Ok(_) => Ok(()),
            Err(GameError::RoomNotFound(_)) => Ok(()),
            Err(err) => Err(err),
        }
    }

    /// The timer loop: fires due rooms until `shutdown`.
    pub async fn run_timers(self: Arc<Self>, shutdown: CancellationToken) {
        let mut tick = tokio::time::interval(self.config.timer_poll);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                () = shutdown.cancelled() => return,
                _ = tick.tick() => {}
            }
            let due = match self.store.due_rooms(now_ms(), 256).await {
                Ok(due) => due,
                Err(err) => {
                    tracing::warn!(error = %err, "cannot read due rooms");
                    continue;
                }
            };
            for room_id in due {
                if let Err(err) = self.fire(&room_id).await {
                    tracing::warn!(room_id, error = %err, "timer failed");
                }
            }
        }
    }

    /// Counts a new stream, or refuses it at capacity or while draining.
    pub fn admit(self: &Arc<Self>) -> Result<StreamPermit> {
        if self.drain.is_cancelled() || self.shutdown.is_cancelled() {
            return Err(GameError::Unavailable(
                "this replica is draining; reconnect elsewhere".into(),
            ));
        }
        let open = self.open_streams.fetch_add(1, Ordering::SeqCst);
        let permit = StreamPermit(Arc::clone(self));
        if open >= self.config.max_streams {
            return Err(GameError::Exhausted(format!(
                "this replica serves its maximum of {} streams; retry with backoff",
                self.config.max_streams
            )));
        }
        Ok(permit)
    }
}

/// One admitted stream; dropping it frees the slot.
#[derive(Debug)]
pub struct StreamPermit(Arc<Core>);

impl Drop for StreamPermit {
    fn drop(&mut self) {
        self.0.open_streams.fetch_sub(1, Ordering::SeqCst);
    }
}
