//! LinkPassword and LinkProvider through a real tonic client, on PostgreSQL and the
//! memory store: a guest with a friend, a rated match and a rating links a password or a
//! provider account and keeps its id, rating, history and friends; its old refresh
//! tokens stop working; every documented status is pinned.

use accounts::store::Store;
use basra_platform::auth::Role;
use basra_proto::basra::accounts::v1 as pb;
use tonic::Code;
use uuid::Uuid;

use crate::grpc::{failure, guest_req, login_req, register};
use crate::helpers::{FriendLinks, TestApp, authed, duel, test_settings, tokens};
use crate::oidc_issuer::{TestIssuer, good};
use crate::provider::google;

on_both_stores! {
    cases {
        a_guest_links_a_password_and_keeps_everything,
        link_password_statuses,
        a_guest_links_a_provider_and_keeps_everything,
        link_provider_statuses,
    }
}

async fn app_with<S: Store>(store: S, issuer: &TestIssuer) -> TestApp<S> {
    let mut settings = test_settings(&[]);
    settings.providers.google = Some(issuer.settings());
    TestApp::builder(store).settings(settings).spawn().await
}

/// A guest (device `device`) with a friend (`bob`) and one rated match won against
/// them; answers the guest's tokens and its profile before linking.
async fn guest_with_a_past<S: Store>(
    app: &TestApp<S>,
    device: &str,
) -> (pb::AuthTokens, pb::Profile) {
    let mut client = app.client().await;
    let guest = tokens(
        client
            .guest_login(guest_req(device))
            .await
            .unwrap()
            .into_inner()
            .tokens,
    );
    let bob = register(app, &format!("bob_{}", device.replace('-', "_"))).await;
    FriendLinks::new()
        .friends(&guest, &bob)
        .make(&mut client)
        .await;
    let (g, b) = (
        Uuid::parse_str(&guest.user_id).unwrap(),
        Uuid::parse_str(&bob.user_id).unwrap(),
    );
    app.service
        .store()
        .record_match(
            &duel(&format!("m-{device}"), g, b, 0, true, 5),
            chrono::Utc::now(),
        )
        .await
        .unwrap();
    let profile = profile(app, &guest.access_token).await;
    assert_eq!(profile.matches_played, 1);
    assert!(profile.rating > 1500.0);
    (guest, profile)
}

async fn profile<S: Store>(app: &TestApp<S>, token: &str) -> pb::Profile {
    app.client()
        .await
        .get_profile(authed(pb::GetProfileRequest::default(), token))
        .await
        .unwrap()
        .into_inner()
        .profile
        .unwrap()
}

/// The linked account is the guest's: same id, rating and matches, the friend still
/// there, not a guest any more, and the guest's old refresh token refused.
async fn assert_kept<S: Store>(
    app: &TestApp<S>,
    guest: &pb::AuthTokens,
    before: &pb::Profile,
    linked: &pb::AuthTokens,
) {
    assert_eq!(linked.user_id, guest.user_id);
    assert!(!linked.is_guest);
    let after = profile(app, &linked.access_token).await;
    assert!(!after.is_guest);
    assert_eq!(after.rating, before.rating);
    assert_eq!(after.matches_played, before.matches_played);
    assert_eq!(after.wins, before.wins);
    let mut client = app.client().await;
    let friends = client
        .list_friends(authed(
            pb::ListFriendsRequest::default(),
            &linked.access_token,
        ))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(friends.friends.len(), 1);
    let history = client
        .match_history(authed(
            pb::MatchHistoryRequest::default(),
            &linked.access_token,
        ))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(history.matches.len(), 1);
    let (code, _) = failure(
        client
            .refresh(pb::RefreshRequest {
                refresh_token: guest.refresh_token.clone(),
            })
            .await,
    );
    assert_eq!(
        code,
        Code::Unauthenticated,
        "the guest's refresh token is revoked"
    );
    client
        .refresh(pb::RefreshRequest {
            refresh_token: linked.refresh_token.clone(),
        })
        .await
        .unwrap();
}

fn link_password(username: &str, password: &str) -> pb::LinkPasswordRequest {
    pb::LinkPasswordRequest {
        username: username.into(),
        password: password.into(),
    }
}

async fn a_guest_links_a_password_and_keeps_everything<S: Store>(store: S) {
    let app = TestApp::builder(store)
        .settings(test_settings(&[]))
        .spawn()
        .await;
    let (guest, before) = guest_with_a_past(&app, "device-1").await;
    let mut client = app.client().await;
    let linked = tokens(
        client
            .link_password(authed(
                link_password("Nour", "a long password"),
                &guest.access_token,
            ))
            .await
            .unwrap()
            .into_inner()
            .tokens,
    );
    assert_kept(&app, &guest, &before, &linked).await;
    assert_eq!(profile(&app, &linked.access_token).await.username, "Nour");
    // Login with the new password signs in to the same account; the device is a
    // registered account's now.
    let login = tokens(
        client
            .login(login_req("nour", "a long password"))
            .await
            .unwrap()
            .into_inner()
            .tokens,
    );
    assert_eq!(login.user_id, guest.user_id);
    let (code, _) = failure(client.guest_login(guest_req("device-1")).await);
    assert_eq!(code, Code::FailedPrecondition);
}

fn token_of<S: Store>(app: &TestApp<S>, user_id: Uuid, role: Role, guest: bool) -> String {
    app.token(user_id, role, guest)
}

