//! `basra admin` against real services: an operator token minted offline from the
//! operator key lists, inspects and closes rooms and drains the replica; a player's token
//! and a token from an untrusted key are refused.

use std::time::Duration;

use basra::admin::{Admin, operator_token, rooms_table};
use basra::lobby;
use basra_e2e::spawn_backend;
use basra_platform::auth::SigningKey;
use basra_proto::basra::accounts::v1::GuestLoginRequest;
use basra_proto::basra::accounts::v1::accounts_service_client::AccountsServiceClient;
use basra_proto::basra::common::v1::{BotLevel, RoomStatus, RoomVisibility, RuleSettings};
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::{HealthCheckRequest, health_client::HealthClient};

const ISS: &str = "basra-accounts";
const AUD: &str = "basra";
const GAME: &str = "basra.game.v1.GameService";

/// gRPC health at an endpoint.
struct Health(String);

impl Health {
    async fn of(&self, service: &str) -> ServingStatus {
        let channel = tonic::transport::Endpoint::from_shared(self.0.clone())
            .expect("an endpoint")
            .connect()
            .await
            .expect("connect");
        let mut client = HealthClient::new(channel);
        let answer = client
            .check(HealthCheckRequest {
                service: service.into(),
            })
            .await
            .expect("health answers");
        answer.into_inner().status()
    }

