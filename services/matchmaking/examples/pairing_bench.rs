//! Pairing benchmark against real Redis (`REDIS_URL`, default
//! redis://127.0.0.1:6379):
//!
//! 1. throughput: a large ranked queue (random ratings 1000–2000) drained
//!    by the real pairing loop (one replica; game-session answers at once):
//!    pairs formed per second, each pair formed *and* committed;
//! 2. latency: tickets arriving at a steady rate, time from queueing to
//!    matched (p50, p99), measured from the store's match events.
//!
//! `cargo run --release -p matchmaking --example pairing_bench -- [queue] [rate] [seconds] [formats] [replicas]`
//! (defaults: 100000 tickets, 2000 arrivals/s, 10 s, 1 format, 1 replica). With several
//! formats the tickets are spread evenly over ranked 2-seat formats of different target
//! scores (101, 151, 201, …), each its own queue. With several replicas the throughput
//! phase runs that many pairing loops, each with its own Redis connection, on the one
//! queue (in this process: they share its cores).
//!
//! The throughput line also says how much CPU Redis's main thread spent on the
//! phase (`INFO cpu`, `used_cpu_*_main_thread`), in all and per pair formed: the
//! figure that bounds how many pairs one Redis can form per second. It counts every
//! client of that Redis, so run it on a Redis of its own.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use basra_platform::presence::PresenceReporter;
use basra_proto::basra::game::v1::{
    CreateRoomRequest, CreateRoomResponse, GetSeatRequest, GetSeatResponse, SeatPlayerRequest,
    SeatPlayerResponse,
};
use matchmaking::{
    Config, Deps, MatchmakingError,
    clock::{Clock, SystemClock},
    domain::Format,
    metrics::Metrics,
    settings::Settings,
    store::{NewTicket, RedisStore, Store, TicketState},
    upstream::{GameRooms, NameSource, NoInvites, RatingSource},
};
use rand::Rng;
use tokio_util::sync::CancellationToken;
use tonic::Status;

/// game-session that creates every room at once.
struct InstantGame;

#[tonic::async_trait]
impl GameRooms for InstantGame {
    async fn create_room(&self, request: CreateRoomRequest) -> Result<CreateRoomResponse, Status> {
        Ok(CreateRoomResponse {
            room_id: request.room_id,
            settings: request.settings,
            created: true,
        })
    }

    async fn seat_player(&self, _request: SeatPlayerRequest) -> Result<SeatPlayerResponse, Status> {
        Err(Status::unimplemented("not used"))
    }

    async fn get_seat(&self, _request: GetSeatRequest) -> Result<GetSeatResponse, Status> {
        Err(Status::unimplemented("not used"))
    }
}

struct NoRatings;

#[tonic::async_trait]
impl RatingSource for NoRatings {
    async fn rating(&self, _user_id: &str) -> Result<f64, MatchmakingError> {
        Ok(1500.0)
    }
}

struct NoNames;

#[tonic::async_trait]
impl NameSource for NoNames {
    async fn names(
        &self,
        _user_ids: &[String],
    ) -> Result<std::collections::HashMap<String, String>, MatchmakingError> {
        Ok(Default::default())
    }
}

/// The `i`-th of the benchmark's formats: ranked, 2 seats, target 101, 151, 201, …
fn format(i: usize) -> Format {
    Format {
        ranked: true,
        seats: 2,
        target_score: 101 + 50 * i as u32,
    }
}

/// Ticket `n`'s format among `formats` of them.
fn format_of(n: usize, formats: usize) -> Format {
    format(n % formats.max(1))
}

async fn enqueue_many(store: &Arc<dyn Store>, ids: Vec<String>, ttl: i64, formats: usize) {
    let mut tasks = tokio::task::JoinSet::new();
    let ids: Vec<(usize, String)> = ids.into_iter().enumerate().collect();
    for chunk in ids.chunks(ids.len().div_ceil(64).max(1)) {
        let store = store.clone();
        let chunk = chunk.to_vec();
        tasks.spawn(async move {
            for (n, id) in chunk {
                let rating = (rand::rng().random_range(1000.0..2000.0f64) * 100.0).round() / 100.0;
                let ticket = NewTicket {
                    user_id: format!("u-{id}"),
                    id,
                    guest: false,
                    format: format_of(n, formats),
                    rating,
                    allow_bots: false,
                    blocks: Vec::new(),
                };
                store
                    .enqueue(ticket, SystemClock.now_ms(), ttl, ttl)
                    .await
                    .expect("enqueue");
            }
        });
    }
    while tasks.join_next().await.is_some() {}
}

