//! The stack under test, all of it private to the run: a `redis-server` with AOF on and a
//! PostgreSQL cluster made with `initdb`, each on its own port and in its own directory
//! (the shared stores of the other test suites are never touched), a fault proxy in front
//! of each, and the real service binaries (`accounts`, two `game-session`, two
//! `matchmaking`) as child processes with settings files written here, so a scenario can
//! SIGKILL any of them and start it again. matchmaking trusts an operator key of the
//! run's; for the event scenarios ([`Stack::serve_events`]) it keeps its events in the
//! private PostgreSQL and reaches game-session through a [`Balancer`] (as through a
//! Kubernetes Service: a dead replica's share goes to the other).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use basra_platform::auth::{ServiceIdentity, SigningKey};

use crate::proxy::{Balancer, Proxy};

/// Token issuer and audience, as the services' defaults.
pub const ISSUER: &str = "basra-accounts";
/// See [`ISSUER`].
pub const AUDIENCE: &str = "basra";

/// Tunables of the services that the scenarios rely on.
#[derive(Debug, Clone, Copy)]
pub struct Tuning {
    /// game.turn_seconds.
    pub turn_seconds: u64,
    /// game.grace_seconds.
    pub grace_seconds: u64,
}

/// A free local port (bound, then released: good enough on a test machine).
pub fn free_port() -> anyhow::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

