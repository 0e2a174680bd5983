//! Load generator: N concurrent two-player matches through a real game-session replica
//! and real Redis, every player a real tonic client on its own connection, playing a
//! legal card (the first of its hand; the engine takes the canonical capture) whenever
//! it is its turn, and asking for a rematch when a match ends (so the streams stay open).
//!
//! The replica runs in a child process (this binary with `serve`), so its memory and CPU
//! are measured apart from the clients': RSS from `/proc/<pid>/statm`, CPU from
//! `/proc/<pid>/stat`.
//!
//! Reports plays/s, the latency from a play (just before the client sends it) to the
//! opponent's receipt of the `card_played` event (p50/p99/p99.9/max), server CPU per play,
//! Redis CPU per play, the bytes Redis received and sent per play (`INFO stats`: on a
//! shared Redis other clients count too), and server memory per open stream (RSS delta /
//! streams).
//!
//! ```text
//! REDIS_URL=redis://127.0.0.1:6379 cargo run --release -p game-session --example load -- \
//!     --matches 1000 --seconds 20 [--think-ms 0 | --rate R] [--warmup 3] [--connections 0]
//! ```
//!
//! `REDIS_URL` may list Redis Cluster nodes (`redis://127.0.0.1:7001,redis://…:7002`):
//! the replica then runs on the cluster, and Redis CPU is summed over its primaries (and
//! shown per primary).
//!
//! `--think-ms T`: each player waits T ms (±50 %, uniform) before each play; `--think-ms
//! LOW-HIGH` waits between LOW and HIGH ms (uniform); 0 plays at once (the replica is then
//! saturated: plays/s is its throughput). These are closed loops: a player's pause starts
//! when its turn comes, so a slow server is offered fewer plays.
//!
//! `--rate R`: the open loop (`load/open_loop.rs`): R plays a second in total over the
//! two-player rooms, each room on a schedule of its own that does not wait for answers,
//! and each play's latency measured from its scheduled instant. `--connections C`:
//! spread the players over C HTTP/2 connections (0: one per player, like real clients;
//! at most 1,000 streams a connection, the replica's `server.limits.max_streams_per_connection`).
//! `--stream-window B`, `--connection-window B`: the replica's HTTP/2 windows
//! (`server.limits.initial_stream_window_bytes`, `initial_connection_window_bytes`).
//! `--wait-replicas N`: the replica waits for N Redis replicas after each commit (the
//! `[redis] wait_replicas` setting; 0: not).
//!
//! `--idle-seconds S`: once every stream is open and before anyone plays, measure the
//! replica's CPU for S seconds: what holding the streams costs (resync, leases, timers,
//! HTTP/2 keepalive), given per 10,000 streams. The latencies are also printed as a
//! histogram in millisecond buckets.
//!
//! `--workers N`: the replica's runtime runs N worker threads (default: one a core, as a
//! service's `#[tokio::main]` does); the relay's too, so that both are measured on the same
//! runtime shape.
//!
//! `LOAD_LISTEN=127.0.0.1:PORT` pins the replica's address (default: any free port);
//! `LOAD_JOIN_CONCURRENCY=N` sets its `game.join_concurrency` (default 64). The replica's
//! telemetry is as deployed (info, JSON: every call's span kept as in production, the lines
//! discarded); `LOAD_TELEMETRY=off` runs it without any.
//!
//! `REDIS_URL=memory` runs the replica on the in-memory store (what `basra dev` uses):
//! the game without Redis. `--replica relay` runs no game at all but a relay on the same
//! server stack (`load/relay.rs`): the transport's own cost of a play, the floor under
//! the replica's. Together with the real run they split a play's CPU into transport,
//! game and Redis work.
//!
//! `--spectators N`: each room also has N spectators, each on a connection of its own,
//! reading every event (they join after the players, before the run starts; their
//! events per second are reported).
//!
//! `--bot-rooms N [--bot-level hard|medium|easy] [--bot-delay-ms D]`: N more rooms, each
//! one player against the computer (the replica's bot at that level, default hard, with
//! the think delay D, default the service's 800 ms). The report gives the players' time
//! from their play to the bot's card minus D (queueing for a thinking slot, the search,
//! the timer that fires the bot, the commit), the hard decisions in the window and the
//! replica's CPU per decision (the search threads' own CPU time), apart from the
//! two-player rooms' latencies, so one run with `--bot-rooms 0` and one with bots show
//! what the bots cost the people playing each other (`docs/performance.md`, "Bots").
//!
//! `--join-storm N`: instead of playing, N players join within one second, each on a new
//! connection (or on `--connections C` shared ones), and the report gives the time until
//! the last snapshot and every refusal (see `load/storm.rs`).

#![allow(missing_docs)]

#[path = "load/open_loop.rs"]
mod open_loop;
#[path = "load/relay.rs"]
mod relay;
#[path = "load/storm.rs"]
mod storm;

use std::io::{BufRead as _, BufReader, Write as _};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use basra_engine::CardSet;
use basra_platform::auth::{Caller, Role, SigningKey, TokenIssuer, TokenVerifier};
use basra_platform::config::ConnectionLimits;
use basra_proto::basra::common::v1 as pb;
use basra_proto::basra::game::v1::{
    self as game, CreateRoomRequest, PlayRequest, SeatAssignment,
    game_internal_service_client::GameInternalServiceClient,
    game_service_client::GameServiceClient, play_request::Kind, play_response::Event as E,
    seat_assignment::Occupant,
};
use basra_proto::convert::{card_from_pb, card_to_pb};
use game_session::metrics::GameMetrics;
use game_session::room::timing::Timing;
use game_session::{RedisStore, ServiceConfig};
use rand::Rng as _;
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;
use tonic::transport::{Channel, Endpoint};
use uuid::Uuid;

/// The replica child (`serve`) runs with the allocator of the `game-session` binary; the
/// clients of the parent process share it.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const ISSUER: &str = "basra-accounts";
/// How fast the players of a run join before it starts.
const JOINS_PER_SECOND: f64 = 2_000.0;
const AUDIENCE: &str = "basra";

#[derive(Debug, Clone)]
struct Args {
    matches: usize,
    seconds: u64,
    warmup: u64,
    /// Each player's pause before a play, uniform in `[low, high]` ms (0, 0: none).
    think_ms: (u64, u64),
    /// The open loop's plays a second in total (`--rate`; `load/open_loop.rs`).
    rate: Option<f64>,
    connections: usize,
    /// The replica's HTTP/2 windows (`server.limits.initial_*_window_bytes`; None: the
    /// settings' defaults).
    stream_window: Option<u32>,
    connection_window: Option<u32>,
    wait_replicas: u64,
    join_storm: Option<usize>,
    idle_seconds: u64,
    spectators: usize,
    relay: bool,
    bot_rooms: usize,
    bot_level: pb::BotLevel,
    bot_delay_ms: u64,
    /// The replica's worker threads (None: tokio's default, one a core).
    workers: Option<usize>,
}

