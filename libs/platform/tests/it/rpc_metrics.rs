//! The RED metrics as Prometheus reads them: a real tonic server behind the
//! [`RpcLayer`], real gRPC clients (health's unary and server-streaming calls,
//! reflection's bidirectional stream), and the registry's text afterwards. Each call's
//! counters and histogram move under its method's labels and its status code, the
//! status read from the trailers or from a trailers-only answer, and a stream the client
//! drops counts as CANCELLED.

use std::time::{Duration, Instant};

use basra_platform::{
    auth::{AuthLayer, SigningKey, TokenIssuer},
    metrics::{RpcLayer, RpcMetrics, prometheus_client::registry::Registry, render},
    serve::{ServeOptions, serve},
};
use basra_proto::basra::game::v1::{
    ListRoomsRequest, game_admin_service_client::GameAdminServiceClient,
};
use tokio::net::TcpListener;
use tokio_stream::wrappers::TcpListenerStream;
use tokio_util::sync::CancellationToken;
use tonic::{
    Code,
    service::Routes,
    transport::{Channel, Endpoint, Server},
};
use tonic_health::pb::{HealthCheckRequest, health_client::HealthClient};
use tonic_reflection::pb::v1;

const HEALTH: &str = "grpc.health.v1.Health";
const REFLECTION: &str = "grpc.reflection.v1.ServerReflection";

/// A server of health and reflection measured into `metrics`; its channel.
async fn measured_server(metrics: &RpcMetrics) -> (Channel, CancellationToken) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (_reporter, health) = tonic_health::server::health_reporter();
    let reflection = tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
        .build_v1()
        .unwrap();
    let routes = Routes::new(health).add_service(reflection);
    let stop = CancellationToken::new();
    tokio::spawn(
        Server::builder()
            .layer(RpcLayer::new(metrics.clone()))
            .add_routes(routes)
            .serve_with_incoming_shutdown(
                TcpListenerStream::new(listener),
                stop.clone().cancelled_owned(),
            ),
    );
    let channel = Endpoint::from_shared(format!("http://{addr}"))
        .unwrap()
        .connect()
        .await
        .unwrap();
    (channel, stop)
}

fn text(metrics: &RpcMetrics) -> String {
    let mut registry = Registry::default();
    metrics.register(&mut registry);
    let mut text = String::new();
    basra_platform::metrics::prometheus_client::encoding::text::encode(&mut text, &registry)
        .unwrap();
    text
}

/// The value of the series `name{labels}` exactly as served (0 when absent).
fn value(text: &str, name: &str, labels: &str) -> f64 {
    let series = format!("{name}{{{labels}}} ");
    text.lines()
        .find_map(|line| line.strip_prefix(&series))
        .map(|rest| rest.split(' ').next().unwrap().parse().unwrap())
        .unwrap_or(0.0)
}

fn method(service: &str, method: &str, kind: &str) -> String {
    format!("grpc_service=\"{service}\",grpc_method=\"{method}\",grpc_type=\"{kind}\"")
}

fn with_code(labels: &str, code: &str) -> String {
    format!("{labels},grpc_code=\"{code}\"")
}

