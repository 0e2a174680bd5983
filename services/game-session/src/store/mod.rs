//! Where rooms live: the [`RoomStore`] trait, with [`RedisStore`] (production: state
//! shared by every replica) and [`MemoryStore`] (the embedded one-process dev mode).
//! Both pass the same contract suite (`tests/it/store_contract.rs`).

mod codec;
mod memory;
pub mod plain_play;
mod play_batch;
mod redis_store;

use std::sync::Arc;

use tokio::sync::broadcast;

use crate::error::{GameError, Result};
use crate::room::events::StoredEvent;
use crate::room::{ActionRecord, PendingActions, Room};

pub use codec::{ROOM_FORMAT, RoomFormat, decode_room, encode_room, encode_room_as};
pub use memory::MemoryStore;
pub use redis_store::{COMMIT_LUA, RedisStore};

/// How many shards the rooms (and presence leases) are spread over: enough to spread over
/// the primaries of a cluster. Part of the key layout: changing it strands stored rooms.
pub const SHARDS: u32 = 16;

/// Every shard, in order (what a caller walks when it owns them all: tests, tools).
pub const ALL_SHARDS: [u32; SHARDS as usize] = {
    let mut all = [0; SHARDS as usize];
    let mut i = 0;
    while i < SHARDS as usize {
        all[i] = i as u32;
        i += 1;
    }
    all
};

/// The shard of a room (or of a replica instance's presence lease).
pub fn shard_of(id: &str) -> u32 {
    basra_platform::redis::shard_of(id, SHARDS)
}

/// A shard walk held by one replica: the timer loop, the outbox forwarder and the lease
/// sweep of that replica walk the shard; the others skip it (see [`RoomStore::walk_shards`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WalkLease {
    /// Which shard (of [`SHARDS`]; a room's shard is from its id, [`shard_of`]).
    pub shard: u32,
    /// Its fencing number: bumped each time the shard's walk changes hands, so a holder
    /// that stalled past its lease finds a higher number (and another holder) and stops.
    pub epoch: u64,
}

/// A room as loaded: its state and the version a commit must name.
#[derive(Debug, Clone)]
pub struct Loaded {
    /// The room's state, its tail of plain plays replayed.
    pub room: Room,
    /// Its version (bumped by every commit).
    pub version: u64,
    /// How many plain plays were stored after its last snapshot (see
    /// [`RoomStore::tail_limit`]).
    pub tail: usize,
}

/// One atomic change to a room.
#[derive(Debug)]
pub struct Commit<'a> {
    /// The new state. `room.seq` is the seq of the last of `events`.
    pub room: &'a Room,
    /// The version the change was computed from; 0 creates the room.
    pub expected_version: u64,
    /// The events to append, in order.
    pub events: &'a [StoredEvent],
    /// The changes to the running match's action log (kept apart from the room so that
    /// a play never reads or rewrites the whole match).
    pub actions: &'a PendingActions,
    /// An idempotency key (seat and client move id) and the seq answering it. A snapshot's
    /// commit checks and records it: when the key is already recorded, nothing is
    /// written. A plain play's answer is its `card_played` on the log, and the version
    /// check stands for the key's: the play was computed on the room as stored, in which a
    /// move already made has no card left to play again (the rules refuse the retry, and
    /// [`RoomStore::applied_move`] answers it).
    pub applied_move: Option<(String, u64)>,
    /// A finished match's record for the outbox.
    pub outbox: Option<OutboxRecord>,
    /// The change is a plain play ([`plain_play::is_plain_play`]), which the store may
    /// keep as its events alone, replayed on the room's snapshot at load, instead of the
    /// whole room (set only while fewer than [`RoomStore::tail_limit`] plain plays follow
    /// the room's snapshot).
    pub plain_play: bool,
}

/// What a commit did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommitOutcome {
    /// Written; the room is now at this version.
    Committed {
        /// The new version.
        version: u64,
    },
    /// Another writer changed the room first (or it already exists, on create): reload
    /// and retry.
    Conflict,
    /// The idempotency key was already recorded with this seq; nothing was written.
    AlreadyApplied {
        /// The seq that answered the key the first time.
        seq: u64,
    },
}

/// The events of a room after some seq.
#[derive(Debug, Clone, Default)]
pub struct EventsAfter {
    /// The events, the first with seq `after + 1`.
    pub events: Vec<StoredEvent>,
    /// Whether the room is closed.
    pub closed: bool,
    /// Whether the room exists.
    pub exists: bool,
    /// When every one of the events was stored by a plain play: what a replica needs to
    /// bring a state it held before them up to them (`Hub::refresh`). `None` otherwise,
    /// or when the store does not say (the memory store).
    pub plain: Option<PlainPlays>,
}

