//! The soak (`make soak MINUTES=30`): pairs of players play match after match through the
//! real services for the given time — some drop their stream mid-match and resume, some
//! resign — while the services' memory and the outbox are sampled. Reports RSS of each
//! service after warm-up and at the end, matches played, errors that were not injected,
//! the outbox lag, and whether every match was recorded exactly once.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use sqlx::PgPool;
use tokio::task::JoinSet;

use crate::bots::{self, SeatLog};
use crate::report::Row;
use crate::scenarios::{check_records_once, script};
use crate::stack::Stack;

/// Matches in play at once.
const SLOTS: usize = 8;

/// What a soak run found.
#[derive(Debug, Default)]
struct Tally {
    matches: u64,
    resigned: u64,
    dropped: u64,
    events: u64,
    lost: u64,
    duplicated: u64,
    disconnected_while_connected: u64,
    automatic_while_connected: u64,
    resume_latencies: Vec<Duration>,
    errors: BTreeMap<String, u32>,
    failures: Vec<String>,
    rooms: Vec<String>,
}

async fn outbox(game: &crate::stack::Service) -> Option<(f64, f64)> {
    let body = game.metrics_text().await?;
    let value = |name: &str| {
        body.lines()
            .filter(|l| !l.starts_with('#'))
            .find(|l| {
                l.split([' ', '{'])
                    .next()
                    .is_some_and(|n| n.ends_with(name))
            })
            .and_then(|l| l.rsplit(' ').next())
            .and_then(|v| v.parse::<f64>().ok())
    };
    Some((
        value("outbox_pending")?,
        value("outbox_oldest_age_seconds")?,
    ))
}

fn rss_line(stack: &Stack) -> Vec<(String, u64)> {
    std::iter::once(&stack.accounts)
        .chain(&stack.games)
        .chain(&stack.matchmakers)
        .map(|s| (s.name.clone(), s.rss_kib().unwrap_or(0)))
        .collect()
}

