//! Reports of players ([`Reports`](accounts::store::Reports)): filing under the
//! per-reporter limit (concurrent filings count each other), the refusals that store
//! nothing, the moderators' list by target, resolution, the hidden-name count, and an
//! account's deletion taking its reports.

use super::*;
use accounts::reports::{ReportReason, ReportRules, Resolution};
use accounts::store::{Filing, NewReport};

/// Two reports per hour; a name hidden by two reporters.
const RULES: ReportRules = ReportRules {
    max_per_window: 2,
    window: std::time::Duration::from_secs(3600),
    hide_name_reporters: 2,
};

fn report(reporter: Uuid, target: Uuid, reason: ReportReason, minute: u32) -> NewReport {
    NewReport {
        id: Uuid::now_v7(),
        reporter_id: reporter,
        target_id: target,
        reason,
        match_id: None,
        comment: format!("seen at minute {minute}"),
        at: at(minute),
    }
}

pub(super) async fn reports_are_filed_under_the_limit_and_refusals_store_nothing<S: Store>(
    store: S,
) {
    let a = new_account(&store, "rep_a").await;
    let b = new_account(&store, "rep_b").await;
    let c = new_account(&store, "rep_c").await;
    store
        .record_match(&duel("m-ab", a.id, b.id, 0, false, 1), at(1))
        .await
        .unwrap();

    let mut first = report(a.id, b.id, ReportReason::Cheating, 2);
    first.match_id = Some("m-ab".into());
    assert_eq!(
        store.file_report(&first, RULES).await.unwrap(),
        Filing::Filed {
            display_name: "rep_b".into()
        }
    );
    // A match the reporter was not in (c never played b), an unknown match, an unknown
    // target: nothing stored, nothing counted.
    let mut not_theirs = report(c.id, b.id, ReportReason::Cheating, 3);
    not_theirs.match_id = Some("m-ab".into());
    assert_eq!(
        store.file_report(&not_theirs, RULES).await.unwrap(),
        Filing::NotInMatch
    );
    let mut unknown_match = report(a.id, b.id, ReportReason::Cheating, 3);
    unknown_match.match_id = Some("no-such-match".into());
    assert_eq!(
        store.file_report(&unknown_match, RULES).await.unwrap(),
        Filing::NotInMatch
    );
    assert_eq!(
        store
            .file_report(&report(a.id, Uuid::now_v7(), ReportReason::Other, 3), RULES)
            .await
            .unwrap(),
        Filing::UnknownTarget
    );
    assert!(matches!(
        store
            .file_report(&report(Uuid::now_v7(), b.id, ReportReason::Other, 3), RULES)
            .await,
        Err(AccountsError::UserNotFound)
    ));
    // The second report of the hour is accepted, the third is limited until the first
    // leaves the window.
    assert!(matches!(
        store
            .file_report(&report(a.id, c.id, ReportReason::Other, 10), RULES)
            .await
            .unwrap(),
        Filing::Filed { .. }
    ));
    assert_eq!(
        store
            .file_report(&report(a.id, c.id, ReportReason::Other, 20), RULES)
            .await
            .unwrap(),
        Filing::Limited { next_at: at(62) }
    );
    assert!(matches!(
        store
            .file_report(&report(a.id, c.id, ReportReason::Other, 63), RULES)
            .await
            .unwrap(),
        Filing::Filed { .. }
    ));

    let of_b = store.reports_of(b.id).await.unwrap();
    assert_eq!(of_b.len(), 1, "{of_b:?}");
    assert_eq!(of_b[0].id, first.id);
    assert_eq!(of_b[0].match_id.as_deref(), Some("m-ab"));
    assert_eq!(of_b[0].comment, "seen at minute 2");
    assert_eq!(of_b[0].display_name, "rep_b");
    assert_eq!(of_b[0].resolved, None);
    let of_c = store.reports_of(c.id).await.unwrap();
    assert_eq!(of_c.len(), 2);
    assert!(of_c[0].at > of_c[1].at, "newest first: {of_c:?}");
}

pub(super) async fn concurrent_reports_of_one_reporter_count_each_other<S: Store>(store: S) {
    let a = new_account(&store, "rep_a").await;
    let b = new_account(&store, "rep_b").await;
    let mut set = JoinSet::new();
    for minute in 0..6 {
        let store = store.clone();
        let r = report(a.id, b.id, ReportReason::Other, 1 + minute % 2);
        set.spawn(async move { store.file_report(&r, RULES).await.unwrap() });
    }
    let mut filed = 0;
    while let Some(outcome) = set.join_next().await {
        if matches!(outcome.unwrap(), Filing::Filed { .. }) {
            filed += 1;
        }
    }
    assert_eq!(filed, 2, "two per hour, however they race");
    assert_eq!(store.reports_of(b.id).await.unwrap().len(), 2);
}

