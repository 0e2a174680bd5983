//! The Redis store: one Redis or a Redis Cluster (see `basra_platform::redis`).
//!
//! Rooms are spread over [`SHARDS`] shards by their id ([`shard_of`]); every key of a
//! room and every index a room's commit writes carries its shard's hash tag `{gs:S}`,
//! so each script touches one hash slot. Each declares every key it touches, except the
//! plain play's (`lua/play.lua`), which names the room's state key alone and builds the
//! others from it: they share its slot, which is all a cluster node checks, and a play's
//! command stays under 300 bytes. The timer
//! loop, the outbox forwarder and the lease sweep walk the shards a replica holds
//! (divided between the live replicas by [`RoomStore::walk_shards`], in the slot of
//! `{gs:walk}`); the admin listing walks them all. Presence leases are sharded by
//! replica instance the same way.
//!
//! | key (`P` the prefix, `S` the shard) | type | holds |
//! |---|---|---|
//! | `P:{gs:S}:room:ID:state` | hash | `v` version, `data` the room's snapshot (binary, a format byte first; JSON before: see `codec.rs`), `st` "closed" or "" (or, from releases before `lua/play.lua`'s present form, the snapshot's seq when their plain plays followed it), `q` the snapshot's seq (the room is the snapshot with the plays of the log after that seq replayed: `plain_play.rs`; the last seq is the log's length), `m:seat:client_move_id` the seq of that move's card played (written by releases before that form; still read) |
//! | `P:{gs:S}:room:ID:log` | list | the events, JSON, a plain play's compact; index `seq - 1` |
//! | `P:{gs:S}:room:ID:moves` | hash | `seat:client_move_id` → seq of the card played, written by every commit but a plain play's (whose card_played on the log ends with the id: `lua/moves.lua`) |
//! | `P:{gs:S}:room:ID:actions` | list | the running match's actions but the plain plays after the snapshot, JSON or compact (read at its end) |
//! | `P:{gs:S}:deadlines` | sorted set | the shard's room ids by next deadline (Unix ms) |
//! | `P:{gs:S}:rooms` | sorted set | the shard's room ids by creation time |
//! | `P:{gs:S}:outbox` | stream, group `forwarder` | `record`: an encoded `MatchRecord`; `trace`: the trace context of the action that finished it |
//! | `P:{gs:S}:notify` | shard channel (`SPUBLISH`) | `seq room_id` after each commit, a line a room after a call of plain plays (see [`Notice`]) |
//! | `P:{gs:S}:leases` | sorted set | replica instances of the shard by the end of their presence lease (Unix ms) |
//! | `P:{gs:S}:lease:INSTANCE` | set | the seats connected through that instance ([`LeasedSeat`]) |
//! | `P:{gs:S}:leases-swept` | sorted set | instances whose lease expired, by when (kept a day) |
//! | `P:{gs:walk}:walkers` | sorted set | replicas walking shards, by the end of their walk lease (Unix ms) |
//! | `P:{gs:walk}:walks` | hash | shard → `epoch until walker`: who walks it, until when, its fencing number |
//!
//! [`SHARDS`] is part of the key layout: changing it strands the rooms already stored.

use std::sync::{
    Arc,
    atomic::{AtomicU64, Ordering},
};

use basra_platform::redis::{
    Connection, Keys, PubSubEvent, Redis, Script, run_script, script_call,
};
use redis::{AsyncCommands, RedisWrite as _};
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use super::play_batch::{PlayBatches, QueuedPlay};
use super::{
    Commit, CommitOutcome, EventsAfter, ExpiredLease, LeasedSeat, Loaded, Notice, OutboxEntry,
    OutboxRecord, PlainPlays, RoomHead, RoomStore, SHARDS, WalkLease, plain_play, shard_of,
};
use crate::error::{GameError, Result};
use crate::room::{ActionRecord, Status};

/// What the load script answers for a room that exists: its version, its snapshot, and
/// the seq its plain plays follow with those plays (`lua/load.lua`).
type StoredRoom = (u64, Vec<u8>, Option<u64>, Vec<Vec<u8>>);

