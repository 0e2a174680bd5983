//! The Redis store. Keys of one room share the hash tag `{room:ID}`; every key starts
//! with the configured prefix. A commit is one Lua script (EVALSHA): version check,
//! idempotency check, state, log append, move answer, deadline, outbox, notification.
//!
//! | key | type | holds |
//! |---|---|---|
//! | `P:{room:ID}:state` | hash | `v` version, `data` room JSON, `st` "closed" or "", `q` last seq |
//! | `P:{room:ID}:log` | list | the events, JSON; index `seq - 1` |
//! | `P:{room:ID}:moves` | hash | `seat:client_move_id` → seq of the card played |
//! | `P:{room:ID}:actions` | list | the running match's actions, JSON (read at its end) |
//! | `P:deadlines` | sorted set | room id by its next deadline (Unix ms) |
//! | `P:rooms` | sorted set | room id by creation time |
//! | `P:outbox` | stream, group `forwarder` | encoded `MatchRecord`s |
//! | `P:leases` | sorted set | replica instance by the end of its presence lease (Unix ms) |
//! | `P:lease:INSTANCE` | set | the seats connected through that instance ([`LeasedSeat`]) |
//! | `P:leases-swept` | sorted set | instances whose lease expired, by when (kept a day) |
//! | `P:notify` | pub/sub channel | `seq room_id` after each commit (see [`Notice`]) |
//!
//! The global keys (deadlines, rooms, outbox) are written by the same script: on a
//! single Redis (or a primary with replicas) that is atomic. On Redis Cluster they would
//! have to be sharded per slot (not done yet).

use std::sync::Arc;
use std::time::Duration;

use redis::aio::ConnectionManager;
use redis::{AsyncCommands, Script};
use tokio::sync::broadcast;
use tokio_stream::StreamExt as _;
use tokio_util::sync::CancellationToken;

use super::{
    Commit, CommitOutcome, EventsAfter, ExpiredLease, LeasedSeat, Loaded, Notice, OutboxEntry,
    RoomHead, RoomStore,
};
use crate::error::{GameError, Result};
use crate::events::StoredEvent;
use crate::room::{ActionRecord, Room, Status};

/// The consumer group of the outbox.
const OUTBOX_GROUP: &str = "forwarder";

const COMMIT: &str = r#"
-- KEYS: 1 state, 2 log, 3 moves, 4 deadlines, 5 rooms, 6 outbox, 7 actions
-- ARGV: 1 expected version, 2 room JSON, 3 move key or '', 4 move seq, 5 status flag,
--       6 deadline or '', 7 room id, 8 created ms, 9 outbox payload or '', 10 channel,
--       11 notice, 12 ttl seconds or '', 13 number of events n, 14 number of actions m,
--       15 '1' to start a new action log or '', 16 last seq, 17..16+n events,
--       17+n..16+n+m actions
local cur = tonumber(redis.call('HGET', KEYS[1], 'v') or '0')
if cur ~= tonumber(ARGV[1]) then return {0, 0} end
if ARGV[3] ~= '' then
  local done = redis.call('HGET', KEYS[3], ARGV[3])
  if done then return {2, tonumber(done)} end
end
local n = tonumber(ARGV[13])
local m = tonumber(ARGV[14])
for i = 1, n, 500 do
  redis.call('RPUSH', KEYS[2], unpack(ARGV, 16 + i, 16 + math.min(i + 499, n)))
end
if ARGV[15] ~= '' then redis.call('DEL', KEYS[7]) end
for i = 1, m, 500 do
  redis.call('RPUSH', KEYS[7], unpack(ARGV, 16 + n + i, 16 + n + math.min(i + 499, m)))
end
local v = cur + 1
redis.call('HSET', KEYS[1], 'v', v, 'data', ARGV[2], 'st', ARGV[5], 'q', ARGV[16])
if ARGV[3] ~= '' then redis.call('HSET', KEYS[3], ARGV[3], ARGV[4]) end
if ARGV[6] == '' then
  redis.call('ZREM', KEYS[4], ARGV[7])
else
  redis.call('ZADD', KEYS[4], ARGV[6], ARGV[7])
end
if cur == 0 then redis.call('ZADD', KEYS[5], ARGV[8], ARGV[7]) end
if ARGV[9] ~= '' then redis.call('XADD', KEYS[6], '*', 'record', ARGV[9]) end
if ARGV[12] ~= '' then
  for _, k in ipairs({1, 2, 3, 7}) do redis.call('EXPIRE', KEYS[k], ARGV[12]) end
