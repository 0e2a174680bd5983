//! Reports of players through real tonic clients, on PostgreSQL and the memory store:
//! ReportPlayer's refusals (each with its documented status), the name hidden from
//! others once enough distinct players reported it (its owner still sees it), and the
//! moderators' list, context and resolutions (dismiss, rename, ban) with their audit.

use accounts::store::Store;
use basra_proto::basra::accounts::v1 as pb;
use basra_proto::basra::accounts::v1::accounts_admin_service_client::AccountsAdminServiceClient;
use tonic::Code;
use uuid::Uuid;

use crate::admin::admin;
use crate::grpc::{failure, match_record, register};
use crate::helpers::{TestApp, authed};

on_both_stores! {
    cases {
        report_refusals_each_with_its_status,
        a_name_reported_by_enough_players_is_hidden_from_others_until_dismissed,
        moderators_list_see_and_resolve_reports_with_their_audit,
    }
}

fn report(user_id: &str, reason: pb::ReportReason) -> pb::ReportPlayerRequest {
    pb::ReportPlayerRequest {
        user_id: user_id.to_owned(),
        reason: reason as i32,
        match_id: String::new(),
        comment: String::new(),
    }
}

/// The `report_handled` notices in `player`'s inbox: (report id, target).
async fn handled_notices<S: Store>(
    app: &TestApp<S>,
    player: &pb::AuthTokens,
) -> Vec<(String, String)> {
    app.client()
        .await
        .list_notices(authed(
            pb::ListNoticesRequest::default(),
            &player.access_token,
        ))
        .await
        .unwrap()
        .into_inner()
        .notices
        .into_iter()
        .filter_map(|n| match n.body {
            Some(pb::notice::Body::ReportHandled(h)) => Some((h.report_id, h.target_user_id)),
            _ => None,
        })
        .collect()
}

/// At most 3 reports an hour per reporter; names hidden by 3 distinct reporters.
async fn app<S: Store>(store: S) -> TestApp<S> {
    TestApp::builder(store)
        .env(&[
            ("BASRA_REPORTS__MAX_PER_WINDOW", "3"),
            ("BASRA_REPORTS__HIDE_NAME_REPORTERS", "3"),
        ])
        .spawn()
        .await
}

async fn record_duel<S: Store>(app: &TestApp<S>, match_id: &str, a: &str, b: &str) {
    record(app, match_id, a, b, false).await;
}

async fn record<S: Store>(app: &TestApp<S>, match_id: &str, a: &str, b: &str, ranked: bool) {
    app.client()
        .await
        .record_match(authed(
            pb::RecordMatchRequest {
                record: Some(match_record(match_id, a, b, ranked)),
            },
            &app.service_token(),
        ))
        .await
        .unwrap();
}

