//! The one Redis layer of every service: a single node or a Redis Cluster, chosen by
//! the URL setting alone.
//!
//! - `[redis] url = "redis://host:6379"` is one node (or a primary with replicas behind
//!   one address); a comma-separated list `redis://a:7001,redis://b:7002,…` is a Redis
//!   Cluster, reached through the `redis` crate's cluster client (any reachable node is
//!   enough to find the rest).
//! - [`Redis::connect`] sends `PING` before it returns, so a service that cannot reach
//!   Redis stops at start with a clear error instead of failing its first request.
//! - [`Connection`] is what stores send commands, pipelines and scripts through; it
//!   reconnects by itself. On a cluster a script or pipeline must touch one hash slot:
//!   [`Keys`] builds key names whose hash tag says which slot.
//! - Scripts are [`Script`]s made from `.lua` files (`include_str!`); `invoke_async` runs
//!   `EVALSHA` and, when the server answers `NOSCRIPT` (a restart, a failover, a new
//!   node), loads the script and runs it again. A hot path builds the call itself with
//!   [`script_call`] and runs it with [`run_script`] (the same `NOSCRIPT` handling):
//!   its keys and arguments are written once into the command, not first collected one
//!   allocation each.
//! - [`Redis::subscribe`] listens on sharded pub/sub channels (`SSUBSCRIBE`; Redis 7.0 or
//!   later, single node or cluster). A cluster node only forwards a shard channel within
//!   its slots, so each channel should carry the hash tag of the keys whose changes it
//!   announces, and a script publishes with `SPUBLISH` on its own slot. The subscription
//!   reconnects and resubscribes after a lost connection and then reports
//!   [`PubSubEvent::Resubscribed`]: messages sent meanwhile are gone, so the caller
//!   re-reads what it cares about.
//! - A cluster connection is rebuilt when it stalls or its calls keep failing on
//!   timeouts or lost connections ([`ClusterConn`]): after a primary is killed (SIGKILL)
//!   the `redis` crate's cluster client (1.8.1) was seen to hold every call until its
//!   timeout for many seconds, also for slots of the primaries still up; a fresh client
//!   reads the slot map again and works at once.
//! - [`RedisSettings`] is the `[redis]` section of every service that keeps state in
//!   Redis, the same keys everywhere.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use ::redis::aio::{ConnectionLike, ConnectionManager, ConnectionManagerConfig};
use ::redis::cluster::ClusterClientBuilder;
use ::redis::cluster_async::ClusterConnection;
use ::redis::{
    AsyncConnectionConfig, Cmd, Pipeline, ProtocolVersion, PushInfo, PushKind, RedisError,
    RedisFuture, RedisResult, Value,
};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

pub use ::redis::Script;

/// How long a command may take before the call fails (a pairing round can block a busy
/// server for milliseconds; a failover takes seconds).
const RESPONSE_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a connection attempt may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);
/// How long one attempt of a cluster call may take (it is retried within
/// [`RESPONSE_TIMEOUT`]).
const CLUSTER_ATTEMPT_TIMEOUT: Duration = Duration::from_secs(1);
/// How long a connection attempt to a cluster node may take.
const CLUSTER_CONNECT_TIMEOUT: Duration = Duration::from_millis(500);
/// The pause between two attempts to restore a lost subscription.
const RESUBSCRIBE_PAUSE: Duration = Duration::from_millis(500);
/// A cluster client is stalled when calls are waiting and none finished for this long
/// (no script or command of ours blocks the server for anywhere near as long).
const STALL_AFTER: Duration = Duration::from_millis(1000);
/// How often the watchdog looks for a stall.
const WATCH_EVERY: Duration = Duration::from_millis(250);
/// A cluster connection is rebuilt after this many failed calls (timeouts, lost
/// connections) within [`REBUILD_WINDOW`]…
const REBUILD_AFTER_FAILURES: u32 = 8;
/// …counted over this long…
const REBUILD_WINDOW: Duration = Duration::from_secs(2);
/// …and at most once per this long (a failover in progress fails calls until the replica
/// is promoted, whatever the client does).
const REBUILD_MIN_GAP: Duration = Duration::from_secs(1);

/// Where Redis is: one node or a cluster, parsed from the URL setting.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Topology {
    /// One node (`redis://host:port/db`).
    Single(String),
    /// A Redis Cluster, by the nodes to ask for the slot map first.
    Cluster(Vec<String>),
}

