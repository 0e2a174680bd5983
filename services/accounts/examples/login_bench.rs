//! Guest logins per second through gRPC with PostgreSQL, where each login's CPU goes, and
//! the cost of verifying an access token.
//!
//! ```text
//! DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres \
//!     cargo run --release -p accounts --example login_bench -- [clients] [seconds] [replicas]
//! ```
//!
//! It creates a scratch database next to `DATABASE_URL` (dropped at the end), starts
//! `replicas` accounts services (default 1) against it, each on 127.0.0.1:0 with its own
//! pool and its own two-thread runtime (as separate pods would be, but in this process),
//! all signing with one key, and drives `clients` concurrent tonic clients (default 64,
//! spread evenly over the replicas, 4 HTTP/2 connections per replica) for `seconds`
//! (default 5) in two phases: first sign-ins of new devices (each creates a guest account)
//! and returning devices (the same 1,000 devices).
//!
//! Client, servers and PostgreSQL share this machine's CPUs. For each phase it reports the
//! CPU time per login of the client threads, of each replica's threads and of the
//! PostgreSQL processes (the scratch database's backends, and the server's background
//! processes such as the WAL writer), read from `/proc`; PostgreSQL's transactions per
//! login; and how often each replica's pool had no idle connection (sampled every 5 ms).
//! With `LOGIN_BENCH_NO_PING=1` the pools skip sqlx's ping before each acquire.

use std::collections::HashMap;
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

const CONNECTIONS_PER_REPLICA: usize = 4;
const RETURNING_DEVICES: usize = 1_000;
/// Worker threads of each replica's runtime: a replica pod of 2 cores.
const REPLICA_THREADS: usize = 2;
/// Linux's clock ticks per second (`getconf CLK_TCK`) for `/proc/*/stat` times.
const TICKS_PER_SECOND: f64 = 100.0;

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let clients: usize = args.next().map(|a| a.parse()).transpose()?.unwrap_or(64);
    let seconds: u64 = args.next().map(|a| a.parse()).transpose()?.unwrap_or(5);
    let replicas: usize = args.next().map(|a| a.parse()).transpose()?.unwrap_or(1);
    anyhow::ensure!(replicas >= 1, "at least one replica");
    let url = std::env::var("DATABASE_URL")
        .context("set DATABASE_URL (e.g. postgres://postgres@127.0.0.1:5432/postgres)")?;
    // The clients' runtime; each replica gets its own below.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .thread_name("client")
        .enable_all()
        .build()?;
    runtime.block_on(async {
        // A scratch database, so the benchmark leaves nothing behind.
        let admin = PgConnectOptions::from_str(&url)?;
        let db = format!("basra_login_bench_{}", std::process::id());
        let mut conn = admin.connect().await.context("connect to PostgreSQL")?;
        sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {db}")))
            .execute(&mut conn)
            .await?;
        let result = bench(&admin, &db, clients, seconds, replicas).await;
        sqlx::query(sqlx::AssertSqlSafe(format!(
            "DROP DATABASE IF EXISTS {db} WITH (FORCE)"
        )))
        .execute(&mut conn)
        .await?;
        result
    })
}

/// Settings for throughput, not the abuse limits: every client here shares one address.
fn settings() -> anyhow::Result<Settings> {
    Ok(Settings::from_env(
        [
            ("BASRA_SIGNUP_LIMITS__PER_ADDRESS_MAX", "1000000000"),
            ("BASRA_SIGNUP_LIMITS__GLOBAL_MAX", "1000000000"),
        ]
        .map(|(k, v)| (k.to_owned(), v.to_owned())),
    )?)
}

/// One accounts service on its own runtime and threads (`replica-N`).
struct Replica {
    addr: std::net::SocketAddr,
    store: PgStore,
    shutdown: CancellationToken,
    thread: std::thread::JoinHandle<anyhow::Result<()>>,
}

