//! ChangePassword and DeleteAccount through real tonic clients, on PostgreSQL (a fresh
//! database per test) and on the memory store (the deleted player's notices, push devices
//! and reports gone, the moderators' audit of them kept); and, on PostgreSQL, the deletion
//! checked row by row: nothing of the deleted player left in any table or analyst view,
//! every other player's rows byte-for-byte as they were.

use std::time::Duration;

use accounts::store::Store;
use basra_proto::basra::accounts::v1 as pb;
use tokio_stream::StreamExt as _;
use tonic::Code;

use crate::admin::admin;
use crate::devices::fcm;
use crate::grpc::{failure, guest_req, login_req, match_record, register, register_req};
use crate::helpers::{FriendLinks, TestApp, authed, spawn_app, tokens};

on_both_stores! {
    cases {
        change_password_revokes_every_sign_in,
        delete_account_removes_the_player_and_keeps_the_matches,
        a_deleted_guest_device_makes_a_new_guest,
        delete_account_needs_the_right_proof,
        a_match_recorded_after_the_deletion_names_a_placeholder,
    }
}

const PASSWORD: &str = "correct horse battery";

fn change(current: &str, new: &str) -> pb::ChangePasswordRequest {
    pb::ChangePasswordRequest {
        current_password: current.into(),
        new_password: new.into(),
    }
}

fn delete_with_password(password: &str) -> pb::DeleteAccountRequest {
    pb::DeleteAccountRequest {
        proof: Some(pb::delete_account_request::Proof::Password(password.into())),
    }
}

fn delete_with_device(device: &str) -> pb::DeleteAccountRequest {
    pb::DeleteAccountRequest {
        proof: Some(pb::delete_account_request::Proof::DeviceId(device.into())),
    }
}

async fn refresh<S: Store>(app: &TestApp<S>, token: &str) -> Result<pb::AuthTokens, tonic::Status> {
    app.client()
        .await
        .refresh(pb::RefreshRequest {
            refresh_token: token.into(),
        })
        .await
        .map(|r| tokens(r.into_inner().tokens))
}

async fn change_password_revokes_every_sign_in<S: Store>(store: S) {
    let app = spawn_app(store).await;
    let mut client = app.client().await;
    let first = register(&app, "farida").await;
    let second = tokens(
        client
            .login(login_req("farida", PASSWORD))
            .await
            .unwrap()
            .into_inner()
            .tokens,
    );
    let before = app.counts().await;

    // Each refusal writes nothing.
    let cases = [
        (
            change("", "a new long password"),
            Code::InvalidArgument,
            "current_password: must not be empty",
        ),
        (
            change(PASSWORD, "short"),
            Code::InvalidArgument,
            "new_password: is too weak",
        ),
        (
            change("not my password", "a new long password"),
            Code::PermissionDenied,
            "does not match",
        ),
    ];
    for (request, code, message) in cases {
        let (got, text) = failure(
            client
                .change_password(authed(request, &first.access_token))
                .await,
        );
        assert_eq!(got, code, "{text}");
        assert!(
            text.starts_with(message) || text.contains(message),
            "{text}"
        );
    }
    let (code, _) = failure(
        client
            .change_password(change(PASSWORD, "a new long password"))
            .await,
    );
    assert_eq!(code, Code::Unauthenticated, "no token");
    let (code, text) = failure(
        client
            .change_password(authed(
                change(PASSWORD, "a new long password"),
                &app.service_token(),
            ))
            .await,
    );
    assert_eq!(code, Code::PermissionDenied, "{text}");
    let guest = tokens(
        client
            .guest_login(guest_req("device-cp"))
            .await
            .unwrap()
            .into_inner()
            .tokens,
    );
    let (code, text) = failure(
        client
            .change_password(authed(
                change(PASSWORD, "a new long password"),
                &guest.access_token,
            ))
            .await,
    );
    assert_eq!(code, Code::FailedPrecondition, "{text}");
    assert!(text.contains("Register"), "{text}");
    let after_refusals = app.counts().await;
    assert_eq!(
        after_refusals.revoked_refresh_tokens,
        before.revoked_refresh_tokens
    );

    let changed = tokens(
        client
            .change_password(authed(
                change(PASSWORD, "a new long password"),
                &first.access_token,
            ))
            .await
            .unwrap()
            .into_inner()
            .tokens,
    );
    assert_eq!(changed.user_id, first.user_id);
    // Every earlier sign-in is revoked; the new one works.
    for old in [&first.refresh_token, &second.refresh_token] {
        let status = refresh(&app, old)
            .await
            .expect_err("an old sign-in is revoked");
        assert_eq!(status.code(), Code::Unauthenticated);
    }
    refresh(&app, &changed.refresh_token)
        .await
        .expect("the new sign-in works");
    let (code, _) = failure(client.login(login_req("farida", PASSWORD)).await);
    assert_eq!(
        code,
        Code::Unauthenticated,
        "the old password no longer signs in"
    );
    client
        .login(login_req("farida", "a new long password"))
        .await
        .expect("the new password signs in");
}

