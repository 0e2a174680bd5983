//! Reports of players end to end, through `basra dev` (memory stores) and through the
//! services started as `deploy/` configures them (PostgreSQL, Redis): players who played a
//! match report an offensive name with its match; the refusals answer their documented
//! statuses; once three distinct players reported the name it is hidden from others —
//! in profiles and in the seat names game-session takes from accounts — but not from its
//! owner; a moderator lists, inspects and resolves the reports with `basra admin report`'s
//! code (`basra::admin_player::PlayerAdmin`), and the resolution is audited under the
//! operator's name.

use std::time::Duration;

use basra::admin_player::PlayerAdmin;
use basra::admin_report::Decision;
use basra::lobby;
use basra::player::{Driver, play_room};
use basra::session::{Endpoints, Session};
use basra_engine::bot::Policy;
use basra_proto::basra::accounts::v1::{
    GetProfileRequest, ListNoticesRequest, MatchHistoryRequest, RegisterRequest,
    ReportPlayerRequest, ReportReason, notice,
};
use basra_proto::basra::common::v1::{BotLevel, RoomVisibility, RuleSettings};
use basra_proto::basra::matchmaking::v1::join_room_request::Target;
use tonic::Code;

const GREEDY: Driver = Driver::Bot {
    policy: Policy::Greedy,
    delay: Duration::ZERO,
};

async fn register(endpoints: &Endpoints, username: &str) -> Session {
    let username = username.to_owned();
    Session::sign_in(endpoints, |mut accounts| async move {
        let response = accounts
            .register(RegisterRequest {
                username: username.clone(),
                password: "correct horse battery staple".into(),
                display_name: username,
            })
            .await?;
        Ok(response.into_inner().tokens)
    })
    .await
    .expect("registered")
}

/// `host` and `guest` play a short private match to its end: the names each saw by seat.
async fn play_a_match(host: &Session, guest: &Session) -> (Vec<String>, String) {
    let created = lobby::create_room(
        host,
        RoomVisibility::Private,
        Vec::new(),
        BotLevel::Unspecified,
        RuleSettings {
            target_score: Some(30),
            ..RuleSettings::default()
        },
    )
    .await
    .unwrap();
    lobby::join(guest, Target::JoinCode(created.join_code.clone().unwrap()))
        .await
        .unwrap();
    let (a, b) = tokio::join!(
        play_room(host, &created.room_id, GREEDY),
        play_room(guest, &created.room_id, GREEDY)
    );
    let a = a.unwrap();
    b.unwrap();
    let match_id = a.ended.expect("the match ended").match_id;
    (a.names, match_id)
}