#[tokio::test]
async fn unary_calls_count_by_method_and_status_code() {
    let metrics = RpcMetrics::new();
    // A starting server makes its methods' series at zero; no other service's.
    metrics.prepare(&[HEALTH]);
    let prepared = text(&metrics);
    let check = method(HEALTH, "Check", "unary");
    let watch = method(HEALTH, "Watch", "server_stream");
    assert!(
        prepared.contains(&format!(
            "basra_grpc_server_handling_seconds_count{{{check}}} 0"
        )),
        "{prepared}"
    );
    assert!(prepared.contains(&format!(
        "basra_grpc_server_handled_total{{{}}} 0",
        with_code(&watch, "UNAVAILABLE")
    )));
    assert!(prepared.contains(&format!(
        "basra_grpc_server_stream_seconds_count{{{watch}}} 0"
    )));
    // A streaming method's open streams: 0, not absent, before its first call.
    assert!(
        prepared.contains(&format!("basra_grpc_server_streams_open{{{watch}}} 0")),
        "{prepared}"
    );
    assert!(!prepared.contains(REFLECTION), "{prepared}");

    let (channel, stop) = measured_server(&metrics).await;
    let mut health = HealthClient::new(channel);

    for _ in 0..3 {
        health
            .check(HealthCheckRequest {
                service: String::new(),
            })
            .await
            .unwrap();
    }
    let unknown = health
        .check(HealthCheckRequest {
            service: "no.such.Service".to_owned(),
        })
        .await
        .unwrap_err();
    assert_eq!(unknown.code(), Code::NotFound);

    let text = text(&metrics);
    assert_eq!(
        value(&text, "basra_grpc_server_started_total", &check),
        4.0,
        "{text}"
    );
    // OK arrives in the trailers; NOT_FOUND in a trailers-only answer.
    assert_eq!(
        value(
            &text,
            "basra_grpc_server_handled_total",
            &with_code(&check, "OK")
        ),
        3.0,
        "{text}"
    );
    assert_eq!(
        value(
            &text,
            "basra_grpc_server_handled_total",
            &with_code(&check, "NOT_FOUND")
        ),
        1.0,
        "{text}"
    );
    assert_eq!(
        value(&text, "basra_grpc_server_handling_seconds_count", &check),
        4.0,
        "{text}"
    );
    let seconds = value(&text, "basra_grpc_server_handling_seconds_sum", &check);
    assert!(seconds > 0.0 && seconds < 5.0, "{seconds}");
    // The top bucket holds every call: the histogram is by method, not by code.
    assert_eq!(
        value(
            &text,
            "basra_grpc_server_handling_seconds_bucket",
            &format!("le=\"+Inf\",{check}")
        ),
        4.0,
        "{text}"
    );
    // Unary calls are no streams.
    assert_eq!(
        value(&text, "basra_grpc_server_streams_open", &check),
        0.0,
        "{text}"
    );
    assert!(!text.contains("basra_grpc_server_msg_sent_total{grpc_service=\"grpc.health.v1.Health\",grpc_method=\"Check\""));
    stop.cancel();
}

