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
//! Needs Node.js, Debian's `chromium`, the built page and `npm ci` in `clients/web`
//! (`make test` does both); the test fails, never skips, without them. The script is
//! TypeScript: `clients/web/tests/run.mjs` compiles it with esbuild and runs it in node.
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use basra::web_page::{WebOptions, is_built};
use tokio_util::sync::CancellationToken;

fn web_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../clients/web")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_browser_plays_through_the_web_client() {
    let web = web_dir();
    assert!(
        is_built(&web.join("dist")),
        "the page is not built: run `make web` (npm ci and npm run build in clients/web)"
    );
    assert!(
        web.join("node_modules/playwright-core").exists(),
        "playwright-core is missing: run `npm ci --prefix clients/web`"
    );
    let shutdown = CancellationToken::new();
    let (tx, rx) = tokio::sync::oneshot::channel();
    let options = basra::dev::DevOptions {
        listen: "127.0.0.1:0".parse().unwrap(),
        database_url: None,
        redis_url: None,
        bot_delay: Some(Duration::from_millis(30)),
        // Tokens of 8 s, refused the moment they expire: the page must keep its own
        // fresh (ahead of expiry, and once on UNAUTHENTICATED) through every scenario.
        // A rematch window of 10 s: a room closes while its result is on a page.
        settings: basra::dev_settings::DevSettings::from_env([
            (
                "BASRA_ACCOUNTS_TOKENS__ACCESS_TTL_SECONDS".to_owned(),
                "8".to_owned(),
            ),
            (
                "BASRA_GAME_SESSION_GAME__REMATCH_SECONDS".to_owned(),
                "10".to_owned(),
            ),
        ])
        .unwrap(),
        web: Some(WebOptions {
            listen: "127.0.0.1:0".parse().unwrap(),
            dir: web.join("dist"),
        }),

        tls: None,
        token_leeway: Some(Duration::ZERO),
    };
    let dev = tokio::spawn({
        let shutdown = shutdown.clone();
        async move {
            basra::dev::run(options, shutdown, move |started| {
                let _ = tx.send(started.web_addr);
            })
            .await
        }
    });
    let page = rx.await.unwrap().expect("the page is served");
    let artifacts = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("web-client");
    println!("screenshots: {}", artifacts.display());
    let runner = web.join("tests/run.mjs");
    let script = web.join("tests/browser.ts");
    let url = format!("http://{page}/");
    let output = tokio::task::spawn_blocking(move || {
        Command::new("node")
            .arg(runner)
            .arg(script)
            .arg(url)
            .arg(&artifacts)
            .output()
            .expect("node runs (Debian's nodejs)")
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let line = stdout.lines().last().unwrap_or_default();
    let report: serde_json::Value = serde_json::from_str(line)
        .unwrap_or_else(|err| panic!("one JSON line from the browser ({err}): {stdout}\n{stderr}"));
    assert!(
        output.status.success() && report["ok"] == true,
        "the browser run failed: {report:#}\n{stderr}"
    );
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
    shutdown.cancel();
    dev.await.unwrap().unwrap();
}
