//! The Redis [`Store`]: the queue and the lobby as Redis data, every state
//! change one Lua script, so any number of replicas share them safely.
//!
//! Key layout (`P` is the configured prefix, `F` a format's key such as `r.2.101`):
//!
//! | key | slot | what |
//! |---|---|---|
//! | `P:{q:F}:t:<ticket>` | format | hash: one ticket (account, format, rating, queue time, state, result; `tomb` while it is a tombstone) |
//! | `P:{q:F}:w` | format | zset: the format's pool by queue time (positions, oldest first) |
//! | `P:{q:F}:r` | format | zset: the same pool by rating (window search) |
//! | `P:{q:F}:alive` | format | zset: ticket deadlines (heartbeat, resume grace, result retention) |
//! | `P:{q:F}:g:<room>` | format | string: a formed group (JSON, with its lease number) waiting for its room |
//! | `P:{q:F}:pending` | format | zset: groups by lease deadline or retry time (takeover, retry) |
//! | `P:{q:F}:round` | format | string: the format's round throttle (expires) |
//! | `P:{q:F}:events` | format | shard channel (`SPUBLISH`): ids of the format's tickets whose state changed |
//! | `P:{t:<ticket>}` | the ticket | string `"F owner"`: the ticket's locator, claimed once (`SET NX`) |
//! | `P:{pl:<account>}:search` | the account | hash: `cur`, the account's live search |
//! | `P:{pl:<account>}:old` | the account | set: superseded tickets whose cancel is not confirmed yet |
//! | `P:{q}:fmts` | registry | set: every format ever used (rounds, reclaim, expiry, lengths walk it) |
//! | `P:{lb:F}:room:<id>` | the room's mode | hash: a room (meta JSON, seats JSON, status, public, lobby sequence) |
//! | `P:{lb:F}:public` | the mode | zset: the mode's open public rooms by lobby sequence (oldest first) |
//! | `P:{lb:F}:expiry` | the mode | zset: the mode's rooms waiting for players, by expiry time (`rooms.ttl_seconds`); an expired one is closed and its keys kept `rooms.expired_retention_seconds` more |
//! | `P:{rm:<id>}:mode` | the room | string: the room's mode `F` (its locator) |
//! | `P:{code:<code>}:room` | the code | string: join code → room, for as long as the room is kept |
//! | `P:{lb}:seq` | lobby registry | counter: the lobby sequence, one order over every mode's public rooms |
//! | `P:{lb}:modes` | lobby registry | set: every mode a room was made in (listings walk it) |
//! | `P:{pl:<account>}:req:<request>` | the account | string: CreateRoom idempotency → room |
//! | `P:{pl:<account>}:guess:<bucket>` | the account | counter: wrong join codes in a time bucket |
//! | `P:{pl:<account>}:inv:<room>` | the account | string: the account was invited to the room (expires with the room), so its seat is recorded as filled by an invite |
//! | `P:{pl:<account>}:at` | the account | string: the room the account was last seated in (expires) |
//!
//! Every script touches one slot, so this works on Redis Cluster. A script is called
//! with its slot's key (`P:{q:F}`, `P:{pl:A}` or `P:{lb:F}`), which routes it, and
//! derives every key name from it: the tickets a pairing round reads are found in the
//! pools during the round, so they cannot be named in advance, but they are all in
//! that format's slot. Each format's queue is its own slot (so formats spread over the
//! primaries of a cluster); a pairing round, reclaim, expiry, commit, release and
//! defer each run in one format's slot, and the pool is never read across slots.
//!
//! A new search (ticket N of account A in format F) is four steps, each atomic in its
//! slot, ordered so that an account is in at most one pool at every instant:
//! 1. **claim** N's locator (`SET NX GET`; another owner: refused; the same owner: a
//!    resume, in the stored format);
//! 2. **swap** in `{pl:A}`: N becomes `cur`, the ticket it replaces goes into `old`;
//! 3. **cancel** every ticket in `old` in its own format's slot (a ticket not inserted
//!    yet gets a **tombstone**, a cancelled record); confirmed ones leave `old`. If one
//!    is in a formed group the search is refused and the swap undone (after handling
//!    them all);
//! 4. **insert** N in `{q:F}`, refused (N's cancelled view) if a tombstone is there.
//!
//! Crash cases between the steps: the repo's `ARCHITECTURE.md`. The lobby is split the
//! same way, one slot per mode (`{lb:F}`, F as for the queue): taking, freeing a seat,
//! closing and inserting each touch one mode; see [`lobby`].
//!
//! [`queue`] holds the queue's side, [`lobby`] the lobby's; the `.lua` files
//! are next to them, in `queue/` and `lobby/`.