/// A room as the load script read it: its snapshot with its plain plays replayed.
fn loaded(room_id: &str, (version, data, from, tail): StoredRoom) -> Result<Loaded> {
    let mut room = super::decode_room(&data)?;
    let corrupt = |what: String| GameError::Corrupt(format!("room {room_id}: {what}"));
    if from.is_some_and(|from| from != room.seq) {
        return Err(corrupt(format!(
            "its plain plays follow seq {from:?}, its snapshot is at {}",
            room.seq
        )));
    }
    let mut plays = 0;
    for entry in &tail {
        if entry.first() != Some(&plain_play::CARD_PLAYED) {
            continue; // a deal or a turn: made again by the play before it
        }
        let action = plain_play::decode_action(entry)?;
        room.replay(&action).map_err(|reject| {
            corrupt(format!("a plain play does not replay: {}", reject.message))
        })?;
        plays += 1;
    }
    if room.seq != from.unwrap_or(room.seq) + tail.len() as u64 {
        return Err(corrupt(format!(
            "its plain plays replayed to seq {}, its log holds {} events after {from:?}",
            room.seq,
            tail.len()
        )));
    }
    Ok(Loaded {
        room,
        version,
        tail: plays,
    })
}

/// The consumer group of the outbox.
const OUTBOX_GROUP: &str = "forwarder";

/// The scripts, from the `.lua` files next to this one.
#[derive(Debug)]
struct Scripts {
    commit: Script,
    play: Script,
    load: Script,
    moves: Script,
    actions: Script,
    claim: Script,
    sync: Script,
    outbox_fetch: Script,
    lease_add: Script,
    lease_refresh: Script,
    lease_claim: Script,
    walk_shards: Script,
}

impl Scripts {
    fn new() -> Scripts {
        Scripts {
            commit: Script::new(COMMIT_LUA),
            play: Script::new(include_str!("lua/play.lua")),
            load: Script::new(include_str!("lua/load.lua")),
            moves: Script::new(include_str!("lua/moves.lua")),
            actions: Script::new(include_str!("lua/actions.lua")),
            claim: Script::new(include_str!("lua/claim_due.lua")),
            sync: Script::new(include_str!("lua/sync_deadline.lua")),
            outbox_fetch: Script::new(include_str!("lua/outbox_fetch.lua")),
            lease_add: Script::new(include_str!("lua/lease_add.lua")),
            lease_refresh: Script::new(include_str!("lua/lease_refresh.lua")),
            lease_claim: Script::new(include_str!("lua/lease_claim.lua")),
            walk_shards: Script::new(include_str!("lua/walk_shards.lua")),
        }
    }
}

/// `gs:S`, the hash tag of shard `S`, made once.
fn shard_tag(shard: u32) -> &'static str {
    static TAGS: std::sync::LazyLock<Vec<String>> =
        std::sync::LazyLock::new(|| (0..SHARDS).map(|shard| format!("gs:{shard}")).collect());
    &TAGS[shard as usize]
}

/// The commit script (public so that the benchmark runs the real one).
pub const COMMIT_LUA: &str = include_str!("lua/commit.lua");

/// The most plain plays a room's tail holds: the next commit writes a snapshot. A round
/// is 48 plays and its last scores, which writes one anyway; this bounds what a load
/// replays in four-player rooms (96 plays a round).
const TAIL_LIMIT: usize = 48;

/// How many of a room's last events a client move's answer is looked for among
/// ([`RoomStore::applied_move`]): a plain play's answer is its `card_played` on the log.
/// Two rounds of a two-player match; the round's last play (a snapshot's) is recorded.
const MOVES_LOOKED_THROUGH: usize = 256;

/// Connections to a single Redis node that the store's calls take in turn (see
/// `basra_platform::redis::Redis::connect_pool`: one connection carries only about 16 KiB
/// of commands per turn of Redis's event loop, and per AOF sync under `appendfsync
/// always`; a join storm writes thousands of room states at once).
const REDIS_CONNECTIONS: usize = 8;

/// Rooms in Redis.
#[derive(Clone)]
pub struct RedisStore {
    redis: Redis,
    keys: Keys,
    closed_ttl_seconds: u64,
    scripts: Arc<Scripts>,
    /// After each commit, wait for this many replicas to have it (0: do not wait).
    /// Waiting for replicas after each commit.
    wait: ReplicaWait,
    /// The plain plays' calls, started by the first plain play (with the settings made
    /// by then).
    batches: Arc<std::sync::OnceLock<PlayBatches>>,
    /// The form rooms are written in (both are read).
    room_format: super::RoomFormat,
    notices: broadcast::Sender<Notice>,
}

/// Waiting for replicas after a commit (`redis.wait_replicas`).
#[derive(Debug, Clone, Default)]
pub(super) struct ReplicaWait {
    /// Wait for this many replicas to have each commit (0: do not wait).
    pub replicas: u32,
    /// For at most this long.
    pub timeout_ms: u64,
    /// Commits not on enough replicas, logged at most once a second.
    unreplicated: Arc<Unreplicated>,
}

