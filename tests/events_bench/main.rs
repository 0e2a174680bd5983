//! Events start on time (issue 47; `make bench-events`, `make bench-events-short`;
//! figures in docs/performance.md, "Events: start on time"): on one replica of each
//! service (separate processes, a private PostgreSQL and Redis as the fault suite starts
//! them, `tests/chaos/stack.rs`, here without its fault proxies), a knockout of N
//! registered players and an arena of M start at their second, and every player's feed
//! (`WatchFriends`, what clients watch) is timed until "your match is ready" arrives;
//! then W players watch the knockout (`WatchEvent`, asking for changes only as the web
//! page does; `--whole`: whole states) while E of its matches end one after another
//! (both players join, one resigns) and each watcher's stream is timed until it shows
//! each result. Prints p50/p99/max of each, and fails when a player is never told
//! or a watcher never sees a result.
//!
//! ```text
//! cargo build --release -p accounts -p game-session -p matchmaking --bins
//! cargo build --release -p basra-e2e --example events_bench
//! target/release/examples/events_bench --bin-dir target/release [--short]
//!     [--knockout N] [--arena M] [--watchers W] [--ends E] [--tick-millis T] [--whole]
//! ```

#![allow(missing_docs, unreachable_pub)]

#[allow(dead_code)]
#[path = "../chaos/bots.rs"]
mod bots;
mod clients;
#[allow(dead_code)]
#[path = "../chaos/proxy.rs"]
mod proxy;
#[allow(dead_code)]
#[path = "../chaos/stack.rs"]
mod stack;

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context as _, bail};
use basra::admin::OperatorToken;
use basra_platform::auth::SigningKey;
use basra_proto::basra::common::v1::RuleSettings;
use basra_proto::basra::matchmaking::v1::event_admin_service_client::EventAdminServiceClient;
use basra_proto::basra::matchmaking::v1::{
    CancelEventRequest, CreateEventRequest, EventDefinition, EventFormat,
};
use basra_proto::convert::timestamp;

use bots::Player;
use clients::{Pool, now_ms};
use stack::{Stack, Tuning};

struct Args {
    bin_dir: PathBuf,
    knockout: usize,
    arena: usize,
    watchers: usize,
    ends: usize,
    tick_millis: Option<u64>,
    /// The watchers ask for whole states (not changes only).
    whole: bool,
}

fn parse_args() -> anyhow::Result<Args> {
    let short = std::env::args().any(|arg| arg == "--short");
    let mut args = Args {
        bin_dir: PathBuf::from("target/release"),
        knockout: if short { 64 } else { 1024 },
        arena: if short { 128 } else { 4096 },
        watchers: if short { 50 } else { 1000 },
        ends: if short { 4 } else { 20 },
        tick_millis: None,
        whole: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        if flag == "--short" {
            continue;
        }
        if flag == "--whole" {
            args.whole = true;
            continue;
        }
        let value = it.next().with_context(|| format!("{flag} needs a value"))?;
        let number = || -> anyhow::Result<usize> {
            value
                .parse()
                .with_context(|| format!("{flag} {value}: not a number"))
        };
        match flag.as_str() {
            "--bin-dir" => args.bin_dir = PathBuf::from(&value),
            "--knockout" => args.knockout = number()?,
            "--arena" => args.arena = number()?,
            "--watchers" => args.watchers = number()?,
            "--ends" => args.ends = number()?,
            "--tick-millis" => args.tick_millis = Some(number()? as u64),
            other => bail!(
                "unknown flag {other}; flags: --bin-dir DIR --short --knockout N --arena M \
                 --watchers W --ends E --tick-millis T --whole"
            ),
        }
    }
    if args.knockout < 2 || args.arena < 2 {
        bail!("--knockout and --arena need at least 2 players");
    }
    args.watchers = args.watchers.min(args.knockout);
    args.ends = args.ends.min(args.knockout / 2);
    Ok(args)
}

fn main() -> anyhow::Result<()> {
    let args = parse_args()?;
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?
        .block_on(run(args))
}

/// "p50 X ms, p99 Y ms, max Z ms" of `samples` (milliseconds).
fn summary(samples: &mut [i64]) -> String {
    if samples.is_empty() {
        return "no samples".into();
    }
    samples.sort_unstable();
    let at = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize];
    format!(
        "p50 {} ms, p99 {} ms, max {} ms ({} samples)",
        at(0.5),
        at(0.99),
        samples[samples.len() - 1],
        samples.len()
    )
}

