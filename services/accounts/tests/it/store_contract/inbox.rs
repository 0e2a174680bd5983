//! The inbox ([`Inbox`](accounts::store::Inbox)): notices kept once per dedupe key,
//! listed newest first in pages, marked read by their owner only, bounded per player,
//! expired on the store's clock (each call's `now`), gone with the account; a batch kept
//! in one step answers each notice as if it were kept alone, in the batch's order.

use accounts::inbox::{Marking, NewNotice, NoticeKind, NoticePage, StoredNotice};
use basra_proto::basra::accounts::v1 as pb;

use super::*;

fn notice(user: &User, name: &str, key: Option<&str>, minute: u32, lasts: u32) -> NewNotice {
    NewNotice {
        user_id: user.id,
        kind: NoticeKind::EventCancelled,
        payload: accounts::inbox::encode_body(pb::notice::Body::EventCancelled(
            pb::EventCancelledNotice {
                event_id: format!("event-{name}"),
                event_name: name.to_owned(),
            },
        )),
        dedupe_key: key.map(str::to_owned),
        about: None,
        created_at: at(minute),
        expires_at: at(minute + lasts),
    }
}

fn page(before: Option<u64>, unread_only: bool, limit: u32) -> NoticePage {
    NoticePage {
        before,
        unread_only,
        limit,
    }
}

fn names(notices: &[StoredNotice]) -> Vec<String> {
    notices
        .iter()
        .map(|n| match n.to_proto().body {
            Some(pb::notice::Body::EventCancelled(c)) => c.event_name,
            other => panic!("not a test notice: {other:?}"),
        })
        .collect()
}

pub(super) async fn notices_are_kept_once_per_key_and_listed_newest_first_in_pages<S: Store>(
    store: S,
) {
    let a = new_account(&store, "amira").await;
    let b = new_account(&store, "badr").await;
    let mut ids = Vec::new();
    for (i, name) in ["n1", "n2", "n3"].into_iter().enumerate() {
        let kept = store
            .keep_notice(notice(&a, name, Some(name), i as u32, 60), 10)
            .await
            .unwrap();
        assert!(!kept.duplicate);
        assert!(!kept.notice.read);
        ids.push(kept.notice.id);
    }
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "ids rise: {ids:?}");
    // The same key again: nothing new, the first one answered.
    let again = store
        .keep_notice(notice(&a, "other text", Some("n2"), 5, 60), 10)
        .await
        .unwrap();
    assert!(again.duplicate);
    assert_eq!(again.notice.id, ids[1]);
    // Keys are per player; no key never clashes.
    let theirs = store
        .keep_notice(notice(&b, "b1", Some("n2"), 5, 60), 10)
        .await
        .unwrap();
    assert!(!theirs.duplicate);
    store
        .keep_notice(notice(&a, "n4", None, 6, 60), 10)
        .await
        .unwrap();
    store
        .keep_notice(notice(&a, "n5", None, 7, 60), 10)
        .await
        .unwrap();

    let first = store
        .notices(a.id, page(None, false, 2), at(8))
        .await
        .unwrap();
    assert_eq!(names(&first), ["n5", "n4"]);
    let second = store
        .notices(a.id, page(Some(first[1].id), false, 2), at(8))
        .await
        .unwrap();
    assert_eq!(names(&second), ["n3", "n2"]);
    let last = store
        .notices(a.id, page(Some(second[1].id), false, 2), at(8))
        .await
        .unwrap();
    assert_eq!(names(&last), ["n1"]);
    assert_eq!(store.unread_notices(a.id, at(8)).await.unwrap().count, 5);
    assert_eq!(
        store.unread_notices(a.id, at(8)).await.unwrap().newest_id,
        first[0].id
    );
    assert_eq!(store.unread_notices(b.id, at(8)).await.unwrap().count, 1);
    // A user without an account keeps nothing.
    let ghost = User {
        id: Uuid::now_v7(),
        ..a.clone()
    };
    assert!(matches!(
        store
            .keep_notice(notice(&ghost, "x", None, 1, 60), 10)
            .await,
        Err(AccountsError::UserNotFound)
    ));
}

