//! The Ranked tab's season picker in a real browser (`clients/web/tests/browser_seasons.ts`,
//! over `basra dev` with in-memory stores, which serves the built page): accounts' seasons
//! set in a settings file (`BASRA_ACCOUNTS_CONFIG_FILE`) — "Winter" (2020) has ended,
//! "Spring" (from 2021) runs, "Summer" (2099) is ahead — and nobody ranked. In English and in
//! Arabic the picker offers Spring (current) then Winter (finished); each board is headed
//! with its season, and an empty one says so beside the list (no numbered row "1.").
//! Screenshots are kept in `$CARGO_TARGET_TMPDIR/web-seasons` (the path is printed).
//!
//! Needs what every browser suite needs (`web.rs`); fails, never skips, without them.

use crate::web::WebDev;

/// The seasons file: Winter from 2020 to 2021, Spring from 2021 on, Summer from 2099.
fn seasons_file() -> std::path::PathBuf {
    let text = [
        ("s1", "Winter", "2020-01-01T00:00:00Z"),
        ("s2", "Spring", "2021-01-01T00:00:00Z"),
        ("s3", "Summer", "2099-01-01T00:00:00Z"),
    ]
    .map(|(id, name, start)| {
        format!("[[seasons.list]]\nid = \"{id}\"\nname = \"{name}\"\nstart = \"{start}\"\n\n")
    })
    .concat();
    let path = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("seasons-{}.toml", uuid::Uuid::now_v7()));
    std::fs::write(&path, text).unwrap();
    path
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_browser_picks_a_finished_season_in_english_and_arabic() {
    let file = seasons_file();
    let dev = WebDev::start(
        &[("BASRA_ACCOUNTS_CONFIG_FILE", file.to_str().unwrap())],
        None,
    )
    .await;
    let report = dev.run("browser_seasons.ts", "web-seasons", &[]).await;
    for lang in ["en", "ar"] {
        let seen = &report[lang];
        assert_eq!(seen["options"].as_array().map(Vec::len), Some(2), "{seen}");
        assert_eq!(seen["current"]["rows"], 0, "{seen}");
        assert_eq!(seen["finished"]["noteShown"], true, "{seen}");
    }
    println!("{report}");
    dev.stop().await;
    let _ = std::fs::remove_file(file);
}