impl ReplicaWait {
    /// After a commit of the room `room_id` through `conn`, whose primary has `connected`
    /// replicas: waits for `replicas` of them, when there are enough to answer.
    pub(super) async fn after_commit(
        &self,
        conn: &mut Connection,
        key: &str,
        room_id: &str,
        connected: u64,
    ) -> Result<()> {
        if self.replicas == 0 {
            return Ok(());
        }
        // WAIT blocks the connection, which every call to that primary shares, so it is
        // sent only when the primary has enough replicas to answer it (after a failover,
        // the promoted primary has none until its old peer comes back: waiting for the
        // timeout on every commit would stall all of its rooms).
        let acked = if connected >= u64::from(self.replicas) {
            conn.wait_for_replicas(key, self.replicas, self.timeout_ms)
                .await?
        } else {
            0
        };
        if acked < self.replicas {
            // Committed on the primary all the same: the play stands; only its survival
            // of a primary crash in the next instants is not assured.
            self.unreplicated
                .report(room_id, acked, self.replicas, connected);
        }
        Ok(())
    }
}

/// Commits that did not reach `wait_replicas` replicas: counted, and logged at most
/// once a second (after a failover every commit of a primary is one, thousands a
/// second).
#[derive(Debug, Default)]
struct Unreplicated {
    since_last_log: AtomicU64,
    last_log: std::sync::Mutex<Option<std::time::Instant>>,
}

impl Unreplicated {
    fn report(&self, room_id: &str, acked: u32, wanted: u32, connected: u64) {
        let count = self.since_last_log.fetch_add(1, Ordering::Relaxed) + 1;
        let mut last = self.last_log.lock().unwrap_or_else(|e| e.into_inner());
        if last.is_some_and(|at| at.elapsed() < std::time::Duration::from_secs(1)) {
            return;
        }
        *last = Some(std::time::Instant::now());
        self.since_last_log.store(0, Ordering::Relaxed);
        tracing::warn!(
            room_id,
            acked,
            wanted,
            connected_replicas = connected,
            commits = count,
            "commits not on enough replicas in time (count since the last such log)"
        );
    }
}

impl std::fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisStore")
            .field("prefix", &self.keys.prefix())
            .finish_non_exhaustive()
    }
}

impl RedisStore {
    /// Connects to `url` (one node, or a comma-separated list of cluster nodes), creates
    /// the outbox groups and starts listening for other replicas' notifications (until
    /// `shutdown`). Fails when Redis is unreachable.
    pub async fn connect(
        url: &str,
        prefix: &str,
        closed_ttl_seconds: u64,
        shutdown: CancellationToken,
    ) -> Result<RedisStore> {
        let keys = Keys::new(prefix).map_err(GameError::Invalid)?;
        let redis = Redis::connect_pool(url, REDIS_CONNECTIONS).await?;
        let store = RedisStore {
            redis: redis.clone(),
            keys,
            closed_ttl_seconds,
            scripts: Arc::new(Scripts::new()),
            wait: ReplicaWait::default(),
            batches: Arc::default(),
            room_format: super::RoomFormat::default(),
            notices: broadcast::channel(4096).0,
        };
        for shard in 0..SHARDS {
            store.ensure_group(shard).await?;
        }
        let notices = store.notices.clone();
        let channels = (0..SHARDS).map(|shard| store.channel(shard)).collect();
        redis
            .subscribe(channels, shutdown, move |event| match event {
                // `seq room_id`, a line a room (a call of plain plays notifies once).
                PubSubEvent::Message { payload, .. } => {
                    let payload = String::from_utf8_lossy(&payload);
                    for line in payload.split('\n') {
                        if let Some((seq, room_id)) = line.split_once(' ')
                            && let Ok(seq) = seq.parse()
                        {
                            let _ = notices.send(Notice {
                                room_id: room_id.into(),
                                seq,
                            });
                        }
                    }
                }
                // Streams may have missed notices meanwhile: a wildcard notice makes
                // every local stream look at its room's log.
                PubSubEvent::Resubscribed => {
                    let _ = notices.send(Notice {
                        room_id: "*".into(),
                        seq: 0,
                    });
                }
            })
            .await?;
        Ok(store)
    }

    /// Makes every commit wait until `replicas` replicas of its primary have it (`WAIT`),
    /// for at most `timeout_ms`: a primary that crashes right after answering then loses
    /// no acknowledged play, unless the wait timed out. 0 replicas: no wait (the default;
    /// see the README's durability figures).
    pub fn with_replica_wait(mut self, replicas: u32, timeout_ms: u64) -> RedisStore {
        self.wait.replicas = replicas;
        self.wait.timeout_ms = timeout_ms;
        self
    }

    /// Writes rooms in `format` (binary by default; both forms are always read): JSON
    /// while replicas of a version that reads only JSON still run (a rolling upgrade).
    pub fn with_room_format(mut self, format: super::RoomFormat) -> RedisStore {
        self.room_format = format;
        self
    }

