//! AccountsAdminService through real tonic clients, on PostgreSQL and the memory store:
//! bans end the player's open feed within 5 s and refuse their calls and sign-ins,
//! unbans restore them, renames and deletions work, every action is in the audit table,
//! and only operators may call.

use std::time::Duration;

use accounts::store::Store;
use basra_platform::auth::{Caller, Role};
use basra_proto::basra::accounts::v1 as pb;
use basra_proto::basra::accounts::v1::accounts_admin_service_client::AccountsAdminServiceClient;
use tokio_stream::StreamExt as _;
use tonic::Code;
use uuid::Uuid;

use crate::grpc::{failure, login_req, register};
use crate::helpers::{TestApp, authed, spawn_app};

on_both_stores! {
    cases {
        a_ban_ends_streams_refuses_calls_and_an_unban_restores,
        rename_and_delete_on_a_players_behalf,
        only_operators_may_moderate_and_inputs_are_checked,
        the_player_key_signs_neither_operators_nor_services,
    }
}

pub(crate) fn operator_token<S: Store>(app: &TestApp<S>, operator: Uuid) -> String {
    app.token(operator, Role::Operator, false)
}

pub(crate) async fn admin<S: Store>(
    app: &TestApp<S>,
) -> AccountsAdminServiceClient<tonic::transport::Channel> {
    AccountsAdminServiceClient::new(app.channel().await)
}

async fn a_ban_ends_streams_refuses_calls_and_an_unban_restores<S: Store>(store: S) {
    let app = spawn_app(store).await;
    let mut client = app.client().await;
    let mut admin = admin(&app).await;
    let operator = Uuid::now_v7();
    let op = app.named_operator_token(operator, "ops-nour");
    let player = register(&app, "mallory").await;
    let mut feed = client
        .watch_friends(authed(
            pb::WatchFriendsRequest::default(),
            &player.access_token,
        ))
        .await
        .unwrap()
        .into_inner();
    feed.next().await.unwrap().unwrap();

    let started = std::time::Instant::now();
    admin
        .ban_player(authed(
            pb::BanPlayerRequest {
                user_id: player.user_id.clone(),
                reason: "abuse in chat".into(),
                expires_at: None,
            },
            &op,
        ))
        .await
        .unwrap();
    let ended = tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            match feed.next().await {
                Some(Ok(_)) => continue,
                Some(Err(status)) => return status,
                None => panic!("the feed ended OK, not with the ban"),
            }
        }
    })
    .await
    .expect("the banned player's feed ends within 5 s");
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(ended.code(), Code::PermissionDenied, "{ended:?}");
    assert!(ended.message().contains("abuse in chat"), "{ended:?}");
    // Their next call, their refresh and their sign-in are refused, with the reason.
    let (code, text) = failure(
        client
            .get_profile(authed(
                pb::GetProfileRequest::default(),
                &player.access_token,
            ))
            .await,
    );
    assert_eq!(code, Code::PermissionDenied, "{text}");
    assert!(text.contains("abuse in chat"), "{text}");
    let (code, _) = failure(
        client
            .refresh(pb::RefreshRequest {
                refresh_token: player.refresh_token.clone(),
            })
            .await,
    );
    assert_eq!(code, Code::PermissionDenied);
    let (code, _) = failure(
        client
            .login(login_req("mallory", "correct horse battery"))
            .await,
    );
    assert_eq!(code, Code::PermissionDenied);

    admin
        .unban_player(authed(
            pb::UnbanPlayerRequest {
                user_id: player.user_id.clone(),
                reason: "appeal accepted".into(),
            },
            &op,
        ))
        .await
        .unwrap();
    client
        .get_profile(authed(
            pb::GetProfileRequest::default(),
            &player.access_token,
        ))
        .await
        .expect("unbanned: the token works again");
    // The refresh refused during the ban did not use the token up.
    client
        .refresh(pb::RefreshRequest {
            refresh_token: player.refresh_token.clone(),
        })
        .await
        .expect("unbanned: the refresh token refused during the ban works again");
    client
        .login(login_req("mallory", "correct horse battery"))
        .await
        .expect("unbanned: signs in again");

    let audit = app
        .service
        .store()
        .audit_of(player.user_id.parse().unwrap())
        .await
        .unwrap();
    let actions: Vec<(&str, &str)> = audit
        .iter()
        .map(|e| (e.action.as_str(), e.reason.as_str()))
        .collect();
    assert_eq!(
        actions,
        [("ban", "abuse in chat"), ("unban", "appeal accepted")]
    );
    assert!(audit.iter().all(|e| e.operator_id == operator));
    assert!(
        audit.iter().all(|e| e.operator_name == "ops-nour"),
        "who acted, by the name the token gives: {audit:?}"
    );
    assert!(
        audit[0].detail.starts_with("9999-12-31"),
        "a ban for good: {}",
        audit[0].detail
    );
}

