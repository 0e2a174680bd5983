//! A real Prometheus scrapes the three services: `deploy/prometheus/scrape-local.yaml`
//! (scrape.yaml's job and relabelling over static targets) with the services' metrics
//! ports filled in, two game-session replicas holding different numbers of Play streams,
//! then the game-session HPA's query — prometheus-adapter's `metricsQuery` from
//! adapter-config.yaml, filled in as the adapter does for the pods — answers one value per
//! pod, every alert rule of alerts.yaml evaluates without error, and every panel's query
//! of every Grafana dashboard in deploy/grafana answers with data: those of open streams
//! and queue lengths already before any traffic (as 0), all of them after. Needs Debian's
//! `prometheus` binary (`.ci/run` installs it); fails when it is missing.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use basra::lobby;
use basra::player::play_room;
use basra::session::Session;
use basra_e2e::{Backend, spawn_backend};
use basra_engine::bot::Policy;
use basra_proto::basra::common::v1::{BotLevel, RoomVisibility, RuleSettings};
use basra_proto::basra::game::v1::play_request::Kind;
use basra_proto::basra::game::v1::{Join, PlayRequest, PlayResponse};
use serde_json::Value;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;

/// The game-session pods of scrape-local.yaml and the streams each holds in this test.
const PODS: [(&str, usize); 2] = [("game-session-0", 1), ("game-session-1", 2)];

/// A short match against the computer.
fn rules() -> RuleSettings {
    RuleSettings {
        target_score: Some(11),
        ..RuleSettings::default()
    }
}

/// How long Prometheus gets to scrape and evaluate what the test waits for.
const PATIENCE: Duration = Duration::from_secs(20);

