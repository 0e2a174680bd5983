//! Hostile clients against the server's own limits, with real sockets: silent and
//! half-open connections, idle ones, and hand-built calls (oversized metadata and
//! messages, malformed protobuf) that must get the documented status and leave the
//! connection's other calls alone.

use std::time::{Duration, Instant};

use basra_platform::{config::ConnectionLimits, metrics::render};
use basra_proto::basra::game::v1::{
    GetRoomRequest, game_admin_service_client::GameAdminServiceClient,
};
use basra_testkit::hostile::{self, Answer, RawGrpc};
use prost::Message as _;
use tonic::{Code, Request};
use tonic_health::pb::{HealthCheckRequest, health_client::HealthClient};

use crate::serve::{App, PROBE_MAX_MESSAGE, limited, reaches_the_handler};

const GET_ROOM: &str = "/basra.game.v1.GameAdminService/GetRoom";
const HEALTH_WATCH: &str = "/grpc.health.v1.Health/Watch";

fn timeouts(handshake_seconds: u64, idle_seconds: u64) -> ConnectionLimits {
    ConnectionLimits {
        handshake_timeout_seconds: handshake_seconds,
        idle_timeout_seconds: idle_seconds,
        ..ConnectionLimits::default()
    }
}

/// Every time is within `low..high`.
fn all_within(times: &[Option<Duration>], low: Duration, high: Duration) -> bool {
    times
        .iter()
        .all(|time| time.is_some_and(|time| time >= low && time < high))
}

#[tokio::test]
async fn silent_and_half_open_connections_are_closed_at_the_handshake_timeout() {
    let app = App::spawn_with(limited(timeouts(1, 60))).await;
    let opened = Instant::now();
    let mut silent = hostile::connections(app.addr, 100, b"").await;
    silent.extend(hostile::connections(app.addr, 100, hostile::HALF_PREFACE).await);
    // A whole preface and the client's SETTINGS, but no call.
    silent.extend(
        hostile::connections(
            app.addr,
            10,
            b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00",
        )
        .await,
    );
    let times = hostile::closed(silent, opened, Duration::from_secs(10)).await;
    assert!(
        all_within(&times, Duration::from_millis(900), Duration::from_secs(3)),
        "{times:?}"
    );
    // A client that calls at once is served as before.
    let mut client = GameAdminServiceClient::new(app.channel().await);
    assert!(reaches_the_handler(&mut client).await);
}

#[tokio::test]
async fn silent_sockets_at_the_cap_lock_clients_out_only_until_the_handshake_timeout() {
    let app = App::spawn_with(limited(ConnectionLimits {
        max_connections: 40,
        ..timeouts(1, 60)
    }))
    .await;
    let opened = Instant::now();
    let silent = hostile::connections(app.addr, 40, b"").await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    let endpoint = tonic::transport::Endpoint::from_shared(format!("http://{}", app.addr))
        .unwrap()
        .connect_timeout(Duration::from_millis(500));
    let locked_out = match endpoint.connect().await {
        Err(_) => true,
        Ok(channel) => !reaches_the_handler(&mut GameAdminServiceClient::new(channel)).await,
    };
    assert!(locked_out, "the 41st connection was served");
    // The silent ones are closed at 1 s; a client gets in right after.
    let times = hostile::closed(silent, opened, Duration::from_secs(5)).await;
    assert!(times.iter().all(Option::is_some), "{times:?}");
    let channel = endpoint.connect().await.expect("a free slot");
    assert!(reaches_the_handler(&mut GameAdminServiceClient::new(channel)).await);
}

#[tokio::test]
async fn a_connection_without_an_open_call_is_closed_after_the_idle_timeout() {
    let app = App::spawn_with(limited(timeouts(1, 2))).await;
    let mut raw = RawGrpc::connect(app.addr).await;
    let anonymous = raw
        .call(
            GET_ROOM,
            &[],
            hostile::message(&GetRoomRequest::default().encode_to_vec()),
        )
        .await;
    assert!(
        matches!(anonymous, Answer::Grpc { code: 5, .. }),
        "{anonymous:?}"
    );
    // Idle from the end of that call: closed 2 s later (not at the handshake timeout).
    let closed = raw.closed(Duration::from_secs(6)).await;
    assert!(
        closed.is_some_and(|t| t >= Duration::from_millis(1800) && t < Duration::from_secs(4)),
        "{closed:?}"
    );
}

#[tokio::test]
async fn an_open_stream_keeps_its_connection_past_the_idle_timeout() {
    let app = App::spawn_with(limited(timeouts(1, 1))).await;
    let mut health = HealthClient::new(app.channel().await);
    let mut watch = health
        .watch(HealthCheckRequest::default())
        .await
        .unwrap()
        .into_inner();
    watch.message().await.unwrap().expect("the first status");
    tokio::time::sleep(Duration::from_millis(2500)).await;
    // Still open: nothing to read (a cut connection would end the stream at once).
    let next = tokio::time::timeout(Duration::from_millis(300), watch.message()).await;
    assert!(next.is_err(), "the stream ended: {next:?}");
}

