//! Push delivery from the outbox, against local stand-ins of FCM and APNs
//! (`basra_testkit::push`): what a provider receives (paths, headers, the JWTs verified
//! with the public keys, the payload, the collapse id, the expiry, the text in the
//! device's language), nothing pushed while the player has a feed open, retries after
//! 429 and 503 honouring Retry-After, dropped at expiry, dead tokens removed, quiet hours
//! and the per-player limit, and on PostgreSQL: each push sent once by several replicas,
//! and at most one accepted per notice across a replica killed mid-delivery.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use accounts::push::{PushDeliverySettings, PushNotice, Worker};
use accounts::store::Store;
use accounts::store::prelude::*;
use accounts::store::pushes::{PushDevice, PushLimit, QueuedPush};
use basra_proto::basra::accounts::v1 as pb;
use basra_push::{Locale, Notice, NoticeKind, Platform, Pusher};
use basra_testkit::push::Recorded;
use basra_testkit::push::apns::{self, ApnsStandIn};
use basra_testkit::push::fcm::{self, FcmStandIn};
use chrono::Utc;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use crate::devices::{fcm as fcm_device, guest};
use crate::helpers::{TestApp, authed, test_settings};

const APNS_TOKEN: &str = apns::DEVICE;

/// accounts on `store` pushing through the stand-ins' `providers` settings, with no
/// quiet hours, a quick worker, and `extra` settings.
async fn pushing_app<S: Store>(
    store: S,
    providers: Vec<(String, String)>,
    extra: &[(&str, &str)],
) -> TestApp<S> {
    let mut env: Vec<(String, String)> = [
        ("BASRA_PUSH__ENABLED", "true"),
        ("BASRA_PUSH__QUIET_START", "00:00"),
        ("BASRA_PUSH__QUIET_END", "00:00"),
        ("BASRA_PUSH__POLL_MS", "20"),
        ("BASRA_PUSH__RETRY_FIRST_MS", "100"),
    ]
    .into_iter()
    .chain(extra.iter().copied())
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect();
    env.extend(providers);
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    TestApp::builder(store).env(&env).spawn().await
}

fn invite(from: &str, room: &str, expires_in: Duration) -> PushNotice {
    let at = Utc::now();
    PushNotice {
        notice: Notice::RoomInvite { from: from.into() },
        data: BTreeMap::from([("room".to_owned(), room.to_owned())]),
        collapse_id: format!("invite-{room}"),
        at,
        expires_at: Some(at + chrono::Duration::from_std(expires_in).unwrap()),
    }
}

fn friend_request(from: &str, id: &str) -> PushNotice {
    PushNotice {
        notice: Notice::FriendRequest { from: from.into() },
        data: BTreeMap::from([("notice".to_owned(), id.to_owned())]),
        collapse_id: id.into(),
        at: Utc::now(),
        expires_at: None,
    }
}

fn user(tokens: &pb::AuthTokens) -> Uuid {
    Uuid::parse_str(&tokens.user_id).unwrap()
}

async fn register<S: Store>(
    app: &TestApp<S>,
    who: &pb::AuthTokens,
    req: pb::RegisterPushTokenRequest,
) {
    app.client()
        .await
        .register_push_token(authed(req, &who.access_token))
        .await
        .unwrap();
}

fn apns_device(locale: &str) -> pb::RegisterPushTokenRequest {
    pb::RegisterPushTokenRequest {
        platform: pb::PushPlatform::Apns as i32,
        token: APNS_TOKEN.into(),
        app_id: apns::BUNDLE.into(),
        ..fcm_device("", locale)
    }
}

