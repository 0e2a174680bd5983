//! Guest logins per second through gRPC with PostgreSQL, and the cost of
//! verifying an access token.
//!
//! ```text
//! DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres \
//!     cargo run --release -p accounts --example login_bench -- [clients] [seconds]
//! ```
//!
//! It creates a scratch database next to `DATABASE_URL` (dropped at the end),
//! starts the service on 127.0.0.1:0 against it, and drives `clients`
//! concurrent tonic clients (default 64, over 4 HTTP/2 connections) for
//! `seconds` (default 5) in two phases: first sign-ins of new devices (each
//! creates a guest account) and returning devices (the same 1,000 devices).
//! Client, server and PostgreSQL share this machine's CPUs.

use std::str::FromStr;
use std::time::{Duration, Instant};

use accounts::{AccountsApi, PgStore, Settings};
use anyhow::Context as _;
use basra_platform::auth::{Caller, Role, SigningKey};
use basra_proto::basra::accounts::v1::GuestLoginRequest;
use basra_proto::basra::accounts::v1::accounts_service_client::AccountsServiceClient;
use sqlx::ConnectOptions as _;
use sqlx::postgres::PgConnectOptions;
use tokio_util::sync::CancellationToken;
use tonic::transport::Channel;

const CONNECTIONS: usize = 4;
const RETURNING_DEVICES: usize = 1_000;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let clients: usize = args.next().map(|a| a.parse()).transpose()?.unwrap_or(64);
    let seconds: u64 = args.next().map(|a| a.parse()).transpose()?.unwrap_or(5);
    let url = std::env::var("DATABASE_URL")
        .context("set DATABASE_URL (e.g. postgres://postgres@127.0.0.1:5432/postgres)")?;

    // A scratch database, so the benchmark leaves nothing behind.
    let admin = PgConnectOptions::from_str(&url)?;
    let db = format!("basra_login_bench_{}", std::process::id());
    let mut conn = admin.connect().await.context("connect to PostgreSQL")?;
    sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {db}")))
        .execute(&mut conn)
        .await?;
    let result = bench(admin.clone().database(&db), clients, seconds).await;
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "DROP DATABASE IF EXISTS {db} WITH (FORCE)"
    )))
    .execute(&mut conn)
    .await?;
    result
}

