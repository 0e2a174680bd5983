//! What a Redis Cluster primary crash loses: writers commit to rooms through the real
//! store (the real commit script) as fast as they can, the primary holding the most of
//! their rooms is killed with SIGKILL mid-run, its replica takes over (cluster node
//! timeout), and every writer checks afterwards whether commits it was told were done
//! are gone. Run once without waiting for replicas and once with `WAIT 1` after each
//! commit (`[redis] wait_replicas`).
//!
//! It kills a primary, so it runs on a cluster of its own, never on the shared test
//! cluster (7001–7006): `BASE_PORT` (default 7101; ports overlapping 7001–7006 are refused) names the first of its
//! six ports; the example starts that cluster with `scripts/redis-cluster.sh start`
//! (idempotent) and ignores `REDIS_CLUSTER_URL`.
//!
//! ```text
//! BASE_PORT=7101 cargo run --release -p game-session --example durability -- --wait 0 --rooms 200 --seconds 12
//! ```
//!
//! At the end it runs `scripts/redis-cluster.sh heal` (same `BASE_PORT`), which restarts
//! the killed node; `BASE_PORT=7101 scripts/redis-cluster.sh stop` ends the cluster.
//! Reports commits/s and commit latency before the kill, how long the rooms of
//! the killed primary could not commit, and the acknowledged commits lost.

#![allow(missing_docs)]

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use basra_engine::Seed;
use basra_platform::redis::hash_slot;
use game_session::RedisStore;
use game_session::room::timing::Timing;
use game_session::room::{Occupant, Room};
use game_session::store::{Commit, CommitOutcome, RoomStore, SHARDS};
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

struct Args {
    wait: u32,
    rooms: usize,
    seconds: u64,
    kill_after: u64,
}

fn parse_args() -> anyhow::Result<Args> {
    let mut parsed = Args {
        wait: 0,
        rooms: 200,
        seconds: 12,
        kill_after: 4,
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let value: u64 = args
            .next()
            .with_context(|| format!("{flag} needs a value"))?
            .parse()
            .with_context(|| format!("{flag}: not a number"))?;
        match flag.as_str() {
            "--wait" => parsed.wait = value as u32,
            "--rooms" => parsed.rooms = value as usize,
            "--seconds" => parsed.seconds = value,
            "--kill-after" => parsed.kill_after = value,
            other => {
                bail!("unknown flag {other}; flags: --wait N --rooms N --seconds S --kill-after S")
            }
        }
    }
    if parsed.kill_after >= parsed.seconds {
        bail!("--kill-after must be less than --seconds");
    }
    Ok(parsed)
}

fn room(id: &str) -> Room {
    let mut room = Room::new(
        id.into(),
        basra_engine::Settings::default(),
        vec![
            Occupant::Player {
                user_id: "a".into(),
                name: "A".into(),
            },
            Occupant::Player {
                user_id: "b".into(),
                name: "B".into(),
            },
        ],
        false,
        false,
        game_session::room::Visibility::Private,
        Timing {
            turn_ms: 600_000,
            grace_ms: 600_000,
            bot_delay_ms: 0,
            rematch_ms: 600_000,
            turn_slack_ms: 1_000,
        },
        0,
    );
    room.start_if_full(Seed([7; 32]), "m".into(), 0);
    room
}

/// One writer's figures.
#[derive(Default)]
struct Figures {
    /// Commit latencies (µs) before the kill.
    before_us: Vec<u64>,
    /// Commits after the kill.
    after: u64,
    /// Acknowledged commits found missing afterwards.
    lost: u64,
    /// The longest time without a successful commit (ms).
    longest_gap_ms: u64,
    errors: u64,
    /// When this room first committed after the kill (ms after it), if it did.
    back_after_ms: Option<u64>,
    /// Failed calls by (the start of) their error message.
    error_kinds: HashMap<String, u64>,
}