/// Polls `check` every 20 ms until it holds, for at most `within`.
async fn eventually(what: &str, within: Duration, mut check: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + within;
    while !check() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{what}: not within {within:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn outbox_empties<S: Store>(store: &S) {
    for _ in 0..150 {
        if store.outbox_len().await.unwrap() == 0 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("the outbox still holds pushes");
}

#[tokio::test]
async fn a_notice_reaches_each_device_of_an_offline_player_in_its_language() {
    let (fcm, apns) = (FcmStandIn::start().await, ApnsStandIn::start().await);
    let mut providers = fcm.env();
    providers.extend(apns.env());
    let app = pushing_app(accounts::MemoryStore::new(), providers, &[]).await;
    let layla = guest(&app, "device-layla").await;
    register(&app, &layla, fcm_device("fcm-token-1", "ar-EG")).await;
    register(&app, &layla, apns_device("en-GB")).await;

    let notice = invite("Omar", "R7", Duration::from_secs(600));
    let queued = app
        .service
        .enqueue_pushes(user(&layla), &notice)
        .await
        .unwrap();
    assert_eq!(queued, 2, "one push per device");
    eventually("both providers accepted", Duration::from_secs(5), || {
        fcm.accepted().len() == 1 && apns.accepted().len() == 1
    })
    .await;
    outbox_empties(app.store()).await;
    let expires = notice.expires_at.unwrap().timestamp() as u64;

    // FCM: an access token for the service account's signed assertion, then the send.
    let token_requests = fcm.server.requests_to(fcm::TOKEN_PATH);
    assert_eq!(token_requests.len(), 1);
    let claims = fcm.verify_assertion(&token_requests[0]);
    assert_eq!(
        claims["exp"].as_u64(),
        Some(claims["iat"].as_u64().unwrap() + 3600)
    );
    let send = &fcm.sends()[0];
    assert_eq!(send.method, http::Method::POST);
    assert_eq!(send.header("authorization"), Some("Bearer access-1"));
    let message = &send.json()["message"];
    assert_eq!(message["token"], "fcm-token-1");
    let arabic = notice.notice.text(Locale::Ar);
    assert_eq!(message["notification"]["title"], arabic.title.as_str());
    assert_eq!(message["notification"]["body"], arabic.body.as_str());
    assert_eq!(
        message["data"],
        serde_json::json!({"kind": "room_invite", "room": "R7"})
    );
    let android = &message["android"];
    assert_eq!(android["priority"], "HIGH");
    assert_eq!(android["collapse_key"], "invite-R7");
    assert_eq!(android["notification"]["tag"], "invite-R7");
    assert_eq!(android["restricted_package_name"], "online.basra.app");
    let ttl: u64 = android["ttl"]
        .as_str()
        .unwrap()
        .trim_end_matches('s')
        .parse()
        .unwrap();
    assert!(
        (590..=600).contains(&ttl),
        "ttl {ttl}: the time left of the invite"
    );

    // APNs: HTTP/2, every header, the provider token verified with the key's public half.
    let request = &apns.requests()[0];
    assert_eq!(request.version, http::Version::HTTP_2);
    assert_eq!(request.path, format!("/3/device/{APNS_TOKEN}"));
    assert_eq!(request.header("apns-topic"), Some(apns::BUNDLE));
    assert_eq!(request.header("apns-push-type"), Some("alert"));
    assert_eq!(request.header("apns-priority"), Some("10"));
    assert_eq!(request.header("apns-collapse-id"), Some("invite-R7"));
    assert_eq!(
        request.header("apns-expiration"),
        Some(expires.to_string().as_str())
    );
    let claims = apns.verify(&apns.bearers()[0]);
    assert_eq!(claims["iss"], apns::TEAM_ID);
    let body = request.json();
    let english = notice.notice.text(Locale::En);
    assert_eq!(body["aps"]["alert"]["title"], english.title.as_str());
    assert_eq!(body["aps"]["alert"]["body"], english.body.as_str());
    assert_eq!(
        (&body["kind"], &body["room"]),
        (&"room_invite".into(), &"R7".into())
    );
}

#[tokio::test]
async fn nothing_is_pushed_while_the_player_has_a_feed_open() {
    let fcm = FcmStandIn::start().await;
    let app = pushing_app(accounts::MemoryStore::new(), fcm.env(), &[]).await;
    let layla = guest(&app, "device-layla").await;
    register(&app, &layla, fcm_device("fcm-token-1", "en")).await;
    let feed = app
        .client()
        .await
        .watch_friends(authed(
            pb::WatchFriendsRequest { last_seen_seq: 0 },
            &layla.access_token,
        ))
        .await
        .unwrap()
        .into_inner();
    let queued = app
        .service
        .enqueue_pushes(user(&layla), &friend_request("Omar", "n1"))
        .await
        .unwrap();
    assert_eq!(queued, 0, "the app is open: the feed shows it");
    assert_eq!(app.store().outbox_len().await.unwrap(), 0);

    // The app closes (its last feed ends): the next notice is pushed.
    drop(feed);
    let mut queued = 0;
    for _ in 0..100 {
        queued = app
            .service
            .enqueue_pushes(user(&layla), &friend_request("Omar", "n2"))
            .await
            .unwrap();
        if queued > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(queued, 1);
    eventually("the push", Duration::from_secs(5), || {
        fcm.accepted().len() == 1
    })
    .await;
    assert_eq!(fcm.sends().len(), 1);
    assert_eq!(
        fcm.sends()[0].json()["message"]["android"]["collapse_key"],
        "n2"
    );
}

#[tokio::test]
async fn a_push_is_retried_after_429_and_503_no_sooner_than_retry_after() {
    let fcm = FcmStandIn::start().await;
    fcm.script_send([
        fcm::error(429, "RESOURCE_EXHAUSTED", "QUOTA_EXCEEDED", "slow down")
            .header("retry-after", "1"),
        fcm::error(503, "UNAVAILABLE", "UNAVAILABLE", "later").header("retry-after", "1"),
    ]);
    let app = pushing_app(accounts::MemoryStore::new(), fcm.env(), &[]).await;
    let layla = guest(&app, "device-layla").await;
    register(&app, &layla, fcm_device("fcm-token-1", "en")).await;
    app.service
        .enqueue_pushes(user(&layla), &friend_request("Omar", "n1"))
        .await
        .unwrap();
    eventually("the third try accepted", Duration::from_secs(8), || {
        fcm.accepted().len() == 1
    })
    .await;
    outbox_empties(app.store()).await;
    let sends = fcm.sends();
    assert_eq!(sends.len(), 3);
    for pair in sends.windows(2) {
        let gap = pair[1].received.duration_since(pair[0].received).unwrap();
        assert!(
            gap >= Duration::from_secs(1),
            "retried after {gap:?}, before Retry-After"
        );
    }
    // The same push each time: the device would show one.
    let collapse: Vec<_> = sends
        .iter()
        .map(|s| s.json()["message"]["android"]["collapse_key"].clone())
        .collect();
    assert!(collapse.iter().all(|c| c == "n1"), "{collapse:?}");
    assert_eq!(
        app.store().push_devices(user(&layla)).await.unwrap().len(),
        1
    );
}

#[tokio::test]
async fn a_push_that_cannot_be_sent_before_its_expiry_is_dropped() {
    let fcm = FcmStandIn::start().await;
    fcm.script_send([
        fcm::error(503, "UNAVAILABLE", "UNAVAILABLE", "later").header("retry-after", "5")
    ]);
    let app = pushing_app(accounts::MemoryStore::new(), fcm.env(), &[]).await;
    let layla = guest(&app, "device-layla").await;
    register(&app, &layla, fcm_device("fcm-token-1", "en")).await;
    let notice = invite("Omar", "R1", Duration::from_secs(2));
    app.service
        .enqueue_pushes(user(&layla), &notice)
        .await
        .unwrap();
    eventually("one try", Duration::from_secs(5), || fcm.sends().len() == 1).await;
    outbox_empties(app.store()).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(fcm.sends().len(), 1, "not retried past its expiry");
}

#[tokio::test]
async fn tokens_answered_dead_are_removed() {
    let (fcm, apns) = (FcmStandIn::start().await, ApnsStandIn::start().await);
    fcm.script_send([fcm::error(404, "NOT_FOUND", "UNREGISTERED", "gone")]);
    apns.script([apns::reason(410, "Unregistered")]);
    let mut providers = fcm.env();
    providers.extend(apns.env());
    let app = pushing_app(accounts::MemoryStore::new(), providers, &[]).await;
    let layla = guest(&app, "device-layla").await;
    register(&app, &layla, fcm_device("fcm-token-1", "en")).await;
    register(&app, &layla, apns_device("en")).await;
    app.service
        .enqueue_pushes(user(&layla), &friend_request("Omar", "n1"))
        .await
        .unwrap();
    let store = app.store().clone();
    let id = user(&layla);
    for _ in 0..250 {
        if store.push_devices(id).await.unwrap().is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        store.push_devices(id).await.unwrap().is_empty(),
        "both tokens removed"
    );
    assert_eq!(store.outbox_len().await.unwrap(), 0);
    assert_eq!((fcm.sends().len(), apns.requests().len()), (1, 1));

    // APNs's BadDeviceToken removes the token too.
    apns.script([apns::reason(400, "BadDeviceToken")]);
    register(&app, &layla, apns_device("en")).await;
    app.service
        .enqueue_pushes(id, &friend_request("Omar", "n2"))
        .await
        .unwrap();
    for _ in 0..250 {
        if store.push_devices(id).await.unwrap().is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(store.push_devices(id).await.unwrap().is_empty());
}

#[tokio::test]
async fn quiet_hours_hold_pushes_and_the_per_player_limit_holds_notices() {
    let fcm = FcmStandIn::start().await;
    // Quiet all day but a minute, in every time zone: the push waits.
    let app = pushing_app(
        accounts::MemoryStore::new(),
        fcm.env(),
        &[
            ("BASRA_PUSH__QUIET_START", "00:00"),
            ("BASRA_PUSH__QUIET_END", "23:59"),
            ("BASRA_PUSH__MAX_PER_PLAYER", "2"),
        ],
    )
    .await;
    let layla = guest(&app, "device-layla").await;
    // A device whose local time is 12:00 now.
    let now = Utc::now().timestamp().rem_euclid(86_400) / 60;
    let mut device = fcm_device("fcm-token-1", "en");
    device.utc_offset_minutes = ((12 * 60 - now + 720).rem_euclid(1440) - 720) as i32;
    register(&app, &layla, device).await;
    let id = user(&layla);
    assert_eq!(
        app.service
            .enqueue_pushes(id, &friend_request("Omar", "n1"))
            .await
            .unwrap(),
        1
    );
    // An invite lapsing before the quiet hours end is not queued at all.
    assert_eq!(
        app.service
            .enqueue_pushes(id, &invite("Omar", "R1", Duration::from_secs(600)))
            .await
            .unwrap(),
        0
    );
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(fcm.sends().is_empty(), "nothing sent during quiet hours");
    assert_eq!(app.store().outbox_len().await.unwrap(), 1);
    // The limit: two notices per window, then none.
    assert_eq!(
        app.service
            .enqueue_pushes(id, &friend_request("Amr", "n3"))
            .await
            .unwrap(),
        1
    );
    assert_eq!(
        app.service
            .enqueue_pushes(id, &friend_request("Aya", "n4"))
            .await
            .unwrap(),
        0
    );
    assert_eq!(app.store().outbox_len().await.unwrap(), 2);
}

// ---- On PostgreSQL: several replicas on one outbox. ----

/// `[push]` for a worker of the test's own: FCM at `fcm`, a lease of `lease`.
fn worker_settings(fcm: &FcmStandIn, lease_seconds: u64) -> PushDeliverySettings {
    let mut settings = test_settings(&[]).push;
    let mut provider = fcm.settings();
    provider.timeout_ms = 1000;
    settings.fcm = Some(provider);
    settings.enabled = true;
    settings.lease_seconds = lease_seconds;
    settings.poll_ms = 20;
    settings.validate().expect("valid worker settings");
    settings
}

/// `players` players each with one FCM device and one notice in the outbox (collapse id
/// `notice-N`).
async fn fill_outbox(store: &accounts::PgStore, players: usize) {
    let limit = PushLimit {
        max: 10,
        window: Duration::from_secs(3600),
    };
    for n in 0..players {
        let id = Uuid::now_v7();
        sqlx::query(
            "INSERT INTO users (id, display_name, is_guest, created_at) VALUES ($1, $2, true, now())",
        )
        .bind(id)
        .bind(format!("Guest {n}"))
        .execute(store.pool())
        .await
        .unwrap();
        let token = format!("fcm-token-{n}");
        store
            .register_push_device(
                id,
                PushDevice {
                    token: token.clone(),
                    platform: Platform::Fcm,
                    app_id: "online.basra.app".into(),
                    locale: "en".into(),
                    app_version: "1".into(),
                    utc_offset_minutes: 0,
                    registered_at: Utc::now(),
                },
            )
            .await
            .unwrap();
        let now = Utc::now();
        let push = QueuedPush {
            id: Uuid::now_v7(),
            token,
            kind: NoticeKind::FriendRequest,
            param: "Omar".into(),
            data: BTreeMap::new(),
            collapse_id: format!("notice-{n}"),
            noticed_at: now,
            expires_at: now + chrono::Duration::minutes(10),
            due_at: now,
        };
        store
            .enqueue_pushes(id, vec![push], limit, now)
            .await
            .unwrap();
    }
}

/// How many times each collapse id was accepted.
fn accepted_per_notice(accepted: &[Recorded]) -> HashMap<String, usize> {
    let mut per = HashMap::new();
    for send in accepted {
        let id = send.json()["message"]["android"]["collapse_key"]
            .as_str()
            .unwrap()
            .to_owned();
        *per.entry(id).or_default() += 1;
    }
    per
}

fn worker(store: accounts::PgStore, settings: &PushDeliverySettings) -> Worker<accounts::PgStore> {
    let pusher = Pusher::new(&settings.providers()).unwrap();
    Worker::new(store, Arc::new(pusher), settings, Default::default())
}

#[sqlx::test(migrations = "./migrations")]
async fn two_replicas_send_each_push_once(pool: sqlx::PgPool) {
    let fcm = FcmStandIn::start().await;
    fcm.set_send_delay(Duration::from_millis(50));
    let store = accounts::PgStore::new(pool);
    fill_outbox(&store, 200).await;
    let mut settings = worker_settings(&fcm, 3);
    // Few at a time, so that both replicas claim all along.
    settings.in_flight = 8;
    let stop = CancellationToken::new();
    let one = worker(store.clone(), &settings).spawn(stop.clone());
    let two = worker(store.clone(), &settings).spawn(stop.clone());
    eventually("200 accepted", Duration::from_secs(20), || {
        fcm.accepted().len() >= 200
    })
    .await;
    outbox_empties(&store).await;
    stop.cancel();
    let _ = tokio::join!(one, two);
    let per = accepted_per_notice(&fcm.accepted());
    assert_eq!(per.len(), 200);
    assert!(per.values().all(|n| *n == 1), "a push sent twice: {per:?}");
    assert_eq!(fcm.sends().len(), 200, "no push even sent twice");
}

#[sqlx::test(migrations = "./migrations")]
async fn at_most_one_push_per_notice_is_accepted_across_a_replica_killed_mid_delivery(
    pool: sqlx::PgPool,
) {
    const NOTICES: usize = 20;
    let fcm = FcmStandIn::start().await;
    let store = accounts::PgStore::new(pool.clone());
    fill_outbox(&store, NOTICES).await;
    let settings = worker_settings(&fcm, 3);

    // Replica A runs on a runtime of its own, with its own pool and connections; the
    // stand-in holds its sends (no answer for 900 ms) and A is killed meanwhile: its
    // runtime dropped at once, its sockets closed, nothing of it settling anything.
    fcm.set_send_delay(Duration::from_millis(900));
    let killed = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let options = pool.connect_options().as_ref().clone();
    let a_settings = settings.clone();
    killed.spawn(async move {
        let store = accounts::PgStore::connect_with(options, 2).await.unwrap();
        worker(store, &a_settings)
            .run(CancellationToken::new())
            .await;
    });
    eventually("A's sends received", Duration::from_secs(10), || {
        fcm.sends().len() == NOTICES
    })
    .await;
    killed.shutdown_background();
    let a_first = fcm.sends()[0].received;
    fcm.set_send_delay(Duration::ZERO);
    tokio::time::sleep(Duration::from_millis(1000)).await;
    assert!(
        fcm.accepted().is_empty(),
        "A's sends were never answered: it died first"
    );

    // Replica B finds the pushes claimed until A's lease lapses, then sends each once.
    let stop = CancellationToken::new();
    let b = worker(store.clone(), &settings).spawn(stop.clone());
    eventually("every notice accepted", Duration::from_secs(15), || {
        fcm.accepted().len() >= NOTICES
    })
    .await;
    outbox_empties(&store).await;
    stop.cancel();
    b.await.unwrap();
    let accepted = fcm.accepted();
    let per = accepted_per_notice(&accepted);
    assert_eq!(per.len(), NOTICES, "every notice reached the stand-in");
    assert!(
        per.values().all(|n| *n == 1),
        "at most one per notice: {per:?}"
    );
    let b_first = accepted.iter().map(|r| r.received).min().unwrap();
    let waited = b_first.duration_since(a_first).unwrap();
    assert!(
        waited >= Duration::from_millis(2500),
        "B sent {waited:?} after A: before A's claims (3 s) lapsed"
    );
    // A's sends reached the stand-in unanswered; B's carry the same collapse ids, so a
    // device that got both would show one.
    assert_eq!(fcm.sends().len(), 2 * NOTICES);
}
