//! The replica's shared machinery: the store, the fan-out hub, the admission count, the
//! presence lease, and [`Core::mutate`], the one way a room changes (load, apply,
//! compare-and-set, retry).
//!
//! The presence lease: a replica that dies without ending its streams (a crash, a lost
//! node) leaves its players' seats connected in Redis. So each replica instance holds a
//! lease it refreshes every third of [`ServiceConfig::lease`], and records the seats it
//! connects under it ([`RoomStore::lease_add`]). The timer loop of every replica claims
//! expired leases and disconnects their seats, as the dead replica would have: the other
//! players see the disconnect, and the grace period runs from there. An instance that
//! finds its own lease swept (it stalled longer than the lease) ends its streams, which
//! resume, and continues under a new instance id.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use basra_engine::Seed;
use basra_platform::stream_limit::{self, AccountStream};
use rand::RngCore as _;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, watch};
use tokio_util::sync::CancellationToken;

use crate::error::{GameError, Result};
use crate::events::{LogEvent, StoredEvent};
use crate::hub::{Held, Hub};
use crate::metrics::{EndLabel, GameMetrics};
use crate::outbox::AccountsLink;
use crate::record::encoded_record;
use crate::room::{Reject, Room};
use crate::shared_bytes::SharedBytes;
use crate::store::{
    Commit, CommitOutcome, LeasedSeat, Loaded, OutboxRecord, RoomStore, move_key, plain_play,
};
use crate::timing::Timing;
use crate::walks::Walks;

/// How many times a change is tried on version conflicts before giving up.
const MAX_ATTEMPTS: u32 = 32;
/// Due rooms a replica's timer loop fires at once (each a task; a room waiting for a
/// store round trip or a hard bot's search holds up no other).
pub const TIMERS_IN_FLIGHT: usize = 64;
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

/// What the service needs to know, already validated (tests build it directly).
#[derive(Debug, Clone)]
pub struct ServiceConfig {
    /// This replica's name.
    pub replica: String,
    /// Timings given to new rooms.
    pub timing: Timing,
    /// Most open Play streams on this replica.
    pub max_streams: usize,
    /// The open Play and Watch streams of each account here, and their limits.
    pub streams_per_account: StreamsPerAccount,
    /// Most joins doing their Redis work at once on this replica; the others wait for a
    /// turn (see [`Core::join_turn`]).
    pub join_concurrency: usize,
    /// How long a new stream may take to send its Join.
    pub join_timeout: Duration,
    /// How often the timer loop looks for due rooms.
    pub timer_poll: Duration,
    /// How often the replica re-checks the last seq of every room it has streams on (a
    /// safety net under lost notices).
    pub resync: Duration,
    /// How long a replica's presence lease lasts without a refresh: after that, another
    /// replica disconnects the seats it served (see the module documentation).
    pub lease: Duration,
    /// The hard bot's budget and thinking slots (`[bots]`).
    pub bots: crate::bots::Bots,
    /// The banned and deleted accounts: refused at every call, their streams ended.
    pub revocations: basra_platform::revocation::Revocations,
}

impl ServiceConfig {
    /// How long a replica holds a shard walk without renewing it: ten timer polls (one
    /// second by default), at least half a second. A crashed replica's shards are walked
    /// again by the others within about this long, which the turn slack (one second by
    /// default) mostly absorbs.
    pub fn walk_lease(&self) -> Duration {
        (self.timer_poll * 10).clamp(Duration::from_millis(500), Duration::from_secs(5))
    }

    /// A new [`Walks`] for this replica: its name and a random part.
    pub fn walks(&self) -> Walks {
        Walks::new(
            format!("{}/{}", self.replica, uuid::Uuid::now_v7().simple()),
            self.walk_lease(),
        )
    }
}

/// The Play and Watch streams each account holds open on this replica (clones share the
/// counts), each kind refused past its limit.
#[derive(Debug, Clone)]
pub struct StreamsPerAccount {
    play: stream_limit::StreamsPerAccount,
    watch: stream_limit::StreamsPerAccount,
}

impl StreamsPerAccount {
    /// At most `play` Play and `watch` Watch streams per account.
    pub fn new(play: usize, watch: usize) -> StreamsPerAccount {
        StreamsPerAccount {
            play: stream_limit::StreamsPerAccount::new("Play", play),
            watch: stream_limit::StreamsPerAccount::new("Watch", watch),
        }
    }
}

impl Default for StreamsPerAccount {
    /// The limits of `config/default.toml`.
    fn default() -> StreamsPerAccount {
        StreamsPerAccount::new(4, 8)
    }
}

