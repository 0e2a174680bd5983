//! The bulk calls matchmaking's events make (`CreateRooms`, `GetSeats`), each status the
//! .proto documents: every item means what the single call would (rooms as CreateRoom
//! makes them, seats as GetSeat answers them), in request order.

use basra_platform::auth::Role;
use basra_proto::basra::common::v1 as pb;
use basra_proto::basra::game::v1::{
    self as game, game_admin_service_client::GameAdminServiceClient,
    game_internal_service_client::GameInternalServiceClient, play_request::Kind,
    play_response::Event as E,
};
use basra_testkit::authed;
use basra_testkit::game_session::*;
use game_session::room::Occupant;
use tonic::Code;
use uuid::Uuid;

/// A two-player room as an event's clock asks for it.
fn event_room(room_id: &str, a: Uuid, b: Uuid) -> game::CreateRoomRequest {
    game::CreateRoomRequest {
        room_id: room_id.into(),
        seats: vec![player_seat(a), player_seat(b)],
        settings: Some(low_target()),
        ranked: false,
        allow_spectators: true,
        visibility: pb::RoomVisibility::Private as i32,
    }
}

fn rooms(n: usize) -> Vec<(String, Uuid, Uuid)> {
    (0..n)
        .map(|_| (Uuid::now_v7().to_string(), Uuid::now_v7(), Uuid::now_v7()))
        .collect()
}

async fn create_rooms(
    replica: &TestApp,
    token: &str,
    rooms: Vec<game::CreateRoomRequest>,
) -> Result<Vec<game::CreateRoomResponse>, tonic::Status> {
    GameInternalServiceClient::new(replica.channel().await)
        .create_rooms(authed(game::CreateRoomsRequest { rooms }, token))
        .await
        .map(|answer| answer.into_inner().rooms)
}

async fn get_seats(
    replica: &TestApp,
    token: &str,
    seats: &[(&str, String)],
) -> Result<Vec<game::GetSeatsItem>, tonic::Status> {
    let seats = seats
        .iter()
        .map(|(room_id, user_id)| game::GetSeatRequest {
            room_id: (*room_id).to_owned(),
            user_id: user_id.clone(),
        })
        .collect();
    GameInternalServiceClient::new(replica.channel().await)
        .get_seats(authed(game::GetSeatsRequest { seats }, token))
        .await
        .map(|answer| answer.into_inner().seats)
}

