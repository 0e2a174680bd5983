//! `basra dev` end to end: the whole backend in one process with in-memory stores, driven by
//! the terminal client's own code over real gRPC — against the computer, through the queue,
//! and by a private code.

use std::time::Duration;

use basra::dev::{DevOptions, Started, run};
use basra::lobby;
use basra::player::{Driver, play_room};
use basra::session::Session;
use basra_engine::bot::Policy;
use basra_proto::basra::common::v1::{RoomVisibility, RuleSettings};
use basra_proto::basra::matchmaking::v1::join_room_request::Target;
use tokio_util::sync::CancellationToken;

const BOT: Driver = Driver::Bot {
    policy: Policy::Greedy,
    delay: Duration::ZERO,
};

/// Starts `basra dev` on a free port; the backend stops when the token is dropped.
async fn dev() -> (String, CancellationToken) {
    let shutdown = CancellationToken::new();
    let (tx, rx) = tokio::sync::oneshot::channel::<Started>();
    let options = DevOptions {
        listen: "127.0.0.1:0".parse().unwrap(),
        database_url: None,
        redis_url: None,
        bot_delay: Some(Duration::ZERO),
    };
    let token = shutdown.clone();
    tokio::spawn(async move {
        run(options, token, move |started| {
            let _ = tx.send(started);
        })
        .await
        .expect("basra dev runs");
    });
    let started = rx.await.expect("basra dev starts");
    (format!("http://{}", started.addr), shutdown)
}

fn short_match() -> RuleSettings {
    RuleSettings {
        target_score: Some(40),
        ..RuleSettings::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guest_plays_the_computer_to_the_end() {
    let (server, _stop) = dev().await;
    let session = Session::guest(&server, "device-computer", "Ada")
        .await
        .unwrap();
    let seated = lobby::create_room(&session, RoomVisibility::Private, vec![1], short_match())
        .await
        .unwrap();
    let table = play_room(&session, &seated.room_id, BOT).await.unwrap();
    let ended = table.ended.expect("the match ended");
    assert!(table.totals.iter().any(|&t| t >= 40), "{:?}", table.totals);
    assert_eq!(ended.seed.len(), 32, "the seed is revealed");
    assert!(table.hand.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_guests_meet_in_the_queue_and_by_a_private_code() {
    let (server, _stop) = dev().await;
    let a = Session::guest(&server, "device-a", "A").await.unwrap();
    let b = Session::guest(&server, "device-b", "B").await.unwrap();
    assert_ne!(a.user_id, b.user_id);

    let (seat_a, seat_b) = tokio::join!(
        lobby::quick_match(&a, false, false, 2),
        lobby::quick_match(&b, false, false, 2)
    );
    let (seat_a, seat_b) = (seat_a.unwrap(), seat_b.unwrap());
    assert_eq!(seat_a.room_id, seat_b.room_id);
    assert_ne!(seat_a.seat, seat_b.seat);
    let (end_a, end_b) = tokio::join!(
        play_room(&a, &seat_a.room_id, BOT),
        play_room(&b, &seat_b.room_id, BOT)
    );
    let (end_a, end_b) = (end_a.unwrap(), end_b.unwrap());
    assert_eq!(end_a.totals, end_b.totals, "both saw the same match");
    assert_eq!(end_a.ended.unwrap().seed, end_b.ended.unwrap().seed);

    let created = lobby::create_room(&a, RoomVisibility::Private, Vec::new(), short_match())
        .await
        .unwrap();
    let code = created
        .join_code
        .clone()
        .expect("a private room has a code");
    let joined = lobby::join(&b, Target::JoinCode(code)).await.unwrap();
    assert_eq!(joined.room_id, created.room_id);
    let (end_a, end_b) = tokio::join!(
        play_room(&a, &created.room_id, BOT),
        play_room(&b, &joined.room_id, BOT)
    );
    assert_eq!(end_a.unwrap().totals, end_b.unwrap().totals);
}