async fn writer(
    store: Arc<RedisStore>,
    id: String,
    killed: Arc<AtomicBool>,
    killed_at: Arc<std::sync::OnceLock<Instant>>,
    stop: Arc<AtomicBool>,
) -> anyhow::Result<Figures> {
    let mut figures = Figures::default();
    let mut room = room(&id);
    room.take_pending();
    let mut version = 1u64;
    let mut acked = 1u64;
    let mut last_ok = Instant::now();
    while !stop.load(Ordering::Relaxed) {
        let start = Instant::now();
        let result = store
            .commit(Commit {
                room: &room,
                expected_version: version,
                events: &[],
                actions: &Default::default(),
                applied_move: None,
                outbox: None,
                plain_play: false,
            })
            .await;
        match result {
            Ok(CommitOutcome::Committed { version: v }) => {
                if killed.load(Ordering::Relaxed) {
                    figures.after += 1;
                    if figures.back_after_ms.is_none()
                        && let Some(at) = killed_at.get()
                        && start > *at
                    {
                        figures.back_after_ms = Some(at.elapsed().as_millis() as u64);
                    }
                } else {
                    figures.before_us.push(start.elapsed().as_micros() as u64);
                }
                figures.longest_gap_ms = figures
                    .longest_gap_ms
                    .max(last_ok.elapsed().as_millis() as u64);
                last_ok = Instant::now();
                version = v;
                acked = v;
            }
            Ok(_) | Err(_) => {
                if let Err(err) = &result {
                    let text = err.to_string();
                    let kind = text.chars().take(80).collect::<String>();
                    *figures.error_kinds.entry(kind).or_default() += 1;
                    figures.errors += 1;
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                // Where is the room really? Fewer versions than acknowledged: lost.
                if let Ok(Some(loaded)) = store.load(&id).await {
                    if loaded.version < acked {
                        figures.lost += acked - loaded.version;
                        acked = loaded.version;
                    }
                    version = loaded.version;
                    acked = acked.max(version);
                }
            }
        }
    }
    // The final count; a room still unreachable counts as an error, not a loss.
    match store.load(&id).await {
        Ok(Some(loaded)) => figures.lost += acked.saturating_sub(loaded.version),
        _ => figures.errors += 1,
    }
    Ok(figures)
}

/// The cluster's primaries: address → slot ranges.
async fn primaries(url: &str) -> anyhow::Result<Vec<(String, Vec<(u16, u16)>)>> {
    let first = url.split(',').next().context("a node")?.trim();
    let mut conn = redis::Client::open(first)?
        .get_multiplexed_async_connection()
        .await?;
    let text: String = redis::cmd("CLUSTER")
        .arg("NODES")
        .query_async(&mut conn)
        .await?;
    Ok(text
        .lines()
        .filter_map(|line| {
            let parts: Vec<&str> = line.split(' ').collect();
            let flags = parts.get(2)?;
            if !flags.contains("master") || flags.contains("fail") {
                return None;
            }
            let addr = parts.get(1)?.split('@').next()?.to_owned();
            let ranges = parts[8..]
                .iter()
                .filter_map(|r| {
                    let (a, b) = r.split_once('-').unwrap_or((r, r));
                    Some((a.parse().ok()?, b.parse().ok()?))
                })
                .collect();
            Some((addr, ranges))
        })
        .collect())
}

fn percentile(sorted: &[u64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((p / 100.0) * (sorted.len() - 1) as f64).round() as usize;
    sorted[i] as f64 / 1000.0
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = parse_args()?;
    // RUST_LOG=warn shows the cluster client's rebuilds.
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_writer(std::io::stderr)
        .init();
    let base_port = private_cluster()?;
    let url = (base_port..base_port + 3)
        .map(|port| format!("redis://127.0.0.1:{port}"))
        .collect::<Vec<_>>()
        .join(",");
    let prefix = format!("dur-{}", Uuid::now_v7().simple());
    let store = Arc::new(
        RedisStore::connect(&url, &prefix, 600, CancellationToken::new())
            .await?
            .with_replica_wait(args.wait, 100),
    );

    // The primary holding the most shards is the one to kill.
    let primaries = primaries(&url).await?;
    let mut shards_on: HashMap<String, u32> = HashMap::new();
    for shard in 0..SHARDS {
        let slot = hash_slot(&format!("{prefix}:{{gs:{shard}}}:rooms"));
        if let Some((addr, _)) = primaries
            .iter()
            .find(|(_, ranges)| ranges.iter().any(|&(a, b)| a <= slot && slot <= b))
        {
            *shards_on.entry(addr.clone()).or_default() += 1;
        }
    }
    let (victim, victim_shards) = shards_on
        .iter()
        .max_by_key(|(_, n)| **n)
        .map(|(a, n)| (a.clone(), *n))
        .context("no primary")?;

    let mut ids = Vec::new();
    for _ in 0..args.rooms {
        let id = Uuid::now_v7().to_string();
        let mut r = room(&id);
        let events = r.take_pending();
        store
            .commit(Commit {
                room: &r,
                expected_version: 0,
                events: &events,
                actions: &Default::default(),
                applied_move: None,
                outbox: None,
                plain_play: false,
            })
            .await?;
        ids.push(id);
    }

    let killed = Arc::new(AtomicBool::new(false));
    let killed_at = Arc::new(std::sync::OnceLock::new());
    let stop = Arc::new(AtomicBool::new(false));
    let mut tasks = tokio::task::JoinSet::new();
    let victim_ranges = primaries
        .iter()
        .find(|(addr, _)| *addr == victim)
        .map(|(_, ranges)| ranges.clone())
        .unwrap_or_default();
    for id in ids {
        let slot = hash_slot(&format!(
            "{prefix}:{{gs:{}}}:rooms",
            game_session::store::shard_of(&id)
        ));
        let on_victim = victim_ranges.iter().any(|&(a, b)| a <= slot && slot <= b);
        let writing = writer(
            store.clone(),
            id,
            killed.clone(),
            killed_at.clone(),
            stop.clone(),
        );
        tasks.spawn(async move { writing.await.map(|f| (on_victim, f)) });
    }
    let started = Instant::now();
    tokio::time::sleep(Duration::from_secs(args.kill_after)).await;
    let before_s = started.elapsed().as_secs_f64();
    let mut conn = redis::Client::open(format!("redis://{victim}"))?
        .get_multiplexed_async_connection()
        .await?;
    let info: String = redis::cmd("INFO")
        .arg("server")
        .query_async(&mut conn)
        .await?;
    let pid = info
        .lines()
        .find_map(|l| l.strip_prefix("process_id:"))
        .context("process_id")?
        .trim()
        .to_owned();
    eprintln!("killing the primary {victim} (pid {pid})");
    killed.store(true, Ordering::Relaxed);
    let _ = killed_at.set(Instant::now());
    std::process::Command::new("kill")
        .args(["-9", &pid])
        .status()?;
    tokio::time::sleep(Duration::from_secs(args.seconds - args.kill_after)).await;
    stop.store(true, Ordering::Relaxed);

    let mut all = Figures::default();
    let mut rooms_losing = 0;
    let mut back: Vec<u64> = Vec::new();
    let mut never_back = 0;
    // When the rooms of the primaries still up committed again (ms after the kill).
    let mut others_back: Vec<u64> = Vec::new();
    while let Some(result) = tasks.join_next().await {
        let (on_victim, f) = result??;
        if !on_victim {
            others_back.push(f.back_after_ms.unwrap_or(u64::MAX));
        }
        all.before_us.extend(f.before_us);
        all.after += f.after;
        all.lost += f.lost;
        all.errors += f.errors;
        for (kind, n) in f.error_kinds {
            *all.error_kinds.entry(kind).or_default() += n;
        }
        all.longest_gap_ms = all.longest_gap_ms.max(f.longest_gap_ms);
        rooms_losing += usize::from(f.lost > 0);
        match f.back_after_ms {
            Some(ms) => back.push(ms),
            None => never_back += 1,
        }
    }
    all.before_us.sort_unstable();
    println!(
        "wait_replicas {}: {} rooms, primary {victim} ({victim_shards} of {SHARDS} shards) killed after {:.1} s",
        args.wait, args.rooms, before_s
    );
    println!(
        "before the kill: {:.0} commits/s, p50 {:.2} ms, p99 {:.2} ms",
        all.before_us.len() as f64 / before_s,
        percentile(&all.before_us, 50.0),
        percentile(&all.before_us, 99.0)
    );
    println!(
        "after: {} commits, {} failed calls, longest stall of a room {:.1} s",
        all.after,
        all.errors,
        all.longest_gap_ms as f64 / 1000.0
    );
    back.sort_unstable();
    println!(
        "rooms committing again after the kill: {} of {} (p50 {:.1} s, max {:.1} s after it); never again: {never_back}",
        back.len(),
        args.rooms,
        back.get(back.len() / 2).copied().unwrap_or(0) as f64 / 1000.0,
        back.last().copied().unwrap_or(0) as f64 / 1000.0
    );
    let mut kinds: Vec<(String, u64)> = all.error_kinds.into_iter().collect();
    kinds.sort_by_key(|(_, n)| std::cmp::Reverse(*n));
    for (kind, n) in kinds.iter().take(5) {
        println!("  {n} failed calls: {kind}");
    }
    others_back.sort_unstable();
    println!(
        "of which the {} rooms of the primaries still up: p50 {:.1} s, max {:.1} s",
        others_back.len(),
        others_back.get(others_back.len() / 2).copied().unwrap_or(0) as f64 / 1000.0,
        others_back.last().copied().unwrap_or(0) as f64 / 1000.0
    );
    println!(
        "acknowledged commits lost: {} (in {rooms_losing} rooms); cluster client rebuilt {} times",
        all.lost,
        store.client_rebuilds()
    );

    cluster_script(base_port, "heal")?;
    Ok(())
}

/// The script that runs local clusters.
const CLUSTER_SCRIPT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../scripts/redis-cluster.sh"
);

/// Starts (or finds running) the example's own cluster and returns its first port:
/// `BASE_PORT`, default 7101. Ports overlapping the shared test cluster's
/// 7001–7006 are refused, since a primary is killed.
fn private_cluster() -> anyhow::Result<u16> {
    let base_port: u16 = match std::env::var("BASE_PORT") {
        Ok(text) => text.parse().context("BASE_PORT: not a port")?,
        Err(_) => 7101,
    };
    if base_port <= 7006 && base_port.saturating_add(5) >= 7001 {
        bail!(
            "BASE_PORT {base_port}: the shared test cluster's ports; pick a cluster of its own (e.g. 7101)"
        );
    }
    cluster_script(base_port, "start")?;
    Ok(base_port)
}

fn cluster_script(base_port: u16, action: &str) -> anyhow::Result<()> {
    let done = std::process::Command::new(CLUSTER_SCRIPT)
        .arg(action)
        .env("BASE_PORT", base_port.to_string())
        .status()?;
    if !done.success() {
        bail!("BASE_PORT={base_port} {CLUSTER_SCRIPT} {action} failed");
    }
    Ok(())
}