impl Topology {
    /// A comma-separated list of `redis://` (or `rediss://`) URLs is a cluster; one URL
    /// is a single node. `Err` names what is wrong.
    pub fn parse(url: &str) -> Result<Topology, String> {
        let nodes: Vec<String> = url
            .split(',')
            .map(str::trim)
            .filter(|node| !node.is_empty())
            .map(str::to_owned)
            .collect();
        if nodes.is_empty() {
            return Err("a Redis URL is required (redis://host:port, or a comma-separated list of cluster nodes)".into());
        }
        if let Some(bad) = nodes
            .iter()
            .find(|node| !node.starts_with("redis://") && !node.starts_with("rediss://"))
        {
            return Err(format!("{bad:?} is not a redis:// URL"));
        }
        Ok(if url.contains(',') {
            Topology::Cluster(nodes)
        } else {
            Topology::Single(nodes.into_iter().next().unwrap_or_default())
        })
    }

    /// Whether this is a cluster.
    pub fn is_cluster(&self) -> bool {
        matches!(self, Topology::Cluster(_))
    }
}

/// `[redis]`, the same in every service that keeps state in Redis.
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RedisSettings {
    /// `redis://host:port/db`; a comma-separated list of Redis Cluster node URLs; or
    /// `memory`: the service's in-process store (one replica only, `basra dev`).
    pub url: String,
    /// The prefix of every key the service writes (several deployments, or tests, can
    /// share one Redis). No braces: they would change the hash slot.
    pub prefix: String,
    /// The prefix of the keys every service of one deployment shares, whatever its own
    /// `prefix`: the banned and deleted accounts ([`crate::revocation`]), which accounts
    /// writes and every service reads. One value for the whole deployment (the default,
    /// `basra`, unless several deployments share one Redis); no braces.
    #[serde(default = "default_shared_prefix")]
    pub shared_prefix: String,
    /// After each write that must survive a failover, wait until this many replicas of
    /// the primary have it (`WAIT`); 0: do not. game-session waits on its commits;
    /// matchmaking refuses a value other than 0 (its tickets are re-created by a
    /// resuming client).
    #[serde(default)]
    pub wait_replicas: u32,
    /// The longest such a wait lasts (then the write stands, possibly on the primary only).
    #[serde(default = "default_wait_timeout_ms")]
    pub wait_timeout_ms: u64,
}

fn default_wait_timeout_ms() -> u64 {
    50
}

/// The default [`RedisSettings::shared_prefix`]: accounts' own default prefix, under which
/// it kept the shared keys before they had a setting of their own.
const DEFAULT_SHARED_PREFIX: &str = "basra";

fn default_shared_prefix() -> String {
    DEFAULT_SHARED_PREFIX.to_owned()
}

impl RedisSettings {
    /// Whether the URL asks for the in-process store.
    pub fn is_memory(&self) -> bool {
        self.url == "memory"
    }
}

impl crate::config::Validate for RedisSettings {
    fn validate(&self) -> Result<(), String> {
        if !self.is_memory() {
            Topology::parse(&self.url).map_err(|msg| {
                format!("redis.url must be \"memory\", a redis:// URL or a list of them: {msg}")
            })?;
        }
        if self.prefix.is_empty() || self.prefix.contains(['{', '}']) {
            return Err("redis.prefix must be non-empty and hold no braces".into());
        }
        if self.shared_prefix.is_empty() || self.shared_prefix.contains(['{', '}']) {
            return Err("redis.shared_prefix must be non-empty and hold no braces".into());
        }
        if self.wait_replicas > 0 && self.wait_timeout_ms == 0 {
            return Err(
                "redis.wait_timeout_ms must be positive when redis.wait_replicas is".into(),
            );
        }
        Ok(())
    }
}

/// A connection for commands, pipelines and scripts: cheap to clone (all clones share one
/// multiplexed connection per node) and reconnecting by itself.
#[derive(Clone)]
pub enum Connection {
    /// One node.
    Single(ConnectionManager),
    /// A cluster: every command goes to the primary of its key's slot.
    Cluster(ClusterConn),
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Connection::Single(_) => "Connection::Single",
            Connection::Cluster(_) => "Connection::Cluster",
        })
    }
}

impl ConnectionLike for Connection {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            Connection::Single(conn) => conn.req_packed_command(cmd),
            Connection::Cluster(conn) => conn.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            Connection::Single(conn) => conn.req_packed_commands(pipeline, offset, count),
            Connection::Cluster(conn) => conn.req_packed_commands(pipeline, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Connection::Single(conn) => conn.get_db(),
            Connection::Cluster(conn) => conn.get_db(),
        }
    }
}