fn parse_args(mut args: impl Iterator<Item = String>) -> anyhow::Result<Args> {
    let mut parsed = Args {
        matches: 100,
        seconds: 20,
        warmup: 3,
        think_ms: (0, 0),
        rate: None,
        connections: 0,
        stream_window: None,
        connection_window: None,
        wait_replicas: 0,
        join_storm: None,
        idle_seconds: 0,
        spectators: 0,
        relay: false,
        bot_rooms: 0,
        bot_level: pb::BotLevel::Hard,
        bot_delay_ms: 800,
        workers: None,
    };
    while let Some(flag) = args.next() {
        let value = args
            .next()
            .with_context(|| format!("{flag} needs a value"))?;
        let number = || -> anyhow::Result<u64> {
            value
                .parse()
                .with_context(|| format!("{flag} {value}: not a number"))
        };
        match flag.as_str() {
            "--matches" => parsed.matches = number()? as usize,
            "--seconds" => parsed.seconds = number()?,
            "--warmup" => parsed.warmup = number()?,
            "--think-ms" => parsed.think_ms = think_range(&value)?,
            "--rate" => {
                let rate: f64 = value
                    .parse()
                    .with_context(|| format!("--rate {value}: not a number"))?;
                if !(rate > 0.0 && rate.is_finite()) {
                    bail!("--rate {value}: plays a second, above 0");
                }
                parsed.rate = Some(rate);
            }
            "--stream-window" => parsed.stream_window = Some(number()? as u32),
            "--connection-window" => parsed.connection_window = Some(number()? as u32),
            "--connections" => parsed.connections = number()? as usize,
            "--wait-replicas" => parsed.wait_replicas = number()?,
            "--join-storm" => parsed.join_storm = Some(number()? as usize),
            "--idle-seconds" => parsed.idle_seconds = number()?,
            "--spectators" => parsed.spectators = number()? as usize,
            "--bot-rooms" => parsed.bot_rooms = number()? as usize,
            "--bot-delay-ms" => parsed.bot_delay_ms = number()?,
            "--workers" => match number()? {
                0 => bail!("--workers 0: at least one worker thread"),
                n => parsed.workers = Some(n as usize),
            },
            "--bot-level" => {
                parsed.bot_level = match value.as_str() {
                    "easy" => pb::BotLevel::Easy,
                    "medium" => pb::BotLevel::Medium,
                    "hard" => pb::BotLevel::Hard,
                    other => bail!("--bot-level {other}: easy, medium or hard"),
                }
            }
            "--replica" => match value.as_str() {
                "game" => parsed.relay = false,
                "relay" => parsed.relay = true,
                other => bail!("--replica {other}: game or relay"),
            },
            other => bail!(
                "unknown flag {other}; flags: --matches N --seconds S --warmup S --think-ms T|LOW-HIGH --rate R --connections C --stream-window B --connection-window B --wait-replicas N --join-storm N --idle-seconds S --spectators N --bot-rooms N --bot-level L --bot-delay-ms D --replica game|relay --workers N"
            ),
        }
    }
    if parsed.matches + parsed.bot_rooms == 0 || parsed.seconds == 0 {
        bail!("--matches (or --bot-rooms) and --seconds must be at least 1");
    }
    if parsed.rate.is_some() && (parsed.think_ms != (0, 0) || parsed.bot_rooms > 0) {
        bail!("--rate is the open loop: without --think-ms, and for two-player rooms only");
    }
    if parsed.relay && parsed.bot_rooms > 0 {
        bail!("--bot-rooms needs the game replica: the relay has no bots");
    }
    // The replica refuses streams beyond its per-connection limit: the players past it
    // would wait to join for ever.
    let streams = parsed
        .join_storm
        .unwrap_or(parsed.matches * 2 + parsed.bot_rooms);
    let limit = ConnectionLimits::default().max_streams_per_connection as usize;
    if parsed.connections > 0 && streams.div_ceil(parsed.connections) > limit {
        bail!(
            "--connections {}: {} streams a connection, above the replica's {limit} \
             (server.limits.max_streams_per_connection); give at least {}",
            parsed.connections,
            streams.div_ceil(parsed.connections),
            streams.div_ceil(limit)
        );
    }
    Ok(parsed)
}

/// `--think-ms`: `T` (uniform within ±50 % of T) or `LOW-HIGH` (uniform between the two).
fn think_range(value: &str) -> anyhow::Result<(u64, u64)> {
    let bad = || format!("--think-ms {value}: T or LOW-HIGH, in milliseconds");
    match value.split_once('-') {
        Some((low, high)) => {
            let (low, high): (u64, u64) = (
                low.trim().parse().with_context(bad)?,
                high.trim().parse().with_context(bad)?,
            );
            if low > high {
                bail!(bad());
            }
            Ok((low, high))
        }
        None => {
            let think: u64 = value.trim().parse().with_context(bad)?;
            Ok((think / 2, think * 3 / 2))
        }
    }
}

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1).peekable();
    if args.peek().map(String::as_str) == Some("serve") {
        return serve();
    }
    let args = parse_args(args)?;
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?
        .block_on(drive(args))
}

fn redis_url() -> String {
    std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into())
}

