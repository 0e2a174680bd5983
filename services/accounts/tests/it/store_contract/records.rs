//! Match records ([`MatchRecords`](accounts::store::MatchRecords)): each match recorded and
//! rated once, all or nothing, the seats' client apps, the history's pages.

use super::*;

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

/// Each human seat keeps the client app of its player's latest sign-in at or before
/// the match's end (of two at the same time, the one noted last), through
/// RecordMatch and RecordMatches alike; a player who named none, or only later, has
/// none; a retry changes nothing; a deletion keeps the seats' apps under the key.
pub(super) async fn each_seat_keeps_its_players_client_app_at_the_matchs_end<S: Store>(store: S) {
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

pub(super) async fn analyses_are_kept_per_seat_and_read_back_whatever_their_worlds<S: Store>(
    store: S,
) {
    use basra_engine::Card;
    use basra_engine::analysis::{PlayReview, Quality};
    let a = new_account(&store, "alice").await;
    let b = new_account(&store, "bob").await;
    for id in ["m-1", "m-2"] {
        store
            .record_match(&duel(id, a.id, b.id, 0, false, 1), at(2))
            .await
            .unwrap();
    }
    let review = |action: usize, loss: f64| PlayReview {
        action,
        played: Card::from_index(3).unwrap(),
        best: Card::from_index(40).unwrap(),
        loss,
        quality: Quality::Mistake,
    };
    let alices = vec![review(0, 0.0), review(2, 4.5)];
    store
        .keep_match_analysis("m-1", 0, 100, &alices, at(3))
        .await
        .unwrap();
    store
        .keep_match_analysis("m-1", 1, 7, &[review(1, 9.0)], at(3))
        .await
        .unwrap();
    let mut kept = store
        .kept_analyses(&[
            ("m-1".to_owned(), 0),
            ("m-1".to_owned(), 1),
            ("m-2".to_owned(), 0),
            ("m-9".to_owned(), 0),
        ])
        .await
        .unwrap();
    kept.sort_by_key(|k| k.seat);
    assert_eq!(kept.len(), 2, "{kept:?}");
    assert_eq!(
        (kept[0].match_id.as_str(), kept[0].seat, kept[0].worlds),
        ("m-1", 0, 100)
    );
    assert_eq!(kept[0].reviews, alices);
    assert_eq!((kept[1].seat, kept[1].worlds), (1, 7), "other worlds too");
    let only = store.kept_analyses(&[("m-1".to_owned(), 1)]).await.unwrap();
    assert_eq!(only.len(), 1);
    assert_eq!(only[0].seat, 1);
    assert!(store.kept_analyses(&[]).await.unwrap().is_empty());
}
