//! SignInWithProvider through a real tonic client, on PostgreSQL and the memory store,
//! against a local OpenID Connect issuer (`oidc_issuer`, no network): a good ID token
//! signs in and makes one account per subject; wrong audience, issuer, expiry, nonce,
//! unsigned, `alg: none`, HS256 and forged tokens are UNAUTHENTICATED; the issuer's key
//! rotation is followed, with the refetch rate-limited; the input and the provider being
//! off have their documented statuses; a provider account deletes itself with a fresh
//! provider token.

use std::time::Duration;

use accounts::store::Store;
use basra_proto::basra::accounts::v1 as pb;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use tokio_stream::StreamExt as _;
use tonic::Code;

use crate::grpc::failure;
use crate::helpers::{TestApp, authed, test_settings};
use crate::oidc_issuer::{self, FOREIGN, ISSUER, KEY_A, KEY_B, TestIssuer, claims, good, sign};

on_both_stores! {
    cases {
        a_good_token_signs_in_and_makes_one_account_per_subject,
        refused_tokens_are_unauthenticated_and_create_nothing,
        key_rotation_is_followed_and_refetches_are_rate_limited,
        input_off_and_unreachable_providers_have_their_statuses,
        a_provider_account_deletes_itself_with_a_fresh_token,
        banned_accounts_and_floods_are_refused,
    }
}

/// The refetch interval of these tests' key caches.
const REFETCH_MIN: Duration = Duration::from_secs(2);

/// The service with Google served by `issuer` (Apple off).
async fn app_with<S: Store>(store: S, issuer: &TestIssuer) -> TestApp<S> {
    let mut settings = test_settings(&[]);
    settings.providers.google = Some(issuer.settings());
    settings.providers.refetch_min_seconds = REFETCH_MIN.as_secs();
    TestApp::builder(store).settings(settings).spawn().await
}

pub(crate) fn google(id_token: &str, nonce: &str) -> pb::SignInWithProviderRequest {
    pb::SignInWithProviderRequest {
        provider: pb::IdentityProvider::Google.into(),
        id_token: id_token.into(),
        nonce: nonce.into(),
        display_name: String::new(),
    }
}

async fn sign_in<S: Store>(
    app: &TestApp<S>,
    request: pb::SignInWithProviderRequest,
) -> Result<pb::SignInWithProviderResponse, tonic::Status> {
    app.client()
        .await
        .sign_in_with_provider(request)
        .await
        .map(tonic::Response::into_inner)
}

async fn a_good_token_signs_in_and_makes_one_account_per_subject<S: Store>(store: S) {
    let issuer = TestIssuer::start().await;
    let app = app_with(store, &issuer).await;
    let users_before = app.counts().await.users;

    let first = sign_in(
        &app,
        pb::SignInWithProviderRequest {
            display_name: "Layla".into(),
            ..google(&good("sub-1", "n-1"), "n-1")
        },
    )
    .await
    .unwrap();
    assert!(first.created);
    let tokens = first.tokens.unwrap();
    assert!(!tokens.is_guest);
    assert_eq!(tokens.display_name, "Layla");

    // The same subject again (a new nonce, the second client id, the nonce as Apple's
    // guide sends it: hashed): the same account, not created.
    let mut second_claims = claims("sub-1", &sha256_hex("n-2"));
    second_claims["aud"] = oidc_issuer::CLIENT_IDS[1].into();
    let again = sign_in(&app, google(&sign(&second_claims, KEY_A.0, KEY_A.1), "n-2"))
        .await
        .unwrap();
    assert!(!again.created);
    assert_eq!(again.tokens.unwrap().user_id, tokens.user_id);

    // Another subject: another account, with a name the server picked.
    let other = sign_in(&app, google(&good("sub-2", "n-3"), "n-3"))
        .await
        .unwrap();
    assert!(other.created);
    let other = other.tokens.unwrap();
    assert_ne!(other.user_id, tokens.user_id);
    assert!(
        other.display_name.starts_with("Basra "),
        "{}",
        other.display_name
    );
    assert_eq!(app.counts().await.users, users_before + 2);

    // The tokens work: the profile is a registered account without a username, and the
    // refresh token rotates.
    let mut client = app.client().await;
    let profile = client
        .get_profile(authed(
            pb::GetProfileRequest::default(),
            &tokens.access_token,
        ))
        .await
        .unwrap()
        .into_inner()
        .profile
        .unwrap();
    assert_eq!(profile.user_id, tokens.user_id);
    assert!(!profile.is_guest);
    assert_eq!(profile.username, "");
    client
        .refresh(pb::RefreshRequest {
            refresh_token: tokens.refresh_token.clone(),
        })
        .await
        .unwrap();

    // The export names the provider and subject, and nothing else of the token (no
    // e-mail address).
    let mut stream = client
        .export_my_data(authed(pb::ExportMyDataRequest {}, &tokens.access_token))
        .await
        .unwrap()
        .into_inner();
    let mut document = Vec::new();
    while let Some(piece) = stream.next().await {
        document.extend(piece.unwrap().data);
    }
    let document: serde_json::Value = serde_json::from_slice(&document).unwrap();
    let linked = &document["account"]["sign_in_providers"];
    assert_eq!(linked.as_array().unwrap().len(), 1, "{linked}");
    assert_eq!(linked[0]["provider"], "google");
    assert_eq!(linked[0]["subject"], "sub-1");
    assert!(!document.to_string().contains("someone@example.com"));
    // One fetch of the key set served every sign-in.
    assert_eq!(issuer.fetches(), 1);
}