/// `count` copies of `x-padding-N: <1000 bytes>`: about a kibibyte each.
fn padding(kib: usize) -> Vec<(String, String)> {
    (0..kib)
        .map(|n| (format!("x-padding-{n}"), "x".repeat(1000)))
        .collect()
}

fn padded<T>(message: T, kib: usize) -> Request<T> {
    let mut request = Request::new(message);
    for (name, value) in padding(kib) {
        request.metadata_mut().insert(
            tonic::metadata::MetadataKey::from_bytes(name.as_bytes()).unwrap(),
            value.parse().unwrap(),
        );
    }
    request
}

#[tokio::test]
async fn oversized_metadata_is_resource_exhausted_and_the_connection_keeps_its_calls() {
    // The default limit: 16 KiB.
    let app = App::spawn_with(limited(ConnectionLimits::default())).await;
    let channel = app.channel().await;
    let mut health = HealthClient::new(channel.clone());
    let mut watch = health
        .watch(HealthCheckRequest::default())
        .await
        .unwrap()
        .into_inner();
    watch.message().await.unwrap().expect("the first status");
    let mut client = GameAdminServiceClient::new(channel);
    // Over the limit, up to what HTTP/2 itself takes (16 times it: 256 KiB).
    for kib in [17, 64, 100, 240] {
        let status = client
            .get_room(padded(GetRoomRequest::default(), kib))
            .await
            .expect_err("over the limit");
        assert_eq!(
            status.code(),
            Code::ResourceExhausted,
            "{kib} KiB: {status:?}"
        );
        assert!(status.message().contains("metadata"), "{status:?}");
    }
    // The connection's other calls went on: the stream is open, a call is served.
    let next = tokio::time::timeout(Duration::from_millis(200), watch.message()).await;
    assert!(next.is_err(), "the stream ended: {next:?}");
    assert!(reaches_the_handler(&mut client).await);
    // Within the limit, served.
    let status = client
        .get_room(padded(GetRoomRequest::default(), 12))
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::NotFound);
}

#[tokio::test]
async fn oversized_messages_are_resource_exhausted_and_the_connection_goes_on() {
    let app = App::spawn_with(limited(ConnectionLimits::default())).await;
    let mut client = GameAdminServiceClient::new(app.channel().await);
    let status = client
        .get_room(GetRoomRequest {
            room_id: "r".repeat(PROBE_MAX_MESSAGE + 1),
        })
        .await
        .expect_err("over the probe's 1 KiB");
    assert_eq!(status.code(), Code::ResourceExhausted, "{status:?}");

    // A length prefix of 2 GiB and no message, on a unary call and on a stream's request.
    let mut raw = RawGrpc::connect(app.addr).await;
    for path in [GET_ROOM, HEALTH_WATCH] {
        let answer = raw.call(path, &[], hostile::length_prefix(1 << 31)).await;
        assert!(
            matches!(answer, Answer::Grpc { code: 8, .. }),
            "{path}: {answer:?}"
        );
    }
    // The same connection still serves.
    let anonymous = raw
        .call(
            GET_ROOM,
            &[],
            hostile::message(&GetRoomRequest::default().encode_to_vec()),
        )
        .await;
    assert!(
        matches!(anonymous, Answer::Grpc { code: 5, .. }),
        "{anonymous:?}"
    );
}

#[tokio::test]
async fn malformed_requests_are_invalid_argument_and_not_counted_as_server_faults() {
    let app = App::spawn_with(limited(ConnectionLimits::default())).await;
    let mut raw = RawGrpc::connect(app.addr).await;
    let mut truncated = hostile::length_prefix(10).to_vec();
    truncated.extend_from_slice(b"abc");
    let cases: [(&str, bytes::Bytes); 4] = [
        // Not protobuf: field 31, wire type 7.
        ("garbage", hostile::message(&[0xff, 0xff, 0xff])),
        // The length says 10, the stream ends after 3.
        ("truncated", truncated.into()),
        // Compressed, with no grpc-encoding.
        ("compressed", bytes::Bytes::from_static(&[1, 0, 0, 0, 0])),
        // No message at all on a unary call.
        ("empty", bytes::Bytes::new()),
    ];
    for (what, body) in cases {
        let answer = raw.call(GET_ROOM, &[], body).await;
        assert!(
            matches!(answer, Answer::Grpc { code: 3, .. }),
            "{what}: {answer:?}"
        );
    }
    let text = render(&basra_platform::metrics::prometheus_client::registry::Registry::default());
    let series = |code: &str| {
        format!(
            "basra_grpc_server_handled_total{{grpc_service=\"basra.game.v1.GameAdminService\",grpc_method=\"GetRoom\",grpc_type=\"unary\",grpc_code=\"{code}\"}} "
        )
    };
    let count = |code: &str| {
        text.lines()
            .find_map(|line| line.strip_prefix(&series(code)))
            .map_or(0.0, |value| value.parse::<f64>().unwrap())
    };
    assert!(count("INVALID_ARGUMENT") >= 4.0, "{text}");
    assert_eq!(count("INTERNAL"), 0.0, "{text}");
}