impl Connection {
    /// `WAIT replicas timeout_ms` on the primary holding `key` (on a cluster, the primary
    /// of its slot): blocks until that many replicas have every write sent so far through
    /// this connection to that primary, or the timeout passes. Returns how many did.
    pub async fn wait_for_replicas(
        &mut self,
        key: &str,
        replicas: u32,
        timeout_ms: u64,
    ) -> RedisResult<u32> {
        // WAIT has no key, so on a cluster it goes in one pipeline behind a command on
        // `key`: the pipeline is routed (and redirected, after a failover) by that key's
        // slot, so WAIT reaches the primary that holds it now.
        let (acked,): (u32,) = ::redis::pipe()
            .cmd("EXISTS")
            .arg(key)
            .ignore()
            .cmd("WAIT")
            .arg(replicas)
            .arg(timeout_ms)
            .query_async(self)
            .await?;
        Ok(acked)
    }
}

/// A connected Redis (or Redis Cluster).
#[derive(Clone)]
pub struct Redis {
    topology: Topology,
    /// The connections [`Redis::conn`] hands out in turn (one unless
    /// [`Redis::connect_pool`] asked for more).
    conns: Arc<[Connection]>,
    next: Arc<std::sync::atomic::AtomicUsize>,
}

impl std::fmt::Debug for Redis {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Redis")
            .field("topology", &self.topology)
            .finish_non_exhaustive()
    }
}

impl Redis {
    /// Connects to the URL setting (one URL, or a comma-separated list of cluster nodes)
    /// and checks the server answers `PING`.
    pub async fn connect(url: &str) -> RedisResult<Redis> {
        Redis::connect_pool(url, 1).await
    }

    /// Like [`Redis::connect`], with `connections` connections to a single node (at
    /// least one; a cluster gets its one client, which holds a connection per node),
    /// which [`Redis::conn`] hands out in turn.
    ///
    /// Why more than one: Redis reads at most 16 KiB of one client's commands per turn
    /// of its event loop, and with `appendfsync always` it writes and syncs the AOF once
    /// per turn before it answers. One connection carrying every call of a busy process
    /// then gets about 16 KiB of commands through per disk sync: on this project's test
    /// machine (a sync of ~4 ms) some 700 writes of 3 KB per second, against ~10,500 over
    /// eight connections (`redis-benchmark -P 50 -d 3000`, docs/reliability.md, "The resume storm").
    pub async fn connect_pool(url: &str, connections: usize) -> RedisResult<Redis> {
        let topology = Topology::parse(url).map_err(|msg| {
            RedisError::from((::redis::ErrorKind::InvalidClientConfig, "bad URL", msg))
        })?;
        let mut conns = Vec::new();
        match &topology {
            Topology::Single(url) => {
                let client = ::redis::Client::open(url.as_str())?;
                for _ in 0..connections.max(1) {
                    let config = ConnectionManagerConfig::new()
                        .set_response_timeout(Some(RESPONSE_TIMEOUT))
                        .set_connection_timeout(Some(CONNECT_TIMEOUT));
                    conns.push(Connection::Single(
                        client.get_connection_manager_with_config(config).await?,
                    ));
                }
            }
            Topology::Cluster(nodes) => {
                conns.push(Connection::Cluster(ClusterConn::connect(nodes).await?));
            }
        }
        for conn in &mut conns {
            let _: String = ::redis::cmd("PING").query_async(conn).await?;
        }
        Ok(Redis {
            topology,
            conns: conns.into(),
            next: Arc::default(),
        })
    }

    /// A connection for commands (clone it freely): the next one of the pool. The
    /// commands of one clone go through one connection, in order (a `WAIT` after a write
    /// must go through the write's connection).
    pub fn conn(&self) -> Connection {
        let turn = self.next.fetch_add(1, Ordering::Relaxed);
        self.conns[turn % self.conns.len()].clone()
    }

    /// How many connections [`Redis::conn`] hands out in turn.
    pub fn connections(&self) -> usize {
        self.conns.len()
    }

    /// Where this Redis is.
    pub fn topology(&self) -> &Topology {
        &self.topology
    }