fn start_replica(
    index: usize,
    options: PgConnectOptions,
    key_pem: (String, String),
) -> anyhow::Result<Replica> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(REPLICA_THREADS)
        .thread_name(format!("replica-{index}"))
        .enable_all()
        .build()?;
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let shutdown = CancellationToken::new();
    let stop = shutdown.clone();
    let thread = std::thread::Builder::new()
        .name(format!("replica-{index}"))
        .spawn(move || {
            runtime.block_on(async move {
                let settings = settings()?;
                // The service's own pool settings, as production runs them; or, to measure
                // what it costs, without the liveness check sqlx runs on every acquire.
                let store = if std::env::var_os("LOGIN_BENCH_NO_PING").is_some() {
                    let pool = sqlx::postgres::PgPoolOptions::new()
                        .max_connections(settings.database.max_connections)
                        .test_before_acquire(false)
                        .connect_with(options)
                        .await?;
                    PgStore::new(pool)
                } else {
                    PgStore::connect_with(options, settings.database.max_connections).await?
                };
                if index == 0 {
                    store.migrate().await?;
                }
                let key = SigningKey::from_pem(&key_pem.0, &key_pem.1)?;
                let config = accounts::service_config(&settings, key)?;
                let service = AccountsApi::new(store.clone(), config);
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
                ready_tx.send((listener.local_addr()?, store))?;
                accounts::serve(listener, service, stop, Duration::from_secs(1)).await?;
                Ok(())
            })
        })?;
    let Ok((addr, store)) = ready_rx.recv() else {
        // The replica stopped before it was ready: say why.
        let error = thread
            .join()
            .map_err(|_| anyhow::anyhow!("replica {index} panicked"))?
            .err();
        anyhow::bail!("replica {index} did not start: {error:?}");
    };
    Ok(Replica {
        addr,
        store,
        shutdown,
        thread,
    })
}

async fn bench(
    admin: &PgConnectOptions,
    db: &str,
    clients: usize,
    seconds: u64,
    replicas: usize,
) -> anyhow::Result<()> {
    let options = admin.clone().database(db);
    let key = SigningKey::generate();
    let key_pem = (key.kid().to_owned(), key.private_pem());
    let mut servers = Vec::new();
    for index in 0..replicas {
        // The first replica migrates the schema before the others start.
        let replica =
            tokio::task::block_in_place(|| start_replica(index, options.clone(), key_pem.clone()))?;
        servers.push(replica);
    }
    let settings = settings()?;
    let issuer = accounts::service_config(&settings, key)?.issuer;
    let verifier = issuer.verifier();

    // Client `c` talks to replica `c % replicas`, over that replica's connections.
    let mut channels: Vec<Vec<Channel>> = Vec::new();
    for server in &servers {
        let mut of_replica = Vec::new();
        for _ in 0..CONNECTIONS_PER_REPLICA {
            of_replica.push(
                Channel::from_shared(format!("http://{}", server.addr))?
                    .connect()
                    .await?,
            );
        }
        channels.push(of_replica);
    }
    let mut stats_conn = admin.clone().connect().await?;
    println!(
        "accounts login_bench: {clients} clients, {replicas} replica(s) of {REPLICA_THREADS} \
         threads, {CONNECTIONS_PER_REPLICA} connections and a pool of {} each, {seconds}s per \
         phase, {} CPUs",
        settings.database.max_connections,
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );

    // Warm up (connections, pools, caches) and create the returning devices.
    run_phase(
        &channels,
        &servers,
        clients,
        Duration::from_secs(1),
        Devices::New("warm"),
    )
    .await?;
    for i in 0..RETURNING_DEVICES {
        AccountsServiceClient::new(channels[i % replicas][0].clone())
            .guest_login(request(format!("returning-{i}")))
            .await?;
    }

    for (name, devices) in [
        ("new devices (account created)", Devices::New("new")),
        ("returning devices", Devices::Returning),
    ] {
        let before = Cpu::read(&mut stats_conn, db).await?;
        let report = run_phase(
            &channels,
            &servers,
            clients,
            Duration::from_secs(seconds),
            devices,
        )
        .await?;
        let after = Cpu::read(&mut stats_conn, db).await?;
        println!(
            "guest logins, {name}: {:.0}/s  (n={}, p50 {:.2} ms, p99 {:.2} ms, errors {})",
            report.per_second, report.count, report.p50_ms, report.p99_ms, report.errors
        );
        let logins = report.count.max(1) as f64;
        let per_login = |ticks: u64| ticks as f64 / TICKS_PER_SECOND / logins * 1e6;
        let replica_cpu: Vec<String> = (0..replicas)
            .map(|r| {
                let key = format!("replica-{r}");
                format!("{:.0}", per_login(after.delta(&before, &key)))
            })
            .collect();
        println!(
            "  CPU per login: client {:.0} µs, replica(s) {} µs, PostgreSQL backends {:.0} µs, \
             PostgreSQL background {:.0} µs (other databases' backends, not ours: {:.0} µs); \
             {:.2} transactions per login; pool with no idle connection in {} of samples",
            per_login(after.delta(&before, "client")),
            replica_cpu.join(" + "),
            per_login(after.delta(&before, "pg-backends")),
            per_login(after.delta(&before, "pg-background")),
            per_login(after.delta(&before, "pg-others")),
            (after.transactions - before.transactions) as f64 / logins,
            report
                .pool_busy
                .iter()
                .map(|share| format!("{:.0} %", share * 100.0))
                .collect::<Vec<_>>()
                .join(" / "),
        );
    }

    // Token verification: what every authenticated call pays.
    let caller = Caller {
        user_id: uuid::Uuid::now_v7(),
        role: Role::Player,
        guest: true,
    };
    let token = issuer.issue(&caller, Duration::from_secs(900))?.token;
    let n = 50_000;
    let start = Instant::now();
    for _ in 0..n {
        std::hint::black_box(verifier.verify(std::hint::black_box(&token))?);
    }
    let verify_ns = start.elapsed().as_nanos() as f64 / f64::from(n);
    let start = Instant::now();
    for _ in 0..n {
        std::hint::black_box(issuer.issue(&caller, Duration::from_secs(900))?);
    }
    let issue_ns = start.elapsed().as_nanos() as f64 / f64::from(n);
    println!(
        "access token verification: {:.1} µs/op ({verify_ns:.0} ns); issuing: {:.1} µs/op",
        verify_ns / 1000.0,
        issue_ns / 1000.0
    );

    for server in servers {
        server.shutdown.cancel();
        server
            .thread
            .join()
            .map_err(|_| anyhow::anyhow!("a replica panicked"))??;
    }
    Ok(())
}

