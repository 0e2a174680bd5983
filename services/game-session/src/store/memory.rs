//! The in-memory store of the embedded dev mode: one process, no Redis.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;
use std::sync::Mutex;
use std::time::Instant;

use tokio::sync::broadcast;

use super::{
    Commit, CommitOutcome, EventsAfter, ExpiredLease, LeasedSeat, Loaded, Notice, OutboxEntry,
    OutboxRecord, RoomHead, RoomStore, SHARDS, WalkLease, shard_of,
};
use crate::error::Result;
use crate::room::events::StoredEvent;
use crate::room::{ActionRecord, Status};

/// Rooms in this process's memory.
#[derive(Debug)]
pub struct MemoryStore {
    inner: Mutex<Inner>,
    notices: broadcast::Sender<Notice>,
}

#[derive(Debug, Default)]
struct Inner {
    rooms: HashMap<String, Stored>,
    order: Vec<String>,
    deadlines: HashMap<String, i64>,
    outbox: VecDeque<Entry>,
    next_outbox: u64,
    /// Instance → end of its lease (or of the sweeper's claim).
    leases: HashMap<String, i64>,
    lease_seats: HashMap<String, HashSet<String>>,
    swept: HashSet<String>,
    /// Walker → end of its walk lease.
    walkers: HashMap<String, i64>,
    /// Shard → (epoch, until, walker).
    walks: HashMap<u32, (u64, i64, String)>,
}

#[derive(Debug)]
struct Stored {
    /// The room in its stored form (`super::encode_room`), as Redis holds it: a load
    /// decodes it, so the dev mode runs the same encoding as production.
    state: Vec<u8>,
    /// The room's last seq and status, for heads and reads of the log.
    seq: u64,
    closed: bool,
    version: u64,
    log: Vec<StoredEvent>,
    actions: Vec<ActionRecord>,
    moves: HashMap<String, u64>,
}