    /// Waits (up to 5 s) until `service` reports `status`.
    async fn until(&self, service: &str, status: ServingStatus) {
        for _ in 0..50 {
            if self.of(service).await == status {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("{service} did not report {status:?} within 5 s");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_lists_inspects_closes_and_drains() {
    let backend = spawn_backend().await.expect("backend");
    let (kid, pem) = backend.operator_key.clone().expect("an operator key");
    let ana = backend.guest("admin-ana").await.expect("signed in");
    let room = lobby::create_room(
        &ana,
        RoomVisibility::Private,
        vec![1],
        BotLevel::Hard,
        RuleSettings::default(),
    )
    .await
    .expect("room");

    let token = operator_token(&pem, &kid, ISS, AUD, "ops-ana", Duration::from_secs(60)).unwrap();
    let admin = Admin::connect(&backend.endpoints.game, &token)
        .await
        .unwrap();
    let rooms = admin.rooms(None, "", "").await.unwrap();
    assert!(rooms.iter().any(|r| r.room_id == room.room_id), "{rooms:?}");
    assert!(rooms_table(&rooms).contains(&room.room_id));
    let closed_before = admin.rooms(Some(RoomStatus::Closed), "", "").await.unwrap();
    assert!(closed_before.iter().all(|r| r.room_id != room.room_id));

    let inspected = admin.room(&room.room_id).await.unwrap();
    assert_eq!(inspected.summary.unwrap().room_id, room.room_id);
    // game-session's views say who is a guest (accounts' word when the seat was taken).
    let seats = inspected.public_view.unwrap().seats;
    let player = seats.iter().find(|s| !s.user_id.is_empty()).unwrap();
    assert!(player.is_guest, "a guest's seat says so: {seats:?}");
    assert!(
        seats
            .iter()
            .filter(|s| s.user_id.is_empty())
            .all(|s| !s.is_guest)
    );

    admin.close(&room.room_id, "test").await.unwrap();
    let closed = admin.rooms(Some(RoomStatus::Closed), "", "").await.unwrap();
    assert!(closed.iter().any(|r| r.room_id == room.room_id));

    let drained = admin.drain("", Duration::from_secs(5)).await.unwrap();
    assert!(!drained.replica.is_empty());
    // Draining: health says the game takes no new work (the process itself is alive, and
    // the admin service serves, to take it back), and no room is made.
    let health = Health(backend.endpoints.game.clone());
    health.until(GAME, ServingStatus::NotServing).await;
    assert_eq!(
        health.of("basra.game.v1.GameInternalService").await,
        ServingStatus::NotServing
    );
    assert_eq!(health.of("").await, ServingStatus::Serving);
    assert_eq!(
        health.of("basra.game.v1.GameAdminService").await,
        ServingStatus::Serving
    );
    let refused = lobby::create_room(
        &ana,
        RoomVisibility::Private,
        vec![1],
        BotLevel::Easy,
        RuleSettings::default(),
    )
    .await;
    assert!(refused.is_err(), "no room while draining: {refused:?}");
    // Taken back: serving again, rooms are made; a second undrain changes nothing.
    let undrained = admin.undrain("").await.unwrap();
    assert!(undrained.was_draining);
    assert_eq!(undrained.replica, drained.replica);
    health.until(GAME, ServingStatus::Serving).await;
    lobby::create_room(
        &ana,
        RoomVisibility::Private,
        vec![1],
        BotLevel::Easy,
        RuleSettings::default(),
    )
    .await
    .expect("a room once the drain has ended");
    assert!(!admin.undrain("").await.unwrap().was_draining);

    // A player is not an operator; a key nobody trusts signs nothing.
    let player_token = AccountsServiceClient::connect(backend.endpoints.accounts.clone())
        .await
        .unwrap()
        .guest_login(GuestLoginRequest {
            device_id: "admin-ben".into(),
            display_name: String::new(),
        })
        .await
        .unwrap()
        .into_inner()
        .tokens
        .unwrap()
        .access_token;
    let player = Admin::connect(&backend.endpoints.game, &player_token)
        .await
        .unwrap();
    let refused = player.rooms(None, "", "").await.unwrap_err();
    assert!(refused.to_string().contains("operator"), "{refused}");
    let stranger = SigningKey::generate();
    let forged = operator_token(
        &stranger.private_pem(),
        stranger.kid(),
        ISS,
        AUD,
        "ops-forger",
        Duration::from_secs(60),
    )
    .unwrap();
    let forged = Admin::connect(&backend.endpoints.game, &forged)
        .await
        .unwrap();
    assert!(forged.rooms(None, "", "").await.is_err());
    assert!(
        operator_token(&pem, &kid, ISS, AUD, "ops-ana", Duration::from_secs(7200)).is_err(),
        "operator tokens are short-lived"
    );
    backend.stop().await.unwrap();
}

/// `basra admin player`: an operator bans a player through accounts; the player's open
/// FindMatch stream (matchmaking) ends with PERMISSION_DENIED within 5 s, their calls to
/// every service are refused, an unban restores them; then the operator renames, finds,
/// shows and exports the player, and deletes the account.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_bans_and_unbans_a_player_in_every_service() {
    use basra::admin_player::PlayerAdmin;
    use basra_proto::basra::accounts::v1::GetProfileRequest;
    use basra_proto::basra::matchmaking::v1::FindMatchRequest;
    use basra_proto::basra::matchmaking::v1::matchmaking_service_client::MatchmakingServiceClient;

    let backend = spawn_backend().await.expect("backend");
    let (kid, pem) = backend.operator_key.clone().expect("an operator key");
    let mut accounts = AccountsServiceClient::connect(backend.endpoints.accounts.clone())
        .await
        .unwrap();
    let tokens = accounts
        .guest_login(GuestLoginRequest {
            device_id: "admin-banned".into(),
            display_name: String::new(),
        })
        .await
        .unwrap()
        .into_inner()
        .tokens
        .unwrap();
    let access = tokens.access_token.clone();
    let mut queue = MatchmakingServiceClient::connect(backend.endpoints.matchmaking.clone())
        .await
        .unwrap();
    let mut search = queue
        .find_match(basra_testkit::authed(
            FindMatchRequest {
                ticket_id: "banned-ticket".into(),
                ranked: false,
                preset: None,
                allow_bots: Some(false),
            },
            &access,
        ))
        .await
        .unwrap()
        .into_inner();
    search.message().await.unwrap().expect("queued");

    let token = operator_token(&pem, &kid, ISS, AUD, "ops-ana", Duration::from_secs(60)).unwrap();
    let admin = PlayerAdmin::connect(&backend.endpoints.accounts, &token)
        .await
        .unwrap();
    let started = std::time::Instant::now();
    admin
        .ban(&tokens.user_id, "abuse in chat", Some(24))
        .await
        .unwrap();
    let ended = loop {
        match tokio::time::timeout(Duration::from_secs(5), search.message())
            .await
            .expect("the search ends within 5 s")
        {
            Ok(Some(_)) => continue,
            Ok(None) => panic!("the search ended OK, not with the ban"),
            Err(status) => break status,
        }
    };
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(ended.code(), tonic::Code::PermissionDenied, "{ended:?}");
    assert!(ended.message().contains("abuse in chat"));
    let refused = accounts
        .get_profile(basra_testkit::authed(GetProfileRequest::default(), &access))
        .await
        .unwrap_err();
    assert_eq!(refused.code(), tonic::Code::PermissionDenied);

    admin.unban(&tokens.user_id, "appeal").await.unwrap();
    accounts
        .get_profile(basra_testkit::authed(GetProfileRequest::default(), &access))
        .await
        .expect("unbanned");
    // Rename, then delete on the player's behalf: their token is refused after.
    let renamed = admin
        .rename(&tokens.user_id, "  Renamed   Player ", "offensive name")
        .await
        .unwrap();
    assert_eq!(renamed.display_name, "Renamed Player");
    let profile = accounts
        .get_profile(basra_testkit::authed(GetProfileRequest::default(), &access))
        .await
        .unwrap()
        .into_inner()
        .profile
        .unwrap();
    assert_eq!(profile.display_name, "Renamed Player");
    // A player's token is no operator's.
    let player = PlayerAdmin::connect(&backend.endpoints.accounts, &tokens.access_token)
        .await
        .unwrap();
    let refused = player.unban(&tokens.user_id, "self").await.unwrap_err();
    assert!(refused.to_string().contains("operator"), "{refused}");
    // Find, show and export (`basra admin player find|show|export`), each but the
    // search audited.
    let found = admin.find(&tokens.user_id, 0).await.unwrap();
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].matched_by, "user_id");
    let by_name = admin.find("renamed pl", 0).await.unwrap();
    assert!(
        by_name
            .iter()
            .any(|p| p.user_id == tokens.user_id && p.matched_by == "display_name"),
        "{by_name:?}"
    );
    let shown = admin.show(&tokens.user_id, "ticket 7").await.unwrap();
    let text = basra::admin_player::describe(&shown);
    assert!(text.contains("\"Renamed Player\""), "{text}");
    assert!(text.contains("not banned"), "{text}");
    let actions: Vec<&str> = shown.audit.iter().map(|a| a.action.as_str()).collect();
    assert_eq!(actions, ["ban", "unban", "rename", "show"]);
    // The audit says who acted: the name the operator's token gives.
    assert!(
        shown.audit.iter().all(|a| a.operator_name == "ops-ana"),
        "{:?}",
        shown.audit
    );
    assert!(text.contains("ban by ops-ana"), "{text}");
    let mut document = Vec::new();
    let written = admin
        .export(&tokens.user_id, "the player asked support", &mut document)
        .await
        .unwrap();
    assert_eq!(written as usize, document.len());
    let document: serde_json::Value = serde_json::from_slice(&document).unwrap();
    assert_eq!(document["format"], "basra-account-export/1");
    assert_eq!(document["account"]["user_id"], tokens.user_id.as_str());
    assert_eq!(document["account"]["display_name"], "Renamed Player");
    let refused = player.find("x", 0).await.unwrap_err();
    assert!(refused.to_string().contains("operator"), "{refused}");
    let deleted = admin
        .delete(&tokens.user_id, "the player asked by mail")
        .await
        .unwrap();
    assert_eq!(deleted.matches_kept, 0);
    let gone = tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            match accounts
                .get_profile(basra_testkit::authed(GetProfileRequest::default(), &access))
                .await
            {
                Err(status) => break status,
                Ok(_) => tokio::time::sleep(Duration::from_millis(100)).await,
            }
        }
    })
    .await
    .expect("the deleted player's token is refused within 5 s");
    assert_eq!(gone.code(), tonic::Code::Unauthenticated, "{gone:?}");
    backend.stop().await.unwrap();
}