/// A player with friends, requests both ways, a block, an invite, an open feed and
/// three recorded matches deletes their account.
async fn delete_account_removes_the_player_and_keeps_the_matches<S: Store>(store: S) {
    let app = spawn_app(store).await;
    let mut client = app.client().await;
    let alice = register(&app, "alice").await;
    let bob = register(&app, "bob").await;
    let carol = register(&app, "carol").await;
    let dave = register(&app, "dave").await;
    let erin = register(&app, "erin").await;
    // alice ⇄ bob friends; alice → carol asked; dave → alice asked; alice blocks erin;
    // bob ⇄ carol friends (nothing to do with alice).
    FriendLinks::new()
        .friends(&alice, &bob)
        .request(&alice, &carol)
        .request(&dave, &alice)
        .friends(&bob, &carol)
        .block(&alice, &erin)
        .make(&mut client)
        .await;
    // bob invites alice to a room (a kept note on alice's feed).
    client
        .send_invite(authed(
            pb::SendInviteRequest {
                from_user_id: bob.user_id.clone(),
                to_user_id: alice.user_id.clone(),
                room_id: "room-42".into(),
                join_code: "ABC234".into(),
                settings: None,
                expires_at: Some(prost_types::Timestamp {
                    seconds: chrono::Utc::now().timestamp() + 600,
                    nanos: 0,
                }),
            },
            &app.service_token(),
        ))
        .await
        .unwrap();
    // Three matches of alice's (two against bob, one against carol), one without her.
    let service = app.service_token();
    for (id, a, b) in [
        ("m-1", &alice.user_id, &bob.user_id),
        ("m-2", &carol.user_id, &alice.user_id),
        ("m-3", &bob.user_id, &alice.user_id),
        ("m-4", &bob.user_id, &carol.user_id),
    ] {
        client
            .record_match(authed(
                pb::RecordMatchRequest {
                    record: Some(match_record(id, a, b, true)),
                },
                &service,
            ))
            .await
            .unwrap();
    }
    // alice's open feed.
    let mut feed = client
        .watch_friends(authed(
            pb::WatchFriendsRequest::default(),
            &alice.access_token,
        ))
        .await
        .unwrap()
        .into_inner();
    let snapshot = feed.next().await.unwrap().unwrap();
    assert!(matches!(
        snapshot.event,
        Some(pb::watch_friends_response::Event::Snapshot(_))
    ));

    // alice's push device; a report she filed, one about her (dismissed by a moderator:
    // audited), and one between others.
    client
        .register_push_token(authed(fcm("alice-device-token", "en"), &alice.access_token))
        .await
        .unwrap();
    let report = |target: &pb::AuthTokens, comment: &str| pb::ReportPlayerRequest {
        user_id: target.user_id.clone(),
        reason: pb::ReportReason::Other as i32,
        match_id: String::new(),
        comment: comment.into(),
    };
    for (by, req) in [
        (&alice, report(&carol, "by alice")),
        (&bob, report(&alice, "about alice")),
        (&bob, report(&carol, "between others")),
    ] {
        client
            .report_player(authed(req, &by.access_token))
            .await
            .unwrap();
    }
    admin(&app)
        .await
        .resolve_reports(authed(
            pb::ResolveReportsRequest {
                user_id: alice.user_id.clone(),
                action: pb::ReportAction::Dismiss as i32,
                reason: "nothing wrong".into(),
                ..Default::default()
            },
            &app.named_operator_token(uuid::Uuid::now_v7(), "ops-deletion"),
        ))
        .await
        .unwrap();
    let store = app.store();
    let (alice_id, carol_id) = (
        uuid::Uuid::parse_str(&alice.user_id).unwrap(),
        uuid::Uuid::parse_str(&carol.user_id).unwrap(),
    );
    let now = chrono::Utc::now();
    let page = accounts::inbox::NoticePage {
        before: None,
        unread_only: false,
        limit: 100,
    };
    assert_eq!(store.push_devices(alice_id).await.unwrap().len(), 1);
    assert_eq!(store.reports_by(alice_id).await.unwrap().len(), 1);
    assert_eq!(store.reports_of(alice_id).await.unwrap().len(), 1);
    assert_eq!(store.reports_of(carol_id).await.unwrap().len(), 2);
    assert!(
        store.notices(alice_id, page, now).await.unwrap().len() >= 2,
        "dave's request and bob's invite"
    );
    let audit_before = store.audit_of(alice_id).await.unwrap();
    assert!(!audit_before.is_empty(), "the resolution is audited");

    let others = [&bob, &carol, &dave, &erin];
    let before = views(&app, &others).await;
    let bob_history_before = history(&app, &bob).await;

    let deleted = client
        .delete_account(authed(delete_with_password(PASSWORD), &alice.access_token))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(deleted.matches_kept, 3);

    // The open feed ends, with the reason.
    let ended = tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            match feed.next().await {
                Some(Ok(_)) => continue,
                Some(Err(status)) => return Some(status),
                None => return None,
            }
        }
    })
    .await
    .expect("the deleted player's feed ends within 5 s")
    .expect("with a status");
    assert_eq!(ended.code(), Code::Unauthenticated, "{ended:?}");
    assert!(ended.message().contains("deleted"), "{ended:?}");

    // Every token and sign-in of alice's is refused.
    let (code, text) = failure(
        client
            .get_profile(authed(
                pb::GetProfileRequest::default(),
                &alice.access_token,
            ))
            .await,
    );
    assert_eq!(code, Code::Unauthenticated, "{text}");
    let status = refresh(&app, &alice.refresh_token).await.unwrap_err();
    assert_eq!(status.code(), Code::Unauthenticated);
    let (code, _) = failure(client.login(login_req("alice", PASSWORD)).await);
    assert_eq!(code, Code::Unauthenticated);
    // Her profile is gone for everyone.
    let (code, _) = failure(
        client
            .get_profile(authed(
                pb::GetProfileRequest {
                    user_id: alice.user_id.clone(),
                },
                &bob.access_token,
            ))
            .await,
    );
    assert_eq!(code, Code::NotFound);

    // The other players: everything as before, but alice gone from their lists and her
    // seats in their matches anonymous.
    let after = views(&app, &others).await;
    for (player, (before, after)) in others.iter().zip(before.iter().zip(&after)) {
        // A place on the leaderboard may move up: alice is no longer listed.
        let unranked = |p: &pb::Profile| pb::Profile {
            leaderboard_rank: None,
            ..p.clone()
        };
        assert_eq!(
            unranked(&before.profile),
            unranked(&after.profile),
            "{}'s profile",
            player.display_name
        );
        let without_alice = |list: &Vec<String>| {
            list.iter()
                .filter(|id| **id != alice.user_id)
                .cloned()
                .collect::<Vec<_>>()
        };
        assert_eq!(
            without_alice(&before.linked),
            after.linked,
            "{}'s lists",
            player.display_name
        );
        assert!(!after.linked.contains(&alice.user_id));
    }
    let bob_history = history(&app, &bob).await;
    assert_eq!(
        bob_history.len(),
        bob_history_before.len(),
        "bob's history keeps every match"
    );
    let mut keys = Vec::new();
    for (was, is) in bob_history_before.iter().zip(&bob_history) {
        assert_eq!(was.match_id, is.match_id);
        assert_eq!(was.your_rating_change, is.your_rating_change);
        for (a, b) in was.seats.iter().zip(&is.seats) {
            if a.user_id == alice.user_id {
                assert_eq!(b.display_name, "Deleted player");
                assert_ne!(b.user_id, alice.user_id);
                keys.push(b.user_id.clone());
            } else {
                assert_eq!(a, b);
            }
        }
    }
    assert_eq!(keys.len(), 2, "alice sat in two of bob's matches");
    assert_eq!(keys[0], keys[1], "one anonymous key per deleted player");
    // The anonymous key names no account.
    let (code, _) = failure(
        client
            .get_profile(authed(
                pb::GetProfileRequest {
                    user_id: keys[0].clone(),
                },
                &bob.access_token,
            ))
            .await,
    );
    assert_eq!(code, Code::NotFound);

    let board = client
        .leaderboard(authed(pb::LeaderboardRequest::default(), &bob.access_token))
        .await
        .unwrap()
        .into_inner();
    assert!(!board.entries.is_empty());
    assert!(
        board
            .entries
            .iter()
            .all(|e| e.user_id != alice.user_id && e.display_name != "alice")
    );

    // Her notices, push devices and reports (filed and about her) went; the others'
    // report stays, and so does the moderators' audit of what they did about her.
    assert!(store.notices(alice_id, page, now).await.unwrap().is_empty());
    assert_eq!(store.unread_notices(alice_id, now).await.unwrap().count, 0);
    assert!(store.push_devices(alice_id).await.unwrap().is_empty());
    assert!(store.reports_by(alice_id).await.unwrap().is_empty());
    assert!(store.reports_of(alice_id).await.unwrap().is_empty());
    let about_carol = store.reports_of(carol_id).await.unwrap();
    assert_eq!(about_carol.len(), 1, "{about_carol:?}");
    assert_eq!(about_carol[0].comment, "between others");
    assert_eq!(store.audit_of(alice_id).await.unwrap(), audit_before);

    // The username is free again.
    let again = register(&app, "alice").await;
    assert_ne!(again.user_id, alice.user_id);
}