/// The child: one replica on `LOAD_LISTEN` (default 127.0.0.1:0) until its stdin closes.
/// Prints its address, and its hard bot counters (`bots DECISIONS FALLBACKS CPU_SECONDS`)
/// for each `report` line it reads.
fn serve() -> anyhow::Result<()> {
    let prefix = std::env::var("LOAD_PREFIX").context("LOAD_PREFIX")?;
    let kid = std::env::var("LOAD_KID").context("LOAD_KID")?;
    let pem = std::env::var("LOAD_PEM").context("LOAD_PEM")?;
    let verifier = TokenVerifier::new(vec![(kid, pem)], ISSUER, AUDIENCE)?;
    let mut runtime = tokio::runtime::Builder::new_multi_thread();
    // `--workers N` (the parent's flag).
    if let Ok(workers) = std::env::var("LOAD_WORKERS") {
        runtime.worker_threads(workers.parse().context("LOAD_WORKERS: a number")?);
    }
    let runtime = runtime.enable_all().build()?;
    runtime.block_on(async move {
        // Telemetry as deployed (`deploy/k8s/base/game-session/config.toml`: info, JSON),
        // so that every call's span lives as it does in production; the lines go nowhere
        // (stdout is the parent's). `LOAD_TELEMETRY=off`: none, to see what it costs.
        let _telemetry = match std::env::var("LOAD_TELEMETRY").as_deref() {
            Ok("off") => None,
            _ => Some(basra_platform::telemetry::init_with_writer(
                "game-session",
                &basra_platform::config::TelemetrySettings {
                    filter: "info".into(),
                    json: true,
                    otlp_endpoint: None,
                },
                tracing_subscriber::fmt::writer::BoxMakeWriter::new(std::io::sink),
            )?),
        };
        let shutdown = CancellationToken::new();
        let stop = shutdown.clone();
        let metrics = Arc::new(std::sync::OnceLock::<Arc<GameMetrics>>::new());
        let reported = Arc::clone(&metrics);
        std::thread::spawn(move || {
            for line in std::io::stdin().lines() {
                let (Ok(line), Some(m)) = (line, reported.get()) else {
                    continue;
                };
                if line == "report" {
                    println!(
                        "bots {} {} {} {}",
                        m.hard_bot_decisions.get(),
                        m.hard_bot_fallbacks.get(),
                        m.hard_bot_cpu_seconds.get(),
                        m.hard_bot_late_answers.get()
                    );
                    let _ = std::io::stdout().flush();
                }
            }
            // The parent closes our stdin when it is done (or dies).
            stop.cancel();
        });
        let wait: u32 = std::env::var("LOAD_WAIT_REPLICAS")
            .ok()
            .and_then(|w| w.parse().ok())
            .unwrap_or(0);
        // `LOAD_LISTEN` pins the replica's address (a shared machine's port range).
        let listen = std::env::var("LOAD_LISTEN").unwrap_or_else(|_| "127.0.0.1:0".into());
        let listener = basra_platform::bind(listen.parse()?).await?;
        println!("listening {}", listener.local_addr()?);
        std::io::stdout().flush()?;
        if std::env::var("LOAD_REPLICA").as_deref() == Ok("relay") {
            let auth = basra_platform::auth::AuthLayer::new(verifier, &[]);
            let routes = relay::Relay::routes();
            let names = game_session::SERVICE_NAMES;
            basra_platform::serve(listener, routes, names, auth, shutdown, serve_options()).await?;
            return Ok(());
        }
        let store: Arc<dyn game_session::RoomStore> = if redis_url() == "memory" {
            Arc::new(game_session::MemoryStore::new())
        } else {
            let store = RedisStore::connect(&redis_url(), &prefix, 600, shutdown.clone()).await?;
            Arc::new(store.with_replica_wait(wait, 100))
        };
        let config = ServiceConfig {
            replica: "load".into(),
            timing: Timing {
                turn_ms: 120_000,
                grace_ms: 120_000,
                bot_delay_ms: std::env::var("LOAD_BOT_DELAY_MS")
                    .ok()
                    .and_then(|d| d.parse().ok())
                    .unwrap_or(0),
                rematch_ms: 120_000,
                turn_slack_ms: 1_000,
            },
            max_streams: 1_000_000,
            // The load's spectators are one account with a stream per room watched.
            streams_per_account: game_session::StreamsPerAccount::new(usize::MAX, usize::MAX),
            join_concurrency: std::env::var("LOAD_JOIN_CONCURRENCY")
                .ok()
                .and_then(|n| n.parse().ok())
                .unwrap_or(64),
            join_timeout: Duration::from_secs(30),
            timer_poll: Duration::from_millis(100),
            resync: Duration::from_millis(2000),
            lease: Duration::from_millis(15_000),
            // `LOAD_SEARCH_PRIORITY=normal`: the hard bot's searches at the runtime's priority.
            bots: game_session::replica::bots::Bots::new(
                &game_session::replica::bots::BotSettings {
                    search_priority: match std::env::var("LOAD_SEARCH_PRIORITY").as_deref() {
                        Ok("normal") => {
                            game_session::replica::search_threads::SearchPriority::Normal
                        }
                        _ => game_session::replica::search_threads::SearchPriority::Low,
                    },
                    ..Default::default()
                },
            ),
            revocations: Default::default(),
        };
        let session = game_session::GameSession::start(store, config, None, shutdown.child_token());
        let _ = metrics.set(Arc::clone(session.replica().metrics()));
        game_session::serve(listener, &session, verifier, shutdown, serve_options()).await?;
        Ok(())
    })
}

/// The replica's server options: the default limits, with the HTTP/2 windows of
/// `LOAD_STREAM_WINDOW` and `LOAD_CONNECTION_WINDOW` when given (`--stream-window`,
/// `--connection-window`).
fn serve_options() -> basra_platform::ServeOptions {
    let mut options = basra_platform::ServeOptions::with_drain(Duration::from_secs(1));
    let bytes = |name: &str| std::env::var(name).ok().and_then(|b| b.parse().ok());
    if let Some(window) = bytes("LOAD_STREAM_WINDOW") {
        options.limits.initial_stream_window_bytes = window;
    }
    if let Some(window) = bytes("LOAD_CONNECTION_WINDOW") {
        options.limits.initial_connection_window_bytes = window;
    }
    options
}

/// The replica child process.
struct Server {
    child: Child,
    /// The replica's stdout, past the address line: its answers to `report`.
    output: BufReader<std::process::ChildStdout>,
    addr: SocketAddr,
}

impl Server {
    fn spawn(prefix: &str, kid: &str, public_pem: &str, args: &Args) -> anyhow::Result<Server> {
        let (wait, relay, bot_delay_ms) = (args.wait_replicas, args.relay, args.bot_delay_ms);
        let mut command = Command::new(std::env::current_exe()?);
        if let Some(window) = args.stream_window {
            command.env("LOAD_STREAM_WINDOW", window.to_string());
        }
        if let Some(window) = args.connection_window {
            command.env("LOAD_CONNECTION_WINDOW", window.to_string());
        }
        if let Some(workers) = args.workers {
            command.env("LOAD_WORKERS", workers.to_string());
        }
        let mut child = command
            .arg("serve")
            .env("LOAD_REPLICA", if relay { "relay" } else { "game" })
            .env("LOAD_PREFIX", prefix)
            .env("LOAD_WAIT_REPLICAS", wait.to_string())
            .env("LOAD_KID", kid)
            .env("LOAD_PEM", public_pem)
            .env("LOAD_BOT_DELAY_MS", bot_delay_ms.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .context("spawning the replica")?;
        let mut line = String::new();
        let mut output = BufReader::new(child.stdout.take().expect("piped"));
        output
            .read_line(&mut line)
            .context("reading the replica's address")?;
        let addr = line
            .trim()
            .strip_prefix("listening ")
            .with_context(|| format!("unexpected replica output {line:?}"))?
            .parse()?;
        Ok(Server {
            child,
            output,
            addr,
        })
    }

    /// The replica's hard bot counters: decisions, fallbacks to greedy (no slot in
    /// time), CPU seconds, answers too late (greedy played at the delay's end).
    fn bot_counters(&mut self) -> anyhow::Result<(u64, u64, f64, u64)> {
        let stdin = self.child.stdin.as_mut().context("the replica's stdin")?;
        writeln!(stdin, "report")?;
        stdin.flush()?;
        let mut line = String::new();
        self.output.read_line(&mut line)?;
        let fields: Vec<&str> = line.split_whitespace().collect();
        match fields.as_slice() {
            ["bots", decisions, fallbacks, cpu, late] => Ok((
                decisions.parse()?,
                fallbacks.parse()?,
                cpu.parse()?,
                late.parse()?,
            )),
            _ => bail!("unexpected replica output {line:?}"),
        }
    }

    /// Resident set size in bytes.
    fn rss(&self) -> u64 {
        let statm =
            std::fs::read_to_string(format!("/proc/{}/statm", self.child.id())).unwrap_or_default();
        let pages: u64 = statm
            .split_whitespace()
            .nth(1)
            .and_then(|p| p.parse().ok())
            .unwrap_or(0);
        pages * page_size()
    }

    /// User + system CPU time in seconds.
    fn cpu_seconds(&self) -> f64 {
        cpu_seconds_of(&format!("/proc/{}/stat", self.child.id()))
    }

    fn stop(mut self) {
        drop(self.child.stdin.take());
        let _ = self.child.wait();
    }
}

/// User + system CPU time in seconds of the process whose `/proc/…/stat` is `path`.
fn cpu_seconds_of(path: &str) -> f64 {
    let stat = std::fs::read_to_string(path).unwrap_or_default();
    // Fields after the command name (which may hold spaces) start after ") ".
    let rest = stat.rsplit_once(") ").map_or("", |(_, rest)| rest);
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0)
    };
    // utime and stime are fields 14 and 15 (1-based), 12 and 13 here.
    (ticks(11) + ticks(12)) as f64 / 100.0
}

