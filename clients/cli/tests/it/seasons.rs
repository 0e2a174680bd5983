//! Seasons from the terminal, through the real binary against `basra dev` on PostgreSQL:
//! two players play a ranked match in the first season; `basra dev` comes back on the same
//! database with the second season begun (as after a season's end); `basra seasons` lists
//! both, `basra leaderboard --season s1` shows the first season's board as it was kept,
//! `basra leaderboard` the live one of the second (nobody ranked in it yet), and `basra
//! profile --username` each player's tier and best season finish; an unknown season is
//! refused in words.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use basra::lobby;
use basra::player::{Driver, play_room};
use basra::session::{Endpoints, Session};
use basra_engine::bot::Policy;
use basra_proto::basra::accounts::v1::{MatchHistoryRequest, RegisterRequest};
use chrono::{DateTime, Utc};
use sqlx::PgPool;

use crate::analytics_export::database_url;
use crate::dev_process::DevProcess;

const PASSWORD: &str = "correct horse battery staple";

const GREEDY: Driver = Driver::Bot {
    policy: Policy::Greedy,
    delay: Duration::ZERO,
};

/// accounts' seasons for `basra dev`, written in `dir`: s1 began a day ago, s2 begins at
/// `s2`, s3 and s4 far ahead; the default tiers stay.
fn seasons_file(dir: &Path, s2: DateTime<Utc>) -> PathBuf {
    let day_ago = Utc::now() - chrono::Duration::days(1);
    let season = |id: &str, name: &str, start: DateTime<Utc>| {
        format!(
            "[[seasons.list]]\nid = \"{id}\"\nname = \"{name}\"\nstart = \"{}\"\n\n",
            start.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
        )
    };
    let far = |year: i32| {
        DateTime::from_naive_utc_and_offset(
            chrono::NaiveDate::from_ymd_opt(year, 1, 1)
                .unwrap()
                .and_hms_opt(0, 0, 0)
                .unwrap(),
            Utc,
        )
    };
    let text = [
        season("s1", "First season", day_ago),
        season("s2", "Second season", s2),
        season("s3", "Third season", far(2098)),
        season("s4", "Fourth season", far(2099)),
    ]
    .concat();
    let path = dir.join(format!("seasons-{}.toml", uuid::Uuid::now_v7()));
    std::fs::write(&path, text).unwrap();
    path
}

/// `basra dev` on the test's database with the seasons of `file`.
fn dev(pool: &PgPool, file: &Path) -> DevProcess {
    let url = database_url(pool);
    DevProcess::start(
        &["--database-url", &url, "--bot-delay-ms", "0"],
        &[("BASRA_ACCOUNTS_CONFIG_FILE", file.to_str().unwrap())],
    )
}

/// `basra ARGS --server` the dev process, signed in as `username` (a guest without one).
fn basra(dev: &DevProcess, username: Option<&str>, args: &[&str]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_basra"));
    command
        .args(args)
        .args(["--server", &format!("http://{}", dev.addr)])
        .env_remove("BASRA_SERVER")
        .env_remove("BASRA_USERNAME")
        .env("BASRA_PASSWORD", PASSWORD);
    match username {
        Some(name) => command.args(["--username", name]),
        None => command.args(["--device-id", &format!("seasons-{}", uuid::Uuid::now_v7())]),
    };
    command.output().expect("basra runs")
}

fn ok(output: &Output) -> String {
    let out = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "{out}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    out
}

async fn register(server: &str, username: &str) -> Session {
    let username = username.to_owned();
    Session::sign_in(&Endpoints::single(server), |mut accounts| async move {
        let response = accounts
            .register(RegisterRequest {
                username: username.clone(),
                password: PASSWORD.into(),
                display_name: username,
            })
            .await?;
        Ok(response.into_inner().tokens)
    })
    .await
    .expect("registered")
}

