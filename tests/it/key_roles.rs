//! Each signing key signs only the roles it is trusted for, at every service: a token of
//! every (key, role) pair calls one method of each role at each of the three services,
//! started as separate servers with one key each (accounts' for players, game-session's
//! and matchmaking's for services, an operator key), and the answer is the table's:
//! UNAUTHENTICATED where the service does not trust the key for that role,
//! PERMISSION_DENIED where it does but the method wants another role, served otherwise;
//! and a token not valid yet (`nbf` an hour ahead) is refused everywhere. Both with the
//! test harness's keys and with the services started as `deploy/` configures them.

use std::time::Duration;

use basra_e2e::spawn_backend;
use basra_platform::auth::{Caller, Role, SigningKey, TokenIssuer};
use basra_proto::basra::accounts::v1 as accounts;
use basra_proto::basra::game::v1 as game;
use basra_proto::basra::matchmaking::v1 as mm;
use tonic::transport::Channel;
use tonic::{Code, Request};

/// What a call's answer says about its token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    /// UNAUTHENTICATED: the key may not sign this role here.
    KeyRefused,
    /// PERMISSION_DENIED: a good token of a role the method does not serve.
    RoleRefused,
    /// Anything else: past the token and role checks (the empty request may still be
    /// refused for its content).
    Served,
}

fn outcome<T>(answer: Result<T, tonic::Status>) -> Outcome {
    match answer {
        Err(status) if status.code() == Code::Unauthenticated => Outcome::KeyRefused,
        Err(status) if status.code() == Code::PermissionDenied => Outcome::RoleRefused,
        _ => Outcome::Served,
    }
}

fn authed<T>(message: T, token: &str) -> Request<T> {
    let mut request = Request::new(message);
    request
        .metadata_mut()
        .insert("authorization", format!("Bearer {token}").parse().unwrap());
    request
}

/// Calls `method` of `service` (one method per role the services serve) with `token`.
async fn call(channel: Channel, service: &str, role: Role, token: &str) -> Outcome {
    use accounts::accounts_admin_service_client::AccountsAdminServiceClient;
    use accounts::accounts_internal_service_client::AccountsInternalServiceClient;
    use accounts::accounts_service_client::AccountsServiceClient;
    use game::game_admin_service_client::GameAdminServiceClient;
    use game::game_internal_service_client::GameInternalServiceClient;
    use game::game_service_client::GameServiceClient;
    use mm::event_admin_service_client::EventAdminServiceClient;
    use mm::matchmaking_service_client::MatchmakingServiceClient;
    match (service, role) {
        ("accounts", Role::Player) => outcome(
            AccountsServiceClient::new(channel)
                .get_profile(authed(accounts::GetProfileRequest::default(), token))
                .await,
        ),
        ("accounts", Role::Service) => outcome(
            AccountsInternalServiceClient::new(channel)
                .get_players(authed(accounts::GetPlayersRequest::default(), token))
                .await,
        ),
        ("accounts", Role::Operator) => outcome(
            AccountsAdminServiceClient::new(channel)
                .find_players(authed(accounts::FindPlayersRequest::default(), token))
                .await,
        ),
        ("game-session", Role::Player) => outcome(
            GameServiceClient::new(channel)
                .quick_chat(authed(game::QuickChatRequest::default(), token))
                .await,
        ),
        ("game-session", Role::Service) => outcome(
            GameInternalServiceClient::new(channel)
                .get_seat(authed(game::GetSeatRequest::default(), token))
                .await,
        ),
        ("game-session", Role::Operator) => outcome(
            GameAdminServiceClient::new(channel)
                .list_rooms(authed(game::ListRoomsRequest::default(), token))
                .await,
        ),
        ("matchmaking", Role::Operator) => outcome(
            EventAdminServiceClient::new(channel)
                .list_all_events(authed(mm::ListAllEventsRequest::default(), token))
                .await,
        ),
        ("matchmaking", Role::Player) => outcome(
            MatchmakingServiceClient::new(channel)
                .list_public_rooms(authed(mm::ListPublicRoomsRequest::default(), token))
                .await,
        ),
        other => unreachable!("no method for {other:?}"),
    }
}