#[test]
fn the_local_scrape_config_relabels_as_in_kubernetes() {
    let local = relabelling("scrape-local.yaml");
    assert!(local.lines().count() > 10, "{local}");
    assert_eq!(local, relabelling("scrape.yaml"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prometheus_scrapes_the_services_and_answers_the_hpa_query() {
    let first = spawn_backend().await.expect("backend");
    let second = spawn_backend().await.expect("second game-session");
    let one = first.metrics.clone().expect("metrics endpoints");
    let two = second.metrics.clone().expect("metrics endpoints");
    let prometheus = Prometheus::start(&[
        ("ACCOUNTS_PORT", one.accounts.port()),
        ("MATCHMAKING_PORT", one.matchmaking.port()),
        ("GAME_SESSION_0_PORT", one.game.port()),
        ("GAME_SESSION_1_PORT", two.game.port()),
    ]);

    // All four targets scraped, with the labels the adapter and the alerts group by, before
    // anything is played: a series' first scrape must come before its first increase.
    let up = prometheus
        .query_until("up", |result| targets(result).len() == 4)
        .await;
    assert_eq!(
        targets(&up),
        [
            "accounts/accounts-0 up=1",
            "game-session/game-session-0 up=1",
            "game-session/game-session-1 up=1",
            "matchmaking/matchmaking-0 up=1",
        ]
    );

    // A fresh deployment: nobody has queued, watched friends or played yet. What is open
    // or waiting now shows 0, not "No data": every streaming method's open streams and
    // every offered queue's length are served from the start.
    let queries = dashboard_queries();
    let idle: Vec<&(String, String)> = queries
        .iter()
        .filter(|(_, query)| {
            query.contains("basra_grpc_server_streams_open")
                || query.contains("basra_matchmaking_queue_length")
        })
        .collect();
    assert!(idle.len() >= 5, "{idle:?}");
    // Each must read 0 within the patience: a stream open for a moment on these ports
    // before this test plays (seen once in CI: Play at 1 on the first scrape, from no
    // call of this test) is let go; "No data", or a count that stays, fails.
    let idle_zero =
        |result: &[Value]| has_a_value(result) && result.iter().all(|s| s["value"][1] == "0");
    for (panel, query) in idle {
        let result = prometheus.query_until(query, idle_zero).await;
        assert!(
            idle_zero(&result),
            "{panel}: {query} before any traffic -> {result:?}"
        );
    }

    // A match against the computer on the first replica, then streams held open by
    // players of their own (one unfinished room each).
    let ana = sign_in(&first, "prometheus-ana").await;
    let room = lobby::create_room(
        &ana,
        RoomVisibility::Private,
        vec![1],
        BotLevel::Hard,
        rules(),
    )
    .await
    .expect("room");
    let greedy = basra::player::Driver::Bot {
        policy: Policy::Greedy,
        delay: Duration::ZERO,
    };
    play_room(&ana, &room.room_id, greedy)
        .await
        .expect("played");
    let mut held = Vec::new();
    for (backend, (pod, streams)) in [&first, &second].into_iter().zip(PODS) {
        for n in 0..streams {
            held.push(open_stream(backend, &format!("prometheus-{pod}-{n}")).await);
        }
    }

    // The HPA's metric, one value per game-session pod: its open streams.
    let query = hpa_query();
    let want: Vec<(String, f64)> = PODS
        .iter()
        .map(|(pod, streams)| ((*pod).to_owned(), *streams as f64))
        .collect();
    let got = prometheus
        .query_until(&query, |result| per_pod(result) == want)
        .await;
    assert_eq!(per_pod(&got), want, "{query}");

    // Every alert rule loaded and evaluated without error, and its expression answers.
    let alerts = std::fs::read_to_string(deploy("alerts.yaml")).expect("alerts.yaml");
    let declared = alerts
        .lines()
        .filter(|l| l.trim_start().starts_with("- alert:"))
        .count();
    let rules = prometheus.evaluated_rules().await;
    assert_eq!(rules.len(), declared, "every rule of alerts.yaml is loaded");
    for rule in &rules {
        assert_eq!(rule["health"], "ok", "{rule}");
        prometheus
            .query(rule["query"].as_str().expect("query"))
            .await;
    }

    // A quick match between two players: the queue and its time to a match move.
    let (bo, cy) = (
        sign_in(&first, "prometheus-bo").await,
        sign_in(&first, "prometheus-cy").await,
    );
    // Bo waits long enough for the queue's sweep (every second) to count the ticket.
    let (seat_bo, seat_cy) = tokio::join!(lobby::find_match(&bo, false, false, 2, false), async {
        tokio::time::sleep(Duration::from_millis(2500)).await;
        lobby::find_match(&cy, false, false, 2, false).await
    });
    assert_eq!(
        seat_bo.expect("matched").room_id,
        seat_cy.expect("matched").room_id
    );

    // Every panel of every dashboard answers with data.
    let mut empty = Vec::new();
    assert!(queries.len() > 50, "{} queries", queries.len());
    for (panel, query) in &queries {
        let result = prometheus.query_until(query, has_a_value).await;
        if !has_a_value(&result) {
            empty.push(format!("{panel}: {query} -> {result:?}"));
        }
    }
    assert!(
        empty.is_empty(),
        "dashboard queries without data:\n{}",
        empty.join("\n")
    );

    drop(held);
    drop(prometheus);
    first.stop().await.unwrap();
    second.stop().await.unwrap();
}

/// Every `expr` of every dashboard in deploy/grafana, with `file: panel title`.
fn dashboard_queries() -> Vec<(String, String)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/grafana");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("deploy/grafana")
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
        .collect();
    files.sort();
    assert!(
        files.len() >= 4,
        "an overview and one per service: {files:?}"
    );
    let mut queries = Vec::new();
    for file in files {
        let name = file.file_name().unwrap().to_string_lossy().into_owned();
        let dashboard: Value =
            serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).expect(&name);
        for panel in dashboard["panels"].as_array().expect("panels") {
            let targets = panel["targets"].as_array().expect("targets");
            assert!(!targets.is_empty(), "{name}: {panel}");
            for target in targets {
                let expr = target["expr"].as_str().expect("expr");
                // A dashboard variable would need Grafana to fill it in.
                assert!(!expr.contains('$'), "{name}: {expr}");
                queries.push((format!("{name}: {}", panel["title"]), expr.to_owned()));
            }
        }
    }
    queries
}

/// Whether a result holds a sample with a number (not NaN: a quantile of nothing).
fn has_a_value(result: &[Value]) -> bool {
    result.iter().any(|sample| {
        sample["value"][1]
            .as_str()
            .and_then(|value| value.parse::<f64>().ok())
            .is_some_and(f64::is_finite)
    })
}

/// The `relabel_configs` block of a scrape config file.
fn relabelling(file: &str) -> String {
    let text = std::fs::read_to_string(deploy(file)).expect(file);
    let start = text.find("    relabel_configs:").expect("relabel_configs");
    text[start..]
        .lines()
        .take_while(|line| line.starts_with("    "))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The HPA query: adapter-config.yaml's `metricsQuery`, filled in as prometheus-adapter
/// does for a Pods metric over the game-session pods of namespace `basra`.
fn hpa_query() -> String {
    let config = std::fs::read_to_string(deploy("adapter-config.yaml")).expect("adapter config");
    let template = config
        .lines()
        .find_map(|line| line.trim().strip_prefix("metricsQuery:"))
        .expect("a metricsQuery")
        .trim()
        .trim_matches('\'');
    let series = config
        .lines()
        .find_map(|line| line.trim().strip_prefix("as:"))
        .expect("the metric's name")
        .trim()
        .trim_matches('"');
    let pods: Vec<&str> = PODS.iter().map(|(pod, _)| *pod).collect();
    let query = template
        .replace("<<.Series>>", series)
        .replace(
            "<<.LabelMatchers>>",
            &format!("namespace=\"basra\",pod=~\"{}\"", pods.join("|")),
        )
        .replace("<<.GroupBy>>", "pod");
    assert!(!query.contains("<<"), "an unfilled template field: {query}");
    query
}

/// The `up` series as `service/pod up=value` in namespace `basra`, sorted.
fn targets(result: &[Value]) -> Vec<String> {
    let mut targets: Vec<String> = result
        .iter()
        .filter(|sample| sample["metric"]["namespace"] == "basra")
        .map(|sample| {
            let metric = &sample["metric"];
            format!(
                "{}/{} up={}",
                metric["service"].as_str().unwrap_or_default(),
                metric["pod"].as_str().unwrap_or_default(),
                sample["value"][1].as_str().unwrap_or_default()
            )
        })
        .collect();
    targets.sort();
    targets
}

/// A query result's (pod, value) pairs, by pod.
fn per_pod(result: &[Value]) -> Vec<(String, f64)> {
    let mut values: Vec<(String, f64)> = result
        .iter()
        .map(|sample| {
            let pod = sample["metric"]["pod"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            let value = sample["value"][1]
                .as_str()
                .unwrap_or_default()
                .parse()
                .unwrap_or(f64::NAN);
            (pod, value)
        })
        .collect();
    values.sort_by(|a, b| a.0.cmp(&b.0));
    values
}

fn deploy(file: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../deploy/prometheus")
        .join(file)
}

async fn sign_in(backend: &Backend, device: &str) -> Session {
    backend.guest(device).await.expect("signed in")
}

/// A new guest's Play stream joined to a new room, open until the returned parts drop.
async fn open_stream(
    backend: &Backend,
    device: &str,
) -> (
    Session,
    mpsc::Sender<PlayRequest>,
    tonic::Streaming<PlayResponse>,
) {
    let session = sign_in(backend, device).await;
    let room = lobby::create_room(
        &session,
        RoomVisibility::Private,
        vec![1],
        BotLevel::Hard,
        rules(),
    )
    .await
    .expect("room");
    let (tx, rx) = mpsc::channel(4);
    tx.send(PlayRequest {
        kind: Some(Kind::Join(Join {
            room_id: room.room_id,
            last_seen_seq: None,
            spectate: false,
        })),
    })
    .await
    .unwrap();
    let mut stream = session
        .game()
        .play(ReceiverStream::new(rx))
        .await
        .expect("stream")
        .into_inner();
    stream.message().await.expect("first event").expect("open");
    (session, tx, stream)
}

/// A `prometheus` server on a free local port with its own storage, killed on drop.
struct Prometheus {
    child: Child,
    port: u16,
    dir: tempfile::TempDir,
}

impl Prometheus {
    /// Fills scrape-local.yaml's `${NAME}` placeholders with `ports`, then starts
    /// Prometheus on it and waits until it is ready.
    fn start(ports: &[(&str, u16)]) -> Self {
        let mut config =
            std::fs::read_to_string(deploy("scrape-local.yaml")).expect("scrape-local.yaml");
        for (name, port) in ports {
            let placeholder = format!("${{{name}}}");
            assert!(
                config.contains(&placeholder),
                "{placeholder} in scrape-local.yaml"
            );
            config = config.replace(&placeholder, &port.to_string());
        }
        assert!(
            !config.contains("\"${"),
            "an unfilled placeholder:\n{config}"
        );
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::write(dir.path().join("prometheus.yaml"), config).unwrap();
        std::fs::copy(deploy("alerts.yaml"), dir.path().join("alerts.yaml")).unwrap();
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .expect("a free port")
            .port();
        let log = std::fs::File::create(dir.path().join("prometheus.log")).unwrap();
        let child = Command::new("prometheus")
            .arg(format!(
                "--config.file={}",
                dir.path().join("prometheus.yaml").display()
            ))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("Debian's `prometheus` is needed on PATH (apt-get install prometheus)");
        let prometheus = Self { child, port, dir };
        prometheus.wait_ready();
        prometheus
    }

    fn wait_ready(&self) {
        let deadline = Instant::now() + PATIENCE;
        while Instant::now() < deadline {
            if let Ok((head, _)) = http_get_blocking(self.port, "/-/ready")
                && head.starts_with("HTTP/1.0 200")
            {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("Prometheus never became ready:\n{}", self.log());
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("prometheus.log")).unwrap_or_default()
    }

    /// An instant query's result vector; panics when Prometheus answers an error.
    async fn query(&self, query: &str) -> Vec<Value> {
        let body = self
            .get(&format!("/api/v1/query?query={}", percent_encode(query)))
            .await;
        assert_eq!(body["status"], "success", "{query}: {body}");
        body["data"]["result"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    }

    /// Repeats an instant query until `done` holds for its result (or [`PATIENCE`] ran
    /// out); the last result.
    async fn query_until(&self, query: &str, done: impl Fn(&[Value]) -> bool) -> Vec<Value> {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let result = self.query(query).await;
            if done(&result) || Instant::now() > deadline {
                return result;
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }

    /// The alerting rules, once each has been evaluated at least once.
    async fn evaluated_rules(&self) -> Vec<Value> {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let body = self.get("/api/v1/rules").await;
            let rules: Vec<Value> = body["data"]["groups"]
                .as_array()
                .into_iter()
                .flatten()
                .flat_map(|group| group["rules"].as_array().cloned().unwrap_or_default())
                .collect();
            if (!rules.is_empty() && rules.iter().all(|rule| rule["health"] != "unknown"))
                || Instant::now() > deadline
            {
                return rules;
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }

    async fn get(&self, path: &str) -> Value {
        let mut socket = tokio::net::TcpStream::connect(("127.0.0.1", self.port))
            .await
            .expect("connect to Prometheus");
        socket
            .write_all(format!("GET {path} HTTP/1.0\r\nhost: prometheus\r\n\r\n").as_bytes())
            .await
            .unwrap();
        let mut response = String::new();
        socket.read_to_string(&mut response).await.unwrap();
        let (_, body) = response.split_once("\r\n\r\n").expect("an HTTP answer");
        serde_json::from_str(body).unwrap_or_else(|e| panic!("{path}: {e}: {body}"))
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::thread::panicking() {
            eprintln!("prometheus log:\n{}", self.log());
        }
    }
}

/// `GET path` over HTTP/1.0 (no chunked bodies): the status line and headers, the body.
fn http_get_blocking(port: u16, path: &str) -> std::io::Result<(String, String)> {
    use std::io::{Read as _, Write as _};
    let mut socket = std::net::TcpStream::connect(("127.0.0.1", port))?;
    write!(socket, "GET {path} HTTP/1.0\r\nhost: prometheus\r\n\r\n")?;
    let mut response = String::new();
    socket.read_to_string(&mut response)?;
    let (head, body) = response.split_once("\r\n\r\n").unwrap_or((&response, ""));
    Ok((head.to_owned(), body.to_owned()))
}

/// Percent-encodes everything but unreserved characters, for a URL query value.
fn percent_encode(text: &str) -> String {
    text.bytes()
        .map(|byte| match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (byte as char).to_string()
            }
            _ => format!("%{byte:02X}"),
        })
        .collect()
}