end
redis.call('PUBLISH', ARGV[10], ARGV[11])
return {1, v}
"#;

const CLAIM: &str = r#"
local s = redis.call('ZSCORE', KEYS[1], ARGV[1])
if s and tonumber(s) <= tonumber(ARGV[2]) then
  redis.call('ZADD', KEYS[1], ARGV[3], ARGV[1])
  return 1
end
return 0
"#;

const SYNC_DEADLINE: &str = r#"
if tonumber(redis.call('HGET', KEYS[1], 'v') or '0') ~= tonumber(ARGV[1]) then return 0 end
if ARGV[3] == '' then redis.call('ZREM', KEYS[2], ARGV[2])
else redis.call('ZADD', KEYS[2], ARGV[3], ARGV[2]) end
return 1
"#;

const LEASE_ADD: &str = r#"
-- KEYS: 1 leases, 2 swept, 3 the instance's seats; ARGV: 1 instance, 2 seat, 3 until ms
if redis.call('ZSCORE', KEYS[2], ARGV[1]) then return 0 end
redis.call('SADD', KEYS[3], ARGV[2])
redis.call('ZADD', KEYS[1], 'GT', ARGV[3], ARGV[1])
return 1
"#;

const LEASE_REFRESH: &str = r#"
-- KEYS: 1 leases, 2 swept; ARGV: 1 instance, 2 until ms
if redis.call('ZSCORE', KEYS[2], ARGV[1]) then return 0 end
redis.call('ZADD', KEYS[1], 'GT', ARGV[2], ARGV[1])
return 1
"#;

const LEASE_CLAIM: &str = r#"
-- KEYS: 1 leases, 2 swept; ARGV: 1 now ms, 2 claim ms, 3 limit
-- The swept mark comes first: from then on the instance can neither refresh its lease
-- nor add seats, even if it was only slow. The lease's new score is this claim's end:
-- if the sweeper dies, another claims the instance again then.
local out = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, ARGV[3])
for _, instance in ipairs(out) do
  redis.call('ZADD', KEYS[2], ARGV[1], instance)
  redis.call('ZADD', KEYS[1], tonumber(ARGV[1]) + tonumber(ARGV[2]), instance)
end
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', tonumber(ARGV[1]) - 86400000)
return out
"#;

const OUTBOX_FETCH: &str = r#"
-- KEYS: 1 outbox; ARGV: 1 group, 2 consumer, 3 min idle ms, 4 count
local out = {}
local claimed = redis.call('XAUTOCLAIM', KEYS[1], ARGV[1], ARGV[2], ARGV[3], '0-0', 'COUNT', ARGV[4])
for _, e in ipairs(claimed[2]) do
  if e[2] then table.insert(out, e[1]); table.insert(out, e[2][2]) end
end
if #out == 0 then
  local r = redis.call('XREADGROUP', 'GROUP', ARGV[1], ARGV[2], 'COUNT', ARGV[4], 'STREAMS', KEYS[1], '>')
  if r then
    for _, e in ipairs(r[1][2]) do table.insert(out, e[1]); table.insert(out, e[2][2]) end
  end
end
return out
"#;

/// Rooms in Redis.
#[derive(Clone)]
pub struct RedisStore {
    conn: ConnectionManager,
    prefix: Arc<str>,
    closed_ttl_seconds: u64,
    commit: Arc<Script>,
    claim: Arc<Script>,
    sync: Arc<Script>,
    outbox_fetch: Arc<Script>,
    lease_add: Arc<Script>,
    lease_refresh: Arc<Script>,
    lease_claim: Arc<Script>,
    notices: broadcast::Sender<Notice>,
}

impl std::fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisStore")
            .field("prefix", &self.prefix)
            .finish_non_exhaustive()
    }
}

