//! Per-account stream limits, with the settings the services ship with, through `basra
//! dev` and through the separate services: one account cannot take a replica's streams
//! (Watch, Play, WatchFriends); the one past its limit is refused with RESOURCE_EXHAUSTED
//! and a retry hint, and a closed stream frees its slot.

use std::time::Duration;

use basra::lobby;
use basra::session::Session;
use basra_e2e::{Backend, spawn_backend, spawn_dev};
use basra_platform::error::retry_after_of;
use basra_platform::stream_limit::RETRY_AFTER;
use basra_proto::basra::accounts::v1::WatchFriendsRequest;
use basra_proto::basra::common::v1::{BotLevel, RoomVisibility, RuleSettings};
use basra_proto::basra::game::v1::play_request::Kind;
use basra_proto::basra::game::v1::{Join, PlayRequest, WatchRequest};
use tonic::Code;

/// The limits of the services' default settings.
const WATCH: usize = 8;
const PLAY: usize = 4;
const WATCH_FRIENDS: usize = 4;

fn refused(status: &tonic::Status, kind: &str) {
    assert_eq!(status.code(), Code::ResourceExhausted, "{status:?}");
    assert!(status.message().contains(kind), "{status:?}");
    assert_eq!(retry_after_of(status), Some(RETRY_AFTER), "{status:?}");
}

async fn watch(session: &Session, room: &str) -> Result<impl Sized, tonic::Status> {
    let request = WatchRequest {
        room_id: room.to_owned(),
        last_seen_seq: None,
        spectate: true,
    };
    Ok(session.game().watch(request).await?.into_inner())
}

async fn spectate_by_play(session: &Session, room: &str) -> Result<impl Sized, tonic::Status> {
    let join = PlayRequest {
        kind: Some(Kind::Join(Join {
            room_id: room.to_owned(),
            last_seen_seq: None,
            spectate: true,
        })),
    };
    let (tx, rx) = tokio::sync::mpsc::channel(1);
    tx.send(join).await.unwrap();
    let stream = session
        .game()
        .play(tokio_stream::wrappers::ReceiverStream::new(rx))
        .await?
        .into_inner();
    Ok((tx, stream))
}

async fn one_account_holds_at_most_its_share_of_streams(backend: Backend) {
    let host = backend.guest("limits-host").await.expect("signed in");
    let greedy = backend.guest("limits-greedy").await.expect("signed in");
    let other = backend.guest("limits-other").await.expect("signed in");
    let room = lobby::create_room(
        &host,
        RoomVisibility::Public,
        Vec::new(),
        BotLevel::Unspecified,
        RuleSettings::default(),
    )
    .await
    .expect("a public room, open to spectators")
    .room_id;

    let mut watches = Vec::new();
    for _ in 0..WATCH {
        watches.push(watch(&greedy, &room).await.expect("within the limit"));
    }
    refused(&watch(&greedy, &room).await.err().unwrap(), "Watch");
    let mut plays = Vec::new();
    for _ in 0..PLAY {
        plays.push(
            spectate_by_play(&greedy, &room)
                .await
                .expect("within the limit"),
        );
    }
    refused(
        &spectate_by_play(&greedy, &room).await.err().unwrap(),
        "Play",
    );
    let mut feeds = Vec::new();
    for _ in 0..WATCH_FRIENDS {
        feeds.push(
            greedy
                .accounts()
                .watch_friends(WatchFriendsRequest::default())
                .await
                .expect("within the limit"),
        );
    }
    let status = greedy
        .accounts()
        .watch_friends(WatchFriendsRequest::default())
        .await
        .unwrap_err();
    refused(&status, "WatchFriends");

    // Another account is not held up.
    watch(&other, &room).await.expect("another account watches");
    spectate_by_play(&other, &room)
        .await
        .expect("another account spectates");

    // A closed stream frees its slot.
    drop(watches.pop());
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    loop {
        match watch(&greedy, &room).await {
            Ok(stream) => break watches.push(stream),
            Err(status) if tokio::time::Instant::now() < deadline => {
                refused(&status, "Watch");
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Err(status) => panic!("the slot was not freed: {status:?}"),
        }
    }
    drop((watches, plays, feeds));
    backend.stop().await.expect("stopped");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn separate_services_hold_each_account_to_its_share_of_streams() {
    one_account_holds_at_most_its_share_of_streams(spawn_backend().await.expect("backend")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn basra_dev_holds_each_account_to_its_share_of_streams() {
    one_account_holds_at_most_its_share_of_streams(spawn_dev().await.expect("basra dev")).await;
}