    /// How many times the cluster client was rebuilt after its calls kept failing (see
    /// `basra_platform::redis::ClusterConn`; 0 on one node).
    pub fn client_rebuilds(&self) -> u64 {
        self.redis.conn().rebuilds()
    }

    async fn ensure_group(&self, shard: u32) -> Result<()> {
        let result: redis::RedisResult<()> = redis::cmd("XGROUP")
            .arg("CREATE")
            .arg(self.shard_key(shard, "outbox"))
            .arg(OUTBOX_GROUP)
            .arg("0")
            .arg("MKSTREAM")
            .query_async(&mut self.conn())
            .await;
        match result {
            Err(err) if err.code() == Some("BUSYGROUP") => Ok(()),
            other => Ok(other?),
        }
    }

    /// The next connection of the pool.
    fn conn(&self) -> Connection {
        self.redis.conn()
    }

    fn shard_key(&self, shard: u32, name: &str) -> String {
        self.keys.key_of(&[shard_tag(shard)], &[name])
    }

    fn room_shard(room_id: &str) -> u32 {
        shard_of(room_id)
    }

    /// The load script's call for one room (`lua/load.lua`).
    fn load_call(&self, room_id: &str) -> redis::Cmd {
        let mut call = script_call(&self.scripts.load, 2, 2, 2 * (room_id.len() + 48));
        call.arg(self.room_key(room_id, "state"))
            .arg(self.room_key(room_id, "log"));
        call
    }

    fn room_key(&self, room_id: &str, name: &str) -> String {
        // Built in one allocation: a play's commit names eight keys.
        let tag = shard_tag(Self::room_shard(room_id));
        self.keys.key_of(&[tag], &["room:", room_id, ":", name])
    }

    fn lease_key(&self, instance: &str, name: &str) -> String {
        self.shard_key(shard_of(instance), name)
    }

    fn lease_seats_key(&self, instance: &str) -> String {
        self.lease_key(instance, &format!("lease:{instance}"))
    }

    fn channel(&self, shard: u32) -> String {
        self.shard_key(shard, "notify")
    }
}

impl RedisStore {
    /// A commit that writes the room's snapshot (`lua/commit.lua`).
    fn snapshot_call(&self, commit: &Commit<'_>) -> Result<redis::Cmd> {
        let room = commit.room;
        let shard = Self::room_shard(&room.id);
        let closed = room.status == Status::Closed;
        let deadline = room
            .next_deadline()
            .filter(|_| !closed)
            .map(|at| at.to_string())
            .unwrap_or_default();
        let (move_key, move_seq) = match &commit.applied_move {
            Some((key, seq)) => (key.as_str(), *seq),
            None => ("", 0),
        };
        let (payload, trace_context) = match &commit.outbox {
            Some(outbox) => (outbox.payload.as_slice(), outbox.trace_context.as_str()),
            None => (&[][..], ""),
        };
        let state = super::encode_room_as(room, self.room_format)?;
        // Keys and arguments go straight into the command's one buffer (the events and
        // actions serialized in place), sized for them up front: a play's commit is the
        // hot path. An event takes 60-200 bytes of JSON, an action 40-120.
        // 8 keys, 16 arguments before the events and actions, the replica-wait flag after.
        let args = 8 + 16 + commit.events.len() + commit.actions.actions.len() + 1;
        let bytes = 512
            + 8 * (room.id.len() + 48)
            + state.len()
            + payload.len()
            + 256 * commit.events.len()
            + 128 * commit.actions.actions.len();
        let mut call = script_call(&self.scripts.commit, 8, args, bytes);
        call.arg(self.room_key(&room.id, "state"))
            .arg(self.room_key(&room.id, "log"))
            .arg(self.room_key(&room.id, "moves"))
            .arg(self.shard_key(shard, "deadlines"))
            .arg(self.shard_key(shard, "rooms"))
            .arg(self.shard_key(shard, "outbox"))
            .arg(self.room_key(&room.id, "actions"))
            .arg(self.channel(shard))
            .arg(commit.expected_version)
            .arg(state)
            .arg(move_key)
            .arg(move_seq)
            .arg(if closed { "closed" } else { "" })
            .arg(deadline)
            .arg(&room.id)
            .arg(room.created_at_ms)
            .arg(payload)
            .arg(trace_context)
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
            serde_json::to_writer(call.writer_for_next_arg(), event)?;
        }
        for action in &commit.actions.actions {
            serde_json::to_writer(call.writer_for_next_arg(), action)?;
        }
        call.arg(if self.wait.replicas > 0 { "1" } else { "" });
        Ok(call)
    }

    /// A plain play as its shard's next call carries it (`play_batch.rs`, `lua/play.lua`):
    /// its events, compact (the client move id at the end of the first); about 200 bytes
    /// with a 36-character room id and client move id, the call's own header aside.
    /// `None`: not a plain play.
    fn queued_play(&self, commit: &Commit<'_>) -> Option<QueuedPlay> {
        let room = commit.room;
        let events = plain_play::encode(commit.events, commit.actions.actions.first()?)?;
        let mut args = Vec::with_capacity(3 + events.len());
        args.push(commit.expected_version.to_string().into_bytes());
        args.push(room.next_deadline()?.to_string().into_bytes());
        args.push(events.len().to_string().into_bytes());
        args.extend(events);
        Some(QueuedPlay {
            key: self.room_key(&room.id, ""),
            room_id: room.id.clone(),
            args,
        })
    }
}