#[derive(Debug)]
struct Entry {
    id: String,
    /// The shard of the room that queued it.
    shard: u32,
    record: OutboxRecord,
    delivered_at: Option<Instant>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> MemoryStore {
        MemoryStore {
            inner: Mutex::new(Inner::default()),
            notices: broadcast::channel(4096).0,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl Default for MemoryStore {
    fn default() -> Self {
        MemoryStore::new()
    }
}

#[tonic::async_trait]
impl RoomStore for MemoryStore {
    async fn load(&self, room_id: &str) -> Result<Option<Loaded>> {
        let Some((state, version)) = self
            .lock()
            .rooms
            .get(room_id)
            .map(|stored| (stored.state.clone(), stored.version))
        else {
            return Ok(None);
        };
        Ok(Some(Loaded {
            room: super::decode_room(&state)?,
            version,
            tail: 0,
        }))
    }

    async fn commit(&self, commit: Commit<'_>) -> Result<CommitOutcome> {
        let room_id = commit.room.id.clone();
        let notice_seq = super::notice_seq(commit.room, commit.events);
        let state = super::encode_room(commit.room)?;
        let closed = commit.room.status == Status::Closed;
        let mut inner = self.lock();
        let current = inner.rooms.get(&room_id).map_or(0, |s| s.version);
        if current != commit.expected_version {
            return Ok(CommitOutcome::Conflict);
        }
        if let Some((key, _)) = &commit.applied_move
            && let Some(seq) = inner.rooms.get(&room_id).and_then(|s| s.moves.get(key))
        {
            return Ok(CommitOutcome::AlreadyApplied { seq: *seq });
        }
        if current == 0 {
            inner.order.push(room_id.clone());
            inner.rooms.insert(
                room_id.clone(),
                Stored {
                    state: Vec::new(),
                    seq: 0,
                    closed: false,
                    version: 0,
                    log: Vec::new(),
                    actions: Vec::new(),
                    moves: HashMap::new(),
                },
            );
        }
        let stored = inner.rooms.get_mut(&room_id).expect("inserted above");
        stored.state = state;
        stored.seq = commit.room.seq;
        stored.closed = closed;
        stored.version = current + 1;
        stored.log.extend_from_slice(commit.events);
        if commit.actions.reset {
            stored.actions.clear();
        }
        stored.actions.extend_from_slice(&commit.actions.actions);
        if let Some((key, seq)) = commit.applied_move {
            stored.moves.insert(key, seq);
        }
        match commit.room.next_deadline() {
            Some(at) if commit.room.status != Status::Closed => {
                inner.deadlines.insert(room_id.clone(), at);
            }
            _ => {
                inner.deadlines.remove(&room_id);
            }
        }
        if let Some(record) = commit.outbox {
            inner.next_outbox += 1;
            let id = format!("{}-0", inner.next_outbox);
            inner.outbox.push_back(Entry {
                id,
                shard: shard_of(&commit.room.id),
                record,
                delivered_at: None,
            });
        }
        drop(inner);
        let _ = self.notices.send(Notice {
            room_id: room_id.into(),
            seq: notice_seq,
        });
        Ok(CommitOutcome::Committed {
            version: current + 1,
        })
    }

    async fn events_after(&self, room_id: &str, after: u64) -> Result<EventsAfter> {
        let inner = self.lock();
        let Some(stored) = inner.rooms.get(room_id) else {
            return Ok(EventsAfter::default());
        };
        let from = usize::try_from(after)
            .unwrap_or(usize::MAX)
            .min(stored.log.len());
        Ok(EventsAfter {
            events: stored.log[from..].to_vec(),
            closed: stored.closed,
            exists: true,
            // This store's rooms live in one process: no other replica's plays to catch.
            plain: None,
        })
    }

    async fn room_heads(&self, room_ids: &[Arc<str>]) -> Result<Vec<Option<RoomHead>>> {
        let inner = self.lock();
        Ok(room_ids
            .iter()
            .map(|id| {
                inner.rooms.get(&**id).map(|stored| RoomHead {
                    seq: stored.seq,
                    closed: stored.closed,
                })
            })
            .collect())
    }

    async fn match_actions(&self, room_id: &str) -> Result<Vec<ActionRecord>> {
        Ok(self
            .lock()
            .rooms
            .get(room_id)
            .map(|s| s.actions.clone())
            .unwrap_or_default())
    }

    async fn applied_move(&self, room_id: &str, key: &str) -> Result<Option<u64>> {
        Ok(self
            .lock()
            .rooms
            .get(room_id)
            .and_then(|s| s.moves.get(key).copied()))
    }

    async fn due_rooms(&self, shards: &[u32], now_ms: i64, limit: usize) -> Result<Vec<String>> {
        let inner = self.lock();
        let mut due: Vec<(i64, &String)> = inner
            .deadlines
            .iter()
            .filter(|(id, at)| **at <= now_ms && shards.contains(&shard_of(id)))
            .map(|(id, at)| (*at, id))
            .collect();
        due.sort();
        Ok(due
            .into_iter()
            .take(limit)
            .map(|(_, id)| id.clone())
            .collect())
    }

    async fn claim_due(&self, room_id: &str, now_ms: i64, lease_ms: i64) -> Result<bool> {
        let mut inner = self.lock();
        match inner.deadlines.get_mut(room_id) {
            Some(at) if *at <= now_ms => {
                *at = now_ms + lease_ms;
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    async fn sync_deadline(
        &self,
        room_id: &str,
        version: u64,
        deadline: Option<i64>,
    ) -> Result<()> {
        let mut inner = self.lock();
        if inner.rooms.get(room_id).map(|s| s.version) != Some(version) {
            return Ok(());
        }
        match deadline {
            Some(at) => inner.deadlines.insert(room_id.to_owned(), at),
            None => inner.deadlines.remove(room_id),
        };
        Ok(())
    }

    async fn list_rooms(&self, offset: usize, count: usize) -> Result<Vec<String>> {
        Ok(self
            .lock()
            .order
            .iter()
            .rev()
            .skip(offset)
            .take(count)
            .cloned()
            .collect())
    }

    async fn outbox_fetch(
        &self,
        shards: &[u32],
        _consumer: &str,
        min_idle_ms: u64,
        count: usize,
    ) -> Result<Vec<OutboxEntry>> {
        let mut inner = self.lock();
        let now = Instant::now();
        let mut out = Vec::new();
        for entry in inner.outbox.iter_mut() {
            let ready = entry
                .delivered_at
                .is_none_or(|at| now.duration_since(at).as_millis() >= u128::from(min_idle_ms));
            if ready && out.len() < count && shards.contains(&entry.shard) {
                entry.delivered_at = Some(now);
                out.push(OutboxEntry {
                    id: entry.id.clone(),
                    record: entry.record.clone(),
                });
            }
        }
        Ok(out)
    }

    async fn outbox_ack(&self, id: &str) -> Result<()> {
        self.lock().outbox.retain(|entry| entry.id != id);
        Ok(())
    }

    async fn lease_add(&self, instance: &str, seat: &LeasedSeat, until_ms: i64) -> Result<bool> {
        let mut inner = self.lock();
        if inner.swept.contains(instance) {
            return Ok(false);
        }
        inner
            .lease_seats
            .entry(instance.to_owned())
            .or_default()
            .insert(seat.encode());
        let lease = inner.leases.entry(instance.to_owned()).or_insert(until_ms);
        *lease = (*lease).max(until_ms);
        Ok(true)
    }

    async fn lease_remove(&self, instance: &str, seat: &LeasedSeat) -> Result<()> {
        if let Some(seats) = self.lock().lease_seats.get_mut(instance) {
            seats.remove(&seat.encode());
        }
        Ok(())
    }

    async fn lease_refresh(&self, instance: &str, until_ms: i64) -> Result<bool> {
        let mut inner = self.lock();
        if inner.swept.contains(instance) {
            return Ok(false);
        }
        let lease = inner.leases.entry(instance.to_owned()).or_insert(until_ms);
        *lease = (*lease).max(until_ms);
        Ok(true)
    }

    async fn lease_claim_expired(
        &self,
        shards: &[u32],
        now_ms: i64,
        claim_ms: i64,
        limit: usize,
    ) -> Result<Vec<ExpiredLease>> {
        let mut inner = self.lock();
        let mut expired: Vec<(i64, String)> = inner
            .leases
            .iter()
            .filter(|(instance, until)| **until <= now_ms && shards.contains(&shard_of(instance)))
            .map(|(instance, until)| (*until, instance.clone()))
            .collect();
        expired.sort();
        expired.truncate(limit);
        let mut out = Vec::with_capacity(expired.len());
        for (_, instance) in expired {
            inner.swept.insert(instance.clone());
            inner.leases.insert(instance.clone(), now_ms + claim_ms);
            let seats = inner
                .lease_seats
                .get(&instance)
                .map(|seats| seats.iter().filter_map(|s| LeasedSeat::decode(s)).collect())
                .unwrap_or_default();
            out.push(ExpiredLease { instance, seats });
        }
        Ok(out)
    }

    async fn lease_release(&self, instance: &str) -> Result<()> {
        let mut inner = self.lock();
        inner.lease_seats.remove(instance);
        inner.leases.remove(instance);
        Ok(())
    }

    async fn walk_shards(
        &self,
        walker: &str,
        now_ms: i64,
        until_ms: i64,
        leaving: bool,
    ) -> Result<Vec<WalkLease>> {
        // The same steps as `lua/walk_shards.lua`.
        let mut inner = self.lock();
        inner.walkers.retain(|_, until| *until >= now_ms);
        if leaving {
            inner.walkers.remove(walker);
        } else {
            inner.walkers.insert(walker.to_owned(), until_ms);
        }
        let live = inner.walkers.len().max(1) as u32;
        let share = if leaving { 0 } else { SHARDS.div_ceil(live) } as usize;
        let (mut held, mut free) = (Vec::new(), Vec::new());
        for shard in 0..SHARDS {
            match inner.walks.get(&shard) {
                Some((_, till, owner)) if owner == walker && *till >= now_ms => held.push(shard),
                Some((_, till, _)) if *till >= now_ms => {}
                _ => free.push(shard),
            }
        }
        let mut out = Vec::new();
        for (i, shard) in held.into_iter().enumerate() {
            let walk = inner.walks.get_mut(&shard).expect("held above");
            if i < share {
                walk.1 = until_ms;
                out.push(WalkLease {
                    shard,
                    epoch: walk.0,
                });
            } else {
                walk.1 = 0;
            }
        }
        for shard in free {
            if out.len() >= share {
                break;
            }
            let epoch = inner.walks.get(&shard).map_or(0, |walk| walk.0) + 1;
            inner
                .walks
                .insert(shard, (epoch, until_ms, walker.to_owned()));
            out.push(WalkLease { shard, epoch });
        }
        Ok(out)
    }

    fn notices(&self) -> broadcast::Receiver<Notice> {
        self.notices.subscribe()
    }
}
