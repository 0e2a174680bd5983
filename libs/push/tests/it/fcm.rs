//! FCM HTTP v1 against a local stand-in of Google's token endpoint and FCM's send
//! endpoint (one HTTP/1.1 server, two paths): the signed assertion and its claims
//! (verified with the service account's public key), the access token's caching, every
//! field of the message, the classification of the answers, the limit in flight.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use basra_push::{FcmSettings, Notice, Outcome, Platform, Push, PushError, PushSettings, Pusher};
use basra_testkit::push::fcm::{
    EMAIL, JWT_BEARER, KEY_ID, PROJECT, SCOPE, TOKEN_PATH, error, form,
};
use basra_testkit::push::{FcmStandIn as Fcm, Keys, Reply};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};

fn push(locale: &str, notice: Notice) -> Push {
    Push {
        platform: Platform::Fcm,
        device_token: "fcm-device-token-1".into(),
        app_id: "online.basra.app".into(),
        locale: locale.into(),
        notice,
        data: BTreeMap::from([("room".to_owned(), "Q5MEAR".to_owned())]),
        collapse_id: None,
        expires_at: None,
    }
}

fn invite() -> Push {
    push(
        "en",
        Notice::RoomInvite {
            from: "Layla".into(),
        },
    )
}

#[tokio::test]
async fn the_assertion_is_signed_by_the_service_account_with_the_claims_google_requires() {
    let fcm = Fcm::start().await;
    let pusher = fcm.pusher();
    assert!(matches!(
        pusher.push(&invite()).await,
        Outcome::Accepted { .. }
    ));

    let token_requests = fcm.server.requests_to(TOKEN_PATH);
    assert_eq!(token_requests.len(), 1);
    let request = &token_requests[0];
    assert_eq!(request.method, http::Method::POST);
    assert_eq!(
        request.header("content-type"),
        Some("application/x-www-form-urlencoded")
    );
    let fields = form(&request.body);
    assert_eq!(fields.len(), 2, "{fields:?}");
    assert_eq!(fields["grant_type"], JWT_BEARER);
    let assertion = &fields["assertion"];

    let header = jsonwebtoken::decode_header(assertion).unwrap();
    assert_eq!(header.alg, Algorithm::RS256);
    assert_eq!(header.kid.as_deref(), Some(KEY_ID));
    assert_eq!(header.typ.as_deref(), Some("JWT"));
    let public = DecodingKey::from_rsa_pem(fcm.keys.read("service.pub.pem").as_bytes()).unwrap();
    let mut validation = Validation::new(Algorithm::RS256);
    validation.set_audience(&[fcm.token_url()]);
    validation.set_issuer(&[EMAIL]);
    validation.set_required_spec_claims(&["iss", "aud", "iat", "exp"]);
    let claims = jsonwebtoken::decode::<serde_json::Value>(assertion, &public, &validation)
        .expect("the assertion verifies with the service account's public key")
        .claims;
    assert_eq!(claims["scope"], SCOPE);
    let iat = claims["iat"].as_u64().unwrap();
    let now = fcm.now_secs();
    assert!(iat == now, "iat {iat} is the clock's now {now}");
    assert_eq!(claims["exp"].as_u64().unwrap(), iat + 3600);

    // Another key does not verify it: the check above could fail.
    let other = Keys::new();
    other.rsa("other");
    let wrong = DecodingKey::from_rsa_pem(other.read("other.pub.pem").as_bytes()).unwrap();
    assert!(jsonwebtoken::decode::<serde_json::Value>(assertion, &wrong, &validation).is_err());
}