/// An outbox entry id: the shard, then the stream entry id.
fn outbox_id(shard: u32, entry: &str) -> String {
    format!("{shard}/{entry}")
}

fn parse_outbox_id(id: &str) -> Result<(u32, &str)> {
    id.split_once('/')
        .and_then(|(shard, entry)| Some((shard.parse().ok().filter(|s| *s < SHARDS)?, entry)))
        .ok_or_else(|| GameError::Corrupt(format!("outbox id {id:?}")))
}

#[tonic::async_trait]
impl RoomStore for RedisStore {
    async fn load(&self, room_id: &str) -> Result<Option<Loaded>> {
        let call = self.load_call(room_id);
        let stored: Option<StoredRoom> =
            run_script(&self.scripts.load, &call, &mut self.conn()).await?;
        stored.map(|stored| loaded(room_id, stored)).transpose()
    }

    async fn load_many(&self, room_ids: &[String]) -> Result<Vec<Result<Option<Loaded>>>> {
        // One pipeline of load scripts per shard (a cluster pipeline stays in one slot),
        // all at once, as `room_heads`.
        let mut by_shard: Vec<Vec<usize>> = vec![Vec::new(); SHARDS as usize];
        for (i, id) in room_ids.iter().enumerate() {
            by_shard[Self::room_shard(id) as usize].push(i);
        }
        let mut calls = tokio::task::JoinSet::new();
        for indexes in by_shard.into_iter().filter(|ix| !ix.is_empty()) {
            let mut pipe = redis::pipe();
            for &i in &indexes {
                pipe.add_command(self.load_call(&room_ids[i]));
            }
            let (mut conn, script) = (self.conn(), self.scripts.load.clone());
            calls.spawn(async move {
                let first: redis::RedisResult<Vec<Option<StoredRoom>>> =
                    pipe.query_async(&mut conn).await;
                let rooms = match first {
                    // A server without the script (restarted, failed over): given it,
                    // the pipeline is sent again, as `run_script` does for one call.
                    Err(err)
                        if err.kind()
                            == redis::ErrorKind::Server(redis::ServerErrorKind::NoScript) =>
                    {
                        script.load_async(&mut conn).await?;
                        pipe.query_async(&mut conn).await
                    }
                    other => other,
                };
                rooms.map(|rooms| (indexes, rooms))
            });
        }
        let mut out: Vec<Result<Option<Loaded>>> = room_ids.iter().map(|_| Ok(None)).collect();
        while let Some(joined) = calls.join_next().await {
            let (indexes, rooms) =
                joined.map_err(|err| GameError::Unavailable(format!("room loads: {err}")))??;
            for (i, stored) in indexes.into_iter().zip(rooms) {
                out[i] = stored
                    .map(|stored| loaded(&room_ids[i], stored))
                    .transpose();
            }
        }
        Ok(out)
    }

    fn tail_limit(&self) -> usize {
        if self.room_format == super::RoomFormat::Binary {
            TAIL_LIMIT
        } else {
            0
        }
    }

    async fn commit(&self, commit: Commit<'_>) -> Result<CommitOutcome> {
        let plain = commit
            .plain_play
            .then(|| self.queued_play(&commit))
            .flatten();
        let (status, value) = match plain {
            Some(play) => {
                let batches = self.batches.get_or_init(|| {
                    PlayBatches::start(
                        self.redis.clone(),
                        self.scripts.play.clone(),
                        self.wait.clone(),
                    )
                });
                batches
                    .commit(Self::room_shard(&commit.room.id), play)
                    .await?
            }
            None => {
                let call = self.snapshot_call(&commit)?;
                let mut conn = self.conn();
                let out: Vec<u64> = run_script(&self.scripts.commit, &call, &mut conn).await?;
                let (status, value) = match out.as_slice() {
                    [status, value, ..] => (*status, *value),
                    _ => return Err(GameError::Corrupt("commit: a malformed answer".into())),
                };
                if status == 1 && self.wait.replicas > 0 {
                    let room = commit.room;
                    let connected = out.get(2).copied().unwrap_or(0);
                    let state = self.room_key(&room.id, "state");
                    self.wait
                        .after_commit(&mut conn, &state, &room.id, connected)
                        .await?;
                }
                (status, value)
            }
        };
        Ok(match status {
            1 => CommitOutcome::Committed { version: value },
            2 => CommitOutcome::AlreadyApplied { seq: value },
            _ => CommitOutcome::Conflict,
        })
    }