async fn link_password_statuses<S: Store>(store: S) {
    let app = TestApp::builder(store)
        .settings(test_settings(&[]))
        .spawn()
        .await;
    let mut client = app.client().await;
    let guest = tokens(
        client
            .guest_login(guest_req("device-2"))
            .await
            .unwrap()
            .into_inner()
            .tokens,
    );
    let registered = register(&app, "taken_name").await;
    let good = link_password("fresh_name", "a long password");
    let cases = [
        (
            "no token",
            tonic::Request::new(good.clone()),
            Code::Unauthenticated,
        ),
        (
            "a service token",
            authed(
                good.clone(),
                &token_of(&app, Uuid::now_v7(), Role::Service, false),
            ),
            Code::PermissionDenied,
        ),
        (
            "a registered caller",
            authed(good.clone(), &registered.access_token),
            Code::FailedPrecondition,
        ),
        (
            "a taken username",
            authed(
                link_password("Taken_Name", "a long password"),
                &guest.access_token,
            ),
            Code::AlreadyExists,
        ),
        (
            "a bad username",
            authed(
                link_password("no spaces allowed", "a long password"),
                &guest.access_token,
            ),
            Code::InvalidArgument,
        ),
        (
            "a short password",
            authed(link_password("fresh_name", "short"), &guest.access_token),
            Code::InvalidArgument,
        ),
        (
            "a guest that no longer exists",
            authed(
                good.clone(),
                &token_of(&app, Uuid::now_v7(), Role::Player, true),
            ),
            Code::NotFound,
        ),
    ];
    for (case, request, expected) in cases {
        let (code, message) = failure(client.link_password(request).await);
        assert_eq!(code, expected, "{case}: {message}");
    }
    // None of them linked anything: the guest is still a guest.
    assert!(profile(&app, &guest.access_token).await.is_guest);
}

fn link_google(id_token: &str, nonce: &str) -> pb::LinkProviderRequest {
    pb::LinkProviderRequest {
        provider: pb::IdentityProvider::Google.into(),
        id_token: id_token.into(),
        nonce: nonce.into(),
    }
}

async fn a_guest_links_a_provider_and_keeps_everything<S: Store>(store: S) {
    let issuer = TestIssuer::start().await;
    let app = app_with(store, &issuer).await;
    let (guest, before) = guest_with_a_past(&app, "device-3").await;
    let mut client = app.client().await;
    let linked = tokens(
        client
            .link_provider(authed(
                link_google(&good("g-sub", "n1"), "n1"),
                &guest.access_token,
            ))
            .await
            .unwrap()
            .into_inner()
            .tokens,
    );
    assert_kept(&app, &guest, &before, &linked).await;
    // SignInWithProvider with that provider account signs in to the same account.
    let signed_in = client
        .sign_in_with_provider(google(&good("g-sub", "n2"), "n2"))
        .await
        .unwrap()
        .into_inner();
    assert!(!signed_in.created);
    assert_eq!(signed_in.tokens.unwrap().user_id, guest.user_id);
    // The device is a registered account's now.
    let (code, message) = failure(client.guest_login(guest_req("device-3")).await);
    assert_eq!(code, Code::FailedPrecondition);
    assert!(message.contains("provider"), "{message}");
}

async fn link_provider_statuses<S: Store>(store: S) {
    let issuer = TestIssuer::start().await;
    let app = app_with(store, &issuer).await;
    let mut client = app.client().await;
    let guest = tokens(
        client
            .guest_login(guest_req("device-4"))
            .await
            .unwrap()
            .into_inner()
            .tokens,
    );
    // A provider account that already has its own Basra account.
    client
        .sign_in_with_provider(google(&good("owned", "n0"), "n0"))
        .await
        .unwrap();
    let registered = register(&app, "someone").await;
    let good_req = link_google(&good("free", "n1"), "n1");
    let cases = [
        (
            "no token",
            tonic::Request::new(good_req.clone()),
            Code::Unauthenticated,
        ),
        (
            "a service token",
            authed(
                good_req.clone(),
                &token_of(&app, Uuid::now_v7(), Role::Service, false),
            ),
            Code::PermissionDenied,
        ),
        (
            "a registered caller",
            authed(good_req.clone(), &registered.access_token),
            Code::FailedPrecondition,
        ),
        (
            "a subject bound to another account",
            authed(link_google(&good("owned", "n2"), "n2"), &guest.access_token),
            Code::AlreadyExists,
        ),
        (
            "a refused token",
            authed(
                link_google(&good("free", "n3"), "other"),
                &guest.access_token,
            ),
            Code::Unauthenticated,
        ),
        (
            "no provider",
            authed(
                pb::LinkProviderRequest {
                    provider: 0,
                    ..good_req.clone()
                },
                &guest.access_token,
            ),
            Code::InvalidArgument,
        ),
        (
            "apple is off",
            authed(
                pb::LinkProviderRequest {
                    provider: pb::IdentityProvider::Apple.into(),
                    ..good_req.clone()
                },
                &guest.access_token,
            ),
            Code::FailedPrecondition,
        ),
        (
            "a guest that no longer exists",
            authed(
                good_req.clone(),
                &token_of(&app, Uuid::now_v7(), Role::Player, true),
            ),
            Code::NotFound,
        ),
    ];
    for (case, request, expected) in cases {
        let (code, message) = failure(client.link_provider(request).await);
        assert_eq!(code, expected, "{case}: {message}");
    }
    assert!(profile(&app, &guest.access_token).await.is_guest);
}