/// A player's own view of their account and lists, to compare before and after
/// another player's deletion.
#[derive(Debug)]
struct View {
    profile: pb::Profile,
    /// Every user id in their friend lists (friends, incoming, outgoing, blocked).
    linked: Vec<String>,
}

async fn views<S: Store>(app: &TestApp<S>, players: &[&pb::AuthTokens]) -> Vec<View> {
    let mut client = app.client().await;
    let mut views = Vec::new();
    for player in players {
        let profile = client
            .get_profile(authed(
                pb::GetProfileRequest::default(),
                &player.access_token,
            ))
            .await
            .unwrap()
            .into_inner()
            .profile
            .unwrap();
        let list = client
            .list_friends(authed(pb::ListFriendsRequest {}, &player.access_token))
            .await
            .unwrap()
            .into_inner();
        let linked = [list.friends, list.incoming, list.outgoing, list.blocked]
            .into_iter()
            .flatten()
            .map(|f| f.user_id)
            .collect();
        views.push(View { profile, linked });
    }
    views
}

async fn history<S: Store>(app: &TestApp<S>, player: &pb::AuthTokens) -> Vec<pb::MatchSummary> {
    app.client()
        .await
        .match_history(authed(
            pb::MatchHistoryRequest::default(),
            &player.access_token,
        ))
        .await
        .unwrap()
        .into_inner()
        .matches
}