mod lobby;
mod queue;

use basra_platform::redis::{Keys, Redis};
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use self::{lobby::Lobby, queue::Queue};
use super::{
    CancelCause, CancelOutcome, CommitOutcome, Enqueued, Group, LobbyFilter, LobbyPage,
    MatchRecord, NewTicket, RoomRecord, Store, TakeSeat, TicketView,
};
use crate::{
    clock::Millis,
    domain::{Format, PairingParams},
    error::{MatchmakingError, Result},
};

pub use self::queue::pairing_script;

/// The Redis store. Cheap to share (`Arc`); one multiplexed connection per node
/// that reconnects by itself, plus one subscription for ticket events.
#[derive(Debug)]
pub struct RedisStore {
    queue: Queue,
    lobby: Lobby,
    events: broadcast::Sender<String>,
    /// Ends the subscription when the store is dropped.
    listening: CancellationToken,
}

impl Drop for RedisStore {
    fn drop(&mut self) {
        self.listening.cancel();
    }
}

impl RedisStore {
    /// Connects to `url` (one node, or a comma-separated list of cluster nodes; fails
    /// if Redis is unreachable), keys under `prefix` (no `{` or `}`: hash tags are the
    /// store's business).
    pub async fn connect(url: &str, prefix: &str) -> Result<RedisStore> {
        let keys = Keys::new(prefix)
            .map_err(|msg| MatchmakingError::bad_setting(format!("redis.prefix: {msg}")))?;
        let redis = Redis::connect(url).await?;
        let lobby = Lobby::new(redis.conn(), keys.clone());
        let (events, _) = broadcast::channel(16 * 1024);
        let listening = CancellationToken::new();
        // Each format's event channel is subscribed when this process first queues a
        // ticket in it (before the ticket enters), so none of its events is missed.
        // Events lost while a subscription is down are covered by the streams' own
        // polling.
        let queue = Queue::new(redis, keys, events.clone(), listening.clone());
        Ok(RedisStore {
            queue,
            lobby,
            events,
            listening,
        })
    }
}

fn corrupt(what: &str) -> MatchmakingError {
    MatchmakingError::Corrupt(what.to_owned())
}

fn b(v: bool) -> &'static str {
    if v { "1" } else { "0" }
}

#[tonic::async_trait]
impl Store for RedisStore {
    async fn enqueue(
        &self,
        t: NewTicket,
        now: Millis,
        ttl_ms: Millis,
        grace_ms: Millis,
    ) -> Result<Enqueued> {
        self.queue.enqueue(t, now, ttl_ms, grace_ms).await
    }

    async fn poll(&self, id: &str, now: Millis, ttl_ms: Millis) -> Result<Option<TicketView>> {
        self.queue.poll(id, now, ttl_ms).await
    }

    async fn detach(&self, id: &str, now: Millis, grace_ms: Millis) -> Result<()> {
        self.queue.detach(id, now, grace_ms).await
    }

    async fn cancel(
        &self,
        user_id: &str,
        id: &str,
        cause: CancelCause,
        now: Millis,
        grace_ms: Millis,
    ) -> Result<CancelOutcome> {
        self.queue.cancel(user_id, id, cause, now, grace_ms).await
    }

    async fn form_groups(
        &self,
        now: Millis,
        params: &PairingParams,
        room_ids: &[String],
    ) -> Result<Vec<Group>> {
        self.queue.form_groups(now, params, room_ids).await
    }

    async fn reclaim(&self, now: Millis, lease_ms: Millis, max: usize) -> Result<Vec<Group>> {
        self.queue.reclaim(now, lease_ms, max).await
    }

    async fn commit(
        &self,
        room_id: &str,
        format: Format,
        records: &[(String, MatchRecord)],
        now: Millis,
        grace_ms: Millis,
    ) -> Result<CommitOutcome> {
        self.queue
            .commit(room_id, format, records, now, grace_ms)
            .await
    }

