//! The whole system's capacity (`make capacity`, issue 49): simulated players arrive
//! open-loop (a Poisson process) at the real services — `accounts`, `matchmaking` and
//! `game-session` started as separate processes on a private Redis and PostgreSQL by the
//! fault suite's stack (`tests/chaos/stack.rs`), talking to the stores directly (no
//! fault proxy) — and do what players do in stated shares, at human pace, through the
//! gRPC front doors. It prints per RPC and stream kind the rate, failures by status and
//! p50/p99/p99.9 from the scheduled instant; per process CPU, CPU seconds per
//! player-hour, memory and sockets; and the headline: players present, matches a second,
//! and whether every finished match was recorded once in PostgreSQL. Exits non-zero on
//! any failed call or a match not recorded.
//!
//! ```text
//! cargo build --release -p accounts -p game-session -p matchmaking -p basra-capacity
//! target/release/capacity --bin-dir target/release --short               # make capacity
//! target/release/capacity --bin-dir target/release --players 20000 --session-s 1200 \
//!     --seconds 720 --warmup 120 --games 4 --game-quota 0.5                # see --help
//! ```

#![allow(missing_docs, unreachable_pub)]

mod front;
mod latency;
mod mix;
mod player;
mod pods;
mod procs;
mod report;
mod schedule;
mod seat;
mod served;
mod sim;

#[allow(dead_code)]
#[path = "../chaos/proxy.rs"]
mod proxy;
#[allow(dead_code)]
#[path = "../chaos/stack.rs"]
mod stack;

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use rand::Rng as _;

use crate::front::{Front, Pool};
use crate::latency::{Recorder, quantile};
use crate::mix::{ACTIVITIES, DEFAULT_ACTIVITIES, DEFAULT_SIGN_INS, SIGN_INS, Shares};
use crate::pods::Pod;
use crate::procs::{Pids, Usage};
use crate::report::GroupRow;
use crate::schedule::{Arrivals, Range, exponential};
use crate::served::Histograms;
use crate::sim::{Behaviour, Counters, Sim, lock};
use crate::stack::{Stack, Tuning};

const HELP: &str = "flags: --bin-dir DIR --short --players N (mean sessions in progress, as drawn; present is about 1.5x) --session-s S (mean \
session) --seconds S (arrivals) --warmup S --ramp-s S --think-ms LOW-HIGH --between-ms LOW-HIGH \
--watch-ms LOW-HIGH --target N --mix quick=35,ranked=20,friends=20,computer=15,watch=10 \
--sign-in guest=50,returning=35,password=15 --connections N (per service) --games N \
--matchmakers 1|2 --game-quota CORES --turn-seconds S --drop-share F --timeout-share F \
--redis-fsync always|everysec (the AOF's appendfsync: always, as the fault suite runs it, or everysec)";

#[derive(Debug, Clone)]
struct Args {
    bin_dir: PathBuf,
    players: f64,
    session: Duration,
    seconds: u64,
    warmup: u64,
    ramp: u64,
    behaviour: Behaviour,
    mix: String,
    sign_in: String,
    connections: usize,
    games: usize,
    matchmakers: usize,
    game_quota: Option<f64>,
    turn_seconds: u64,
    redis_fsync: String,
}