pub(super) async fn open_reports_group_by_target_hide_names_and_resolve<S: Store>(store: S) {
    let mut players = Vec::new();
    for name in ["rep_a", "rep_b", "rep_c", "rep_t", "rep_u"] {
        players.push(new_account(&store, name).await);
    }
    let [a, b, c, t, u] = [0, 1, 2, 3, 4].map(|i| players[i].id);
    let file = |r: NewReport| {
        let store = store.clone();
        async move {
            assert!(matches!(
                store.file_report(&r, RULES).await.unwrap(),
                Filing::Filed { .. }
            ));
        }
    };
    // t: a twice (one reporter) for the name, then b for the name, c for cheating.
    file(report(a, t, ReportReason::OffensiveName, 1)).await;
    file(report(a, t, ReportReason::OffensiveName, 2)).await;
    assert_eq!(
        store.hidden_among(&[t, u], 2).await.unwrap(),
        Vec::<Uuid>::new()
    );
    file(report(b, t, ReportReason::OffensiveName, 3)).await;
    file(report(c, t, ReportReason::Cheating, 4)).await;
    // u: two reporters, but not for the name.
    file(report(b, u, ReportReason::ChatAbuse, 5)).await;
    file(report(c, u, ReportReason::Cheating, 6)).await;
    assert_eq!(store.hidden_among(&[t, u, a], 2).await.unwrap(), vec![t]);
    assert_eq!(
        store.hidden_among(&[t], 3).await.unwrap(),
        Vec::<Uuid>::new()
    );
    assert_eq!(
        store.hidden_among(&[], 1).await.unwrap(),
        Vec::<Uuid>::new()
    );

    let open = store.open_reports(10).await.unwrap();
    assert_eq!(open.len(), 2, "{open:?}");
    assert_eq!(open[0].target_id, t);
    assert_eq!(open[0].display_name, "rep_t");
    assert_eq!(open[0].reporters, 3);
    assert_eq!(open[0].reports, 4);
    assert_eq!(
        open[0].reasons,
        vec![ReportReason::OffensiveName, ReportReason::Cheating]
    );
    assert_eq!((open[0].first_at, open[0].last_at), (at(1), at(4)));
    assert_eq!(open[1].target_id, u);
    assert_eq!(open[1].reporters, 2);
    assert_eq!(store.open_reports(1).await.unwrap().len(), 1);

    let resolved = store
        .resolve_reports(t, Resolution::Dismiss, at(10))
        .await
        .unwrap();
    assert_eq!(resolved.reports, 4);
    // Each reporter once, with their newest report (a reported twice).
    let mut expected = vec![(a, at(2)), (b, at(3)), (c, at(4))];
    expected.sort_unstable();
    let got: Vec<(Uuid, DateTime<Utc>)> = resolved
        .reporters
        .iter()
        .map(|r| (r.reporter_id, r.at))
        .collect();
    assert_eq!(got, expected);
    let of_t = store.reports_of(t).await.unwrap();
    assert!(resolved.reporters.iter().all(|r| {
        of_t.iter()
            .any(|k| k.id == r.report_id && k.reporter_id == r.reporter_id)
    }));
    // Dismissed: the name is shown again, t leaves the list, the reports stay, resolved.
    assert_eq!(
        store.hidden_among(&[t], 2).await.unwrap(),
        Vec::<Uuid>::new()
    );
    let open = store.open_reports(10).await.unwrap();
    assert_eq!(
        open.iter().map(|o| o.target_id).collect::<Vec<_>>(),
        vec![u]
    );
    let of_t = store.reports_of(t).await.unwrap();
    assert_eq!(of_t.len(), 4);
    assert!(
        of_t.iter()
            .all(|r| r.resolved == Some((at(10), Resolution::Dismiss)))
    );
    // A second resolution closes nothing.
    let again = store
        .resolve_reports(t, Resolution::Ban, at(11))
        .await
        .unwrap();
    assert_eq!((again.reports, again.reporters.len()), (0, 0));

    // Each reporter's own filings, newest first, resolved or not; nobody else's.
    let by_a = store.reports_by(a).await.unwrap();
    assert_eq!(by_a.len(), 2, "{by_a:?}");
    assert!(by_a.iter().all(|r| r.reporter_id == a && r.target_id == t));
    assert!(by_a[0].at > by_a[1].at, "newest first");
    let by_b = store.reports_by(b).await.unwrap();
    assert_eq!(
        by_b.iter()
            .map(|r| (r.target_id, r.resolved.is_some()))
            .collect::<Vec<_>>(),
        vec![(u, false), (t, true)]
    );
    assert!(
        store.reports_by(t).await.unwrap().is_empty(),
        "t filed none"
    );

    // An account's deletion takes the reports it filed and those about it.
    assert_eq!(store.reports_by(c).await.unwrap().len(), 2);
    store
        .delete_account(c, Uuid::now_v7(), at(20))
        .await
        .unwrap();
    assert!(store.reports_by(c).await.unwrap().is_empty());
    assert!(
        store
            .reports_of(t)
            .await
            .unwrap()
            .iter()
            .all(|r| r.reporter_id != c),
        "c's reports went with c"
    );
    let open = store.open_reports(10).await.unwrap();
    assert_eq!(open[0].target_id, u);
    assert_eq!(open[0].reporters, 1);
    store
        .delete_account(u, Uuid::now_v7(), at(21))
        .await
        .unwrap();
    assert!(store.open_reports(10).await.unwrap().is_empty());
}