/// The kind of a stream, for its account's limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamKind {
    /// `GameService.Play`.
    Play,
    /// `GameService.Watch`.
    Watch,
}

/// The outcome of [`Core::mutate`].
#[derive(Debug)]
pub enum Mutation<T> {
    /// Stored; the room as it is now and its version.
    Done {
        /// What the change returned.
        value: T,
        /// The room after the change (shared with the hub, which holds it for the next
        /// change: drop it soon, or that change copies it).
        room: Arc<Room>,
        /// Its version.
        version: u64,
        /// The events the change stored, the last with seq `room.seq`.
        events: Arc<[StoredEvent]>,
        /// Their encodings, shared with the room's other local streams.
        shared: Arc<SharedBytes>,
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
    /// One permit per Play stream this replica may hold (`max_streams`).
    pub stream_slots: Arc<Semaphore>,
    /// One permit per join doing its Redis work (`join_concurrency`).
    pub join_slots: Arc<Semaphore>,
    /// Cancelled when the replica stops: streams end with UNAVAILABLE.
    pub shutdown: CancellationToken,
    /// Draining: by `DrainReplica` (until `UndrainReplica`), and when the replica stops.
    pub drain: crate::drain::Drain,
    /// The presence lease.
    pub lease: Lease,
    /// The shards this replica walks (timers, outbox, lease sweep).
    pub walks: Arc<Walks>,
    /// accounts, for players' names (and the outbox).
    pub accounts: Option<AccountsLink>,
    /// Tells accounts who plays where (their friends see it).
    pub presence: basra_platform::presence::PresenceReporter,
    /// Prometheus metrics.
    pub metrics: Arc<GameMetrics>,
}

/// This replica's presence lease: the instance id it is held under, and a signal to the
/// streams when it was lost.
#[derive(Debug)]
pub struct Lease {
    instance: Mutex<Option<Arc<str>>>,
    lost: watch::Sender<u64>,
}

impl Default for Lease {
    fn default() -> Lease {
        Lease {
            instance: Mutex::new(None),
            lost: watch::channel(0).0,
        }
    }
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
        change: impl FnMut(&mut Room, i64) -> Result<T, Reject>,
    ) -> Result<Mutation<T>> {
        self.mutate_from(room_id, None, client_move, false, change)
            .await
    }

    /// [`Core::mutate`] for a change that is `Room::play` alone: when it is a plain play
    /// (`store::plain_play`), the store may keep the play instead of the whole room, and
    /// replay it on load. `change` must do nothing else to the room, or a load would miss it.
    pub async fn mutate_play(
        self: &Arc<Self>,
        room_id: &str,
        client_move: Option<(u8, &str)>,
        change: impl FnMut(&mut Room, i64) -> Result<(), Reject>,
    ) -> Result<Mutation<()>> {
        self.mutate_from(room_id, None, client_move, true, change)
            .await
    }

