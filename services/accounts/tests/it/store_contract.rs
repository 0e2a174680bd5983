//! The store contract: one suite, written once as generic functions, run
//! against [`MemoryStore`] and against [`PgStore`] on a fresh PostgreSQL
//! database per test (`#[sqlx::test]`, which needs `DATABASE_URL` and fails
//! when PostgreSQL is unreachable).

use crate::helpers::{at, duel, record};
use accounts::AccountsError;
use accounts::domain::{DeviceId, DisplayName, Username};
use accounts::friends::{Action, FriendCode, FriendLimits, Outcome, Refusal};
use accounts::names::{NameChange, NameChangeLimit};
use accounts::rating::Rating;
use accounts::refresh::{NewRefreshToken, RefreshTokenRecord, TokenState};
use accounts::store::{
    GuestUpgrade, LeaderboardRules, NewAccount, NewGuest, NewSession, Rotation, Store, User,
};
use chrono::{DateTime, Utc};
use tokio::task::JoinSet;
use uuid::Uuid;

on_both_stores! {
    cases in contract {
        guest_login_gives_one_user_per_device,
        concurrent_first_logins_of_a_device_make_one_guest,
        accounts_are_unique_by_case_insensitive_username,
        guest_upgrade_keeps_the_user_and_revokes_its_tokens,
        guest_upgrade_refusals_change_nothing,
        refresh_tokens_rotate_once_and_reuse_revokes_the_family,
        expired_and_unknown_refresh_tokens_are_refused,
        concurrent_rotations_of_one_token_have_one_winner,
        logout_revokes_one_family_or_every_token,
        ranked_match_is_recorded_once_and_rates_once,
        unranked_closed_and_bot_matches_change_no_rating,
        partnership_match_rates_every_human,
        match_with_unknown_user_writes_nothing,
        leaderboard_order_ties_and_pages,
        match_history_newest_first_in_pages,
        friend_request_accept_remove,
        asking_back_accepts_and_refusals_write_nothing,
        a_block_ends_everything_and_is_private,
        friend_limits_hold,
        concurrent_requests_between_two_players_make_one_friendship,
        friend_codes_are_given_once_and_find_their_owner,
        display_name_changes_are_limited_per_rolling_window,
        sign_in_clients_are_kept_oldest_first,
        each_seat_keeps_its_players_client_app_at_the_matchs_end,
        concurrent_display_name_changes_count_each_other,
    }
}

fn guest(name: &str) -> NewGuest {
    NewGuest {
        id: Uuid::now_v7(),
        display_name: DisplayName::parse(name).unwrap(),
        now: at(0),
    }
}

fn session() -> NewSession {
    NewSession {
        hash: NewRefreshToken::generate().hash,
        family_id: Uuid::now_v7(),
        issued_at: at(0),
        expires_at: at(1000),
    }
}

async fn new_guest<S: Store>(store: &S, device: &str) -> User {
    store
        .guest_login(
            &DeviceId::parse(device).unwrap(),
            guest("Guest 1"),
            session(),
        )
        .await
        .unwrap()
}

async fn new_account<S: Store>(store: &S, username: &str) -> User {
    let username = Username::parse(username).unwrap();
    store
        .create_account(NewAccount {
            id: Uuid::now_v7(),
            display_name: DisplayName::from_username(&username).unwrap(),
            username,
            password_hash: "$argon2id$fake".into(),
            now: at(0),
        })
        .await
        .unwrap()
}

fn token_for(
    user: &User,
    family: Uuid,
    expires_at: DateTime<Utc>,
) -> (NewRefreshToken, RefreshTokenRecord) {
    let t = NewRefreshToken::generate();
    let record = RefreshTokenRecord {
        hash: t.hash,
        family_id: family,
        user_id: user.id,
        issued_at: at(0),
        expires_at,
        used_at: None,
        revoked_at: None,
    };
    (t, record)
}

const RULES: LeaderboardRules = LeaderboardRules {
    min_ranked_matches: 1,
};

mod contract {
    use super::*;

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