fn start(store: Arc<dyn Store>, metrics: Arc<Metrics>) -> CancellationToken {
    // BASRA_QUEUE__… variables tune the run like the service.
    let settings = Settings::from_env(std::env::vars()).expect("settings");
    let mut queue = settings.queue.clone();
    queue.ticket_ttl_seconds = 3600;
    queue.resume_grace_seconds = 3600;
    let shutdown = CancellationToken::new();
    let deps = Deps {
        store,
        game: Arc::new(InstantGame),
        ratings: Arc::new(NoRatings),
        names: Arc::new(NoNames),
        invites: Arc::new(NoInvites),
        presence: PresenceReporter::disabled(),
        clock: Arc::new(SystemClock),
        metrics,
        events: matchmaking::events::EventDeps::memory(),
    };
    let config = Config {
        queue,
        rooms: settings.rooms,
        serving: Duration::from_secs(1).into(),
        revocations: Default::default(),
        events: settings.events.clone(),
    };
    let _ = matchmaking::start(config, deps, shutdown.clone());
    shutdown
}

/// CPU seconds Redis's main thread has used (user + system), from `INFO cpu`; `None`
/// for a cluster URL or a Redis that does not say.
async fn redis_cpu(url: &str) -> Option<f64> {
    if url.contains(',') {
        return None;
    }
    let client = redis::Client::open(url).ok()?;
    let mut conn = client.get_multiplexed_async_connection().await.ok()?;
    let info: String = redis::cmd("INFO")
        .arg("cpu")
        .query_async(&mut conn)
        .await
        .ok()?;
    let field = |name: &str| {
        info.lines().find_map(|l| {
            l.strip_prefix(name)?
                .strip_prefix(':')?
                .trim()
                .parse::<f64>()
                .ok()
        })
    };
    Some(field("used_cpu_user_main_thread")? + field("used_cpu_sys_main_thread")?)
}