impl RedisStore {
    /// Connects to `url`, creates the outbox group and starts listening for other
    /// replicas' notifications (until `shutdown`). Fails when Redis is unreachable.
    pub async fn connect(
        url: &str,
        prefix: &str,
        closed_ttl_seconds: u64,
        shutdown: CancellationToken,
    ) -> Result<RedisStore> {
        let client = redis::Client::open(url)?;
        let mut conn = client.get_connection_manager().await?;
        let _: () = redis::cmd("PING").query_async(&mut conn).await?;
        let store = RedisStore {
            conn,
            prefix: prefix.into(),
            closed_ttl_seconds,
            commit: Arc::new(Script::new(COMMIT)),
            claim: Arc::new(Script::new(CLAIM)),
            sync: Arc::new(Script::new(SYNC_DEADLINE)),
            outbox_fetch: Arc::new(Script::new(OUTBOX_FETCH)),
            lease_add: Arc::new(Script::new(LEASE_ADD)),
            lease_refresh: Arc::new(Script::new(LEASE_REFRESH)),
            lease_claim: Arc::new(Script::new(LEASE_CLAIM)),
            notices: broadcast::channel(4096).0,
        };
        store.ensure_group().await?;
        let mut pubsub = client.get_async_pubsub().await?;
        pubsub.subscribe(store.channel()).await?;
        tokio::spawn(listen(client, pubsub, store.clone(), shutdown));
        Ok(store)
    }

    async fn ensure_group(&self) -> Result<()> {
        let result: redis::RedisResult<()> = redis::cmd("XGROUP")
            .arg("CREATE")
            .arg(self.key("outbox"))
            .arg(OUTBOX_GROUP)
            .arg("0")
            .arg("MKSTREAM")
            .query_async(&mut self.conn.clone())
            .await;
        match result {
            Err(err) if err.code() == Some("BUSYGROUP") => Ok(()),
            other => Ok(other?),
        }
    }

    fn key(&self, name: &str) -> String {
        format!("{}:{name}", self.prefix)
    }

    fn room_key(&self, room_id: &str, name: &str) -> String {
        format!("{}:{{room:{room_id}}}:{name}", self.prefix)
    }

    fn lease_key(&self, instance: &str) -> String {
        format!("{}:lease:{instance}", self.prefix)
    }

    fn channel(&self) -> String {
        self.key("notify")
    }
}