async fn report_refusals_each_with_its_status<S: Store>(store: S) {
    let app = app(store).await;
    let client = app.client().await;
    let me = register(&app, "reporter").await;
    let them = register(&app, "reported").await;
    let other = register(&app, "bystander").await;
    record_duel(&app, "m-other", &other.user_id, &them.user_id).await;
    record_duel(&app, "m-ours", &me.user_id, &them.user_id).await;
    let call = |req: pb::ReportPlayerRequest| {
        let mut client = client.clone();
        let token = me.access_token.clone();
        async move { client.report_player(authed(req, &token)).await }
    };

    // Oneself: INVALID_ARGUMENT.
    let (code, text) = failure(call(report(&me.user_id, pb::ReportReason::Other)).await);
    assert_eq!(code, Code::InvalidArgument, "{text}");
    assert!(text.contains("user_id"), "{text}");
    // An unknown player: NOT_FOUND.
    let (code, _) =
        failure(call(report(&Uuid::now_v7().to_string(), pb::ReportReason::Other)).await);
    assert_eq!(code, Code::NotFound);
    // Not a user id, no reason: INVALID_ARGUMENT.
    let (code, _) = failure(call(report("nobody", pb::ReportReason::Other)).await);
    assert_eq!(code, Code::InvalidArgument);
    let (code, text) = failure(call(report(&them.user_id, pb::ReportReason::Unspecified)).await);
    assert_eq!(code, Code::InvalidArgument);
    assert!(text.contains("reason"), "{text}");
    // A comment of 501 characters: INVALID_ARGUMENT; 500 (Arabic letters) are fine.
    let mut long = report(&them.user_id, pb::ReportReason::ChatAbuse);
    long.comment = "ع".repeat(501);
    let (code, text) = failure(call(long.clone()).await);
    assert_eq!(code, Code::InvalidArgument);
    assert!(text.contains("comment"), "{text}");
    // A match the reporter was not in (or not recorded): FAILED_PRECONDITION.
    let mut theirs = report(&them.user_id, pb::ReportReason::Cheating);
    theirs.match_id = "m-other".into();
    let (code, _) = failure(call(theirs.clone()).await);
    assert_eq!(code, Code::FailedPrecondition);
    theirs.match_id = "m-never".into();
    let (code, _) = failure(call(theirs.clone()).await);
    assert_eq!(code, Code::FailedPrecondition);
    // A service's token: PERMISSION_DENIED.
    let (code, _) = failure(
        app.client()
            .await
            .report_player(authed(
                report(&them.user_id, pb::ReportReason::Other),
                &app.service_token(),
            ))
            .await,
    );
    assert_eq!(code, Code::PermissionDenied);
    // Nothing refused was stored or counted: three reports go through...
    long.comment = "ع".repeat(500);
    let filed = call(long).await.unwrap().into_inner();
    assert!(Uuid::parse_str(&filed.report_id).is_ok());
    theirs.match_id = "m-ours".into();
    call(theirs).await.unwrap();
    call(report(&other.user_id, pb::ReportReason::Other))
        .await
        .unwrap();
    // ... and the fourth within the hour is RESOURCE_EXHAUSTED with a retry hint.
    let status = call(report(&them.user_id, pb::ReportReason::Other))
        .await
        .expect_err("over the limit");
    assert_eq!(status.code(), Code::ResourceExhausted, "{status:?}");
    assert!(status.message().contains("too many reports"), "{status:?}");
    let retry = basra_platform::error::retry_after_of(&status).expect("google.rpc.RetryInfo");
    assert!(
        retry > std::time::Duration::from_secs(3000)
            && retry <= std::time::Duration::from_secs(3600),
        "the first report leaves the hour's window: {retry:?}"
    );
    let kept = app
        .store()
        .reports_of(them.user_id.parse().unwrap())
        .await
        .unwrap();
    assert_eq!(kept.len(), 2, "{kept:?}");
    assert!(kept.iter().all(|r| r.display_name == "reported"));
    assert_eq!(kept[0].match_id.as_deref(), Some("m-ours"));
}

/// What `viewer` sees of `target`'s name: in their profile, in GetPlayers (seat and
/// lobby names), in the viewer's match history, friend list and the leaderboard.
async fn names_seen<S: Store>(
    app: &TestApp<S>,
    viewer: &pb::AuthTokens,
    target: &pb::AuthTokens,
) -> Vec<String> {
    let mut client = app.client().await;
    let profile = client
        .get_profile(authed(
            pb::GetProfileRequest {
                user_id: target.user_id.clone(),
            },
            &viewer.access_token,
        ))
        .await
        .unwrap()
        .into_inner()
        .profile
        .unwrap()
        .display_name;
    let players = client
        .get_players(authed(
            pb::GetPlayersRequest {
                user_ids: vec![target.user_id.clone(), viewer.user_id.clone()],
                include_blocks: false,
            },
            &app.service_token(),
        ))
        .await
        .unwrap()
        .into_inner()
        .players;
    let seat = players
        .iter()
        .find(|p| p.user_id == target.user_id)
        .unwrap()
        .display_name
        .clone();
    let history = client
        .match_history(authed(
            pb::MatchHistoryRequest::default(),
            &viewer.access_token,
        ))
        .await
        .unwrap()
        .into_inner();
    let in_history = history
        .matches
        .iter()
        .flat_map(|m| &m.seats)
        .find(|s| s.user_id == target.user_id)
        .map(|s| s.display_name.clone())
        .unwrap_or_default();
    let friends = client
        .list_friends(authed(
            pb::ListFriendsRequest::default(),
            &viewer.access_token,
        ))
        .await
        .unwrap()
        .into_inner();
    let as_friend = friends
        .friends
        .iter()
        .chain(&friends.incoming)
        .chain(&friends.outgoing)
        .find(|f| f.user_id == target.user_id)
        .map(|f| f.display_name.clone())
        .unwrap_or_default();
    let board = client
        .leaderboard(authed(
            pb::LeaderboardRequest::default(),
            &viewer.access_token,
        ))
        .await
        .unwrap()
        .into_inner();
    let listed = board
        .entries
        .iter()
        .find(|e| e.user_id == target.user_id)
        .map(|e| e.display_name.clone())
        .unwrap_or_default();
    vec![profile, seat, in_history, as_friend, listed]
}

