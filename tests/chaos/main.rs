//! The fault suite (`make chaos`, `make chaos-short`): the real service binaries on a
//! private Redis and PostgreSQL, real gRPC players, and one fault per scenario — a
//! game-session replica SIGKILLed, PostgreSQL stopped, Redis SIGKILLed and restarted,
//! latency, resets and blackholes on the store links, a matchmaking replica SIGKILLed,
//! saturation, the resume storm of a replica's thousands of streams, and a Redis Cluster
//! primary SIGKILLed, Redis restored from a backup; events (a knockout and an arena,
//! [`events`]) with the matchmaking replica driving them or a game-session replica
//! SIGKILLed in their middle; and, apart (`make chaos-upgrade`),
//! the rolling upgrade from the
//! previous release (scenario u, [`upgrade`]). Prints a table (scenario, matches, events checked, lost,
//! duplicated, recorded twice or not at all, DISCONNECTED announced for connected
//! players, automatic plays of connected players, resume p50/max, time to recover) and
//! exits non-zero when a promise broke.
//!
//! ```text
//! cargo build -p accounts -p game-session -p matchmaking -p basra-e2e --example chaos
//! target/debug/examples/chaos --bin-dir target/debug [--short] [--matches N]
//!     [--saturation N] [--pg-down S] [--blackhole S] [--target-score N] [--storm N]
//!     [--event-players N] [--arena-seconds S] [--only abcdefghklmr]
//! target/debug/examples/chaos --bin-dir target/debug --soak MINUTES
//! target/debug/examples/chaos --bin-dir target/debug --only abcdefghklmru --old-bin-dir DIR   # make chaos(-short)
//! target/debug/examples/chaos --bin-dir target/debug --only u --old-bin-dir DIR   # make chaos-upgrade
//! ```
//!
//! Everything it starts lives under a fresh directory in the system temp dir (kept when a
//! scenario fails, for its logs) and is stopped at the end.

#![allow(missing_docs, unreachable_pub)]

mod bots;
mod event_checks;
mod event_players;
mod events;
mod proxy;
mod report;
mod scenarios;
mod soak;
mod stack;
mod upgrade;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};

use scenarios::Size;
use stack::{Stack, Tuning};

struct Args {
    bin_dir: PathBuf,
    size: Size,
    only: String,
    soak_minutes: Option<u64>,
    old_bin_dir: Option<PathBuf>,
}

fn parse_args() -> anyhow::Result<Args> {
    let short = std::env::args().any(|arg| arg == "--short");
    let mut args = Args {
        bin_dir: PathBuf::from("target/debug"),
        size: if short {
            Size {
                matches: 4,
                saturation_matches: 16,
                pg_down: Duration::from_secs(6),
                blackhole: Duration::from_secs(3),
                target_score: 101,
                storm_streams: 200,
                event_players: 16,
                arena_seconds: 60,
                event_target_score: 1,
            }
        } else {
            Size {
                matches: 100,
                saturation_matches: 100,
                pg_down: Duration::from_secs(30),
                blackhole: Duration::from_secs(10),
                target_score: 101,
                storm_streams: 2000,
                event_players: 256,
                arena_seconds: 120,
                event_target_score: 11,
            }
        },
        only: "abcdefghklmr".into(),
        soak_minutes: None,
        old_bin_dir: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        if flag == "--short" {
            continue;
        }
        let value = it.next().with_context(|| format!("{flag} needs a value"))?;
        let number = || -> anyhow::Result<u64> {
            value
                .parse()
                .with_context(|| format!("{flag} {value}: not a number"))
        };
        match flag.as_str() {
            "--bin-dir" => args.bin_dir = PathBuf::from(&value),
            "--matches" => args.size.matches = number()? as usize,
            "--saturation" => args.size.saturation_matches = number()? as usize,
            "--pg-down" => args.size.pg_down = Duration::from_secs(number()?),
            "--blackhole" => args.size.blackhole = Duration::from_secs(number()?),
            "--target-score" => args.size.target_score = number()? as u32,
            "--storm" => args.size.storm_streams = number()? as usize,
            "--event-players" => args.size.event_players = number()? as usize,
            "--arena-seconds" => args.size.arena_seconds = number()? as u32,
            "--only" => args.only = value,
            "--soak" => args.soak_minutes = Some(number()?),
            "--old-bin-dir" => args.old_bin_dir = Some(PathBuf::from(&value)),
            other => bail!(
                "unknown flag {other}; flags: --bin-dir DIR --short --matches N --saturation N \
                 --pg-down S --blackhole S --target-score N --storm N --event-players N \
                 --arena-seconds S --only abcdefghklmru --soak MINUTES --old-bin-dir DIR"
            ),
        }
    }
    if args.size.matches == 0 {
        bail!("--matches must be at least 1");
    }
    Ok(args)
}