fn parse_args() -> anyhow::Result<Args> {
    let short = std::env::args().any(|a| a == "--short");
    let mut args = Args {
        bin_dir: PathBuf::from("target/release"),
        players: if short { 150.0 } else { 1_000.0 },
        session: Duration::from_secs(if short { 90 } else { 1_200 }),
        seconds: if short { 150 } else { 720 },
        warmup: if short { 30 } else { 120 },
        ramp: if short { 10 } else { 60 },
        behaviour: Behaviour {
            think: Range::parse_ms(if short { "100-400" } else { "2000-8000" })?,
            between: Range::parse_ms(if short { "200-1000" } else { "2000-10000" })?,
            watch_for: Range::parse_ms(if short { "5000-20000" } else { "30000-180000" })?,
            target_score: 51,
            drop_share: 0.05,
            timeout_share: 0.03,
            history_share: 0.5,
            leaderboard_share: 0.25,
            refresh_after: Duration::from_secs(600),
        },
        mix: DEFAULT_ACTIVITIES.into(),
        sign_in: DEFAULT_SIGN_INS.into(),
        connections: 64,
        games: 2,
        matchmakers: 2,
        game_quota: None,
        turn_seconds: if short { 5 } else { 15 },
        redis_fsync: "always".into(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        if flag == "--short" {
            continue;
        }
        if flag == "--help" || flag == "-h" {
            println!("{HELP}");
            std::process::exit(0);
        }
        let value = it
            .next()
            .with_context(|| format!("{flag} needs a value; {HELP}"))?;
        let number = || -> anyhow::Result<f64> {
            let n: f64 = value
                .parse()
                .with_context(|| format!("{flag} {value}: not a number"))?;
            anyhow::ensure!(n.is_finite() && n >= 0.0, "{flag} {value}: 0 or more");
            Ok(n)
        };
        let b = &mut args.behaviour;
        match flag.as_str() {
            "--bin-dir" => args.bin_dir = PathBuf::from(&value),
            "--players" => args.players = number()?,
            "--session-s" => args.session = Duration::from_secs_f64(number()?.max(1.0)),
            "--seconds" => args.seconds = number()? as u64,
            "--warmup" => args.warmup = number()? as u64,
            "--ramp-s" => args.ramp = number()? as u64,
            "--think-ms" => b.think = Range::parse_ms(&value)?,
            "--between-ms" => b.between = Range::parse_ms(&value)?,
            "--watch-ms" => b.watch_for = Range::parse_ms(&value)?,
            "--target" => b.target_score = number()? as u32,
            "--drop-share" => b.drop_share = number()?.min(1.0),
            "--timeout-share" => b.timeout_share = number()?.min(1.0),
            "--mix" => args.mix = value,
            "--sign-in" => args.sign_in = value,
            "--connections" => args.connections = (number()? as usize).max(1),
            "--games" => args.games = (number()? as usize).max(1),
            "--matchmakers" => args.matchmakers = number()? as usize,
            "--game-quota" => args.game_quota = Some(number()?),
            "--turn-seconds" => args.turn_seconds = (number()? as u64).max(1),
            "--redis-fsync" => {
                anyhow::ensure!(
                    ["always", "everysec"].contains(&value.as_str()),
                    "--redis-fsync is always or everysec"
                );
                args.redis_fsync = value;
            }
            other => bail!("unknown flag {other}; {HELP}"),
        }
    }
    anyhow::ensure!(
        args.warmup < args.seconds,
        "--warmup must be shorter than --seconds"
    );
    anyhow::ensure!(
        (1..=2).contains(&args.matchmakers),
        "--matchmakers is 1 or 2"
    );
    anyhow::ensure!(
        args.behaviour.think.high.as_secs() < args.turn_seconds,
        "the longest think time must be shorter than --turn-seconds"
    );
    Ok(args)
}

fn main() -> anyhow::Result<()> {
    let args = parse_args()?;
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?
        .block_on(run(args))
}

/// Starts the stack as the run wants it: services on the stores directly, `games`
/// game-session replicas, `matchmakers` matchmaking replicas (replica i sends rooms to
/// game-session i mod games).
async fn start_stack(args: &Args, dir: &std::path::Path) -> anyhow::Result<Stack> {
    let tuning = Tuning {
        turn_seconds: args.turn_seconds,
        grace_seconds: 60,
    };
    let mut stack = Stack::start(&args.bin_dir, dir, tuning).await?;
    let redis_proxy = format!("redis://{}", stack.redis_proxy.addr);
    let redis_direct = format!("redis://127.0.0.1:{}", stack.redis.port);
    let pg_proxy = format!("postgres://postgres@{}/postgres", stack.pg_proxy.addr);
    let pg_direct = stack.pg.url();
    // The matchmakers' game-session: replica i mod games.
    let game_urls: Vec<String> = stack.game_urls();
    while stack.matchmakers.len() > args.matchmakers {
        stack.matchmakers.pop();
    }
    while stack.games.len() > args.games {
        stack.games.pop();
    }
    for (i, mm) in stack.matchmakers.iter().enumerate() {
        let target = game_urls[i % args.games].clone();
        let own = game_urls[i].clone();
        mm.edit_config(|text| {
            text.replace(&redis_proxy, &redis_direct)
                .replace(&format!("url = \"{own}\""), &format!("url = \"{target}\""))
        })?;
    }
    for game in &stack.games {
        game.edit_config(|text| text.replace(&redis_proxy, &redis_direct))?;
    }
    stack.accounts.edit_config(|text| {
        text.replace(&pg_proxy, &pg_direct)
            .replace("max_connections = 16", "max_connections = 32")
    })?;
    let quick = Duration::from_secs(5);
    stack.accounts.terminate(quick).await;
    stack.accounts.start().await?;
    for service in stack.games.iter_mut().chain(stack.matchmakers.iter_mut()) {
        service.terminate(quick).await;
        service.start().await?;
    }
    for i in stack.games.len()..args.games {
        let mut game = stack.game_replica(&format!("game-{i}"), &redis_direct, i)?;
        game.start().await?;
        stack.games.push(game);
    }
    Ok(stack)
}

/// The process groups measured, by name.
fn groups(stack: &Stack) -> Vec<(String, Pids)> {
    let mut groups = Vec::new();
    let service = |s: &stack::Service| s.pid().map(|pid| (s.name.clone(), Pids::One(pid)));
    groups.extend(service(&stack.accounts));
    groups.extend(stack.matchmakers.iter().filter_map(service));
    groups.extend(stack.games.iter().filter_map(service));
    if let Some(pid) = stack.redis.pid() {
        groups.push(("redis".into(), Pids::One(pid)));
    }
    groups.push((
        "postgres (all backends)".into(),
        Pids::Postgres(stack.dir().join("pg").join("data").join("postmaster.pid")),
    ));
    groups.push((
        "simulator (this process)".into(),
        Pids::One(std::process::id()),
    ));
    groups
}

/// Every service's latency histograms now (a service that does not answer is left out).
async fn served(stack: &Stack) -> Histograms {
    let mut all = Histograms::default();
    let services = std::iter::once(&stack.accounts)
        .chain(&stack.matchmakers)
        .chain(&stack.games);
    for service in services {
        if let Some(text) = service.metrics_text().await {
            all.add(&service.name, &text);
        }
    }
    all
}

/// A periodic read of every group and of the population.
struct Sample {
    at: Instant,
    present: i64,
    usage: Vec<Usage>,
}

fn sample(groups: &[(String, Pids)], counters: &Counters) -> Sample {
    Sample {
        at: Instant::now(),
        present: counters.present.load(std::sync::atomic::Ordering::Relaxed),
        usage: groups.iter().map(|(_, pids)| pids.usage()).collect(),
    }
}

async fn run(args: Args) -> anyhow::Result<()> {
    let dir =
        std::env::temp_dir().join(format!("basra-capacity-{}", uuid::Uuid::now_v7().simple()));
    println!(
        "capacity: {} sessions in progress on average as drawn (sessions of {:.0} s; players present are about 1.5x that), arrivals for {} s, measured after {} s; {} game-session replica(s){}, {} matchmaking; Redis appendfsync {}; stack in {}",
        args.players,
        args.session.as_secs_f64(),
        args.seconds,
        args.warmup,
        args.games,
        args.game_quota
            .map_or(String::new(), |q| format!(" each limited to {q} cores")),
        args.matchmakers,
        args.redis_fsync,
        dir.display()
    );
    let activities = Shares::parse(&args.mix, ACTIVITIES)?;
    println!(
        "capacity: activities {}",
        ACTIVITIES
            .iter()
            .map(|(name, kind)| format!("{name} {:.0} %", activities.share(*kind) * 100.0))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let stack = start_stack(&args, &dir).await?;
    let mut pods = Vec::new();
    if let Some(cores) = args.game_quota {
        for game in &stack.games {
            let pid = game
                .pid()
                .context("a game-session replica is not running")?;
            pods.push((game.name.clone(), Pod::confine(&game.name, cores, pid)?));
        }
        if let Some((_, pod)) = pods.first() {
            println!(
                "capacity: game-session replicas confined with cgroup {:?} CPU quotas",
                pod.flavour()
            );
        }
    }
    // Redis notes every event of its loop that took 10 ms or more (a command, an fsync
    // of the AOF, an expiry cycle…): printed at the end.
    stack
        .redis
        .cli(&["CONFIG", "SET", "latency-monitor-threshold", "10"])?;
    let fsync = stack
        .redis
        .cli(&["CONFIG", "SET", "appendfsync", &args.redis_fsync])?;
    anyhow::ensure!(
        fsync.trim() == "OK",
        "redis-cli CONFIG SET appendfsync {}: {fsync:?}",
        args.redis_fsync
    );
    let db = sqlx::PgPool::connect(&stack.pg.url()).await?;
    let matchmaking_urls: Vec<String> = stack.matchmakers.iter().map(stack::Service::url).collect();
    let sim = Arc::new(Sim {
        rec: Recorder::new(),
        front: Front {
            accounts: Pool::new(&[stack.accounts.url()], args.connections)?,
            matchmaking: Pool::new(&matchmaking_urls, args.connections)?,
            games: Pool::new(&stack.game_urls(), args.connections)?,
        },
        behaviour: args.behaviour.clone(),
        activities,
        sign_ins: Shares::parse(&args.sign_in, SIGN_INS)?,
        counters: Counters::default(),
        tag: uuid::Uuid::now_v7().simple().to_string()[20..].to_owned(),
        last_play: Mutex::new(HashMap::new()),
        ended: Mutex::new(HashMap::new()),
        watchable: Mutex::new(Vec::new()),
        devices: Mutex::new(Vec::new()),
        accounts: Mutex::new(Vec::new()),
    });
    let groups = groups(&stack);
    println!(
        "capacity: the progress lines' RSS MiB, in order: {}",
        groups
            .iter()
            .map(|(name, _)| name.as_str())
            .collect::<Vec<_>>()
            .join(" / ")
    );

    // The open loop: the initial population arrives spread over the ramp (each with a
    // full session: the exponential forgets how long it has been there), then a Poisson
    // stream at the rate that keeps `players` present.
    let start = Instant::now();
    let spawner = {
        let sim = sim.clone();
        let args = args.clone();
        tokio::spawn(async move {
            let mut tasks = tokio::task::JoinSet::new();
            let mut arrivals_at: Vec<Duration> = (0..args.players as u64)
                .map(|_| Duration::from_secs_f64(rand::rng().random::<f64>() * args.ramp as f64))
                .collect();
            let mut poisson = Arrivals::for_population(args.players, args.session);
            let end = Duration::from_secs(args.seconds);
            loop {
                let next = poisson.next(1.0 - rand::rng().random::<f64>());
                if next >= end {
                    break;
                }
                arrivals_at.push(next);
            }
            arrivals_at.sort();
            for offset in arrivals_at {
                let at = start + offset;
                // Spawn a little ahead; the session itself waits for its instant.
                sim::sleep_until(at.checked_sub(Duration::from_millis(50)).unwrap_or(at)).await;
                let length = exponential(args.session, 1.0 - rand::rng().random::<f64>());
                tasks.spawn(player::session(sim.clone(), at, length));
                while tasks.try_join_next().is_some() {}
            }
            // Hold the sessions until the run ends (dropping the set aborts them).
            std::future::pending::<()>().await;
            drop(tasks);
        })
    };

    let window_open = start + Duration::from_secs(args.warmup);
    let window_close = start + Duration::from_secs(args.seconds);
    let mut samples = Vec::new();
    let mut next_print = start + Duration::from_secs(10);
    let mut opened: Option<Sample> = None;
    let mut served_open = Histograms::default();
    let mut ticker = tokio::time::interval(Duration::from_secs(1));
    loop {
        ticker.tick().await;
        let now = Instant::now();
        if opened.is_none() && now >= window_open {
            sim.rec.open(now);
            opened = Some(sample(&groups, &sim.counters));
            served_open = served(&stack).await;
            stack.redis.cli(&["LATENCY", "RESET"])?;
        }
        if now >= window_close {
            sim.rec.close(now);
            break;
        }
        let s = sample(&groups, &sim.counters);
        if now >= next_print {
            next_print += Duration::from_secs(10);
            let ended = lock(&sim.ended).len();
            println!(
                "capacity: t={:>4.0} s present {:>6} ended matches {:>6} plays {:>8} load {} RSS MiB {}",
                (now - start).as_secs_f64(),
                s.present,
                ended,
                sim.counters
                    .plays
                    .load(std::sync::atomic::Ordering::Relaxed),
                loadavg(),
                s.usage
                    .iter()
                    .map(|u| (u.rss_bytes >> 20).to_string())
                    .collect::<Vec<_>>()
                    .join("/")
            );
        }
        if opened.is_some() {
            samples.push(s);
        }
    }
    let closed = sample(&groups, &sim.counters);
    let served_window = served_open.since(&served(&stack).await);
    let redis_latency = stack.redis.cli(&["LATENCY", "LATEST"])?;
    let opened = opened.context("the window never opened")?;
    spawner.abort();
    let _ = spawner.await;

    let window = (closed.at - opened.at).as_secs_f64();
    let player_hours: f64 = samples
        .windows(2)
        .map(|w| w[0].present as f64 * (w[1].at - w[0].at).as_secs_f64())
        .sum::<f64>()
        / 3600.0;
    let mean_present = player_hours * 3600.0 / window.max(1e-9);
    let rows: Vec<GroupRow> = groups
        .iter()
        .enumerate()
        .map(|(i, (name, _))| GroupRow {
            name: name.clone(),
            start: opened.usage[i],
            end: closed.usage[i],
            rss_levels: report::rss_levels(
                &samples
                    .iter()
                    .map(|s| s.usage[i].rss_bytes)
                    .collect::<Vec<_>>(),
            ),
            peak_rss: samples
                .iter()
                .map(|s| s.usage[i].rss_bytes)
                .max()
                .unwrap_or(0),
            peak_sockets: samples
                .iter()
                .map(|s| s.usage[i].sockets)
                .max()
                .unwrap_or(0),
            throttled: pods
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, p)| p.throttled_periods()),
        })
        .collect();

    // Every match whose end a player saw must be in PostgreSQL once, with one row per
    // human seat; recording is asynchronous (game-session's outbox), so wait for it.
    let ended: BTreeMap<String, (u32, Instant)> = lock(&sim.ended).clone().into_iter().collect();
    let ended_in_window = ended
        .values()
        .filter(|(_, at)| *at >= opened.at && *at < closed.at)
        .count();
    let ids: Vec<String> = ended.keys().cloned().collect();
    let mut recorded: HashMap<String, i64> = HashMap::new();
    let waited = Instant::now();
    while waited.elapsed() < Duration::from_secs(60) {
        let rows: Vec<(String, i64)> = sqlx::query_as(
            "SELECT m.match_id, (SELECT count(*) FROM match_players p WHERE p.match_id = m.match_id) \
             FROM matches m WHERE m.match_id = ANY($1)",
        )
        .bind(&ids)
        .fetch_all(&db)
        .await?;
        recorded = rows.into_iter().collect();
        if recorded.len() == ids.len() {
            break;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    let missing = ids.iter().filter(|id| !recorded.contains_key(*id)).count();
    let wrong_seats = ended
        .iter()
        .filter(|(id, (humans, _))| recorded.get(*id).is_some_and(|n| *n != i64::from(*humans)))
        .count();
    db.close().await;

    let series = sim.rec.snapshot();
    println!("\n{}", report::series_table(&series, window));
    println!("{}", report::groups_table(&rows, window, player_hours));
    println!("{}", served_window.table(window));
    println!(
        "redis: events of its loop of 10 ms or more in the window (LATENCY LATEST: event, last at, last ms, max ms)\n{}",
        if redis_latency.trim().is_empty() {
            "none".to_owned()
        } else {
            redis_latency
                .split_whitespace()
                .collect::<Vec<_>>()
                .chunks(4)
                .map(|event| event.join(" "))
                .collect::<Vec<_>>()
                .join("\n")
        }
    );
    let c = &sim.counters;
    let load = std::sync::atomic::Ordering::Relaxed;
    println!(
        "sessions {} · peak present {} · plays {} · drops resumed {} · turns let time out {} · watches with nothing to watch {}",
        c.sessions.load(load),
        c.peak.load(load),
        c.plays.load(load),
        c.resumes.load(load),
        c.timeouts.load(load),
        c.nothing_to_watch.load(load),
    );
    // Refusals retried after their hint (RESOURCE_EXHAUSTED of password hashing) are the
    // limits working, listed but not failures.
    let retried: u64 = series
        .values()
        .filter_map(|s| s.errors.get(player::RETRIED))
        .sum();
    let failures: u64 = series.values().map(latency::Series::failures).sum::<u64>() - retried;
    let opponent = series
        .get("play → opponent's card_played")
        .and_then(|s| quantile(&s.micros, 0.99));
    let worst = report::worst_unary_p99(&series);
    println!(
        "\ncapacity: {mean_present:.0} players present on average over {window:.0} s measured; {:.2} matches/s ({ended_in_window} ended); play → opponent's event p99 {} ms; worst unary p99 {}; {failures} failed calls ({retried} refusals retried); {}/{} finished matches recorded once ({missing} missing, {wrong_seats} with wrong seats); load average {}",
        ended_in_window as f64 / window.max(1e-9),
        latency::ms(opponent),
        worst.map_or("-".into(), |(name, p99)| format!(
            "{} ms ({name})",
            latency::ms(Some(p99))
        )),
        ids.len() - missing,
        ids.len(),
        loadavg(),
    );
    drop(pods);
    drop(stack);
    if failures > 0 || missing > 0 || wrong_seats > 0 {
        bail!(
            "a call failed or a finished match was not recorded once (logs in {})",
            dir.display()
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}