/// Waits until `match_id` is in the player's recorded history.
async fn recorded(session: &Session, match_id: &str) {
    for _ in 0..200 {
        let matches = session
            .accounts()
            .match_history(MatchHistoryRequest {
                page_size: 10,
                page_token: String::new(),
            })
            .await
            .unwrap()
            .into_inner()
            .matches;
        if matches.iter().any(|m| m.match_id == match_id) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{match_id} never reached accounts");
}

fn report(target: &Session, reason: ReportReason, match_id: &str) -> ReportPlayerRequest {
    ReportPlayerRequest {
        user_id: target.user_id.clone(),
        reason: reason as i32,
        match_id: match_id.to_owned(),
        comment: String::new(),
    }
}

async fn name_seen(viewer: &Session, target: &Session) -> String {
    viewer
        .accounts()
        .get_profile(GetProfileRequest {
            user_id: target.user_id.clone(),
        })
        .await
        .unwrap()
        .into_inner()
        .profile
        .unwrap()
        .display_name
}

async fn reports_reach_moderators(endpoints: &Endpoints, operator: &str) {
    let tag = &uuid::Uuid::now_v7().simple().to_string()[20..];
    let rude = register(endpoints, &format!("rude_{tag}")).await;
    let ana = register(endpoints, &format!("ana_{tag}")).await;
    let ben = register(endpoints, &format!("ben_{tag}")).await;
    let cat = register(endpoints, &format!("cat_{tag}")).await;
    let rude_name = rude.display_name.clone();

    let (names, match_id) = play_a_match(&ana, &rude).await;
    assert!(names.contains(&rude_name), "{names:?}");
    recorded(&ana, &match_id).await;

    // The refusals, each with its status.
    let refused = |who: &Session, req: ReportPlayerRequest| {
        let who = who.clone();
        async move {
            who.accounts()
                .report_player(req)
                .await
                .expect_err("refused")
                .code()
        }
    };
    assert_eq!(
        refused(&ana, report(&ana, ReportReason::Other, "")).await,
        Code::InvalidArgument,
        "oneself"
    );
    let mut unknown = report(&ana, ReportReason::Other, "");
    unknown.user_id = uuid::Uuid::now_v7().to_string();
    assert_eq!(refused(&ana, unknown).await, Code::NotFound);
    let mut long = report(&rude, ReportReason::ChatAbuse, "");
    long.comment = "x".repeat(501);
    assert_eq!(refused(&ana, long).await, Code::InvalidArgument);
    assert_eq!(
        refused(&ben, report(&rude, ReportReason::Cheating, &match_id)).await,
        Code::FailedPrecondition,
        "ben was not in the match"
    );

    // Three distinct players report the name (ana with the match): hidden from others,
    // not from its owner.
    let mut with_match = report(&rude, ReportReason::OffensiveName, &match_id);
    with_match.comment = "the name at the table".into();
    let ana_report = ana
        .accounts()
        .report_player(with_match)
        .await
        .unwrap()
        .into_inner()
        .report_id;
    ben.accounts()
        .report_player(report(&rude, ReportReason::OffensiveName, ""))
        .await
        .unwrap();
    assert_eq!(
        name_seen(&cat, &rude).await,
        rude_name,
        "two are not enough"
    );
    cat.accounts()
        .report_player(report(&rude, ReportReason::OffensiveName, ""))
        .await
        .unwrap();
    let placeholder = name_seen(&cat, &rude).await;
    assert_ne!(placeholder, rude_name);
    assert!(placeholder.starts_with("Player "), "{placeholder}");
    assert_eq!(
        name_seen(&rude, &rude).await,
        rude_name,
        "the owner sees it"
    );
    // A seat name comes from accounts too: ben sees the placeholder at the table.
    let (names, _) = play_a_match(&ben, &rude).await;
    assert!(names.contains(&placeholder), "{names:?}");
    assert!(!names.contains(&rude_name), "{names:?}");

    // The per-reporter limit (10 an hour by default): cat has one, nine more pass, the
    // next is RESOURCE_EXHAUSTED.
    for _ in 0..9 {
        cat.accounts()
            .report_player(report(&ana, ReportReason::Other, ""))
            .await
            .unwrap();
    }
    assert_eq!(
        refused(&cat, report(&ana, ReportReason::Other, "")).await,
        Code::ResourceExhausted
    );

    // The moderator, with `basra admin report`'s code.
    let admin = PlayerAdmin::connect(&endpoints.accounts, operator)
        .await
        .unwrap();
    let listed = admin.reports(0).await.unwrap();
    let entry = listed
        .iter()
        .find(|p| p.user_id == rude.user_id)
        .expect("rude is listed");
    assert_eq!(entry.reporters, 3);
    assert!(entry.name_hidden);
    assert_eq!(entry.display_name, rude_name);
    let context = admin.player_reports(&rude.user_id, "e2e").await.unwrap();
    assert_eq!(context.reports.len(), 3);
    assert!(context.reports.iter().all(|r| r.display_name == rude_name));
    assert_eq!(context.matches.len(), 1);
    assert_eq!(context.matches[0].match_id, match_id);

    let resolved = admin
        .resolve(
            &rude.user_id,
            Decision::Rename,
            "offensive name",
            None,
            None,
        )
        .await
        .unwrap();
    assert_eq!(resolved.resolved, 3);
    assert_eq!(resolved.reporters_notified, 3);
    // The reporter's notice: their report was handled (never what was done).
    let notices = ana
        .accounts()
        .list_notices(ListNoticesRequest::default())
        .await
        .unwrap()
        .into_inner()
        .notices;
    let handled: Vec<(String, String)> = notices
        .into_iter()
        .filter_map(|n| match n.body {
            Some(notice::Body::ReportHandled(h)) => Some((h.report_id, h.target_user_id)),
            _ => None,
        })
        .collect();
    assert_eq!(handled, [(ana_report, rude.user_id.clone())]);
    assert!(resolved.display_name.starts_with("Basra "), "{resolved:?}");
    assert_eq!(name_seen(&cat, &rude).await, resolved.display_name);
    assert!(
        admin
            .reports(0)
            .await
            .unwrap()
            .iter()
            .all(|p| p.user_id != rude.user_id)
    );
    let audit = admin.player_reports(&rude.user_id, "").await.unwrap().audit;
    let actions: Vec<(&str, &str)> = audit
        .iter()
        .map(|a| (a.action.as_str(), a.operator_name.as_str()))
        .collect();
    assert_eq!(
        actions,
        [
            ("reports", "ops-test"),
            ("rename", "ops-test"),
            ("resolve", "ops-test"),
            ("reports", "ops-test")
        ]
    );
    assert_eq!(audit[2].detail, "rename: 3 reports");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reports_reach_moderators_through_basra_dev() {
    let (_key, env, operator) = crate::revocation::dev_operator();
    let backend = basra_e2e::spawn_dev_with(None, env)
        .await
        .expect("basra dev");
    reports_reach_moderators(&backend.endpoints, &operator).await;
    backend.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reports_reach_moderators_through_the_services_as_deployed() {
    let deployed = crate::deployed::spawn_deployed().await;
    reports_reach_moderators(&deployed.endpoints, &deployed.operator).await;
    deployed.stop().await;
}