fn sha256_hex(s: &str) -> String {
    use sha2::Digest as _;
    sha2::Sha256::digest(s.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

async fn refused_tokens_are_unauthenticated_and_create_nothing<S: Store>(store: S) {
    let issuer = TestIssuer::start().await;
    let app = app_with(store, &issuer).await;
    let before = app.counts().await;
    let nonce = "the-nonce";
    let good_token = good("sub-x", nonce);
    let (head_and_payload, _signature) = good_token.rsplit_once('.').unwrap();
    let payload = head_and_payload.split_once('.').unwrap().1;

    let with = |edit: &dyn Fn(&mut serde_json::Value)| {
        let mut c = claims("sub-x", nonce);
        edit(&mut c);
        sign(&c, KEY_A.0, KEY_A.1)
    };
    let now = jsonwebtoken::get_current_timestamp();
    let mut hs256 = Header::new(Algorithm::HS256);
    hs256.kid = Some(KEY_A.0.into());
    let cases: Vec<(&str, String, &str)> = vec![
        (
            "wrong audience",
            with(&|c| c["aud"] = "someone.else".into()),
            nonce,
        ),
        (
            "wrong issuer",
            with(&|c| c["iss"] = "https://evil.test".into()),
            nonce,
        ),
        (
            "expired",
            with(&|c| {
                c["iat"] = (now - 7200).into();
                c["exp"] = (now - 3600).into();
            }),
            nonce,
        ),
        (
            "no subject",
            with(&|c| {
                c.as_object_mut().unwrap().remove("sub");
            }),
            nonce,
        ),
        (
            "no nonce",
            with(&|c| {
                c.as_object_mut().unwrap().remove("nonce");
            }),
            nonce,
        ),
        ("wrong nonce", good_token.clone(), "another-nonce"),
        ("unsigned", format!("{head_and_payload}."), nonce),
        (
            "alg none",
            // {"alg":"none","kid":"test-a"}
            format!("eyJhbGciOiJub25lIiwia2lkIjoidGVzdC1hIn0.{payload}."),
            nonce,
        ),
        (
            "HS256",
            jsonwebtoken::encode(
                &hs256,
                &claims("sub-x", nonce),
                &EncodingKey::from_secret(b"guess").unwrap(),
            )
            .unwrap(),
            nonce,
        ),
        (
            "foreign key, known kid",
            sign(&claims("sub-x", nonce), KEY_A.0, FOREIGN),
            nonce,
        ),
        (
            "foreign key, unknown kid",
            sign(&claims("sub-x", nonce), "forged", FOREIGN),
            nonce,
        ),
        ("not a JWT", "not.a.jwt".into(), nonce),
    ];
    for (case, token, nonce) in cases {
        let (code, message) = failure(
            app.client()
                .await
                .sign_in_with_provider(google(&token, nonce))
                .await,
        );
        assert_eq!(code, Code::Unauthenticated, "{case}: {message}");
        assert!(
            message.starts_with("the ID token is refused"),
            "{case}: {message}"
        );
    }
    assert_eq!(app.counts().await, before, "a refused token wrote nothing");
    // The good token still signs in (the refusals were not about the key set).
    assert!(
        sign_in(&app, google(&good_token, nonce))
            .await
            .unwrap()
            .created
    );
    let _ = ISSUER;
}

async fn key_rotation_is_followed_and_refetches_are_rate_limited<S: Store>(store: S) {
    let issuer = TestIssuer::start().await;
    let app = app_with(store, &issuer).await;
    let user = sign_in(&app, google(&good("rotating", "n0"), "n0"))
        .await
        .unwrap()
        .tokens
        .unwrap()
        .user_id;
    assert_eq!(issuer.fetches(), 1);

    // The issuer rotates to key B. Within REFETCH_MIN of the last fetch a token naming
    // the new kid is refused without another fetch (as is a flood of made-up kids) ...
    issuer.publish(&[KEY_B]);
    let rotated = sign(&claims("rotating", "n1"), KEY_B.0, KEY_B.1);
    let (code, _) = failure(
        app.client()
            .await
            .sign_in_with_provider(google(&rotated, "n1"))
            .await,
    );
    assert_eq!(code, Code::Unauthenticated);
    for i in 0..5 {
        let forged = sign(&claims("rotating", "n1"), &format!("made-up-{i}"), FOREIGN);
        let (code, _) = failure(
            app.client()
                .await
                .sign_in_with_provider(google(&forged, "n1"))
                .await,
        );
        assert_eq!(code, Code::Unauthenticated);
    }
    assert_eq!(issuer.fetches(), 1, "no fetch within the refetch interval");

    // ... and after it, the unknown kid fetches the set once and the new key signs in to
    // the same account.
    tokio::time::sleep(REFETCH_MIN + Duration::from_millis(200)).await;
    let again = sign_in(&app, google(&rotated, "n1")).await.unwrap();
    assert!(!again.created);
    assert_eq!(again.tokens.unwrap().user_id, user);
    assert_eq!(issuer.fetches(), 2);

    // The retired key A is gone from the new set: its tokens are refused now.
    let (code, _) = failure(
        app.client()
            .await
            .sign_in_with_provider(google(&good("rotating", "n2"), "n2"))
            .await,
    );
    assert_eq!(code, Code::Unauthenticated);
    assert_eq!(issuer.fetches(), 2);
}

async fn input_off_and_unreachable_providers_have_their_statuses<S: Store>(store: S) {
    let issuer = TestIssuer::start().await;
    // Apple's keys are at a port nobody listens on.
    let closed = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let dead_url = format!("http://{}/jwks", closed.local_addr().unwrap());
    drop(closed);
    let mut settings = test_settings(&[]);
    settings.providers.google = Some(issuer.settings());
    let app = TestApp::builder(store)
        .settings(settings.clone())
        .spawn()
        .await;
    let token = good("sub", "n");
    let cases = [
        (
            "no provider",
            pb::SignInWithProviderRequest {
                provider: pb::IdentityProvider::Unspecified.into(),
                ..google(&token, "n")
            },
            Code::InvalidArgument,
        ),
        (
            "unknown provider",
            pb::SignInWithProviderRequest {
                provider: 99,
                ..google(&token, "n")
            },
            Code::InvalidArgument,
        ),
        ("empty token", google("", "n"), Code::InvalidArgument),
        (
            "huge token",
            google(&"x".repeat(8193), "n"),
            Code::InvalidArgument,
        ),
        ("empty nonce", google(&token, ""), Code::InvalidArgument),
        (
            "huge nonce",
            google(&token, &"n".repeat(257)),
            Code::InvalidArgument,
        ),
        (
            "bad display name",
            pb::SignInWithProviderRequest {
                display_name: "Bot (hard)".into(),
                ..google(&token, "n")
            },
            Code::InvalidArgument,
        ),
        (
            "apple is off",
            pb::SignInWithProviderRequest {
                provider: pb::IdentityProvider::Apple.into(),
                ..google(&token, "n")
            },
            Code::FailedPrecondition,
        ),
    ];
    for (case, request, expected) in cases {
        let (code, message) = failure(app.client().await.sign_in_with_provider(request).await);
        assert_eq!(code, expected, "{case}: {message}");
    }

    // A provider whose keys cannot be fetched: UNAVAILABLE (retry), not UNAUTHENTICATED.
    let issuer_settings = issuer.settings();
    settings.providers.apple = Some(accounts::oidc::ProviderSettings {
        jwks_url: dead_url,
        ..issuer_settings
    });
    let app = TestApp::builder(accounts::MemoryStore::new())
        .settings(settings)
        .spawn()
        .await;
    let (code, message) = failure(
        app.client()
            .await
            .sign_in_with_provider(pb::SignInWithProviderRequest {
                provider: pb::IdentityProvider::Apple.into(),
                ..google(&token, "n")
            })
            .await,
    );
    assert_eq!(code, Code::Unavailable, "{message}");
}

async fn a_provider_account_deletes_itself_with_a_fresh_token<S: Store>(store: S) {
    let issuer = TestIssuer::start().await;
    let app = app_with(store, &issuer).await;
    let tokens = sign_in(&app, google(&good("leaving", "n1"), "n1"))
        .await
        .unwrap()
        .tokens
        .unwrap();
    let mut client = app.client().await;
    let delete = |proof| {
        authed(
            pb::DeleteAccountRequest { proof: Some(proof) },
            &tokens.access_token,
        )
    };
    use pb::delete_account_request::Proof;

    // A password is no proof for an account without one; another subject's token is not
    // this account's; a refused token is UNAUTHENTICATED.
    let (code, _) = failure(
        client
            .delete_account(delete(Proof::Password("whatever1".into())))
            .await,
    );
    assert_eq!(code, Code::InvalidArgument);
    let other = pb::ProviderProof {
        provider: pb::IdentityProvider::Google.into(),
        id_token: good("someone-else", "n2"),
        nonce: "n2".into(),
    };
    let (code, _) = failure(client.delete_account(delete(Proof::Provider(other))).await);
    assert_eq!(code, Code::PermissionDenied);
    let stale = pb::ProviderProof {
        provider: pb::IdentityProvider::Google.into(),
        id_token: good("leaving", "n3"),
        nonce: "not-n3".into(),
    };
    let (code, _) = failure(client.delete_account(delete(Proof::Provider(stale))).await);
    assert_eq!(code, Code::Unauthenticated);

    let fresh = pb::ProviderProof {
        provider: pb::IdentityProvider::Google.into(),
        id_token: good("leaving", "n4"),
        nonce: "n4".into(),
    };
    client
        .delete_account(delete(Proof::Provider(fresh)))
        .await
        .unwrap();
    // The link went with the account: the provider account signs up anew.
    let again = sign_in(&app, google(&good("leaving", "n5"), "n5"))
        .await
        .unwrap();
    assert!(again.created);
    assert_ne!(again.tokens.unwrap().user_id, tokens.user_id);
}

async fn banned_accounts_and_floods_are_refused<S: Store>(store: S) {
    let issuer = TestIssuer::start().await;
    // Two sign-ups per address in the window (a token bucket: a burst of two).
    let mut settings = test_settings(&[("BASRA_SIGNUP_LIMITS__PER_ADDRESS_MAX", "2")]);
    settings.providers.google = Some(issuer.settings());
    let app = TestApp::builder(store).settings(settings).spawn().await;
    let user = sign_in(&app, google(&good("banned", "n1"), "n1"))
        .await
        .unwrap()
        .tokens
        .unwrap()
        .user_id;
    // A banned account gets no tokens: PERMISSION_DENIED with the reason.
    app.service
        .revocations()
        .revoke(
            user.parse().unwrap(),
            basra_platform::revocation::Revoked::banned_for("cheating", Duration::from_secs(600)),
        )
        .await
        .unwrap();
    let (code, message) = failure(
        app.client()
            .await
            .sign_in_with_provider(google(&good("banned", "n2"), "n2"))
            .await,
    );
    assert_eq!(code, Code::PermissionDenied, "{message}");
    assert!(message.contains("cheating"), "{message}");
    // The third sign-in from this address within the window is limited, as Register's
    // and GuestLogin's are.
    let (code, message) = failure(
        app.client()
            .await
            .sign_in_with_provider(google(&good("another", "n3"), "n3"))
            .await,
    );
    assert_eq!(code, Code::ResourceExhausted, "{message}");
}