/// CreateRooms makes every room as CreateRoom would (both players seated and named, in
/// 100-id lookups at accounts, the match started), answers in request order, makes
/// nothing again when sent again (`created` false), and refuses a whole request for one
/// bad item (INVALID_ARGUMENT naming it, nothing made), a request without rooms or with
/// more than 256, a room_id twice, a caller without a service token (PERMISSION_DENIED),
/// and any request while the replica drains (UNAVAILABLE).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_rooms_makes_each_room_once_and_refuses_a_request_with_a_bad_item() {
    let tokens = Tokens::new();
    let accounts = FakeAccounts::spawn(&tokens).await;
    let fake = accounts.fake.clone();
    let store = redis_store(&test_prefix()).await;
    let replica = TestApp::builder(&tokens)
        .store(store.clone())
        .accounts(accounts.link(&tokens))
        .spawn()
        .await;
    let service = tokens.service();

    let made = rooms(60);
    let requests: Vec<game::CreateRoomRequest> = made
        .iter()
        .map(|(id, a, b)| event_room(id, *a, *b))
        .collect();
    let answers = create_rooms(&replica, &service, requests.clone())
        .await
        .unwrap();
    let ids: Vec<&str> = answers.iter().map(|a| a.room_id.as_str()).collect();
    let asked: Vec<&str> = made.iter().map(|(id, _, _)| id.as_str()).collect();
    assert_eq!(ids, asked, "answered in request order");
    assert!(answers.iter().all(|a| a.created));
    assert!(
        answers
            .iter()
            .all(|a| a.settings.as_ref().and_then(|s| s.target_score) == Some(1))
    );
    let mut lookups = fake.lookups.lock().unwrap().clone();
    lookups.sort_unstable();
    assert_eq!(lookups, vec![20, 100], "120 players in two GetPlayers");
    for (id, a, b) in &made {
        let room = store.load(id).await.unwrap().expect("made").room;
        let names: Vec<(String, String)> = room
            .seats
            .iter()
            .map(|s| match &s.occupant {
                Occupant::Player { user_id, name } => (user_id.clone(), name.clone()),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(
            names,
            vec![
                (a.to_string(), fake_name(&a.to_string())),
                (b.to_string(), fake_name(&b.to_string()))
            ]
        );
        assert_eq!(room.status, game_session::room::Status::InProgress);
    }

    // Sent again (a retry after a lost answer): nothing is made again.
    let again = create_rooms(&replica, &service, requests.clone())
        .await
        .unwrap();
    assert_eq!(again.len(), 60);
    assert!(again.iter().all(|a| !a.created));

    // One bad item refuses the request, naming it; its good items are not made.
    let (fresh, x, y) = (Uuid::now_v7().to_string(), Uuid::now_v7(), Uuid::now_v7());
    let mut one_seat = event_room(&Uuid::now_v7().to_string(), x, y);
    one_seat.seats.pop();
    let err = create_rooms(&replica, &service, vec![event_room(&fresh, x, y), one_seat])
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument, "{err}");
    assert!(err.message().starts_with("rooms[1]: "), "{err}");
    assert!(store.load(&fresh).await.unwrap().is_none(), "nothing made");
    let err = create_rooms(
        &replica,
        &service,
        vec![event_room(&fresh, x, y), event_room(&fresh, y, x)],
    )
    .await
    .unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument, "{err}");
    assert!(err.message().contains("twice"), "{err}");
    for count in [0, 257] {
        let many = rooms(count)
            .iter()
            .map(|(id, a, b)| event_room(id, *a, *b))
            .collect();
        let err = create_rooms(&replica, &service, many).await.unwrap_err();
        assert_eq!(err.code(), Code::InvalidArgument, "{count}: {err}");
    }
    assert!(store.load(&fresh).await.unwrap().is_none(), "nothing made");

    // A service token only.
    let player = tokens.token(x, Role::Player);
    let err = create_rooms(&replica, &player, vec![event_room(&fresh, x, y)])
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::PermissionDenied, "{err}");

    // A draining replica makes no room.
    GameAdminServiceClient::new(replica.channel().await)
        .drain_replica(authed(
            game::DrainReplicaRequest {
                replica: String::new(),
                deadline: None,
            },
            &tokens.token(Uuid::now_v7(), Role::Operator),
        ))
        .await
        .unwrap();
    let err = create_rooms(&replica, &service, vec![event_room(&fresh, x, y)])
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::Unavailable, "{err}");
    assert!(store.load(&fresh).await.unwrap().is_none());
    accounts.stop().await;
    replica.stop().await;
}

