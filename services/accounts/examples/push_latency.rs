//! Push delivery latency: from a notice to a local FCM stand-in's receipt of its push,
//! through the whole path (presence, the player's devices, the outbox on PostgreSQL, the
//! worker claiming by lease, basra-push's send with its OAuth access token), at a steady
//! rate of notices.
//!
//! ```text
//! DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres \
//!     cargo run --release -p accounts --example push_latency -- [per_second] [seconds] [replicas]
//! ```
//!
//! It creates a scratch database next to `DATABASE_URL` (dropped at the end), starts
//! `replicas` accounts services (default 1; each its own pool and outbox worker, as pods
//! would be) with push on and FCM pointed at the stand-in (basra-testkit's, HTTP/1.1 on
//! 127.0.0.1, answering at once), registers one Android device for each of 4,000 guests,
//! then hands `per_second` notices a second (default 1,000; one every 1/rate s, each to
//! the next player, round robin over the replicas) for `seconds` (default 20) to
//! `enqueue_pushes`, the function every stored notice goes through. It reports the
//! latency percentiles from each notice's time to the stand-in's receipt of its push, the
//! rate reached, and any notice whose push did not arrive (none expected).

use std::collections::{BTreeMap, HashMap};
use std::str::FromStr;
use std::time::{Duration, Instant};

use accounts::PgStore;
use accounts::push::PushNotice;
use anyhow::Context as _;
use basra_push::Notice;
use basra_testkit::accounts::TestApp;
use basra_testkit::push::FcmStandIn;
use sqlx::ConnectOptions as _;
use sqlx::postgres::PgConnectOptions;
use uuid::Uuid;

const PLAYERS: usize = 4_000;

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let rate: u64 = args.next().map(|a| a.parse()).transpose()?.unwrap_or(1_000);
    let seconds: u64 = args.next().map(|a| a.parse()).transpose()?.unwrap_or(20);
    let replicas: usize = args.next().map(|a| a.parse()).transpose()?.unwrap_or(1);
    anyhow::ensure!(rate >= 1 && replicas >= 1, "a rate and a replica at least");
    let url = std::env::var("DATABASE_URL")
        .context("set DATABASE_URL (e.g. postgres://postgres@127.0.0.1:5432/postgres)")?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let admin = PgConnectOptions::from_str(&url)?;
        let db = format!("basra_push_bench_{}", std::process::id());
        let mut conn = admin.connect().await.context("connect to PostgreSQL")?;
        sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {db}")))
            .execute(&mut conn)
            .await?;
        let result = bench(&admin, &db, rate, seconds, replicas).await;
        sqlx::query(sqlx::AssertSqlSafe(format!(
            "DROP DATABASE IF EXISTS {db} WITH (FORCE)"
        )))
        .execute(&mut conn)
        .await?;
        result
    })
}

async fn bench(
    admin: &PgConnectOptions,
    db: &str,
    rate: u64,
    seconds: u64,
    replicas: usize,
) -> anyhow::Result<()> {
    let options = admin.clone().database(db);
    let fcm = FcmStandIn::start().await;
    let mut env: Vec<(String, String)> = [
        ("BASRA_PUSH__ENABLED", "true"),
        ("BASRA_PUSH__QUIET_START", "00:00"),
        ("BASRA_PUSH__QUIET_END", "00:00"),
        ("BASRA_PUSH__MAX_PER_PLAYER", "1000"),
        // The players sign up from one address, at once.
        ("BASRA_SIGNUP_LIMITS__PER_ADDRESS_MAX", "100000"),
        ("BASRA_SIGNUP_LIMITS__GLOBAL_MAX", "100000"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect();
    env.extend(fcm.env());
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let mut apps = Vec::new();
    for _ in 0..replicas {
        let store = PgStore::connect_with(options.clone(), 16).await?;
        store.migrate().await?;
        apps.push(TestApp::builder(store).env(&env).spawn().await);
    }
    // The players, each with one device, registered as an app registers them.
    let mut players = Vec::with_capacity(PLAYERS);
    let mut client = apps[0].client().await;
    for n in 0..PLAYERS {
        let tokens = client
            .guest_login(basra_proto::basra::accounts::v1::GuestLoginRequest {
                device_id: format!("bench-device-{n}"),
                display_name: String::new(),
            })
            .await?
            .into_inner()
            .tokens
            .context("tokens")?;
        client
            .register_push_token(basra_testkit::authed(
                basra_proto::basra::accounts::v1::RegisterPushTokenRequest {
                    platform: basra_proto::basra::accounts::v1::PushPlatform::Fcm as i32,
                    token: format!("fcm-bench-token-{n}"),
                    app_id: "online.basra.app".into(),
                    locale: if n % 2 == 0 { "ar-EG" } else { "en-US" }.into(),
                    app_version: "1.0.0".into(),
                    utc_offset_minutes: 120,
                },
                &tokens.access_token,
            ))
            .await?;
        players.push(Uuid::parse_str(&tokens.user_id)?);
    }
    let total = rate * seconds;
    println!(
        "{total} notices at {rate}/s for {seconds} s to {PLAYERS} players, {replicas} replica(s), outbox on PostgreSQL"
    );
    let sent_at: std::sync::Arc<std::sync::Mutex<HashMap<String, chrono::DateTime<chrono::Utc>>>> =
        Default::default();
    let started = Instant::now();
    let mut tick = tokio::time::interval(Duration::from_nanos(1_000_000_000 / rate));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..total as usize {
        tick.tick().await;
        let app = apps[i % replicas].service.clone();
        let player = players[i % PLAYERS];
        let id = format!("bench-{i}");
        let notice = PushNotice {
            notice: Notice::FriendRequest {
                from: format!("Player {i}"),
            },
            data: BTreeMap::from([("notice".to_owned(), id.clone())]),
            collapse_id: id.clone(),
            at: chrono::Utc::now(),
            expires_at: None,
        };
        sent_at.lock().unwrap().insert(id, notice.at);
        tasks.spawn(async move { app.enqueue_pushes(player, &notice).await });
    }
    let enqueue_secs = started.elapsed().as_secs_f64();
    let mut failed = 0;
    while let Some(done) = tasks.join_next().await {
        if !matches!(done, Ok(Ok(1))) {
            failed += 1;
        }
    }
    // Every push arrives, or 30 s pass.
    let deadline = Instant::now() + Duration::from_secs(30);
    while fcm.accepted().len() < total as usize - failed && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let sent_at = sent_at.lock().unwrap().clone();
    let mut latencies: Vec<f64> = fcm
        .accepted()
        .iter()
        .filter_map(|r| {
            let id = r.json()["message"]["android"]["collapse_key"]
                .as_str()?
                .to_owned();
            let at = sent_at.get(&id)?;
            let received = chrono::DateTime::<chrono::Utc>::from(r.received);
            Some((received - *at).num_microseconds()? as f64 / 1e6)
        })
        .collect();
    latencies.sort_by(f64::total_cmp);
    let pct = |p: f64| latencies[((latencies.len() as f64 * p) as usize).min(latencies.len() - 1)];
    println!(
        "notices handed in {enqueue_secs:.1} s ({:.0}/s); enqueue failures {failed}; pushes received {} of {total}",
        total as f64 / enqueue_secs,
        latencies.len()
    );
    anyhow::ensure!(!latencies.is_empty(), "no push arrived");
    println!(
        "latency notice → stand-in: p50 {:.3} s, p90 {:.3} s, p99 {:.3} s, max {:.3} s",
        pct(0.50),
        pct(0.90),
        pct(0.99),
        latencies[latencies.len() - 1]
    );
    drop(apps);
    Ok(())
}
