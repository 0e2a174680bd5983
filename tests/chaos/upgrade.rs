//! (u) The rolling upgrade, rehearsed: the previous release's game-session and this
//! code's serve the same rooms at once (one seat of every room on each) while matches are
//! played, as during a Kubernetes rollout; then the old replica is stopped as a pod is
//! (SIGTERM: it drains) and this code starts on its port, and the other replica is
//! restarted the same way, so every player moves twice. Every match must end with no event
//! lost or duplicated and be recorded exactly once. During the mixed phase this code
//! writes room states as JSON (`room_state_format`), the form a release before the binary
//! form reads: the upgrade procedure of deploy/README.md, "Upgrade and roll back".
//!
//! Run by `make chaos-upgrade`, which builds the previous release's binaries first
//! (tests/chaos/previous-release.sh); not part of `make chaos`.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use sqlx::PgPool;

use crate::report::Row;
use crate::scenarios::{Size, check_records, finish, rooms_of, script, setup_and_start_on, tally};
use crate::stack::Stack;

/// How long a stopped replica gets to drain before SIGKILL (its `drain_seconds` is 1).
const DRAIN: Duration = Duration::from_secs(10);

/// Settings of this code while an older release runs beside it.
fn mixed(config: String) -> String {
    config.replace("[game]\n", "[game]\nroom_state_format = \"json\"\n")
}

pub async fn rolling_upgrade(
    stack: &mut Stack,
    db: &PgPool,
    size: &Size,
    old_bin_dir: &Path,
) -> anyhow::Result<Row> {
    let mut row = Row::new(
        "u. rolling upgrade: previous release beside this one, both replaced in turn",
        size.matches,
    );
    let release =
        std::fs::read_to_string(old_bin_dir.join("RELEASE")).unwrap_or_else(|_| "unknown".into());
    row.notes
        .push(format!("previous release {}", release.trim()));

    // The stack's own replicas make way for the mixed pair.
    let redis_url = format!("redis://{}", stack.redis_proxy.addr);
    for game in &mut stack.games {
        game.kill();
    }
    let own = std::mem::take(&mut stack.games);
    let mut old = stack
        .game_replica_from(old_bin_dir, "game-old", &redis_url, 0)
        .context("the previous release's replica")?;
    old.start()
        .await
        .context("the previous release's game-session starts on this code's settings")?;
    let bin_dir = stack.bin_dir().to_owned();
    let mut new = stack.game_replica_from(&bin_dir, "game-new", &redis_url, 1)?;
    new.edit_config(mixed)?;
    new.start().await?;
    stack.games = vec![old, new];

    let result = async {
        let (rooms, set) = setup_and_start_on(
            stack,
            "u",
            size.matches,
            size.target_score,
            &script(stack, 25),
            |_| None,
            true,
        )
        .await?;
        tokio::time::sleep(Duration::from_secs(2)).await;

        // The old replica's pod is replaced: drained, then this code on its port.
        let upgraded = Instant::now();
        stack.games[0].terminate(DRAIN).await;
        stack.games[0].set_binary(&bin_dir, "game-session");
        stack.games[0].edit_config(mixed)?;
        stack.games[0].start().await?;
        tokio::time::sleep(Duration::from_secs(2)).await;
        // Then the other, so its players move onto the upgraded one.
        stack.games[1].terminate(DRAIN).await;
        stack.games[1].start().await?;

        let logs = finish(set).await?;
        tally(&mut row, &logs);
        row.recover = logs.iter().map(|l| l.longest_outage).max();
        row.notes.push(format!(
            "both replicas replaced; all matches done {:.1} s after the first stop",
            upgraded.elapsed().as_secs_f64()
        ));
        check_records(
            db,
            &mut row,
            &rooms_of(&rooms),
            &logs,
            Duration::from_secs(30),
        )
        .await?;
        anyhow::Ok(())
    }
    .await;

    // The stack's own replicas again, for whatever runs next.
    for game in &mut stack.games {
        game.kill();
    }
    stack.games = own;
    result?;
    Ok(row)
}
