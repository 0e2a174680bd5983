//! The web client in a real browser: `basra dev` (in-memory stores) serves the built page
//! (`make web`), and `clients/web/tests/browser.ts` drives Debian's headless Chromium
//! through playwright-core against it — a match against the computer by clicking, with a
//! reload mid-match, checking what a player sees (every card counted after each deal, the
//! target, captures as the server made them, the seed against its commitment, named
//! scores); names within the server's limit; access tokens of 8 s that the page must
//! refresh throughout; three players who become friends, an invite
//! from the live feed, a spectator who sees no hidden card, a rematch; reloads after
//! answered requests, mid-match and on the result screen (nothing answered or ended is
//! offered again, the result comes back, a closed room leads to the lobby); a ranked match
//! that moves both ratings into the history and the leaderboard; quick match (FindMatch
//! over gRPC-Web), one resigning; the Arabic page right to left; "Export my data" (a
//! download) and "Delete my account" (a dialog waiting for the typed word) in the
//! profile tab; no console errors.
//! Screenshots are kept in `$CARGO_TARGET_TMPDIR/web-client` (the path is printed).
//!
//! Needs what every browser suite needs (`web.rs`: Node.js, Debian's `chromium`, the built
//! page, `npm ci` in `clients/web`); fails, never skips, without them. The script is
//! TypeScript: `clients/web/tests/run.mjs` compiles it with esbuild and runs it in node.
use std::time::Duration;

use crate::web::WebDev;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_browser_plays_through_the_web_client() {
    // Tokens of 8 s, refused the moment they expire: the page must keep its own fresh
    // (ahead of expiry, and once on UNAUTHENTICATED) through every scenario. A rematch
    // window of 10 s: a room closes while its result is on a page.
    let dev = WebDev::start(
        &[
            ("BASRA_ACCOUNTS_TOKENS__ACCESS_TTL_SECONDS", "8"),
            ("BASRA_GAME_SESSION_GAME__REMATCH_SECONDS", "10"),
        ],
        Some(Duration::ZERO),
    )
    .await;
    let report = dev.run("browser.ts", "web-client", &[]).await;
    assert!(
        report["computer"]["plays"].as_u64().unwrap() >= 24,
        "{report}"
    );
    assert!(
        report["computer"]["rounds"].as_u64().unwrap() >= 2,
        "{report}"
    );
    assert!(report["friends"]["rematch"].is_string(), "{report}");
    assert_eq!(
        report["ranked"]["ratings"].as_array().map(Vec::len),
        Some(2)
    );
    assert_eq!(report["arabic"]["dir"], "rtl");
    assert!(report["quickMatch"]["resigned"].is_string(), "{report}");
    // "Export my data" and "Delete my account" in the profile tab: the export was the
    // player's, the deletion went through, the next sign-in was a new player.
    assert_eq!(report["myData"]["deleted"], true, "{report}");
    assert_ne!(
        report["myData"]["exported"], report["myData"]["newPlayer"],
        "{report}"
    );
    dev.stop().await;
}