    /// Subscribes to the shard `channels` (each one `SSUBSCRIBE`, so the channels may sit
    /// on different cluster nodes) and hands every message and every resubscription to
    /// `on_event`, until `shutdown`. Returns once the first subscription is in place, so
    /// no message published after it is missed.
    pub async fn subscribe(
        &self,
        channels: Vec<String>,
        shutdown: CancellationToken,
        on_event: impl Fn(PubSubEvent) + Send + Sync + 'static,
    ) -> RedisResult<()> {
        let on_event: Arc<dyn Fn(PubSubEvent) + Send + Sync> = Arc::new(on_event);
        let subscription = open_subscription(&self.topology, &channels).await?;
        tokio::spawn(pump(
            self.topology.clone(),
            channels,
            subscription,
            shutdown,
            on_event,
        ));
        Ok(())
    }
}

/// A cluster connection that rebuilds itself when it stalls or its calls keep failing.
///
/// - **Stalled**: calls are waiting and none has finished for `STALL_AFTER`. After a
///   primary was killed (SIGKILL) the `redis` crate's cluster client (1.8.1) held every
///   call, also those for slots of the primaries still up, until the call's timeout,
///   call after call. A watchdog (`WATCH_EVERY`) sees this, starts a new client, and
///   once it answers `PING` makes it the one new calls use; the calls still waiting on
///   the old client fail at once with a timeout error, as they would have a few seconds
///   later (so a write among them may or may not have been applied, as with any
///   timeout: callers retry idempotently).
/// - **Failing**: `REBUILD_AFTER_FAILURES` timeouts or lost connections within
///   `REBUILD_WINDOW` (successes in between do not reset the count: a sick client may
///   still serve some slots) rebuild it the same way.
///
/// At most one rebuild per `REBUILD_MIN_GAP`. Clones share one connection.
#[derive(Clone)]
pub struct ClusterConn {
    shared: Arc<ClusterShared>,
}

struct ClusterShared {
    nodes: Vec<String>,
    current: RwLock<Generation>,
    health: Mutex<Health>,
    rebuilds: AtomicU64,
    /// Calls waiting for an answer.
    in_flight: AtomicU64,
    /// When a call last finished (ok or not), or one started with none waiting, in ms
    /// after `started`.
    last_progress_ms: AtomicU64,
    started: Instant,
}

/// One cluster client, and the signal that it was replaced.
struct Generation {
    number: u64,
    conn: ClusterConnection,
    replaced: CancellationToken,
}

#[derive(Debug)]
struct Health {
    window_start: Instant,
    failures: u32,
    rebuilding: bool,
    last_rebuild: Option<Instant>,
}

impl ClusterConn {
    async fn connect(nodes: &[String]) -> RedisResult<ClusterConn> {
        let conn = cluster_builder(nodes)
            .build()?
            .get_async_connection()
            .await?;
        let shared = Arc::new(ClusterShared {
            nodes: nodes.to_vec(),
            current: RwLock::new(Generation {
                number: 0,
                conn,
                replaced: CancellationToken::new(),
            }),
            health: Mutex::new(Health {
                window_start: Instant::now(),
                failures: 0,
                rebuilding: false,
                last_rebuild: None,
            }),
            rebuilds: AtomicU64::new(0),
            in_flight: AtomicU64::new(0),
            last_progress_ms: AtomicU64::new(0),
            started: Instant::now(),
        });
        tokio::spawn(watchdog(Arc::downgrade(&shared)));
        Ok(ClusterConn { shared })
    }

    /// How many times the client was rebuilt.
    pub fn rebuilds(&self) -> u64 {
        self.shared.rebuilds.load(Ordering::Relaxed)
    }

    fn current(&self) -> (u64, ClusterConnection, CancellationToken) {
        let current = self
            .shared
            .current
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        (
            current.number,
            current.conn.clone(),
            current.replaced.clone(),
        )
    }