/// Runs the soak for `minutes`.
pub async fn run(stack: &mut Stack, db: &PgPool, minutes: u64) -> anyhow::Result<Row> {
    let total = Duration::from_secs(minutes * 60);
    let warmup = (total / 10).min(Duration::from_secs(60));
    let started = Instant::now();
    let until = started + total;
    let urls = stack.game_urls();
    let mut tally = Tally::default();
    let mut rss_start: Option<Vec<(String, u64)>> = None;
    let mut lag_max = 0f64;
    let mut pending_max = 0f64;
    let mut samples = 0u32;
    let mut next_match = 0u64;
    let mut set: JoinSet<(bool, bool, String, SeatLog, SeatLog)> = JoinSet::new();
    let mut sample = tokio::time::interval(Duration::from_secs(5));
    let start_match = |set: &mut JoinSet<_>, stack: &Stack, n: u64| {
        let accounts = stack.accounts.url();
        let urls = urls.clone();
        let mut first = script(stack, 100);
        let mut second = first.clone();
        // Every fifth match someone resigns; every third a player drops and resumes.
        let resign = n.is_multiple_of(5);
        let drop = n.is_multiple_of(3);
        if resign {
            second.resign_after = Some(6 + (n % 10) as u32);
        }
        if drop {
            first.drop_after = Some(4 + (n % 7) as u32);
        }
        let maker = stack.room_maker.token().map_err(anyhow::Error::from);
        let home = (n % 2) as usize;
        set.spawn(async move {
            let run = async {
                let players =
                    bots::guests(&accounts, &format!("soak{}", n % (2 * SLOTS as u64)), 2).await?;
                let room = bots::create_room_with_token(
                    &maker?,
                    &urls[home],
                    &players[0],
                    &players[1],
                    101,
                )
                .await?;
                let a = bots::play(players[0].clone(), room.clone(), urls.clone(), home, first);
                let b = bots::play(players[1].clone(), room.clone(), urls.clone(), home, second);
                let (a, b) = tokio::join!(a, b);
                anyhow::Ok((room, a, b))
            };
            match run.await {
                Ok((room, a, b)) => (resign, drop, room, a, b),
                Err(err) => {
                    let failed = SeatLog {
                        failure: Some(format!("{err:#}")),
                        ..SeatLog::default()
                    };
                    (resign, drop, String::new(), failed.clone(), failed)
                }
            }
        });
    };
    for _ in 0..SLOTS {
        start_match(&mut set, stack, next_match);
        next_match += 1;
    }
    loop {
        tokio::select! {
            _ = sample.tick() => {
                if rss_start.is_none() && started.elapsed() >= warmup {
                    rss_start = Some(rss_line(stack));
                }
                for game in &stack.games {
                    if let Some((pending, lag)) = outbox(game).await
                    {
                        samples += 1;
                        pending_max = pending_max.max(pending);
                        lag_max = lag_max.max(lag);
                    }
                }
            }
            done = set.join_next() => {
                let Some(done) = done else { break };
                let (resign, drop, room, a, b) = done.context("a soak task panicked")?;
                for log in [&a, &b] {
                    tally.events += log.events;
                    tally.lost += log.lost;
                    tally.duplicated += log.duplicated;
                    tally.disconnected_while_connected +=
                        u64::from(log.disconnected_while_connected);
                    tally.automatic_while_connected += u64::from(log.automatic_while_connected);
                    tally.resume_latencies.extend(&log.resume_latencies);
                    for (code, (count, message)) in &log.errors {
                        *tally.errors.entry(format!("{code}: {message}")).or_default() += count;
                    }
                    if !log.finished {
                        tally.failures.push(format!(
                            "room {room}: {}",
                            log.failure.as_deref().unwrap_or("the match did not end")
                        ));
                    }
                }
                if !room.is_empty() {
                    tally.rooms.push(room);
                }
                tally.matches += 1;
                tally.resigned += u64::from(resign);
                tally.dropped += u64::from(drop);
                if Instant::now() < until {
                    start_match(&mut set, stack, next_match);
                    next_match += 1;
                }
            }
        }
    }
    let rss_end = rss_line(stack);
    let mut row = Row::new(&format!("soak {minutes} min"), tally.matches as usize);
    row.events = tally.events;
    row.lost = tally.lost;
    row.duplicated = tally.duplicated;
    row.disconnected_while_connected = tally.disconnected_while_connected;
    row.automatic_while_connected = tally.automatic_while_connected;
    row.resume_latencies = tally.resume_latencies;
    row.failures = tally.failures;
    let recorded = check_records_once(db, &mut row, &tally.rooms, Duration::from_secs(60)).await?;
    let start = rss_start.unwrap_or_else(|| rss_end.clone());
    let rss: Vec<String> = start
        .iter()
        .zip(&rss_end)
        .map(|((name, a), (_, b))| {
            let growth = if *a > 0 {
                (*b as f64 / *a as f64 - 1.0) * 100.0
            } else {
                0.0
            };
            format!(
                "{name} {:.1} → {:.1} MiB ({growth:+.1} %)",
                *a as f64 / 1024.0,
                *b as f64 / 1024.0
            )
        })
        .collect();
    row.notes.push(format!(
        "{} matches ({} with a resignation, {} with a dropped and resumed stream), {recorded} recorded",
        tally.matches, tally.resigned, tally.dropped
    ));
    row.notes.push(format!(
        "RSS after {} s warm-up → end: {}",
        warmup.as_secs(),
        rss.join("; ")
    ));
    row.notes.push(format!(
        "outbox ({samples} samples of the replicas' metrics): at most {pending_max} pending, oldest at most {lag_max:.1} s"
    ));
    if samples == 0 {
        row.failures
            .push("the outbox metrics could not be read".into());
    }
    if tally.errors.is_empty() {
        row.notes.push("errors: none".into());
    } else {
        let listed: Vec<String> = tally
            .errors
            .iter()
            .map(|(e, n)| format!("{e} ×{n}"))
            .collect();
        row.notes
            .push(format!("stream errors: {}", listed.join("; ")));
    }
    Ok(row)
}