async fn a_deleted_guest_device_makes_a_new_guest<S: Store>(store: S) {
    let app = spawn_app(store).await;
    let mut client = app.client().await;
    let guest = tokens(
        client
            .guest_login(guest_req("device-gone"))
            .await
            .unwrap()
            .into_inner()
            .tokens,
    );
    client
        .delete_account(authed(
            delete_with_device("device-gone"),
            &guest.access_token,
        ))
        .await
        .unwrap();
    let status = refresh(&app, &guest.refresh_token).await.unwrap_err();
    assert_eq!(status.code(), Code::Unauthenticated);
    let fresh = tokens(
        client
            .guest_login(guest_req("device-gone"))
            .await
            .unwrap()
            .into_inner()
            .tokens,
    );
    assert_ne!(fresh.user_id, guest.user_id, "the device makes a new guest");
    let profile = client
        .get_profile(authed(
            pb::GetProfileRequest::default(),
            &fresh.access_token,
        ))
        .await
        .unwrap()
        .into_inner()
        .profile
        .unwrap();
    assert_eq!(profile.matches_played, 0);
}

async fn delete_account_needs_the_right_proof<S: Store>(store: S) {
    let app = spawn_app(store).await;
    let mut client = app.client().await;
    let owner = register(&app, "hoda").await;
    let guest = tokens(
        client
            .guest_login(guest_req("device-proof"))
            .await
            .unwrap()
            .into_inner()
            .tokens,
    );
    let before = app.counts().await;
    let cases = [
        (
            &owner,
            pb::DeleteAccountRequest { proof: None },
            Code::InvalidArgument,
            "proof",
        ),
        (
            &owner,
            delete_with_password("wrong password"),
            Code::PermissionDenied,
            "does not match",
        ),
        (
            &owner,
            delete_with_password(""),
            Code::InvalidArgument,
            "password: must not be empty",
        ),
        (
            &owner,
            delete_with_device("device-proof"),
            Code::InvalidArgument,
            "device_id",
        ),
        (
            &guest,
            delete_with_password(PASSWORD),
            Code::InvalidArgument,
            "password",
        ),
        (
            &guest,
            delete_with_device("another-device"),
            Code::PermissionDenied,
            "does not match",
        ),
        (
            &guest,
            delete_with_device(""),
            Code::InvalidArgument,
            "device_id",
        ),
    ];
    for (who, request, code, message) in cases {
        let (got, text) = failure(
            client
                .delete_account(authed(request, &who.access_token))
                .await,
        );
        assert_eq!(got, code, "{text}");
        assert!(text.contains(message), "{text:?} should name {message:?}");
    }
    let (code, _) = failure(client.delete_account(delete_with_password(PASSWORD)).await);
    assert_eq!(code, Code::Unauthenticated);
    let (code, _) = failure(
        client
            .delete_account(authed(delete_with_password(PASSWORD), &app.service_token()))
            .await,
    );
    assert_eq!(code, Code::PermissionDenied);
    assert_eq!(
        app.counts().await,
        before,
        "a refused deletion deletes nothing"
    );
    // Wrong proofs count like failed logins.
    let mut limited = false;
    for _ in 0..20 {
        let (code, _) = failure(
            client
                .delete_account(authed(
                    delete_with_password("still wrong"),
                    &owner.access_token,
                ))
                .await,
        );
        if code == Code::ResourceExhausted {
            limited = true;
            break;
        }
        assert_eq!(code, Code::PermissionDenied);
    }
    assert!(limited, "wrong passwords are rate limited");
}

