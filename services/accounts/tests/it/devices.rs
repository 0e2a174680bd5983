//! RegisterPushToken, RemovePushToken and the push token a Logout carries, through real
//! tonic clients on both stores: a token moves between accounts, goes at sign-out, with
//! sign-out everywhere and with the account; each documented status.

use accounts::store::Store;
use basra_platform::auth::Role;
use basra_proto::basra::accounts::v1 as pb;
use tonic::Code;
use uuid::Uuid;

use crate::helpers::{TestApp, authed, spawn_app, tokens};

on_both_stores! {
    cases in cases {
        push_tokens_move_between_accounts_and_go_at_sign_out,
        push_token_calls_answer_their_documented_statuses,
    }
}

const APNS_TOKEN: &str = "a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90";

pub(crate) fn fcm(token: &str, locale: &str) -> pb::RegisterPushTokenRequest {
    pb::RegisterPushTokenRequest {
        platform: pb::PushPlatform::Fcm as i32,
        token: token.into(),
        app_id: "online.basra.app".into(),
        locale: locale.into(),
        app_version: "2.4.1".into(),
        utc_offset_minutes: 120,
    }
}

pub(crate) async fn guest<S: Store>(app: &TestApp<S>, device: &str) -> pb::AuthTokens {
    tokens(
        app.client()
            .await
            .guest_login(pb::GuestLoginRequest {
                device_id: device.into(),
                display_name: String::new(),
            })
            .await
            .unwrap()
            .into_inner()
            .tokens,
    )
}

async fn devices<S: Store>(app: &TestApp<S>, who: &pb::AuthTokens) -> Vec<String> {
    let id = Uuid::parse_str(&who.user_id).unwrap();
    let devices = app.store().push_devices(id).await.unwrap();
    devices.into_iter().map(|d| d.token).collect()
}

mod cases {
    use super::*;

    pub(crate) async fn push_tokens_move_between_accounts_and_go_at_sign_out<S: Store>(store: S) {
        let app = spawn_app(store).await;
        let mut client = app.client().await;
        let (a, b) = (guest(&app, "device-a").await, guest(&app, "device-b").await);
        let registered = client
            .register_push_token(authed(fcm("fcm-1", "ar-EG"), &a.access_token))
            .await
            .unwrap()
            .into_inner();
        assert!(!registered.moved);
        let mut apns = fcm(APNS_TOKEN, "en-GB");
        apns.platform = pb::PushPlatform::Apns as i32;
        client
            .register_push_token(authed(apns, &a.access_token))
            .await
            .unwrap();
        assert_eq!(devices(&app, &a).await.len(), 2);

        // The device changes hands: its token moves.
        let moved = client
            .register_push_token(authed(fcm("fcm-1", "en"), &b.access_token))
            .await
            .unwrap()
            .into_inner();
        assert!(moved.moved);
        assert_eq!(devices(&app, &a).await, [APNS_TOKEN]);
        assert_eq!(devices(&app, &b).await, ["fcm-1"]);

        // Another account's token is not removed by RemovePushToken.
        let removed = client
            .remove_push_token(authed(
                pb::RemovePushTokenRequest {
                    token: "fcm-1".into(),
                },
                &a.access_token,
            ))
            .await
            .unwrap()
            .into_inner();
        assert!(!removed.removed);
        let removed = client
            .remove_push_token(authed(
                pb::RemovePushTokenRequest {
                    token: APNS_TOKEN.into(),
                },
                &a.access_token,
            ))
            .await
            .unwrap()
            .into_inner();
        assert!(removed.removed);
        assert!(devices(&app, &a).await.is_empty());

        // Logout with the device's token removes it with the sign-in; a token of another
        // account's stays.
        client
            .logout(pb::LogoutRequest {
                refresh_token: b.refresh_token.clone(),
                all_sessions: false,
                push_token: "fcm-1".into(),
            })
            .await
            .unwrap();
        assert!(devices(&app, &b).await.is_empty());
        let c = guest(&app, "device-c").await;
        for token in ["fcm-c1", "fcm-c2"] {
            client
                .register_push_token(authed(fcm(token, "en"), &c.access_token))
                .await
                .unwrap();
        }
        client
            .register_push_token(authed(fcm("fcm-a", "en"), &a.access_token))
            .await
            .unwrap();
        client
            .logout(pb::LogoutRequest {
                refresh_token: c.refresh_token.clone(),
                all_sessions: false,
                push_token: "fcm-a".into(),
            })
            .await
            .unwrap();
        assert_eq!(devices(&app, &a).await, ["fcm-a"]);
        assert_eq!(devices(&app, &c).await.len(), 2);

        // Signing out everywhere removes every token.
        let c = guest(&app, "device-c").await;
        client
            .logout(authed(
                pb::LogoutRequest {
                    refresh_token: c.refresh_token.clone(),
                    all_sessions: true,
                    push_token: String::new(),
                },
                &c.access_token,
            ))
            .await
            .unwrap();
        assert!(devices(&app, &c).await.is_empty());

        // Deleting the account removes its devices.
        client
            .delete_account(authed(
                pb::DeleteAccountRequest {
                    proof: Some(pb::delete_account_request::Proof::DeviceId(
                        "device-a".into(),
                    )),
                },
                &a.access_token,
            ))
            .await
            .unwrap();
        assert!(devices(&app, &a).await.is_empty());
    }