/// This process's (the load generator's) CPU time in seconds.
fn own_cpu_seconds() -> f64 {
    cpu_seconds_of("/proc/self/stat")
}

fn page_size() -> u64 {
    // Linux on x86-64 and aarch64 (4 KiB); getconf would need a process.
    4096
}

/// The primaries the run writes to: the one node, or every primary of a cluster (none:
/// the in-memory store, or the relay).
async fn primaries(
    relay: bool,
) -> anyhow::Result<Vec<(String, redis::aio::MultiplexedConnection)>> {
    let url = redis_url();
    if relay || url == "memory" {
        return Ok(Vec::new());
    }
    let first = url.split(',').next().unwrap_or_default().trim().to_owned();
    let mut conn = redis::Client::open(first.as_str())?
        .get_multiplexed_async_connection()
        .await?;
    if !url.contains(',') {
        return Ok(vec![(first, conn)]);
    }
    let nodes: String = redis::cmd("CLUSTER")
        .arg("NODES")
        .query_async(&mut conn)
        .await?;
    let mut out = Vec::new();
    for line in nodes.lines() {
        let parts: Vec<&str> = line.split(' ').collect();
        if parts.len() > 2 && parts[2].contains("master") && !parts[2].contains("fail") {
            let addr = parts[1].split('@').next().unwrap_or_default().to_owned();
            let conn = redis::Client::open(format!("redis://{addr}"))?
                .get_multiplexed_async_connection()
                .await?;
            out.push((addr, conn));
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out)
}

/// CPU seconds used so far by each primary.
async fn redis_cpu(nodes: &mut [(String, redis::aio::MultiplexedConnection)]) -> Vec<f64> {
    let mut out = Vec::new();
    for (_, conn) in nodes.iter_mut() {
        let info: String = redis::cmd("INFO")
            .arg("cpu")
            .query_async(conn)
            .await
            .unwrap_or_default();
        out.push(
            info.lines()
                .filter_map(|line| {
                    let (key, value) = line.split_once(':')?;
                    matches!(key, "used_cpu_sys" | "used_cpu_user")
                        .then(|| value.trim().parse::<f64>().ok())
                        .flatten()
                })
                .sum(),
        );
    }
    out
}

/// Bytes Redis received from and sent to its clients so far (`INFO stats`), summed over
/// the primaries: what the replica writes to and reads from Redis (the machine's other
/// clients count too on a shared Redis: run on a private one to measure).
async fn redis_bytes(nodes: &mut [(String, redis::aio::MultiplexedConnection)]) -> (u64, u64) {
    let (mut input, mut output) = (0, 0);
    for (_, conn) in nodes.iter_mut() {
        let info: String = redis::cmd("INFO")
            .arg("stats")
            .query_async(conn)
            .await
            .unwrap_or_default();
        for line in info.lines() {
            let Some((key, value)) = line.split_once(':') else {
                continue;
            };
            let value = value.trim().parse::<u64>().unwrap_or(0);
            match key {
                "total_net_input_bytes" => input += value,
                "total_net_output_bytes" => output += value,
                _ => {}
            }
        }
    }
    (input, output)
}

/// What the players share.
struct Shared {
    /// Set when the measured window starts; plays and latencies count from then.
    measuring: AtomicBool,
    /// Cleared when the run ends: players stop playing.
    running: AtomicBool,
    epoch: Instant,
    /// Each player's pause before a play, uniform in `[low, high]` ms.
    think_ms: (u64, u64),
    /// The open loop's schedule (`--rate`), the same for every room.
    schedule: Option<open_loop::Schedule>,
    /// The bots' think delay (`--bot-delay-ms`).
    bot_delay_ms: u64,
}

impl Shared {
    fn now_ns(&self) -> u64 {
        self.epoch.elapsed().as_nanos() as u64
    }
}

/// One player's figures.
#[derive(Default)]
struct Figures {
    /// Microseconds from the opponent's send to this player's receipt of its play.
    latencies_us: Vec<u32>,
    plays_seen: u64,
    /// This player's own plays the replica confirmed in the window.
    own_plays: u64,
    matches_ended: u64,
    rejects: u64,
    /// Open loop: this player's plays of the window sent after their scheduled instant
    /// because its turn came later (its room was behind its schedule).
    late_sends: u64,
    /// Open loop: for the plays whose turn came in time, how late the generator's own
    /// timer woke past the scheduled instant (µs): the load generator's share of the
    /// latency.
    overshoot_us: Vec<u32>,
    /// Bot rooms: the events this player received between its play and a bot's card
    /// that came more than [`SLOW_ANSWER_MS`] after the think delay (a few per player).
    slow_answers: Vec<String>,
}

/// A bot's card later than this past its think delay has its events printed.
const SLOW_ANSWER_MS: u64 = 100;

fn token(issuer: &TokenIssuer, user_id: Uuid, role: Role) -> anyhow::Result<String> {
    Ok(issuer
        .issue(
            &Caller {
                user_id,
                role,
                guest: false,
            },
            Duration::from_secs(3600),
        )?
        .token)
}

fn authed<T>(message: T, token: &str) -> tonic::Request<T> {
    let mut request = tonic::Request::new(message);
    request.metadata_mut().insert(
        "authorization",
        format!("Bearer {token}").parse().expect("ascii"),
    );
    request
}

/// Connects to the replica. On loopback the connections come from 16 source addresses in
/// turn (127.0.0.1–16): from one, 20,000 connections to one port would take most of the
/// 28,000 ephemeral ports, and the kernel's search for a free one slows every connect —
/// a limit of the test box, not of the replica (real players come from many addresses).
async fn connect(addr: SocketAddr) -> anyhow::Result<Channel> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let source = match addr.ip() {
        std::net::IpAddr::V4(ip) if ip.is_loopback() => {
            let n = NEXT.fetch_add(1, Ordering::Relaxed) % 16;
            Some(std::net::IpAddr::V4(std::net::Ipv4Addr::new(
                127,
                0,
                0,
                1 + n as u8,
            )))
        }
        _ => None,
    };
    Ok(Endpoint::from_shared(format!("http://{addr}"))?
        .tcp_nodelay(true)
        .local_address(source)
        .connect()
        .await?)
}

