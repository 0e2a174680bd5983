//! The metrics contract: every `basra_*` metric that the deployment reads — the
//! game-session autoscaler (deploy/k8s/overlays/prod/autoscaling.yaml), the
//! prometheus-adapter rules and the alert rules (deploy/prometheus/) — is served by the
//! running services on `GET /metrics` (the dashboards' queries are proven against a real
//! Prometheus by `prometheus.rs`), the autoscaler's metric counts open streams, and each
//! service serves the RED metrics of its calls and the process's figures.

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use basra::lobby;
use basra::player::play_room;
use basra::session::Session;
use basra_e2e::spawn_backend;
use basra_engine::bot::Policy;
use basra_proto::basra::accounts::v1::MatchHistoryRequest;
use basra_proto::basra::common::v1::{BotLevel, RoomVisibility, RuleSettings};
use basra_proto::basra::game::v1::play_request::Kind;
use basra_proto::basra::game::v1::{Join, PlayRequest};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;

/// The files whose `basra_*` metric names the running services must serve.
const CONTRACT_FILES: &[&str] = &[
    "deploy/k8s/overlays/prod/autoscaling.yaml",
    "deploy/prometheus/adapter-config.yaml",
    "deploy/prometheus/alerts.yaml",
];

/// The autoscaler's metric.
const HPA_METRIC: &str = "basra_game_open_streams";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_metric_the_deployment_reads_is_served() {
    let backend = spawn_backend().await.expect("backend");
    let endpoints = backend.metrics.clone().expect("metrics endpoints");

    // One whole match against the computer, recorded in accounts: plays, commits,
    // timers, the outbox and RecordMatch all move.
    let ana = backend.guest("metrics-ana").await.expect("signed in");
    let rules = RuleSettings {
        target_score: Some(11),
        ..RuleSettings::default()
    };
    let room = lobby::create_room(
        &ana,
        RoomVisibility::Private,
        vec![1],
        BotLevel::Hard,
        rules,
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
    wait_for_history(&ana).await;

    // A stream held open while the metrics are read.
    let held = lobby::create_room(
        &ana,
        RoomVisibility::Private,
        vec![1],
        BotLevel::Hard,
        rules,
    )
    .await
    .expect("room");
    let (tx, rx) = mpsc::channel(4);
    tx.send(PlayRequest {
        kind: Some(Kind::Join(Join {
            room_id: held.room_id.clone(),
            last_seen_seq: None,
            spectate: false,
        })),
    })
    .await
    .unwrap();
    let mut stream = ana
        .game()
        .play(ReceiverStream::new(rx))
        .await
        .expect("stream")
        .into_inner();
    stream.message().await.expect("first event").expect("open");

    let game = scrape(endpoints.game).await;
    let accounts = scrape(endpoints.accounts).await;
    let matchmaking = scrape(endpoints.matchmaking).await;
    assert_eq!(
        sample(&game, HPA_METRIC),
        Some(1.0),
        "one open stream:\n{game}"
    );
    assert!(sample(&game, "basra_game_plays_total").unwrap_or(0.0) >= 1.0);
    assert!(sample(&game, "basra_game_outbox_delivered_total").unwrap_or(0.0) >= 1.0);
    assert_eq!(
        sample(
            &accounts,
            "basra_accounts_record_match_total{result=\"recorded\"}"
        ),
        Some(1.0),
        "{accounts}"
    );
    assert_eq!(
        sample(
            &accounts,
            "basra_accounts_sign_ins_total{kind=\"guest\",result=\"ok\"}"
        ),
        Some(1.0)
    );

    // Every service counts its calls by method and status (the RED metrics) and serves
    // the process's figures.
    for (text, series) in [
        (
            &accounts,
            "basra_grpc_server_handled_total{grpc_service=\"basra.accounts.v1.AccountsService\",grpc_method=\"GuestLogin\",grpc_type=\"unary\",grpc_code=\"OK\"}",
        ),
        (
            &matchmaking,
            "basra_grpc_server_handled_total{grpc_service=\"basra.matchmaking.v1.MatchmakingService\",grpc_method=\"CreateRoom\",grpc_type=\"unary\",grpc_code=\"OK\"}",
        ),
        (
            &game,
            "basra_grpc_server_streams_open{grpc_service=\"basra.game.v1.GameService\",grpc_method=\"Play\",grpc_type=\"bidi_stream\"}",
        ),
        (
            &game,
            "basra_grpc_server_msg_sent_total{grpc_service=\"basra.game.v1.GameService\",grpc_method=\"Play\",grpc_type=\"bidi_stream\"}",
        ),
    ] {
        assert!(
            sample(text, series).unwrap_or(0.0) >= 1.0,
            "{series} in\n{text}"
        );
    }
    for text in [&game, &accounts, &matchmaking] {
        assert!(sample(text, "process_resident_memory_bytes").unwrap_or(0.0) > 0.0);
        assert!(sample(text, "process_open_fds").unwrap_or(0.0) > 0.0);
    }

    let served: BTreeSet<String> = [&game, &accounts, &matchmaking]
        .iter()
        .flat_map(|text| sample_names(text))
        .collect();
    let wanted = contract_names();
    assert!(wanted.contains(HPA_METRIC), "the HPA's metric is read");
    let missing: Vec<&String> = wanted.difference(&served).collect();
    assert!(
        missing.is_empty(),
        "named in {CONTRACT_FILES:?} but served by no service: {missing:?}"
    );

    drop(tx);
    drop(stream);
    backend.stop().await.unwrap();
}

/// Every `basra_…` name in the contract files.
fn contract_names() -> BTreeSet<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut names = BTreeSet::new();
    for file in CONTRACT_FILES {
        let text = std::fs::read_to_string(root.join(file)).expect(file);
        let mut rest = text.as_str();
        while let Some(at) = rest.find("basra_") {
            let name: String = rest[at..]
                .chars()
                .take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '_')
                .collect();
            rest = &rest[at + name.len()..];
            // Prose such as "basra_*" names no metric.
            if name.len() > "basra_".len() && !name.ends_with('_') {
                names.insert(name);
            }
        }
    }
    names
}

/// The metric names with at least one sample in an exposition.
fn sample_names(text: &str) -> impl Iterator<Item = String> + '_ {
    text.lines()
        .filter(|line| !line.starts_with('#') && !line.is_empty())
        .filter_map(|line| line.split(['{', ' ']).next())
        .map(str::to_owned)
}

/// The value of the sample written exactly `series` (name and labels as served).
fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|line| line.strip_prefix(series)?.strip_prefix(' '))
        .and_then(|value| value.split(' ').next()?.parse().ok())
}

/// `GET /metrics`, the body.
async fn scrape(addr: SocketAddr) -> String {
    let mut socket = tokio::net::TcpStream::connect(addr).await.expect("connect");
    socket
        .write_all(b"GET /metrics HTTP/1.1\r\nhost: metrics\r\nconnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut response = String::new();
    socket.read_to_string(&mut response).await.unwrap();
    let (head, body) = response.split_once("\r\n\r\n").expect("an HTTP answer");
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(
        head.to_ascii_lowercase()
            .contains("content-type: application/openmetrics-text"),
        "{head}"
    );
    body.to_owned()
}

/// Waits until the outbox has delivered the match to accounts.
async fn wait_for_history(session: &Session) {
    for _ in 0..200 {
        let matches = session
            .accounts()
            .match_history(MatchHistoryRequest {
                page_size: 1,
                page_token: String::new(),
            })
            .await
            .expect("history")
            .into_inner()
            .matches;
        if !matches.is_empty() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the match never reached accounts");
}