async fn bench(options: PgConnectOptions, clients: usize, seconds: u64) -> anyhow::Result<()> {
    // Throughput, not the abuse limits: every client here shares one address.
    let settings = Settings::from_env(
        [
            ("BASRA_SIGNUP_LIMITS__PER_ADDRESS_MAX", "1000000000"),
            ("BASRA_SIGNUP_LIMITS__GLOBAL_MAX", "1000000000"),
        ]
        .map(|(k, v)| (k.to_owned(), v.to_owned())),
    )?;
    let pool = sqlx::postgres::PgPoolOptions::new()
        .max_connections(settings.database.max_connections)
        .connect_with(options)
        .await?;
    let store = PgStore::new(pool);
    store.migrate().await?;
    let config = accounts::service_config(&settings, SigningKey::generate())?;
    let service = AccountsApi::new(store, config);
    let verifier = service.verifier();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let shutdown = CancellationToken::new();
    let server = tokio::spawn(accounts::serve(
        listener,
        service.clone(),
        shutdown.clone(),
        Duration::from_secs(1),
    ));

    let mut channels = Vec::new();
    for _ in 0..CONNECTIONS {
        channels.push(
            Channel::from_shared(format!("http://{addr}"))?
                .connect()
                .await?,
        );
    }
    println!(
        "accounts login_bench: {clients} clients over {CONNECTIONS} connections, {seconds}s per phase, {} CPUs",
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );

    // Warm up (connections, pool, caches) and create the returning devices.
    run_phase(
        &channels,
        clients,
        Duration::from_secs(1),
        Devices::New("warm"),
    )
    .await?;
    for i in 0..RETURNING_DEVICES {
        AccountsServiceClient::new(channels[0].clone())
            .guest_login(request(format!("returning-{i}")))
            .await?;
    }

    for (name, devices) in [
        ("new devices (account created)", Devices::New("new")),
        ("returning devices", Devices::Returning),
    ] {
        let report = run_phase(&channels, clients, Duration::from_secs(seconds), devices).await?;
        println!(
            "guest logins, {name}: {:.0}/s  (n={}, p50 {:.2} ms, p99 {:.2} ms, errors {})",
            report.per_second, report.count, report.p50_ms, report.p99_ms, report.errors
        );
    }

    // Token verification: what every authenticated call pays.
    let token = service
        .issuer()
        .issue(
            &Caller {
                user_id: uuid::Uuid::now_v7(),
                role: Role::Player,
                guest: true,
            },
            Duration::from_secs(900),
        )?
        .token;
    let n = 50_000;
    let start = Instant::now();
    for _ in 0..n {
        std::hint::black_box(verifier.verify(std::hint::black_box(&token))?);
    }
    let verify_ns = start.elapsed().as_nanos() as f64 / f64::from(n);
    let start = Instant::now();
    let caller = Caller {
        user_id: uuid::Uuid::now_v7(),
        role: Role::Player,
        guest: true,
    };
    for _ in 0..n {
        std::hint::black_box(service.issuer().issue(&caller, Duration::from_secs(900))?);
    }
    let issue_ns = start.elapsed().as_nanos() as f64 / f64::from(n);
    println!(
        "access token verification: {:.1} µs/op ({verify_ns:.0} ns); issuing: {:.1} µs/op",
        verify_ns / 1000.0,
        issue_ns / 1000.0
    );

    shutdown.cancel();
    server.await??;
    Ok(())
}

#[derive(Clone, Copy)]
enum Devices {
    /// A new device id on every call.
    New(&'static str),
    /// One of the pre-created devices.
    Returning,
}

fn request(device_id: String) -> GuestLoginRequest {
    GuestLoginRequest {
        device_id,
        display_name: String::new(),
    }
}

struct Report {
    count: usize,
    errors: usize,
    per_second: f64,
    p50_ms: f64,
    p99_ms: f64,
}

async fn run_phase(
    channels: &[Channel],
    clients: usize,
    duration: Duration,
    devices: Devices,
) -> anyhow::Result<Report> {
    let start = Instant::now();
    let deadline = start + duration;
    let mut tasks = tokio::task::JoinSet::new();
    for c in 0..clients {
        let mut client = AccountsServiceClient::new(channels[c % channels.len()].clone());
        tasks.spawn(async move {
            let mut latencies = Vec::new();
            let mut errors = 0usize;
            let mut i = 0usize;
            while Instant::now() < deadline {
                let device = match devices {
                    Devices::New(prefix) => format!("{prefix}-{c}-{i}-{}", uuid::Uuid::now_v7()),
                    Devices::Returning => {
                        format!("returning-{}", (c * 7919 + i) % RETURNING_DEVICES)
                    }
                };
                let t = Instant::now();
                match client.guest_login(request(device)).await {
                    Ok(_) => latencies.push(t.elapsed()),
                    Err(_) => errors += 1,
                }
                i += 1;
            }
            (latencies, errors)
        });
    }
    let mut latencies = Vec::new();
    let mut errors = 0;
    for (l, e) in tasks.join_all().await {
        latencies.extend(l);
        errors += e;
    }
    let elapsed = start.elapsed().as_secs_f64();
    latencies.sort();
    let pct = |p: f64| {
        latencies
            .get(((latencies.len() as f64 * p) as usize).min(latencies.len().saturating_sub(1)))
            .map_or(0.0, |d| d.as_secs_f64() * 1000.0)
    };
    Ok(Report {
        count: latencies.len(),
        errors,
        per_second: latencies.len() as f64 / elapsed,
        p50_ms: pct(0.50),
        p99_ms: pct(0.99),
    })
}