pub(super) async fn a_batch_of_notices_is_kept_as_one_by_one_in_its_order<S: Store>(store: S) {
    let a = new_account(&store, "amira").await;
    let b = new_account(&store, "badr").await;
    let ghost = User {
        id: Uuid::now_v7(),
        ..a.clone()
    };
    assert!(store.keep_notices(Vec::new(), 10).await.unwrap().is_empty());
    // Before the batch: one kept for good (k0), one that lapses at minute 5 (kx).
    let before = store
        .keep_notice(notice(&a, "before", Some("k0"), 0, 60), 10)
        .await
        .unwrap()
        .notice;
    store
        .keep_notice(notice(&a, "lapsing", Some("kx"), 0, 5), 10)
        .await
        .unwrap();
    let batch = vec![
        notice(&a, "a1", Some("k1"), 10, 60),
        notice(&b, "b1", Some("k1"), 10, 60),
        notice(&ghost, "nobody", Some("k1"), 10, 60),
        notice(&a, "k0 again", Some("k0"), 10, 60),
        notice(&a, "k1 again", Some("k1"), 10, 60),
        notice(&a, "a2", None, 10, 60),
        notice(&a, "kx again", Some("kx"), 10, 60),
    ];
    let kept = store.keep_notices(batch.clone(), 10).await.unwrap();
    assert_eq!(kept.len(), 7, "one answer per notice");
    let ok = |i: usize| kept[i].as_ref().expect("kept").clone();
    assert!(matches!(kept[2], Err(AccountsError::UserNotFound)));
    let fresh: Vec<u64> = [0, 1, 5, 6].iter().map(|&i| ok(i).notice.id).collect();
    assert!(
        [0, 1, 5, 6].iter().all(|&i| !ok(i).duplicate),
        "new keys are kept"
    );
    assert!(
        fresh.windows(2).all(|w| w[0] < w[1]),
        "ids rise in order: {fresh:?}"
    );
    assert!(fresh[0] > before.id);
    assert_eq!(
        (ok(3).duplicate, ok(3).notice),
        (true, before),
        "a key kept before answers its notice"
    );
    assert_eq!(
        (ok(4).duplicate, ok(4).notice),
        (true, ok(0).notice),
        "a key kept earlier in the batch answers that one"
    );
    assert_eq!(ok(1).notice.user_id, b.id, "keys are per player");
    assert_eq!(
        ok(0).notice,
        {
            let listed = store
                .notices(a.id, page(None, false, 10), at(11))
                .await
                .unwrap();
            listed.into_iter().find(|n| n.id == fresh[0]).unwrap()
        },
        "the answer is the notice as kept"
    );
    // The lapsed notice went (its key is free again); nothing of the ghost's is kept.
    let listed = store
        .notices(a.id, page(None, false, 10), at(11))
        .await
        .unwrap();
    assert_eq!(names(&listed), ["kx again", "a2", "a1", "before"]);
    assert_eq!(
        names(
            &store
                .notices(b.id, page(None, false, 10), at(11))
                .await
                .unwrap()
        ),
        ["b1"]
    );
    // The same batch again keeps nothing new: every notice answers the one kept.
    let again = store.keep_notices(batch, 10).await.unwrap();
    for i in [0, 1, 3, 4, 5, 6] {
        let answer = again[i].as_ref().unwrap();
        if i == 5 {
            assert!(!answer.duplicate, "no key: kept again");
        } else {
            assert!(answer.duplicate, "notice {i}");
        }
    }
    assert_eq!(again[0].as_ref().unwrap().notice, ok(0).notice);
    // The bound holds per player: a batch past it keeps the newest `keep`.
    let more: Vec<_> = ["m1", "m2", "m3"]
        .iter()
        .map(|name| notice(&b, name, Some(name), 12, 60))
        .collect();
    store.keep_notices(more, 2).await.unwrap();
    assert_eq!(
        names(
            &store
                .notices(b.id, page(None, false, 10), at(13))
                .await
                .unwrap()
        ),
        ["m3", "m2"]
    );
    assert_eq!(
        store.unread_notices(a.id, at(13)).await.unwrap().count,
        5,
        "another player's bound is theirs"
    );
}

pub(super) async fn notices_are_marked_read_by_their_owner_only<S: Store>(store: S) {
    let a = new_account(&store, "amira").await;
    let b = new_account(&store, "badr").await;
    let mut ids = Vec::new();
    for (i, name) in ["n1", "n2", "n3", "n4"].into_iter().enumerate() {
        let kept = store
            .keep_notice(notice(&a, name, None, i as u32, 60), 10)
            .await
            .unwrap();
        ids.push(kept.notice.id);
    }
    let bs = store
        .keep_notice(notice(&b, "b1", None, 1, 60), 10)
        .await
        .unwrap()
        .notice
        .id;

    // Another player's id (with one of a's own): NOT_FOUND, and nothing is marked.
    assert!(matches!(
        store
            .mark_notices_read(a.id, Marking::Ids(vec![ids[0], bs]), at(5))
            .await,
        Err(AccountsError::NoticeNotFound)
    ));
    assert!(matches!(
        store
            .mark_notices_read(a.id, Marking::Ids(vec![u64::MAX]), at(5))
            .await,
        Err(AccountsError::NoticeNotFound)
    ));
    assert_eq!(store.unread_notices(a.id, at(5)).await.unwrap().count, 4);
    assert_eq!(store.unread_notices(b.id, at(5)).await.unwrap().count, 1);
    // Up to an id marks only the owner's, however large the id.
    assert_eq!(
        store
            .mark_notices_read(b.id, Marking::UpTo(u64::MAX), at(5))
            .await
            .unwrap(),
        1
    );
    assert_eq!(store.unread_notices(a.id, at(5)).await.unwrap().count, 4);

    let marked = store
        .mark_notices_read(a.id, Marking::Ids(vec![ids[1], ids[1]]), at(5))
        .await
        .unwrap();
    assert_eq!(marked, 1);
    let again = store
        .mark_notices_read(a.id, Marking::Ids(vec![ids[1]]), at(5))
        .await
        .unwrap();
    assert_eq!(again, 0, "read stays read");
    let unread = store
        .notices(a.id, page(None, true, 10), at(5))
        .await
        .unwrap();
    assert_eq!(names(&unread), ["n4", "n3", "n1"]);
    assert_eq!(
        store
            .mark_notices_read(a.id, Marking::UpTo(ids[2]), at(5))
            .await
            .unwrap(),
        2
    );
    let all = store
        .notices(a.id, page(None, false, 10), at(5))
        .await
        .unwrap();
    let read: Vec<bool> = all.iter().map(|n| n.read).collect();
    assert_eq!(read, [false, true, true, true]);
    assert_eq!(store.unread_notices(a.id, at(5)).await.unwrap().count, 1);
}