    /// Each human seat keeps the client app of its player's latest sign-in at or before
    /// the match's end (of two at the same time, the one noted last), through
    /// RecordMatch and RecordMatches alike; a player who named none, or only later, has
    /// none; a retry changes nothing; a deletion keeps the seats' apps under the key.
    pub(super) async fn each_seat_keeps_its_players_client_app_at_the_matchs_end<S: Store>(
        store: S,
    ) {
        use basra_platform::client_info::ClientInfo;
        use std::collections::HashMap;
        let client = |s: &str| ClientInfo::parse(s).unwrap();
        let a = new_account(&store, "alice").await;
        let b = new_account(&store, "bob").await;
        let c = new_guest(&store, "device-late").await;
        // alice: the web at minute 5, Android at 20, then at 40 the terminal and the
        // web again at the same instant (noted in that order); bob: never; the guest:
        // only at 50.
        for (user, app, minute) in [
            (a.id, "web/1.2.0", 5),
            (a.id, "android/2.0.3", 20),
            (a.id, "cli/0.1.0", 40),
            (a.id, "web/1.3.0", 40),
            (c.id, "cli/0.1.0", 50),
        ] {
            store
                .note_sign_in_client(user, &client(app), at(minute))
                .await
                .unwrap();
        }
        // One at a time: before any sign-in, after the first, at the second's instant
        // (against a bot).
        store
            .record_match(&duel("m-0", a.id, b.id, 0, false, 1), at(2))
            .await
            .unwrap();
        store
            .record_match(&duel("m-1", a.id, b.id, 0, true, 10), at(11))
            .await
            .unwrap();
        store
            .record_match(
                &record("m-2", &[Some(a.id), None], Some(0), false, 20),
                at(21),
            )
            .await
            .unwrap();
        // A batch: between the second and the tie, at the tie, and the guest's match
        // ending before its sign-in.
        store
            .record_matches(
                &[
                    duel("m-3", b.id, a.id, 1, true, 30),
                    duel("m-4", a.id, c.id, 0, false, 40),
                    duel("m-5", c.id, b.id, 0, false, 45),
                ],
                at(46),
            )
            .await
            .unwrap();
        // A retry after a newer sign-in changes nothing.
        store
            .note_sign_in_client(b.id, &client("ios/3.0.0"), at(60))
            .await
            .unwrap();
        let again = store
            .record_match(&duel("m-1", a.id, b.id, 0, true, 10), at(61))
            .await
            .unwrap();
        assert!(again.already_recorded);

        async fn clients<S: Store>(store: &S, user: Uuid) -> HashMap<String, (u8, Option<String>)> {
            store
                .played_matches(user, None, 100)
                .await
                .unwrap()
                .into_iter()
                .map(|m| {
                    (
                        m.record.match_id,
                        (m.your_seat, m.your_client.map(|c| c.to_string())),
                    )
                })
                .collect()
        }
        let web = |v: &str| Some(format!("web/{v}"));
        let alice = HashMap::from([
            ("m-0".to_owned(), (0, None)),
            ("m-1".to_owned(), (0, web("1.2.0"))),
            ("m-2".to_owned(), (0, Some("android/2.0.3".to_owned()))),
            ("m-3".to_owned(), (1, Some("android/2.0.3".to_owned()))),
            ("m-4".to_owned(), (0, web("1.3.0"))),
        ]);
        assert_eq!(clients(&store, a.id).await, alice);
        let bob = clients(&store, b.id).await;
        assert_eq!(bob.len(), 4, "m-0, m-1, m-3, m-5");
        assert!(bob.values().all(|(_, app)| app.is_none()), "{bob:?}");
        assert_eq!(
            clients(&store, c.id).await,
            HashMap::from([("m-4".to_owned(), (1, None)), ("m-5".to_owned(), (0, None)),])
        );

        // A deletion re-keys the seats and keeps their apps (no one's personal data);
        // the sign-ins themselves go with the account.
        let key = Uuid::now_v7();
        store.delete_account(a.id, key, at(70)).await.unwrap();
        assert_eq!(clients(&store, key).await, alice);
        assert!(store.sign_in_clients(a.id).await.unwrap().is_empty());
    }

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