/// GetSeats answers each item as GetSeat does, in request order (a room asked for
/// several seats read once), an unknown room as that item's NOT_FOUND and an unreadable
/// one as its INTERNAL without failing the call; it refuses a request without items,
/// with more than 1,000, or with an empty id (INVALID_ARGUMENT naming the item), and a
/// caller without a service token (PERMISSION_DENIED).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_seats_answers_each_item_as_get_seat_and_an_unknown_room_in_its_item() {
    let tokens = Tokens::new();
    let prefix = test_prefix();
    let store = redis_store(&prefix).await;
    let replica = TestApp::builder(&tokens).store(store.clone()).spawn().await;
    let service = tokens.service();
    // A match in play (both joined), one that ended (seat 1 resigned), a waiting room,
    // and one whose stored state is garbage.
    let (playing, a, b) = replica.room().settings(low_target()).join().await;
    let (ended, mut c, d) = replica.room().settings(low_target()).join().await;
    d.send(Kind::Resign(game::Resign {})).await;
    c.until(|e| matches!(e, E::MatchEnded(_))).await;
    let (waiting, w) = (Uuid::now_v7().to_string(), Uuid::now_v7());
    create_room(
        replica.channel().await,
        &tokens,
        &waiting,
        vec![
            player_seat(w),
            game::SeatAssignment {
                occupant: Some(game::seat_assignment::Occupant::Open(game::OpenSeat {})),
                ..Default::default()
            },
        ],
        low_target(),
    )
    .await
    .unwrap();
    let broken = Uuid::now_v7().to_string();
    create_room(
        replica.channel().await,
        &tokens,
        &broken,
        vec![player_seat(w), player_seat(Uuid::now_v7())],
        low_target(),
    )
    .await
    .unwrap();
    let key = basra_platform::redis::Keys::new(&prefix).unwrap().key(
        &format!("gs:{}", game_session::store::shard_of(&broken)),
        &format!("room:{broken}:state"),
    );
    let mut redis = redis::Client::open(basra_testkit::redis_url())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    let _: () = redis::cmd("HSET")
        .arg(&key)
        .arg("data")
        .arg("not a room")
        .query_async(&mut redis)
        .await
        .unwrap();

    let stranger = Uuid::now_v7().to_string();
    let asked: Vec<(&str, String)> = vec![
        (playing.as_str(), a.user.to_string()),
        ("no-such-room", a.user.to_string()),
        (ended.as_str(), c.user.to_string()),
        (playing.as_str(), stranger.clone()),
        (broken.as_str(), w.to_string()),
        (ended.as_str(), d.user.to_string()),
        (waiting.as_str(), w.to_string()),
        (playing.as_str(), b.user.to_string()),
    ];
    let items = get_seats(&replica, &service, &asked).await.unwrap();
    assert_eq!(items.len(), asked.len());
    let codes: Vec<Code> = items.iter().map(|i| Code::from_i32(i.code)).collect();
    assert_eq!(
        codes,
        [
            Code::Ok,
            Code::NotFound,
            Code::Ok,
            Code::Ok,
            Code::Internal,
            Code::Ok,
            Code::Ok,
            Code::Ok
        ]
    );
    assert!(items[1].seat.is_none() && !items[1].message.is_empty());
    assert!(items[4].seat.is_none());
    // Each OK item is exactly GetSeat's answer.
    let mut internal = GameInternalServiceClient::new(replica.channel().await);
    for ((room_id, user_id), item) in asked.iter().zip(&items) {
        if item.code != 0 {
            continue;
        }
        let single = internal
            .get_seat(authed(
                game::GetSeatRequest {
                    room_id: (*room_id).to_owned(),
                    user_id: user_id.clone(),
                },
                &service,
            ))
            .await
            .unwrap()
            .into_inner();
        assert_eq!(item.seat.as_ref(), Some(&single), "{room_id} {user_id}");
    }
    let seat = |i: usize| items[i].seat.clone().unwrap();
    assert_eq!(seat(0).status(), pb::RoomStatus::InProgress);
    assert_eq!((seat(0).seat, seat(0).joined), (Some(0), true));
    assert_eq!(seat(2).status(), pb::RoomStatus::Finished);
    assert_eq!(seat(2).winner_seat, Some(0), "seat 1 resigned");
    assert_eq!(seat(5).winner_seat, Some(0));
    assert_eq!((seat(3).seat, seat(3).joined), (None, false), "a stranger");
    assert_eq!(seat(6).status(), pb::RoomStatus::Waiting);

    // The whole call's refusals.
    let err = get_seats(&replica, &service, &[]).await.unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument, "{err}");
    let many: Vec<(&str, String)> = (0..1001)
        .map(|_| (playing.as_str(), stranger.clone()))
        .collect();
    let err = get_seats(&replica, &service, &many).await.unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument, "{err}");
    let thousand = &many[..1000];
    assert_eq!(
        get_seats(&replica, &service, thousand).await.unwrap().len(),
        1000
    );
    for bad in [("", stranger.clone()), (playing.as_str(), String::new())] {
        let err = get_seats(
            &replica,
            &service,
            &[(playing.as_str(), stranger.clone()), bad],
        )
        .await
        .unwrap_err();
        assert_eq!(err.code(), Code::InvalidArgument, "{err}");
        assert!(err.message().starts_with("seats[1]: "), "{err}");
    }
    let player = tokens.token(a.user, Role::Player);
    let err = get_seats(&replica, &player, &asked).await.unwrap_err();
    assert_eq!(err.code(), Code::PermissionDenied, "{err}");
    replica.stop().await;
}