#[tokio::test]
async fn the_send_carries_the_access_token_and_every_field() {
    let fcm = Fcm::start().await;
    let pusher = fcm.pusher();
    let mut invite = push(
        "ar-EG",
        Notice::RoomInvite {
            from: "Layla".into(),
        },
    );
    invite.collapse_id = Some("invite-Q5MEAR".into());
    invite.expires_at = Some(basra_push::Clock::now(&fcm.clock) + Duration::from_secs(600));
    let outcome = pusher.push(&invite).await;
    assert_eq!(
        outcome,
        Outcome::Accepted {
            id: Some(format!("projects/{PROJECT}/messages/1"))
        }
    );

    let sends = fcm.sends();
    assert_eq!(sends.len(), 1);
    let send = &sends[0];
    assert_eq!(send.method, http::Method::POST);
    assert_eq!(send.header("authorization"), Some("Bearer access-1"));
    assert!(
        send.header("content-type")
            .unwrap()
            .starts_with("application/json")
    );
    let message = &send.json()["message"];
    assert_eq!(message["token"], "fcm-device-token-1");
    assert_eq!(message["notification"]["title"], "دعوة للعب");
    assert_eq!(
        message["notification"]["body"],
        "دعوة من \u{2068}Layla\u{2069} إلى لعبة بصرة."
    );
    assert_eq!(
        message["data"],
        serde_json::json!({"kind": "room_invite", "room": "Q5MEAR"})
    );
    let android = &message["android"];
    assert_eq!(android["priority"], "HIGH");
    assert_eq!(android["ttl"], "600s");
    assert_eq!(android["collapse_key"], "invite-Q5MEAR");
    assert_eq!(android["notification"]["tag"], "invite-Q5MEAR");
    assert_eq!(android["restricted_package_name"], "online.basra.app");

    // A friend acceptance in French: English, normal priority, no expiry or collapse.
    let accepted = push("fr-FR", Notice::FriendAccepted { by: "Omar".into() });
    assert!(matches!(
        pusher.push(&accepted).await,
        Outcome::Accepted { .. }
    ));
    let message = &fcm.sends()[1].json()["message"];
    assert_eq!(message["notification"]["title"], "Friend request accepted");
    assert_eq!(
        message["notification"]["body"],
        "\u{2068}Omar\u{2069} accepted your friend request."
    );
    assert_eq!(
        message["android"],
        serde_json::json!({"priority": "NORMAL", "restricted_package_name": "online.basra.app"})
    );
}

#[tokio::test]
async fn one_token_request_serves_many_sends_until_shortly_before_it_expires() {
    let fcm = Fcm::start().await;
    let pusher = Arc::new(fcm.pusher());
    let sends: Vec<_> = (0..20)
        .map(|_| {
            let pusher = Arc::clone(&pusher);
            tokio::spawn(async move { pusher.push(&invite()).await })
        })
        .collect();
    for send in sends {
        assert!(matches!(send.await.unwrap(), Outcome::Accepted { .. }));
    }
    assert_eq!(
        fcm.tokens_requested(),
        1,
        "20 concurrent sends, one token request"
    );
    assert_eq!(fcm.sends().len(), 20);
    assert!(
        fcm.sends()
            .iter()
            .all(|s| s.header("authorization") == Some("Bearer access-1"))
    );

    // 3599 s of life: kept for 3599 - 300 s.
    fcm.clock.advance(Duration::from_secs(3200));
    pusher.push(&invite()).await;
    assert_eq!(fcm.tokens_requested(), 1, "still valid after 3200 s");
    fcm.clock.advance(Duration::from_secs(100));
    pusher.push(&invite()).await;
    assert_eq!(
        fcm.tokens_requested(),
        2,
        "replaced 5 minutes before its expiry"
    );
    assert_eq!(
        fcm.sends().last().unwrap().header("authorization"),
        Some("Bearer access-2")
    );
    // The new assertion is dated by the clock.
    let assertion = form(&fcm.server.requests_to(TOKEN_PATH)[1].body)["assertion"].clone();
    let payload = jsonwebtoken::dangerous::insecure_decode::<serde_json::Value>(&assertion)
        .unwrap()
        .claims;
    assert_eq!(payload["iat"].as_u64().unwrap(), fcm.now_secs());
}

#[tokio::test]
async fn a_refused_access_token_is_replaced_once_then_it_is_misconfiguration() {
    let fcm = Fcm::start().await;
    let pusher = fcm.pusher();
    let unauthenticated = || {
        error(
            401,
            "UNAUTHENTICATED",
            "",
            "Request had invalid authentication credentials.",
        )
    };
    fcm.script_send([unauthenticated()]);
    assert!(matches!(
        pusher.push(&invite()).await,
        Outcome::Accepted { .. }
    ));
    assert_eq!(fcm.tokens_requested(), 2);
    let bearers: Vec<_> = fcm
        .sends()
        .iter()
        .map(|s| s.header("authorization").unwrap().to_owned())
        .collect();
    assert_eq!(bearers, ["Bearer access-1", "Bearer access-2"]);

    fcm.script_send([unauthenticated(), unauthenticated()]);
    let outcome = pusher.push(&invite()).await;
    assert!(
        matches!(outcome, Outcome::Misconfigured { .. }),
        "{outcome:?}"
    );
    assert_eq!(fcm.tokens_requested(), 3);
    assert_eq!(fcm.sends().len(), 4);
}