#[tokio::test]
async fn streams_count_opened_open_duration_and_messages() {
    let metrics = RpcMetrics::new();
    let (channel, stop) = measured_server(&metrics).await;

    // A server stream, dropped by the client while open.
    let mut health = HealthClient::new(channel.clone());
    let mut watch = health
        .watch(HealthCheckRequest {
            service: String::new(),
        })
        .await
        .unwrap()
        .into_inner();
    watch.message().await.unwrap().expect("the current status");
    let labels = method(HEALTH, "Watch", "server_stream");
    let open = text(&metrics);
    assert_eq!(
        value(&open, "basra_grpc_server_streams_open", &labels),
        1.0,
        "{open}"
    );
    assert_eq!(
        value(&open, "basra_grpc_server_msg_sent_total", &labels),
        1.0,
        "{open}"
    );
    assert_eq!(
        value(&open, "basra_grpc_server_msg_received_total", &labels),
        1.0,
        "{open}"
    );
    drop(watch);
    let cancelled = with_code(&labels, "CANCELLED");
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut after = text(&metrics);
    while value(&after, "basra_grpc_server_handled_total", &cancelled) < 1.0
        && Instant::now() < deadline
    {
        tokio::time::sleep(Duration::from_millis(20)).await;
        after = text(&metrics);
    }
    assert_eq!(
        value(&after, "basra_grpc_server_handled_total", &cancelled),
        1.0,
        "{after}"
    );
    assert_eq!(
        value(&after, "basra_grpc_server_streams_open", &labels),
        0.0,
        "{after}"
    );
    assert_eq!(
        value(&after, "basra_grpc_server_stream_seconds_count", &labels),
        1.0,
        "{after}"
    );

    // A bidirectional stream: two questions, two answers, closed by the client, OK.
    let mut reflection = v1::server_reflection_client::ServerReflectionClient::new(channel);
    let ask = || v1::ServerReflectionRequest {
        host: String::new(),
        message_request: Some(v1::server_reflection_request::MessageRequest::ListServices(
            String::new(),
        )),
    };
    let mut answers = reflection
        .server_reflection_info(tokio_stream::iter([ask(), ask()]))
        .await
        .unwrap()
        .into_inner();
    let mut answered = 0;
    while answers.message().await.unwrap().is_some() {
        answered += 1;
    }
    assert_eq!(answered, 2);
    let labels = method(REFLECTION, "ServerReflectionInfo", "bidi_stream");
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut done = text(&metrics);
    while value(&done, "basra_grpc_server_stream_seconds_count", &labels) < 1.0
        && Instant::now() < deadline
    {
        tokio::time::sleep(Duration::from_millis(20)).await;
        done = text(&metrics);
    }
    for (name, want) in [
        ("basra_grpc_server_started_total", 1.0),
        ("basra_grpc_server_msg_received_total", 2.0),
        ("basra_grpc_server_msg_sent_total", 2.0),
        ("basra_grpc_server_streams_open", 0.0),
        ("basra_grpc_server_stream_seconds_count", 1.0),
    ] {
        assert_eq!(value(&done, name, &labels), want, "{name}:\n{done}");
    }
    assert_eq!(
        value(
            &done,
            "basra_grpc_server_handled_total",
            &with_code(&labels, "OK")
        ),
        1.0,
        "{done}"
    );
    stop.cancel();
}

/// `serve` measures every call into the shared set, auth's refusals included, and
/// every `/metrics` answer carries it with the process's figures.
#[tokio::test]
async fn serve_counts_refused_calls_and_metrics_carry_the_process() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let issuer = TokenIssuer::new(SigningKey::generate(), "basra-accounts", "basra");
    let shutdown = CancellationToken::new();
    let routes = Routes::default();
    let server = tokio::spawn(serve(
        listener,
        routes,
        &[],
        AuthLayer::new(issuer.verifier(), &[]),
        shutdown.clone(),
        ServeOptions::with_drain(Duration::from_secs(1)),
    ));
    let channel = Endpoint::from_shared(format!("http://{addr}"))
        .unwrap()
        .connect()
        .await
        .unwrap();
    let labels = with_code(
        &method("basra.game.v1.GameAdminService", "ListRooms", "unary"),
        "UNAUTHENTICATED",
    );
    let before = value(
        &render(&Registry::default()),
        "basra_grpc_server_handled_total",
        &labels,
    );
    let refused = GameAdminServiceClient::new(channel)
        .list_rooms(ListRoomsRequest::default())
        .await
        .unwrap_err();
    assert_eq!(refused.code(), Code::Unauthenticated);
    let text = render(&Registry::default());
    // Other tests of this binary may be refused at the same time: at least this one.
    assert!(
        value(&text, "basra_grpc_server_handled_total", &labels) >= before + 1.0,
        "{text}"
    );
    for name in [
        "process_cpu_seconds_total",
        "process_resident_memory_bytes",
        "process_open_fds",
        "process_max_fds",
        "process_threads",
        "process_start_time_seconds",
        "basra_tokio_workers",
        "basra_tokio_alive_tasks",
    ] {
        assert!(
            text.lines().any(|line| line
                .strip_prefix(name)
                .is_some_and(|rest| rest.starts_with(' '))),
            "{name} in\n{text}"
        );
    }
    assert!(text.ends_with("# EOF\n"), "one end marker");
    assert_eq!(text.matches("# EOF").count(), 1);
    shutdown.cancel();
    server.await.unwrap().unwrap();
}
