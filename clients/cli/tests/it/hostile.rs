//! Hostile clients against `basra dev` as a person runs it (a child process, so its file
//! descriptors are its own): silent and half-open sockets are closed at the handshake
//! timeout and idle connections at the idle timeout (both set through the accounts
//! prefix, as `basra dev` reads its one port's settings), and oversized or malformed
//! calls to each of the three services get the documented status on a connection that
//! goes on serving.

use std::time::{Duration, Instant};

use basra_proto::basra::accounts::v1::{
    GuestLoginRequest, accounts_service_client::AccountsServiceClient,
};
use basra_proto::basra::game::v1::WatchRequest;
use basra_testkit::hostile::{self, Answer, RawGrpc, open_fds};
use prost::Message as _;

use crate::dev_process::DevProcess;

const TIMEOUTS: [(&str, &str); 2] = [
    (
        "BASRA_ACCOUNTS_SERVER__LIMITS__HANDSHAKE_TIMEOUT_SECONDS",
        "2",
    ),
    ("BASRA_ACCOUNTS_SERVER__LIMITS__IDLE_TIMEOUT_SECONDS", "3"),
];

/// Waits (at most 5 s) for `pid`'s descriptors to come down to `at_most`; the count.
async fn fds_settle(pid: u32, at_most: usize) -> usize {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let fds = open_fds(pid);
        if fds <= at_most || Instant::now() > deadline {
            return fds;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn basra_dev_closes_silent_half_open_and_idle_connections() {
    let dev = DevProcess::start(&[], &TIMEOUTS);
    let pid = dev.pid();
    let before = open_fds(pid);
    let opened = Instant::now();
    let mut silent = hostile::connections(dev.addr, 100, b"").await;
    silent.extend(hostile::connections(dev.addr, 100, hostile::HALF_PREFACE).await);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let held = open_fds(pid);
    assert!(held >= before + 200, "{before} -> {held}");
    let times = hostile::closed(silent, opened, Duration::from_secs(10)).await;
    let slowest = times.iter().max().copied().flatten();
    assert!(
        times
            .iter()
            .all(|t| t.is_some_and(|t| t >= Duration::from_millis(1500))),
        "{times:?}"
    );
    assert!(slowest < Some(Duration::from_secs(4)), "{slowest:?}");
    let after = fds_settle(pid, before).await;
    assert!(after <= before, "{before} -> {held} -> {after}");

    // A client that called once and went quiet: closed at the idle timeout.
    let mut raw = RawGrpc::connect(dev.addr).await;
    let login = GuestLoginRequest {
        device_id: "hostile-idle".into(),
        display_name: String::new(),
    };
    let answer = raw
        .call(
            "/basra.accounts.v1.AccountsService/GuestLogin",
            &[],
            hostile::message(&login.encode_to_vec()),
        )
        .await;
    assert!(matches!(answer, Answer::Grpc { code: 0, .. }), "{answer:?}");
    let idle = raw.closed(Duration::from_secs(8)).await;
    assert!(
        idle.is_some_and(|t| t >= Duration::from_millis(2500) && t < Duration::from_secs(5)),
        "{idle:?}"
    );
    println!(
        "basra dev: 200 silent/half-open sockets, fds {before} -> {held} -> {after}, closed after {:?}..{slowest:?}; an idle connection closed after {idle:?}",
        times.iter().min().copied().flatten()
    );
}

#[tokio::test]
async fn basra_dev_answers_oversized_and_malformed_calls_with_the_documented_codes() {
    let dev = DevProcess::start(&[], &[]);
    let mut accounts = AccountsServiceClient::connect(format!("http://{}", dev.addr))
        .await
        .unwrap();
    let tokens = accounts
        .guest_login(GuestLoginRequest {
            device_id: "hostile-codes".into(),
            display_name: String::new(),
        })
        .await
        .unwrap()
        .into_inner()
        .tokens
        .unwrap();
    let bearer = [("authorization", format!("Bearer {}", tokens.access_token))];
    let mut raw = RawGrpc::connect(dev.addr).await;
    let two_gib = || hostile::length_prefix(1 << 31);
    let calls: [(&str, &str, hostile::Bytes, i32); 8] = [
        // One of each service, over its limit (accounts 256 KiB, the others 16 KiB).
        (
            "/basra.accounts.v1.AccountsService/GuestLogin",
            "2 GiB prefix",
            two_gib(),
            8,
        ),
        (
            "/basra.game.v1.GameService/Watch",
            "2 GiB prefix",
            two_gib(),
            8,
        ),
        (
            "/basra.game.v1.GameService/Watch",
            "17 KiB message",
            hostile::message(
                &WatchRequest {
                    room_id: "r".repeat(17 * 1024),
                    ..WatchRequest::default()
                }
                .encode_to_vec(),
            ),
            8,
        ),
        (
            "/basra.matchmaking.v1.MatchmakingService/FindMatch",
            "2 GiB prefix",
            two_gib(),
            8,
        ),
        // Not protobuf.
        (
            "/basra.accounts.v1.AccountsService/GuestLogin",
            "garbage",
            hostile::message(&[0xff; 3]),
            3,
        ),
        (
            "/basra.game.v1.GameService/Watch",
            "garbage",
            hostile::message(&[0xff; 3]),
            3,
        ),
        (
            "/basra.matchmaking.v1.MatchmakingService/FindMatch",
            "garbage",
            hostile::message(&[0xff; 3]),
            3,
        ),
        // A well-formed request still answers on the same connection.
        (
            "/basra.accounts.v1.AccountsService/GuestLogin",
            "a guest",
            hostile::message(
                &GuestLoginRequest {
                    device_id: "hostile-codes".into(),
                    display_name: String::new(),
                }
                .encode_to_vec(),
            ),
            0,
        ),
    ];
    for (path, what, body, code) in calls {
        let answer = raw.call(path, &bearer, body).await;
        assert!(
            matches!(&answer, Answer::Grpc { code: got, .. } if *got == code),
            "{path} {what}: {answer:?}"
        );
    }
    // Metadata over 16 KiB, up to what HTTP/2 takes (256 KiB): RESOURCE_EXHAUSTED, and
    // the connection goes on.
    for kib in [17, 64, 200] {
        let mut metadata = bearer.to_vec();
        metadata.extend((0..kib).map(|n| (["x-a", "x-b", "x-c"][n % 3], "x".repeat(1000))));
        let answer = raw
            .call("/basra.game.v1.GameService/Watch", &metadata, two_gib())
            .await;
        assert!(
            matches!(answer, Answer::Grpc { code: 8, .. }),
            "{kib} KiB: {answer:?}"
        );
    }
    assert!(!raw.is_closed());
    let answer = raw
        .call(
            "/basra.game.v1.GameService/Watch",
            &bearer,
            hostile::message(&[0xff; 3]),
        )
        .await;
    assert!(matches!(answer, Answer::Grpc { code: 3, .. }), "{answer:?}");
}

#[tokio::test]
async fn basra_dev_says_in_its_banner_which_web_origins_may_call_it() {
    let cors = |dev: &DevProcess| {
        dev.banner
            .iter()
            .find(|line| line.starts_with("cors:"))
            .cloned()
            .unwrap_or_else(|| panic!("no cors line in {:#?}", dev.banner))
    };
    let open = DevProcess::start(&[], &[]);
    assert!(cors(&open).contains("ANY web origin"), "{}", cors(&open));
    let named = DevProcess::start(
        &[],
        &[(
            "BASRA_ACCOUNTS_SERVER__ALLOWED_ORIGINS",
            "https://play.example.com",
        )],
    );
    assert_eq!(
        cors(&named),
        "cors:   web pages from https://play.example.com may call this backend"
    );
}
