//! DeleteAccount across the services: a guest with a live Play stream (watching another
//! player's public room against the computer, game-session: a player seated in a match
//! cannot also queue) and a queued FindMatch search (matchmaking) deletes their account; both streams end within 5 s with UNAUTHENTICATED ("this account was
//! deleted"), every service refuses the old token, and the device signs in to a new guest.

use std::time::{Duration, Instant};

use basra::lobby;
use basra_e2e::spawn_backend;
use basra_proto::basra::accounts::v1::delete_account_request::Proof;
use basra_proto::basra::accounts::v1::{DeleteAccountRequest, GetProfileRequest};
use basra_proto::basra::common::v1::{BotLevel, RoomVisibility, RuleSettings};
use basra_proto::basra::game::v1::play_request::Kind;
use basra_proto::basra::game::v1::{Join, PlayRequest};
use basra_proto::basra::matchmaking::v1::{FindMatchRequest, ListPublicRoomsRequest};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;

/// Reads `stream` until it ends with a status, within 5 s of `since`.
async fn ended<T>(stream: &mut tonic::Streaming<T>, since: Instant) -> tonic::Status {
    loop {
        let left = Duration::from_secs(5).saturating_sub(since.elapsed());
        match tokio::time::timeout(left, stream.message())
            .await
            .expect("the stream ends within 5 s of the deletion")
        {
            Ok(Some(_)) => continue,
            Ok(None) => panic!("the stream ended OK, not with the deletion"),
            Err(status) => return status,
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deletion_ends_the_players_play_stream_and_search() {
    let backend = spawn_backend().await.expect("backend");
    let device = "deleted-with-streams";
    let ana = backend.guest(device).await.expect("signed in");

    // A live Play stream: watching another player's public room against the computer.
    let host = backend
        .guest("deleted-with-streams-host")
        .await
        .expect("host");
    let room = lobby::create_room(
        &host,
        RoomVisibility::Public,
        vec![1],
        BotLevel::Easy,
        RuleSettings::default(),
    )
    .await
    .expect("room");
    let (tx, rx) = mpsc::channel(4);
    tx.send(PlayRequest {
        kind: Some(Kind::Join(Join {
            room_id: room.room_id.clone(),
            last_seen_seq: None,
            spectate: true,
        })),
    })
    .await
    .unwrap();
    let mut play = ana
        .game()
        .play(ReceiverStream::new(rx))
        .await
        .expect("play stream")
        .into_inner();
    play.message().await.expect("first event").expect("open");

    // A queued search.
    let mut search = ana
        .matchmaking()
        .find_match(FindMatchRequest {
            ticket_id: "deleted-ticket".into(),
            ranked: false,
            preset: None,
            allow_bots: Some(false),
        })
        .await
        .expect("search")
        .into_inner();
    search.message().await.expect("queued").expect("an update");

    let started = Instant::now();
    let deleted = ana
        .accounts()
        .delete_account(DeleteAccountRequest {
            proof: Some(Proof::DeviceId(device.into())),
        })
        .await
        .expect("deleted")
        .into_inner();
    assert_eq!(deleted.matches_kept, 0);
    for (what, status) in [
        ("Play", ended(&mut play, started).await),
        ("FindMatch", ended(&mut search, started).await),
    ] {
        assert_eq!(
            status.code(),
            tonic::Code::Unauthenticated,
            "{what}: {status:?}"
        );
        assert!(status.message().contains("deleted"), "{what}: {status:?}");
    }
    drop(tx);

    // Every service refuses the old token; the device is a new guest now.
    let refused = ana
        .accounts()
        .get_profile(GetProfileRequest::default())
        .await
        .unwrap_err();
    assert_eq!(refused.code(), tonic::Code::Unauthenticated, "{refused:?}");
    let refused = ana
        .matchmaking()
        .list_public_rooms(ListPublicRoomsRequest::default())
        .await
        .unwrap_err();
    assert_eq!(refused.code(), tonic::Code::Unauthenticated, "{refused:?}");
    assert!(refused.message().contains("deleted"), "{refused:?}");
    let refused = ana
        .game()
        .play(tokio_stream::empty())
        .await
        .map(|_| ())
        .unwrap_err();
    assert_eq!(refused.code(), tonic::Code::Unauthenticated, "{refused:?}");
    let again = backend.guest(device).await.expect("signed in again");
    assert_ne!(again.user_id, ana.user_id);
    backend.stop().await.unwrap();
}