async fn wait_port(port: u16, what: &str, timeout: Duration) -> anyhow::Result<()> {
    let start = Instant::now();
    loop {
        if tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_ok()
        {
            return Ok(());
        }
        if start.elapsed() > timeout {
            bail!("{what} did not listen on port {port} within {timeout:?}");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The private Redis (AOF on, fsync on every write so a SIGKILL loses no acknowledged write).
pub struct Redis {
    /// Its port.
    pub port: u16,
    dir: PathBuf,
    child: Option<Child>,
}

impl Redis {
    async fn start(dir: &Path) -> anyhow::Result<Redis> {
        std::fs::create_dir_all(dir)?;
        let mut redis = Redis {
            port: free_port()?,
            dir: dir.to_owned(),
            child: None,
        };
        redis.spawn().await?;
        Ok(redis)
    }

    async fn spawn(&mut self) -> anyhow::Result<()> {
        let child = Command::new("redis-server")
            .args(["--port", &self.port.to_string(), "--bind", "127.0.0.1"])
            .args([
                "--appendonly",
                "yes",
                "--appendfsync",
                "always",
                "--save",
                "",
            ])
            .arg("--dir")
            .arg(&self.dir)
            .arg("--logfile")
            .arg(self.dir.join("redis.log"))
            .stdout(Stdio::null())
            .spawn()
            .context("redis-server must be installed (apt-get install redis-server)")?;
        self.child = Some(child);
        wait_port(self.port, "redis-server", Duration::from_secs(20)).await
    }

    /// Its process id, while it runs (the capacity simulator reads its `/proc`).
    #[allow(dead_code)]
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// `redis-cli -p <its port> args…`: what it printed.
    pub fn cli(&self, args: &[&str]) -> anyhow::Result<String> {
        let out = Command::new("redis-cli")
            .args(["-p", &self.port.to_string()])
            .args(args)
            .output()
            .context("redis-cli must be installed (apt-get install redis-tools)")?;
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// SIGKILL: no shutdown, the AOF is what survives.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts it again on the same port and directory (it replays the AOF).
    pub async fn restart(&mut self) -> anyhow::Result<()> {
        self.kill();
        self.spawn().await
    }

    /// A backup as an operator takes one: `BGSAVE`, then a copy of the RDB file at `to`.
    pub async fn backup(&self, to: &Path) -> anyhow::Result<()> {
        let before = self.cli(&["LASTSAVE"])?;
        self.cli(&["BGSAVE"])?;
        let started = Instant::now();
        while self.cli(&["LASTSAVE"])? == before
            || self
                .cli(&["INFO", "persistence"])?
                .contains("rdb_bgsave_in_progress:1")
        {
            if started.elapsed() > Duration::from_secs(20) {
                bail!("BGSAVE did not finish within 20 s");
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        std::fs::copy(self.dir.join("dump.rdb"), to)?;
        Ok(())
    }

    /// The restore of deploy/README.md ("Back up and restore Redis"): stopped, its AOF
    /// gone (as when the disk holding it is lost), the backup as its RDB, started with
    /// `appendonly no` so that it loads the RDB, then `CONFIG SET appendonly yes` (the AOF
    /// rewritten from memory).
    pub async fn restore(&mut self, backup: &Path) -> anyhow::Result<()> {
        self.kill();
        let _ = std::fs::remove_dir_all(self.dir.join("appendonlydir"));
        std::fs::copy(backup, self.dir.join("dump.rdb"))?;
        let child = Command::new("redis-server")
            .args(["--port", &self.port.to_string(), "--bind", "127.0.0.1"])
            .args([
                "--appendonly",
                "no",
                "--appendfsync",
                "always",
                "--save",
                "",
            ])
            .arg("--dir")
            .arg(&self.dir)
            .arg("--logfile")
            .arg(self.dir.join("redis.log"))
            .stdout(Stdio::null())
            .spawn()
            .context("redis-server must be installed (apt-get install redis-server)")?;
        self.child = Some(child);
        wait_port(self.port, "redis-server", Duration::from_secs(20)).await?;
        // Redis answers LOADING until the RDB is in memory (a long form's backup takes a
        // moment): the operator waits, and so does this.
        let loaded_by = std::time::Instant::now() + Duration::from_secs(20);
        loop {
            let answer = self.cli(&["CONFIG", "SET", "appendonly", "yes"])?;
            if answer.contains("OK") {
                return Ok(());
            }
            if !answer.contains("LOADING") || std::time::Instant::now() > loaded_by {
                bail!("CONFIG SET appendonly yes: {answer}");
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A private Redis Cluster: three primaries and a replica each (`redis-server` in cluster
/// mode, AOF on, `cluster-node-timeout` 2 s, as the operations docs advise), made with
/// `redis-cli --cluster create`.
pub struct RedisCluster {
    /// The nodes, by port.
    nodes: Vec<(u16, Child)>,
}

impl RedisCluster {
    /// Starts the six nodes under `dir` and joins them into a cluster.
    pub async fn start(dir: &Path) -> anyhow::Result<RedisCluster> {
        let mut nodes = Vec::new();
        for _ in 0..6 {
            let port = free_port()?;
            let node_dir = dir.join(port.to_string());
            std::fs::create_dir_all(&node_dir)?;
            let child = Command::new("redis-server")
                .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
                .args(["--cluster-enabled", "yes", "--cluster-node-timeout", "2000"])
                .args(["--appendonly", "yes", "--save", ""])
                // A replica's first full sync starts at once (not 5 s later).
                .args(["--repl-diskless-sync-delay", "0"])
                .arg("--cluster-config-file")
                .arg(node_dir.join("nodes.conf"))
                .arg("--dir")
                .arg(&node_dir)
                .arg("--logfile")
                .arg(node_dir.join("redis.log"))
                .stdout(Stdio::null())
                .spawn()
                .context("redis-server must be installed (apt-get install redis-server)")?;
            nodes.push((port, child));
        }
        for (port, _) in &nodes {
            wait_port(
                *port,
                "redis-server (cluster node)",
                Duration::from_secs(20),
            )
            .await?;
        }
        let created = Command::new("redis-cli")
            .arg("--cluster")
            .arg("create")
            .args(nodes.iter().map(|(port, _)| format!("127.0.0.1:{port}")))
            .args(["--cluster-replicas", "1", "--cluster-yes"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .output()
            .context("redis-cli must be installed")?;
        if !created.status.success() {
            bail!(
                "redis-cli --cluster create failed: {}",
                String::from_utf8_lossy(&created.stderr)
            );
        }
        let cluster = RedisCluster { nodes };
        cluster.wait_healthy(Duration::from_secs(30)).await?;
        cluster
            .wait_replicas_synced(Duration::from_secs(30))
            .await?;
        Ok(cluster)
    }

    /// Waits until every replica has its primary's data (`master_link_status:up`): a
    /// replica that never synced refuses to take over from its primary.
    async fn wait_replicas_synced(&self, within: Duration) -> anyhow::Result<()> {
        let started = Instant::now();
        loop {
            let mut synced = 0;
            for port in self.ports() {
                let info = Command::new("redis-cli")
                    .args(["-p", &port.to_string(), "info", "replication"])
                    .output()?;
                let info = String::from_utf8_lossy(&info.stdout);
                if info.contains("role:slave") && info.contains("master_link_status:up") {
                    synced += 1;
                }
            }
            if synced == self.nodes.len() / 2 {
                return Ok(());
            }
            if started.elapsed() > within {
                bail!("the Redis Cluster's replicas did not sync within {within:?}");
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// The services' URL setting: the first three nodes (any one finds the rest).
    pub fn url(&self) -> String {
        self.nodes
            .iter()
            .take(3)
            .map(|(port, _)| format!("redis://127.0.0.1:{port}"))
            .collect::<Vec<_>>()
            .join(",")
    }

    /// The live nodes' ports.
    pub fn ports(&self) -> Vec<u16> {
        self.nodes.iter().map(|(port, _)| *port).collect()
    }

    /// Waits until every live node says `cluster_state:ok`.
    pub async fn wait_healthy(&self, within: Duration) -> anyhow::Result<()> {
        let started = Instant::now();
        loop {
            let mut healthy = true;
            for port in self.ports() {
                let info = Command::new("redis-cli")
                    .args(["-p", &port.to_string(), "cluster", "info"])
                    .output()?;
                healthy &= String::from_utf8_lossy(&info.stdout).contains("cluster_state:ok");
            }
            if healthy {
                return Ok(());
            }
            if started.elapsed() > within {
                bail!("the Redis Cluster did not become healthy within {within:?}");
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// SIGKILL the node on `port` (it stays down).
    pub fn kill(&mut self, port: u16) {
        if let Some(at) = self.nodes.iter().position(|(p, _)| *p == port) {
            let (_, mut child) = self.nodes.remove(at);
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for RedisCluster {
    fn drop(&mut self) {
        for (_, child) in &mut self.nodes {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The private PostgreSQL cluster (`initdb` into the run's directory, `pg_ctl`).
pub struct Postgres {
    /// Its port.
    pub port: u16,
    data: PathBuf,
    running: bool,
}

/// Runs a PostgreSQL tool; as root it runs as the `postgres` user (initdb refuses root).
fn pg_tool(tool: &str, args: &[&str]) -> anyhow::Result<()> {
    let root = std::env::var("USER").is_ok_and(|u| u == "root")
        || Command::new("id")
            .arg("-u")
            .output()
            .is_ok_and(|o| o.stdout.starts_with(b"0\n"));
    let mut command = if root {
        let mut c = Command::new("runuser");
        c.args(["-u", "postgres", "--", tool]);
        c
    } else {
        Command::new(tool)
    };
    let output = command
        .args(args)
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("{tool} (PostgreSQL server tools) must be installed"))?;
    if !output.status.success() {
        bail!(
            "{tool} {args:?} failed: {}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }
    Ok(())
}

impl Postgres {
    async fn start(dir: &Path) -> anyhow::Result<Postgres> {
        std::fs::create_dir_all(dir)?;
        // The postgres user must own the data directory and reach it.
        let _ = Command::new("chown")
            .arg("postgres:postgres")
            .arg(dir)
            .status();
        let mut ancestor = dir.parent();
        while let Some(path) = ancestor {
            let _ = Command::new("chmod").arg("o+x").arg(path).status();
            ancestor = path.parent();
        }
        let data = dir.join("data");
        pg_tool(
            "initdb",
            &["-D", data.to_str().context("utf-8 path")?, "-U", "postgres"],
        )
        .map(|_| ())
        .or_else(|err| {
            pg_tool(
                "initdb",
                &[
                    "-D",
                    data.to_str().unwrap_or_default(),
                    "-U",
                    "postgres",
                    "--auth=trust",
                ],
            )
            .map_err(|_| err)
        })?;
        let mut pg = Postgres {
            port: free_port()?,
            data,
            running: false,
        };
        pg.start_server().await?;
        Ok(pg)
    }

    /// Starts the server (after [`Postgres::stop`]).
    pub async fn start_server(&mut self) -> anyhow::Result<()> {
        let data = self.data.to_str().context("utf-8 path")?;
        let options = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1 -c max_connections=200",
            self.port, data
        );
        let log = format!("{data}/postgres.log");
        pg_tool(
            "pg_ctl",
            &["-D", data, "-o", &options, "-l", &log, "-w", "start"],
        )?;
        self.running = true;
        wait_port(self.port, "postgres", Duration::from_secs(30)).await
    }

    /// Stops the server at once (`-m immediate`: like a crash, recovery at the next start).
    pub fn stop(&mut self) -> anyhow::Result<()> {
        let data = self.data.to_str().context("utf-8 path")?;
        pg_tool("pg_ctl", &["-D", data, "-m", "immediate", "-w", "stop"])?;
        self.running = false;
        Ok(())
    }

    /// Its URL (database `postgres`).
    pub fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        if self.running {
            let _ = self.stop();
        }
    }
}

/// One service process.
pub struct Service {
    /// accounts-0, game-0, …
    pub name: String,
    /// Its gRPC port.
    pub port: u16,
    /// Its Prometheus port, if it serves metrics.
    pub metrics_port: Option<u16>,
    binary: PathBuf,
    config: PathBuf,
    log: PathBuf,
    child: Option<Child>,
}

impl Service {
    /// A service (not started) running `binary` of `bin_dir` with `config`, whose
    /// `{PORT}` (and `{MPORT}`, if any) become free ports; its files go in `dir`.
    fn new(
        dir: &Path,
        bin_dir: &Path,
        name: &str,
        binary: &str,
        config: String,
    ) -> anyhow::Result<Service> {
        let port = free_port()?;
        let metrics_port = if config.contains("{MPORT}") {
            Some(free_port()?)
        } else {
            None
        };
        let path = dir.join(format!("{name}.toml"));
        let config = config
            .replace("{PORT}", &port.to_string())
            .replace("{MPORT}", &metrics_port.unwrap_or(0).to_string());
        std::fs::write(&path, config)?;
        Ok(Service {
            name: name.to_owned(),
            port,
            metrics_port,
            binary: bin_dir.join(binary),
            config: path,
            log: dir.join(format!("{name}.log")),
            child: None,
        })
    }

    /// Its log file.
    pub fn log(&self) -> &Path {
        &self.log
    }

    /// Its gRPC URL.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Starts the process (if it is not running) and waits for its port.
    pub async fn start(&mut self) -> anyhow::Result<()> {
        if let Some(child) = &mut self.child {
            if child.try_wait()?.is_none() {
                return Ok(());
            }
            self.child = None;
        }
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)?;
        let child = Command::new(&self.binary)
            .env("BASRA_CONFIG_FILE", &self.config)
            .env_remove("RUST_LOG")
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()
            .with_context(|| format!("starting {}", self.binary.display()))?;
        self.child = Some(child);
        let started = Instant::now();
        loop {
            if tokio::net::TcpStream::connect(("127.0.0.1", self.port))
                .await
                .is_ok()
            {
                return Ok(());
            }
            if let Some(child) = &mut self.child
                && let Some(status) = child.try_wait()?
            {
                bail!(
                    "{} exited at start ({status}); its log: {}",
                    self.name,
                    self.log.display()
                );
            }
            if started.elapsed() > Duration::from_secs(60) {
                bail!("{} did not listen within 60 s", self.name);
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// SIGTERM, as Kubernetes stops a pod: the service drains (health NOT_SERVING, open
    /// streams told to resume elsewhere) and exits; SIGKILL after `within`.
    pub async fn terminate(&mut self, within: Duration) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        let _ = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status();
        let started = Instant::now();
        while started.elapsed() < within {
            if let Ok(Some(_)) = child.try_wait() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let _ = child.kill();
        let _ = child.wait();
    }

    /// Runs `binary` of `bin_dir` from its next start on (same port, settings and log):
    /// an upgraded pod in place of the old one.
    pub fn set_binary(&mut self, bin_dir: &Path, binary: &str) {
        self.binary = bin_dir.join(binary);
    }

    /// Rewrites its settings file with `change` (takes effect at its next start).
    pub fn edit_config(&self, change: impl FnOnce(String) -> String) -> anyhow::Result<()> {
        let text = std::fs::read_to_string(&self.config)?;
        std::fs::write(&self.config, change(text))?;
        Ok(())
    }

    /// Its Prometheus text (GET /metrics over a plain TCP socket: no HTTP client in the
    /// suites), if it serves metrics and answers within 5 s.
    pub async fn metrics_text(&self) -> Option<String> {
        use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
        let port = self.metrics_port?;
        let mut socket = tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .ok()?;
        socket
            .write_all(b"GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
            .await
            .ok()?;
        let mut body = String::new();
        tokio::time::timeout(Duration::from_secs(5), socket.read_to_string(&mut body))
            .await
            .ok()?
            .ok()?;
        Some(body)
    }

    /// Its process id, while it runs (the capacity simulator reads its `/proc`).
    #[allow(dead_code)]
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Resident memory in KiB (`/proc/<pid>/status`), while it runs.
    pub fn rss_kib(&self) -> Option<u64> {
        let pid = self.child.as_ref()?.id();
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
        status
            .lines()
            .find_map(|line| line.strip_prefix("VmRSS:"))
            .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
    }

    /// SIGKILL, and reap it.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Everything a run starts.
pub struct Stack {
    /// The private Redis.
    pub redis: Redis,
    /// The private PostgreSQL.
    pub pg: Postgres,
    /// The services' way to Redis.
    pub redis_proxy: Proxy,
    /// accounts' way to PostgreSQL.
    pub pg_proxy: Proxy,
    /// The accounts process (its binary, ports and logs).
    pub accounts: Service,
    /// Two game-session replicas.
    pub games: Vec<Service>,
    /// Two matchmaking replicas.
    pub matchmakers: Vec<Service>,
    /// matchmaking's identity: the driver creates rooms with it as matchmaking does.
    pub room_maker: ServiceIdentity,
    /// matchmaking's way to game-session once it serves events: either replica,
    /// whichever accepts.
    game_service: Balancer,
    /// Whether matchmaking serves events ([`Stack::serve_events`]).
    events_served: bool,
    /// The settings the services run with.
    pub tuning: Tuning,
    /// The run's scratch directory and the service binaries (for services a scenario
    /// adds, see [`Stack::game_replica`]).
    dir: PathBuf,
    bin_dir: PathBuf,
    keys: Keys,
}

#[derive(Clone)]
struct Keys {
    accounts: (String, PathBuf, PathBuf),
    game: (String, PathBuf, PathBuf),
    matchmaking: (String, PathBuf, PathBuf),
    operator: (String, PathBuf, PathBuf),
}

fn write_key(dir: &Path, name: &str) -> anyhow::Result<(String, PathBuf, PathBuf, SigningKey)> {
    let key = SigningKey::generate();
    let private = dir.join(format!("{name}.pem"));
    let public = dir.join(format!("{name}.pub.pem"));
    std::fs::write(&private, key.private_pem())?;
    std::fs::write(&public, key.public_pem())?;
    Ok((key.kid().to_owned(), private, public, key))
}

fn toml_path(path: &Path) -> String {
    format!("{:?}", path.display().to_string())
}

impl Stack {
    /// Starts the stores, the proxies and every service; `bin_dir` holds the service
    /// binaries, `dir` is the run's scratch directory.
    pub async fn start(bin_dir: &Path, dir: &Path, tuning: Tuning) -> anyhow::Result<Stack> {
        std::fs::create_dir_all(dir)?;
        for binary in ["accounts", "game-session", "matchmaking"] {
            if !bin_dir.join(binary).exists() {
                bail!(
                    "{} is missing: build the services first (cargo build -p accounts -p \
                     game-session -p matchmaking)",
                    bin_dir.join(binary).display()
                );
            }
        }
        let (redis, pg) = (
            Redis::start(&dir.join("redis")).await?,
            Postgres::start(&dir.join("pg")).await?,
        );
        let redis_proxy = Proxy::start(SocketAddr::from(([127, 0, 0, 1], redis.port))).await?;
        let pg_proxy = Proxy::start(SocketAddr::from(([127, 0, 0, 1], pg.port))).await?;

        let (a_kid, a_priv, a_pub, _) = write_key(dir, "accounts")?;
        let (g_kid, g_priv, g_pub, _) = write_key(dir, "game")?;
        let (m_kid, m_priv, m_pub, m_key) = write_key(dir, "matchmaking")?;
        let (o_kid, o_priv, o_pub, _) = write_key(dir, "operator")?;
        let keys = Keys {
            accounts: (a_kid, a_priv, a_pub),
            game: (g_kid, g_priv, g_pub),
            matchmaking: (m_kid, m_priv, m_pub),
            operator: (o_kid, o_priv, o_pub),
        };
        let room_maker = ServiceIdentity::new(m_key, ISSUER, AUDIENCE, Duration::from_secs(300));

        let service = |name: &str, binary: &str, config: String| {
            Service::new(dir, bin_dir, name, binary, config)
        };
        let pg_url = format!("postgres://postgres@{}/postgres", pg_proxy.addr);
        let redis_url = format!("redis://{}", redis_proxy.addr);
        let mut accounts = service(
            "accounts-0",
            "accounts",
            accounts_config(&keys, &pg_url, &redis_url),
        )?;
        accounts.start().await?;
        let mut games = Vec::new();
        for i in 0..2 {
            let config = game_config(&keys, &redis_url, &accounts.url(), i, tuning);
            let mut game = service(&format!("game-{i}"), "game-session", config)?;
            game.start().await?;
            games.push(game);
        }
        let game_service = Balancer::start(
            games
                .iter()
                .map(|g| SocketAddr::from(([127, 0, 0, 1], g.port)))
                .collect(),
        )
        .await?;
        let mut matchmakers = Vec::new();
        for (i, game) in games.iter().enumerate() {
            let config = matchmaking_config(&keys, &redis_url, &accounts.url(), &game.url());
            let mut mm = service(&format!("matchmaking-{i}"), "matchmaking", config)?;
            mm.start().await?;
            matchmakers.push(mm);
        }
        Ok(Stack {
            redis,
            pg,
            redis_proxy,
            pg_proxy,
            accounts,
            games,
            matchmakers,
            room_maker,
            game_service,
            events_served: false,
            tuning,
            dir: dir.to_owned(),
            bin_dir: bin_dir.to_owned(),
            keys,
        })
    }

    /// The run's scratch directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// A game-session replica more (not started), named `name`, on the Redis at
    /// `redis_url` (one node or a cluster's node list) under its own key prefix, recording
    /// its matches through this stack's accounts.
    pub fn game_replica(&self, name: &str, redis_url: &str, i: usize) -> anyhow::Result<Service> {
        let config = game_config(&self.keys, redis_url, &self.accounts.url(), i, self.tuning)
            .replace("replica = \"game-", &format!("replica = \"{name}-"));
        Service::new(&self.dir, &self.bin_dir, name, "game-session", config)
    }

    /// [`Stack::game_replica`] running the `game-session` binary of `bin_dir` (another
    /// release's).
    pub fn game_replica_from(
        &self,
        bin_dir: &Path,
        name: &str,
        redis_url: &str,
        i: usize,
    ) -> anyhow::Result<Service> {
        let config = game_config(&self.keys, redis_url, &self.accounts.url(), i, self.tuning)
            .replace("replica = \"game-", &format!("replica = \"{name}-"));
        Service::new(&self.dir, bin_dir, name, "game-session", config)
    }

    /// The directory of this code's service binaries.
    pub fn bin_dir(&self) -> &Path {
        &self.bin_dir
    }

    /// Starts again every service that is not running (after a scenario killed one).
    pub async fn heal(&mut self) -> anyhow::Result<()> {
        self.accounts.start().await?;
        for service in self.games.iter_mut().chain(self.matchmakers.iter_mut()) {
            service.start().await?;
        }
        Ok(())
    }

    /// The operator key matchmaking trusts (EventAdminService): its kid and its
    /// private key (PKCS#8 PEM).
    pub fn operator_key(&self) -> anyhow::Result<(String, String)> {
        let (kid, private, _) = &self.keys.operator;
        Ok((kid.clone(), std::fs::read_to_string(private)?))
    }

    /// From now on (once), matchmaking serves events as deployed: both replicas keep
    /// them in the private PostgreSQL (`[events] database_url`; memory before, each
    /// replica its own) and reach game-session through [`Balancer`], so an event's clock
    /// goes on on whichever replica holds its lease when a game-session replica dies.
    /// Restarts both replicas.
    pub async fn serve_events(&mut self) -> anyhow::Result<()> {
        if self.events_served {
            return Ok(());
        }
        let pg_url = format!("postgres://postgres@{}/postgres", self.pg_proxy.addr);
        let balanced = format!("url = \"http://{}\"", self.game_service.addr);
        let games = self.game_urls();
        for mm in &mut self.matchmakers {
            mm.edit_config(|mut text| {
                for game in &games {
                    text = text.replace(&format!("url = \"{game}\""), &balanced);
                }
                format!("{text}\n[events]\ndatabase_url = \"{pg_url}\"\nmax_connections = 8\n")
            })?;
            mm.terminate(Duration::from_secs(5)).await;
            mm.start().await?;
        }
        self.events_served = true;
        Ok(())
    }

    /// The matchmaking URLs, in replica order.
    pub fn matchmaking_urls(&self) -> Vec<String> {
        self.matchmakers.iter().map(Service::url).collect()
    }

    /// The game-session URLs, in replica order.
    pub fn game_urls(&self) -> Vec<String> {
        self.games.iter().map(Service::url).collect()
    }
}

const QUIET: &str = "[telemetry]\nfilter = \"warn\"\njson = false\n";

/// accounts as deployed (`deploy/k8s/base/accounts/config.toml`): presence, the friends'
/// feeds and the banned accounts in Redis, the revocations under the shared prefix every
/// service defaults to (`basra`; not written here: the previous release, which the
/// upgrade scenario runs, does not know the key). Without `[redis]` it would keep them in
/// its memory: a week of feed notes for every player away from a feed, and bans the
/// other services never see.
fn accounts_config(keys: &Keys, pg_url: &str, redis_url: &str) -> String {
    format!(
        r#"[server]
listen = "127.0.0.1:{{PORT}}"
drain_seconds = 1
{QUIET}
[redis]
url = "{redis_url}"
prefix = "chaos:acc"

[database]
url = "{pg_url}"
max_connections = 16
migrate = true

[identity]
signing_key_file = {a_priv}
key_id = "{a_kid}"

[auth]
[[auth.trusted_keys]]
kid = "{g_kid}"
public_key_file = {g_pub}
role = "service"
[[auth.trusted_keys]]
kid = "{m_kid}"
public_key_file = {m_pub}
role = "service"

[signup_limits]
per_address_max = 1000000
global_max = 1000000

# Every simulated player signs in from 127.0.0.1: the per-address login limit (against
# guessing, where players have addresses of their own) would refuse them.
[login_limits]
per_peer_max = 1000000

[leaderboard]
min_ranked_matches = 1

[metrics]
listen = "127.0.0.1:{{MPORT}}"
"#,
        a_priv = toml_path(&keys.accounts.1),
        a_kid = keys.accounts.0,
        g_kid = keys.game.0,
        g_pub = toml_path(&keys.game.2),
        m_kid = keys.matchmaking.0,
        m_pub = toml_path(&keys.matchmaking.2),
    )
}

fn game_config(keys: &Keys, redis_url: &str, accounts: &str, i: usize, t: Tuning) -> String {
    format!(
        r#"[server]
listen = "127.0.0.1:{{PORT}}"
drain_seconds = 1
{QUIET}
[redis]
url = "{redis_url}"
prefix = "chaos"

[game]
replica = "game-{i}"
turn_seconds = {turn}
grace_seconds = {grace}
bot_delay_ms = 0
rematch_seconds = 1
lease_ms = 6000

[accounts]
url = "{accounts}"

[auth]
[[auth.trusted_keys]]
kid = "{a_kid}"
public_key_file = {a_pub}
role = "player"
[[auth.trusted_keys]]
kid = "{m_kid}"
public_key_file = {m_pub}
role = "service"

[metrics]
listen = "127.0.0.1:{{MPORT}}"

[identity]
signing_key_file = {g_priv}
key_id = "{g_kid}"
"#,
        turn = t.turn_seconds,
        grace = t.grace_seconds,
        a_kid = keys.accounts.0,
        a_pub = toml_path(&keys.accounts.2),
        m_kid = keys.matchmaking.0,
        m_pub = toml_path(&keys.matchmaking.2),
        g_priv = toml_path(&keys.game.1),
        g_kid = keys.game.0,
    )
}

fn matchmaking_config(keys: &Keys, redis_url: &str, accounts: &str, game: &str) -> String {
    format!(
        r#"[server]
listen = "127.0.0.1:{{PORT}}"
drain_seconds = 1
{QUIET}
[redis]
url = "{redis_url}"
prefix = "chaos:mm"

[auth]
[[auth.trusted_keys]]
kid = "{a_kid}"
public_key_file = {a_pub}
role = "player"
[[auth.trusted_keys]]
kid = "{o_kid}"
public_key_file = {o_pub}
role = "operator"

[game]
url = "{game}"

[accounts]
url = "{accounts}"

[queue]
lease_millis = 4000
ticket_ttl_seconds = 5

[metrics]
listen = "127.0.0.1:{{MPORT}}"

[identity]
signing_key_file = {m_priv}
key_id = "{m_kid}"
"#,
        a_kid = keys.accounts.0,
        a_pub = toml_path(&keys.accounts.2),
        m_priv = toml_path(&keys.matchmaking.1),
        m_kid = keys.matchmaking.0,
        o_kid = keys.operator.0,
        o_pub = toml_path(&keys.operator.2),
    )
}
