//! Service identity past the token lifetime: game-session and matchmaking mint their own
//! service tokens (living 2 s here); rooms made through matchmaking and records sent by
//! game-session's outbox still land long after the first tokens expired, with no restart.

use std::time::Duration;

use basra::lobby;
use basra::player::{Driver, play_room};
use basra::session::Session;
use basra_e2e::spawn_backend_with;
use basra_engine::bot::Policy;
use basra_proto::basra::accounts::v1::MatchHistoryRequest;
use basra_proto::basra::common::v1::{BotLevel, RoomVisibility, RuleSettings};

const TOKEN_TTL: Duration = Duration::from_secs(2);
/// Past the token lifetime and the 30 s clock-skew allowance of accounts' verifier.
const PAST_EXPIRY: Duration = Duration::from_secs(33);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn matches_land_after_the_first_service_tokens_expired() {
    let backend = spawn_backend_with(TOKEN_TTL).await.expect("backend");
    let ana = backend.guest("identity-ana").await.expect("signed in");

    play_one(&ana).await;
    assert_eq!(recorded(&ana, 1).await, 1);
    tokio::time::sleep(PAST_EXPIRY).await;
    // The player's access token lives 15 minutes; the service tokens are long gone.
    play_one(&ana).await;
    assert_eq!(recorded(&ana, 2).await, 2);
    backend.stop().await.unwrap();
}

/// A room against the computer made through matchmaking (which calls game-session with
/// its own service token), played to the end (the record goes through the outbox with
/// game-session's own service token).
async fn play_one(session: &Session) {
    let rules = RuleSettings {
        target_score: Some(11),
        ..RuleSettings::default()
    };
    let room = lobby::create_room(
        session,
        RoomVisibility::Private,
        vec![1],
        BotLevel::Hard,
        rules,
    )
    .await
    .expect("matchmaking made the room in game-session");
    let driver = Driver::Bot {
        policy: Policy::Greedy,
        delay: Duration::ZERO,
    };
    play_room(session, &room.room_id, driver)
        .await
        .expect("played");
}

/// Waits until accounts holds `want` matches of the player; answers how many it holds.
async fn recorded(session: &Session, want: usize) -> usize {
    let mut held = 0;
    for _ in 0..200 {
        held = session
            .accounts()
            .match_history(MatchHistoryRequest {
                page_size: 10,
                page_token: String::new(),
            })
            .await
            .expect("history")
            .into_inner()
            .matches
            .len();
        if held >= want {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    held
}