/// One replica of each service (the stack's second game-session and matchmaking
/// stopped), talking to PostgreSQL and Redis directly rather than through the fault
/// proxies; matchmaking keeps events in PostgreSQL and trusts `operator` for
/// EventAdminService. The operator's token.
async fn one_replica_each(stack: &mut Stack, tick_millis: Option<u64>) -> anyhow::Result<String> {
    for service in stack.games.iter_mut().chain(stack.matchmakers.iter_mut()) {
        service.terminate(Duration::from_secs(5)).await;
    }
    stack.accounts.terminate(Duration::from_secs(5)).await;
    let (redis_proxy, redis) = (
        stack.redis_proxy.addr.to_string(),
        format!("127.0.0.1:{}", stack.redis.port),
    );
    let (pg_proxy, pg) = (
        stack.pg_proxy.addr.to_string(),
        format!("127.0.0.1:{}", stack.pg.port),
    );
    let direct = |config: String| config.replace(&redis_proxy, &redis).replace(&pg_proxy, &pg);
    let key = SigningKey::generate();
    let public = stack.dir().join("operator.pub.pem");
    std::fs::write(&public, key.public_pem())?;
    let mut events = format!(
        "database_url = \"{}\"\n",
        stack.pg.url().replace(&pg_proxy, &pg)
    );
    if let Some(tick) = tick_millis {
        events.push_str(&format!("tick_millis = {tick}\n"));
    }
    stack.accounts.edit_config(direct)?;
    stack.accounts.start().await?;
    stack.games[0].edit_config(direct)?;
    stack.games[0].start().await?;
    let kid = key.kid().to_owned();
    stack.matchmakers[0].edit_config(|config| {
        let mut config = direct(config);
        config = match config.find("[events]\n") {
            Some(at) => {
                let end = at + "[events]\n".len();
                format!("{}{events}{}", &config[..end], &config[end..])
            }
            None => format!("{config}\n[events]\n{events}"),
        };
        format!(
            "{config}\n[[auth.trusted_keys]]\nkid = \"{kid}\"\npublic_key_file = {:?}\nrole = \"operator\"\n",
            public.display().to_string()
        )
    })?;
    stack.matchmakers[0].start().await?;
    basra::admin::operator_token(
        &key.private_pem(),
        key.kid(),
        stack::ISSUER,
        stack::AUDIENCE,
        "events-bench",
        Duration::from_secs(3600),
    )
}

type Admin = EventAdminServiceClient<
    tonic::service::interceptor::InterceptedService<tonic::transport::Channel, OperatorToken>,
>;

fn admin(url: &str, token: &str) -> anyhow::Result<Admin> {
    let bearer = format!("Bearer {token}").parse()?;
    Ok(EventAdminServiceClient::with_interceptor(
        bots::channel(url)?,
        OperatorToken::new(bearer),
    ))
}

/// Signs `n` guests in, 16 at a time.
async fn sign_in(accounts_url: &str, n: usize) -> anyhow::Result<Vec<Player>> {
    let chunks = 16;
    let mut tasks = tokio::task::JoinSet::new();
    for c in 0..chunks {
        let count = n / chunks + usize::from(c < n % chunks);
        let url = accounts_url.to_owned();
        tasks.spawn(async move { (c, bots::guests(&url, &format!("evb{c}"), count).await) });
    }
    let mut done = Vec::new();
    while let Some(answer) = tasks.join_next().await {
        let (c, players) = answer?;
        done.push((c, players?));
    }
    done.sort_by_key(|(c, _)| *c);
    Ok(done.into_iter().flat_map(|(_, p)| p).collect())
}

/// What one event's start measured.
struct Start {
    event: String,
    /// Each player's "your match is ready" (the first), by player.
    told: HashMap<String, clients::Told>,
    starts_at_ms: i64,
}