    /// [`Core::mutate`] starting from `loaded`, a state of the room just read (a join
    /// loads the room to find the seat, then connects it without reading it again). The
    /// newer of it and the state this replica last committed is tried first.
    pub async fn mutate_from<T>(
        self: &Arc<Self>,
        room_id: &str,
        loaded: Option<Loaded>,
        client_move: Option<(u8, &str)>,
        replayable: bool,
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
                None => self
                    .store
                    .load(room_id)
                    .await?
                    .ok_or_else(|| GameError::RoomNotFound(room_id.to_owned()))?,
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
            let plain_play = replayable
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
                    let room = Arc::new(room);
                    let shared = Arc::default();
                    in_flight.committed(
                        room.seq + 1 - events.len() as u64,
                        &events,
                        room.status == crate::room::Status::Closed,
                        Held {
                            room: Arc::clone(&room),
                            version,
                            tail: if plain_play { loaded.tail + 1 } else { 0 },
                        },
                        &shared,
                    );
                    self.schedule(room_id, room.next_deadline());
                    return Ok(Mutation::Done {
                        value,
                        room,
                        version,
                        events,
                        shared,
                    });
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
                self.schedule(&room.id, room.next_deadline());
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    /// When a room's next deadline is close — within a timer poll, or a bot's think
    /// delay — fires it from here at that moment rather than on the timer loop's next
    /// tick: a bot answers on time, and the rooms due spread over time instead of
    /// firing in a burst each tick. The claim keeps it to one replica (the timer loop
    /// still fires it if this replica dies meanwhile).
    pub fn schedule(self: &Arc<Self>, room_id: &str, deadline: Option<i64>) {
        let Some(at) = deadline else { return };
        let wait = at - now_ms();
        let close = self
            .config
            .timer_poll
            .max(Duration::from_millis(self.config.timing.bot_delay_ms));
        if wait > close.as_millis() as i64 {
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

    /// Claims the room's due deadline and does what is due (one trace per firing: a
    /// bot's play, an automatic play, a grace period ending).
    #[tracing::instrument(name = "game.timer", skip(self))]
    pub async fn fire(self: &Arc<Self>, room_id: &str) -> Result<()> {
        let now = now_ms();
        let lease = 5_000;
        if !self.store.claim_due(room_id, now, lease).await? {
            return Ok(());
        }
        self.metrics.timers_fired.inc();
        // A hard bot thinks away from the runtime (crate::bots).
        let outcome = crate::bots::on_timer(self, room_id).await;
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

    /// The timer loop until `shutdown`: refreshes this replica's presence lease, sweeps
    /// expired ones, fires due rooms (side by side, at most [`TIMERS_IN_FLIGHT`] at once).
    pub async fn run_timers(self: Arc<Self>, shutdown: CancellationToken) {
        let mut tick = tokio::time::interval(self.config.timer_poll);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let slots = Arc::new(Semaphore::new(TIMERS_IN_FLIGHT));
        let mut next_refresh = 0;
        loop {
            tokio::select! {
                () = shutdown.cancelled() => return,
                _ = tick.tick() => {}
            }
            let now = now_ms();
            if now >= next_refresh {
                self.refresh_lease(now).await;
                next_refresh = now + self.config.lease.as_millis() as i64 / 3;
            }
            let shards = self.walks.shards();
            if shards.is_empty() {
                continue;
            }
            if let Err(err) = self.sweep_leases(&shards, now).await {
                tracing::warn!(error = %err, "cannot sweep presence leases");
            }
            let due = match self.store.due_rooms(&shards, now_ms(), 256).await {
                Ok(due) => due,
                Err(err) => {
                    tracing::warn!(error = %err, "cannot read due rooms");
                    continue;
                }
            };
            // The rooms fire side by side, each in a task of its own: one that waits (a
            // store round trip, a hard bot's search on its thread) holds up no
            // other, nor the next tick. At most `TIMERS_IN_FLIGHT` fire at once; a room
            // left out is due still and fires on a later tick (its claim keeps a room
            // fired twice from acting twice).
            for room_id in due {
                let Ok(slot) = Arc::clone(&slots).try_acquire_owned() else {
                    break;
                };
                let core = Arc::clone(&self);
                tokio::spawn(async move {
                    let _slot = slot;
                    if let Err(err) = core.fire(&room_id).await {
                        tracing::warn!(room_id, error = %err, "timer failed");
                    }
                });
            }
        }
    }

    /// Renews this replica's shard walks four times per walk lease until `shutdown`,
    /// then gives them up. Apart from the timer loop, so that a long tick (many rooms
    /// due) does not let the walks lapse.
    pub async fn run_walks(self: Arc<Self>, shutdown: CancellationToken) {
        let mut tick = tokio::time::interval(self.walks.lease() / 4);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                () = shutdown.cancelled() => break,
                _ = tick.tick() => {}
            }
            self.walks.renew(self.store.as_ref(), now_ms()).await;
        }
        self.walks.leave(self.store.as_ref(), now_ms()).await;
    }

    /// The instance id this replica's presence lease is held under: the replica name and
    /// a random part (a restarted replica with the same name is another instance).
    pub fn instance(&self) -> Arc<str> {
        let mut current = self
            .lease
            .instance
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        Arc::clone(current.get_or_insert_with(|| {
            format!("{}/{}", self.config.replica, uuid::Uuid::now_v7().simple()).into()
        }))
    }

    /// A receiver that changes when the lease is lost: streams then end (and resume).
    pub fn lease_lost(&self) -> watch::Receiver<u64> {
        self.lease.lost.subscribe()
    }

    /// The lease of `instance` was swept: take a new instance id and end the streams
    /// connected under the old one.
    fn lose_lease(&self, instance: &str) {
        let mut current = self
            .lease
            .instance
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if current.as_deref() == Some(instance) {
            tracing::warn!(instance, "the presence lease was lost; streams resume");
            *current = None;
            drop(current);
            self.lease.lost.send_modify(|n| *n += 1);
        }
    }

    fn lease_until(&self, now: i64) -> i64 {
        now + self.config.lease.as_millis() as i64
    }

    /// Records `seat` under this replica's lease before its stream connects it; the
    /// instance it was recorded under.
    pub async fn lease_seat(&self, seat: &LeasedSeat) -> Result<Arc<str>> {
        for _ in 0..2 {
            let instance = self.instance();
            if self
                .store
                .lease_add(&instance, seat, self.lease_until(now_ms()))
                .await?
            {
                return Ok(instance);
            }
            self.lose_lease(&instance);
        }
        Err(GameError::Unavailable(
            "this replica cannot hold a presence lease; retry".into(),
        ))
    }

    async fn refresh_lease(&self, now: i64) {
        let instance = self.instance();
        match self
            .store
            .lease_refresh(&instance, self.lease_until(now))
            .await
        {
            Ok(true) => {}
            Ok(false) => self.lose_lease(&instance),
            Err(err) => tracing::warn!(error = %err, "cannot refresh the presence lease"),
        }
    }

    /// Disconnects the seats of replicas whose lease expired.
    async fn sweep_leases(self: &Arc<Self>, shards: &[u32], now: i64) -> Result<()> {
        let claim = self.config.lease.as_millis() as i64;
        for expired in self
            .store
            .lease_claim_expired(shards, now, claim, 8)
            .await?
        {
            let mut done = true;
            for seat in &expired.seats {
                let result = self
                    .mutate(&seat.room_id, None, |room, now| {
                        if room.disconnect(seat.seat, &seat.conn_id, now) {
                            Ok(())
                        } else {
                            Err(Reject::new(
                                basra_proto::basra::game::v1::RejectCode::Unspecified,
                                "not connected through this stream any more",
                            ))
                        }
                    })
                    .await;
                match result {
                    Ok(_) | Err(GameError::RoomNotFound(_)) => {}
                    Err(err) => {
                        tracing::warn!(room_id = seat.room_id, error = %err, "cannot disconnect a swept seat");
                        done = false;
                    }
                }
            }
            tracing::info!(
                instance = expired.instance,
                seats = expired.seats.len(),
                "swept an expired presence lease"
            );
            // Unfinished: the claim runs out and a sweeper (maybe this one) tries again.
            if done {
                self.store.lease_release(&expired.instance).await?;
            }
        }
        Ok(())
    }

    /// Waits for a turn to do a join's Redis work (the room's load, the presence lease,
    /// the connect commit, the first read of the log). A storm of joins (every player of
    /// a dead replica resuming here at once) then queues in this replica, each join
    /// waiting for a permit, instead of putting thousands of calls at once on the Redis
    /// connection, where the last ones would wait past the response timeout and fail
    /// with UNAVAILABLE. The wait has no bound of its own: the admitted streams
    /// (`max_streams`) bound the queue, and a client that gives up ends its wait.
    pub async fn join_turn(&self) -> Result<OwnedSemaphorePermit> {
        if let Ok(permit) = Arc::clone(&self.join_slots).try_acquire_owned() {
            return Ok(permit);
        }
        self.metrics.joins_queued.inc();
        Arc::clone(&self.join_slots)
            .acquire_owned()
            .await
            .map_err(|_| GameError::Unavailable("this replica is stopping".into()))
    }

    /// Takes a stream slot of the replica and one of `user`'s for `kind`, or refuses the
    /// stream at either limit or while draining.
    pub fn admit(self: &Arc<Self>, user: uuid::Uuid, kind: StreamKind) -> Result<StreamPermit> {
        if self.drain.is_draining() || self.shutdown.is_cancelled() {
            return Err(GameError::Unavailable(
                "this replica is draining; reconnect elsewhere".into(),
            ));
        }
        let limits = &self.config.streams_per_account;
        let account = match kind {
            StreamKind::Play => limits.play.open(user),
            StreamKind::Watch => limits.watch.open(user),
        }?;
        let Ok(slot) = Arc::clone(&self.stream_slots).try_acquire_owned() else {
            self.metrics.streams_refused.inc();
            return Err(GameError::Exhausted(format!(
                "this replica serves its maximum of {} streams; retry with backoff",
                self.config.max_streams
            )));
        };
        self.metrics.open_streams.inc();
        Ok(StreamPermit {
            _slot: slot,
            _account: account,
            metrics: Arc::clone(&self.metrics),
        })
    }

    /// Play streams open on this replica now.
    pub fn open_streams(&self) -> usize {
        self.config.max_streams - self.stream_slots.available_permits()
    }
}

/// One admitted stream; dropping it frees its slot.
#[derive(Debug)]
pub struct StreamPermit {
    _slot: OwnedSemaphorePermit,
    _account: AccountStream,
    metrics: Arc<GameMetrics>,
}

impl Drop for StreamPermit {
    fn drop(&mut self) {
        self.metrics.open_streams.dec();
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
