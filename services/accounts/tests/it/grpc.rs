//! The accounts service through real tonic clients, against the server bound
//! to 127.0.0.1:0: once on PostgreSQL (a fresh database per test; fails when
//! PostgreSQL is unreachable) and once on the in-memory store.

use std::time::Duration;

use crate::helpers::{TestApp, authed, spawn_app, test_settings, tokens};
use accounts::store::Store;
use basra_proto::basra::accounts::v1 as pb;
use basra_proto::basra::common::v1 as common_pb;
use tonic::Code;
use uuid::Uuid;

on_both_stores! {
    cases in cases {
        account_lifecycle,
        record_match_is_idempotent_and_rates_once,
        bad_sign_up_input_is_refused_and_writes_nothing,
        wrong_credentials_are_indistinguishable,
        bad_refresh_tokens_are_refused,
        record_match_needs_a_service_token_and_a_sane_record,
        record_matches_rates_in_order_exactly_like_record_match,
        record_matches_refuses_a_bad_batch_and_writes_nothing,
        get_players_answers_services_with_names_and_ratings,
        forged_and_expired_access_tokens_are_refused,
        login_attempts_are_rate_limited_per_account_and_per_peer,
        sign_ups_are_rate_limited_per_address_and_in_all,
        pagination_through_grpc,
        display_names_are_checked_and_changes_are_limited,
        health_and_reflection_answer,
        friends_through_grpc,
        bad_friend_requests_get_clear_statuses_and_write_nothing,
        each_sign_in_notes_the_client_app_it_came_from,
    }
}

/// `(code, message)` of a failed call.
pub(crate) fn failure<T: std::fmt::Debug>(
    result: Result<tonic::Response<T>, tonic::Status>,
) -> (Code, String) {
    let status = result.expect_err("the call should fail");
    (status.code(), status.message().to_owned())
}

/// `message` as if forwarded by a proxy for `client`.
fn forwarded_for<T>(message: T, client: &str) -> tonic::Request<T> {
    let mut request = tonic::Request::new(message);
    request
        .metadata_mut()
        .insert("x-forwarded-for", client.parse().unwrap());
    request
}

/// Asserts a sign-up limit's answer: RESOURCE_EXHAUSTED, a message and a retry hint
/// (`google.rpc.RetryInfo`, and the `retry-after-ms` metadata of the last release).
fn assert_sign_up_limited<T: std::fmt::Debug>(result: Result<tonic::Response<T>, tonic::Status>) {
    let status = result.expect_err("the sign-up should be limited");
    assert_eq!(status.code(), Code::ResourceExhausted, "{status:?}");
    assert!(status.message().contains("too many sign-ups"), "{status:?}");
    let retry_ms: u64 = status
        .metadata()
        .get(basra_platform::error::RETRY_AFTER_MS)
        .expect("a retry hint")
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(retry_ms >= 1, "{retry_ms}");
    let retry = basra_platform::error::retry_after_of(&status).expect("google.rpc.RetryInfo");
    assert_eq!(
        u64::try_from(retry.as_millis()).unwrap(),
        retry_ms,
        "RetryInfo and the old metadata say the same"
    );
}

/// Behind a trusted proxy each forwarded client has its own sign-up budget; a client
/// connecting directly cannot pick one by sending the header itself.
#[tokio::test]
async fn forwarded_addresses_count_only_from_trusted_proxies() {
    let limited = [("BASRA_SIGNUP_LIMITS__PER_ADDRESS_MAX", "2")];
    let mut settings = test_settings(&limited);
    settings.server.trusted_proxies = vec!["127.0.0.0/8".parse().unwrap()];
    let app = TestApp::builder(accounts::MemoryStore::new())
        .settings(settings)
        .spawn()
        .await;
    let mut client = app.client().await;
    for client_ip in ["198.51.100.1", "198.51.100.2"] {
        for i in 0..2 {
            let device = format!("{client_ip}-{i}");
            client
                .guest_login(forwarded_for(guest_req(&device), client_ip))
                .await
                .expect("within this client's own budget");
        }
        assert_sign_up_limited(
            client
                .guest_login(forwarded_for(guest_req("one-more"), client_ip))
                .await,
        );
    }

    // Not trusted: the header is ignored and every call spends the peer's budget.
    let app = TestApp::builder(accounts::MemoryStore::new())
        .env(&limited)
        .spawn()
        .await;
    let mut client = app.client().await;
    for i in 0..2 {
        let spoofed = format!("203.0.113.{i}");
        client
            .guest_login(forwarded_for(guest_req(&format!("d{i}")), &spoofed))
            .await
            .unwrap();
    }
    assert_sign_up_limited(
        client
            .guest_login(forwarded_for(guest_req("d9"), "203.0.113.99"))
            .await,
    );
}

/// With PostgreSQL unreachable, a call is answered UNAVAILABLE within the pool's
/// acquire timeout, before a client's 3 s deadline.
#[tokio::test]
async fn an_unreachable_database_answers_unavailable_promptly() {
    // Nothing listens on port 1: every connection attempt is refused.
    let store =
        accounts::PgStore::connect_lazy("postgres://postgres@127.0.0.1:1/postgres", 4).unwrap();
    let app = TestApp::builder(store).env(&[]).spawn().await;
    let mut client = app.client().await;
    // With a 3 s deadline: a slower answer would be DEADLINE_EXCEEDED instead.
    let mut request = tonic::Request::new(guest_req("device-1"));
    request.set_timeout(Duration::from_secs(3));
    let status = client.guest_login(request).await.unwrap_err();
    assert_eq!(status.code(), Code::Unavailable, "{status:?}");
    assert!(status.message().contains("retry"), "{status:?}");
}

pub(crate) fn guest_req(device: &str) -> pb::GuestLoginRequest {
    pb::GuestLoginRequest {
        device_id: device.into(),
        display_name: String::new(),
    }
}

pub(crate) fn register_req(username: &str, password: &str) -> pb::RegisterRequest {
    pb::RegisterRequest {
        username: username.into(),
        password: password.into(),
        display_name: String::new(),
    }
}

pub(crate) fn login_req(username: &str, password: &str) -> pb::LoginRequest {
    pb::LoginRequest {
        username: username.into(),
        password: password.into(),
    }
}

fn refresh_req(token: &str) -> pb::RefreshRequest {
    pb::RefreshRequest {
        refresh_token: token.into(),
    }
}

fn ts(seconds: i64) -> prost_types::Timestamp {
    prost_types::Timestamp { seconds, nanos: 0 }
}

/// A well-formed finished duel between `a` (seat 0, the winner) and `b`.
pub(crate) fn match_record(match_id: &str, a: &str, b: &str, ranked: bool) -> pb::MatchRecord {
    let card = |rank: common_pb::Rank, suit: common_pb::Suit| common_pb::Card {
        rank: rank as i32,
        suit: suit as i32,
    };
    pb::MatchRecord {
        match_id: match_id.into(),
        room_id: "room-1".into(),
        ranked,
        settings: Some(common_pb::RuleSettings {
            seats: Some(2),
            ..Default::default()
        }),
        seats: vec![
            pb::RecordedSeat {
                seat: 0,
                user_id: a.into(),
                is_bot: false,
                display_name: "A".into(),
                ..Default::default()
            },
            pb::RecordedSeat {
                seat: 1,
                user_id: b.into(),
                is_bot: false,
                display_name: "B".into(),
                ..Default::default()
            },
        ],
        seed: vec![9; 32],
        actions: vec![
            pb::RecordedAction {
                seat: 1,
                automatic: false,
                at: Some(ts(1_800_000_010)),
                action: Some(pb::recorded_action::Action::Play(pb::RecordedPlay {
                    card: Some(card(common_pb::Rank::Seven, common_pb::Suit::Diamonds)),
                    capture_choice: Some(pb::RecordedCapture {
                        cards: vec![card(common_pb::Rank::Three, common_pb::Suit::Clubs)],
                    }),
                })),
            },
            pb::RecordedAction {
                seat: 0,
                automatic: true,
                at: Some(ts(1_800_000_020)),
                action: Some(pb::recorded_action::Action::Resign(pb::RecordedResign {})),
            },
        ],
        rounds: vec![pb::RoundRecord {
            round: 1,
            dealer: 0,
            sides: (0..2)
                .map(|side| common_pb::SideRoundScore {
                    side,
                    pile_size: 26,
                    basras: Some(common_pb::BasraCounts {
                        basra: 1,
                        jack: 0,
                        komi: 0,
                    }),
                    basra_points: 10,
                    majority_points: 0,
                    card_points: 0,
                    round_points: 10,
                    total: 10,
                })
                .collect(),
        }],
        final_totals: vec![110, 10],
        basra_counts: vec![
            common_pb::BasraCounts {
                basra: 3,
                jack: 1,
                komi: 0,
            },
            common_pb::BasraCounts {
                basra: 1,
                jack: 0,
                komi: 0,
            },
        ],
        winner_side: Some(0),
        end_reason: common_pb::MatchEndReason::TargetReached as i32,
        started_at: Some(ts(1_800_000_000)),
        ended_at: Some(ts(1_800_000_600)),
        ..Default::default()
    }
}