pub(super) async fn notices_expire_and_the_bound_drops_the_oldest<S: Store>(store: S) {
    let a = new_account(&store, "amira").await;
    // n1 lasts 10 minutes, the others an hour.
    store
        .keep_notice(notice(&a, "n1", Some("k1"), 0, 10), 3)
        .await
        .unwrap();
    for (i, name) in ["n2", "n3"].into_iter().enumerate() {
        store
            .keep_notice(notice(&a, name, None, 1 + i as u32, 60), 3)
            .await
            .unwrap();
    }
    let live = |minute| store.notices(a.id, page(None, false, 10), at(minute));
    assert_eq!(names(&live(9).await.unwrap()), ["n3", "n2", "n1"]);
    assert_eq!(names(&live(10).await.unwrap()), ["n3", "n2"], "n1 expired");
    assert_eq!(store.unread_notices(a.id, at(10)).await.unwrap().count, 2);
    let n1 = live(9).await.unwrap()[2].id;
    assert!(matches!(
        store
            .mark_notices_read(a.id, Marking::Ids(vec![n1]), at(10))
            .await,
        Err(AccountsError::NoticeNotFound)
    ));
    // An expired notice's key is free again.
    let renewed = store
        .keep_notice(notice(&a, "n1 again", Some("k1"), 11, 60), 3)
        .await
        .unwrap();
    assert!(!renewed.duplicate);
    // The bound (3): a fourth live notice drops the oldest, read or not.
    store
        .mark_notices_read(a.id, Marking::UpTo(u64::MAX), at(12))
        .await
        .unwrap();
    store
        .keep_notice(notice(&a, "n4", None, 12, 60), 3)
        .await
        .unwrap();
    assert_eq!(names(&live(12).await.unwrap()), ["n4", "n1 again", "n3"]);
    // The sweep drops what expired, for every player.
    assert_eq!(store.drop_expired_notices(at(62)).await.unwrap(), 1, "n3");
    assert_eq!(names(&live(62).await.unwrap()), ["n4", "n1 again"]);
}

pub(super) async fn a_deleted_account_takes_its_notices_and_those_naming_it<S: Store>(store: S) {
    let a = new_account(&store, "amira").await;
    let b = new_account(&store, "badr").await;
    store
        .keep_notice(notice(&a, "to a", None, 0, 60), 10)
        .await
        .unwrap();
    let about_a = NewNotice {
        about: Some(a.id),
        ..notice(&b, "about a", None, 1, 60)
    };
    store.keep_notice(about_a, 10).await.unwrap();
    let mut with_a = notice(&b, "match with a", None, 2, 60);
    with_a.kind = NoticeKind::MatchResult;
    with_a.payload =
        accounts::inbox::encode_body(pb::notice::Body::MatchResult(pb::MatchSummary {
            match_id: "m-1".into(),
            seats: vec![pb::MatchSeat {
                user_id: a.id.to_string(),
                display_name: "amira".into(),
                ..Default::default()
            }],
            ..Default::default()
        }));
    store.keep_notice(with_a, 10).await.unwrap();
    store
        .keep_notice(notice(&b, "stays", None, 3, 60), 10)
        .await
        .unwrap();
    store
        .delete_account(a.id, Uuid::now_v7(), at(4))
        .await
        .unwrap();
    let left = store
        .notices(b.id, page(None, false, 10), at(4))
        .await
        .unwrap();
    assert_eq!(names(&left), ["stays"]);
    assert_eq!(store.unread_notices(a.id, at(4)).await.unwrap().count, 0);
}
