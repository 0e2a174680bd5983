//! The terminal client keeps its access token fresh: against a `basra dev` whose tokens
//! live 2 s and are refused the moment they expire (`--token-leeway-seconds 0`), `basra
//! bot` plays two matches against the computer, each longer than a token's life. The
//! second room and its `Play` stream need a token the first sign-in never had.

use std::process::Command;

use crate::dev_process::DevProcess;

#[test]
fn the_cli_refreshes_its_token_through_matches_longer_than_its_lifetime() {
    let dev = DevProcess::start(
        &["--token-leeway-seconds", "0", "--bot-delay-ms", "40"],
        &[("BASRA_ACCOUNTS_TOKENS__ACCESS_TTL_SECONDS", "2")],
    );
    let started = std::time::Instant::now();
    let bot = Command::new(env!("CARGO_BIN_EXE_basra"))
        .args(["bot", "--server", &format!("http://{}", dev.addr)])
        .args(["--delay-ms", "0", "--matches", "2"])
        .args([
            "--device-id",
            &format!("refresh-test-{}", std::process::id()),
        ])
        .arg("computer")
        .env_remove("BASRA_SERVER")
        .output()
        .expect("basra bot runs");
    let elapsed = started.elapsed();
    let printed = String::from_utf8_lossy(&bot.stdout);
    assert!(
        bot.status.success(),
        "{printed}\n{}",
        String::from_utf8_lossy(&bot.stderr)
    );
    assert!(printed.contains("match 2 in room"), "{printed}");
    assert!(
        elapsed > std::time::Duration::from_secs(4),
        "the matches took {elapsed:?}: not longer than two token lifetimes, nothing proved"
    );
}
