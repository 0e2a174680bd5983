//! The event scenarios (issue 47): a knockout (`k`, `l`) or an arena (`m`) created by an
//! operator, its players signed in, registered and playing every match they are given
//! ([`event_players`](crate::event_players)), and one fault in the middle: the matchmaking
//! replica that drives the event's clock SIGKILLed (found by its lease in Redis,
//! `mm-<pid>-<uuid>`), or a game-session replica SIGKILLed; the arena gets both, one
//! after the other. What is checked ([`event_checks`](crate::event_checks)): one driver
//! at a time, each knockout round advanced once and in order, nobody paired twice in a
//! round (an arena: in two matches at once) or left out, every result recorded once in
//! matchmaking's PostgreSQL and each match once in accounts', every player told "your
//! match is ready" for each of their matches, final standings; and the time to recover.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::Context as _;
use basra_proto::basra::common::v1::RuleSettings;
use basra_proto::basra::matchmaking::v1::event_admin_service_client::EventAdminServiceClient;
use basra_proto::basra::matchmaking::v1::{
    CreateEventRequest, EventDefinition, EventFormat, EventStatus,
};
use basra_proto::convert::timestamp;
use sqlx::PgPool;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::bots::{self, Player};
use crate::event_checks::{self, Observed};
use crate::event_players::{self, EventLog};
use crate::report::Row;
use crate::scenarios::{self, Size};
use crate::stack::{self, Stack};

/// The format of a scenario's event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Single elimination (a power of two players: every round full).
    Knockout,
    /// A time window of `Size::arena_seconds`.
    Arena,
}

/// One fault, and when it lands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// SIGKILL the matchmaking replica holding the event's lease.
    KillDriver,
    /// SIGKILL game-session replica 0 (its players resume on replica 1; matchmaking
    /// reaches replica 1 through the stack's balancer).
    KillGame,
}

/// (k) SIGKILL the driving matchmaking replica in the middle of a knockout.
pub async fn knockout_kill_driver(
    stack: &mut Stack,
    db: &PgPool,
    size: &Size,
) -> anyhow::Result<Row> {
    let title = format!(
        "k. event: SIGKILL the matchmaking replica driving a {}-player knockout",
        size.event_players
    );
    run(
        stack,
        db,
        size,
        &title,
        Format::Knockout,
        &[Fault::KillDriver],
    )
    .await
}

/// (l) SIGKILL a game-session replica in the middle of a knockout.
pub async fn knockout_kill_game(
    stack: &mut Stack,
    db: &PgPool,
    size: &Size,
) -> anyhow::Result<Row> {
    let title = format!(
        "l. event: SIGKILL 1 of 2 game-session replicas in a {}-player knockout",
        size.event_players
    );
    run(
        stack,
        db,
        size,
        &title,
        Format::Knockout,
        &[Fault::KillGame],
    )
    .await
}

/// (m) An arena: SIGKILL its driving matchmaking replica a third of the way through,
/// then a game-session replica at two thirds.
pub async fn arena_kill_driver_then_game(
    stack: &mut Stack,
    db: &PgPool,
    size: &Size,
) -> anyhow::Result<Row> {
    let title = format!(
        "m. event: a {}-player arena of {} s, SIGKILL its driving matchmaking, then 1 of 2 game-session replicas",
        size.event_players, size.arena_seconds
    );
    run(
        stack,
        db,
        size,
        &title,
        Format::Arena,
        &[Fault::KillDriver, Fault::KillGame],
    )
    .await
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_millis() as i64
}

/// Creates the event as the stack's operator; answers its id.
async fn create_event(stack: &Stack, definition: EventDefinition) -> anyhow::Result<String> {
    let (kid, pem) = stack.operator_key()?;
    let token = basra::admin::operator_token(
        &pem,
        &kid,
        stack::ISSUER,
        stack::AUDIENCE,
        "chaos",
        Duration::from_secs(3600),
    )?;
    let token: tonic::metadata::MetadataValue<_> = format!("Bearer {token}").parse()?;
    let mut admin = EventAdminServiceClient::new(bots::channel(&stack.matchmakers[0].url())?);
    let event = admin
        .create_event(bots::authed(
            CreateEventRequest {
                definition: Some(definition),
                request_id: String::new(),
            },
            &token,
        ))
        .await
        .context("EventAdminService.CreateEvent")?
        .into_inner()
        .event
        .context("CreateEvent without the event")?;
    Ok(event.event_id)
}