/// Makes an event of `players` starting once they are registered, and waits until every
/// player's feed has said "your match is ready" (at most 60 s after the start).
async fn start_event(
    mm: &Pool,
    admin_url: &str,
    token: &str,
    players: &[Player],
    feed: &mut tokio::sync::mpsc::UnboundedReceiver<clients::Told>,
    format: EventFormat,
    per_player_ms: f64,
) -> anyhow::Result<Start> {
    // The start is set after registration, and checked: registering costs several times
    // what signing in did (accounts gives the rating and keeps a "starting" notice; on a
    // loaded machine 1,024 registrations took over 40 s after 6.5 ms sign-ins).
    let lead_ms = (5_000.0 + 20.0 * per_player_ms * players.len() as f64).max(15_000.0) as i64;
    let starts_at_ms = (now_ms() + lead_ms) / 1000 * 1000;
    let definition = EventDefinition {
        name: format!("bench {}", players.len()),
        format: format as i32,
        start_at: Some(timestamp(starts_at_ms)),
        registration_opens_seconds_before: 3600,
        cap: players.len() as u32,
        join_deadline_seconds: 600,
        settings: Some(RuleSettings {
            target_score: Some(11),
            ..RuleSettings::default()
        }),
        allow_spectators: true,
        arena_seconds: if format == EventFormat::Arena { 600 } else { 0 },
        ..EventDefinition::default()
    };
    let event = admin(admin_url, token)?
        .create_event(CreateEventRequest {
            definition: Some(definition),
            request_id: String::new(),
        })
        .await
        .context("CreateEvent")?
        .into_inner()
        .event
        .context("CreateEvent answered no event")?
        .event_id;
    clients::register_all(mm, players, &event).await?;
    let spare = starts_at_ms - now_ms();
    println!(
        "events_bench: {} players registered, {spare} ms before the start",
        players.len()
    );
    if spare < 500 {
        bail!("registration ended {spare} ms before the start: the lead is too short here");
    }
    let mut told = HashMap::new();
    let give_up = tokio::time::Instant::now()
        + Duration::from_millis((starts_at_ms - now_ms()).max(0) as u64 + 60_000);
    while told.len() < players.len() {
        match tokio::time::timeout_at(give_up, feed.recv()).await {
            Ok(Some(t)) if t.event == event => {
                told.entry(t.user.clone()).or_insert(t);
            }
            Ok(Some(_)) => {}
            Ok(None) | Err(_) => break,
        }
    }
    Ok(Start {
        event,
        told,
        starts_at_ms,
    })
}

/// Prints a start's figures; how many players were never told (the run goes on, so
/// that the phases after it are measured, and fails at its end).
fn report_start(what: &str, players: &[Player], start: &Start) -> usize {
    let mut after: Vec<i64> = start
        .told
        .values()
        .map(|t| t.at_ms - start.starts_at_ms)
        .collect();
    let rooms: HashSet<&str> = start.told.values().map(|t| t.room.as_str()).collect();
    println!(
        "events_bench: {what} of {}: {} told on their feed, {} rooms; told after the start: {}",
        players.len(),
        start.told.len(),
        rooms.len(),
        summary(&mut after)
    );
    let missing = players.len() - start.told.len();
    if missing > 0 {
        println!(
            "events_bench: {what}: {missing} of {} players were never told within 60 s",
            players.len()
        );
    }
    missing
}

