//! Push devices and the outbox ([`Pushes`](accounts::store::Pushes)): registration, a token
//! moving between accounts, the newest ten kept, removal, the outbox claimed by lease,
//! settled only under its own claim, the per-player limit.

use std::collections::BTreeMap;
use std::time::Duration;

use accounts::store::pushes::{Enqueued, MAX_PUSH_DEVICES, PushDevice, PushLimit, QueuedPush};
use basra_push::{NoticeKind, Platform};

use super::*;

const LIMIT: PushLimit = PushLimit {
    max: 100,
    window: Duration::from_secs(3600),
};
const LEASE: Duration = Duration::from_secs(30);

fn device(token: &str, minute: u32) -> PushDevice {
    PushDevice {
        token: token.into(),
        platform: Platform::Fcm,
        app_id: "online.basra.app".into(),
        locale: "ar-EG".into(),
        app_version: "1.0.0".into(),
        utc_offset_minutes: 120,
        registered_at: at(minute),
    }
}

fn push(token: &str, due: u32) -> QueuedPush {
    QueuedPush {
        id: Uuid::now_v7(),
        token: token.into(),
        kind: NoticeKind::FriendRequest,
        param: "Layla".into(),
        data: BTreeMap::from([("notice".to_owned(), "n-1".to_owned())]),
        collapse_id: "n-1".into(),
        noticed_at: at(0),
        expires_at: at(600),
        due_at: at(due),
    }
}

fn tokens(devices: &[PushDevice]) -> Vec<&str> {
    devices.iter().map(|d| d.token.as_str()).collect()
}

pub(super) async fn push_devices_register_move_and_go<S: Store>(store: S) {
    let a = new_account(&store, "amira").await;
    let b = new_account(&store, "bassem").await;
    assert!(
        !store
            .register_push_device(a.id, device("t1", 1))
            .await
            .unwrap()
    );
    assert!(
        !store
            .register_push_device(a.id, device("t2", 2))
            .await
            .unwrap()
    );
    // Registered again: updated, not moved.
    let mut again = device("t1", 3);
    again.locale = "en".into();
    assert!(
        !store
            .register_push_device(a.id, again.clone())
            .await
            .unwrap()
    );
    assert_eq!(
        store.push_devices(a.id).await.unwrap(),
        [again, device("t2", 2)]
    );

    // A token registered by another account moves to it, with its waiting pushes dropped.
    let queued = store
        .enqueue_pushes(a.id, vec![push("t2", 0)], LIMIT, at(4))
        .await
        .unwrap();
    assert_eq!(queued, Enqueued::Queued(1));
    assert!(
        store
            .register_push_device(b.id, device("t2", 5))
            .await
            .unwrap()
    );
    assert_eq!(tokens(&store.push_devices(a.id).await.unwrap()), ["t1"]);
    assert_eq!(tokens(&store.push_devices(b.id).await.unwrap()), ["t2"]);
    assert_eq!(store.outbox_len().await.unwrap(), 0);

    // Only the owner removes a token.
    assert!(!store.remove_push_device(a.id, "t2").await.unwrap());
    assert!(store.remove_push_device(b.id, "t2").await.unwrap());
    assert!(!store.remove_push_device(b.id, "t2").await.unwrap());

    // The ten newest are kept.
    for i in 0..=MAX_PUSH_DEVICES as u32 {
        store
            .register_push_device(b.id, device(&format!("b{i:02}"), 10 + i))
            .await
            .unwrap();
    }
    let kept = store.push_devices(b.id).await.unwrap();
    assert_eq!(kept.len(), MAX_PUSH_DEVICES);
    assert_eq!(kept[0].token, "b10");
    assert!(!tokens(&kept).contains(&"b00"), "the oldest went");

    // A dead token goes whoever holds it; sign-out everywhere takes them all.
    assert!(store.forget_push_token("b05").await.unwrap());
    assert!(!store.forget_push_token("b05").await.unwrap());
    assert_eq!(store.remove_push_devices(b.id).await.unwrap(), 9);
    assert!(store.push_devices(b.id).await.unwrap().is_empty());

    // A deleted account's devices and pushes go with it.
    store
        .enqueue_pushes(a.id, vec![push("t1", 0)], LIMIT, at(30))
        .await
        .unwrap();
    store
        .delete_account(a.id, Uuid::now_v7(), at(31))
        .await
        .unwrap();
    assert!(store.push_devices(a.id).await.unwrap().is_empty());
    assert_eq!(store.outbox_len().await.unwrap(), 0);
    assert!(matches!(
        store.register_push_device(a.id, device("t9", 32)).await,
        Err(AccountsError::UserNotFound)
    ));
}