/// `count` connections to `addr`, made 64 at a time.
async fn connect_many(addr: SocketAddr, count: usize) -> anyhow::Result<Vec<Channel>> {
    let slots = Arc::new(tokio::sync::Semaphore::new(64));
    let mut connecting = tokio::task::JoinSet::new();
    for index in 0..count {
        let slots = Arc::clone(&slots);
        connecting.spawn(async move {
            let _slot = slots.acquire_owned().await;
            connect(addr).await.map(|channel| (index, channel))
        });
    }
    let mut channels = Vec::with_capacity(count);
    while let Some(connected) = connecting.join_next().await {
        channels.push(connected??);
    }
    channels.sort_by_key(|(index, _)| *index);
    Ok(channels.into_iter().map(|(_, channel)| channel).collect())
}

/// Sends the join (a seat's, or a spectator's) and opens the Play stream.
async fn join_stream(
    channel: Channel,
    token: &str,
    room_id: String,
    spectate: bool,
    tx: &mpsc::Sender<PlayRequest>,
    rx: mpsc::Receiver<PlayRequest>,
) -> anyhow::Result<tonic::Streaming<game::PlayResponse>> {
    tx.send(PlayRequest {
        kind: Some(Kind::Join(game::Join {
            room_id,
            last_seen_seq: Some(0),
            spectate,
        })),
    })
    .await?;
    Ok(GameServiceClient::new(channel)
        .play(authed(
            tokio_stream::wrappers::ReceiverStream::new(rx),
            token,
        ))
        .await
        .context("joining")?
        .into_inner())
}

/// One player: joins, then plays whenever it is its turn while the run lasts.
#[allow(clippy::too_many_arguments)]
async fn player(
    channel: Channel,
    token: String,
    room_id: String,
    seat: u32,
    // When this seat sent its last play (ns since epoch; 0: none in flight), and the same
    // for the opponent.
    mine: Arc<AtomicU64>,
    theirs: Arc<AtomicU64>,
    shared: Arc<Shared>,
    // Open loop: the room's next scheduled instant (ns since epoch), shared by its seats.
    slot: Option<Arc<AtomicU64>>,
    joined: mpsc::Sender<anyhow::Result<()>>,
    mut start: watch::Receiver<bool>,
) -> anyhow::Result<Figures> {
    let (tx, rx) = mpsc::channel(16);
    // A join that fails is reported at once (the other players keep their senders
    // while they wait for the start, so the driver would otherwise wait forever).
    let opened = join_stream(channel, &token, room_id, false, &tx, rx).await;
    let mut events = match opened {
        Ok(events) => {
            let _ = joined.send(Ok(())).await;
            events
        }
        Err(err) => {
            let _ = joined.send(Err(anyhow::anyhow!("{err:#}"))).await;
            return Err(err);
        }
    };
    let mut figures = Figures::default();
    let mut hand = CardSet::EMPTY;
    let mut my_turn = false;
    let mut started = *start.borrow();
    let mut last_seq = 0;
    // Bot rooms: what came since this player's last play (ms after it, event), for the
    // slow answers' report.
    let bot_room = Arc::ptr_eq(&mine, &theirs);
    let mut trail: Vec<(u64, &'static str)> = Vec::new();
    loop {
        if started && my_turn && shared.running.load(Ordering::Relaxed) {
            my_turn = false;
            let (low, high) = shared.think_ms;
            if high > 0 {
                let think = rand::rng().random_range(low..=high);
                tokio::time::sleep(Duration::from_millis(think)).await;
            }
            let Some(card) = hand.iter().next() else {
                bail!("my turn with an empty hand")
            };
            // The instant the opponent measures from: the room's scheduled instant in the
            // open loop, else now.
            let measured_from = match (&slot, shared.schedule) {
                (Some(slot), Some(schedule)) => {
                    let scheduled = slot.load(Ordering::Relaxed);
                    let turn = shared.now_ns();
                    let send = open_loop::send_at(scheduled, turn);
                    let measuring = shared.measuring.load(Ordering::Relaxed);
                    if send > turn {
                        tokio::time::sleep(Duration::from_nanos(send - turn)).await;
                        if measuring {
                            let woke = shared.now_ns();
                            figures
                                .overshoot_us
                                .push(open_loop::latency_us(scheduled, woke));
                        }
                    } else if measuring {
                        figures.late_sends += 1;
                    }
                    slot.store(
                        schedule.next(scheduled, rand::rng().random()),
                        Ordering::Relaxed,
                    );
                    scheduled
                }
                _ => shared.now_ns(),
            };
            mine.store(measured_from.max(1), Ordering::Relaxed);
            trail.clear();
            tx.send(PlayRequest {
                kind: Some(Kind::PlayCard(game::PlayCard {
                    card: Some(card_to_pb(card)),
                    capture_choice: None,
                    based_on_seq: Some(last_seq),
                    client_move_id: Uuid::now_v7().to_string(),
                })),
            })
            .await?;
        }
        let event = tokio::select! {
            changed = start.changed(), if !started => {
                if changed.is_err() { return Ok(figures); }
                started = *start.borrow();
                continue;
            }
            event = events.message() => event,
        };
        let Some(event) = event? else {
            return Ok(figures);
        };
        if !shared.running.load(Ordering::Relaxed) {
            // The run is over: hang up (the stream's end is the replica's business).
            return Ok(figures);
        }
        if !matches!(event.event, Some(E::Rejected(_) | E::Pong(_))) {
            last_seq = event.seq;
        }
        if bot_room && trail.len() < 64 {
            let sent = mine.load(Ordering::Relaxed);
            let after_ms = shared.now_ns().saturating_sub(sent) / 1_000_000;
            trail.push((after_ms, event_kind(event.event.as_ref())));
        }
        match event.event {
            Some(E::HandDealt(dealt)) => {
                hand = dealt
                    .cards
                    .iter()
                    .filter_map(|c| card_from_pb(c).ok())
                    .collect();
            }
            Some(E::TurnStarted(turn)) => my_turn = turn.seat == seat,
            Some(E::CardPlayed(played)) => {
                let card = played.card.as_ref().and_then(|c| card_from_pb(c).ok());
                if played.seat == seat {
                    if let Some(card) = card {
                        hand.remove(card);
                    }
                    if shared.measuring.load(Ordering::Relaxed) {
                        figures.own_plays += 1;
                    }
                } else {
                    let sent = theirs.swap(0, Ordering::Relaxed);
                    if sent != 0 && shared.measuring.load(Ordering::Relaxed) {
                        let micros = open_loop::latency_us(sent, shared.now_ns());
                        figures.latencies_us.push(micros);
                        figures.plays_seen += 1;
                        let slow_ms = (shared.bot_delay_ms + SLOW_ANSWER_MS) * 1000;
                        if bot_room && u64::from(micros) > slow_ms && figures.slow_answers.len() < 3
                        {
                            let events: Vec<String> = trail
                                .iter()
                                .map(|(ms, kind)| format!("{ms} {kind}"))
                                .collect();
                            figures.slow_answers.push(format!(
                                "{} ms after the play: {}",
                                micros / 1000,
                                events.join(", ")
                            ));
                        }
                    }
                }
            }
            Some(E::MatchEnded(_)) => {
                figures.matches_ended += 1;
                my_turn = false;
                tx.send(PlayRequest {
                    kind: Some(Kind::Rematch(game::RematchRequest {})),
                })
                .await?;
            }
            Some(E::Rejected(rejected)) => {
                figures.rejects += 1;
                if figures.rejects <= 3 {
                    eprintln!("rejected: {rejected:?}");
                }
            }
            _ => {}
        }
    }
}

/// The name of an event's kind, for the slow answers' report.
fn event_kind(event: Option<&E>) -> &'static str {
    match event {
        Some(E::MatchStarted(_)) => "match_started",
        Some(E::RoundStarted(_)) => "round_started",
        Some(E::TableDealt(_)) => "table_dealt",
        Some(E::HandDealt(_)) => "hand_dealt",
        Some(E::CardPlayed(_)) => "card_played",
        Some(E::TurnStarted(_)) => "turn_started",
        Some(E::RoundEnded(_)) => "round_ended",
        Some(E::MatchEnded(_)) => "match_ended",
        Some(E::RematchOffered(_)) => "rematch_offered",
        Some(E::Rejected(_)) => "rejected",
        Some(E::Pong(_)) => "pong",
        _ => "other",
    }
}