/// Plain plays read with the events, in the same atomic step (the room's last snapshot is
/// at or before the seq the events follow).
#[derive(Debug, Clone)]
pub struct PlainPlays {
    /// The room's version after the events.
    pub version: u64,
    /// Each play's action with the seq of its `card_played`, in order.
    pub plays: Vec<(u64, ActionRecord)>,
}

/// A room got new events (or changed status): its id and last seq.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notice {
    /// The room (`*`: every room, after notices may have been lost).
    pub room_id: Arc<str>,
    /// Its last seq; 0 when it changed without new events (it closed): streams that
    /// have every event must look anyway.
    pub seq: u64,
}

/// The seq a commit of `events` to `room` announces (see [`Notice::seq`]).
pub fn notice_seq(room: &Room, events: &[StoredEvent]) -> u64 {
    if events.is_empty() { 0 } else { room.seq }
}

/// What a room's stream needs to know to decide whether to read the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RoomHead {
    /// The seq of the room's last event.
    pub seq: u64,
    /// Whether the room is closed.
    pub closed: bool,
}

/// A stream whose seat is connected through a replica instance's presence lease: when
/// the lease expires (the replica died without recording its disconnects), the timer
/// sweep of another replica disconnects it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct LeasedSeat {
    /// The room.
    pub room_id: String,
    /// The seat the stream holds.
    pub seat: u8,
    /// The stream (as in the room's seat state).
    pub conn_id: String,
}

impl LeasedSeat {
    /// The stored form: `seat conn_id room_id` (a room id may hold spaces; a seat and a
    /// connection id do not).
    pub fn encode(&self) -> String {
        format!("{} {} {}", self.seat, self.conn_id, self.room_id)
    }

    /// The stored form read back; `None` if it is not one.
    pub fn decode(text: &str) -> Option<LeasedSeat> {
        let mut parts = text.splitn(3, ' ');
        Some(LeasedSeat {
            seat: parts.next()?.parse().ok()?,
            conn_id: parts.next()?.to_owned(),
            room_id: parts.next()?.to_owned(),
        })
    }
}

/// A replica instance whose presence lease expired, claimed by one sweeper, with the
/// seats it had connected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExpiredLease {
    /// The dead replica's instance name (as its lease named it).
    pub instance: String,
    /// Its seats.
    pub seats: Vec<LeasedSeat>,
}

/// What the outbox holds for one finished match.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct OutboxRecord {
    /// The encoded `MatchRecord`.
    pub payload: Vec<u8>,
    /// The trace context of the action that finished the match
    /// (`basra_platform::telemetry::current_traceparent`; empty when tracing is off),
    /// so its delivery continues that trace.
    pub trace_context: String,
}

/// An outbox entry: its id and the record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutboxEntry {
    /// The entry id (for [`RoomStore::outbox_ack`]).
    pub id: String,
    /// The finished match to hand to accounts.
    pub record: OutboxRecord,
}

