//! APNs against a local stand-in speaking HTTP/2 over TLS (a test CA and a server
//! certificate openssl makes in the test, the CA trusted through `ca_file`; the client speaks HTTP/2 only, as to Apple, so the
//! stand-in is h2 over TLS rather than h2c): every header Apple requires, the provider
//! token verified with the key's public half, its reuse for 50 minutes, its replacement
//! after `ExpiredProviderToken`, the classification of the answers, the limit in flight.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use basra_push::{
    ApnsSettings, Clock as _, Notice, Outcome, Platform, Push, PushError, PushSettings, Pusher,
};
use basra_testkit::push::apns::{BUNDLE, DEVICE, KEY_ID, TEAM_ID, reason};
use basra_testkit::push::{ApnsStandIn as Apns, FcmStandIn, Reply};

fn push(locale: &str, notice: Notice) -> Push {
    Push {
        platform: Platform::Apns,
        device_token: DEVICE.into(),
        app_id: BUNDLE.into(),
        locale: locale.into(),
        notice,
        data: BTreeMap::from([("event".to_owned(), "cup-2026".to_owned())]),
        collapse_id: None,
        expires_at: None,
    }
}

fn ready() -> Push {
    push(
        "en",
        Notice::MatchReady {
            event: "Cairo Cup".into(),
        },
    )
}

#[tokio::test]
async fn a_push_goes_over_http2_with_every_header_apple_requires() {
    let apns = Apns::start().await;
    let pusher = apns.pusher();
    let mut ready = push(
        "ar",
        Notice::MatchReady {
            event: "Cairo Cup".into(),
        },
    );
    ready.collapse_id = Some("match-cup-2026-r1".into());
    let expiry = apns.clock.now() + Duration::from_secs(900);
    ready.expires_at = Some(expiry);
    assert_eq!(
        pusher.push(&ready).await,
        Outcome::Accepted {
            id: Some("00000000-0000-0000-0000-000000000001".into())
        }
    );

    let requests = apns.requests();
    assert_eq!(requests.len(), 1);
    let request = &requests[0];
    assert_eq!(request.version, http::Version::HTTP_2);
    assert_eq!(request.method, http::Method::POST);
    assert_eq!(request.path, format!("/3/device/{DEVICE}"));
    assert_eq!(request.header("apns-topic"), Some(BUNDLE));
    assert_eq!(request.header("apns-push-type"), Some("alert"));
    assert_eq!(request.header("apns-priority"), Some("10"));
    assert_eq!(
        request.header("apns-collapse-id"),
        Some("match-cup-2026-r1")
    );
    let expiration = expiry
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    assert_eq!(
        request.header("apns-expiration"),
        Some(expiration.to_string().as_str())
    );
    let claims = apns.verify(&apns.bearers()[0]);
    assert_eq!(claims["iss"], TEAM_ID);
    assert_eq!(claims["iat"].as_u64().unwrap(), apns.now_secs());

    let body = request.json();
    assert_eq!(body["aps"]["alert"]["title"], "مباراتك جاهزة");
    assert_eq!(
        body["aps"]["alert"]["body"],
        "مباراتك في \u{2068}Cairo Cup\u{2069} جاهزة. حان وقت اللعب!"
    );
    assert_eq!(body["aps"]["thread-id"], "match_ready");
    assert_eq!(
        (&body["kind"], &body["event"]),
        (&"match_ready".into(), &"cup-2026".into())
    );

    // A friend request: normal priority; no collapse id or expiry, so no such headers.
    let request = push(
        "en-GB",
        Notice::FriendRequest {
            from: "Omar".into(),
        },
    );
    assert!(matches!(
        pusher.push(&request).await,
        Outcome::Accepted { .. }
    ));
    let sent = &apns.requests()[1];
    assert_eq!(sent.header("apns-priority"), Some("5"));
    assert_eq!(sent.header("apns-collapse-id"), None);
    assert_eq!(sent.header("apns-expiration"), None);
    assert_eq!(sent.json()["aps"]["alert"]["title"], "Friend request");
}