async fn a_match_recorded_after_the_deletion_names_a_placeholder<S: Store>(store: S) {
    let app = spawn_app(store).await;
    let mut client = app.client().await;
    let gone = register(&app, "nour").await;
    let stays = register(&app, "omar").await;
    let rating_before = rating(&app, &stays).await;
    client
        .delete_account(authed(delete_with_password(PASSWORD), &gone.access_token))
        .await
        .unwrap();
    // game-session records the match that was being played, naming the old id.
    let recorded = client
        .record_match(authed(
            pb::RecordMatchRequest {
                record: Some(match_record("late", &gone.user_id, &stays.user_id, true)),
            },
            &app.service_token(),
        ))
        .await
        .expect("recorded, not refused (the outbox would retry it for ever)")
        .into_inner();
    assert!(
        recorded.rating_changes.is_empty(),
        "only one rated player left"
    );
    let history = history(&app, &stays).await;
    assert_eq!(history.len(), 1);
    let seat = &history[0].seats[0];
    assert_eq!(seat.display_name, "Deleted player");
    assert_eq!(seat.user_id, "", "the placeholder has no key at all");
    assert_eq!(rating(&app, &stays).await, rating_before);
    // A truly unknown user is still refused.
    let (code, _) = failure(
        client
            .record_match(authed(
                pb::RecordMatchRequest {
                    record: Some(match_record(
                        "unknown",
                        &uuid::Uuid::now_v7().to_string(),
                        &stays.user_id,
                        true,
                    )),
                },
                &app.service_token(),
            ))
            .await,
    );
    assert_eq!(code, Code::InvalidArgument);
}