/// One spectator: joins `room_id` and reads every event until the run stops it,
/// counting in `seen` those of the measured window.
async fn spectator(
    channel: Channel,
    token: String,
    room_id: String,
    shared: Arc<Shared>,
    seen: Arc<AtomicU64>,
) -> anyhow::Result<()> {
    let (tx, rx) = mpsc::channel(1);
    let mut events = join_stream(channel, &token, room_id, true, &tx, rx).await?;
    while events.message().await?.is_some() {
        if shared.measuring.load(Ordering::Relaxed) {
            seen.fetch_add(1, Ordering::Relaxed);
        }
    }
    bail!("the stream ended")
}

/// The latencies (µs, sorted) counted in millisecond buckets.
fn histogram(sorted: &[u32]) -> String {
    const BOUNDS_MS: [u32; 10] = [1, 2, 5, 10, 25, 50, 100, 250, 1000, u32::MAX];
    let mut counts = [0usize; BOUNDS_MS.len()];
    for &micros in sorted {
        let bucket = BOUNDS_MS
            .iter()
            .position(|&ms| micros < ms.saturating_mul(1000))
            .unwrap_or(BOUNDS_MS.len() - 1);
        counts[bucket] += 1;
    }
    let total = sorted.len().max(1) as f64;
    let mut out = String::from("latency histogram:");
    let mut low = 0;
    for (&high, &count) in BOUNDS_MS.iter().zip(&counts) {
        let label = if high == u32::MAX {
            format!("≥{low} ms")
        } else {
            format!("{low}–{high} ms")
        };
        out.push_str(&format!(
            " {label} {count} ({:.2} %);",
            count as f64 / total * 100.0
        ));
        low = high;
    }
    out.pop();
    out
}

fn percentile(sorted: &[u32], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((p / 100.0) * (sorted.len() - 1) as f64).round() as usize;
    f64::from(sorted[rank.min(sorted.len() - 1)]) / 1000.0
}