async fn rename_and_delete_on_a_players_behalf<S: Store>(store: S) {
    let app = spawn_app(store).await;
    let mut client = app.client().await;
    let mut admin = admin(&app).await;
    let operator = Uuid::now_v7();
    let op = operator_token(&app, operator);
    let player = register(&app, "rude_name").await;
    let renamed = admin
        .rename_player(authed(
            pb::RenamePlayerRequest {
                user_id: player.user_id.clone(),
                display_name: "  Player   Renamed ".into(),
                reason: "offensive name".into(),
            },
            &op,
        ))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(renamed.display_name, "Player Renamed");
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
    assert_eq!(profile.display_name, "Player Renamed");
    // Renames are not limited like the player's own changes.
    for i in 0..4 {
        admin
            .rename_player(authed(
                pb::RenamePlayerRequest {
                    user_id: player.user_id.clone(),
                    display_name: format!("Name {i}"),
                    reason: "testing".into(),
                },
                &op,
            ))
            .await
            .unwrap();
    }
    let deleted = admin
        .delete_player(authed(
            pb::DeletePlayerRequest {
                user_id: player.user_id.clone(),
                reason: "the player asked by e-mail".into(),
            },
            &op,
        ))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(deleted.matches_kept, 0);
    let (code, _) = failure(
        client
            .get_profile(authed(
                pb::GetProfileRequest::default(),
                &player.access_token,
            ))
            .await,
    );
    assert_eq!(code, Code::Unauthenticated, "deleted");
    let audit = app
        .service
        .store()
        .audit_of(player.user_id.parse().unwrap())
        .await
        .unwrap();
    let actions: Vec<&str> = audit.iter().map(|e| e.action.as_str()).collect();
    assert_eq!(
        actions,
        ["rename", "rename", "rename", "rename", "rename", "delete"]
    );
    assert_eq!(audit[0].detail, "Player Renamed");
}

