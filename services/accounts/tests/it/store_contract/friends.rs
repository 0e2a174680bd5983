//! Social ([`Friends`](accounts::store::Friends)): requests, friendships, blocks, limits and
//! friend codes.

use super::*;

const FRIENDS: FriendLimits = FriendLimits {
    max_friends: 2,
    requests_per_day: 3,
};

fn ids(list: &[accounts::friends::FriendEntry]) -> Vec<Uuid> {
    list.iter().map(|e| e.user_id).collect()
}

/// `a` does `action` to `b` at minute `minute`; the action must succeed.
async fn act<S: Store>(store: &S, a: &User, b: &User, action: Action, minute: u32) -> Outcome {
    store
        .befriend(a.id, b.id, action, FRIENDS, at(minute))
        .await
        .unwrap_or_else(|e| panic!("{action:?} should succeed: {e:?}"))
}

async fn refused<S: Store>(store: &S, a: &User, b: &User, action: Action) -> Refusal {
    match store.befriend(a.id, b.id, action, FRIENDS, at(1)).await {
        Err(AccountsError::Friend(refusal)) => refusal,
        other => panic!("{action:?} should be refused, got {other:?}"),
    }
}

pub(super) async fn friend_request_accept_remove<S: Store>(store: S) {
    let a = new_account(&store, "amira").await;
    let b = new_guest(&store, "device-b").await;
    let sent = store
        .befriend(a.id, b.id, Action::Add, FRIENDS, at(1))
        .await;
    assert_eq!(sent.unwrap(), Outcome::Requested);
    let la = store.friend_list(a.id).await.unwrap();
    let lb = store.friend_list(b.id).await.unwrap();
    assert_eq!(ids(&la.outgoing), [b.id]);
    assert_eq!(ids(&lb.incoming), [a.id]);
    assert!(la.friends.is_empty() && lb.friends.is_empty());
    assert_eq!(lb.incoming[0].display_name, "amira");
    assert_eq!(lb.incoming[0].since, at(1));

    let accepted = store
        .befriend(b.id, a.id, Action::Accept, FRIENDS, at(2))
        .await;
    assert_eq!(accepted.unwrap(), Outcome::BecameFriends);
    let la = store.friend_list(a.id).await.unwrap();
    let lb = store.friend_list(b.id).await.unwrap();
    assert_eq!(ids(&la.friends), [b.id]);
    assert_eq!(ids(&lb.friends), [a.id]);
    assert!(la.outgoing.is_empty() && lb.incoming.is_empty());
    assert!(!lb.friends[0].is_guest && la.friends[0].is_guest);
    assert_eq!(store.counts().await.unwrap().friend_links, 2);

    act(&store, &b, &a, Action::Remove, 3).await;
    assert!(store.friend_list(a.id).await.unwrap().friends.is_empty());
    assert!(store.friend_list(b.id).await.unwrap().friends.is_empty());
    assert_eq!(store.counts().await.unwrap().friend_links, 0);
    assert_eq!(
        refused(&store, &a, &b, Action::Remove).await,
        Refusal::NotFriends
    );

    // Declined and withdrawn requests leave nothing behind.
    act(&store, &a, &b, Action::Add, 4).await;
    act(&store, &b, &a, Action::Decline, 5).await;
    assert_eq!(store.counts().await.unwrap().friend_links, 0);
    act(&store, &b, &a, Action::Add, 6).await;
    act(&store, &b, &a, Action::Cancel, 7).await;
    assert_eq!(store.counts().await.unwrap().friend_links, 0);

    let ghost = Uuid::now_v7();
    assert!(matches!(
        store
            .befriend(a.id, ghost, Action::Add, FRIENDS, at(8))
            .await,
        Err(AccountsError::UserNotFound)
    ));
}

pub(super) async fn asking_back_accepts_and_refusals_write_nothing<S: Store>(store: S) {
    let a = new_account(&store, "amira").await;
    let b = new_account(&store, "basem").await;
    act(&store, &a, &b, Action::Add, 1).await;
    let before = store.counts().await.unwrap();
    assert_eq!(
        refused(&store, &a, &b, Action::Add).await,
        Refusal::AlreadyRequested
    );
    assert_eq!(
        refused(&store, &a, &b, Action::Accept).await,
        Refusal::NoRequest
    );
    assert_eq!(
        refused(&store, &b, &a, Action::Cancel).await,
        Refusal::NoOwnRequest
    );
    assert_eq!(store.counts().await.unwrap(), before);
    let back = store
        .befriend(b.id, a.id, Action::Add, FRIENDS, at(2))
        .await;
    assert_eq!(back.unwrap(), Outcome::BecameFriends);
    assert_eq!(
        refused(&store, &a, &b, Action::Add).await,
        Refusal::AlreadyFriends
    );
    assert_eq!(ids(&store.friend_list(a.id).await.unwrap().friends), [b.id]);
}

