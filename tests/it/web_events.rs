//! A small knockout played to its final between browsers (issue 47): `basra dev` (in-memory
//! stores) serves the built page (`make web`); an operator creates a three-player knockout
//! through `EventAdminService` (check-in open from now, the start 45 s ahead, matches to
//! 1); `clients/web/tests/browser_events.ts` drives three Chromium pages (one in Arabic)
//! through playwright-core: each finds the event in the Tournaments tab, registers and
//! checks in; at the start the two unseeded players get "your match is ready" and join
//! with one tap, the winner meets the seed in the final; every page ends on the final
//! standings with the champion and both rounds of the bracket. The event's standings,
//! asked of the server afterwards, name the same champion.
//! Screenshots are kept in `$CARGO_TARGET_TMPDIR/web-events` (the path is printed).
//!
//! Needs what `web_client` needs (Node.js, Debian's `chromium`, the built page, `npm ci`
//! in `clients/web`); fails, never skips, without them.
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use basra::admin_tournament::EventAdmin;
use basra::web_page::{WebOptions, is_built};
use basra_proto::basra::common::v1::RuleSettings;
use basra_proto::basra::matchmaking::v1 as pb;
use tokio_util::sync::CancellationToken;

fn web_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../clients/web")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn browsers_play_a_knockout_to_its_final() {
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
        settings: basra::dev_settings::DevSettings::from_env(std::iter::empty()).unwrap(),
        web: Some(WebOptions {
            listen: "127.0.0.1:0".parse().unwrap(),
            dir: web.join("dist"),
        }),
        tls: None,
        token_leeway: None,
    };
    let dev = tokio::spawn({
        let shutdown = shutdown.clone();
        async move {
            basra::dev::run(options, shutdown, move |started| {
                let _ = tx.send(started);
            })
            .await
        }
    });
    let started = rx.await.unwrap();
    let page = started.web_addr.expect("the page is served");
    let pem = std::fs::read_to_string(&started.key_file).unwrap();
    let token = basra::admin::operator_token(
        &pem,
        &started.kid,
        "basra-accounts",
        "basra",
        "web-events-test",
        Duration::from_secs(900),
    )
    .unwrap();
    let server = format!("http://{}", started.addr);
    let admin = EventAdmin::connect(&server, &token).await.unwrap();
    let name = "Browser cup";
    let start = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + 45;
    let event = admin
        .create(
            pb::EventDefinition {
                name: name.into(),
                format: pb::EventFormat::Knockout as i32,
                start_at: Some(basra_proto::convert::timestamp(start as i64 * 1000)),
                registration_opens_seconds_before: 3600,
                cap: 3,
                check_in_seconds: 600,
                join_deadline_seconds: 120,
                settings: Some(RuleSettings {
                    seats: Some(2),
                    target_score: Some(1),
                    ..RuleSettings::default()
                }),
                allow_spectators: true,
                ..Default::default()
            },
            "",
        )
        .await
        .unwrap();

    let artifacts = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("web-events");
    println!("screenshots: {}", artifacts.display());
    let runner = web.join("tests/run.mjs");
    let script = web.join("tests/browser_events.ts");
    let url = format!("http://{page}/");
    let event_id = event.event_id.clone();
    let output = tokio::task::spawn_blocking(move || {
        Command::new("node")
            .arg(runner)
            .arg(script)
            .arg(url)
            .arg(&artifacts)
            .arg(event_id)
            .arg(name)
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
    let joined: Vec<u64> = report["joined"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_u64().unwrap())
        .collect();
    assert_eq!(joined.iter().sum::<u64>(), 4, "{report}");
    let champion = report["champion"].as_str().expect("a champion").to_owned();

    // The server says the same: finished, the champion the pages named.
    let events = admin.list().await.unwrap();
    let finished = events
        .iter()
        .find(|e| e.event_id == event.event_id)
        .expect("the event is listed");
    assert_eq!(finished.status(), pb::EventStatus::Finished, "{finished:?}");
    assert_eq!(finished.rounds_total, 2, "{finished:?}");
    assert!(!finished.champion.is_empty());
    println!("champion {champion}, history: {}", report["history"]);
    shutdown.cancel();
    dev.await.unwrap().unwrap();
}