async fn rating<S: Store>(app: &TestApp<S>, player: &pb::AuthTokens) -> f64 {
    app.client()
        .await
        .get_profile(authed(
            pb::GetProfileRequest::default(),
            &player.access_token,
        ))
        .await
        .unwrap()
        .into_inner()
        .profile
        .unwrap()
        .rating
}

/// Every row of every table of accounts' schema, and of every analyst view, as JSON
/// text, sorted.
async fn dump(pool: &sqlx::PgPool) -> Vec<(String, String)> {
    let relations: Vec<String> = sqlx::query_scalar(
        "SELECT table_schema || '.' || table_name FROM information_schema.tables
         WHERE table_schema IN ('public', 'analyst') AND table_name <> '_sqlx_migrations'
         ORDER BY 1",
    )
    .fetch_all(pool)
    .await
    .unwrap();
    let mut rows = Vec::new();
    for relation in relations {
        // A notice's payload is protobuf: its text shown as text, so names and ids in it
        // count.
        let sql = if relation == "public.notices" {
            "SELECT (to_jsonb(t) || jsonb_build_object('payload', encode(t.payload, 'escape')))::TEXT
             FROM public.notices t"
                .to_owned()
        } else {
            format!("SELECT to_jsonb(t)::TEXT FROM {relation} t")
        };
        let texts: Vec<String> = sqlx::query_scalar(sqlx::AssertSqlSafe(sql))
            .fetch_all(pool)
            .await
            .unwrap();
        rows.extend(texts.into_iter().map(|row| (relation.clone(), row)));
    }
    rows.sort();
    rows
}