#[tokio::test]
async fn the_provider_token_is_reused_for_50_minutes_then_replaced() {
    let apns = Apns::start().await;
    let pusher = Arc::new(apns.pusher());
    let sends: Vec<_> = (0..10)
        .map(|_| {
            let pusher = Arc::clone(&pusher);
            tokio::spawn(async move { pusher.push(&ready()).await })
        })
        .collect();
    for send in sends {
        assert!(matches!(send.await.unwrap(), Outcome::Accepted { .. }));
    }
    let first = apns.bearers()[0].clone();
    assert!(
        apns.bearers().iter().all(|b| *b == first),
        "one token for 10 sends"
    );
    let issued = apns.verify(&first)["iat"].as_u64().unwrap();

    apns.clock.advance(Duration::from_secs(49 * 60));
    pusher.push(&ready()).await;
    assert_eq!(apns.bearers()[10], first, "reused at 49 minutes");

    apns.clock.advance(Duration::from_secs(2 * 60));
    pusher.push(&ready()).await;
    pusher.push(&ready()).await;
    let bearers = apns.bearers();
    assert_ne!(bearers[11], first, "replaced at 51 minutes");
    assert_eq!(bearers[12], bearers[11], "and the new one reused");
    let reissued = apns.verify(&bearers[11])["iat"].as_u64().unwrap();
    assert_eq!(reissued, issued + 51 * 60);
    // One connection carried them all, 10 at once included (HTTP/2 multiplexing, as Apple
    // asks, rather than a connection per push).
    assert!(
        apns.requests()
            .iter()
            .all(|r| r.version == http::Version::HTTP_2)
    );
    assert_eq!(apns.server.connections(), 1);
}

#[tokio::test]
async fn an_expired_provider_token_is_replaced_once_and_not_again_within_20_minutes() {
    let apns = Apns::start().await;
    let pusher = apns.pusher();
    // The token is 10 minutes old when APNs calls it expired (a clock off, say). (Signed
    // in the same second, a new token would be the same bytes: ES256 here is RFC 6979.)
    apns.clock.advance(Duration::from_secs(10 * 60));
    apns.script([reason(403, "ExpiredProviderToken")]);
    assert!(matches!(
        pusher.push(&ready()).await,
        Outcome::Accepted { .. }
    ));
    let bearers = apns.bearers();
    assert_eq!(bearers.len(), 2, "sent once more");
    assert_ne!(bearers[0], bearers[1], "with a new provider token");
    assert_eq!(
        apns.verify(&bearers[1])["iat"].as_u64().unwrap(),
        apns.now_secs()
    );

    // Called expired again a minute later: replacing it again would only earn
    // TooManyProviderTokenUpdates, so it is a configuration (or clock) problem.
    apns.clock.advance(Duration::from_secs(60));
    apns.script([reason(403, "ExpiredProviderToken")]);
    let outcome = pusher.push(&ready()).await;
    assert!(
        matches!(&outcome, Outcome::Misconfigured { reason } if reason.contains("less than 20 minutes")),
        "{outcome:?}"
    );
    assert_eq!(apns.bearers().len(), 3, "not sent again");

    // 21 minutes on, one replacement is allowed again; refused twice, it is misconfigured.
    apns.clock.advance(Duration::from_secs(21 * 60));
    apns.script([
        reason(403, "ExpiredProviderToken"),
        reason(403, "ExpiredProviderToken"),
    ]);
    let outcome = pusher.push(&ready()).await;
    assert!(
        matches!(outcome, Outcome::Misconfigured { .. }),
        "{outcome:?}"
    );
    let bearers = apns.bearers();
    assert_eq!(bearers.len(), 5);
    assert_ne!(bearers[3], bearers[4]);
    // And the next push uses the newest token without another request for one.
    assert!(matches!(
        pusher.push(&ready()).await,
        Outcome::Accepted { .. }
    ));
    assert_eq!(apns.bearers()[5], bearers[4]);
}

#[tokio::test]
async fn each_answer_is_classified() {
    let apns = Apns::start().await;
    let pusher = apns.pusher();
    type Case = (Reply, fn(&Outcome) -> bool);
    let cases: Vec<Case> = vec![
        (
            Reply::new(
                410,
                r#"{"reason": "Unregistered", "timestamp": 1760000000000}"#,
            ),
            |o| matches!(o, Outcome::DeadToken { reason } if reason == "APNs 410 Unregistered"),
        ),
        (reason(400, "BadDeviceToken"), |o| {
            matches!(o, Outcome::DeadToken { .. })
        }),
        (reason(400, "BadCollapseId"), |o| {
            matches!(o, Outcome::Rejected { .. })
        }),
        (reason(413, "PayloadTooLarge"), |o| {
            matches!(o, Outcome::Rejected { .. })
        }),
        (
            reason(429, "TooManyRequests").header("retry-after", "12"),
            |o| matches!(o, Outcome::RetryLater { after: Some(d), .. } if *d == Duration::from_secs(12)),
        ),
        (reason(503, "ServiceUnavailable"), |o| {
            matches!(o, Outcome::RetryLater { after: None, .. })
        }),
        (reason(500, "InternalServerError"), |o| {
            matches!(o, Outcome::RetryLater { .. })
        }),
        (reason(403, "InvalidProviderToken"), |o| {
            matches!(o, Outcome::Misconfigured { .. })
        }),
        (reason(400, "TopicDisallowed"), |o| {
            matches!(o, Outcome::Misconfigured { .. })
        }),
    ];
    let count = cases.len();
    for (reply, expected) in cases {
        let status = reply.status;
        apns.script([reply]);
        let outcome = pusher.push(&ready()).await;
        assert!(expected(&outcome), "{status}: {outcome:?}");
    }
    assert_eq!(apns.requests().len(), count, "none was sent twice");
    let first = &apns.bearers()[0];
    assert!(
        apns.bearers().iter().all(|b| b == first),
        "no answer but ExpiredProviderToken replaces the token"
    );
}