/// The event's lease key in Redis (matchmaking's `[redis] prefix` is `chaos:mm`).
fn lease_key(event: &str) -> String {
    format!("chaos:mm:{{ev:{event}}}:lease")
}

/// The lease's holder (`None`: none), each change once, with its wall time (ms).
type LeaseLog = Arc<Mutex<Vec<(i64, Option<String>)>>>;

/// Watches the event's lease every 50 ms until `stop`: each change of its value (`None`:
/// no holder), with the wall time in ms.
fn watch_lease(
    redis_port: u16,
    event: &str,
    seen: LeaseLog,
    stop: CancellationToken,
) -> tokio::task::JoinHandle<anyhow::Result<()>> {
    let key = lease_key(event);
    tokio::spawn(async move {
        let mut conn = redis_conn(redis_port).await?;
        // A look that fails (a loaded machine) is taken again; only a store out of reach
        // for longer than the patience fails the scenario.
        let mut failing_since: Option<Instant> = None;
        while !stop.is_cancelled() {
            let holder: Option<String> =
                match redis::cmd("GET").arg(&key).query_async(&mut conn).await {
                    Ok(holder) => {
                        failing_since = None;
                        holder
                    }
                    Err(err) => {
                        let since = *failing_since.get_or_insert_with(Instant::now);
                        anyhow::ensure!(
                            since.elapsed() < REDIS_PATIENCE,
                            "the lease could not be read for {REDIS_PATIENCE:?}: {err}"
                        );
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
            {
                let mut seen = seen.lock().unwrap_or_else(|p| p.into_inner());
                if seen.last().is_none_or(|(_, last)| *last != holder) {
                    seen.push((now_ms(), holder));
                }
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Ok(())
    })
}

/// Collects the event's match-ready notices in accounts' inbox every second until
/// `stop`: (player, key) pairs. A notice lapses at its match's join deadline and goes
/// with the player's next notice, so a look at the end would miss the early ones.
fn watch_notices(
    db: PgPool,
    event: &str,
    told: Arc<Mutex<HashSet<(String, String)>>>,
    stop: CancellationToken,
) -> tokio::task::JoinHandle<anyhow::Result<()>> {
    let pattern = format!("event:{event}:%:ready");
    tokio::spawn(async move {
        loop {
            let kept = event_checks::told(&db, &pattern).await?;
            told.lock().unwrap_or_else(|p| p.into_inner()).extend(kept);
            if stop.is_cancelled() {
                return Ok(());
            }
            tokio::select! {
                _ = stop.cancelled() => {}
                _ = tokio::time::sleep(Duration::from_secs(1)) => {}
            }
        }
    })
}

/// The lease holder now, if any.
async fn lease_holder(redis_port: u16, event: &str) -> anyhow::Result<Option<String>> {
    let mut conn = redis_conn(redis_port).await?;
    redis::cmd("GET")
        .arg(lease_key(event))
        .query_async(&mut conn)
        .await
        .context("reading the event's lease holder")
}

/// How long the scenario's own looks at Redis may wait for an answer: redis-rs answers
/// "timed out" after 500 ms by default, which a loaded CI machine exceeds now and then
/// (scenario m failed so with the services unharmed).
const REDIS_PATIENCE: Duration = Duration::from_secs(10);

/// A connection to the stack's Redis for the scenario's own looks, with
/// [`REDIS_PATIENCE`] to connect and to answer.
async fn redis_conn(redis_port: u16) -> anyhow::Result<redis::aio::MultiplexedConnection> {
    let client = redis::Client::open(format!("redis://127.0.0.1:{redis_port}"))?;
    let config = redis::AsyncConnectionConfig::new()
        .set_connection_timeout(Some(REDIS_PATIENCE))
        .set_response_timeout(Some(REDIS_PATIENCE));
    client
        .get_multiplexed_async_connection_with_config(&config)
        .await
        .context("connecting to the stack's Redis")
}

/// The process id in a holder's name (`mm-<pid>-<uuid>`).
pub fn holder_pid(holder: &str) -> Option<u32> {
    holder.strip_prefix("mm-")?.split('-').next()?.parse().ok()
}

/// Waits until the fault's moment: a knockout in its middle round, an arena `at` of
/// the way through its window. Records every round seen on the way.
async fn until_moment(
    probe: &Player,
    matchmakers: &[String],
    event: &str,
    (format, at): (Format, f64),
    (arena_start_ms, arena_ms): (i64, i64),
    deadline: Duration,
    rounds: &mut Vec<u32>,
) -> anyhow::Result<()> {
    let started = Instant::now();
    let mut replica = 0;
    loop {
        if started.elapsed() > deadline {
            anyhow::bail!("the event never reached the fault's moment");
        }
        match event_players::event_status(&matchmakers[replica], probe, event).await {
            Ok(seen) => {
                if rounds.last() != Some(&seen.round) {
                    rounds.push(seen.round);
                }
                if matches!(seen.status, EventStatus::Finished | EventStatus::Cancelled) {
                    anyhow::bail!(
                        "the event ended ({:?}) before the fault's moment",
                        seen.status
                    );
                }
                // A knockout's middle round: 2 of 4, 4 of 8.
                let due = match format {
                    Format::Knockout => {
                        seen.status == EventStatus::Running
                            && seen.rounds_total > 0
                            && seen.round >= seen.rounds_total.div_ceil(2)
                    }
                    Format::Arena => now_ms() >= arena_start_ms + (arena_ms as f64 * at) as i64,
                };
                if due {
                    return Ok(());
                }
            }
            Err(_) => replica = (replica + 1) % matchmakers.len(),
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn run(
    stack: &mut Stack,
    db: &PgPool,
    size: &Size,
    title: &str,
    format: Format,
    faults: &[Fault],
) -> anyhow::Result<Row> {
    let n = size.event_players;
    anyhow::ensure!(
        format != Format::Knockout || n.is_power_of_two() && n >= 8,
        "a knockout scenario takes a power of two players, at least 8 (got {n})"
    );
    stack.serve_events().await?;
    let mut row = Row::new(title, 0);
    let tag = match format {
        Format::Knockout => "ev-k",
        Format::Arena => "ev-a",
    };
    let players = bots::guests(&stack.accounts.url(), tag, n).await?;
    let matchmakers = stack.matchmaking_urls();
    // Registration takes a moment a player on a loaded machine: the start leaves it.
    let lead_ms = 4_000 + 30 * n as i64;
    let start_ms = now_ms() + lead_ms;
    let arena_ms = i64::from(size.arena_seconds) * 1000;
    let definition = EventDefinition {
        name: format!("chaos {tag}"),
        format: match format {
            Format::Knockout => EventFormat::Knockout,
            Format::Arena => EventFormat::Arena,
        } as i32,
        start_at: Some(timestamp(start_ms)),
        registration_opens_seconds_before: 0,
        cap: n as u32,
        join_deadline_seconds: 60,
        settings: Some(RuleSettings {
            target_score: Some(size.event_target_score),
            ..RuleSettings::default()
        }),
        arena_seconds: if format == Format::Arena {
            size.arena_seconds
        } else {
            0
        },
        ..EventDefinition::default()
    };
    let event = create_event(stack, definition).await?;
    event_players::register_all(&players, &event, &matchmakers).await?;
    let registered_ms = now_ms();
    anyhow::ensure!(
        registered_ms < start_ms,
        "registering {n} players took past the start ({} ms late)",
        registered_ms - start_ms
    );
    row.notes.push(format!(
        "event {event}; {n} players registered {} ms before the start",
        start_ms - registered_ms
    ));

    let leases = Arc::new(Mutex::new(Vec::new()));
    let stop = CancellationToken::new();
    let lease_watch = watch_lease(stack.redis.port, &event, leases.clone(), stop.clone());
    let told = Arc::new(Mutex::new(HashSet::new()));
    let notice_watch = watch_notices(db.clone(), &event, told.clone(), stop.clone());
    let script = bots::Script {
        shared_connections: true,
        deadline: Duration::from_secs(600),
        ..scenarios::script(stack, 0)
    };
    // A stuck event fails the scenario instead of holding CI: every player gives up by
    // then.
    let deadline = Duration::from_secs(
        120 + u64::from(if format == Format::Arena {
            size.arena_seconds
        } else {
            0
        }) + 2 * n as u64,
    );
    let mut set: JoinSet<EventLog> = JoinSet::new();
    for (i, player) in players.iter().enumerate() {
        set.spawn(event_players::play_event(
            player.clone(),
            event.clone(),
            matchmakers.clone(),
            stack.game_urls(),
            i,
            script.clone(),
            deadline,
        ));
    }

    let mut rounds = Vec::new();
    let mut kills: Vec<(Fault, i64, Option<u32>)> = Vec::new();
    for (k, fault) in faults.iter().enumerate() {
        let at = (k + 1) as f64 / (faults.len() + 1) as f64;
        until_moment(
            &players[0],
            &matchmakers,
            &event,
            (format, at),
            (start_ms, arena_ms),
            deadline,
            &mut rounds,
        )
        .await?;
        match fault {
            Fault::KillDriver => {
                let holder = lease_holder(stack.redis.port, &event)
                    .await?
                    .context("the running event has no lease holder")?;
                let pid = holder_pid(&holder)
                    .with_context(|| format!("a lease holder {holder:?} not named mm-<pid>-…"))?;
                let replica = stack
                    .matchmakers
                    .iter()
                    .position(|m| m.pid() == Some(pid))
                    .with_context(|| format!("no matchmaking replica runs as pid {pid}"))?;
                stack.matchmakers[replica].kill();
                kills.push((*fault, now_ms(), Some(pid)));
                row.notes.push(format!(
                    "SIGKILLed matchmaking-{replica} (pid {pid}), the event's lease holder, at round {:?}",
                    rounds.last()
                ));
            }
            Fault::KillGame => {
                stack.games[0].kill();
                kills.push((*fault, now_ms(), None));
                row.notes.push(format!(
                    "SIGKILLed game-0 at round {:?} (its players resume on game-1)",
                    rounds.last()
                ));
            }
        }
    }
    // The rounds seen until the end, while the players play on.
    let mut logs = Vec::new();
    let mut replica = 0;
    loop {
        if let Ok(seen) =
            event_players::event_status(&matchmakers[replica], &players[0], &event).await
        {
            if rounds.last() != Some(&seen.round) {
                rounds.push(seen.round);
            }
        } else {
            replica = (replica + 1) % matchmakers.len();
        }
        if set.is_empty() {
            break;
        }
        while let Some(done) = set.try_join_next() {
            logs.push(done.context("an event player's task panicked")?);
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let ended = now_ms();
    stop.cancel();
    lease_watch.await.context("the lease watch")??;
    notice_watch.await.context("the notice watch")??;
    let leases = leases.lock().unwrap_or_else(|p| p.into_inner()).clone();
    let told = told.lock().unwrap_or_else(|p| p.into_inner()).clone();

    let observed = Observed {
        event: event.clone(),
        format,
        players: players.iter().map(|p| p.user_id.clone()).collect(),
        logs,
        rounds,
        leases,
        told,
        kills,
        survivors: stack.matchmakers.iter().filter_map(|m| m.pid()).collect(),
        start_ms,
    };
    event_checks::check(&mut row, db, &observed, &players[0], &matchmakers).await?;
    row.notes.push(format!(
        "the event ran {:.1} s from its start",
        (ended - start_ms) as f64 / 1e3
    ));
    stack.heal().await?;
    Ok(row)
}
