//! Sign-in and tokens ([`SignIn`](accounts::store::SignIn)): guests by device, accounts by password,
//! refresh token rotation and revocation, sign-in clients.

use super::*;

pub(super) async fn guest_login_gives_one_user_per_device<S: Store>(store: S) {
    let device = DeviceId::parse("device-1").unwrap();
    let first_session = session();
    let first = store
        .guest_login(&device, guest("Layla"), first_session)
        .await
        .unwrap();
    assert!(first.is_guest);
    // The sign-in's refresh token is stored with the new guest.
    let token = store.refresh_token(first_session.hash).await.unwrap();
    assert_eq!(token, Some(first_session.token_for(first.id)));
    assert_eq!(first.display_name, "Layla");
    assert_eq!(first.username, None);
    // A second sign-in ignores the new guest it is offered.
    let again = store
        .guest_login(&device, guest("Other"), session())
        .await
        .unwrap();
    assert_eq!(again, first);
    assert_eq!(store.counts().await.unwrap().refresh_tokens, 2);
    let other = new_guest(&store, "device-2").await;
    assert_ne!(other.id, first.id);

    let profile = store.profile(first.id, RULES).await.unwrap().unwrap();
    assert_eq!(profile.rating, Rating::default());
    assert_eq!(profile.ranked_matches, 0);
    assert_eq!(profile.matches_played, 0);
    assert_eq!(profile.leaderboard_rank, None);
    assert_eq!(store.counts().await.unwrap().users, 2);
}

pub(super) async fn concurrent_first_logins_of_a_device_make_one_guest<S: Store>(store: S) {
    let mut tasks = JoinSet::new();
    for _ in 0..8 {
        let store = store.clone();
        tasks.spawn(async move {
            store
                .guest_login(
                    &DeviceId::parse("shared").unwrap(),
                    guest("Race"),
                    session(),
                )
                .await
                .unwrap()
                .id
        });
    }
    let ids: Vec<Uuid> = tasks.join_all().await;
    assert!(ids.iter().all(|id| *id == ids[0]), "{ids:?}");
    let counts = store.counts().await.unwrap();
    assert_eq!((counts.users, counts.refresh_tokens), (1, 8));
}

pub(super) async fn accounts_are_unique_by_case_insensitive_username<S: Store>(store: S) {
    let alice = new_account(&store, "Alice").await;
    assert!(!alice.is_guest);
    assert_eq!(alice.username.as_deref(), Some("Alice"));
    let (found, hash) = store.password_credentials("alice").await.unwrap().unwrap();
    assert_eq!(found, alice);
    assert_eq!(hash, "$argon2id$fake");
    assert!(
        store.password_credentials("Alice").await.unwrap().is_none(),
        "keys are lower case"
    );
    assert!(store.password_credentials("bob").await.unwrap().is_none());

    let before = store.counts().await.unwrap();
    let username = Username::parse("ALICE").unwrap();
    let err = store
        .create_account(NewAccount {
            id: Uuid::now_v7(),
            display_name: DisplayName::from_username(&username).unwrap(),
            username,
            password_hash: "x".into(),
            now: at(1),
        })
        .await
        .unwrap_err();
    assert!(matches!(err, AccountsError::UsernameTaken), "{err:?}");
    assert_eq!(store.counts().await.unwrap(), before);
    assert_eq!(store.user(alice.id).await.unwrap(), Some(alice));
    assert_eq!(store.user(Uuid::now_v7()).await.unwrap(), None);
}

pub(super) async fn guest_upgrade_keeps_the_user_and_revokes_its_tokens<S: Store>(store: S) {
    let g = new_guest(&store, "phone").await;
    let (_, token) = token_for(&g, Uuid::now_v7(), at(1000));
    store.insert_refresh_token(token.clone()).await.unwrap();

    let upgraded = store
        .upgrade_guest(GuestUpgrade {
            user_id: g.id,
            username: Username::parse("Nour").unwrap(),
            password_hash: "$argon2id$h".into(),
            display_name: None,
            now: at(5),
        })
        .await
        .unwrap();
    assert_eq!(upgraded.id, g.id);
    assert!(!upgraded.is_guest);
    assert_eq!(upgraded.username.as_deref(), Some("Nour"));
    assert_eq!(
        upgraded.display_name, g.display_name,
        "keeps the guest's name"
    );
    assert_eq!(upgraded.created_at, g.created_at);

    let stored = store.refresh_token(token.hash).await.unwrap().unwrap();
    assert_eq!(stored.revoked_at, Some(at(5)));
    assert_eq!(
        store.password_credentials("nour").await.unwrap().unwrap().0,
        upgraded
    );
    // The device now leads to the registered account, and gets no token.
    let refused = session();
    let found = store
        .guest_login(&DeviceId::parse("phone").unwrap(), guest("X"), refused)
        .await
        .unwrap();
    assert_eq!(found, upgraded);
    assert_eq!(store.refresh_token(refused.hash).await.unwrap(), None);

    let g2 = new_guest(&store, "tablet").await;
    let renamed = store
        .upgrade_guest(GuestUpgrade {
            user_id: g2.id,
            username: Username::parse("sami").unwrap(),
            password_hash: "h".into(),
            display_name: Some(DisplayName::parse("Sami A").unwrap()),
            now: at(6),
        })
        .await
        .unwrap();
    assert_eq!(renamed.display_name, "Sami A");
}