/// game-session started as `deploy/` configures it (`App::run`, not `basra dev`): a drain
/// turns its readiness (GameService) NOT_SERVING while liveness ("") stays SERVING, and
/// an undrain turns it back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deployed_replica_reports_its_drain_in_health_and_is_taken_back() {
    let deployed = crate::deployed::spawn_deployed().await;
    let admin = Admin::connect(&deployed.endpoints.game, &deployed.operator)
        .await
        .unwrap();
    let health = Health(deployed.endpoints.game.clone());
    health.until(GAME, ServingStatus::Serving).await;
    admin.drain("", Duration::from_secs(1)).await.unwrap();
    health.until(GAME, ServingStatus::NotServing).await;
    assert_eq!(health.of("").await, ServingStatus::Serving);
    // Only the replica serving the call is taken back through it: another name is
    // NOT_FOUND, and the drain holds.
    let other = admin.undrain("game-session-other").await.unwrap_err();
    let status = other
        .downcast_ref::<tonic::Status>()
        .expect("a gRPC status");
    assert_eq!(status.code(), tonic::Code::NotFound, "{status:?}");
    assert_eq!(health.of(GAME).await, ServingStatus::NotServing);
    let undrained = admin.undrain("").await.unwrap();
    assert!(undrained.was_draining);
    health.until(GAME, ServingStatus::Serving).await;
    deployed.stop().await;
}