    /// Runs one call on the current client; fails it early if that client is replaced
    /// meanwhile; counts its outcome.
    async fn call<T>(
        &self,
        run: impl AsyncFnOnce(&mut ClusterConnection) -> RedisResult<T>,
    ) -> RedisResult<T> {
        let (number, mut conn, replaced) = self.current();
        if self.shared.in_flight.fetch_add(1, Ordering::Relaxed) == 0 {
            // The first call after a quiet spell: the stall clock starts now.
            self.shared
                .last_progress_ms
                .store(self.shared.elapsed_ms(), Ordering::Relaxed);
        }
        let result = tokio::select! {
            result = run(&mut conn) => result,
            () = replaced.cancelled() => Err(RedisError::from(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "the stalled cluster client was replaced while this call waited",
            ))),
        };
        self.shared.in_flight.fetch_sub(1, Ordering::Relaxed);
        self.shared
            .last_progress_ms
            .store(self.shared.elapsed_ms(), Ordering::Relaxed);
        self.observe(number, &result);
        result
    }

    /// Counts a failed call made on generation `number`; rebuilds when they pile up.
    fn observe<T>(&self, number: u64, result: &RedisResult<T>) {
        let Err(err) = result else { return };
        if !(err.is_timeout() || err.is_connection_dropped() || err.is_connection_refusal()) {
            return;
        }
        let now = Instant::now();
        let mut health = self.shared.lock_health();
        if now.duration_since(health.window_start) > REBUILD_WINDOW {
            health.window_start = now;
            health.failures = 0;
        }
        health.failures += 1;
        if health.failures >= REBUILD_AFTER_FAILURES {
            drop(health);
            self.shared.start_rebuild(number, "calls keep failing");
        }
    }
}

impl ClusterShared {
    fn elapsed_ms(&self) -> u64 {
        self.started.elapsed().as_millis() as u64
    }

    fn lock_health(&self) -> std::sync::MutexGuard<'_, Health> {
        self.health
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Starts a rebuild of generation `number` in the background, unless one is running
    /// or the last one is too recent.
    fn start_rebuild(self: &Arc<Self>, number: u64, why: &'static str) {
        let mut health = self.lock_health();
        let now = Instant::now();
        if health.rebuilding
            || health
                .last_rebuild
                .is_some_and(|at| now.duration_since(at) < REBUILD_MIN_GAP)
        {
            return;
        }
        health.rebuilding = true;
        drop(health);
        tracing::warn!(why, "redis cluster client: rebuilding it");
        let this = Arc::clone(self);
        tokio::spawn(async move { this.rebuild(number).await });
    }

    async fn rebuild(&self, number: u64) {
        let fresh = tokio::time::timeout(RESPONSE_TIMEOUT, async {
            let mut conn = cluster_builder(&self.nodes)
                .build()?
                .get_async_connection()
                .await?;
            let _: String = ::redis::cmd("PING").query_async(&mut conn).await?;
            RedisResult::Ok(conn)
        })
        .await;
        match fresh {
            Ok(Ok(conn)) => {
                let mut current = self
                    .current
                    .write()
                    .unwrap_or_else(|poisoned| poisoned.into_inner());
                if current.number == number {
                    let old = std::mem::replace(
                        &mut *current,
                        Generation {
                            number: number + 1,
                            conn,
                            replaced: CancellationToken::new(),
                        },
                    );
                    drop(current);
                    old.replaced.cancel();
                    self.rebuilds.fetch_add(1, Ordering::Relaxed);
                    tracing::warn!(generation = number + 1, "redis cluster client rebuilt");
                }
            }
            Ok(Err(err)) => tracing::warn!(error = %err, "redis cluster client: rebuild failed"),
            Err(_) => tracing::warn!("redis cluster client: rebuild timed out"),
        }
        let mut health = self.lock_health();
        health.rebuilding = false;
        health.last_rebuild = Some(Instant::now());
        health.window_start = Instant::now();
        health.failures = 0;
    }
}

/// Watches for a stalled client (calls waiting, none finished for [`STALL_AFTER`]) until
/// the connection is dropped.
async fn watchdog(shared: std::sync::Weak<ClusterShared>) {
    let mut tick = tokio::time::interval(WATCH_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let Some(shared) = shared.upgrade() else {
            return;
        };
        let idle_ms = shared
            .elapsed_ms()
            .saturating_sub(shared.last_progress_ms.load(Ordering::Relaxed));
        if shared.in_flight.load(Ordering::Relaxed) > 0 && idle_ms >= STALL_AFTER.as_millis() as u64
        {
            let number = shared
                .current
                .read()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .number;
            shared.start_rebuild(number, "calls are waiting and none finished");
        }
    }
}

impl ConnectionLike for ClusterConn {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        Box::pin(self.call(async |conn: &mut ClusterConnection| conn.req_packed_command(cmd).await))
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        Box::pin(self.call(async move |conn: &mut ClusterConnection| {
            conn.req_packed_commands(pipeline, offset, count).await
        }))
    }

    fn get_db(&self) -> i64 {
        0
    }
}