pub(super) async fn a_block_ends_everything_and_is_private<S: Store>(store: S) {
    let a = new_account(&store, "amira").await;
    let b = new_account(&store, "basem").await;
    act(&store, &a, &b, Action::Add, 1).await;
    act(&store, &b, &a, Action::Accept, 2).await;
    act(&store, &a, &b, Action::Block, 3).await;
    // What matchmaking is told (the blocker's blocks only).
    assert_eq!(store.blocks(&[a.id, b.id]).await.unwrap(), [(a.id, b.id)]);
    assert_eq!(store.blocks(&[b.id]).await.unwrap(), []);
    let la = store.friend_list(a.id).await.unwrap();
    let lb = store.friend_list(b.id).await.unwrap();
    assert!(la.friends.is_empty() && lb.friends.is_empty());
    assert_eq!(ids(&la.blocked), [b.id]);
    assert!(
        lb.blocked.is_empty(),
        "the blocked player does not see the block"
    );
    // The blocked player is told there is no such player; the blocker must unblock.
    assert_eq!(
        refused(&store, &b, &a, Action::Add).await,
        Refusal::NoSuchPlayer
    );
    assert_eq!(
        refused(&store, &a, &b, Action::Add).await,
        Refusal::YouBlock
    );
    // Blocking again changes nothing; so does unblocking twice.
    act(&store, &a, &b, Action::Block, 4).await;
    assert_eq!(store.counts().await.unwrap().friend_links, 1);
    act(&store, &a, &b, Action::Unblock, 5).await;
    act(&store, &a, &b, Action::Unblock, 5).await;
    assert_eq!(store.counts().await.unwrap().friend_links, 0);
    assert_eq!(store.blocks(&[a.id, b.id]).await.unwrap(), []);
    let again = store
        .befriend(b.id, a.id, Action::Add, FRIENDS, at(6))
        .await;
    assert_eq!(again.unwrap(), Outcome::Requested);
    // A pending request from the blocked player goes with the block.
    act(&store, &a, &b, Action::Block, 7).await;
    assert!(store.friend_list(a.id).await.unwrap().incoming.is_empty());
    assert!(store.friend_list(b.id).await.unwrap().outgoing.is_empty());
}

pub(super) async fn friend_limits_hold<S: Store>(store: S) {
    let a = new_account(&store, "amira").await;
    let mut others = Vec::new();
    for name in ["basem", "camel", "dalia", "emad", "fadi"] {
        others.push(new_account(&store, name).await);
    }
    // Before her list fills, a asks d.
    act(&store, &a, &others[3], Action::Add, 1).await;
    for other in &others[..2] {
        act(&store, other, &a, Action::Add, 1).await;
        act(&store, &a, other, Action::Accept, 1).await;
    }
    act(&store, &others[2], &a, Action::Add, 1).await;
    let before = store.counts().await.unwrap();
    assert_eq!(
        refused(&store, &a, &others[2], Action::Accept).await,
        Refusal::YourListFull
    );
    assert_eq!(
        refused(&store, &a, &others[4], Action::Add).await,
        Refusal::YourListFull
    );
    assert_eq!(
        refused(&store, &others[3], &a, Action::Accept).await,
        Refusal::TheirListFull
    );
    assert_eq!(store.counts().await.unwrap(), before);

    // Three requests a day; a withdrawn one still counts; the next UTC day starts over.
    let e = &others[4];
    for other in &others[..3] {
        act(&store, e, other, Action::Add, 10).await;
    }
    act(&store, e, &others[0], Action::Cancel, 11).await;
    assert_eq!(
        refused(&store, e, &others[0], Action::Add).await,
        Refusal::TooManyRequests
    );
    let tomorrow = at(24 * 60 + 1);
    let next_day = store
        .befriend(e.id, others[0].id, Action::Add, FRIENDS, tomorrow)
        .await;
    assert_eq!(next_day.unwrap(), Outcome::Requested);
}

pub(super) async fn concurrent_requests_between_two_players_make_one_friendship<S: Store>(
    store: S,
) {
    for round in 0..5 {
        let a = new_account(&store, &format!("amira{round}")).await;
        let b = new_account(&store, &format!("basem{round}")).await;
        let mut tasks = JoinSet::new();
        for (x, y) in [(a.id, b.id), (b.id, a.id)] {
            let store = store.clone();
            tasks.spawn(async move { store.befriend(x, y, Action::Add, FRIENDS, at(1)).await });
        }
        let mut outcomes = Vec::new();
        while let Some(done) = tasks.join_next().await {
            outcomes.push(done.unwrap().unwrap());
        }
        outcomes.sort_by_key(|o| *o == Outcome::BecameFriends);
        assert_eq!(outcomes, [Outcome::Requested, Outcome::BecameFriends]);
        assert_eq!(ids(&store.friend_list(a.id).await.unwrap().friends), [b.id]);
        assert_eq!(ids(&store.friend_list(b.id).await.unwrap().friends), [a.id]);
    }
}

pub(super) async fn friend_codes_are_given_once_and_find_their_owner<S: Store>(store: S) {
    let a = new_guest(&store, "device-a").await;
    let b = new_account(&store, "basem").await;
    let code = store.friend_code(a.id).await.unwrap().unwrap();
    assert_eq!(store.friend_code(a.id).await.unwrap().unwrap(), code);
    assert_ne!(store.friend_code(b.id).await.unwrap().unwrap(), code);
    assert_eq!(
        store.user_by_friend_code(&code).await.unwrap().unwrap().id,
        a.id
    );
    let typed = FriendCode::parse(&code.to_string().to_lowercase()).unwrap();
    assert_eq!(
        store.user_by_friend_code(&typed).await.unwrap().unwrap().id,
        a.id
    );
    assert!(store.friend_code(Uuid::now_v7()).await.unwrap().is_none());
    assert_eq!(
        store.user_by_username("basem").await.unwrap().unwrap().id,
        b.id
    );
    assert!(store.user_by_username("nobody").await.unwrap().is_none());
}