async fn a_name_reported_by_enough_players_is_hidden_from_others_until_dismissed<S: Store>(
    store: S,
) {
    let app = app(store).await;
    let mut client = app.client().await;
    let mut admin = admin(&app).await;
    let op = app.named_operator_token(Uuid::now_v7(), "ops-nour");
    let rude = register(&app, "rude_one").await;
    let reporters = [
        register(&app, "rep_1").await,
        register(&app, "rep_2").await,
        register(&app, "rep_3").await,
    ];
    let viewer = &reporters[0];
    // Ranked: both are on the leaderboard (the test settings list one ranked match).
    record(&app, "m-1", &viewer.user_id, &rude.user_id, true).await;
    client
        .add_friend(authed(
            pb::AddFriendRequest {
                target: Some(pb::add_friend_request::Target::UserId(rude.user_id.clone())),
            },
            &viewer.access_token,
        ))
        .await
        .unwrap();
    // The match history shows the name the record kept (the test's records name seats
    // themselves), the rest the name now.
    let shown = names_seen(&app, viewer, &rude).await;
    assert_eq!(
        [&shown[0], &shown[1], &shown[3], &shown[4]],
        ["rude_one", "rude_one", "rude_one", "rude_one"]
    );
    assert!(!shown[2].is_empty(), "{shown:?}");

    // Two distinct reporters for the name (one of them twice) and one for cheating: not
    // yet.
    for (who, reason) in [
        (&reporters[0], pb::ReportReason::OffensiveName),
        (&reporters[0], pb::ReportReason::OffensiveName),
        (&reporters[1], pb::ReportReason::OffensiveName),
        (&reporters[2], pb::ReportReason::Cheating),
    ] {
        client
            .report_player(authed(report(&rude.user_id, reason), &who.access_token))
            .await
            .unwrap();
    }
    assert_eq!(names_seen(&app, viewer, &rude).await, shown);
    // The third distinct reporter hides it everywhere others see it...
    client
        .report_player(authed(
            report(&rude.user_id, pb::ReportReason::OffensiveName),
            &reporters[2].access_token,
        ))
        .await
        .unwrap();
    let placeholder = accounts::reports::hidden_placeholder(rude.user_id.parse().unwrap());
    assert!(placeholder.starts_with("Player "), "{placeholder}");
    assert_eq!(
        names_seen(&app, viewer, &rude).await,
        vec![placeholder.clone(); 5]
    );
    // ... but not from its owner, nor from the moderators.
    let own = client
        .get_profile(authed(pb::GetProfileRequest::default(), &rude.access_token))
        .await
        .unwrap()
        .into_inner()
        .profile
        .unwrap();
    assert_eq!(own.display_name, "rude_one");
    let listed = admin
        .list_reports(authed(pb::ListReportsRequest::default(), &op))
        .await
        .unwrap()
        .into_inner()
        .players;
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].display_name, "rude_one");
    assert!(listed[0].name_hidden);
    assert_eq!((listed[0].reporters, listed[0].reports), (3, 5));

    // Dismissed: shown again.
    let resolved = admin
        .resolve_reports(authed(
            pb::ResolveReportsRequest {
                user_id: rude.user_id.clone(),
                action: pb::ReportAction::Dismiss as i32,
                reason: "a name from a film".into(),
                ..Default::default()
            },
            &op,
        ))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(resolved.resolved, 5);
    assert_eq!(names_seen(&app, viewer, &rude).await, shown);
}