#[tokio::test]
async fn each_answer_is_classified() {
    let fcm = Fcm::start().await;
    let pusher = fcm.pusher();
    let bad_token = serde_json::json!({"error": {"code": 400, "status": "INVALID_ARGUMENT",
        "message": "Invalid value", "details": [
        {"@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError", "errorCode": "INVALID_ARGUMENT"},
        {"@type": "type.googleapis.com/google.rpc.BadRequest",
         "fieldViolations": [{"field": "message.token", "description": "Invalid registration token"}]}]}});
    type Case = (Reply, fn(&Outcome) -> bool);
    let cases: Vec<Case> = vec![
        (
            error(
                404,
                "NOT_FOUND",
                "UNREGISTERED",
                "Requested entity was not found.",
            ),
            |o| matches!(o, Outcome::DeadToken { reason } if reason.contains("UNREGISTERED")),
        ),
        (Reply::new(400, bad_token.to_string()), |o| {
            matches!(o, Outcome::DeadToken { .. })
        }),
        (
            error(
                400,
                "INVALID_ARGUMENT",
                "INVALID_ARGUMENT",
                "Invalid value at 'message.data'",
            ),
            |o| matches!(o, Outcome::Rejected { .. }),
        ),
        (
            error(
                429,
                "RESOURCE_EXHAUSTED",
                "QUOTA_EXCEEDED",
                "Quota exceeded.",
            )
            .header("retry-after", "17"),
            |o| {
                *o == Outcome::RetryLater {
                    after: Some(Duration::from_secs(17)),
                    reason: "FCM 429 QUOTA_EXCEEDED: Quota exceeded.".into(),
                }
            },
        ),
        (
            error(
                503,
                "UNAVAILABLE",
                "UNAVAILABLE",
                "The service is currently unavailable.",
            ),
            |o| matches!(o, Outcome::RetryLater { after: None, .. }),
        ),
        (
            Reply::new(500, "").header("retry-after", "2"),
            |o| matches!(o, Outcome::RetryLater { after: Some(d), .. } if *d == Duration::from_secs(2)),
        ),
        (
            error(
                403,
                "PERMISSION_DENIED",
                "SENDER_ID_MISMATCH",
                "SenderId mismatch",
            ),
            |o| matches!(o, Outcome::Misconfigured { .. }),
        ),
        (
            error(
                401,
                "UNAUTHENTICATED",
                "THIRD_PARTY_AUTH_ERROR",
                "Auth error from APNS or Web Push Service",
            ),
            |o| matches!(o, Outcome::Misconfigured { .. }),
        ),
    ];
    for (reply, expected) in cases {
        let status = reply.status;
        fcm.script_send([reply]);
        let outcome = pusher.push(&invite()).await;
        assert!(expected(&outcome), "{status}: {outcome:?}");
    }
    // None of these asked for a new access token.
    assert_eq!(fcm.tokens_requested(), 1);
}

#[tokio::test]
async fn the_token_endpoint_refusing_is_misconfiguration_and_its_outage_a_retry() {
    let fcm = Fcm::start().await;
    let pusher = fcm.pusher();
    fcm.script_token([Reply::new(
        400,
        r#"{"error":"invalid_grant","error_description":"Invalid JWT Signature."}"#,
    )]);
    let outcome = pusher.push(&invite()).await;
    assert!(
        matches!(&outcome, Outcome::Misconfigured { reason } if reason.contains("invalid_grant: Invalid JWT Signature.")),
        "{outcome:?}"
    );
    fcm.script_token([Reply::new(503, "").header("retry-after", "5")]);
    assert_eq!(
        pusher.push(&invite()).await,
        Outcome::RetryLater {
            after: Some(Duration::from_secs(5)),
            reason: "FCM token endpoint answered 503 Service Unavailable".into()
        }
    );
    assert!(fcm.sends().is_empty(), "nothing is sent without a token");
    // A failed fetch caches nothing: the next push fetches and sends.
    assert!(matches!(
        pusher.push(&invite()).await,
        Outcome::Accepted { .. }
    ));
    assert_eq!(fcm.tokens_requested(), 3);
}