/// Forwards pub/sub notifications to the local broadcast, reconnecting when the
/// subscription drops (then every local stream re-checks its room).
async fn listen(
    client: redis::Client,
    mut pubsub: redis::aio::PubSub,
    store: RedisStore,
    shutdown: CancellationToken,
) {
    loop {
        {
            let mut messages = pubsub.on_message();
            loop {
                let message = tokio::select! {
                    () = shutdown.cancelled() => return,
                    message = messages.next() => message,
                };
                let Some(message) = message else { break };
                let Ok(payload) = message.get_payload::<String>() else {
                    continue;
                };
                if let Some((seq, room_id)) = payload.split_once(' ')
                    && let Ok(seq) = seq.parse()
                {
                    let _ = store.notices.send(Notice {
                        room_id: room_id.into(),
                        seq,
                    });
                }
            }
        }
        tracing::warn!("redis subscription lost; reconnecting");
        loop {
            if shutdown.is_cancelled() {
                return;
            }
            match client.get_async_pubsub().await {
                Ok(mut fresh) => {
                    if fresh.subscribe(store.channel()).await.is_ok() {
                        pubsub = fresh;
                        // Streams may have missed notices meanwhile: a wildcard notice
                        // makes every local stream look at its room's log.
                        let _ = store.notices.send(Notice {
                            room_id: "*".into(),
                            seq: 0,
                        });
                        break;
                    }
                }
                Err(err) => tracing::warn!(error = %err, "redis subscription: reconnect failed"),
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }
}

#[tonic::async_trait]
impl RoomStore for RedisStore {
    async fn load(&self, room_id: &str) -> Result<Option<Loaded>> {
        let (version, data): (Option<u64>, Option<String>) = redis::cmd("HMGET")
            .arg(self.room_key(room_id, "state"))
            .arg("v")
            .arg("data")
            .query_async(&mut self.conn.clone())
            .await?;
        match (version, data) {
            (Some(version), Some(data)) => Ok(Some(Loaded {
                room: serde_json::from_str::<Room>(&data)?,
                version,
            })),
            _ => Ok(None),
        }
    }

    async fn commit(&self, commit: Commit<'_>) -> Result<CommitOutcome> {
        let room = commit.room;
        let closed = room.status == Status::Closed;
        let deadline = room
            .next_deadline()
            .filter(|_| !closed)
            .map(|at| at.to_string())
            .unwrap_or_default();
        let (move_key, move_seq) = commit.applied_move.unwrap_or_default();
        let mut invocation = self.commit.prepare_invoke();
        invocation
            .key(self.room_key(&room.id, "state"))
            .key(self.room_key(&room.id, "log"))
            .key(self.room_key(&room.id, "moves"))
            .key(self.key("deadlines"))
            .key(self.key("rooms"))
            .key(self.key("outbox"))
            .key(self.room_key(&room.id, "actions"))
            .arg(commit.expected_version)
            .arg(serde_json::to_string(room)?)
            .arg(move_key)
            .arg(move_seq)
            .arg(if closed { "closed" } else { "" })
            .arg(deadline)
            .arg(&room.id)
            .arg(room.created_at_ms)
            .arg(commit.outbox.unwrap_or_default())
            .arg(self.channel())
            .arg(format!(
                "{} {}",
                super::notice_seq(room, commit.events),
                room.id
            ))
            .arg(if closed {
                self.closed_ttl_seconds.to_string()
            } else {
                String::new()
            })
            .arg(commit.events.len())
            .arg(commit.actions.actions.len())
            .arg(if commit.actions.reset { "1" } else { "" })
            .arg(room.seq);
        for event in commit.events {
            invocation.arg(serde_json::to_string(event)?);
        }
        for action in &commit.actions.actions {
            invocation.arg(serde_json::to_string(action)?);
        }
        let (status, value): (i64, u64) = invocation.invoke_async(&mut self.conn.clone()).await?;
        Ok(match status {
            1 => CommitOutcome::Committed { version: value },
            2 => CommitOutcome::AlreadyApplied { seq: value },
            _ => CommitOutcome::Conflict,
        })
    }

    async fn events_after(&self, room_id: &str, after: u64) -> Result<EventsAfter> {
        let ((version, status), raw): ((Option<u64>, Option<String>), Vec<String>) = redis::pipe()
            .cmd("HMGET")
            .arg(self.room_key(room_id, "state"))
            .arg("v")
            .arg("st")
            .lrange(self.room_key(room_id, "log"), after as isize, -1)
            .query_async(&mut self.conn.clone())
            .await?;
        let exists = version.is_some();
        let events = raw
            .iter()
            .map(|text| serde_json::from_str::<StoredEvent>(text))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(EventsAfter {
            events,
            closed: status.as_deref() == Some("closed"),
            exists,
        })
    }

    async fn room_heads(&self, room_ids: &[Arc<str>]) -> Result<Vec<Option<RoomHead>>> {
        if room_ids.is_empty() {
            return Ok(Vec::new());
        }
        let mut pipe = redis::pipe();
        for id in room_ids {
            pipe.cmd("HMGET")
                .arg(self.room_key(id, "state"))
                .arg("q")
                .arg("st");
        }
        let heads: Vec<(Option<u64>, Option<String>)> =
            pipe.query_async(&mut self.conn.clone()).await?;
        Ok(heads
            .into_iter()
            .map(|(seq, status)| {
                seq.map(|seq| RoomHead {
                    seq,
                    closed: status.as_deref() == Some("closed"),
                })
            })
            .collect())
    }

    async fn match_actions(&self, room_id: &str) -> Result<Vec<ActionRecord>> {
        let raw: Vec<String> = self
            .conn
            .clone()
            .lrange(self.room_key(room_id, "actions"), 0, -1)
            .await?;
        Ok(raw
            .iter()
            .map(|text| serde_json::from_str(text))
            .collect::<Result<_, _>>()?)
    }

    async fn applied_move(&self, room_id: &str, key: &str) -> Result<Option<u64>> {
        Ok(self
            .conn
            .clone()
            .hget(self.room_key(room_id, "moves"), key)
            .await?)
    }

    async fn due_rooms(&self, now_ms: i64, limit: usize) -> Result<Vec<String>> {
        Ok(self
            .conn
            .clone()
            .zrangebyscore_limit(self.key("deadlines"), "-inf", now_ms, 0, limit as isize)
            .await?)
    }

    async fn claim_due(&self, room_id: &str, now_ms: i64, lease_ms: i64) -> Result<bool> {
        let claimed: i64 = self
            .claim
            .key(self.key("deadlines"))
            .arg(room_id)
            .arg(now_ms)
            .arg(now_ms + lease_ms)
            .invoke_async(&mut self.conn.clone())
            .await?;
        Ok(claimed == 1)
    }

    async fn sync_deadline(
        &self,
        room_id: &str,
        version: u64,
        deadline: Option<i64>,
    ) -> Result<()> {
        let _: i64 = self
            .sync
            .key(self.room_key(room_id, "state"))
            .key(self.key("deadlines"))
            .arg(version)
            .arg(room_id)
            .arg(deadline.map(|at| at.to_string()).unwrap_or_default())
            .invoke_async(&mut self.conn.clone())
            .await?;
        Ok(())
    }

    async fn list_rooms(&self, offset: usize, count: usize) -> Result<Vec<String>> {
        if count == 0 {
            return Ok(Vec::new());
        }
        Ok(self
            .conn
            .clone()
            .zrevrange(
                self.key("rooms"),
                offset as isize,
                (offset + count - 1) as isize,
            )
            .await?)
    }

    async fn outbox_fetch(
        &self,
        consumer: &str,
        min_idle_ms: u64,
        count: usize,
    ) -> Result<Vec<OutboxEntry>> {
        let flat: Vec<Vec<u8>> = self
            .outbox_fetch
            .key(self.key("outbox"))
            .arg(OUTBOX_GROUP)
            .arg(consumer)
            .arg(min_idle_ms)
            .arg(count)
            .invoke_async(&mut self.conn.clone())
            .await?;
        flat.chunks(2)
            .map(|pair| match pair {
                [id, payload] => Ok(OutboxEntry {
                    id: String::from_utf8_lossy(id).into_owned(),
                    payload: payload.clone(),
                }),
                _ => Err(GameError::Corrupt("odd outbox reply".into())),
            })
            .collect()
    }

    async fn outbox_ack(&self, id: &str) -> Result<()> {
        let _: () = redis::pipe()
            .cmd("XACK")
            .arg(self.key("outbox"))
            .arg(OUTBOX_GROUP)
            .arg(id)
            .ignore()
            .cmd("XDEL")
            .arg(self.key("outbox"))
            .arg(id)
            .ignore()
            .query_async(&mut self.conn.clone())
            .await?;
        Ok(())
    }

    async fn lease_add(&self, instance: &str, seat: &LeasedSeat, until_ms: i64) -> Result<bool> {
        let added: i64 = self
            .lease_add
            .key(self.key("leases"))
            .key(self.key("leases-swept"))
            .key(self.lease_key(instance))
            .arg(instance)
            .arg(seat.encode())
            .arg(until_ms)
            .invoke_async(&mut self.conn.clone())
            .await?;
        Ok(added == 1)
    }

    async fn lease_remove(&self, instance: &str, seat: &LeasedSeat) -> Result<()> {
        let _: () = self
            .conn
            .clone()
            .srem(self.lease_key(instance), seat.encode())
            .await?;
        Ok(())
    }

    async fn lease_refresh(&self, instance: &str, until_ms: i64) -> Result<bool> {
        let alive: i64 = self
            .lease_refresh
            .key(self.key("leases"))
            .key(self.key("leases-swept"))
            .arg(instance)
            .arg(until_ms)
            .invoke_async(&mut self.conn.clone())
            .await?;
        Ok(alive == 1)
    }

    async fn lease_claim_expired(
        &self,
        now_ms: i64,
        claim_ms: i64,
        limit: usize,
    ) -> Result<Vec<ExpiredLease>> {
        let instances: Vec<String> = self
            .lease_claim
            .key(self.key("leases"))
            .key(self.key("leases-swept"))
            .arg(now_ms)
            .arg(claim_ms)
            .arg(limit)
            .invoke_async(&mut self.conn.clone())
            .await?;
        let mut expired = Vec::with_capacity(instances.len());
        for instance in instances {
            let raw: Vec<String> = self
                .conn
                .clone()
                .smembers(self.lease_key(&instance))
                .await?;
            expired.push(ExpiredLease {
                seats: raw.iter().filter_map(|s| LeasedSeat::decode(s)).collect(),
                instance,
            });
        }
        Ok(expired)
    }

    async fn lease_release(&self, instance: &str) -> Result<()> {
        let _: () = redis::pipe()
            .del(self.lease_key(instance))
            .ignore()
            .zrem(self.key("leases"), instance)
            .ignore()
            .query_async(&mut self.conn.clone())
            .await?;
        Ok(())
    }

    fn notices(&self) -> broadcast::Receiver<Notice> {
        self.notices.subscribe()
    }
}