/// Waits until accounts has recorded the player's match.
async fn recorded(session: &Session) {
    for _ in 0..200 {
        let history = session
            .accounts()
            .match_history(MatchHistoryRequest::default())
            .await
            .expect("history")
            .into_inner();
        if !history.matches.is_empty() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the match never reached accounts");
}

#[sqlx::test(migrator = "accounts::store::MIGRATOR")]
async fn a_finished_seasons_board_and_each_players_best_finish_from_the_terminal(pool: PgPool) {
    let dir = std::env::temp_dir();
    let tag = &uuid::Uuid::now_v7().simple().to_string()[24..];
    let (alice, bob) = (format!("alice_{tag}"), format!("bob_{tag}"));

    // The first season: a ranked match between two accounts.
    let first = dev(
        &pool,
        &seasons_file(&dir, "2097-01-01T00:00:00Z".parse().unwrap()),
    );
    let server = format!("http://{}", first.addr);
    let (a, b) = (
        register(&server, &alice).await,
        register(&server, &bob).await,
    );
    let (seat_a, seat_b) = tokio::join!(
        lobby::quick_match(&a, true, false, 2),
        lobby::quick_match(&b, true, false, 2)
    );
    let (seat_a, seat_b) = (seat_a.unwrap(), seat_b.unwrap());
    assert_eq!(seat_a.room_id, seat_b.room_id, "matched together");
    let (end_a, end_b) = tokio::join!(
        play_room(&a, &seat_a.room_id, GREEDY),
        play_room(&b, &seat_b.room_id, GREEDY)
    );
    let ended = end_a.unwrap().ended.expect("the match ended");
    end_b.unwrap();
    recorded(&a).await;
    recorded(&b).await;
    let winner_side = ended.winner_side.expect("a winner");
    let (first_name, second_name) = if seat_a.seat % 2 == winner_side {
        (&alice, &bob)
    } else {
        (&bob, &alice)
    };
    let live = ok(&basra(&first, Some(&alice), &["leaderboard"]));
    assert!(
        live.starts_with("leaderboard of First season (s1), the current season:"),
        "{live}"
    );
    drop((a, b));
    drop(first);

    // The second season has begun: the first one's board is kept.
    let second = dev(&pool, &seasons_file(&dir, Utc::now()));
    let seasons = ok(&basra(&second, None, &["seasons"]));
    let lines: Vec<&str> = seasons.lines().collect();
    assert!(
        lines[0].starts_with("s2  Second season  ") && lines[0].ends_with("(current)"),
        "{seasons}"
    );
    assert!(
        lines[1].starts_with("s1  First season  ")
            && lines[1].ends_with("(finished: its final leaderboard is kept)"),
        "{seasons}"
    );
    assert!(
        lines[2].starts_with("next: s3  Third season from 2098-01-01"),
        "{seasons}"
    );

    let kept = ok(&basra(
        &second,
        Some(&alice),
        &["leaderboard", "--season", "s1"],
    ));
    assert!(
        kept.starts_with("final leaderboard of First season (s1) (finished "),
        "{kept}"
    );
    let row = |rank: u32, name: &str| {
        kept.lines()
            .find(|l| l.starts_with(&format!("{rank:>4}. \u{2068}{name}\u{2069}")))
            .unwrap_or_else(|| panic!("#{rank} {name}: {kept}"))
            .to_owned()
    };
    assert_eq!(row(1, first_name).ends_with("← you"), *first_name == alice);
    assert_eq!(
        row(2, second_name).ends_with("← you"),
        *second_name == alice
    );

    let live = ok(&basra(&second, Some(&alice), &["leaderboard"]));
    assert_eq!(
        live,
        "leaderboard of Second season (s2), the current season:\n  nobody is ranked in this season\n"
    );

    for (rank, name) in [(1, first_name), (2, second_name)] {
        let profile = ok(&basra(&second, Some(name), &["profile"]));
        assert!(profile.contains(&format!("(@{name})")), "{profile}");
        let rating_line = profile.lines().nth(1).unwrap();
        assert!(
            ["Bronze", "Silver", "Gold", "Platinum", "Diamond"]
                .iter()
                .any(|tier| rating_line.ends_with(&format!(", {tier} (season s2)"))),
            "a tier and the season: {profile}"
        );
        assert!(
            profile.contains(&format!(
                "best season finish: #{rank} in First season (s1) ("
            )),
            "{profile}"
        );
    }

    // A guest: not listed, no finish; an unknown season refused in words.
    let guest = ok(&basra(&second, None, &["profile"]));
    assert!(guest.contains("best season finish: none yet"), "{guest}");
    let unknown = basra(&second, None, &["leaderboard", "--season", "nope"]);
    assert!(!unknown.status.success());
    let said = String::from_utf8_lossy(&unknown.stderr);
    assert!(said.contains("no season \"nope\" has started"), "{said}");
}
