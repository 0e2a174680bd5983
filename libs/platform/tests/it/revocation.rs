//! The revoked-accounts list shared through a real Redis: what one replica writes, every
//! other one sees within a second, and its open streams are woken.

use std::time::Duration;

use basra_platform::redis::Redis;
use basra_platform::revocation::{POLL_EVERY, Revocations, RevokeKind, Revoked};
use basra_testkit::{redis_url, unique_prefix};
use chrono::Utc;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

async fn replica(prefix: &str, shutdown: &CancellationToken) -> Revocations {
    let redis = Redis::connect(&redis_url())
        .await
        .expect("Redis must be running at REDIS_URL");
    Revocations::shared(redis, prefix, shutdown.clone())
        .await
        .unwrap()
}

#[tokio::test]
async fn a_ban_reaches_every_replica_within_a_second_and_an_unban_too() {
    let prefix = unique_prefix("revocation");
    let shutdown = CancellationToken::new();
    let writer = replica(&prefix, &shutdown).await;
    let reader = replica(&prefix, &shutdown).await;
    let mut woken = reader.subscribe();
    let banned = Uuid::now_v7();
    let other = Uuid::now_v7();
    let until = chrono::DateTime::from_timestamp_millis(
        (Utc::now() + chrono::Duration::hours(1)).timestamp_millis(),
    )
    .unwrap();
    let ban = Revoked {
        kind: RevokeKind::Banned {
            reason: "cheating".into(),
        },
        until,
    };
    writer.revoke(banned, ban.clone()).await.unwrap();
    assert_eq!(
        writer.check(banned),
        Some(ban.clone()),
        "at once on the writer"
    );
    tokio::time::timeout(POLL_EVERY * 2 + Duration::from_millis(200), woken.changed())
        .await
        .expect("the other replica's streams are woken within a second")
        .unwrap();
    let seen = reader
        .check(banned)
        .expect("the other replica refuses the player");
    assert_eq!(seen, ban);
    assert_eq!(seen.status().code(), tonic::Code::PermissionDenied);
    assert!(seen.status().message().contains("cheating"));
    assert_eq!(reader.check(other), None);

    // A replica that starts later reads the list at once.
    let late = replica(&prefix, &shutdown).await;
    assert_eq!(late.check(banned), Some(ban));

    writer.restore(banned).await.unwrap();
    tokio::time::timeout(Duration::from_secs(2), async {
        while reader.check(banned).is_some() {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .expect("an unban reaches the other replica within a second");
    shutdown.cancel();
}

#[tokio::test]
async fn a_lapsed_entry_is_dropped_from_redis() {
    let prefix = unique_prefix("revocation-lapse");
    let shutdown = CancellationToken::new();
    let writer = replica(&prefix, &shutdown).await;
    let user = Uuid::now_v7();
    writer
        .revoke(
            user,
            Revoked {
                kind: RevokeKind::Deleted,
                until: Utc::now() + chrono::Duration::milliseconds(300),
            },
        )
        .await
        .unwrap();
    assert_eq!(
        writer.check(user).map(|r| r.status().code()),
        Some(tonic::Code::Unauthenticated)
    );
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(writer.check(user), None, "lapsed: refuses nothing");
    // The next replica to read the list drops it from Redis.
    let _reader = replica(&prefix, &shutdown).await;
    let mut conn = Redis::connect(&redis_url()).await.unwrap().conn();
    let left: u64 = redis::AsyncCommands::hlen(&mut conn, format!("{prefix}:{{rv}}:users"))
        .await
        .unwrap();
    assert_eq!(left, 0);
    shutdown.cancel();
}