pub(super) async fn guest_upgrade_refusals_change_nothing<S: Store>(store: S) {
    let taken = new_account(&store, "taken").await;
    let g = new_guest(&store, "phone").await;
    let before = store.counts().await.unwrap();
    let upgrade = |user_id, name: &str| GuestUpgrade {
        user_id,
        username: Username::parse(name).unwrap(),
        password_hash: "h".into(),
        display_name: None,
        now: at(1),
    };
    let err = store
        .upgrade_guest(upgrade(g.id, "TAKEN"))
        .await
        .unwrap_err();
    assert!(matches!(err, AccountsError::UsernameTaken), "{err:?}");
    let err = store
        .upgrade_guest(upgrade(taken.id, "fresh"))
        .await
        .unwrap_err();
    assert!(matches!(err, AccountsError::AlreadyRegistered), "{err:?}");
    let err = store
        .upgrade_guest(upgrade(Uuid::now_v7(), "fresh"))
        .await
        .unwrap_err();
    assert!(matches!(err, AccountsError::UserNotFound), "{err:?}");
    assert_eq!(store.counts().await.unwrap(), before);
    assert_eq!(store.user(g.id).await.unwrap(), Some(g));
    assert!(store.password_credentials("fresh").await.unwrap().is_none());
}

pub(super) async fn refresh_tokens_rotate_once_and_reuse_revokes_the_family<S: Store>(store: S) {
    let user = new_account(&store, "dina").await;
    let family = Uuid::now_v7();
    let (_, first) = token_for(&user, family, at(1000));
    store.insert_refresh_token(first.clone()).await.unwrap();
    // Another sign-in of the same user, untouched by the theft below.
    let (_, other) = token_for(&user, Uuid::now_v7(), at(1000));
    store.insert_refresh_token(other.clone()).await.unwrap();

    let second = NewRefreshToken::generate();
    let rotated = store
        .rotate_refresh_token(first.hash, second.hash, at(2000), at(10))
        .await
        .unwrap();
    assert_eq!(rotated, Rotation::Rotated { user: user.clone() });
    let stored_first = store.refresh_token(first.hash).await.unwrap().unwrap();
    assert_eq!(stored_first.used_at, Some(at(10)));
    let stored_second = store.refresh_token(second.hash).await.unwrap().unwrap();
    assert_eq!(stored_second.family_id, family);
    assert_eq!(stored_second.user_id, user.id);
    assert_eq!(stored_second.expires_at, at(2000));
    assert_eq!(stored_second.state(at(11)), TokenState::Valid);

    // Replaying the used token is theft: the whole family goes.
    let third = NewRefreshToken::generate();
    let replay = store
        .rotate_refresh_token(first.hash, third.hash, at(2000), at(20))
        .await
        .unwrap();
    assert_eq!(replay, Rotation::Rejected(TokenState::Reused));
    assert!(store.refresh_token(third.hash).await.unwrap().is_none());
    let stored_second = store.refresh_token(second.hash).await.unwrap().unwrap();
    assert_eq!(stored_second.revoked_at, Some(at(20)));
    let after = store
        .rotate_refresh_token(second.hash, third.hash, at(2000), at(21))
        .await
        .unwrap();
    assert_eq!(after, Rotation::Rejected(TokenState::Revoked));
    let untouched = store.refresh_token(other.hash).await.unwrap().unwrap();
    assert_eq!(untouched.revoked_at, None);
}

pub(super) async fn expired_and_unknown_refresh_tokens_are_refused<S: Store>(store: S) {
    let user = new_account(&store, "dina").await;
    let (_, old) = token_for(&user, Uuid::now_v7(), at(5));
    store.insert_refresh_token(old.clone()).await.unwrap();
    let next = NewRefreshToken::generate();
    let expired = store
        .rotate_refresh_token(old.hash, next.hash, at(100), at(5))
        .await
        .unwrap();
    assert_eq!(expired, Rotation::Rejected(TokenState::Expired));
    let unknown = store
        .rotate_refresh_token(NewRefreshToken::generate().hash, next.hash, at(100), at(1))
        .await
        .unwrap();
    assert_eq!(unknown, Rotation::Unknown);
    assert!(store.refresh_token(next.hash).await.unwrap().is_none());
    assert_eq!(store.counts().await.unwrap().refresh_tokens, 1);
}

