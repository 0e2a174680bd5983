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

const ISS: &str = "basra-accounts";
const AUD: &str = "basra";

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

    let token = operator_token(&pem, &kid, ISS, AUD, Duration::from_secs(60)).unwrap();
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

    admin.close(&room.room_id, "test").await.unwrap();
    let closed = admin.rooms(Some(RoomStatus::Closed), "", "").await.unwrap();
    assert!(closed.iter().any(|r| r.room_id == room.room_id));

    let drained = admin.drain("", Duration::from_secs(5)).await.unwrap();
    assert!(!drained.replica.is_empty());

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
        Duration::from_secs(60),
    )
    .unwrap();
    let forged = Admin::connect(&backend.endpoints.game, &forged)
        .await
        .unwrap();
    assert!(forged.rooms(None, "", "").await.is_err());
    assert!(
        operator_token(&pem, &kid, ISS, AUD, Duration::from_secs(7200)).is_err(),
        "operator tokens are short-lived"
    );
    backend.stop().await.unwrap();
}