impl Connection {
    /// How many times the cluster client was rebuilt after repeated failures (0 for a
    /// single node).
    pub fn rebuilds(&self) -> u64 {
        match self {
            Connection::Single(_) => 0,
            Connection::Cluster(cluster) => cluster.rebuilds(),
        }
    }
}

fn cluster_builder(nodes: &[String]) -> ClusterClientBuilder {
    ClusterClientBuilder::new(nodes.to_vec())
        // Per attempt; the whole call (retries, redirections) gets RESPONSE_TIMEOUT.
        .response_timeout(CLUSTER_ATTEMPT_TIMEOUT)
        .overall_response_timeout(Some(RESPONSE_TIMEOUT))
        // A dead node refuses at once or not at all: do not wait long for it.
        .connection_timeout(CLUSTER_CONNECT_TIMEOUT)
        // Retry soon and often through a failover (the crate's default first wait is
        // 1.28 s), within the overall timeout.
        .retries(12)
        .min_retry_wait(20)
        .max_retry_wait(500)
        .retry_wait_formula(20, 2)
}

/// A pub/sub happening.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PubSubEvent {
    /// A message on one of the channels.
    Message {
        /// The channel's full name, with its prefix.
        channel: String,
        /// The message's bytes, as published.
        payload: Vec<u8>,
    },
    /// The subscription was lost and is back: messages in between are lost.
    Resubscribed,
}

/// The connection a subscription lives on: dropping it ends the subscription.
enum Held {
    Single(::redis::aio::MultiplexedConnection),
    Cluster(ClusterConnection),
}

/// A subscription: the connection it lives on, and where that connection's pushes come.
/// Each subscription has its own push channel, so a connection let go of says nothing
/// more.
struct Subscription {
    held: Held,
    pushes: mpsc::UnboundedReceiver<PushInfo>,
}

async fn open_subscription(topology: &Topology, channels: &[String]) -> RedisResult<Subscription> {
    let (tx, pushes) = mpsc::unbounded_channel();
    let held = subscribe_on_new_connection(topology, channels, tx).await?;
    Ok(Subscription { held, pushes })
}

/// Opens a fresh connection (on a cluster: a fresh client, which reads the slot map
/// anew) and subscribes it to every one of `channels`.
async fn subscribe_on_new_connection(
    topology: &Topology,
    channels: &[String],
    tx: mpsc::UnboundedSender<PushInfo>,
) -> RedisResult<Held> {
    // Pushes (RESP3) carry the messages; commands on this connection are only the
    // subscriptions.
    match topology {
        Topology::Single(url) => {
            let client = ::redis::Client::open(with_resp3(url).as_str())?;
            let config = AsyncConnectionConfig::new()
                .set_push_sender(tx)
                .set_response_timeout(Some(RESPONSE_TIMEOUT))
                .set_connection_timeout(Some(CONNECT_TIMEOUT));
            let mut conn = client
                .get_multiplexed_async_connection_with_config(&config)
                .await?;
            for channel in channels {
                ::redis::cmd("SSUBSCRIBE")
                    .arg(channel)
                    .exec_async(&mut conn)
                    .await?;
            }
            Ok(Held::Single(conn))
        }
        Topology::Cluster(nodes) => {
            let mut conn = cluster_builder(nodes)
                .use_protocol(ProtocolVersion::RESP3)
                .push_sender(tx)
                .build()?
                .get_async_connection()
                .await?;
            // The client would subscribe again by itself after a reconnect, but not on
            // the replica promoted when a primary dies: a lost connection opens a fresh
            // subscription instead (see `pump`).
            for channel in channels {
                conn.ssubscribe(channel).await?;
            }
            Ok(Held::Cluster(conn))
        }
    }
}

fn with_resp3(url: &str) -> String {
    let sep = if url.contains('?') { '&' } else { '?' };
    format!("{url}{sep}protocol=resp3")
}

