//! The inbox's unread count and the Report form in a real browser
//! (`clients/web/tests/browser_inbox.ts`, over `basra dev` with in-memory stores, which
//! serves the built page): a friend request reaches the other page's header as one unread
//! notice without a reload, is still counted after reloads (with the feed's seq kept and
//! forgotten), and "Mark as read" clears it for good; a player reports a friend from
//! their card with a reason and a comment typed while the friends list redraws, and a
//! moderator sees the report with `basra admin report`'s code (`ListReports`,
//! `GetReports` over `AccountsAdminService`).
//! Screenshots are kept in `$CARGO_TARGET_TMPDIR/web-inbox` (the path is printed).
//!
//! Needs what every browser suite needs (`web.rs`); fails, never skips, without them.
use basra::admin_player::PlayerAdmin;
use basra_proto::basra::accounts::v1::ReportReason;

use crate::web::WebDev;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_browser_counts_unread_notices_and_reports_a_friend() {
    let dev = WebDev::start(&[], None).await;
    let report = dev.run("browser_inbox.ts", "web-inbox", &[]).await;
    let unread = &report["unread"];
    for (when, n) in [
        ("live", 1),
        ("afterReload", 1),
        ("afterForget", 1),
        ("samiTold", 1),
        ("afterMark", 0),
        ("afterMarkReload", 0),
    ] {
        assert_eq!(unread[when], n, "{when}: {unread}");
    }

    // The moderator's view: Sami reported once, for cheating, with Rana's words.
    let admin = PlayerAdmin::connect(&dev.server(), &dev.operator_token("web-inbox-test"))
        .await
        .unwrap();
    let find = |name: &'static str| {
        let admin = &admin;
        async move {
            let found = admin.find(name, 5).await.unwrap();
            assert_eq!(found.len(), 1, "{name}: {found:?}");
            found[0].user_id.clone()
        }
    };
    let (sami, rana) = (find("Sami").await, find("Rana").await);
    let listed = admin.reports(0).await.unwrap();
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0].user_id, sami);
    assert_eq!(listed[0].reporters, 1);
    assert_eq!(listed[0].reasons, [ReportReason::Cheating as i32]);
    let context = admin.player_reports(&sami, "web-inbox").await.unwrap();
    assert_eq!(context.reports.len(), 1, "{context:?}");
    let filed = &context.reports[0];
    assert_eq!(filed.reporter_id, rana);
    assert_eq!(
        filed.comment,
        report["reported"]["comment"].as_str().unwrap()
    );
    assert!(
        filed.match_id.is_empty(),
        "from the friend's card, no match"
    );
    dev.stop().await;
}