/// base64url without padding, for hand-made tokens.
fn b64url(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | u32::from(*b) << (16 - 8 * i));
        for i in 0..=chunk.len() {
            out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
        }
    }
    out
}

/// The display name in the caller's own profile.
async fn own_name<S: Store>(app: &TestApp<S>, token: &str) -> String {
    app.client()
        .await
        .get_profile(authed(pb::GetProfileRequest::default(), token))
        .await
        .unwrap()
        .into_inner()
        .profile
        .unwrap()
        .display_name
}

pub(crate) async fn register<S: Store>(app: &TestApp<S>, username: &str) -> pb::AuthTokens {
    let mut client = app.client().await;
    tokens(
        client
            .register(register_req(username, "correct horse battery"))
            .await
            .unwrap()
            .into_inner()
            .tokens,
    )
}

/// Records RecordMatch refuses, each with how its message starts: malformed, or (the
/// unknown user) refused by the store after the match row was written.
fn bad_records(a: &str, b: &str) -> Vec<(pb::MatchRecord, &'static str)> {
    let record = || match_record("m-1", a, b, true);
    let mut bad_cases: Vec<(pb::MatchRecord, &'static str)> = Vec::new();
    let mut r = record();
    r.match_id.clear();
    bad_cases.push((r, "record.match_id"));
    let mut r = record();
    r.seats.pop();
    bad_cases.push((r, "record.seats: has 1 seats but settings.seats is 2"));
    let mut r = record();
    r.seats[1].user_id = a.to_owned();
    bad_cases.push((r, "record.seats: seat 1: user"));
    let mut r = record();
    r.seats[1].user_id = Uuid::now_v7().to_string();
    bad_cases.push((r, "record.seats: seat 1: unknown user"));
    let mut r = record();
    r.seed = vec![1; 31];
    bad_cases.push((r, "record.seed: must be 32 bytes"));
    let mut r = record();
    r.settings = Some(common_pb::RuleSettings {
        seats: Some(3),
        ..Default::default()
    });
    bad_cases.push((r, "record: settings.seats must be 2 or 4"));
    let mut r = record();
    r.winner_side = Some(2);
    bad_cases.push((r, "record.winner_side"));
    let mut r = record();
    r.end_reason = 0;
    bad_cases.push((r, "record.end_reason"));
    let mut r = record();
    r.ended_at = Some(ts(1));
    bad_cases.push((r, "record.ended_at: is before started_at"));
    let mut r = record();
    r.actions[0].action = None;
    bad_cases.push((r, "record.actions: action 0"));
    bad_cases
}

mod cases {
    use super::*;

    /// GuestLogin, Register and Login note the `basra-client` metadata (platform and
    /// version) of the sign-in; a call without it or with a malformed one notes nothing
    /// and is served the same.
    pub(super) async fn each_sign_in_notes_the_client_app_it_came_from<S: Store>(store: S) {
        let app = spawn_app(store).await;
        let mut client = app.client().await;
        let with_client = |message: pb::GuestLoginRequest, value: &str| {
            let mut request = tonic::Request::new(message);
            request
                .metadata_mut()
                .insert("basra-client", value.parse().unwrap());
            request
        };
        let guest = tokens(
            client
                .guest_login(with_client(guest_req("device-c"), "Web/1.2.0"))
                .await
                .unwrap()
                .into_inner()
                .tokens,
        );
        let user = Uuid::parse_str(&guest.user_id).unwrap();
        // Malformed, then none: served, nothing noted.
        client
            .guest_login(with_client(guest_req("device-c"), "web 1.2.0"))
            .await
            .unwrap();
        client.guest_login(guest_req("device-c")).await.unwrap();
        let mut upgrade = tonic::Request::new(pb::RegisterRequest {
            username: "clientele".into(),
            password: "a long enough passphrase".into(),
            display_name: String::new(),
        });
        upgrade.metadata_mut().insert(
            "authorization",
            format!("Bearer {}", guest.access_token).parse().unwrap(),
        );
        upgrade
            .metadata_mut()
            .insert("basra-client", "android/2.0.3".parse().unwrap());
        client.register(upgrade).await.unwrap();
        let mut login = tonic::Request::new(pb::LoginRequest {
            username: "clientele".into(),
            password: "a long enough passphrase".into(),
        });
        login
            .metadata_mut()
            .insert("basra-client", "cli/0.1.0".parse().unwrap());
        client.login(login).await.unwrap();
        let noted: Vec<String> = app
            .service
            .store()
            .sign_in_clients(user)
            .await
            .unwrap()
            .into_iter()
            .map(|(c, _)| c.to_string())
            .collect();
        assert_eq!(noted, ["web/1.2.0", "android/2.0.3", "cli/0.1.0"]);
    }

    pub(super) async fn account_lifecycle<S: Store>(store: S) {
        let app = spawn_app(store).await;
        let mut client = app.client().await;

        // Guest sign-in: the same device gives the same account.
        let guest = tokens(
            client
                .guest_login(pb::GuestLoginRequest {
                    device_id: "device-1".into(),
                    display_name: "Layla".into(),
                })
                .await
                .unwrap()
                .into_inner()
                .tokens,
        );
        assert!(guest.is_guest);
        assert_eq!(guest.display_name, "Layla");
        let expires =
            guest.access_token_expires_at.unwrap().seconds - chrono::Utc::now().timestamp();
        assert!(
            (890..=900).contains(&expires),
            "15-minute access tokens, got {expires}s"
        );
        let again = tokens(
            client
                .guest_login(guest_req("device-1"))
                .await
                .unwrap()
                .into_inner()
                .tokens,
        );
        assert_eq!(again.user_id, guest.user_id);
        assert_eq!(again.display_name, "Layla");
        assert_ne!(again.refresh_token, guest.refresh_token);

        let profile = client
            .get_profile(authed(
                pb::GetProfileRequest::default(),
                &guest.access_token,
            ))
            .await
            .unwrap()
            .into_inner()
            .profile
            .unwrap();
        assert!(profile.is_guest);
        assert_eq!((profile.rating, profile.rating_deviation), (1500.0, 350.0));
        assert_eq!(profile.username, "");

        // Register with the guest's token: an upgrade in place.
        let registered = client
            .register(authed(
                register_req("Alice", "correct horse battery"),
                &guest.access_token,
            ))
            .await
            .unwrap()
            .into_inner();
        assert!(registered.upgraded_guest);
        let alice = tokens(registered.tokens);
        assert_eq!(alice.user_id, guest.user_id);
        assert!(!alice.is_guest);
        assert_eq!(alice.display_name, "Layla", "the guest's name is kept");
        // The guest's refresh tokens died with the upgrade; the device now
        // has to use Login.
        let (code, _) = failure(client.refresh(refresh_req(&again.refresh_token)).await);
        assert_eq!(code, Code::Unauthenticated);
        let (code, message) = failure(client.guest_login(guest_req("device-1")).await);
        assert_eq!(code, Code::FailedPrecondition, "{message}");
        assert!(message.contains("Login"), "{message}");
        // A registered account cannot register again.
        let (code, _) = failure(
            client
                .register(authed(
                    register_req("alice2", "correct horse battery"),
                    &alice.access_token,
                ))
                .await,
        );
        assert_eq!(code, Code::FailedPrecondition);

        // Login is case-insensitive on the username.
        let login = tokens(
            client
                .login(login_req("ALICE", "correct horse battery"))
                .await
                .unwrap()
                .into_inner()
                .tokens,
        );
        assert_eq!(login.user_id, alice.user_id);

        // Refresh rotates; replaying the old token revokes the family.
        let rotated = tokens(
            client
                .refresh(refresh_req(&login.refresh_token))
                .await
                .unwrap()
                .into_inner()
                .tokens,
        );
        assert_eq!(rotated.user_id, alice.user_id);
        assert_ne!(rotated.refresh_token, login.refresh_token);
        assert_ne!(rotated.access_token, login.access_token);
        let (code, message) = failure(client.refresh(refresh_req(&login.refresh_token)).await);
        assert_eq!(code, Code::Unauthenticated);
        assert!(message.contains("sign in again"), "{message}");
        let (code, _) = failure(client.refresh(refresh_req(&rotated.refresh_token)).await);
        assert_eq!(code, Code::Unauthenticated, "the whole family is revoked");
        // Other sign-ins are untouched.
        let registered_session = tokens(
            client
                .refresh(refresh_req(&alice.refresh_token))
                .await
                .unwrap()
                .into_inner()
                .tokens,
        );

        // Logout revokes this sign-in; it is idempotent and needs no access token.
        let session = tokens(
            client
                .login(login_req("alice", "correct horse battery"))
                .await
                .unwrap()
                .into_inner()
                .tokens,
        );
        let logout = || pb::LogoutRequest {
            refresh_token: session.refresh_token.clone(),
            ..Default::default()
        };
        client.logout(logout()).await.unwrap();
        client.logout(logout()).await.unwrap();
        let (code, _) = failure(client.refresh(refresh_req(&session.refresh_token)).await);
        assert_eq!(code, Code::Unauthenticated);
        // Signing out everywhere needs the access token.
        let (code, _) = failure(
            client
                .logout(pb::LogoutRequest {
                    all_sessions: true,
                    ..Default::default()
                })
                .await,
        );
        assert_eq!(code, Code::Unauthenticated);
        client
            .logout(authed(
                pb::LogoutRequest {
                    all_sessions: true,
                    ..Default::default()
                },
                &registered_session.access_token,
            ))
            .await
            .unwrap();
        let (code, _) = failure(
            client
                .refresh(refresh_req(&registered_session.refresh_token))
                .await,
        );
        assert_eq!(code, Code::Unauthenticated);

        // Profile, leaderboard and history after a ranked match.
        let bob = register(&app, "bob").await;
        let record = match_record("match-1", &alice.user_id, &bob.user_id, true);
        client
            .record_match(authed(
                pb::RecordMatchRequest {
                    record: Some(record),
                },
                &app.service_token(),
            ))
            .await
            .unwrap();
        let me = client
            .get_profile(authed(
                pb::GetProfileRequest::default(),
                &login.access_token,
            ))
            .await
            .unwrap()
            .into_inner()
            .profile
            .unwrap();
        assert_eq!(me.username, "Alice");
        assert!(!me.is_guest);
        assert!(me.rating > 1500.0);
        assert_eq!(
            (me.ranked_matches, me.matches_played, me.wins, me.losses),
            (1, 1, 1, 0)
        );
        assert_eq!(me.basras.unwrap().basra, 3);
        assert_eq!(me.leaderboard_rank, Some(1));
        let theirs = client
            .get_profile(authed(
                pb::GetProfileRequest {
                    user_id: bob.user_id.clone(),
                },
                &login.access_token,
            ))
            .await
            .unwrap()
            .into_inner()
            .profile
            .unwrap();
        assert_eq!(
            theirs.username, "",
            "another player's login name is private"
        );
        assert_eq!(theirs.losses, 1);
        let (code, _) = failure(
            client
                .get_profile(authed(
                    pb::GetProfileRequest {
                        user_id: Uuid::now_v7().to_string(),
                    },
                    &login.access_token,
                ))
                .await,
        );
        assert_eq!(code, Code::NotFound);

        let board = client
            .leaderboard(authed(pb::LeaderboardRequest::default(), &bob.access_token))
            .await
            .unwrap()
            .into_inner();
        let ranks: Vec<(u32, &str)> = board
            .entries
            .iter()
            .map(|e| (e.rank, e.user_id.as_str()))
            .collect();
        assert_eq!(
            ranks,
            vec![(1, alice.user_id.as_str()), (2, bob.user_id.as_str())]
        );
        assert_eq!(board.next_page_token, "");
        assert_eq!(board.caller.unwrap().rank, 2);

        let history = client
            .match_history(authed(
                pb::MatchHistoryRequest::default(),
                &login.access_token,
            ))
            .await
            .unwrap()
            .into_inner();
        assert_eq!(history.matches.len(), 1);
        let m = &history.matches[0];
        assert_eq!(
            (m.match_id.as_str(), m.your_seat, m.winner_side, m.rounds),
            ("match-1", 0, Some(0), 1)
        );
        assert_eq!(m.final_totals, vec![110, 10]);
        assert_eq!(m.settings.unwrap().target_score, Some(101));
        assert_eq!(m.started_at.unwrap().seconds, 1_800_000_000);
        assert!(m.your_rating_change.as_ref().unwrap().rating_after > 1500.0);
        let bob_history = client
            .match_history(authed(
                pb::MatchHistoryRequest::default(),
                &bob.access_token,
            ))
            .await
            .unwrap()
            .into_inner();
        assert_eq!(bob_history.matches[0].your_seat, 1);
    }

    pub(super) async fn record_match_is_idempotent_and_rates_once<S: Store>(store: S) {
        let app = spawn_app(store).await;
        let mut client = app.client().await;
        let a = register(&app, "alice").await;
        let b = register(&app, "bob").await;
        let service = app.service_token();
        let send = |record: pb::MatchRecord| {
            authed(
                pb::RecordMatchRequest {
                    record: Some(record),
                },
                &service,
            )
        };

        let first = client
            .record_match(send(match_record("m-1", &a.user_id, &b.user_id, true)))
            .await
            .unwrap()
            .into_inner();
        assert!(!first.already_recorded);
        assert_eq!(first.rating_changes.len(), 2);
        assert_eq!(first.rating_changes[0].user_id, a.user_id);
        assert!(first.rating_changes[0].rating_after > first.rating_changes[0].rating_before);
        assert!(first.rating_changes[1].rating_after < first.rating_changes[1].rating_before);

        let second = client
            .record_match(send(match_record("m-1", &a.user_id, &b.user_id, true)))
            .await
            .unwrap()
            .into_inner();
        assert!(second.already_recorded);
        assert_eq!(second.rating_changes, first.rating_changes);
        assert_eq!(app.counts().await.matches, 1);

        let profile = client
            .get_profile(authed(pb::GetProfileRequest::default(), &a.access_token))
            .await
            .unwrap()
            .into_inner()
            .profile
            .unwrap();
        assert_eq!(
            profile.rating, first.rating_changes[0].rating_after,
            "rated once"
        );
        assert_eq!((profile.ranked_matches, profile.matches_played), (1, 1));

        // Unranked: recorded, no rating change.
        let unranked = client
            .record_match(send(match_record("m-2", &a.user_id, &b.user_id, false)))
            .await
            .unwrap()
            .into_inner();
        assert!(unranked.rating_changes.is_empty());
        let profile = client
            .get_profile(authed(pb::GetProfileRequest::default(), &a.access_token))
            .await
            .unwrap()
            .into_inner()
            .profile
            .unwrap();
        assert_eq!(profile.rating, first.rating_changes[0].rating_after);
        assert_eq!((profile.ranked_matches, profile.matches_played), (1, 2));
    }

    pub(super) async fn bad_sign_up_input_is_refused_and_writes_nothing<S: Store>(store: S) {
        let app = spawn_app(store).await;
        let mut client = app.client().await;
        register(&app, "taken_name").await;
        let before = app.counts().await;

        let cases = [
            (
                register_req("", "correct horse"),
                "username: must not be empty",
            ),
            (
                register_req("ab", "correct horse"),
                "username: must be 3 to 20",
            ),
            (
                register_req(&"a".repeat(21), "correct horse"),
                "username: must be 3 to 20",
            ),
            (
                register_req("bad name", "correct horse"),
                "username: may contain only",
            ),
            (register_req("good_name", "short"), "password: is too weak"),
            (register_req("good_name", ""), "password: is too weak"),
            (
                register_req("good_name", &"p".repeat(129)),
                "password: must be at most 128",
            ),
            (
                pb::RegisterRequest {
                    display_name: "n".repeat(25),
                    ..register_req("good_name", "correct horse")
                },
                "display_name: must be at most 24",
            ),
        ];
        for (request, expected) in cases {
            let (code, message) = failure(client.register(request).await);
            assert_eq!(code, Code::InvalidArgument, "{message}");
            assert!(
                message.starts_with(expected),
                "{message:?} should start with {expected:?}"
            );
        }
        let (code, message) = failure(
            client
                .register(register_req("TAKEN_NAME", "correct horse"))
                .await,
        );
        assert_eq!(
            (code, message.as_str()),
            (Code::AlreadyExists, "username is already taken")
        );

        for device in [String::new(), "d".repeat(129)] {
            let status = client.guest_login(guest_req(&device)).await.unwrap_err();
            assert_eq!(status.code(), Code::InvalidArgument);
            assert!(status.message().starts_with("device_id: "), "{status:?}");
            // The field at fault also travels as a google.rpc.BadRequest violation.
            let bad = basra_platform::error::bad_fields_of(&status);
            assert_eq!(bad.len(), 1, "{status:?}");
            assert_eq!(bad[0].0, "device_id");
            assert_eq!(format!("device_id: {}", bad[0].1), status.message());
        }
        // A token that does not verify is not silently ignored by Register.
        let (code, _) = failure(
            client
                .register(authed(
                    register_req("good_name", "correct horse"),
                    "not.a.jwt",
                ))
                .await,
        );
        assert_eq!(code, Code::Unauthenticated);
        assert_eq!(app.counts().await, before, "nothing written");
    }

    pub(super) async fn wrong_credentials_are_indistinguishable<S: Store>(store: S) {
        let app = spawn_app(store).await;
        let mut client = app.client().await;
        register(&app, "alice").await;
        let before = app.counts().await;
        let (wrong_code, wrong) = failure(client.login(login_req("alice", "wrong password")).await);
        let (unknown_code, unknown) =
            failure(client.login(login_req("nobody", "wrong password")).await);
        let (long_code, long) =
            failure(client.login(login_req(&"x".repeat(300), "whatever1")).await);
        assert_eq!(wrong_code, Code::Unauthenticated);
        assert_eq!((unknown_code, long_code), (wrong_code, wrong_code));
        assert_eq!(wrong, "invalid username or password");
        assert_eq!(unknown, wrong);
        assert_eq!(long, wrong);
        let (code, message) = failure(client.login(login_req("", "x")).await);
        assert_eq!(
            (code, message.as_str()),
            (Code::InvalidArgument, "username: must not be empty")
        );
        let (code, message) = failure(client.login(login_req("alice", "")).await);
        assert_eq!(
            (code, message.as_str()),
            (Code::InvalidArgument, "password: must not be empty")
        );
        assert_eq!(app.counts().await, before, "no token issued");
    }

    pub(super) async fn bad_refresh_tokens_are_refused<S: Store>(store: S) {
        let app = spawn_app(store).await;
        let mut client = app.client().await;
        let guest = tokens(
            client
                .guest_login(guest_req("dev"))
                .await
                .unwrap()
                .into_inner()
                .tokens,
        );
        let before = app.counts().await;
        let random_hex: String = (0..32)
            .map(|_| format!("{:02x}", rand::random::<u8>()))
            .collect();
        for token in [
            String::new(),
            "nope".into(),
            random_hex,
            guest.access_token.clone(),
        ] {
            let (code, message) = failure(client.refresh(refresh_req(&token)).await);
            assert_eq!(code, Code::Unauthenticated, "{token}");
            assert!(message.contains("refresh token"), "{message}");
        }
        assert_eq!(app.counts().await, before);
        // The real one still works (unknown tokens revoked nothing).
        client
            .refresh(refresh_req(&guest.refresh_token))
            .await
            .unwrap();
    }

    pub(super) async fn record_match_needs_a_service_token_and_a_sane_record<S: Store>(store: S) {
        let app = spawn_app(store).await;
        let mut client = app.client().await;
        let a = register(&app, "alice").await;
        let b = register(&app, "bob").await;
        let record = || match_record("m-1", &a.user_id, &b.user_id, true);
        let request = |token: &str, record: pb::MatchRecord| {
            authed(
                pb::RecordMatchRequest {
                    record: Some(record),
                },
                token,
            )
        };
        let before = app.counts().await;

        let (code, message) = failure(
            client
                .record_match(request(&a.access_token, record()))
                .await,
        );
        assert_eq!(code, Code::PermissionDenied);
        assert!(message.contains("service token"), "{message}");
        let (code, _) = failure(
            client
                .record_match(pb::RecordMatchRequest {
                    record: Some(record()),
                })
                .await,
        );
        assert_eq!(code, Code::Unauthenticated);

        let service = app.service_token();
        let bad_cases = bad_records(&a.user_id, &b.user_id);
        for (bad, expected) in bad_cases {
            let (code, message) = failure(client.record_match(request(&service, bad)).await);
            assert_eq!(code, Code::InvalidArgument, "{message}");
            assert!(
                message.starts_with(expected),
                "{message:?} should start with {expected:?}"
            );
        }
        let (code, _) = failure(
            client
                .record_match(authed(pb::RecordMatchRequest { record: None }, &service))
                .await,
        );
        assert_eq!(code, Code::InvalidArgument);
        assert_eq!(app.counts().await, before, "nothing written");
        // The id is still free.
        let ok = client
            .record_match(request(&service, record()))
            .await
            .unwrap()
            .into_inner();
        assert!(!ok.already_recorded);
    }

    pub(super) async fn record_matches_rates_in_order_exactly_like_record_match<S: Store>(
        store: S,
    ) {
        let app = spawn_app(store).await;
        let mut client = app.client().await;
        let service = app.service_token();
        let one = [
            register(&app, "one_a").await,
            register(&app, "one_b").await,
            register(&app, "one_c").await,
        ];
        let two = [
            register(&app, "two_a").await,
            register(&app, "two_b").await,
            register(&app, "two_c").await,
        ];
        // (winner, loser, ranked) by player index: the same story for both trios.
        let story = [
            (0, 1, true),
            (1, 2, true),
            (2, 0, true),
            (1, 0, false),
            (0, 2, true),
            (1, 0, true),
        ];
        let records = |trio: &[pb::AuthTokens; 3], tag: &str| -> Vec<pb::MatchRecord> {
            story
                .iter()
                .enumerate()
                .map(|(i, &(w, l, ranked))| {
                    match_record(
                        &format!("{tag}-{i}"),
                        &trio[w].user_id,
                        &trio[l].user_id,
                        ranked,
                    )
                })
                .collect()
        };

        // Trio one, one RecordMatch at a time.
        let mut singles = Vec::new();
        for record in records(&one, "one") {
            singles.push(
                client
                    .record_match(authed(
                        pb::RecordMatchRequest {
                            record: Some(record),
                        },
                        &service,
                    ))
                    .await
                    .unwrap()
                    .into_inner(),
            );
        }
        // Trio two in one batch, with its second match repeated at the end.
        let mut batch = records(&two, "two");
        batch.push(batch[1].clone());
        let answer = client
            .record_matches(authed(
                pb::RecordMatchesRequest {
                    records: batch.clone(),
                },
                &service,
            ))
            .await
            .unwrap()
            .into_inner();
        assert_eq!(answer.results.len(), story.len() + 1);
        let without_users = |r: &pb::RecordMatchResponse| {
            r.rating_changes
                .iter()
                .map(|c| (c.seat, c.rating_before, c.rating_after, c.deviation_after))
                .collect::<Vec<_>>()
        };
        for (i, (single, batched)) in singles.iter().zip(&answer.results).enumerate() {
            assert!(!batched.already_recorded, "match {i}");
            assert_eq!(without_users(batched), without_users(single), "match {i}");
            assert_eq!(single.rating_changes.is_empty(), !story[i].2);
        }
        let repeat = &answer.results[story.len()];
        assert!(repeat.already_recorded, "the repeat within the batch");
        assert_eq!(repeat.rating_changes, answer.results[1].rating_changes);
        for (a, b) in one.iter().zip(&two) {
            let profile = |token: &str| {
                let mut client = client.clone();
                let token = token.to_owned();
                async move {
                    client
                        .get_profile(authed(pb::GetProfileRequest::default(), &token))
                        .await
                        .unwrap()
                        .into_inner()
                        .profile
                        .unwrap()
                }
            };
            let (pa, pb_) = (
                profile(&a.access_token).await,
                profile(&b.access_token).await,
            );
            assert_eq!(
                (
                    pa.rating,
                    pa.rating_deviation,
                    pa.ranked_matches,
                    pa.matches_played
                ),
                (
                    pb_.rating,
                    pb_.rating_deviation,
                    pb_.ranked_matches,
                    pb_.matches_played
                ),
            );
        }

        // The whole batch again: every record already recorded, nothing changes.
        let before = app.counts().await;
        let again = client
            .record_matches(authed(
                pb::RecordMatchesRequest { records: batch },
                &service,
            ))
            .await
            .unwrap()
            .into_inner();
        assert!(again.results.iter().all(|r| r.already_recorded));
        for (first, second) in answer.results.iter().zip(&again.results) {
            assert_eq!(first.rating_changes, second.rating_changes);
        }
        assert_eq!(app.counts().await, before);
        // A match recorded by RecordMatch is a duplicate in a batch too.
        let mixed = client
            .record_matches(authed(
                pb::RecordMatchesRequest {
                    records: vec![records(&one, "one")[0].clone()],
                },
                &service,
            ))
            .await
            .unwrap()
            .into_inner();
        assert!(mixed.results[0].already_recorded);
        assert_eq!(mixed.results[0].rating_changes, singles[0].rating_changes);
    }

    pub(super) async fn record_matches_refuses_a_bad_batch_and_writes_nothing<S: Store>(store: S) {
        let app = spawn_app(store).await;
        let mut client = app.client().await;
        let a = register(&app, "alice").await;
        let b = register(&app, "bob").await;
        let service = app.service_token();
        let good = |id: &str| match_record(id, &a.user_id, &b.user_id, true);
        let request = |token: &str, records: Vec<pb::MatchRecord>| {
            authed(pb::RecordMatchesRequest { records }, token)
        };
        let before = app.counts().await;

        let (code, message) = failure(
            client
                .record_matches(request(&a.access_token, vec![good("g-1")]))
                .await,
        );
        assert_eq!(code, Code::PermissionDenied);
        assert!(message.contains("service token"), "{message}");
        let (code, _) = failure(
            client
                .record_matches(pb::RecordMatchesRequest {
                    records: vec![good("g-1")],
                })
                .await,
        );
        assert_eq!(code, Code::Unauthenticated);
        let (code, message) = failure(client.record_matches(request(&service, vec![])).await);
        assert_eq!(code, Code::InvalidArgument);
        assert!(
            message.starts_with("records: must hold 1 to 100"),
            "{message}"
        );
        let too_many = (0..101).map(|i| good(&format!("g-{i}"))).collect();
        let (code, message) = failure(client.record_matches(request(&service, too_many)).await);
        assert_eq!(code, Code::InvalidArgument);
        assert!(
            message.starts_with("records: must hold 1 to 100"),
            "{message}"
        );

        // Each record RecordMatch refuses, between two good ones: the batch is refused,
        // naming the record, and nothing is written (not even the good ones).
        for (mut bad, expected) in bad_records(&a.user_id, &b.user_id) {
            if !bad.match_id.is_empty() {
                bad.match_id = "bad".into();
            }
            let batch = vec![good("g-1"), bad, good("g-2")];
            let status = client
                .record_matches(request(&service, batch))
                .await
                .unwrap_err();
            let (code, message) = (status.code(), status.message().to_owned());
            assert_eq!(code, Code::InvalidArgument, "{message}");
            let expected = format!("records[1]: {expected}");
            assert!(
                message.starts_with(&expected),
                "{message:?} should start with {expected:?}"
            );
            let bad = basra_platform::error::bad_fields_of(&status);
            assert!(
                bad.len() == 1 && bad[0].0.starts_with("records[1]."),
                "the violation names the record's field: {bad:?}"
            );
        }
        assert_eq!(app.counts().await, before, "nothing written");
        // The ids are still free.
        let ok = client
            .record_matches(request(&service, vec![good("g-1"), good("g-2")]))
            .await
            .unwrap()
            .into_inner();
        assert!(ok.results.iter().all(|r| !r.already_recorded));
        assert_eq!(app.counts().await.matches, before.matches + 2);
    }

    pub(super) async fn get_players_answers_services_with_names_and_ratings<S: Store>(store: S) {
        let app = spawn_app(store).await;
        let mut client = app.client().await;
        let a = register(&app, "alice").await;
        let b = register(&app, "bob").await;
        let ask = |ids: Vec<String>| pb::GetPlayersRequest {
            user_ids: ids,
            include_blocks: false,
        };
        let (code, message) = failure(
            client
                .get_players(authed(ask(vec![b.user_id.clone()]), &a.access_token))
                .await,
        );
        assert_eq!(code, Code::PermissionDenied);
        assert!(message.contains("service token"), "{message}");
        let (code, _) = failure(client.get_players(ask(vec![b.user_id.clone()])).await);
        assert_eq!(code, Code::Unauthenticated);

        let service = app.service_token();
        let too_many = (0..101).map(|_| Uuid::now_v7().to_string()).collect();
        for (ids, what) in [
            (Vec::new(), "user_ids"),
            (too_many, "user_ids"),
            (vec!["not-a-uuid".to_owned()], "user_ids"),
        ] {
            let (code, message) = failure(client.get_players(authed(ask(ids), &service)).await);
            assert_eq!(code, Code::InvalidArgument, "{message}");
            assert!(message.starts_with(what), "{message}");
        }
        let stranger = Uuid::now_v7().to_string();
        let mut players = client
            .get_players(authed(
                ask(vec![
                    b.user_id.clone(),
                    a.user_id.clone(),
                    stranger,
                    a.user_id.clone(),
                ]),
                &service,
            ))
            .await
            .unwrap()
            .into_inner()
            .players;
        players.sort_by(|x, y| x.display_name.cmp(&y.display_name));
        let got: Vec<(&str, &str, bool, f64)> = players
            .iter()
            .map(|p| {
                (
                    p.user_id.as_str(),
                    p.display_name.as_str(),
                    p.is_guest,
                    p.rating,
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                (a.user_id.as_str(), "alice", false, 1500.0),
                (b.user_id.as_str(), "bob", false, 1500.0),
            ],
            "known players once each, unknown ids left out"
        );
        assert!(players.iter().all(|p| p.blocked_user_ids.is_empty()));

        // Blocks only when asked, and only the player's own (who they block).
        let c = register(&app, "carol").await;
        for (blocker, blocked) in [(&a, &b), (&a, &c), (&c, &a)] {
            client
                .block_player(authed(
                    pb::BlockPlayerRequest {
                        user_id: blocked.user_id.clone(),
                    },
                    &blocker.access_token,
                ))
                .await
                .unwrap();
        }
        let with_blocks = |include_blocks| pb::GetPlayersRequest {
            user_ids: vec![a.user_id.clone(), b.user_id.clone()],
            include_blocks,
        };
        let blocks_of = |players: Vec<pb::PlayerSummary>, who: &str| {
            let mut ids = players
                .into_iter()
                .find(|p| p.user_id == who)
                .unwrap()
                .blocked_user_ids;
            ids.sort();
            ids
        };
        let players = client
            .get_players(authed(with_blocks(true), &service))
            .await
            .unwrap()
            .into_inner()
            .players;
        let mut expected = vec![b.user_id.clone(), c.user_id.clone()];
        expected.sort();
        assert_eq!(blocks_of(players.clone(), &a.user_id), expected);
        assert_eq!(blocks_of(players, &b.user_id), Vec::<String>::new());
        let players = client
            .get_players(authed(with_blocks(false), &service))
            .await
            .unwrap()
            .into_inner()
            .players;
        assert_eq!(blocks_of(players, &a.user_id), Vec::<String>::new());
    }

    pub(super) async fn forged_and_expired_access_tokens_are_refused<S: Store>(store: S) {
        let app = spawn_app(store).await;
        let mut client = app.client().await;
        let guest = tokens(
            client
                .guest_login(guest_req("dev"))
                .await
                .unwrap()
                .into_inner()
                .tokens,
        );
        let profile = |token: &str| authed(pb::GetProfileRequest::default(), token);
        client
            .get_profile(profile(&guest.access_token))
            .await
            .unwrap();

        let (iss, aud) = (&app.settings.auth.issuer, &app.settings.auth.audience);
        let now = jsonwebtoken::get_current_timestamp();
        let claims = |iat: u64, exp: u64| {
            serde_json::json!({
                "sub": guest.user_id, "role": "player", "guest": true,
                "iss": iss, "aud": aud, "iat": iat, "exp": exp, "jti": Uuid::now_v7(),
            })
        };
        let sign = |claims: &serde_json::Value| {
            let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::EdDSA);
            header.kid = Some(crate::helpers::KID.into());
            let key = jsonwebtoken::EncodingKey::from_ed_pem(app.key_pem.as_bytes()).unwrap();
            jsonwebtoken::encode(&header, claims, &key).unwrap()
        };
        // Sanity: a hand-signed token with the service's key is accepted.
        client
            .get_profile(profile(&sign(&claims(now, now + 60))))
            .await
            .unwrap();

        let expired = sign(&claims(now - 3600, now - 600));
        let mut parts: Vec<String> = guest.access_token.split('.').map(String::from).collect();
        parts[1] = b64url(
            serde_json::to_string(&claims(now, now + 600))
                .unwrap()
                .replace("\"player\"", "\"service\"")
                .as_bytes(),
        );
        let tampered = parts.join(".");
        let wrong_key = app
            .foreign_issuer()
            .issue(
                &basra_platform::auth::Caller {
                    user_id: guest.user_id.parse().unwrap(),
                    role: basra_platform::auth::Role::Player,
                    guest: true,
                },
                Duration::from_secs(600),
            )
            .unwrap()
            .token;
        let alg_none = format!(
            "{}.{}.",
            b64url(
                format!(
                    r#"{{"alg":"none","typ":"JWT","kid":"{}"}}"#,
                    crate::helpers::KID
                )
                .as_bytes()
            ),
            b64url(claims(now, now + 600).to_string().as_bytes())
        );
        for (name, token) in [
            ("expired", expired),
            ("tampered", tampered),
            ("wrong key", wrong_key),
            ("alg none", alg_none),
            ("garbage", "garbage".into()),
        ] {
            let (code, message) = failure(client.get_profile(profile(&token)).await);
            assert_eq!(code, Code::Unauthenticated, "{name}: {message}");
            // A tampered token must not reach RecordMatch either.
            let (code, _) = failure(
                client
                    .record_match(authed(pb::RecordMatchRequest::default(), &token))
                    .await,
            );
            assert_eq!(code, Code::Unauthenticated, "{name}");
        }
        let (code, message) = failure(client.get_profile(pb::GetProfileRequest::default()).await);
        assert_eq!(code, Code::Unauthenticated);
        assert!(message.contains("missing access token"), "{message}");
    }

    pub(super) async fn login_attempts_are_rate_limited_per_account_and_per_peer<S: Store>(
        store: S,
    ) {
        let app = TestApp::builder(store)
            .env(&[
                ("BASRA_LOGIN_LIMITS__PER_ACCOUNT_MAX", "3"),
                ("BASRA_LOGIN_LIMITS__PER_PEER_MAX", "6"),
            ])
            .spawn()
            .await;
        let mut client = app.client().await;
        register(&app, "alice").await;
        for _ in 0..3 {
            let (code, _) = failure(client.login(login_req("alice", "wrong password")).await);
            assert_eq!(code, Code::Unauthenticated);
        }
        // The right password is refused too once the account's budget is spent.
        let (code, message) = failure(
            client
                .login(login_req("alice", "correct horse battery"))
                .await,
        );
        assert_eq!(code, Code::ResourceExhausted, "{message}");
        assert!(message.contains("too many login attempts"), "{message}");
        // Other accounts are limited by address: 2 attempts left of 6.
        for name in ["bob", "carol"] {
            let (code, _) = failure(client.login(login_req(name, "wrong password")).await);
            assert_eq!(code, Code::Unauthenticated);
        }
        let (code, _) = failure(client.login(login_req("dave", "wrong password")).await);
        assert_eq!(code, Code::ResourceExhausted);
    }

    pub(super) async fn sign_ups_are_rate_limited_per_address_and_in_all<S: Store>(store: S) {
        let app = TestApp::builder(store)
            .env(&[
                ("BASRA_SIGNUP_LIMITS__PER_ADDRESS_MAX", "3"),
                ("BASRA_SIGNUP_LIMITS__PER_ADDRESS_WINDOW_SECONDS", "3600"),
            ])
            .spawn()
            .await;
        let mut client = app.client().await;
        // GuestLogin and Register share one budget per address.
        client.guest_login(guest_req("device-1")).await.unwrap();
        client.guest_login(guest_req("device-2")).await.unwrap();
        register(&app, "alice").await;
        assert_sign_up_limited(client.guest_login(guest_req("device-3")).await);
        assert_sign_up_limited(
            client
                .register(register_req("bob", "correct horse battery"))
                .await,
        );
        // Nothing was written for the refused calls; Login is not a sign-up.
        let (code, _) = failure(
            client
                .login(login_req("bob", "correct horse battery"))
                .await,
        );
        assert_eq!(code, Code::Unauthenticated);
        client
            .login(login_req("alice", "correct horse battery"))
            .await
            .expect("login is limited separately");
        drop(client);

        // The replica-wide budget holds across addresses.
        let app = TestApp::builder(accounts::MemoryStore::new())
            .env(&[
                ("BASRA_SIGNUP_LIMITS__GLOBAL_MAX", "2"),
                ("BASRA_SIGNUP_LIMITS__GLOBAL_WINDOW_SECONDS", "3600"),
            ])
            .spawn()
            .await;
        let mut client = app.client().await;
        client.guest_login(guest_req("g-1")).await.unwrap();
        client.guest_login(guest_req("g-2")).await.unwrap();
        assert_sign_up_limited(client.guest_login(guest_req("g-3")).await);
    }

    pub(super) async fn pagination_through_grpc<S: Store>(store: S) {
        let app = spawn_app(store).await;
        let mut client = app.client().await;
        let service = app.service_token();
        let mut players = Vec::new();
        for i in 0..5 {
            players.push(register(&app, &format!("gamer_{i}")).await);
        }
        // gamer_0 plays everyone and wins every time.
        for (i, opponent) in players.iter().enumerate().skip(1) {
            client
                .record_match(authed(
                    pb::RecordMatchRequest {
                        record: Some(match_record(
                            &format!("m-{i}"),
                            &players[0].user_id,
                            &opponent.user_id,
                            true,
                        )),
                    },
                    &service,
                ))
                .await
                .unwrap();
        }
        let token = &players[0].access_token;
        let mut seen = Vec::new();
        let mut page_token = String::new();
        loop {
            let page = client
                .leaderboard(authed(
                    pb::LeaderboardRequest {
                        page_size: 2,
                        page_token: page_token.clone(),
                        ..Default::default()
                    },
                    token,
                ))
                .await
                .unwrap()
                .into_inner();
            assert!(page.entries.len() <= 2);
            assert_eq!(page.caller.as_ref().unwrap().rank, 1);
            seen.extend(page.entries.iter().map(|e| (e.rank, e.user_id.clone())));
            if page.next_page_token.is_empty() {
                break;
            }
            page_token = page.next_page_token;
        }
        let ranks: Vec<u32> = seen.iter().map(|(r, _)| *r).collect();
        assert_eq!(ranks, vec![1, 2, 3, 4, 5]);
        assert_eq!(seen[0].1, players[0].user_id);

        let mut matches = Vec::new();
        let mut page_token = String::new();
        loop {
            let page = client
                .match_history(authed(
                    pb::MatchHistoryRequest {
                        page_size: 3,
                        page_token: page_token.clone(),
                    },
                    token,
                ))
                .await
                .unwrap()
                .into_inner();
            matches.extend(page.matches.into_iter().map(|m| m.match_id));
            if page.next_page_token.is_empty() {
                break;
            }
            page_token = page.next_page_token;
        }
        matches.sort();
        assert_eq!(matches, ["m-1", "m-2", "m-3", "m-4"]);

        for bad in ["garbage", "lb1.1.2.3.4"] {
            let (code, message) = failure(
                client
                    .leaderboard(authed(
                        pb::LeaderboardRequest {
                            page_size: 0,
                            page_token: bad.into(),
                            ..Default::default()
                        },
                        token,
                    ))
                    .await,
            );
            assert_eq!(code, Code::InvalidArgument);
            assert!(message.starts_with("page_token: "), "{message}");
        }
        let (code, _) = failure(
            client
                .match_history(authed(
                    pb::MatchHistoryRequest {
                        page_size: 0,
                        page_token: "mh1.x".into(),
                    },
                    token,
                ))
                .await,
        );
        assert_eq!(code, Code::InvalidArgument);
    }

    pub(super) async fn health_and_reflection_answer<S: Store>(store: S) {
        use tonic_health::pb::health_check_response::ServingStatus;
        use tonic_health::pb::{HealthCheckRequest, health_client::HealthClient};
        use tonic_reflection::pb::v1::ServerReflectionRequest;
        use tonic_reflection::pb::v1::server_reflection_client::ServerReflectionClient;
        use tonic_reflection::pb::v1::server_reflection_request::MessageRequest;
        use tonic_reflection::pb::v1::server_reflection_response::MessageResponse;

        let app = spawn_app(store).await;
        let channel = app.channel().await;
        let mut health = HealthClient::new(channel.clone());
        for service in ["", accounts::SERVICE_NAME] {
            let status = health
                .check(HealthCheckRequest {
                    service: service.into(),
                })
                .await
                .unwrap()
                .into_inner()
                .status;
            assert_eq!(status, ServingStatus::Serving as i32, "{service:?}");
        }

        let mut reflection = ServerReflectionClient::new(channel);
        let request = ServerReflectionRequest {
            host: String::new(),
            message_request: Some(MessageRequest::ListServices(String::new())),
        };
        let mut responses = reflection
            .server_reflection_info(tokio_stream::iter([request]))
            .await
            .unwrap()
            .into_inner();
        let response = responses.message().await.unwrap().unwrap();
        let Some(MessageResponse::ListServicesResponse(list)) = response.message_response else {
            panic!("unexpected reflection answer: {response:?}");
        };
        let names: Vec<String> = list.service.into_iter().map(|s| s.name).collect();
        assert!(
            names.contains(&accounts::SERVICE_NAME.to_owned()),
            "{names:?}"
        );
        assert!(
            names.contains(&"grpc.health.v1.Health".to_owned()),
            "{names:?}"
        );
    }

    pub(super) async fn friends_through_grpc<S: Store>(store: S) {
        let app = spawn_app(store).await;
        let mut client = app.client().await;
        let amira = register(&app, "amira").await;
        let guest = tokens(
            client
                .guest_login(guest_req("device-friend"))
                .await
                .unwrap()
                .into_inner()
                .tokens,
        );
        // The guest finds its code on its own profile; amira asks by that code, typed
        // in lower case without the dash.
        let profile = client
            .get_profile(authed(
                pb::GetProfileRequest::default(),
                &guest.access_token,
            ))
            .await
            .unwrap()
            .into_inner()
            .profile
            .unwrap();
        assert_eq!(profile.friend_code.len(), 9, "shown as ABCD-EF12");
        let typed = profile.friend_code.replace('-', "").to_lowercase();
        let sent = client
            .add_friend(authed(
                pb::AddFriendRequest {
                    target: Some(pb::add_friend_request::Target::FriendCode(typed)),
                },
                &amira.access_token,
            ))
            .await
            .unwrap()
            .into_inner();
        assert!(!sent.became_friends);
        assert_eq!(sent.friend.unwrap().user_id, guest.user_id);
        // Someone else's profile does not show their code.
        let other = client
            .get_profile(authed(
                pb::GetProfileRequest {
                    user_id: guest.user_id.clone(),
                },
                &amira.access_token,
            ))
            .await
            .unwrap()
            .into_inner();
        assert!(other.profile.unwrap().friend_code.is_empty());

        let lister = client.clone();
        let list = |token: String| {
            let mut client = lister.clone();
            async move {
                client
                    .list_friends(authed(pb::ListFriendsRequest {}, &token))
                    .await
                    .unwrap()
                    .into_inner()
            }
        };
        let seen = list(guest.access_token.clone()).await;
        assert_eq!(seen.friend_code, profile.friend_code);
        assert_eq!(seen.incoming.len(), 1);
        assert_eq!(seen.incoming[0].display_name, "amira");
        client
            .accept_friend(authed(
                pb::AcceptFriendRequest {
                    user_id: amira.user_id.clone(),
                },
                &guest.access_token,
            ))
            .await
            .unwrap();
        let mine = list(amira.access_token.clone()).await;
        assert_eq!(mine.friends.len(), 1);
        assert_eq!(mine.friends[0].user_id, guest.user_id);
        assert!(mine.outgoing.is_empty());

        // A block ends the friendship; the blocked guest cannot ask again.
        client
            .block_player(authed(
                pb::BlockPlayerRequest {
                    user_id: guest.user_id.clone(),
                },
                &amira.access_token,
            ))
            .await
            .unwrap();
        assert!(list(guest.access_token.clone()).await.friends.is_empty());
        let (code, message) = failure(
            client
                .add_friend(authed(
                    pb::AddFriendRequest {
                        target: Some(pb::add_friend_request::Target::Username("AMIRA".into())),
                    },
                    &guest.access_token,
                ))
                .await,
        );
        assert_eq!((code, message.as_str()), (Code::NotFound, "no such player"));
    }

    pub(super) async fn bad_friend_requests_get_clear_statuses_and_write_nothing<S: Store>(
        store: S,
    ) {
        use pb::add_friend_request::Target;
        let app = TestApp::builder(store)
            .env(&[("BASRA_FRIENDS__REQUESTS_PER_DAY", "1")])
            .spawn()
            .await;
        let mut client = app.client().await;
        let amira = register(&app, "amira").await;
        let basem = register(&app, "basem").await;
        let add =
            |target: Option<Target>| authed(pb::AddFriendRequest { target }, &amira.access_token);
        let before = app.store().counts().await.unwrap();
        let cases = [
            (add(None), Code::InvalidArgument, "target: name the player"),
            (
                add(Some(Target::UserId("nope".into()))),
                Code::InvalidArgument,
                "user_id: is not a user id",
            ),
            (
                add(Some(Target::UserId(amira.user_id.clone()))),
                Code::InvalidArgument,
                "that is you",
            ),
            (
                add(Some(Target::Username("amira".into()))),
                Code::InvalidArgument,
                "that is you",
            ),
            (
                add(Some(Target::Username("no such name!".into()))),
                Code::InvalidArgument,
                "username:",
            ),
            (
                add(Some(Target::Username("nobody".into()))),
                Code::NotFound,
                "no such player",
            ),
            (
                add(Some(Target::FriendCode("ABC".into()))),
                Code::InvalidArgument,
                "friend_code: must be 8",
            ),
            (
                add(Some(Target::FriendCode("ZZZZ-ZZZZ".into()))),
                Code::NotFound,
                "no such player",
            ),
            (
                add(Some(Target::UserId(Uuid::now_v7().to_string()))),
                Code::NotFound,
                "no such player",
            ),
        ];
        for (request, code, starts) in cases {
            let (got, message) = failure(client.add_friend(request).await);
            assert_eq!(got, code, "{message}");
            assert!(
                message.starts_with(starts),
                "{message:?} should start with {starts:?}"
            );
        }
        let (code, _) = failure(
            client
                .accept_friend(authed(
                    pb::AcceptFriendRequest {
                        user_id: basem.user_id.clone(),
                    },
                    &amira.access_token,
                ))
                .await,
        );
        assert_eq!(code, Code::NotFound);
        let (code, _) = failure(
            client
                .list_friends(tonic::Request::new(pb::ListFriendsRequest {}))
                .await,
        );
        assert_eq!(code, Code::Unauthenticated);
        let (code, _) = failure(
            client
                .list_friends(authed(pb::ListFriendsRequest {}, &app.service_token()))
                .await,
        );
        assert_eq!(code, Code::PermissionDenied);
        assert_eq!(app.store().counts().await.unwrap(), before);

        // One request a day: the second is refused with a hint to retry after midnight UTC.
        client
            .add_friend(add(Some(Target::UserId(basem.user_id.clone()))))
            .await
            .unwrap();
        let carim = register(&app, "carim").await;
        let status = client
            .add_friend(add(Some(Target::UserId(carim.user_id.clone()))))
            .await
            .expect_err("over the daily limit");
        assert_eq!(status.code(), Code::ResourceExhausted);
        let retry: u64 = status
            .metadata()
            .get(basra_platform::error::RETRY_AFTER_MS)
            .expect("a retry hint")
            .to_str()
            .unwrap()
            .parse()
            .unwrap();
        assert!((1..=86_400_000).contains(&retry), "{retry} ms");
    }

    pub(super) async fn display_names_are_checked_and_changes_are_limited<S: Store>(store: S) {
        let app = TestApp::builder(store)
            .env(&[("BASRA_DISPLAY_NAMES__MAX_CHANGES", "2")])
            .spawn()
            .await;
        let mut client = app.client().await;
        let rita = register(&app, "rita_r").await;
        let set = |token: &str, name: &str| {
            authed(
                pb::SetDisplayNameRequest {
                    display_name: name.into(),
                },
                token,
            )
        };
        let first = client
            .set_display_name(set(&rita.access_token, "  Rita \u{3000}  R "))
            .await
            .unwrap()
            .into_inner();
        assert_eq!(
            (
                first.display_name.as_str(),
                first.changed,
                first.changes_left
            ),
            ("Rita R", true, 1)
        );
        assert!(first.next_change_at.is_none());
        let again = client
            .set_display_name(set(&rita.access_token, "Rita R"))
            .await
            .unwrap()
            .into_inner();
        assert_eq!(
            (again.changed, again.changes_left),
            (false, 1),
            "not a change"
        );

        let before = app.counts().await;
        for (bad, expected) in [
            ("", "display_name: must not be empty"),
            ("   ", "display_name: must not be empty"),
            (&*"n".repeat(25), "display_name: must be at most 24"),
            ("a\u{7}b", "display_name: must not contain control"),
            ("a\u{200B}b", "display_name: must not contain invisible"),
            ("\u{202E}atiR", "display_name: must not contain invisible"),
            (
                "Bot (hard)",
                "display_name: \"Bot (hard)\" could pass for a bot",
            ),
            ("B0T", "display_name: \"B0T\" could pass for a bot"),
            (
                "Player 2",
                "display_name: \"Player 2\" could pass for a bot",
            ),
        ] {
            let (code, message) =
                failure(client.set_display_name(set(&rita.access_token, bad)).await);
            assert_eq!(code, Code::InvalidArgument, "{bad:?}: {message}");
            assert!(message.starts_with(expected), "{bad:?}: {message}");
        }
        assert_eq!(app.counts().await, before, "refusals write nothing");
        assert_eq!(own_name(&app, &rita.access_token).await, "Rita R");

        let second = client
            .set_display_name(set(&rita.access_token, "Robot Rita"))
            .await
            .unwrap()
            .into_inner();
        assert_eq!((second.changed, second.changes_left), (true, 0));
        let next = second
            .next_change_at
            .expect("at the limit: when the next is allowed");
        let week = 7 * 24 * 3600;
        let now = chrono::Utc::now().timestamp();
        assert!(
            (now + week - 5..=now + week + 5).contains(&next.seconds),
            "{next:?}"
        );

        let status = client
            .set_display_name(set(&rita.access_token, "Rita Three"))
            .await
            .unwrap_err();
        assert_eq!(status.code(), Code::ResourceExhausted, "{status:?}");
        assert!(
            status
                .message()
                .starts_with("too many display name changes: the next one is allowed at "),
            "{status:?}"
        );
        let retry_ms: i64 = status
            .metadata()
            .get(basra_platform::error::RETRY_AFTER_MS)
            .expect("a retry hint")
            .to_str()
            .unwrap()
            .parse()
            .unwrap();
        assert!(retry_ms > (week - 60) * 1000, "{retry_ms}");
        assert_eq!(own_name(&app, &rita.access_token).await, "Robot Rita");
        // Services see the new name (seats, lobby listings).
        let players = client
            .get_players(authed(
                pb::GetPlayersRequest {
                    user_ids: vec![rita.user_id.clone()],
                    include_blocks: false,
                },
                &app.service_token(),
            ))
            .await
            .unwrap()
            .into_inner()
            .players;
        assert_eq!(players[0].display_name, "Robot Rita");

        // The same rules wherever a name is set.
        let (code, message) = failure(
            client
                .guest_login(pb::GuestLoginRequest {
                    device_id: "bot-device".into(),
                    display_name: "bot".into(),
                })
                .await,
        );
        assert_eq!(code, Code::InvalidArgument);
        assert!(message.contains("could pass for a bot"), "{message}");
        let (code, message) = failure(
            client
                .register(register_req("bot_seven", "correct horse battery"))
                .await,
        );
        assert_eq!(code, Code::InvalidArgument);
        assert!(
            message.starts_with("display_name: the username"),
            "{message}"
        );
        client
            .register(pb::RegisterRequest {
                display_name: "Seven".into(),
                ..register_req("bot_seven", "correct horse battery")
            })
            .await
            .expect("a username like a bot's is fine with a display name");

        // Only players have names to change.
        let (code, _) = failure(
            client
                .set_display_name(set(&app.service_token(), "Service"))
                .await,
        );
        assert_eq!(code, Code::PermissionDenied);
        let (code, _) = failure(
            client
                .set_display_name(pb::SetDisplayNameRequest {
                    display_name: "Anon".into(),
                })
                .await,
        );
        assert_eq!(code, Code::Unauthenticated);
    }
}