    async fn release(
        &self,
        room_id: &str,
        format: Format,
        lease: u64,
        now: Millis,
        grace_ms: Millis,
    ) -> Result<bool> {
        self.queue
            .release(room_id, format, lease, now, grace_ms)
            .await
    }

    async fn defer(
        &self,
        room_id: &str,
        format: Format,
        lease: u64,
        retry_at: Millis,
    ) -> Result<bool> {
        self.queue.defer(room_id, format, lease, retry_at).await
    }

    async fn abandon(
        &self,
        room_id: &str,
        format: Format,
        lease: u64,
        now: Millis,
        grace_ms: Millis,
    ) -> Result<bool> {
        self.queue
            .abandon(room_id, format, lease, now, grace_ms)
            .await
    }

    async fn expire(&self, now: Millis, max: usize) -> Result<u64> {
        self.queue.expire(now, max).await
    }

    async fn queue_lengths(&self) -> Result<Vec<(Format, u64)>> {
        self.queue.queue_lengths().await
    }

    async fn claim_request(
        &self,
        user_id: &str,
        request_id: &str,
        room_id: &str,
    ) -> Result<String> {
        self.lobby.claim_request(user_id, request_id, room_id).await
    }

    async fn claim_code(&self, code: &str, room_id: &str) -> Result<bool> {
        self.lobby.claim_code(code, room_id).await
    }

    async fn insert_room(&self, room: &RoomRecord) -> Result<()> {
        self.lobby.insert_room(room).await
    }

    async fn room(&self, id: &str) -> Result<Option<RoomRecord>> {
        self.lobby.room(id).await
    }

    async fn room_by_code(&self, code: &str) -> Result<Option<String>> {
        self.lobby.room_by_code(code).await
    }

    async fn take_seat(
        &self,
        room_id: &str,
        user_id: &str,
        guest: bool,
        preferred: Option<u32>,
    ) -> Result<TakeSeat> {
        self.lobby
            .take_seat(room_id, user_id, guest, preferred)
            .await
    }

    async fn free_seat(&self, room_id: &str, seat: u32, user_id: &str) -> Result<()> {
        self.lobby.free_seat(room_id, seat, user_id).await
    }

    async fn close_room(&self, room_id: &str) -> Result<()> {
        self.lobby.close_room(room_id).await
    }

    async fn expire_rooms(
        &self,
        now: Millis,
        retention_ms: Millis,
        max: usize,
    ) -> Result<Vec<String>> {
        self.lobby.expire_rooms(now, retention_ms, max).await
    }

    async fn list_public(
        &self,
        filter: LobbyFilter,
        after: u64,
        limit: usize,
        scan_cap: usize,
    ) -> Result<LobbyPage> {
        self.lobby.list_public(filter, after, limit, scan_cap).await
    }

    async fn wrong_codes(&self, user_id: &str, bucket: i64) -> Result<u32> {
        self.lobby.wrong_codes(user_id, bucket).await
    }

    async fn add_wrong_code(&self, user_id: &str, bucket: i64, ttl_ms: Millis) -> Result<u32> {
        self.lobby.add_wrong_code(user_id, bucket, ttl_ms).await
    }

    async fn note_invite(&self, user_id: &str, room_id: &str, ttl_ms: Millis) -> Result<()> {
        self.lobby.note_invite(user_id, room_id, ttl_ms).await
    }

    async fn invited(&self, user_id: &str, room_id: &str) -> Result<bool> {
        self.lobby.invited(user_id, room_id).await
    }

    async fn set_player_room(&self, user_id: &str, room_id: &str, ttl_ms: Millis) -> Result<()> {
        self.lobby.set_player_room(user_id, room_id, ttl_ms).await
    }

    async fn player_room(&self, user_id: &str) -> Result<Option<String>> {
        self.lobby.player_room(user_id).await
    }

    async fn queued_ticket(&self, user_id: &str) -> Result<Option<String>> {
        self.queue.queued_ticket(user_id).await
    }

    fn subscribe(&self) -> broadcast::Receiver<String> {
        self.events.subscribe()
    }
}