/// Which keys each service trusts, for which roles (deploy/README.md, "Service identity").
fn trusted(service: &str, key: &str, role: Role) -> bool {
    matches!(
        (service, key, role),
        (_, "accounts", Role::Player)
            | ("accounts", "game-session" | "matchmaking", Role::Service)
            | ("game-session", "matchmaking", Role::Service)
            | (
                "accounts" | "game-session" | "matchmaking",
                "operator",
                Role::Operator
            )
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_key_signs_only_its_roles_at_every_service() {
    let backend = spawn_backend().await.expect("backend");
    let settings = ::accounts::Settings::load().unwrap();
    check(
        &backend.endpoints,
        &backend.signing_keys,
        (&settings.auth.issuer, &settings.auth.audience),
    )
    .await;
    backend.stop().await.unwrap();
}

/// The same table with the services started with the settings `deploy/` ships (their
/// ConfigMaps' trusted keys and roles, under the kids the manifests name).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_key_signs_only_its_roles_at_every_service_as_deployed() {
    let deployed = crate::deployed::spawn_deployed().await;
    let (issuer, audience) = deployed.issuer_audience.clone();
    check(
        &deployed.endpoints,
        &deployed.signing_keys,
        (&issuer, &audience),
    )
    .await;
    deployed.stop().await;
}

/// Calls a method of each role at each service with a token of every key and role and
/// holds each answer to [`trusted`]; then a player token not valid yet (`nbf`) at each.
async fn check(
    endpoints: &basra::session::Endpoints,
    keys: &[(&'static str, String, String)],
    (iss, aud): (&str, &str),
) {
    let services = [
        (
            "accounts",
            &endpoints.accounts,
            &[Role::Player, Role::Service, Role::Operator][..],
        ),
        (
            "game-session",
            &endpoints.game,
            &[Role::Player, Role::Service, Role::Operator][..],
        ),
        (
            "matchmaking",
            &endpoints.matchmaking,
            &[Role::Player, Role::Operator][..],
        ),
    ];
    let mut checked = 0;
    let mut wrong = Vec::new();
    for (key, kid, pem) in keys {
        let issuer = TokenIssuer::new(SigningKey::from_pem(kid, pem).unwrap(), iss, aud);
        for role in [Role::Player, Role::Service, Role::Operator] {
            let caller = Caller {
                user_id: uuid::Uuid::now_v7(),
                role,
                guest: false,
            };
            let token = issuer
                .issue(&caller, Duration::from_secs(300))
                .unwrap()
                .token;
            for (service, url, methods) in &services {
                let channel = Channel::from_shared(url.to_string())
                    .unwrap()
                    .connect()
                    .await
                    .unwrap();
                for method in *methods {
                    let expected = if !trusted(service, key, role) {
                        Outcome::KeyRefused
                    } else if role == *method {
                        Outcome::Served
                    } else {
                        Outcome::RoleRefused
                    };
                    let got = call(channel.clone(), service, *method, &token).await;
                    checked += 1;
                    if got != expected {
                        wrong.push(format!(
                            "{key} key, {role} token, {service}'s {method} method: \
                             {got:?}, expected {expected:?}"
                        ));
                    }
                }
            }
        }
    }
    assert_eq!(checked, 4 * 3 * 8);
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));

    // A player token signed with the right key but not valid for an hour yet (nbf) is
    // refused by every service, as an expired one is.
    let (_, kid, pem) = keys
        .iter()
        .find(|(whose, _, _)| *whose == "accounts")
        .expect("accounts' key");
    let now = jsonwebtoken::get_current_timestamp();
    let claims = serde_json::json!({
        "sub": uuid::Uuid::now_v7(), "role": "player", "guest": true,
        "iss": iss, "aud": aud, "iat": now, "nbf": now + 3600, "exp": now + 7200,
    });
    let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::EdDSA);
    header.kid = Some(kid.clone());
    let early = jsonwebtoken::encode(
        &header,
        &claims,
        &jsonwebtoken::EncodingKey::from_ed_pem(pem.as_bytes()).unwrap(),
    )
    .unwrap();
    for (service, url, _) in &services {
        let channel = Channel::from_shared(url.to_string())
            .unwrap()
            .connect()
            .await
            .unwrap();
        assert_eq!(
            call(channel, service, Role::Player, &early).await,
            Outcome::KeyRefused,
            "{service} refuses a token whose nbf is ahead"
        );
    }
}
