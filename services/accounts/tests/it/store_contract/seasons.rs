//! Rating seasons ([`Seasons`](accounts::store::Seasons)) and their part in ratings: a
//! rated match moves its players to the season of its recording, softly reset once;
//! reads show a rating not moved yet as the reset leaves it; a finished season is
//! closed once and its leaderboard kept, a rating moved on before the closing included
//! with its last value in the season.

use std::sync::Arc;

use accounts::seasons::{Calendar, Season};

use super::*;

/// Seasons around the real clock (reads take the current season from it): `s1` ended a
/// day ago, `s2` is current, `s3` starts in a month.
fn calendar() -> Arc<Calendar> {
    let now = Utc::now();
    let season = |id: &str, days: i64| Season {
        id: id.into(),
        name: id.to_uppercase(),
        start: now + chrono::Duration::days(days),
    };
    Arc::new(Calendar {
        reset_factor: 0.5,
        deviation_growth: 150.0,
        list: vec![season("s1", -30), season("s2", -1), season("s3", 30)],
        tiers: Vec::new(),
    })
}

/// A time in `s1`.
fn in_s1() -> DateTime<Utc> {
    Utc::now() - chrono::Duration::days(10)
}

pub(super) async fn seasons_reset_softly_once_and_keep_the_finished_leaderboard<S: Store>(
    store: S,
) {
    let calendar = calendar();
    let store = store.with_calendar(Arc::clone(&calendar));
    let a = new_account(&store, "alice").await;
    let b = new_account(&store, "bob").await;
    let c = new_account(&store, "carol").await;
    for (i, (winner, loser)) in [(a.id, b.id), (a.id, b.id), (a.id, c.id)]
        .iter()
        .enumerate()
    {
        store
            .record_match(
                &duel(&format!("s1-{i}"), *winner, *loser, 0, true, 1),
                in_s1(),
            )
            .await
            .unwrap();
    }
    // Nobody has played in s2 yet: the current leaderboard is empty, and each rating
    // reads as the soft reset leaves it (nothing written).
    assert!(store.leaderboard(RULES, None, 10).await.unwrap().is_empty());
    let closed: Vec<bool> = {
        let mut tasks = JoinSet::new();
        for _ in 0..4 {
            let store = store.clone();
            tasks.spawn(async move { store.close_season("s1", Utc::now()).await.unwrap() });
        }
        tasks.join_all().await
    };
    assert_eq!(
        closed.iter().filter(|c| **c).count(),
        1,
        "closed once: {closed:?}"
    );
    assert!(!store.close_season("s1", Utc::now()).await.unwrap());

    let board = store
        .season_leaderboard("s1", RULES, None, 10)
        .await
        .unwrap();
    let ids: Vec<Uuid> = board.iter().map(|r| r.user_id).collect();
    assert_eq!(ids[0], a.id);
    assert_eq!(board.len(), 3);
    assert_eq!(board[0].ranked_matches, 3);
    let a_s1 = board[0].rating;
    let pa = store.profile(a.id, RULES).await.unwrap().unwrap();
    assert!(
        (pa.rating.rating - (1500.0 + 0.5 * (a_s1 - 1500.0))).abs() < 1e-9,
        "{pa:?}"
    );
    assert!(pa.rating.deviation > 0.0 && pa.rating.deviation <= 350.0);
    assert_eq!(pa.ranked_matches, 3, "all seasons' rated matches");
    assert_eq!(pa.leaderboard_rank, None, "not listed in s2 yet");
    let players = store.players(&[a.id]).await.unwrap();
    assert_eq!(players[0].1, pa.rating);
    // Pages of the finished leaderboard, and positions.
    let first = store
        .season_leaderboard("s1", RULES, None, 1)
        .await
        .unwrap();
    let rest = store
        .season_leaderboard("s1", RULES, Some(first[0].cursor()), 10)
        .await
        .unwrap();
    assert_eq!(first.len() + rest.len(), 3);
    assert_eq!(rest, board[1..]);
    let (rank, row) = store
        .season_position(b.id, "s1", RULES)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(board[rank as usize - 1], row);
    let finishes = store.season_finishes(a.id, RULES).await.unwrap();
    assert_eq!(finishes.len(), 1);
    assert_eq!(
        (finishes[0].season_id.as_str(), finishes[0].rank),
        ("s1", 1)
    );
    assert!(
        store
            .season_leaderboard("s2", RULES, None, 10)
            .await
            .unwrap()
            .is_empty()
    );
    // Every archived rating of a player's, listed or not: a's s1 one, nobody else's.
    let archived = store.season_ratings(a.id).await.unwrap();
    assert_eq!(archived.len(), 1, "{archived:?}");
    assert_eq!(
        (archived[0].season_id.as_str(), archived[0].season_matches),
        ("s1", 3)
    );
    assert_eq!(archived[0].rating.rating, a_s1);
    assert!(archived[0].rating.deviation < 350.0);
    let late = new_account(&store, "dina").await;
    assert!(store.season_ratings(late.id).await.unwrap().is_empty());
    assert_eq!(pa.season_matches, 0, "no rated match in s2 yet");

    // The first s2 match starts from the reset rating; the s1 leaderboard stays.
    let m = store
        .record_match(&duel("s2-0", a.id, b.id, 0, true, 2), Utc::now())
        .await
        .unwrap();
    assert_eq!(m.rating_changes[0].rating_before, pa.rating.rating);
    let current = store.leaderboard(RULES, None, 10).await.unwrap();
    assert_eq!(current.len(), 2);
    assert!(current.iter().all(|r| r.ranked_matches == 1), "{current:?}");
    let pa = store.profile(a.id, RULES).await.unwrap().unwrap();
    assert_eq!(pa.rating.rating, m.rating_changes[0].rating_after);
    assert_eq!((pa.ranked_matches, pa.leaderboard_rank), (4, Some(1)));
    assert_eq!(pa.season_matches, 1, "one rated match in s2");
    assert_eq!(store.season_ratings(a.id).await.unwrap(), archived);
    assert_eq!(
        store
            .season_leaderboard("s1", RULES, None, 10)
            .await
            .unwrap(),
        board
    );
}