async fn drive(args: Args) -> anyhow::Result<()> {
    let key = SigningKey::generate();
    let issuer = TokenIssuer::new(key, ISSUER, AUDIENCE);
    // As long as the default prefix (`basra`), so that the bytes a play sends to Redis are
    // a production replica's; unique enough on a private Redis (and cleaned up).
    let prefix = format!("L{:04x}", rand::rng().random::<u16>());
    let mut server = Server::spawn(&prefix, issuer.kid(), issuer.public_pem(), &args)?;
    let mut redis_nodes = primaries(args.relay).await?;
    let players = args.matches * 2 + args.bot_rooms;
    let connections = if args.connections == 0 {
        players
    } else {
        args.connections.min(players)
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    let rss_idle = server.rss();

    if let Some(joins) = args.join_storm {
        let stormed = storm::run(&server, &issuer, joins, args.connections).await;
        server.stop();
        for (_, conn) in redis_nodes.iter_mut() {
            cleanup(conn, &prefix).await?;
        }
        return stormed;
    }
    let rooms = create_rooms(&server, &issuer, args.matches, args.spectators > 0, None).await?;
    let room_ids: Vec<String> = rooms.iter().map(|(id, _, _)| id.clone()).collect();
    let bot_rooms = create_rooms(
        &server,
        &issuer,
        args.bot_rooms,
        false,
        Some(args.bot_level),
    )
    .await?;
    let channels = connect_many(server.addr, connections).await?;
    let rss_connected = server.rss();

    let shared = Arc::new(Shared {
        measuring: AtomicBool::new(false),
        running: AtomicBool::new(true),
        epoch: Instant::now(),
        think_ms: args.think_ms,
        schedule: args
            .rate
            .map(|rate| open_loop::Schedule::new(rate, args.matches)),
        bot_delay_ms: args.bot_delay_ms,
    });
    // Open loop: each two-player room's next scheduled instant, set when the run starts.
    let slots: Vec<Arc<AtomicU64>> = (0..args.matches)
        .map(|_| Arc::new(AtomicU64::new(0)))
        .collect();
    let (start_tx, start_rx) = watch::channel(false);
    let (joined_tx, mut joined_rx) = mpsc::channel(players);
    let mut tasks = tokio::task::JoinSet::new();
    // Players arrive at a steady rate, like a replica filling up (a burst of joins is
    // `--join-storm`'s subject, not this run's).
    let joins_start = Instant::now();
    // Two players a two-player room; one a bot room (the bot's card answers its play, so
    // its own send time is the one to measure against).
    let seated = rooms
        .into_iter()
        .map(|room| (room, false))
        .chain(bot_rooms.into_iter().map(|room| (room, true)));
    let mut joining = 0;
    for (index, ((room_id, ua, ub), bot_room)) in seated.enumerate() {
        let (sent_a, sent_b) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
        let slot = (args.rate.is_some() && !bot_room).then(|| Arc::clone(&slots[index]));
        let mut seats = vec![(0, ua, sent_a.clone(), sent_b.clone())];
        if bot_room {
            seats[0].3 = sent_a;
        } else {
            seats.push((1, ub, sent_b, sent_a));
        }
        for (seat, user, mine, theirs) in seats {
            let channel = channels[joining % connections].clone();
            let join_at = joins_start + Duration::from_secs_f64(joining as f64 / JOINS_PER_SECOND);
            joining += 1;
            let player = player(
                channel,
                token(&issuer, user, Role::Player)?,
                room_id.clone(),
                seat,
                mine,
                theirs,
                shared.clone(),
                slot.clone(),
                joined_tx.clone(),
                start_rx.clone(),
            );
            tasks.spawn(async move {
                tokio::time::sleep_until(join_at.into()).await;
                (bot_room, player.await)
            });
        }
    }
    drop(joined_tx);
    for _ in 0..players {
        joined_rx
            .recv()
            .await
            .context("a player failed to join")?
            .context("a player failed to join")?;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let rss_streams = server.rss();
    let mut watchers = tokio::task::JoinSet::new();
    let spectator_events = Arc::new(AtomicU64::new(0));
    if args.spectators > 0 {
        let viewer = token(&issuer, Uuid::now_v7(), Role::Player)?;
        let channels = connect_many(server.addr, room_ids.len() * args.spectators).await?;
        for (index, channel) in channels.into_iter().enumerate() {
            let room_id = room_ids[index / args.spectators].clone();
            watchers.spawn(spectator(
                channel,
                viewer.clone(),
                room_id,
                shared.clone(),
                spectator_events.clone(),
            ));
        }
        // Their joins (a snapshot each) are done well before the window opens.
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    // Every stream open, nobody playing: what holding them costs (resync, leases,
    // timers, HTTP/2 keepalive).
    let idle_cpu = if args.idle_seconds > 0 {
        let cpu = server.cpu_seconds();
        tokio::time::sleep(Duration::from_secs(args.idle_seconds)).await;
        Some((server.cpu_seconds() - cpu) / args.idle_seconds as f64)
    } else {
        None
    };

    if let Some(schedule) = shared.schedule {
        let now = shared.now_ns();
        for slot in &slots {
            slot.store(schedule.first(now, rand::rng().random()), Ordering::Relaxed);
        }
    }
    start_tx.send(true)?;
    tokio::time::sleep(Duration::from_secs(args.warmup)).await;
    let bots0 = if args.bot_rooms > 0 {
        server.bot_counters()?
    } else {
        (0, 0, 0.0, 0)
    };
    let (cpu0, redis_cpu0) = (server.cpu_seconds(), redis_cpu(&mut redis_nodes).await);
    let own_cpu0 = own_cpu_seconds();
    let bytes0 = redis_bytes(&mut redis_nodes).await;
    shared.measuring.store(true, Ordering::Relaxed);
    let window = Instant::now();
    tokio::time::sleep(Duration::from_secs(args.seconds)).await;
    shared.measuring.store(false, Ordering::Relaxed);
    let elapsed = window.elapsed().as_secs_f64();
    let own_cpu1 = own_cpu_seconds();
    let (cpu1, redis_cpu1) = (server.cpu_seconds(), redis_cpu(&mut redis_nodes).await);
    let bytes1 = redis_bytes(&mut redis_nodes).await;
    let bots1 = if args.bot_rooms > 0 {
        server.bot_counters()?
    } else {
        (0, 0, 0.0, 0)
    };
    let redis_used: Vec<f64> = redis_cpu1
        .iter()
        .zip(&redis_cpu0)
        .map(|(b, a)| b - a)
        .collect();
    let (redis_cpu0, redis_cpu1) = (0.0, redis_used.iter().sum::<f64>());
    let rss_loaded = server.rss();
    shared.running.store(false, Ordering::Relaxed);
    drop(channels);
    // A spectator runs until it is stopped: one that ended by now failed.
    let mut failed = 0;
    while let Some(result) = watchers.try_join_next() {
        if let Ok(Err(err)) = result {
            failed += 1;
            eprintln!("spectator failed: {err:#}");
        }
    }
    watchers.abort_all();
    let spectator_events = spectator_events.load(Ordering::Relaxed);

    let (mut latencies, mut bot_latencies) = (Vec::new(), Vec::new());
    let (mut plays, mut ended, mut rejects) = (0u64, 0u64, 0u64);
    let (mut late_sends, mut overshoots) = (0u64, Vec::new());
    let (mut bot_plays, mut bot_ended, mut human_plays_against_bots) = (0u64, 0u64, 0u64);
    let mut slow_answers = Vec::new();
    while let Some(result) = tasks.join_next().await {
        match result? {
            (true, Ok(figures)) => {
                bot_latencies.extend(figures.latencies_us);
                slow_answers.extend(figures.slow_answers);
                bot_plays += figures.plays_seen;
                human_plays_against_bots += figures.own_plays;
                bot_ended += figures.matches_ended;
                rejects += figures.rejects;
            }
            (false, Ok(figures)) => {
                latencies.extend(figures.latencies_us);
                late_sends += figures.late_sends;
                overshoots.extend(figures.overshoot_us);
                plays += figures.plays_seen;
                ended += figures.matches_ended;
                rejects += figures.rejects;
            }
            (_, Err(err)) => {
                failed += 1;
                if failed <= 3 {
                    eprintln!("player failed: {err:#}");
                }
            }
        }
    }
    latencies.sort_unstable();
    bot_latencies.sort_unstable();
    overshoots.sort_unstable();
    // Every play of the window: the two-player rooms' (each seen by the opponent) and the
    // bot rooms' (the player's own and the bot's).
    let all_plays = plays + bot_plays + human_plays_against_bots;
    server.stop();
    for (_, conn) in redis_nodes.iter_mut() {
        cleanup(conn, &prefix).await?;
    }

    let mib = |bytes: u64| bytes as f64 / (1024.0 * 1024.0);
    let per_stream = |rss: u64| (rss.saturating_sub(rss_idle)) as f64 / players as f64 / 1024.0;
    println!(
        "matches {} + bot rooms {} ({} streams on {} connections), {}, wait_replicas {}, window {:.1} s",
        args.matches,
        args.bot_rooms,
        players,
        connections,
        match (args.rate, args.think_ms) {
            (Some(rate), _) => format!("open loop at {rate:.0} plays/s offered"),
            (None, (0, 0)) => "closed loop, no think time".to_owned(),
            (None, (low, high)) => format!("closed loop, think {low}–{high} ms"),
        },
        args.wait_replicas,
        elapsed
    );
    println!(
        "two-player rooms: plays/s {:.0}  (plays {plays}, matches ended {}, rejects {rejects}, failed players and spectators {failed})",
        plays as f64 / elapsed,
        ended / 2
    );
    println!(
        "play -> opponent's card_played: p50 {:.2} ms  p99 {:.2} ms  p99.9 {:.2} ms  max {:.2} ms",
        percentile(&latencies, 50.0),
        percentile(&latencies, 99.0),
        percentile(&latencies, 99.9),
        percentile(&latencies, 100.0)
    );
    println!("{}", histogram(&latencies));
    if args.rate.is_some() {
        // The latencies above run from each play's scheduled instant.
        println!(
            "open loop: latency from each play's scheduled instant; {late_sends} plays ({:.2} %) sent late because their room was behind its schedule; \
             the generator's timer woke p50 {:.2} ms, p99 {:.2} ms past the instant (counted in the latency)",
            late_sends as f64 * 100.0 / (late_sends as usize + overshoots.len()).max(1) as f64,
            percentile(&overshoots, 50.0),
            percentile(&overshoots, 99.0)
        );
    }
    if args.bot_rooms > 0 {
        // The bot answers no sooner than its think delay: what is left is the replica's.
        let delay_us = args.bot_delay_ms as f64 * 1000.0;
        let answer = |p: f64| (percentile(&bot_latencies, p) - delay_us / 1000.0).max(0.0);
        let (decisions, fallbacks, cpu, late) = (
            bots1.0 - bots0.0,
            bots1.1 - bots0.1,
            bots1.2 - bots0.2,
            bots1.3 - bots0.3,
        );
        println!(
            "bot rooms {} ({:?}, think delay {} ms): {} bot plays ({:.0}/s), {} matches ended",
            args.bot_rooms,
            args.bot_level,
            args.bot_delay_ms,
            bot_plays,
            bot_plays as f64 / elapsed,
            bot_ended
        );
        println!(
            "play -> bot's card_played minus the delay: p50 {:.2} ms  p99 {:.2} ms  max {:.2} ms",
            answer(50.0),
            answer(99.0),
            answer(100.0)
        );
        println!(
            "hard decisions {decisions} ({:.0}/s), played greedy: no slot in time {fallbacks}, no answer by the delay's end {late}; search CPU {:.2} ms a decision ({:.0} % of a core)",
            decisions as f64 / elapsed,
            cpu * 1000.0 / decisions.max(1) as f64,
            cpu / elapsed * 100.0
        );
        let slow = bot_latencies
            .iter()
            .filter(|&&us| u64::from(us) > (args.bot_delay_ms + SLOW_ANSWER_MS) * 1000)
            .count();
        println!(
            "bot's cards more than {SLOW_ANSWER_MS} ms past the delay: {slow} ({:.2} %); what the player received from its play to such a card (ms after the play, event), a few:",
            slow as f64 * 100.0 / bot_latencies.len().max(1) as f64
        );
        for answer in slow_answers.iter().take(12) {
            println!("  {answer}");
        }
    }
    // Each match has at most one play in flight (a player plays on its turn), so by
    // Little's law the mean latency is the plays in flight over plays/s: with no think
    // time, about `matches / plays/s`, whatever the server.
    let mean_ms = latencies.iter().map(|&us| f64::from(us)).sum::<f64>()
        / latencies.len().max(1) as f64
        / 1000.0;
    // In the open loop the latency also counts the time a play waited for its room to
    // catch up with its schedule, so the product may pass the rooms.
    println!(
        "mean {mean_ms:.2} ms: {:.0} plays in flight on average (plays/s × mean latency; {} {})",
        plays as f64 / elapsed * mean_ms / 1000.0,
        if args.rate.is_some() {
            "with the plays waiting behind their room's schedule; rooms"
        } else {
            "at most"
        },
        args.matches
    );
    if args.spectators > 0 {
        println!(
            "spectators {} a room ({} streams): {:.0} events/s delivered to them",
            args.spectators,
            room_ids.len() * args.spectators,
            spectator_events as f64 / elapsed
        );
    }
    if let Some(cores) = idle_cpu {
        println!(
            "idle upkeep (all {players} streams open, nobody playing, {} s): {:.1} % of a core, {:.2} % per 10,000 streams",
            args.idle_seconds,
            cores * 100.0,
            cores * 100.0 * 10_000.0 / players as f64
        );
    }
    println!(
        "server CPU {:.0} µs/play ({:.0} % of a core); redis CPU {:.0} µs/play ({:.0} % of a core)",
        (cpu1 - cpu0) / all_plays.max(1) as f64 * 1e6,
        (cpu1 - cpu0) / elapsed * 100.0,
        (redis_cpu1 - redis_cpu0) / all_plays.max(1) as f64 * 1e6,
        (redis_cpu1 - redis_cpu0) / elapsed * 100.0
    );
    println!(
        "redis bytes/play: {:.0} in (written to Redis), {:.0} out (read from Redis)",
        (bytes1.0 - bytes0.0) as f64 / all_plays.max(1) as f64,
        (bytes1.1 - bytes0.1) as f64 / all_plays.max(1) as f64
    );
    if redis_nodes.len() > 1 {
        let each: Vec<String> = redis_nodes
            .iter()
            .zip(&redis_used)
            .map(|((addr, _), used)| format!("{addr} {:.0} %", used / elapsed * 100.0))
            .collect();
        println!("redis CPU per primary: {}", each.join(", "));
    }
    println!(
        "load generator CPU {:.0} % of a core (its clients share the cores with the replica and Redis)",
        (own_cpu1 - own_cpu0) / elapsed * 100.0
    );
    println!(
        "server RSS: idle {:.1} MiB, + connections {:.1} MiB, + streams {:.1} MiB, under load {:.1} MiB; \
         per open stream {:.1} KiB idle ({:.1} KiB with its connection), {:.1} KiB under load",
        mib(rss_idle),
        mib(rss_connected),
        mib(rss_streams),
        mib(rss_loaded),
        (rss_streams.saturating_sub(rss_connected)) as f64 / players as f64 / 1024.0,
        per_stream(rss_streams),
        per_stream(rss_loaded)
    );
    Ok(())
}

/// `matches` two-player rooms on the replica, made by the internal CreateRoom with a
/// service token: each room's id and its two players (with `bot`, seat 1 is the computer
/// at that level and the second id names nobody).
async fn create_rooms(
    server: &Server,
    issuer: &TokenIssuer,
    matches: usize,
    allow_spectators: bool,
    bot: Option<pb::BotLevel>,
) -> anyhow::Result<Vec<(String, Uuid, Uuid)>> {
    let control = connect(server.addr).await?;
    let service = token(issuer, Uuid::now_v7(), Role::Service)?;
    let mut rooms = Vec::with_capacity(matches);
    let mut creating = tokio::task::JoinSet::new();
    // Fewer calls at once than the server's streams per connection (32): a burst above it
    // before the client has the server's settings is refused (REFUSED_STREAM).
    let creation_slots = Arc::new(tokio::sync::Semaphore::new(16));
    for _ in 0..matches {
        let (room_id, ua, ub) = (Uuid::now_v7().to_string(), Uuid::now_v7(), Uuid::now_v7());
        let mut client = GameInternalServiceClient::new(control.clone());
        let request = authed(
            CreateRoomRequest {
                room_id: room_id.clone(),
                seats: vec![
                    SeatAssignment {
                        occupant: Some(Occupant::UserId(ua.to_string())),
                        ..Default::default()
                    },
                    SeatAssignment {
                        occupant: Some(match bot {
                            Some(level) => Occupant::Bot(game::BotSeat {
                                level: level as i32,
                            }),
                            None => Occupant::UserId(ub.to_string()),
                        }),
                        ..Default::default()
                    },
                ],
                settings: Some(pb::RuleSettings::default()),
                ranked: false,
                allow_spectators,
                visibility: pb::RoomVisibility::Private as i32,
            },
            &service,
        );
        let slots = Arc::clone(&creation_slots);
        creating.spawn(async move {
            let _slot = slots.acquire_owned().await;
            client.create_room(request).await.map(|_| ())
        });
        rooms.push((room_id, ua, ub));
    }
    while let Some(created) = creating.join_next().await {
        created??;
    }
    Ok(rooms)
}

/// Deletes the run's keys.
async fn cleanup(conn: &mut redis::aio::MultiplexedConnection, prefix: &str) -> anyhow::Result<()> {
    let mut cursor: u64 = 0;
    loop {
        let (next, keys): (u64, Vec<String>) = redis::cmd("SCAN")
            .arg(cursor)
            .arg("MATCH")
            .arg(format!("{prefix}:*"))
            .arg("COUNT")
            .arg(1000)
            .query_async(conn)
            .await?;
        if !keys.is_empty() {
            // One key per UNLINK: on a cluster node a multi-key command must stay in a slot.
            let mut pipe = redis::pipe();
            for key in &keys {
                pipe.cmd("UNLINK").arg(key).ignore();
            }
            let _: () = pipe.query_async(conn).await?;
        }
        if next == 0 {
            return Ok(());
        }
        cursor = next;
    }
}