#[tokio::test]
async fn an_expired_push_is_not_sent() {
    let fcm = Fcm::start().await;
    let pusher = fcm.pusher();
    let mut late = invite();
    late.expires_at = Some(basra_push::Clock::now(&fcm.clock));
    assert_eq!(pusher.push(&late).await, Outcome::Expired);
    assert!(fcm.server.requests().is_empty());
}

#[tokio::test]
async fn at_most_max_in_flight_sends_at_once() {
    let fcm = Fcm::start().await;
    let mut settings = fcm.settings();
    settings.max_in_flight = 2;
    let pusher = Arc::new(fcm.pusher_with(settings));
    // Fetch the token first, so only sends are in flight below.
    pusher.push(&invite()).await;
    fcm.set_send_delay(Duration::from_millis(100));
    let sends: Vec<_> = (0..8)
        .map(|_| {
            let pusher = Arc::clone(&pusher);
            tokio::spawn(async move { pusher.push(&invite()).await })
        })
        .collect();
    for send in sends {
        assert!(matches!(send.await.unwrap(), Outcome::Accepted { .. }));
    }
    assert_eq!(fcm.sends().len(), 9);
    assert_eq!(
        fcm.server.most_in_flight(),
        2,
        "the limit is reached and held"
    );
}

#[tokio::test]
async fn no_answer_is_a_retry() {
    let fcm = Fcm::start().await;
    let mut settings = fcm.settings();
    settings.timeout_ms = 200;
    let pusher = fcm.pusher_with(settings);
    fcm.script_send([Reply::new(200, "{}").after(Duration::from_secs(2))]);
    let outcome = pusher.push(&invite()).await;
    assert!(
        matches!(&outcome, Outcome::RetryLater { after: None, reason } if reason.contains("no answer within 200 ms")),
        "{outcome:?}"
    );
    // Nothing listens on the endpoint: a retry too.
    let closed = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let mut settings = fcm.settings();
    settings.endpoint = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let outcome = fcm.pusher_with(settings).push(&invite()).await;
    assert!(
        matches!(outcome, Outcome::RetryLater { after: None, .. }),
        "{outcome:?}"
    );
}

#[tokio::test]
async fn unusable_credentials_stop_the_pusher_at_its_start_without_quoting_the_key() {
    let fcm = Fcm::start().await;
    let build = |fcm_settings: FcmSettings| {
        Pusher::new(&PushSettings {
            fcm: Some(fcm_settings),
            ..PushSettings::default()
        })
    };
    let missing = build(FcmSettings::new(fcm.keys.path("absent.json"))).unwrap_err();
    assert!(matches!(missing, PushError::Read { .. }), "{missing}");

    let key = fcm.keys.read("service.pem");
    let mut account: serde_json::Value =
        serde_json::from_str(&fcm.keys.read("service-account.json")).unwrap();
    account["private_key"] = serde_json::Value::String(key.replace("MII", "XYZ"));
    std::fs::write(fcm.keys.path("broken.json"), account.to_string()).unwrap();
    let broken = build(FcmSettings::new(fcm.keys.path("broken.json"))).unwrap_err();
    let message = broken.to_string();
    assert!(message.contains("private_key"), "{message}");
    let key_body = key.lines().nth(2).unwrap();
    assert!(!message.contains(key_body));

    let mut plain = fcm.settings();
    plain.endpoint = "http://fcm.example.com".into();
    assert!(matches!(build(plain), Err(PushError::Invalid(_))));

    // A working pusher's Debug output holds no key either.
    let debug = format!("{:?}", fcm.pusher());
    assert!(debug.contains(PROJECT) && !debug.contains(key_body) && !debug.contains("PRIVATE"));
}

#[tokio::test]
async fn apns_without_settings_is_misconfiguration() {
    let fcm = Fcm::start().await;
    let pusher = fcm.pusher();
    let mut apple = invite();
    apple.platform = Platform::Apns;
    assert!(matches!(
        pusher.push(&apple).await,
        Outcome::Misconfigured { .. }
    ));
    assert!(pusher.supports(Platform::Fcm) && !pusher.supports(Platform::Apns));
}