pub(super) async fn a_rating_moved_on_before_the_closing_keeps_its_finished_season_value<
    S: Store,
>(
    store: S,
) {
    let store = store.with_calendar(calendar());
    let a = new_account(&store, "alice").await;
    let b = new_account(&store, "bob").await;
    let c = new_account(&store, "carol").await;
    store
        .record_match(&duel("s1-0", a.id, b.id, 0, true, 1), in_s1())
        .await
        .unwrap();
    let a_s1 = store.profile(a.id, RULES).await.unwrap().unwrap();
    // a plays in s2 before anyone closes s1: a's s1 rating is archived as it moves on.
    store
        .record_match(&duel("s2-0", c.id, a.id, 0, true, 2), Utc::now())
        .await
        .unwrap();
    assert!(store.close_season("s1", Utc::now()).await.unwrap());
    let board = store
        .season_leaderboard("s1", RULES, None, 10)
        .await
        .unwrap();
    assert_eq!(board.len(), 2, "{board:?}");
    assert_eq!(board[0].user_id, a.id);
    // What a had in s1 before the reset and the s2 loss (the profile read it reset).
    let reset = calendar().roll(
        accounts::rating::Rating {
            rating: board[0].rating,
            ..a_s1.rating
        },
        "s1",
        "s2",
    );
    assert_eq!(reset.rating, a_s1.rating.rating);
    assert_eq!(board[0].ranked_matches, 1);
    // Unrated and unknown seasons list nobody.
    assert!(
        store
            .season_leaderboard("nope", RULES, None, 10)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(store.season_finishes(c.id, RULES).await.unwrap().is_empty());
}