    async fn events_after(&self, room_id: &str, after: u64) -> Result<EventsAfter> {
        // In one step (MULTI; the room's keys share a slot): the version and the
        // snapshot's seq are those of the log read.
        type Head = (Option<u64>, Option<String>, Option<u64>);
        let ((version, status, snapshot), raw): (Head, Vec<Vec<u8>>) = redis::pipe()
            .atomic()
            .cmd("HMGET")
            .arg(self.room_key(room_id, "state"))
            .arg("v")
            .arg("st")
            .arg("q")
            .lrange(self.room_key(room_id, "log"), after as isize, -1)
            .query_async(&mut self.conn())
            .await?;
        let exists = version.is_some();
        let events = raw
            .iter()
            .map(|bytes| plain_play::decode_event(bytes))
            .collect::<Result<Vec<_>>>()?;
        // The snapshot's seq is `q`, or `st` where a release before that form named it.
        let snapshot = status
            .as_deref()
            .and_then(|status| status.parse().ok())
            .or(snapshot);
        let plain = match (version, snapshot) {
            // Every event read was stored after the snapshot: by plain plays.
            (Some(version), Some(snapshot)) if snapshot <= after => {
                let mut plays = Vec::new();
                for (seq, bytes) in (after + 1..).zip(&raw) {
                    if bytes.first() == Some(&plain_play::CARD_PLAYED) {
                        plays.push((seq, plain_play::decode_action(bytes)?));
                    }
                }
                Some(PlainPlays { version, plays })
            }
            _ => None,
        };
        Ok(EventsAfter {
            events,
            closed: status.as_deref() == Some("closed"),
            exists,
            plain,
        })
    }

    async fn room_heads(&self, room_ids: &[Arc<str>]) -> Result<Vec<Option<RoomHead>>> {
        // One pipeline per shard (a cluster pipeline stays in one slot), all at once.
        let mut by_shard: Vec<Vec<usize>> = vec![Vec::new(); SHARDS as usize];
        for (i, id) in room_ids.iter().enumerate() {
            by_shard[Self::room_shard(id) as usize].push(i);
        }
        let mut calls = tokio::task::JoinSet::new();
        for indexes in by_shard.into_iter().filter(|ix| !ix.is_empty()) {
            let mut pipe = redis::pipe();
            // The last seq is the log's length (a plain play writes no field).
            for &i in &indexes {
                pipe.cmd("HMGET")
                    .arg(self.room_key(&room_ids[i], "state"))
                    .arg("v")
                    .arg("st")
                    .llen(self.room_key(&room_ids[i], "log"));
            }
            let mut conn = self.conn();
            calls.spawn(async move {
                type Head = ((Option<u64>, Option<String>), u64);
                let heads: redis::RedisResult<Vec<Head>> = pipe.query_async(&mut conn).await;
                heads.map(|heads| (indexes, heads))
            });
        }
        let mut out = vec![None; room_ids.len()];
        while let Some(joined) = calls.join_next().await {
            let (indexes, heads) =
                joined.map_err(|err| GameError::Unavailable(format!("room heads: {err}")))??;
            for (i, ((version, status), seq)) in indexes.into_iter().zip(heads) {
                out[i] = version.map(|_| RoomHead {
                    seq,
                    closed: status.as_deref() == Some("closed"),
                });
            }
        }
        Ok(out)
    }

    async fn match_actions(&self, room_id: &str) -> Result<Vec<ActionRecord>> {
        let mut call = script_call(&self.scripts.actions, 3, 3, 3 * (room_id.len() + 48));
        call.arg(self.room_key(room_id, "state"))
            .arg(self.room_key(room_id, "log"))
            .arg(self.room_key(room_id, "actions"));
        let stored: Vec<Vec<u8>> =
            run_script(&self.scripts.actions, &call, &mut self.conn()).await?;
        stored
            .iter()
            .map(|bytes| plain_play::decode_action(bytes))
            .collect()
    }

