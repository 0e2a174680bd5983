//! The report, end to end: matches recorded through the accounts store, exported to
//! Parquet, turned into `report.html`, then opened in a real headless Chromium (Debian's
//! `chromium`, driven by `playwright-core` from `tests/browser/`, both installed by
//! `.ci/run`): no console or page errors, no request leaves the page, and every plot has
//! a visible size and data marks. The screenshot is kept in the test output directory.

use std::path::{Path, PathBuf};
use std::process::Command;

use accounts::PgStore;
use basra_analytics::export::export;
use basra_analytics::report::report;
use sqlx::PgPool;

use crate::helpers::{
    export_options, players, record_returning_matches, sign_up_before_first_match,
};

fn browser_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/browser")
}

async fn report_of(pool: &PgPool, name: &str) -> (PathBuf, PathBuf) {
    let store = PgStore::new(pool.clone());
    let people = players(&store, 16).await;
    record_returning_matches(&store, &people, 150, 6, 7).await;
    sign_up_before_first_match(pool).await;
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("report-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    let export_dir = dir.join("export");
    let summary = export(pool, &export_options(export_dir.clone()))
        .await
        .unwrap();
    assert_eq!(summary.matches, 150);
    let html = dir.join("report.html");
    let done = report(&export_dir, &html).unwrap();
    assert_eq!(done.matches, 150);
    assert_eq!(done.plots, 12);
    (dir, html)
}

#[sqlx::test(migrator = "accounts::store::MIGRATOR")]
async fn the_report_is_one_self_contained_page_with_every_section(pool: PgPool) {
    let (_, html) = report_of(&pool, "sections").await;
    let page = std::fs::read_to_string(&html).unwrap();
    for id in [
        "activity",
        "length-rounds",
        "length-minutes",
        "first-seat",
        "basras",
        "majority",
        "ratings",
        "rating-gap",
        "bots",
        "automatic",
        "retention",
        "time-to-match",
    ] {
        assert!(
            page.contains(&format!("<section id=\"{id}\">")),
            "section {id}"
        );
    }
    assert_eq!(page.matches("<figure class=\"plot\"").count(), 12);
    assert_eq!(page.matches("<svg").count(), 12);
    assert_eq!(page.matches("<table>").count(), 12);
    // Self-contained: nothing is fetched, nothing runs.
    for outside in ["http://", "https://", "<script", "<link", "src="] {
        let hits: Vec<_> = page.match_indices(outside).collect();
        // The SVG namespace is the one URL allowed.
        assert!(
            hits.iter().all(|(at, _)| page[..*at].ends_with("xmlns=\"")),
            "{outside} in the page"
        );
    }
    assert!(page.contains("150 matches"));
}

#[sqlx::test(migrator = "accounts::store::MIGRATOR")]
async fn the_report_renders_in_a_headless_browser_with_data_in_every_plot(pool: PgPool) {
    let (dir, html) = report_of(&pool, "browser").await;
    let chromium = std::env::var("CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into());
    assert!(
        Path::new(&chromium).exists(),
        "{chromium} is missing: `apt-get install chromium` (.ci/run does it)"
    );
    assert!(
        browser_dir().join("node_modules/playwright-core").exists(),
        "playwright-core is missing: `npm ci --prefix libs/analytics/tests/browser` (.ci/run does it)"
    );
    let screenshot = dir.join("report.png");
    let output = Command::new("node")
        .arg(browser_dir().join("check_report.mjs"))
        .arg(&html)
        .arg(&screenshot)
        .arg(&chromium)
        .output()
        .expect("node runs (Debian's nodejs)");
    assert!(
        output.status.success(),
        "the browser check failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    let result: serde_json::Value = serde_json::from_str(stdout.lines().last().unwrap_or(""))
        .unwrap_or_else(|e| panic!("{e}: {stdout}"));
    assert_eq!(result["consoleErrors"], serde_json::json!([]), "{result}");
    assert_eq!(result["pageErrors"], serde_json::json!([]), "{result}");
    assert_eq!(result["failedRequests"], serde_json::json!([]), "{result}");
    let plots = result["plots"].as_array().unwrap();
    assert_eq!(plots.len(), 12, "{result}");
    for plot in plots {
        assert!(plot["width"].as_f64().unwrap() > 300.0, "{plot}");
        assert!(plot["height"].as_f64().unwrap() > 100.0, "{plot}");
        assert!(plot["marks"].as_u64().unwrap() > 0, "no data drawn: {plot}");
        assert!(plot["rows"].as_u64().unwrap() > 0, "an empty table: {plot}");
    }
    let png = std::fs::metadata(&screenshot).expect("a screenshot");
    assert!(png.len() > 10_000, "the screenshot is {} bytes", png.len());
    println!("screenshot: {}", screenshot.display());
}