async fn moderators_list_see_and_resolve_reports_with_their_audit<S: Store>(store: S) {
    let app = app(store).await;
    let mut client = app.client().await;
    let mut admin: AccountsAdminServiceClient<_> = admin(&app).await;
    let operator = Uuid::now_v7();
    let op = app.named_operator_token(operator, "ops-nour");
    let a = register(&app, "rep_a").await;
    let b = register(&app, "rep_b").await;
    let rude = register(&app, "rude_two").await;
    let cheat = register(&app, "cheat_one").await;
    record_duel(&app, "m-rude", &a.user_id, &rude.user_id).await;
    let mut named = report(&rude.user_id, pb::ReportReason::OffensiveName);
    named.match_id = "m-rude".into();
    named.comment = "look at that name".into();
    let a_first = client
        .report_player(authed(named, &a.access_token))
        .await
        .unwrap()
        .into_inner()
        .report_id;
    let b_first = client
        .report_player(authed(
            report(&rude.user_id, pb::ReportReason::ChatAbuse),
            &b.access_token,
        ))
        .await
        .unwrap()
        .into_inner()
        .report_id;
    client
        .report_player(authed(
            report(&cheat.user_id, pb::ReportReason::Cheating),
            &a.access_token,
        ))
        .await
        .unwrap();

    // Only operators.
    for token in [&a.access_token, &app.service_token()] {
        let (code, _) = failure(
            admin
                .list_reports(authed(pb::ListReportsRequest::default(), token))
                .await,
        );
        assert_eq!(code, Code::PermissionDenied);
    }
    let (code, _) = failure(
        admin
            .list_reports(authed(pb::ListReportsRequest { limit: 201 }, &op))
            .await,
    );
    assert_eq!(code, Code::InvalidArgument);
    let listed = admin
        .list_reports(authed(pb::ListReportsRequest::default(), &op))
        .await
        .unwrap()
        .into_inner()
        .players;
    let ids: Vec<&str> = listed.iter().map(|p| p.user_id.as_str()).collect();
    assert_eq!(ids, [rude.user_id.as_str(), cheat.user_id.as_str()]);
    assert_eq!(
        listed[0].reasons,
        [
            pb::ReportReason::OffensiveName as i32,
            pb::ReportReason::ChatAbuse as i32
        ]
    );
    assert!(!listed[0].name_hidden);

    // The context: the name at the time (the player renamed themselves since), the match,
    // the earlier actions.
    client
        .set_display_name(authed(
            pb::SetDisplayNameRequest {
                display_name: "innocent now".into(),
            },
            &rude.access_token,
        ))
        .await
        .unwrap();
    let context = admin
        .get_reports(authed(
            pb::GetReportsRequest {
                user_id: rude.user_id.clone(),
                reason: "ticket 7".into(),
            },
            &op,
        ))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(context.display_name, "innocent now");
    assert_eq!(context.reports.len(), 2);
    assert!(context.reports.iter().all(|r| r.display_name == "rude_two"));
    let with_match = context
        .reports
        .iter()
        .find(|r| r.match_id == "m-rude")
        .unwrap();
    assert_eq!(with_match.reporter_id, a.user_id);
    assert_eq!(with_match.comment, "look at that name");
    assert!(with_match.resolved_at.is_none() && with_match.resolution.is_empty());
    assert_eq!(context.matches.len(), 1);
    assert_eq!(context.matches[0].match_id, "m-rude");
    assert_eq!(context.audit.len(), 1, "this read: {:?}", context.audit);
    assert_eq!(context.audit[0].action, "reports");

    // Refusals: no action, no reason, nobody, a player without open reports.
    let resolve =
        |user_id: &str, action: pb::ReportAction, reason: &str| pb::ResolveReportsRequest {
            user_id: user_id.to_owned(),
            action: action as i32,
            reason: reason.to_owned(),
            ..Default::default()
        };
    for (req, want) in [
        (
            resolve(&rude.user_id, pb::ReportAction::Unspecified, "x"),
            Code::InvalidArgument,
        ),
        (
            resolve(&rude.user_id, pb::ReportAction::Dismiss, " "),
            Code::InvalidArgument,
        ),
        (
            resolve(&Uuid::now_v7().to_string(), pb::ReportAction::Dismiss, "x"),
            Code::NotFound,
        ),
        (
            resolve(&a.user_id, pb::ReportAction::Ban, "x"),
            Code::FailedPrecondition,
        ),
    ] {
        let (code, text) = failure(admin.resolve_reports(authed(req, &op)).await);
        assert_eq!(code, want, "{text}");
    }
    let (code, _) = failure(
        admin
            .resolve_reports(authed(
                resolve(&rude.user_id, pb::ReportAction::Dismiss, "x"),
                &a.access_token,
            ))
            .await,
    );
    assert_eq!(code, Code::PermissionDenied);

    // Rename to a neutral generated name, through RenamePlayer's path.
    let renamed = admin
        .resolve_reports(authed(
            resolve(&rude.user_id, pb::ReportAction::Rename, "offensive name"),
            &op,
        ))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(renamed.resolved, 2);
    assert_eq!(renamed.reporters_notified, 2);
    // Each reporter is told their report was handled (the notice names the report, not
    // what was done); the reported player is told nothing.
    assert_eq!(
        handled_notices(&app, &a).await,
        [(a_first.clone(), rude.user_id.clone())]
    );
    assert_eq!(
        handled_notices(&app, &b).await,
        [(b_first, rude.user_id.clone())]
    );
    assert!(handled_notices(&app, &rude).await.is_empty());
    assert!(renamed.display_name.starts_with("Basra "), "{renamed:?}");
    let profile = client
        .get_profile(authed(pb::GetProfileRequest::default(), &rude.access_token))
        .await
        .unwrap()
        .into_inner()
        .profile
        .unwrap();
    assert_eq!(profile.display_name, renamed.display_name);
    // Resolved: nothing open for them; a second resolution is refused.
    let (code, _) = failure(
        admin
            .resolve_reports(authed(
                resolve(&rude.user_id, pb::ReportAction::Dismiss, "again"),
                &op,
            ))
            .await,
    );
    assert_eq!(code, Code::FailedPrecondition);

    // Ban, through BanPlayer's path: the player's calls are refused.
    let banned = admin
        .resolve_reports(authed(
            resolve(&cheat.user_id, pb::ReportAction::Ban, "cheating"),
            &op,
        ))
        .await
        .unwrap()
        .into_inner();
    assert_eq!((banned.resolved, banned.reporters_notified), (1, 1));
    assert_eq!(
        handled_notices(&app, &a).await.len(),
        2,
        "one per resolution"
    );
    assert!(banned.ban_until.is_some());
    let (code, _) = failure(
        client
            .get_profile(authed(
                pb::GetProfileRequest::default(),
                &cheat.access_token,
            ))
            .await,
    );
    assert_eq!(code, Code::PermissionDenied);
    assert!(
        admin
            .list_reports(authed(pb::ListReportsRequest::default(), &op))
            .await
            .unwrap()
            .into_inner()
            .players
            .is_empty()
    );

    // The audit: each action as itself, then the resolution, by the operator's name.
    let store = app.store();
    let audit = store.audit_of(rude.user_id.parse().unwrap()).await.unwrap();
    let actions: Vec<(&str, &str)> = audit
        .iter()
        .map(|e| (e.action.as_str(), e.detail.as_str()))
        .collect();
    assert_eq!(
        actions,
        [
            ("reports", ""),
            ("rename", renamed.display_name.as_str()),
            ("resolve", "rename: 2 reports")
        ]
    );
    assert!(
        audit
            .iter()
            .all(|e| e.operator_id == operator && e.operator_name == "ops-nour")
    );
    let audit = store
        .audit_of(cheat.user_id.parse().unwrap())
        .await
        .unwrap();
    let actions: Vec<&str> = audit.iter().map(|e| e.action.as_str()).collect();
    assert_eq!(actions, ["ban", "resolve"]);
    assert_eq!(audit[1].detail, "ban: 1 reports");
    assert_eq!(audit[1].reason, "cheating");
    let resolved = store
        .reports_of(rude.user_id.parse().unwrap())
        .await
        .unwrap();
    assert!(resolved.iter().all(|r| {
        r.resolved
            .is_some_and(|(_, how)| how == accounts::reports::Resolution::Rename)
    }));
}