    pub(crate) async fn push_token_calls_answer_their_documented_statuses<S: Store>(store: S) {
        let app = spawn_app(store).await;
        let mut client = app.client().await;
        let a = guest(&app, "device-a").await;
        let shared = client.clone();
        let register = |req: pb::RegisterPushTokenRequest, token: String| {
            let mut client = shared.clone();
            async move {
                client
                    .register_push_token(authed(req, &token))
                    .await
                    .unwrap_err()
            }
        };

        // UNAUTHENTICATED: no token.
        let status = client
            .register_push_token(fcm("t", "en"))
            .await
            .unwrap_err();
        assert_eq!(status.code(), Code::Unauthenticated);
        // PERMISSION_DENIED: a service's or an operator's token.
        for role in [Role::Service, Role::Operator] {
            let token = app.token(Uuid::now_v7(), role, false);
            assert_eq!(
                register(fcm("t", "en"), token).await.code(),
                Code::PermissionDenied
            );
        }
        // NOT_FOUND: the account no longer exists.
        let ghost = app.token(Uuid::now_v7(), Role::Player, true);
        assert_eq!(register(fcm("t", "en"), ghost).await.code(), Code::NotFound);

        // INVALID_ARGUMENT, each naming its field.
        let bad: Vec<(&str, pb::RegisterPushTokenRequest)> = vec![
            (
                "platform",
                pb::RegisterPushTokenRequest {
                    platform: 0,
                    ..fcm("t", "en")
                },
            ),
            ("token", fcm("", "en")),
            ("token", fcm(&"x".repeat(4097), "en")),
            (
                "token",
                pb::RegisterPushTokenRequest {
                    platform: pb::PushPlatform::Apns as i32,
                    ..fcm("not-hex", "en")
                },
            ),
            (
                "app_id",
                pb::RegisterPushTokenRequest {
                    app_id: "online/basra".into(),
                    ..fcm("t", "en")
                },
            ),
            ("locale", fcm("t", "ar EG")),
            (
                "app_version",
                pb::RegisterPushTokenRequest {
                    app_version: "v".repeat(65),
                    ..fcm("t", "en")
                },
            ),
            (
                "utc_offset_minutes",
                pb::RegisterPushTokenRequest {
                    utc_offset_minutes: -841,
                    ..fcm("t", "en")
                },
            ),
        ];
        for (field, req) in bad {
            let status = register(req, a.access_token.clone()).await;
            assert_eq!(status.code(), Code::InvalidArgument, "{field}: {status:?}");
            assert!(status.message().contains(field), "{field}: {status:?}");
        }
        assert!(
            devices(&app, &a).await.is_empty(),
            "nothing refused was kept"
        );

        // RemovePushToken: UNAUTHENTICATED, PERMISSION_DENIED, INVALID_ARGUMENT.
        let remove = |token: &str| pb::RemovePushTokenRequest {
            token: token.into(),
        };
        let status = client.remove_push_token(remove("t")).await.unwrap_err();
        assert_eq!(status.code(), Code::Unauthenticated);
        let service = app.token(Uuid::now_v7(), Role::Service, false);
        let status = client
            .remove_push_token(authed(remove("t"), &service))
            .await
            .unwrap_err();
        assert_eq!(status.code(), Code::PermissionDenied);
        for token in [String::new(), "x".repeat(4097)] {
            let status = client
                .remove_push_token(authed(remove(&token), &a.access_token))
                .await
                .unwrap_err();
            assert_eq!(status.code(), Code::InvalidArgument);
            assert!(status.message().contains("token"), "{status:?}");
        }

        // Logout: a push token over 4,096 bytes is INVALID_ARGUMENT, and signs nothing out.
        let status = client
            .logout(pb::LogoutRequest {
                refresh_token: a.refresh_token.clone(),
                all_sessions: false,
                push_token: "x".repeat(4097),
            })
            .await
            .unwrap_err();
        assert_eq!(status.code(), Code::InvalidArgument);
        assert!(status.message().contains("push_token"), "{status:?}");
        client
            .refresh(pb::RefreshRequest {
                refresh_token: a.refresh_token.clone(),
            })
            .await
            .expect("the sign-in survived the refused Logout");
    }
}