/// The deletion on PostgreSQL, row by row: no row of any table or analyst view holds
/// the deleted player's id, username, display name or friend code afterwards; every
/// row that did not hold them before is byte-for-byte unchanged; the rows of their
/// matches differ only in their seat (anonymous key, "Deleted player").
#[sqlx::test(migrations = "./migrations")]
async fn deletion_leaves_every_other_row_as_it_was(pool: sqlx::PgPool) {
    let app = spawn_app(accounts::PgStore::new(pool.clone())).await;
    let mut client = app.client().await;
    let gone = client
        .register(pb::RegisterRequest {
            display_name: "Zeinab Q".into(),
            ..register_req("zeinab", PASSWORD)
        })
        .await
        .unwrap()
        .into_inner()
        .tokens
        .unwrap();
    let code = client
        .get_profile(authed(pb::GetProfileRequest::default(), &gone.access_token))
        .await
        .unwrap()
        .into_inner()
        .profile
        .unwrap()
        .friend_code
        .replace('-', "");
    let others: Vec<pb::AuthTokens> =
        vec![register(&app, "yusuf").await, register(&app, "xena").await];
    FriendLinks::new()
        .friends(&gone, &others[0])
        .request(&others[1], &gone)
        .request(&others[0], &others[1])
        .make(&mut client)
        .await;
    client
        .set_display_name(authed(
            pb::SetDisplayNameRequest {
                display_name: "Zeinab R".into(),
            },
            &gone.access_token,
        ))
        .await
        .unwrap();
    let service = app.service_token();
    for (id, a, b) in [
        ("m-1", &gone.user_id, &others[0].user_id),
        ("m-2", &others[1].user_id, &gone.user_id),
        ("m-3", &gone.user_id, &others[1].user_id),
        ("m-4", &others[0].user_id, &others[1].user_id),
    ] {
        let mut record = match_record(id, a, b, true);
        for seat in &mut record.seats {
            if seat.user_id == gone.user_id {
                seat.display_name = "Zeinab Q".into();
            }
        }
        client
            .record_match(authed(
                pb::RecordMatchRequest {
                    record: Some(record),
                },
                &service,
            ))
            .await
            .unwrap();
    }
    // A push device of theirs and one of another's; a report they filed, one about
    // them, and one between the others.
    for (token, who) in [
        ("zeinab-device-token", &gone),
        ("yusuf-device-token", &others[0]),
    ] {
        client
            .register_push_token(authed(fcm(token, "en"), &who.access_token))
            .await
            .unwrap();
    }
    let report = |target: &pb::AuthTokens, comment: &str| pb::ReportPlayerRequest {
        user_id: target.user_id.clone(),
        reason: pb::ReportReason::Other as i32,
        match_id: String::new(),
        comment: comment.into(),
    };
    for (by, req) in [
        (&gone, report(&others[0], "filed by the deleted player")),
        (&others[1], report(&gone, "about the deleted player")),
        (&others[0], report(&others[1], "between the others")),
    ] {
        client
            .report_player(authed(req, &by.access_token))
            .await
            .unwrap();
    }
    let personal = [
        gone.user_id.clone(),
        "zeinab".to_owned(),
        "Zeinab".to_owned(),
        code.clone(),
        "the deleted player".to_owned(),
    ];
    let holds_personal = |row: &str| personal.iter().any(|p| row.contains(p.as_str()));
    let before = dump(&pool).await;
    assert!(before.iter().any(|(_, row)| holds_personal(row)));
    assert!(
        before
            .iter()
            .any(|(relation, row)| relation == "public.notices" && holds_personal(row)),
        "notices name the player (requests, match results)"
    );

    client
        .delete_account(authed(delete_with_password(PASSWORD), &gone.access_token))
        .await
        .unwrap();
    let after = dump(&pool).await;

    let left: Vec<&(String, String)> = after
        .iter()
        .filter(|(_, row)| holds_personal(row))
        .collect();
    assert!(left.is_empty(), "personal data left: {left:#?}");
    let relation_rows = |relation: &str| {
        after
            .iter()
            .filter(|(r, _)| r == relation)
            .map(|(_, row)| row.clone())
            .collect::<Vec<_>>()
    };
    let reports = relation_rows("public.player_reports");
    assert_eq!(reports.len(), 1, "{reports:#?}");
    assert!(reports[0].contains("between the others"));
    let devices = relation_rows("public.push_devices");
    assert_eq!(devices.len(), 1, "{devices:#?}");
    assert!(devices[0].contains("yusuf-device-token"));
    // Every row that held nothing of the deleted player is still there, unchanged.
    let untouched: Vec<&(String, String)> = before
        .iter()
        .filter(|(relation, row)| !holds_personal(row) && !relation.starts_with("analyst."))
        .collect();
    for row in &untouched {
        assert!(after.contains(row), "changed or lost: {row:?}");
    }
    // The anonymous key took the id's place in the match rows and the analyst views.
    let key: uuid::Uuid = sqlx::query_scalar(
        "SELECT DISTINCT user_id FROM match_players WHERE user_id NOT IN (SELECT id FROM users)",
    )
    .fetch_one(&pool)
    .await
    .unwrap();
    let rows: i64 =
        sqlx::query_scalar("SELECT count(*) FROM analyst.match_players WHERE user_id = $1")
            .bind(key)
            .fetch_one(&pool)
            .await
            .unwrap();
    assert_eq!(
        rows, 3,
        "the analyst views show the deleted player by the key alone"
    );
    let names: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM matches, jsonb_array_elements(seats) s
         WHERE s ->> 'user_id' = $1::TEXT AND s ->> 'display_name' = 'Deleted player'",
    )
    .bind(key)
    .fetch_one(&pool)
    .await
    .unwrap();
    assert_eq!(names, 3);
    // The matches' rows differ only in that seat.
    let strip = |rows: &[(String, String)], id: &str| -> Vec<serde_json::Value> {
        let mut matches: Vec<serde_json::Value> = rows
            .iter()
            .filter(|(relation, _)| relation == "public.matches")
            .map(|(_, row)| {
                let mut value: serde_json::Value = serde_json::from_str(row).unwrap();
                let seats = value["seats"].as_array_mut().unwrap();
                seats.retain(|s| s["user_id"] != id);
                value
            })
            .collect();
        matches.sort_by_key(|m| m["match_id"].to_string());
        matches
    };
    assert_eq!(
        strip(&before, &gone.user_id),
        strip(&after, &key.to_string())
    );
    // And the deletion's one trace: the hash of the id, which names no one by itself.
    let kept: i64 = sqlx::query_scalar("SELECT count(*) FROM deleted_accounts")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(kept, 1);
}
