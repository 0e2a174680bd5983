//! (u) The rolling upgrade, rehearsed in the order of deploy/README.md, "Upgrade and roll
//! back":
//!
//! 1. **The schema first, the old accounts on it.** This code's accounts migrated the
//!    database when the stack started (the `accounts-migrate` Job). The previous release's
//!    accounts replaces it, with `database.migrate = false` as the pods run: the migration
//!    policy says the expanded schema is one the previous release runs on unchanged. It
//!    must answer the same profiles, friends and histories as this code did.
//! 2. **Mixed game-session replicas.** The previous release's game-session and this
//!    code's serve the same rooms at once (one seat of every room on each) while matches
//!    are played and the old accounts records them; then the old replica is stopped as a
//!    pod is (SIGTERM: it drains) and this code starts on its port, and the other replica
//!    is restarted the same way, so every player moves twice. Every match must end with no
//!    event lost or duplicated and be recorded exactly once. During the mixed phase this
//!    code writes the whole room every commit (`room_state_format = "binary_2"`), the form
//!    a release before the plain plays' tail reads.
//! 3. **accounts upgraded.** This code's accounts replaces the old one and answers the
//!    same profiles, friends and histories (the matches the old one recorded) as it did.
//!
//! Run by `make chaos-short` and `make chaos-upgrade`, which build the previous release's
//! binaries first (tests/chaos/previous-release.sh, cached).

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use sqlx::PgPool;

use basra_proto::basra::accounts::v1::accounts_service_client::AccountsServiceClient;
use basra_proto::basra::accounts::v1::{
    AcceptFriendRequest, AddFriendRequest, GetProfileRequest, ListFriendsRequest,
    MatchHistoryRequest, add_friend_request,
};

use crate::bots::{self, Player};
use crate::report::Row;
use crate::scenarios::{Size, check_records, finish, rooms_of, script, setup_and_start_on, tally};
use crate::stack::{Service, Stack};

/// How long a stopped replica gets to drain before SIGKILL (its `drain_seconds` is 1).
const DRAIN: Duration = Duration::from_secs(10);

/// Settings of this code while an older release runs beside it.
fn mixed(config: String) -> String {
    config.replace("[game]\n", "[game]\nroom_state_format = \"binary_2\"\n")
}

/// accounts' settings as the pods run them: the migration Job migrates, not the pods.
fn no_migration(config: String) -> String {
    config.replace("migrate = true", "migrate = false")
}

/// Replaces the running accounts by the `accounts` binary of `bin_dir`, as a rollout
/// replaces a pod (SIGTERM, drain, the new one on the same port and settings).
async fn replace_accounts(accounts: &mut Service, bin_dir: &Path) -> anyhow::Result<()> {
    accounts.terminate(DRAIN).await;
    accounts.set_binary(bin_dir, "accounts");
    accounts.edit_config(no_migration)?;
    accounts.start().await
}

/// Two guests who become friends (a request and its acceptance).
async fn friends(accounts_url: &str) -> anyhow::Result<Vec<Player>> {
    let pair = bots::guests(accounts_url, "u-friends", 2).await?;
    let mut client = AccountsServiceClient::new(bots::channel(accounts_url)?);
    let request = AddFriendRequest {
        target: Some(add_friend_request::Target::UserId(pair[1].user_id.clone())),
    };
    client
        .add_friend(bots::authed(request, &pair[0].bearer))
        .await
        .context("AddFriend")?;
    let accept = AcceptFriendRequest {
        user_id: pair[0].user_id.clone(),
    };
    client
        .accept_friend(bots::authed(accept, &pair[1].bearer))
        .await
        .context("AcceptFriend")?;
    Ok(pair)
}

/// What accounts at `url` answers each player about themselves: profile, friends and
/// match history, as text to compare between two servers.
async fn answers(url: &str, players: &[Player]) -> anyhow::Result<String> {
    let mut client = AccountsServiceClient::new(bots::channel(url)?);
    let mut text = String::new();
    for player in players {
        let mut profile = client
            .get_profile(bots::authed(GetProfileRequest::default(), &player.bearer))
            .await
            .context("GetProfile")?
            .into_inner();
        // Fields this release added (seasons: the tier, the best finish, the season): the
        // previous release does not send them; every field both send must be equal.
        if let Some(profile) = profile.profile.as_mut() {
            profile.tier.clear();
            profile.best_season_finish = None;
            profile.season_id.clear();
        }
        let friends = client
            .list_friends(bots::authed(ListFriendsRequest::default(), &player.bearer))
            .await
            .context("ListFriends")?
            .into_inner();
        let history = MatchHistoryRequest {
            page_size: 50,
            page_token: String::new(),
        };
        let history = client
            .match_history(bots::authed(history, &player.bearer))
            .await
            .context("MatchHistory")?
            .into_inner();
        text.push_str(&format!("{profile:?}\n{friends:?}\n{history:?}\n"));
    }
    Ok(text)
}

/// Checks that `now` (what the replacing server answers) equals `before`.
fn same_answers(row: &mut Row, step: &str, before: &str, now: &str) {
    if before != now {
        let first = before
            .lines()
            .zip(now.lines())
            .find(|(a, b)| a != b)
            .map_or_else(
                || "a different number of lines".to_owned(),
                |(a, b)| format!("before: {a}\nnow: {b}"),
            );
        row.failures.push(format!(
            "{step}: accounts answers differently; first difference:\n{first}"
        ));
    }
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
    let bin_dir = stack.bin_dir().to_owned();

    // 1. The previous release's accounts on this code's schema.
    let accounts_url = stack.accounts.url();
    let pair = friends(&accounts_url).await?;
    let written_by_this = answers(&accounts_url, &pair).await?;
    replace_accounts(&mut stack.accounts, old_bin_dir)
        .await
        .context("the previous release's accounts starts on this code's schema")?;
    let read_by_old = answers(&accounts_url, &pair)
        .await
        .context("the previous release's accounts answers on this code's schema")?;
    same_answers(
        &mut row,
        "previous accounts on this schema",
        &written_by_this,
        &read_by_old,
    );

    // 2. The stack's own replicas make way for the mixed pair.
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

        // 3. This code's accounts replaces the old one: the same answers, including the
        // matches the old one recorded.
        let mut players = pair.clone();
        for (_, a, b, _) in rooms.iter().take(4) {
            players.extend([a.clone(), b.clone()]);
        }
        let written_by_old = answers(&accounts_url, &players).await?;
        replace_accounts(&mut stack.accounts, &bin_dir).await?;
        let read_by_this = answers(&accounts_url, &players).await?;
        same_answers(
            &mut row,
            "this accounts after the old one",
            &written_by_old,
            &read_by_this,
        );
        row.notes.push(
            "previous accounts served this schema; this accounts served the matches it recorded"
                .into(),
        );
        anyhow::Ok(())
    }
    .await;

    // The stack's own replicas and accounts again, for whatever runs next.
    for game in &mut stack.games {
        game.kill();
    }
    stack.games = own;
    stack.accounts.kill();
    stack.accounts.set_binary(&bin_dir, "accounts");
    result?;
    Ok(row)
}