pub(super) async fn the_outbox_is_claimed_by_lease_and_settled_under_its_claim<S: Store>(store: S) {
    let a = new_account(&store, "amira").await;
    let b = new_account(&store, "bassem").await;
    store
        .register_push_device(a.id, device("ta", 0))
        .await
        .unwrap();
    store
        .register_push_device(b.id, device("tb", 0))
        .await
        .unwrap();
    // A push for a token that is not the player's is left out.
    let queued = store
        .enqueue_pushes(
            a.id,
            vec![push("ta", 0), push("tb", 0), push("gone", 0)],
            LIMIT,
            at(0),
        )
        .await
        .unwrap();
    assert_eq!(queued, Enqueued::Queued(1));
    let later = push("ta", 20);
    store
        .enqueue_pushes(a.id, vec![later.clone()], LIMIT, at(0))
        .await
        .unwrap();

    // Only what is due; once claimed, no one else gets it while the lease holds.
    let (one, two) = (Uuid::now_v7(), Uuid::now_v7());
    let claimed = store.claim_pushes(one, at(1), LEASE, 10).await.unwrap();
    assert_eq!(claimed.len(), 1);
    let first = &claimed[0];
    assert_eq!((first.user_id, first.attempts), (a.id, 0));
    assert_eq!(
        (first.platform, first.app_id.as_str(), first.locale.as_str()),
        (Platform::Fcm, "online.basra.app", "ar-EG")
    );
    assert_eq!(first.push.param, "Layla");
    assert_eq!(first.push.data["notice"], "n-1");
    assert_eq!(first.push.expires_at, at(600));
    assert!(
        store
            .claim_pushes(two, at(1), LEASE, 10)
            .await
            .unwrap()
            .is_empty()
    );

    // The lease lapses (the claimer died): another claim takes it, and the first claim
    // can no longer settle it.
    let taken = store.claim_pushes(two, at(2), LEASE, 10).await.unwrap();
    assert_eq!(taken.len(), 1);
    assert_eq!(taken[0].push.id, first.push.id);
    assert!(!store.finish_push(first.push.id, one).await.unwrap());
    assert!(!store.retry_push(first.push.id, one, at(3)).await.unwrap());

    // Retried: due again later, one more attempt.
    assert!(store.retry_push(first.push.id, two, at(5)).await.unwrap());
    assert!(
        store
            .claim_pushes(one, at(4), LEASE, 10)
            .await
            .unwrap()
            .is_empty()
    );
    let again = store.claim_pushes(one, at(5), LEASE, 10).await.unwrap();
    assert_eq!((again.len(), again[0].attempts), (1, 1));
    assert!(store.finish_push(first.push.id, one).await.unwrap());
    assert_eq!(store.outbox_len().await.unwrap(), 1);

    // At most `max`, soonest due first; a dead token takes its pushes.
    let due = store.claim_pushes(two, at(30), LEASE, 1).await.unwrap();
    assert_eq!(due[0].push.id, later.id);
    assert!(store.forget_push_token("ta").await.unwrap());
    assert_eq!(store.outbox_len().await.unwrap(), 0);
}

pub(super) async fn the_per_player_limit_counts_notices_per_window<S: Store>(store: S) {
    let a = new_account(&store, "amira").await;
    store
        .register_push_device(a.id, device("t1", 0))
        .await
        .unwrap();
    store
        .register_push_device(a.id, device("t2", 0))
        .await
        .unwrap();
    let limit = PushLimit {
        max: 2,
        window: Duration::from_secs(600),
    };
    let notice = || vec![push("t1", 0), push("t2", 0)];
    // A notice to two devices counts once.
    for minute in [0, 5] {
        let queued = store
            .enqueue_pushes(a.id, notice(), limit, at(minute))
            .await;
        assert_eq!(queued.unwrap(), Enqueued::Queued(2));
    }
    let over = store.enqueue_pushes(a.id, notice(), limit, at(9)).await;
    assert_eq!(over.unwrap(), Enqueued::OverLimit);
    assert_eq!(store.outbox_len().await.unwrap(), 4);
    // A new window from the first push's tenth minute on.
    let queued = store.enqueue_pushes(a.id, notice(), limit, at(10)).await;
    assert_eq!(queued.unwrap(), Enqueued::Queued(2));
}