async fn only_operators_may_moderate_and_inputs_are_checked<S: Store>(store: S) {
    let app = spawn_app(store).await;
    let mut admin = admin(&app).await;
    let op = operator_token(&app, Uuid::now_v7());
    let player = register(&app, "nadia").await;
    let ban = |user_id: &str, reason: &str, expires: Option<i64>| pb::BanPlayerRequest {
        user_id: user_id.into(),
        reason: reason.into(),
        expires_at: expires.map(|seconds| prost_types::Timestamp { seconds, nanos: 0 }),
    };
    let good = || ban(&player.user_id, "spam", None);
    let (code, _) = failure(admin.ban_player(good()).await);
    assert_eq!(code, Code::Unauthenticated);
    for token in [player.access_token.clone(), app.service_token()] {
        let (code, text) = failure(admin.ban_player(authed(good(), &token)).await);
        assert_eq!(code, Code::PermissionDenied, "{text}");
        assert!(text.contains("operator"), "{text}");
    }
    let past = chrono::Utc::now().timestamp() - 60;
    for (request, code, field) in [
        (
            ban("not-an-id", "spam", None),
            Code::InvalidArgument,
            "user_id",
        ),
        (
            ban(&player.user_id, "  ", None),
            Code::InvalidArgument,
            "reason",
        ),
        (
            ban(&player.user_id, &"x".repeat(501), None),
            Code::InvalidArgument,
            "reason",
        ),
        (
            ban(&player.user_id, "spam", Some(past)),
            Code::InvalidArgument,
            "expires_at",
        ),
        (
            ban(&Uuid::now_v7().to_string(), "spam", None),
            Code::NotFound,
            "no such user",
        ),
    ] {
        let (got, text) = failure(admin.ban_player(authed(request, &op)).await);
        assert_eq!(got, code, "{text}");
        assert!(text.contains(field), "{text:?} should name {field}");
    }
    let (code, text) = failure(
        admin
            .rename_player(authed(
                pb::RenamePlayerRequest {
                    user_id: player.user_id.clone(),
                    display_name: "Bot (hard)".into(),
                    reason: "x".into(),
                },
                &op,
            ))
            .await,
    );
    assert_eq!(code, Code::InvalidArgument, "{text}");
    assert!(
        app.service
            .store()
            .audit_of(player.user_id.parse().unwrap())
            .await
            .unwrap()
            .is_empty(),
        "a refused action is not audited"
    );
    // A ban with an end lapses by itself.
    let until = chrono::Utc::now().timestamp() + 2;
    admin
        .ban_player(authed(ban(&player.user_id, "cool down", Some(until)), &op))
        .await
        .unwrap();
    let mut client = app.client().await;
    let (code, _) = failure(
        client
            .get_profile(authed(
                pb::GetProfileRequest::default(),
                &player.access_token,
            ))
            .await,
    );
    assert_eq!(code, Code::PermissionDenied);
    tokio::time::sleep(Duration::from_millis(2500)).await;
    client
        .get_profile(authed(
            pb::GetProfileRequest::default(),
            &player.access_token,
        ))
        .await
        .expect("the ban lapsed");
}

/// accounts' own key signs player tokens only: an operator or a service token signed with
/// it is refused (UNAUTHENTICATED) on the admin and the internal service, while the same
/// roles signed with the keys trusted for them pass.
async fn the_player_key_signs_neither_operators_nor_services<S: Store>(store: S) {
    let app = spawn_app(store).await;
    let mut admin = admin(&app).await;
    let mut client = app.client().await;
    let player = register(&app, "karim").await;
    let with_player_key = |role| {
        let caller = Caller {
            user_id: Uuid::now_v7(),
            role,
            guest: false,
        };
        app.service
            .issuer()
            .issue(&caller, Duration::from_secs(300))
            .unwrap()
            .token
    };
    let find = |token: &str| {
        authed(
            pb::FindPlayersRequest {
                query: "karim".into(),
                limit: 0,
            },
            token,
        )
    };
    let players = |token: &str| {
        authed(
            pb::GetPlayersRequest {
                user_ids: vec![player.user_id.clone()],
                include_blocks: false,
            },
            token,
        )
    };
    let (code, text) = failure(
        admin
            .find_players(find(&with_player_key(Role::Operator)))
            .await,
    );
    assert_eq!(code, Code::Unauthenticated, "{text}");
    assert!(text.contains("may not sign operator"), "{text}");
    let (code, text) = failure(
        client
            .get_players(players(&with_player_key(Role::Service)))
            .await,
    );
    assert_eq!(code, Code::Unauthenticated, "{text}");
    assert!(text.contains("may not sign service"), "{text}");
    let found = admin
        .find_players(find(&operator_token(&app, Uuid::now_v7())))
        .await
        .unwrap()
        .into_inner()
        .players;
    assert_eq!(found.len(), 1);
    let named = client
        .get_players(players(&app.service_token()))
        .await
        .unwrap()
        .into_inner()
        .players;
    assert_eq!(named.len(), 1);
}