/// Room storage. Every write is one atomic compare-and-set on the room's version.
#[tonic::async_trait]
pub trait RoomStore: Send + Sync + 'static {
    /// The room, if it exists.
    async fn load(&self, room_id: &str) -> Result<Option<Loaded>>;

    /// Many rooms at once, answered in the order of `room_ids` (matchmaking's GetSeats):
    /// `Ok(None)` for a room that does not exist, an `Err` item (INTERNAL) for one whose
    /// stored state cannot be read; a store failure fails the whole call. By default one
    /// [`load`](Self::load) after another; the Redis store reads them in one pipeline per
    /// shard, all shards at once.
    async fn load_many(&self, room_ids: &[String]) -> Result<Vec<Result<Option<Loaded>>>> {
        let mut out = Vec::with_capacity(room_ids.len());
        for id in room_ids {
            out.push(match self.load(id).await {
                Err(GameError::Corrupt(why)) => Err(GameError::Corrupt(why)),
                Err(other) => return Err(other),
                Ok(loaded) => Ok(loaded),
            });
        }
        Ok(out)
    }

    /// How many plain plays a room may keep after its snapshot (on its tail) before a
    /// commit writes the whole room again; 0: every commit writes the whole room.
    fn tail_limit(&self) -> usize {
        0
    }

    /// Writes a change atomically: checks the version and the idempotency key, stores
    /// the state, appends the events and actions, records the key, sets the room's next deadline,
    /// queues the outbox record and notifies every replica.
    async fn commit(&self, commit: Commit<'_>) -> Result<CommitOutcome>;

    /// The events after seq `after`, in order.
    async fn events_after(&self, room_id: &str, after: u64) -> Result<EventsAfter>;

    /// The last seq and status of each room (`None`: no such room), in one round trip:
    /// the hub's safety net under lost notices.
    async fn room_heads(&self, room_ids: &[Arc<str>]) -> Result<Vec<Option<RoomHead>>>;

    /// The running (or last) match's action log, in order.
    async fn match_actions(&self, room_id: &str) -> Result<Vec<ActionRecord>>;

    /// The seq recorded for an idempotency key: by a snapshot's commit, or a plain
    /// play's `card_played` among the room's last events (see [`Commit::applied_move`]).
    async fn applied_move(&self, room_id: &str, key: &str) -> Result<Option<u64>>;

    /// Rooms of `shards` whose next deadline is at or before `now_ms`.
    async fn due_rooms(&self, shards: &[u32], now_ms: i64, limit: usize) -> Result<Vec<String>>;

    /// Claims a due room for `lease_ms` (its deadline moves to `now_ms + lease_ms`);
    /// false when it is not due any more or another replica claimed it first.
    async fn claim_due(&self, room_id: &str, now_ms: i64, lease_ms: i64) -> Result<bool>;

    /// Resets a room's deadline from its state, if the room is still at `version`.
    async fn sync_deadline(&self, room_id: &str, version: u64, deadline: Option<i64>)
    -> Result<()>;

    /// Room ids, newest first.
    async fn list_rooms(&self, offset: usize, count: usize) -> Result<Vec<String>>;

    /// Outbox entries of `shards` for `consumer`: entries pending longer than
    /// `min_idle_ms` (failed or abandoned deliveries) first, else new ones.
    async fn outbox_fetch(
        &self,
        shards: &[u32],
        consumer: &str,
        min_idle_ms: u64,
        count: usize,
    ) -> Result<Vec<OutboxEntry>>;

    /// Removes a delivered outbox entry.
    async fn outbox_ack(&self, id: &str) -> Result<()>;

    /// Records that `seat` is connected through `instance`, whose lease then lasts at
    /// least until `until_ms`. `false` (nothing recorded): the instance's lease expired
    /// and was swept; the replica must take a new instance id.
    async fn lease_add(&self, instance: &str, seat: &LeasedSeat, until_ms: i64) -> Result<bool>;

    /// Forgets a seat of `instance` (its stream ended and recorded its disconnect).
    async fn lease_remove(&self, instance: &str, seat: &LeasedSeat) -> Result<()>;

    /// Extends the lease of `instance` to `until_ms` (never shortens it). `false`: it
    /// expired and was swept, as for [`RoomStore::lease_add`].
    async fn lease_refresh(&self, instance: &str, until_ms: i64) -> Result<bool>;

    /// Claims up to `limit` instances of `shards` whose lease expired by `now_ms` (or
    /// whose previous sweeper did not finish within `claim_ms`), marks them swept for
    /// good, and returns them with their seats. Each is claimed by one caller at a time.
    async fn lease_claim_expired(
        &self,
        shards: &[u32],
        now_ms: i64,
        claim_ms: i64,
        limit: usize,
    ) -> Result<Vec<ExpiredLease>>;

    /// Forgets a swept instance once its seats are disconnected.
    async fn lease_release(&self, instance: &str) -> Result<()>;

    /// Divides the shard walks between the live replicas, for `walker` (one replica's
    /// id): records that `walker` is alive until `until_ms`, then renews the walks it
    /// holds and takes free ones (never held, or whose holder's lease ended before
    /// `now_ms`) up to its share, `ceil(SHARDS / live walkers)`, giving up walks beyond
    /// it so that a replica that just started gets its share. `leaving`: gives up every
    /// walk (a replica that stops) so others take them at once. Returns the walks
    /// `walker` holds until `until_ms`. One atomic step.
    async fn walk_shards(
        &self,
        walker: &str,
        now_ms: i64,
        until_ms: i64,
        leaving: bool,
    ) -> Result<Vec<WalkLease>>;

    /// Notices of new events in any room, from every replica.
    fn notices(&self) -> broadcast::Receiver<Notice>;
}

/// The idempotency key of a client move.
pub fn move_key(seat: u8, client_move_id: &str) -> String {
    format!("{seat}:{client_move_id}")
}