    async fn applied_move(&self, room_id: &str, key: &str) -> Result<Option<u64>> {
        // Recorded by a snapshot's commit, or a plain play's card_played among the last
        // events (a client retries a move whose answer it lost, seconds later).
        let mut call = script_call(&self.scripts.moves, 3, 5, 4 * (room_id.len() + 48));
        call.arg(self.room_key(room_id, "state"))
            .arg(self.room_key(room_id, "moves"))
            .arg(self.room_key(room_id, "log"))
            .arg(key)
            .arg(MOVES_LOOKED_THROUGH);
        let (recorded, before, events): (u64, u64, Vec<Vec<u8>>) =
            run_script(&self.scripts.moves, &call, &mut self.conn()).await?;
        if recorded > 0 {
            return Ok(Some(recorded));
        }
        let (seat, move_id) = key
            .split_once(':')
            .and_then(|(seat, id)| Some((seat.parse::<u8>().ok()?, id)))
            .ok_or_else(|| GameError::Invalid(format!("move key {key:?}")))?;
        for (i, event) in events.iter().enumerate() {
            if let Some((played_by, id)) = plain_play::played_move(event)?
                && id == move_id
                && played_by.0 == seat
            {
                return Ok(Some(before + i as u64 + 1));
            }
        }
        Ok(None)
    }

    async fn due_rooms(&self, shards: &[u32], now_ms: i64, limit: usize) -> Result<Vec<String>> {
        let mut due = Vec::new();
        for &shard in shards {
            if due.len() >= limit {
                break;
            }
            let more: Vec<String> = self
                .conn()
                .zrangebyscore_limit(
                    self.shard_key(shard, "deadlines"),
                    "-inf",
                    now_ms,
                    0,
                    (limit - due.len()) as isize,
                )
                .await?;
            due.extend(more);
        }
        Ok(due)
    }

    async fn claim_due(&self, room_id: &str, now_ms: i64, lease_ms: i64) -> Result<bool> {
        let claimed: i64 = self
            .scripts
            .claim
            .key(self.shard_key(Self::room_shard(room_id), "deadlines"))
            .arg(room_id)
            .arg(now_ms)
            .arg(now_ms + lease_ms)
            .invoke_async(&mut self.conn())
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
            .scripts
            .sync
            .key(self.room_key(room_id, "state"))
            .key(self.shard_key(Self::room_shard(room_id), "deadlines"))
            .arg(version)
            .arg(room_id)
            .arg(deadline.map(|at| at.to_string()).unwrap_or_default())
            .invoke_async(&mut self.conn())
            .await?;
        Ok(())
    }