fn main() -> anyhow::Result<()> {
    let args = parse_args()?;
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?
        .block_on(run(args))
}

async fn run(args: Args) -> anyhow::Result<()> {
    let started = Instant::now();
    let dir = std::env::temp_dir().join(format!("basra-chaos-{}", uuid::Uuid::now_v7().simple()));
    let tuning = Tuning {
        turn_seconds: 5,
        grace_seconds: 60,
    };
    println!("chaos: starting the stack in {}", dir.display());
    let mut stack = Stack::start(&args.bin_dir, &dir, tuning).await?;
    let db = sqlx::PgPool::connect(&stack.pg.url()).await?;
    let mut rows = Vec::new();
    if let Some(minutes) = args.soak_minutes {
        println!("chaos: soak for {minutes} min");
        rows.push(soak::run(&mut stack, &db, minutes).await?);
    }
    let only = if args.soak_minutes.is_some() {
        ""
    } else {
        args.only.as_str()
    };
    for letter in only.chars() {
        let scenario_started = Instant::now();
        println!("chaos: scenario {letter}");
        let row = match letter {
            'a' => scenarios::kill_game_replica(&mut stack, &db, &args.size).await,
            'b' => scenarios::stop_postgres(&mut stack, &db, &args.size).await,
            'c' => scenarios::restart_redis(&mut stack, &db, &args.size).await,
            'd' => scenarios::network_faults(&mut stack, &db, &args.size).await,
            'e' => scenarios::kill_matchmaker(&mut stack, &db, &args.size).await,
            'f' => scenarios::saturation(&mut stack, &db, &args.size).await,
            'g' => scenarios::resume_storm(&mut stack, args.size.storm_streams).await,
            'h' => scenarios::kill_cluster_primary(&mut stack, &db, &args.size).await,
            'r' => scenarios::restore_redis(&mut stack, &db, &args.size).await,
            'k' => events::knockout_kill_driver(&mut stack, &db, &args.size).await,
            'l' => events::knockout_kill_game(&mut stack, &db, &args.size).await,
            'm' => events::arena_kill_driver_then_game(&mut stack, &db, &args.size).await,
            'u' => match &args.old_bin_dir {
                Some(old) => upgrade::rolling_upgrade(&mut stack, &db, &args.size, old).await,
                None => bail!(
                    "scenario u needs --old-bin-dir (tests/chaos/previous-release.sh builds it)"
                ),
            },
            other => {
                bail!("no scenario {other}; scenarios: abcdefghklmr, and u (with --old-bin-dir)")
            }
        };
        let mut row = row.unwrap_or_else(|err| {
            let mut row = report::Row::new(&format!("{letter}. (did not run)"), 0);
            row.failures.push(format!("{err:#}"));
            row
        });
        row.notes.push(format!(
            "scenario wall time {:.1} s",
            scenario_started.elapsed().as_secs_f64()
        ));
        println!(
            "chaos: scenario {letter}: {}",
            if row.passed() { "pass" } else { "FAIL" }
        );
        rows.push(row);
        // The next scenario starts from a whole stack.
        stack.heal().await?;
    }
    db.close().await;
    println!("\n{}", report::render(&rows));
    println!(
        "chaos: {} scenarios in {:.0} s; load average {}",
        rows.len(),
        started.elapsed().as_secs_f64(),
        std::fs::read_to_string("/proc/loadavg")
            .unwrap_or_default()
            .trim()
    );
    let failed = rows.iter().any(|r| !r.passed());
    drop(stack);
    if failed {
        bail!("a scenario broke a promise; logs in {}", dir.display());
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