pub(super) async fn concurrent_rotations_of_one_token_have_one_winner<S: Store>(store: S) {
    let user = new_account(&store, "dina").await;
    let (_, token) = token_for(&user, Uuid::now_v7(), at(1000));
    store.insert_refresh_token(token.clone()).await.unwrap();
    let mut tasks = JoinSet::new();
    for _ in 0..6 {
        let store = store.clone();
        tasks.spawn(async move {
            store
                .rotate_refresh_token(
                    token.hash,
                    NewRefreshToken::generate().hash,
                    at(2000),
                    at(1),
                )
                .await
                .unwrap()
        });
    }
    let results = tasks.join_all().await;
    let winners = results
        .iter()
        .filter(|r| matches!(r, Rotation::Rotated { .. }))
        .count();
    assert_eq!(winners, 1, "{results:?}");
    // The losers replayed a used token: the family is revoked.
    let counts = store.counts().await.unwrap();
    assert_eq!(counts.refresh_tokens, 2);
    assert_eq!(counts.revoked_refresh_tokens, 2);
}

pub(super) async fn logout_revokes_one_family_or_every_token<S: Store>(store: S) {
    let user = new_account(&store, "dina").await;
    let other_user = new_account(&store, "emad").await;
    let (_, a) = token_for(&user, Uuid::now_v7(), at(1000));
    let (_, b) = token_for(&user, Uuid::now_v7(), at(1000));
    let (_, c) = token_for(&other_user, Uuid::now_v7(), at(1000));
    for t in [&a, &b, &c] {
        store.insert_refresh_token(t.clone()).await.unwrap();
    }
    assert_eq!(
        store.revoke_refresh_family(a.hash, at(1)).await.unwrap(),
        Some(user.id)
    );
    let revoked = |t: &RefreshTokenRecord| {
        let store = store.clone();
        let hash = t.hash;
        async move {
            store
                .refresh_token(hash)
                .await
                .unwrap()
                .unwrap()
                .revoked_at
                .is_some()
        }
    };
    assert!(revoked(&a).await);
    assert!(!revoked(&b).await);
    // Idempotent, and unknown tokens are fine.
    assert_eq!(
        store.revoke_refresh_family(a.hash, at(2)).await.unwrap(),
        Some(user.id)
    );
    assert_eq!(
        store
            .refresh_token(a.hash)
            .await
            .unwrap()
            .unwrap()
            .revoked_at,
        Some(at(1)),
        "a second revocation keeps the first time"
    );
    let unknown = NewRefreshToken::generate().hash;
    assert_eq!(
        store.revoke_refresh_family(unknown, at(2)).await.unwrap(),
        None
    );

    assert_eq!(
        store
            .revoke_user_refresh_tokens(user.id, at(3))
            .await
            .unwrap(),
        1
    );
    assert!(revoked(&b).await);
    assert!(!revoked(&c).await);

    let err = store
        .insert_refresh_token(
            token_for(
                &User {
                    id: Uuid::now_v7(),
                    ..user
                },
                Uuid::now_v7(),
                at(9),
            )
            .1,
        )
        .await
        .unwrap_err();
    assert!(matches!(err, AccountsError::UserNotFound), "{err:?}");
}

pub(super) async fn sign_in_clients_are_kept_oldest_first<S: Store>(store: S) {
    use basra_platform::client_info::ClientInfo;
    let user = new_guest(&store, "device-clients").await;
    assert!(store.sign_in_clients(user.id).await.unwrap().is_empty());
    let t0 = Utc::now();
    let web = ClientInfo::parse("web/1.2.0").unwrap();
    let cli = ClientInfo::parse("cli/0.1.0").unwrap();
    store
        .note_sign_in_client(user.id, &cli, t0 + chrono::Duration::seconds(5))
        .await
        .unwrap();
    store.note_sign_in_client(user.id, &web, t0).await.unwrap();
    let noted = store.sign_in_clients(user.id).await.unwrap();
    let noted: Vec<&ClientInfo> = noted.iter().map(|(c, _)| c).collect();
    assert_eq!(noted, [&web, &cli]);
    let other = new_guest(&store, "device-other").await;
    assert!(store.sign_in_clients(other.id).await.unwrap().is_empty());
}