async fn run(args: Args) -> anyhow::Result<()> {
    let dir = std::env::temp_dir().join(format!(
        "basra-events-bench-{}",
        uuid::Uuid::now_v7().simple()
    ));
    println!("events_bench: starting the stack in {}", dir.display());
    let tuning = Tuning {
        turn_seconds: 60,
        grace_seconds: 60,
    };
    let mut stack = Stack::start(&args.bin_dir, &dir, tuning).await?;
    let token = one_replica_each(&mut stack, args.tick_millis).await?;
    let (accounts_url, mm_url, game_url) = (
        stack.accounts.url(),
        stack.matchmakers[0].url(),
        stack.games[0].url(),
    );
    let everyone = args.knockout.max(args.arena);
    let signing_in = std::time::Instant::now();
    let players = sign_in(&accounts_url, everyone).await?;
    let per_player_ms = signing_in.elapsed().as_secs_f64() * 1000.0 / everyone as f64;
    println!("events_bench: {everyone} guests signed in ({per_player_ms:.1} ms each)");
    let accounts = Pool::new(&accounts_url, everyone)?;
    let mm = Pool::new(&mm_url, everyone + args.watchers)?;
    let (mut feed, feeds) = clients::open_feeds(&accounts, &players).await?;
    println!("events_bench: {everyone} feeds open");

    // The knockout's start.
    let knockout = &players[..args.knockout];
    let start = start_event(
        &mm,
        &mm_url,
        &token,
        knockout,
        &mut feed,
        EventFormat::Knockout,
        per_player_ms,
    )
    .await?;
    let mut never_told = report_start("knockout", knockout, &start);

    // Its watchers, and matches ended one after another (300 ms apart, so that the
    // ends fall at every point of the clock's tick).
    let (mut seen, watch_tasks) =
        clients::open_watchers(&mm, &players[..args.watchers], &start.event, !args.whole).await?;
    let by_user: HashMap<&str, &Player> =
        knockout.iter().map(|p| (p.user_id.as_str(), p)).collect();
    let mut rooms: Vec<(String, Vec<&str>)> = Vec::new();
    for t in start.told.values() {
        match rooms.iter_mut().find(|(r, _)| *r == t.room) {
            Some((_, users)) => users.push(&t.user),
            None => rooms.push((t.room.clone(), vec![&t.user])),
        }
    }
    // The last tables first (builds before 6 Dec 2026 listed only the current round's
    // last 200 pairings: so that their runs compare).
    let table = |room: &str| -> u32 {
        room.rsplit('t')
            .next()
            .and_then(|t| t.parse().ok())
            .unwrap_or(0)
    };
    // A room one of whose players was never told is not played.
    rooms.retain(|(_, users)| users.len() == 2);
    rooms.sort_by_key(|(room, _)| std::cmp::Reverse(table(room)));
    let game = bots::channel(&game_url)?;
    let mut ends = tokio::task::JoinSet::new();
    for (i, (room, users)) in rooms.into_iter().take(args.ends).enumerate() {
        let pair: [Player; 2] = [by_user[users[0]].clone(), by_user[users[1]].clone()];
        let game = game.clone();
        ends.spawn(async move {
            tokio::time::sleep(Duration::from_millis(300 * i as u64)).await;
            let at = clients::end_match(game, &room, &pair).await;
            (room, at)
        });
    }
    let mut ended: HashMap<String, i64> = HashMap::new();
    while let Some(done) = ends.join_next().await {
        let (room, at) = done?;
        ended.insert(room, at?);
    }
    let want = ended.len() * args.watchers;
    let mut lags = Vec::with_capacity(want);
    let give_up = tokio::time::Instant::now() + Duration::from_secs(30);
    let mut seen_all: HashSet<(usize, String)> = HashSet::new();
    while seen_all.len() < want {
        match tokio::time::timeout_at(give_up, seen.recv()).await {
            Ok(Some(s)) => {
                if let Some(end) = ended.get(&s.room)
                    && seen_all.insert((s.watcher, s.room.clone()))
                {
                    lags.push(s.at_ms - end);
                }
            }
            Ok(None) | Err(_) => break,
        }
    }
    println!(
        "events_bench: knockout standings: {} watchers ({}) x {} matches ended: result shown after the end: {}",
        args.watchers,
        if args.whole {
            "whole states"
        } else {
            "changes only"
        },
        ended.len(),
        summary(&mut lags)
    );
    drop(watch_tasks);
    let missing = want - seen_all.len();
    admin(&mm_url, &token)?
        .cancel_event(CancelEventRequest {
            event_id: start.event.clone(),
            reason: "bench over".into(),
            series: false,
        })
        .await
        .context("CancelEvent")?;

    // The arena's start.
    let arena = &players[..args.arena];
    let start = start_event(
        &mm,
        &mm_url,
        &token,
        arena,
        &mut feed,
        EventFormat::Arena,
        per_player_ms,
    )
    .await?;
    never_told += report_start("arena", arena, &start);
    drop(feeds);

    println!(
        "events_bench: load average {}",
        std::fs::read_to_string("/proc/loadavg")
            .unwrap_or_default()
            .trim()
    );
    if missing > 0 {
        bail!("{missing} (watcher, result) pairs never shown within 30 s");
    }
    if never_told > 0 {
        bail!("{never_told} players were never told their match was ready within 60 s");
    }
    drop(stack);
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