#[tokio::test]
async fn a_token_that_is_not_hexadecimal_is_dead_and_not_sent() {
    let apns = Apns::start().await;
    let pusher = apns.pusher();
    let mut odd = ready();
    odd.device_token = "a1b2/3/device/other?x".into();
    assert!(matches!(pusher.push(&odd).await, Outcome::DeadToken { .. }));
    let mut no_topic = ready();
    no_topic.app_id.clear();
    assert!(matches!(
        pusher.push(&no_topic).await,
        Outcome::Rejected { .. }
    ));
    assert!(apns.requests().is_empty());
}

#[tokio::test]
async fn a_server_with_an_untrusted_certificate_is_not_sent_anything() {
    let apns = Apns::start().await;
    let mut settings = apns.settings();
    settings.ca_file = None;
    let outcome = apns.pusher_with(settings).push(&ready()).await;
    assert!(
        matches!(&outcome, Outcome::RetryLater { reason, .. } if reason.to_lowercase().contains("certificate")),
        "{outcome:?}"
    );
    assert!(apns.requests().is_empty());
}

#[tokio::test]
async fn at_most_max_in_flight_requests_on_the_connection() {
    let apns = Apns::start().await;
    let mut settings = apns.settings();
    settings.max_in_flight = 3;
    let pusher = Arc::new(apns.pusher_with(settings));
    apns.set_delay(Duration::from_millis(100));
    let sends: Vec<_> = (0..9)
        .map(|_| {
            let pusher = Arc::clone(&pusher);
            tokio::spawn(async move { pusher.push(&ready()).await })
        })
        .collect();
    for send in sends {
        assert!(matches!(send.await.unwrap(), Outcome::Accepted { .. }));
    }
    assert_eq!(apns.requests().len(), 9);
    assert_eq!(apns.server.most_in_flight(), 3);
    assert_eq!(
        apns.server.connections(),
        1,
        "the slots limit requests, not connections"
    );
}

#[tokio::test]
async fn an_unusable_key_stops_the_pusher_at_its_start() {
    let apns = Apns::start().await;
    let build = |settings: ApnsSettings| {
        Pusher::new(&PushSettings {
            apns: Some(settings),
            ..PushSettings::default()
        })
    };
    let mut missing = apns.settings();
    missing.key_file = apns.keys.path("AuthKey_absent.p8");
    assert!(matches!(build(missing), Err(PushError::Read { .. })));
    // An RSA key is not an APNs key.
    apns.keys.rsa("rsa");
    let mut rsa = apns.settings();
    rsa.key_file = apns.keys.path("rsa.pem");
    let err = build(rsa).unwrap_err().to_string();
    assert!(
        err.contains("push.apns.key_file") && err.contains("P-256"),
        "{err}"
    );
    let key_body = apns
        .keys
        .read("AuthKey.p8")
        .lines()
        .nth(1)
        .unwrap()
        .to_owned();
    let debug = format!("{:?}", apns.pusher());
    assert!(debug.contains(KEY_ID) && !debug.contains(&key_body));
}

#[tokio::test]
async fn one_pusher_routes_each_platform_to_its_provider() {
    let apns = Apns::start().await;
    let fcm = FcmStandIn::start().await;
    let settings = PushSettings {
        fcm: Some(fcm.settings()),
        apns: Some(apns.settings()),
    };
    let pusher = Pusher::new(&settings).unwrap();
    assert!(pusher.supports(Platform::Fcm) && pusher.supports(Platform::Apns));
    let mut android = ready();
    android.platform = Platform::Fcm;
    assert!(matches!(
        pusher.push(&android).await,
        Outcome::Accepted { .. }
    ));
    assert!(matches!(
        pusher.push(&ready()).await,
        Outcome::Accepted { .. }
    ));
    assert!(matches!(
        pusher.push(&ready()).await,
        Outcome::Accepted { .. }
    ));
    assert_eq!(fcm.sends().len(), 1);
    assert_eq!(apns.requests().len(), 2);
}