async fn pump(
    topology: Topology,
    channels: Vec<String>,
    mut subscription: Subscription,
    shutdown: CancellationToken,
    on_event: Arc<dyn Fn(PubSubEvent) + Send + Sync>,
) {
    loop {
        let push = tokio::select! {
            () = shutdown.cancelled() => return,
            push = subscription.pushes.recv() => push,
        };
        let Some(push) = push else { return };
        let held = &mut subscription.held;
        match push.kind {
            PushKind::SMessage | PushKind::Message => {
                if let [channel, payload, ..] = push.data.as_slice()
                    && let (Ok(channel), Ok(payload)) = (
                        ::redis::from_redis_value::<String>(channel.clone()),
                        ::redis::from_redis_value::<Vec<u8>>(payload.clone()),
                    )
                {
                    on_event(PubSubEvent::Message { channel, payload });
                }
            }
            // A cluster node drops shard subscriptions when their slot moves away (a
            // failover, a resharding): subscribe again, the client finds the new owner.
            PushKind::SUnsubscribe => {
                let Some(channel) = push
                    .data
                    .first()
                    .and_then(|c| ::redis::from_redis_value::<String>(c.clone()).ok())
                else {
                    continue;
                };
                tracing::warn!(channel, "redis shard channel dropped; resubscribing");
                loop {
                    if shutdown.is_cancelled() {
                        return;
                    }
                    let again = match &mut *held {
                        Held::Single(conn) => {
                            ::redis::cmd("SSUBSCRIBE")
                                .arg(&channel)
                                .exec_async(conn)
                                .await
                        }
                        Held::Cluster(conn) => conn.ssubscribe(&channel).await,
                    };
                    match again {
                        Ok(()) => break,
                        Err(err) => {
                            tracing::warn!(channel, error = %err, "redis resubscribe failed");
                        }
                    }
                    tokio::time::sleep(RESUBSCRIBE_PAUSE).await;
                }
                on_event(PubSubEvent::Resubscribed);
            }
            PushKind::Disconnection => {
                tracing::warn!("redis subscription lost; resubscribing");
                // A fresh connection, subscribed to every channel. On a cluster the old
                // client would reconnect the node it lost and resubscribe there, but
                // when that node was a primary that died, its channels' slots now live
                // on the promoted replica: the old client kept dialling the dead node
                // and the channels stayed silent. A fresh client reads the slot map
                // anew; until the cluster has promoted a replica, subscribing fails and
                // is tried again. The old connection goes (it dials nothing more).
                loop {
                    if shutdown.is_cancelled() {
                        return;
                    }
                    match open_subscription(&topology, &channels).await {
                        Ok(fresh) => {
                            subscription = fresh;
                            break;
                        }
                        Err(err) => {
                            tracing::warn!(error = %err, "redis subscription: resubscribing failed");
                        }
                    }
                    tokio::time::sleep(RESUBSCRIBE_PAUSE).await;
                }
                // Messages sent meanwhile are gone: the caller looks again.
                on_event(PubSubEvent::Resubscribed);
            }
            _ => {}
        }
    }
}

/// Key names under a prefix, with hash tags: every key of one `tag` lands in one hash
/// slot, so a script or pipeline over them works on a cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Keys {
    prefix: Arc<str>,
}

impl Keys {
    /// Keys under `prefix`, which must be non-empty and hold no braces (hash tags are the
    /// layer's business).
    pub fn new(prefix: &str) -> Result<Keys, String> {
        if prefix.is_empty() || prefix.contains(['{', '}']) {
            return Err(format!(
                "the key prefix {prefix:?} must be non-empty and hold no braces"
            ));
        }
        Ok(Keys {
            prefix: prefix.into(),
        })
    }

    /// The key prefix every key of this connection starts with.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// `P:{tag}`: the start of every key of `tag`'s slot (scripts append `:name`).
    pub fn slot(&self, tag: &str) -> String {
        format!("{}:{{{tag}}}", self.prefix)
    }

    /// `P:{tag}:name`.
    pub fn key(&self, tag: &str, name: &str) -> String {
        self.key_of(&[tag], &[name])
    }

    /// `P:{tag}:name` with the tag and the name each given in pieces, joined without
    /// separators: one allocation, however many pieces (hot paths build their keys
    /// from an id and a number without intermediate strings).
    pub fn key_of(&self, tag: &[&str], name: &[&str]) -> String {
        let len = tag.iter().chain(name).map(|part| part.len()).sum::<usize>();
        let mut key = String::with_capacity(self.prefix.len() + 4 + len);
        key.push_str(&self.prefix);
        key.push_str(":{");
        tag.iter().for_each(|part| key.push_str(part));
        key.push_str("}:");
        name.iter().for_each(|part| key.push_str(part));
        key
    }
}

/// The `EVALSHA` of `script` with `keys` keys: append the keys, then the arguments, with
/// [`Cmd::arg`], and run it with [`run_script`]. `args` and `bytes` size the command's
/// buffers for the keys and arguments to come (a guess: they grow past it when needed;
/// a hot call that guesses right is built without a reallocation).
pub fn script_call(script: &Script, keys: usize, args: usize, bytes: usize) -> Cmd {
    let hash = script.get_hash();
    let mut cmd = Cmd::with_capacity(3 + args, "EVALSHA".len() + hash.len() + 4 + bytes);
    cmd.arg("EVALSHA").arg(hash).arg(keys);
    cmd
}