/// CPU ticks spent so far, by who spent them, and the scratch database's transactions.
struct Cpu {
    ticks: HashMap<String, u64>,
    transactions: i64,
}

impl Cpu {
    async fn read(conn: &mut sqlx::PgConnection, db: &str) -> anyhow::Result<Cpu> {
        let mut ticks = HashMap::new();
        // This process's threads, by name: `client` or `replica-N`.
        for entry in std::fs::read_dir("/proc/self/task")? {
            if let Some((name, used)) = proc_stat(&entry?.path().join("stat")) {
                let who = if name.starts_with("replica-") {
                    name
                } else {
                    "client".to_owned()
                };
                *ticks.entry(who).or_default() += used;
            }
        }
        // PostgreSQL's processes on this machine, by what they serve.
        let rows: Vec<(i32, Option<String>)> =
            sqlx::query_as("SELECT pid, datname::text FROM pg_stat_activity")
                .fetch_all(&mut *conn)
                .await?;
        for (pid, datname) in rows {
            let who = match datname.as_deref() {
                Some(name) if name == db => "pg-backends",
                Some(_) => "pg-others",
                None => "pg-background",
            };
            if let Some((_, used)) = proc_stat(std::path::Path::new(&format!("/proc/{pid}/stat"))) {
                *ticks.entry(who.to_owned()).or_default() += used;
            }
        }
        let transactions: i64 = sqlx::query_scalar(
            "SELECT (xact_commit + xact_rollback)::bigint FROM pg_stat_database WHERE datname = $1",
        )
        .bind(db)
        .fetch_one(&mut *conn)
        .await?;
        Ok(Cpu {
            ticks,
            transactions,
        })
    }

    fn delta(&self, before: &Cpu, who: &str) -> u64 {
        let get = |cpu: &Cpu| cpu.ticks.get(who).copied().unwrap_or(0);
        get(self).saturating_sub(get(before))
    }
}

/// A task's name and its user + system CPU ticks, from a `/proc/…/stat` file.
fn proc_stat(path: &std::path::Path) -> Option<(String, u64)> {
    let text = std::fs::read_to_string(path).ok()?;
    let (open, close) = (text.find('(')?, text.rfind(')')?);
    let name = text[open + 1..close].to_owned();
    // After the name: state, then fields 4.. of proc(5); utime and stime are 14 and 15.
    let fields: Vec<&str> = text[close + 2..].split_whitespace().collect();
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some((name, utime + stime))
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
    /// Per replica, the share of samples in which its pool had no idle connection.
    pool_busy: Vec<f64>,
}

async fn run_phase(
    channels: &[Vec<Channel>],
    servers: &[Replica],
    clients: usize,
    duration: Duration,
    devices: Devices,
) -> anyhow::Result<Report> {
    let start = Instant::now();
    let deadline = start + duration;
    let replicas = channels.len();
    let mut tasks = tokio::task::JoinSet::new();
    for c in 0..clients {
        let of_replica = &channels[c % replicas];
        let channel = of_replica[(c / replicas) % of_replica.len()].clone();
        let mut client = AccountsServiceClient::new(channel);
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
    // Sample the pools while the clients run.
    let mut busy = vec![0usize; servers.len()];
    let mut samples = 0usize;
    while Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(5)).await;
        samples += 1;
        for (r, server) in servers.iter().enumerate() {
            if server.store.pool().num_idle() == 0 {
                busy[r] += 1;
            }
        }
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
        pool_busy: busy
            .iter()
            .map(|&b| b as f64 / samples.max(1) as f64)
            .collect(),
    })
}
