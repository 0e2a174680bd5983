//! Hostile clients against the three services as separate servers (`spawn_backend`: their
//! own ports, PostgreSQL and Redis) with the connection limits deploy/ ships: silent and
//! half-open sockets are closed at the handshake timeout, and oversized or malformed calls
//! to each service get the documented status on a connection that goes on serving.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use basra_platform::config::{ConnectionLimits, load_with_env};
use basra_proto::basra::accounts::v1::{
    GuestLoginRequest, accounts_service_client::AccountsServiceClient,
};
use basra_proto::basra::game::v1::WatchRequest;
use basra_testkit::hostile::{self, Answer, RawGrpc};
use prost::Message as _;

use crate::deploy_config::pod_env;

fn addr(url: &str) -> SocketAddr {
    url.trim_start_matches("http://").parse().unwrap()
}

#[tokio::test]
async fn the_separate_services_close_silent_sockets_and_refuse_hostile_calls_as_documented() {
    // What the test's servers run with is what the manifests deploy (ConfigMap and
    // Deployment variables, loaded as a pod loads them).
    let accounts: accounts::Settings =
        load_with_env(accounts::settings::DEFAULTS, pod_env("accounts")).unwrap();
    let game: game_session::Settings =
        load_with_env(game_session::settings::DEFAULTS, pod_env("game-session")).unwrap();
    let queue: matchmaking::settings::Settings =
        load_with_env(matchmaking::settings::DEFAULTS, pod_env("matchmaking")).unwrap();
    let running = ConnectionLimits::default();
    for limits in [
        &accounts.server.limits,
        &game.server.limits,
        &queue.server.limits,
    ] {
        assert_eq!(
            (
                limits.handshake_timeout_seconds,
                limits.idle_timeout_seconds,
                limits.max_header_list_bytes
            ),
            (
                running.handshake_timeout_seconds,
                running.idle_timeout_seconds,
                running.max_header_list_bytes
            )
        );
    }
    let backend = basra_e2e::spawn_backend().await.unwrap();
    let endpoints = &backend.endpoints;
    let services =
        [&endpoints.accounts, &endpoints.game, &endpoints.matchmaking].map(|url| addr(url));

    let opened = Instant::now();
    let mut silent = Vec::new();
    for service in services {
        silent.extend(hostile::connections(service, 50, b"").await);
        silent.extend(hostile::connections(service, 50, hostile::HALF_PREFACE).await);
    }
    let handshake = running.handshake_timeout();

    let tokens = AccountsServiceClient::connect(endpoints.accounts.clone())
        .await
        .unwrap()
        .guest_login(GuestLoginRequest {
            device_id: "hostile-e2e".into(),
            display_name: String::new(),
        })
        .await
        .unwrap()
        .into_inner()
        .tokens
        .unwrap();
    let bearer = [("authorization", format!("Bearer {}", tokens.access_token))];
    let two_gib = || hostile::length_prefix(1 << 31);
    let garbage = || hostile::message(&[0xff; 3]);
    let watch_17_kib = WatchRequest {
        room_id: "r".repeat(17 * 1024),
        ..WatchRequest::default()
    }
    .encode_to_vec();
    let calls = [
        (
            services[0],
            "/basra.accounts.v1.AccountsService/GuestLogin",
            two_gib(),
            8,
        ),
        (
            services[0],
            "/basra.accounts.v1.AccountsService/GuestLogin",
            garbage(),
            3,
        ),
        (
            services[1],
            "/basra.game.v1.GameService/Watch",
            two_gib(),
            8,
        ),
        (
            services[1],
            "/basra.game.v1.GameService/Watch",
            hostile::message(&watch_17_kib),
            8,
        ),
        (
            services[1],
            "/basra.game.v1.GameService/Watch",
            garbage(),
            3,
        ),
        (
            services[2],
            "/basra.matchmaking.v1.MatchmakingService/FindMatch",
            two_gib(),
            8,
        ),
        (
            services[2],
            "/basra.matchmaking.v1.MatchmakingService/FindMatch",
            garbage(),
            3,
        ),
    ];
    for service in services {
        let mut raw = RawGrpc::connect(service).await;
        for (_, path, body, code) in calls.iter().filter(|call| call.0 == service) {
            let answer = raw.call(path, &bearer, body.clone()).await;
            assert!(
                matches!(&answer, Answer::Grpc { code: got, .. } if got == code),
                "{path}: {answer:?}"
            );
        }
        // 64 KiB of metadata: RESOURCE_EXHAUSTED, and the connection goes on.
        let mut metadata = bearer.to_vec();
        metadata.extend((0..64).map(|n| (["x-a", "x-b"][n % 2], "x".repeat(1000))));
        let path = calls.iter().find(|call| call.0 == service).unwrap().1;
        let answer = raw.call(path, &metadata, garbage()).await;
        assert!(
            matches!(answer, Answer::Grpc { code: 8, .. }),
            "{path}: {answer:?}"
        );
        let answer = raw.call(path, &bearer, garbage()).await;
        assert!(
            matches!(answer, Answer::Grpc { code: 3, .. }),
            "{path}: {answer:?}"
        );
    }

    let times = hostile::closed(silent, opened, handshake + Duration::from_secs(5)).await;
    let (first, last) = (times.iter().min().unwrap(), times.iter().max().unwrap());
    assert!(
        times
            .iter()
            .all(|t| t.is_some_and(|t| t >= handshake && t < handshake + Duration::from_secs(3))),
        "{times:?}"
    );
    println!(
        "separate services: 300 silent/half-open sockets closed {first:?}..{last:?} after opening (handshake timeout {handshake:?})"
    );
    backend.stop().await.unwrap();
}