/// Deletes the run's keys. SCAN, not KEYS: on a Redis with millions of keys a KEYS
/// outlasts the client's response timeout, and the keys left behind slow the next runs.
async fn cleanup(url: &str, prefix: &str) {
    let client = redis::Client::open(url).expect("url");
    let mut conn = client
        .get_multiplexed_async_connection()
        .await
        .expect("redis");
    let mut cursor = 0u64;
    loop {
        let (next, keys): (u64, Vec<String>) = redis::cmd("SCAN")
            .arg(cursor)
            .arg("MATCH")
            .arg(format!("{prefix}:*"))
            .arg("COUNT")
            .arg(10_000)
            .query_async(&mut conn)
            .await
            .expect("scan");
        if !keys.is_empty() {
            let _: () = redis::cmd("UNLINK")
                .arg(&keys)
                .query_async(&mut conn)
                .await
                .expect("unlink");
        }
        if next == 0 {
            break;
        }
        cursor = next;
    }
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let queue_size: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(100_000);
    let rate: u64 = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(2_000);
    let seconds: u64 = args.get(3).and_then(|a| a.parse().ok()).unwrap_or(10);
    let formats: usize = args.get(4).and_then(|a| a.parse().ok()).unwrap_or(1).max(1);
    let replicas: usize = args.get(5).and_then(|a| a.parse().ok()).unwrap_or(1).max(1);
    let url = std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into());

    // 1. Throughput from a large queue.
    let prefix = format!("bench:mm:{}", uuid::Uuid::now_v7().simple());
    let store: Arc<dyn Store> = Arc::new(RedisStore::connect(&url, &prefix).await.expect("redis"));
    let ids: Vec<String> = (0..queue_size).map(|i| format!("b{i}")).collect();
    let filled = Instant::now();
    enqueue_many(&store, ids, 3_600_000, formats).await;
    println!(
        "queued {queue_size} tickets in {formats} format(s) in {:.2} s",
        filled.elapsed().as_secs_f64()
    );
    let mut loops = Vec::with_capacity(replicas);
    for _ in 0..replicas {
        let replica: Arc<dyn Store> =
            Arc::new(RedisStore::connect(&url, &prefix).await.expect("redis"));
        loops.push((replica, Arc::new(Metrics::new())));
    }
    let matches = || loops.iter().map(|(_, m)| m.matches()).sum::<u64>();
    let cpu_before = redis_cpu(&url).await;
    let started = Instant::now();
    let shutdowns: Vec<CancellationToken> = loops
        .iter()
        .map(|(replica, metrics)| start(replica.clone(), metrics.clone()))
        .collect();
    let target = (queue_size as u64 / 2) * 95 / 100;
    let mut last = 0;
    let mut stalled = Instant::now();
    while matches() < target {
        tokio::time::sleep(Duration::from_millis(20)).await;
        let n = matches();
        if n != last {
            last = n;
            stalled = Instant::now();
        } else if stalled.elapsed() > Duration::from_secs(3) {
            break;
        }
    }
    let elapsed = started.elapsed().as_secs_f64();
    let pairs = matches();
    let cpu = match (cpu_before, redis_cpu(&url).await) {
        (Some(before), Some(after)) => format!(
            "; Redis main thread {:.2} s of CPU ({:.0}% of the phase) = {:.0} µs per pair",
            after - before,
            (after - before) * 100.0 / elapsed,
            (after - before) * 1e6 / pairs.max(1) as f64
        ),
        _ => String::new(),
    };
    println!(
        "throughput ({replicas} replica(s)): {pairs} pairs formed and committed in {elapsed:.2} s = {:.0} pairs/s ({} tickets left){cpu}",
        pairs as f64 / elapsed,
        store
            .queue_lengths()
            .await
            .unwrap()
            .iter()
            .map(|(_, n)| n)
            .sum::<u64>()
    );
    for shutdown in shutdowns {
        shutdown.cancel();
    }
    drop((store, loops));
    cleanup(&url, &prefix).await;

    // 2. Time to match at a steady arrival rate.
    let prefix = format!("bench:mm:{}", uuid::Uuid::now_v7().simple());
    let store: Arc<dyn Store> = Arc::new(RedisStore::connect(&url, &prefix).await.expect("redis"));
    let metrics = Arc::new(Metrics::new());
    let queued_at: Arc<Mutex<HashMap<String, Instant>>> = Arc::default();
    let waits: Arc<Mutex<Vec<Duration>>> = Arc::default();
    let mut events = store.subscribe();
    let watcher = {
        let (store, queued_at, waits) = (store.clone(), queued_at.clone(), waits.clone());
        tokio::spawn(async move {
            while let Ok(id) = events.recv().await {
                let at = Instant::now();
                let Some(start) = queued_at.lock().unwrap().remove(&id) else {
                    continue;
                };
                if let Ok(Some(v)) = store.poll(&id, SystemClock.now_ms(), 3_600_000).await
                    && matches!(v.state, TicketState::Matched(_))
                {
                    waits.lock().unwrap().push(at - start);
                }
            }
        })
    };
    let shutdown = start(store.clone(), metrics.clone());
    let total = rate * seconds;
    let interval = Duration::from_secs_f64(1.0 / rate as f64 * 20.0);
    let mut ticker = tokio::time::interval(interval);
    let mut sent = 0u64;
    let began = Instant::now();
    while sent < total {
        ticker.tick().await;
        // 20 arrivals per tick keeps the pacing cheap.
        let batch: Vec<(u64, String)> = (sent..(sent + 20).min(total))
            .map(|i| (i, format!("s{i}")))
            .collect();
        sent += batch.len() as u64;
        {
            let now = Instant::now();
            let mut map = queued_at.lock().unwrap();
            for (_, id) in &batch {
                map.insert(id.clone(), now);
            }
        }
        let store = store.clone();
        tokio::spawn(async move {
            for (n, id) in batch {
                let rating = (rand::rng().random_range(1000.0..2000.0f64) * 100.0).round() / 100.0;
                let ticket = NewTicket {
                    user_id: format!("u-{id}"),
                    id,
                    guest: false,
                    format: format_of(n as usize, formats),
                    rating,
                    allow_bots: false,
                    blocks: Vec::new(),
                };
                store
                    .enqueue(ticket, SystemClock.now_ms(), 3_600_000, 3_600_000)
                    .await
                    .expect("enqueue");
            }
        });
    }
    let offered = began.elapsed().as_secs_f64();
    tokio::time::sleep(Duration::from_secs(3)).await;
    shutdown.cancel();
    watcher.abort();
    let mut waits = waits.lock().unwrap().clone();
    waits.sort();
    let pct = |p: f64| {
        waits
            .get(((waits.len() as f64 * p) as usize).min(waits.len().saturating_sub(1)))
            .copied()
            .unwrap_or_default()
    };
    println!(
        "steady arrivals: {sent} tickets at {:.0}/s over {offered:.1} s; matched {} ({:.1}%); time to match p50 {:?}, p99 {:?}, max {:?}",
        sent as f64 / offered,
        waits.len(),
        waits.len() as f64 * 100.0 / sent as f64,
        pct(0.50),
        pct(0.99),
        waits.last().copied().unwrap_or_default()
    );
    drop(store);
    cleanup(&url, &prefix).await;
}
