//! Profiles and names ([`Profiles`](accounts::store::Profiles)): the leaderboard's order and
//! pages, display name changes under their rolling limit.

use super::*;

fn name(raw: &str) -> DisplayName {
    DisplayName::parse(raw).unwrap()
}

/// Two changes per hour.
const HOURLY: NameChangeLimit = NameChangeLimit {
    max_changes: 2,
    window: std::time::Duration::from_secs(3600),
};

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