    async fn list_rooms(&self, offset: usize, count: usize) -> Result<Vec<String>> {
        if count == 0 {
            return Ok(Vec::new());
        }
        // The newest `offset + count` of every shard hold the page: merge them.
        let mut all: Vec<(String, i64)> = Vec::new();
        for shard in 0..SHARDS {
            let part: Vec<(String, i64)> = self
                .conn()
                .zrevrange_withscores(
                    self.shard_key(shard, "rooms"),
                    0,
                    (offset + count - 1) as isize,
                )
                .await?;
            all.extend(part);
        }
        all.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| b.0.cmp(&a.0)));
        Ok(all
            .into_iter()
            .skip(offset)
            .take(count)
            .map(|(id, _)| id)
            .collect())
    }

    async fn outbox_fetch(
        &self,
        shards: &[u32],
        consumer: &str,
        min_idle_ms: u64,
        count: usize,
    ) -> Result<Vec<OutboxEntry>> {
        let mut entries = Vec::new();
        for &shard in shards {
            if entries.len() >= count {
                break;
            }
            let flat: Vec<Vec<u8>> = self
                .scripts
                .outbox_fetch
                .key(self.shard_key(shard, "outbox"))
                .arg(OUTBOX_GROUP)
                .arg(consumer)
                .arg(min_idle_ms)
                .arg(count - entries.len())
                .invoke_async(&mut self.conn())
                .await?;
            for triple in flat.chunks(3) {
                match triple {
                    [id, payload, trace_context] => entries.push(OutboxEntry {
                        id: outbox_id(shard, &String::from_utf8_lossy(id)),
                        record: OutboxRecord {
                            payload: payload.clone(),
                            trace_context: String::from_utf8_lossy(trace_context).into_owned(),
                        },
                    }),
                    _ => return Err(GameError::Corrupt("odd outbox reply".into())),
                }
            }
        }
        Ok(entries)
    }

    async fn outbox_ack(&self, id: &str) -> Result<()> {
        let (shard, entry) = parse_outbox_id(id)?;
        let outbox = self.shard_key(shard, "outbox");
        let _: () = redis::pipe()
            .cmd("XACK")
            .arg(&outbox)
            .arg(OUTBOX_GROUP)
            .arg(entry)
            .ignore()
            .cmd("XDEL")
            .arg(&outbox)
            .arg(entry)
            .ignore()
            .query_async(&mut self.conn())
            .await?;
        Ok(())
    }

    async fn lease_add(&self, instance: &str, seat: &LeasedSeat, until_ms: i64) -> Result<bool> {
        let added: i64 = self
            .scripts
            .lease_add
            .key(self.lease_key(instance, "leases"))
            .key(self.lease_key(instance, "leases-swept"))
            .key(self.lease_seats_key(instance))
            .arg(instance)
            .arg(seat.encode())
            .arg(until_ms)
            .invoke_async(&mut self.conn())
            .await?;
        Ok(added == 1)
    }

    async fn lease_remove(&self, instance: &str, seat: &LeasedSeat) -> Result<()> {
        let _: () = self
            .conn()
            .srem(self.lease_seats_key(instance), seat.encode())
            .await?;
        Ok(())
    }

    async fn lease_refresh(&self, instance: &str, until_ms: i64) -> Result<bool> {
        let alive: i64 = self
            .scripts
            .lease_refresh
            .key(self.lease_key(instance, "leases"))
            .key(self.lease_key(instance, "leases-swept"))
            .arg(instance)
            .arg(until_ms)
            .invoke_async(&mut self.conn())
            .await?;
        Ok(alive == 1)
    }

    async fn lease_claim_expired(
        &self,
        shards: &[u32],
        now_ms: i64,
        claim_ms: i64,
        limit: usize,
    ) -> Result<Vec<ExpiredLease>> {
        let mut expired = Vec::new();
        for &shard in shards {
            if expired.len() >= limit {
                break;
            }
            let instances: Vec<String> = self
                .scripts
                .lease_claim
                .key(self.shard_key(shard, "leases"))
                .key(self.shard_key(shard, "leases-swept"))
                .arg(now_ms)
                .arg(claim_ms)
                .arg(limit - expired.len())
                .invoke_async(&mut self.conn())
                .await?;
            for instance in instances {
                let raw: Vec<String> = self
                    .conn()
                    .smembers(self.lease_seats_key(&instance))
                    .await?;
                expired.push(ExpiredLease {
                    seats: raw.iter().filter_map(|s| LeasedSeat::decode(s)).collect(),
                    instance,
                });
            }
        }
        Ok(expired)
    }

    async fn lease_release(&self, instance: &str) -> Result<()> {
        let _: () = redis::pipe()
            .del(self.lease_seats_key(instance))
            .ignore()
            .zrem(self.lease_key(instance, "leases"), instance)
            .ignore()
            .query_async(&mut self.conn())
            .await?;
        Ok(())
    }

    async fn walk_shards(
        &self,
        walker: &str,
        now_ms: i64,
        until_ms: i64,
        leaving: bool,
    ) -> Result<Vec<WalkLease>> {
        let flat: Vec<u64> = self
            .scripts
            .walk_shards
            .key(self.keys.key("gs:walk", "walkers"))
            .key(self.keys.key("gs:walk", "walks"))
            .arg(walker)
            .arg(now_ms)
            .arg(until_ms)
            .arg(SHARDS)
            .arg(if leaving { "1" } else { "" })
            .invoke_async(&mut self.conn())
            .await?;
        flat.chunks(2)
            .map(|pair| match pair {
                [shard, epoch] if *shard < u64::from(SHARDS) => Ok(WalkLease {
                    shard: *shard as u32,
                    epoch: *epoch,
                }),
                _ => Err(GameError::Corrupt("bad shard walk reply".into())),
            })
            .collect()
    }

    fn notices(&self) -> broadcast::Receiver<Notice> {
        self.notices.subscribe()
    }
}

#[cfg(test)]
mod tests {
    use basra_platform::redis::hash_slot;

    use super::*;

    #[test]
    fn a_room_and_its_shard_indexes_share_one_slot() {
        let keys = Keys::new("p").unwrap();
        for id in ["a", "room-42", "0190b3c1-7e1f-7000-8000-000000000000"] {
            let shard = shard_of(id);
            let tag = format!("gs:{shard}");
            let room = keys.key(&tag, &format!("room:{id}:state"));
            for name in ["deadlines", "rooms", "outbox", "notify"] {
                assert_eq!(hash_slot(&room), hash_slot(&keys.key(&tag, name)));
            }
        }
    }

    #[test]
    fn outbox_ids_carry_their_shard() {
        assert_eq!(parse_outbox_id(&outbox_id(3, "17-0")).unwrap(), (3, "17-0"));
        assert!(parse_outbox_id("99/1-0").is_err());
        assert!(parse_outbox_id("1-0").is_err());
    }
}