/// Runs a [`script_call`] of `script`; a server that answers `NOSCRIPT` (restarted, failed
/// over, new) is given the script and the call is sent again.
pub async fn run_script<T: ::redis::FromRedisValue>(
    script: &Script,
    call: &Cmd,
    conn: &mut Connection,
) -> RedisResult<T> {
    match call.query_async(conn).await {
        Err(err)
            if err.kind() == ::redis::ErrorKind::Server(::redis::ServerErrorKind::NoScript) =>
        {
            script.load_async(conn).await?;
            call.query_async(conn).await
        }
        other => other,
    }
}

/// The shard (`0..shards`) of an id: FNV-1a of its bytes, so it is the same in every
/// process and every version. `shards` must not change while data exists.
pub fn shard_of(id: &str, shards: u32) -> u32 {
    let mut hash: u32 = 0x811c_9dc5;
    for byte in id.bytes() {
        hash ^= u32::from(byte);
        hash = hash.wrapping_mul(0x0100_0193);
    }
    hash % shards.max(1)
}

/// The Redis Cluster hash slot of a key (CRC16/XMODEM of its hash tag, or of the whole
/// key without one, modulo 16,384): what decides which node holds it.
pub fn hash_slot(key: &str) -> u16 {
    let bytes = key.as_bytes();
    let tagged = bytes
        .iter()
        .position(|&b| b == b'{')
        .and_then(|open| {
            let rest = &bytes[open + 1..];
            let close = rest.iter().position(|&b| b == b'}')?;
            (close > 0).then(|| &rest[..close])
        })
        .unwrap_or(bytes);
    let mut crc: u16 = 0;
    for &byte in tagged {
        crc ^= u16::from(byte) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 != 0 {
                (crc << 1) ^ 0x1021
            } else {
                crc << 1
            };
        }
    }
    crc % 16_384
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_url_is_a_node_and_a_list_is_a_cluster() {
        assert_eq!(
            Topology::parse("redis://127.0.0.1:6379"),
            Ok(Topology::Single("redis://127.0.0.1:6379".into()))
        );
        assert_eq!(
            Topology::parse("redis://127.0.0.1:7001, redis://127.0.0.1:7002"),
            Ok(Topology::Cluster(vec![
                "redis://127.0.0.1:7001".into(),
                "redis://127.0.0.1:7002".into()
            ]))
        );
        assert!(Topology::parse("").is_err());
        assert!(Topology::parse("redis://a:1,http://b:2").is_err());
    }

    #[test]
    fn keys_of_one_tag_share_a_slot() {
        let keys = Keys::new("basra").unwrap();
        assert_eq!(keys.key("gs:3", "deadlines"), "basra:{gs:3}:deadlines");
        assert_eq!(
            keys.key_of(&["gs:", "3"], &["room:", "abc", ":state"]),
            "basra:{gs:3}:room:abc:state"
        );
        assert_eq!(keys.slot("q"), "basra:{q}");
        assert_eq!(
            hash_slot(&keys.key("gs:3", "deadlines")),
            hash_slot(&keys.key("gs:3", "room:abc:state"))
        );
        assert!(Keys::new("a{b").is_err());
        assert!(Keys::new("").is_err());
    }

    #[test]
    fn hash_slots_match_redis() {
        // Values from the `CLUSTER KEYSLOT` documentation.
        assert_eq!(hash_slot("somekey"), 11058);
        assert_eq!(hash_slot("foo{hash_tag}"), 2515);
        assert_eq!(hash_slot("hash_tag"), 2515);
        // An empty tag is no tag.
        assert_ne!(hash_slot("{}somekey"), hash_slot("{}other"));
    }

    #[test]
    fn shards_are_stable_and_in_range() {
        assert_eq!(shard_of("room-1", 16), shard_of("room-1", 16));
        assert!((0..1000).all(|i| shard_of(&format!("r{i}"), 16) < 16));
        let mut seen = [0u32; 16];
        for i in 0..1600 {
            seen[shard_of(&format!("{i:x}-room"), 16) as usize] += 1;
        }
        assert!(seen.iter().all(|&n| n > 50), "{seen:?}");
    }
}