    pub(super) async fn refresh_tokens_rotate_once_and_reuse_revokes_the_family<S: Store>(
        store: S,
    ) {
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

    pub(super) async fn ranked_match_is_recorded_once_and_rates_once<S: Store>(store: S) {
        let a = new_account(&store, "alice").await;
        let b = new_account(&store, "bob").await;
        let m = duel("m-1", a.id, b.id, 0, true, 30);
        let first = store.record_match(&m, at(31)).await.unwrap();
        assert!(!first.already_recorded);
        assert_eq!(first.rating_changes.len(), 2);
        let (ca, cb) = (first.rating_changes[0], first.rating_changes[1]);
        assert_eq!(
            (ca.user_id, ca.seat, cb.user_id, cb.seat),
            (a.id, 0, b.id, 1)
        );
        assert_eq!(ca.rating_before, 1500.0);
        assert!(
            ca.rating_after > 1500.0 && cb.rating_after < 1500.0,
            "{first:?}"
        );
        assert!(ca.deviation_after < 350.0);

        let pa = store.profile(a.id, RULES).await.unwrap().unwrap();
        assert_eq!(pa.rating.rating, ca.rating_after);
        assert_eq!(pa.rating.deviation, ca.deviation_after);
        assert_eq!(
            (pa.ranked_matches, pa.matches_played, pa.wins, pa.losses),
            (1, 1, 1, 0)
        );
        assert_eq!((pa.basras.basra, pa.basras.jack, pa.basras.komi), (2, 1, 0));
        assert_eq!(pa.leaderboard_rank, Some(1));
        let pb = store.profile(b.id, RULES).await.unwrap().unwrap();
        assert_eq!(
            (pb.ranked_matches, pb.matches_played, pb.wins, pb.losses),
            (1, 1, 0, 1)
        );
        assert_eq!((pb.basras.basra, pb.basras.jack, pb.basras.komi), (1, 0, 1));
        assert_eq!(pb.leaderboard_rank, Some(2));

        // The same match again, even with other content: nothing changes.
        let mut again = duel("m-1", a.id, b.id, 1, true, 40);
        again.room_id = "elsewhere".into();
        let second = store.record_match(&again, at(41)).await.unwrap();
        assert!(second.already_recorded);
        assert_eq!(second.rating_changes, first.rating_changes);
        assert_eq!(store.profile(a.id, RULES).await.unwrap().unwrap(), pa);
        assert_eq!(store.counts().await.unwrap().matches, 1);
        let history = store.match_history(a.id, None, 10).await.unwrap();
        assert_eq!(history.len(), 1);
        assert_eq!(history[0].room_id, "room-m-1");

        // Concurrent duplicates of a new match: one recording.
        let m2 = duel("m-2", a.id, b.id, 1, true, 50);
        let mut tasks = JoinSet::new();
        for _ in 0..4 {
            let (store, m2) = (store.clone(), m2.clone());
            tasks.spawn(async move { store.record_match(&m2, at(51)).await.unwrap() });
        }
        let results = tasks.join_all().await;
        assert_eq!(results.iter().filter(|r| !r.already_recorded).count(), 1);
        assert!(
            results
                .iter()
                .all(|r| r.rating_changes == results[0].rating_changes)
        );
        let pa = store.profile(a.id, RULES).await.unwrap().unwrap();
        assert_eq!(
            (pa.ranked_matches, pa.matches_played, pa.wins, pa.losses),
            (2, 2, 1, 1)
        );
    }

    pub(super) async fn unranked_closed_and_bot_matches_change_no_rating<S: Store>(store: S) {
        let a = new_account(&store, "alice").await;
        let b = new_guest(&store, "dev").await;
        let unranked = store
            .record_match(&duel("u", a.id, b.id, 0, false, 1), at(2))
            .await
            .unwrap();
        assert!(unranked.rating_changes.is_empty());
        let closed = store
            .record_match(
                &record("c", &[Some(a.id), Some(b.id)], None, true, 3),
                at(4),
            )
            .await
            .unwrap();
        assert!(closed.rating_changes.is_empty());
        let bot = store
            .record_match(&record("b", &[Some(a.id), None], Some(0), true, 5), at(6))
            .await
            .unwrap();
        assert!(bot.rating_changes.is_empty());

        let pa = store.profile(a.id, RULES).await.unwrap().unwrap();
        assert_eq!(pa.rating, Rating::default());
        assert_eq!(
            (pa.ranked_matches, pa.matches_played, pa.wins, pa.losses),
            (0, 3, 2, 0)
        );
        assert_eq!(pa.leaderboard_rank, None);
        let history = store.match_history(a.id, None, 10).await.unwrap();
        assert!(history.iter().all(|h| h.your_rating_change.is_none()));
        assert_eq!(store.counts().await.unwrap().matches, 3);
    }

    pub(super) async fn partnership_match_rates_every_human<S: Store>(store: S) {
        let a = new_account(&store, "a_1").await;
        let b = new_account(&store, "b_1").await;
        let c = new_account(&store, "c_1").await;
        // Seats 0+2 (a and a bot) against 1+3 (b and c); side 1 wins.
        let m = record(
            "p",
            &[Some(a.id), Some(b.id), None, Some(c.id)],
            Some(1),
            true,
            9,
        );
        let r = store.record_match(&m, at(10)).await.unwrap();
        let seats: Vec<(u8, Uuid)> = r
            .rating_changes
            .iter()
            .map(|c| (c.seat, c.user_id))
            .collect();
        assert_eq!(seats, vec![(0, a.id), (1, b.id), (3, c.id)]);
        assert!(r.rating_changes[0].rating_after < 1500.0);
        assert!(r.rating_changes[1].rating_after > 1500.0);
        assert_eq!(
            r.rating_changes[1].rating_after,
            r.rating_changes[2].rating_after
        );
        let pc = store.profile(c.id, RULES).await.unwrap().unwrap();
        assert_eq!(
            (pc.wins, pc.basras.basra, pc.basras.komi),
            (1, 1, 1),
            "side 1's basras"
        );
        let history = store.match_history(c.id, None, 10).await.unwrap();
        assert_eq!(history[0].your_seat, 3);
        assert_eq!(history[0].seats.len(), 4);
        assert!(history[0].seats[2].is_bot);
    }

    pub(super) async fn match_with_unknown_user_writes_nothing<S: Store>(store: S) {
        let a = new_account(&store, "alice").await;
        let before = store.profile(a.id, RULES).await.unwrap().unwrap();
        let m = duel("ghost", a.id, Uuid::now_v7(), 0, true, 1);
        let err = store.record_match(&m, at(2)).await.unwrap_err();
        assert!(
            matches!(&err, AccountsError::InvalidArgument { reason, .. } if reason.contains("unknown user")),
            "{err:?}"
        );
        assert_eq!(store.counts().await.unwrap().matches, 0);
        assert_eq!(store.profile(a.id, RULES).await.unwrap().unwrap(), before);
        // And the id is still free for a correct record.
        let b = new_account(&store, "bob").await;
        let ok = store
            .record_match(&duel("ghost", a.id, b.id, 0, true, 1), at(3))
            .await
            .unwrap();
        assert!(!ok.already_recorded);
    }

    pub(super) async fn leaderboard_order_ties_and_pages<S: Store>(store: S) {
        let mut users = Vec::new();
        for name in ["p_a", "p_b", "p_c", "p_d", "p_e", "p_f"] {
            users.push(new_account(&store, name).await);
        }
        let g = new_guest(&store, "guest-device").await;
        let [a, b, c, d, e, f] = [0, 1, 2, 3, 4, 5].map(|i| users[i].id);
        // a and c win a first match each: equal rating and count, so the
        // user id breaks the tie. e wins twice.
        store
            .record_match(&duel("1", a, b, 0, true, 1), at(1))
            .await
            .unwrap();
        store
            .record_match(&duel("2", c, d, 0, true, 2), at(2))
            .await
            .unwrap();
        store
            .record_match(&duel("3", e, f, 0, true, 3), at(3))
            .await
            .unwrap();
        store
            .record_match(&duel("4", e, f, 0, true, 4), at(4))
            .await
            .unwrap();
        // The guest plays ranked too, but is never listed.
        store
            .record_match(&duel("5", g.id, b, 0, true, 5), at(5))
            .await
            .unwrap();

        let all = store.leaderboard(RULES, None, 100).await.unwrap();
        let ids: Vec<Uuid> = all.iter().map(|r| r.user_id).collect();
        assert_eq!(ids.len(), 6, "{all:?}");
        assert!(!ids.contains(&g.id));
        assert_eq!(ids[0], e);
        let (first, second) = if a < c { (a, c) } else { (c, a) };
        assert_eq!(&ids[1..3], &[first, second]);
        assert_eq!(all[1].rating, all[2].rating);
        for pair in all.windows(2) {
            assert!(pair[0].rating >= pair[1].rating, "{all:?}");
        }
        // Pages of 2 through the cursor give the same list.
        let mut paged = Vec::new();
        let mut after = None;
        loop {
            let page = store.leaderboard(RULES, after, 2).await.unwrap();
            if page.is_empty() {
                break;
            }
            after = Some(page.last().unwrap().cursor());
            paged.extend(page);
        }
        assert_eq!(paged, all);
        for (i, row) in all.iter().enumerate() {
            let (rank, found) = store
                .leaderboard_position(row.user_id, RULES)
                .await
                .unwrap()
                .unwrap();
            assert_eq!((rank as usize, &found), (i + 1, row));
        }
        assert_eq!(store.leaderboard_position(g.id, RULES).await.unwrap(), None);
        // A stricter rule lists only e (two ranked matches) and b and f (two losses each).
        let strict = LeaderboardRules {
            min_ranked_matches: 2,
        };
        let listed: Vec<Uuid> = store
            .leaderboard(strict, None, 100)
            .await
            .unwrap()
            .iter()
            .map(|r| r.user_id)
            .collect();
        assert_eq!(listed.len(), 3);
        assert_eq!(listed[0], e);
        assert!(listed.contains(&b) && listed.contains(&f));
        assert_eq!(
            store
                .profile(a, strict)
                .await
                .unwrap()
                .unwrap()
                .leaderboard_rank,
            None
        );
    }

    pub(super) async fn match_history_newest_first_in_pages<S: Store>(store: S) {
        let a = new_account(&store, "alice").await;
        let b = new_account(&store, "bob").await;
        let c = new_account(&store, "carol").await;
        // Two matches end at the same time: the match id orders them.
        for (id, ended) in [("h1", 10), ("h2", 20), ("h3b", 30), ("h3a", 30), ("h4", 40)] {
            store
                .record_match(&duel(id, a.id, b.id, 0, true, ended), at(ended + 1))
                .await
                .unwrap();
        }
        store
            .record_match(&duel("other", b.id, c.id, 0, false, 50), at(51))
            .await
            .unwrap();

        let all = store.match_history(a.id, None, 100).await.unwrap();
        let ids: Vec<&str> = all.iter().map(|h| h.match_id.as_str()).collect();
        assert_eq!(ids, ["h4", "h3b", "h3a", "h2", "h1"]);
        let h = &all[0];
        assert_eq!(h.your_seat, 0);
        assert_eq!(h.winner_side, Some(0));
        assert_eq!(h.final_totals, vec![101, 40]);
        assert_eq!(h.ended_at, at(40));
        assert_eq!(h.started_at, at(20));
        assert_eq!(h.settings, basra_engine::Settings::default());
        assert!(h.ranked);
        let change = h.your_rating_change.expect("ranked");
        assert_eq!((change.user_id, change.seat), (a.id, 0));

        let mut paged = Vec::new();
        let mut after = None;
        loop {
            let page = store.match_history(a.id, after.clone(), 2).await.unwrap();
            if page.is_empty() {
                break;
            }
            after = Some(page.last().unwrap().cursor());
            paged.extend(page);
        }
        assert_eq!(paged, all);

        let bob = store.match_history(b.id, None, 100).await.unwrap();
        assert_eq!(bob.len(), 6);
        assert_eq!(bob[0].match_id, "other");
        assert_eq!(bob[0].your_seat, 0);
        assert_eq!(bob[1].your_seat, 1);
        assert!(
            store
                .match_history(Uuid::now_v7(), None, 10)
                .await
                .unwrap()
                .is_empty()
        );
    }

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

    fn name(raw: &str) -> DisplayName {
        DisplayName::parse(raw).unwrap()
    }

    /// Two changes per hour.
    const HOURLY: NameChangeLimit = NameChangeLimit {
        max_changes: 2,
        window: std::time::Duration::from_secs(3600),
    };

    pub(super) async fn display_name_changes_are_limited_per_rolling_window<S: Store>(store: S) {
        let user = new_account(&store, "rita").await;
        let done = |display_name: &str, changed, changes_left, next_change_at| NameChange::Done {
            display_name: display_name.into(),
            changed,
            changes_left,
            next_change_at,
        };
        assert_eq!(
            store
                .set_display_name(user.id, &name("Rita"), HOURLY, at(0))
                .await
                .unwrap(),
            done("Rita", true, 1, None)
        );
        // The name it already has: no change, nothing counted.
        assert_eq!(
            store
                .set_display_name(user.id, &name("Rita"), HOURLY, at(5))
                .await
                .unwrap(),
            done("Rita", false, 1, None)
        );
        assert_eq!(
            store
                .set_display_name(user.id, &name("Rita R"), HOURLY, at(10))
                .await
                .unwrap(),
            done("Rita R", true, 0, Some(at(60)))
        );
        // The third within the hour is refused until the first leaves the window.
        assert_eq!(
            store
                .set_display_name(user.id, &name("Rita 3"), HOURLY, at(59))
                .await
                .unwrap(),
            NameChange::Limited {
                next_change_at: at(60)
            }
        );
        let stored = store.user(user.id).await.unwrap().unwrap();
        assert_eq!(
            stored.display_name, "Rita R",
            "a refused change writes nothing"
        );
        assert_eq!(
            store
                .set_display_name(user.id, &name("Rita 3"), HOURLY, at(60))
                .await
                .unwrap(),
            done("Rita 3", true, 0, Some(at(70)))
        );
        let profile = store
            .profile(
                user.id,
                LeaderboardRules {
                    min_ranked_matches: 1,
                },
            )
            .await
            .unwrap()
            .unwrap();
        assert_eq!(profile.user.display_name, "Rita 3");
        let players = store.players(&[user.id]).await.unwrap();
        assert_eq!(players[0].0.display_name, "Rita 3");

        let err = store
            .set_display_name(Uuid::now_v7(), &name("Nobody"), HOURLY, at(0))
            .await
            .unwrap_err();
        assert!(matches!(err, AccountsError::UserNotFound), "{err:?}");
    }

    pub(super) async fn concurrent_display_name_changes_count_each_other<S: Store>(store: S) {
        let user = new_account(&store, "racer").await;
        let mut tasks = JoinSet::new();
        for i in 0..6 {
            let store = store.clone();
            tasks.spawn(async move {
                store
                    .set_display_name(user.id, &name(&format!("Racer {i}")), HOURLY, at(1))
                    .await
                    .unwrap()
            });
        }
        let mut changed = 0;
        let mut limited = 0;
        while let Some(outcome) = tasks.join_next().await {
            match outcome.unwrap() {
                NameChange::Done { changed: true, .. } => changed += 1,
                NameChange::Limited { .. } => limited += 1,
                other => panic!("unexpected {other:?}"),
            }
        }
        assert_eq!((changed, limited), (2, 4), "the limit holds under races");
    }
}
