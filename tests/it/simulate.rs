//! `basra simulate` through the real services (accounts, matchmaking and game-session on
//! their own ports, PostgreSQL and Redis): simulated guests are queued, seated in private
//! rooms or against the computer, bots play every seat over the `Play` stream, and each
//! finished match reaches the `analyst` views through game-session's outbox and
//! `RecordMatch`, with plausible content.
//!
//! Ten players sign in: far below accounts' 300 sign-ups a minute per address.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use basra::simulate::{ServicesOptions, simulate_services};
use basra_e2e::spawn_backend;

const MATCHES: u64 = 10;
const PLAYERS: usize = 10;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn simulated_matches_take_the_whole_record_path_into_the_analyst_views() {
    let backend = spawn_backend()
        .await
        .expect("PostgreSQL (DATABASE_URL) and Redis (REDIS_URL)");
    let summary = simulate_services(&ServicesOptions {
        endpoints: backend.endpoints.clone(),
        matches: MATCHES,
        players: PLAYERS,
        seed: 7,
        concurrency: 4,
        record_timeout: Duration::from_secs(60),
        // Every queued match must be a ranked duel of two simulated people: with four
        // ranked matches among ten people, ratings stay well inside the widest window.
        queue_bots: false,
        progress: false,
    })
    .await
    .unwrap();
    assert_eq!(summary.match_ids.len() as u64, MATCHES, "{summary:?}");
    assert_eq!(
        summary.recorded, MATCHES,
        "every match recorded: {summary:?}"
    );

    let db = backend.db.clone().expect("accounts on PostgreSQL");
    type Row = (
        String,
        String,
        bool,
        i16,
        i32,
        i32,
        i32,
        Option<i16>,
        String,
        i32,
        i32,
        i32,
        i32,
    );
    let rows: Vec<Row> = sqlx::query_as(
        "SELECT match_id, mode, ranked, seats, target_score, rounds, plays, winner_side,
                end_reason, side0_total, side1_total, bots, humans
         FROM analyst.matches",
    )
    .fetch_all(&db)
    .await
    .unwrap();
    let ids: HashSet<&str> = rows.iter().map(|r| r.0.as_str()).collect();
    let played: HashSet<&str> = summary.match_ids.iter().map(String::as_str).collect();
    assert_eq!(ids, played, "the views hold exactly the matches played");

    let mut modes: HashMap<&str, usize> = HashMap::new();
    for (id, mode, ranked, seats, target, rounds, plays, winner, reason, s0, s1, bots, humans) in
        &rows
    {
        *modes.entry(mode.as_str()).or_default() += 1;
        // Bots never resign and nobody leaves: every match is played to its target.
        assert_eq!(reason, "target_reached", "{id}");
        let winner = winner.expect("a winner") as usize;
        let totals = [*s0, *s1];
        assert!(totals[winner] >= *target, "{id}: {totals:?} to {target}");
        assert!(totals[winner] > totals[1 - winner], "{id}: {totals:?}");
        assert!(*rounds >= 1, "{id}");
        // A round is 48 plays; the last may be cut short by nothing: bots play it out.
        assert_eq!(
            *plays,
            48 * rounds,
            "{id}: {plays} plays in {rounds} rounds"
        );
        assert_eq!(bots + humans, i32::from(*seats), "{id}");
        if *ranked {
            assert_eq!(
                (*seats, *bots),
                (2, 0),
                "{id}: ranked matches are queued duels"
            );
        }
    }
    // The seatings in turn (simulate's SEATINGS): 4 ranked, 2 against the computer,
    // 3 private duels and 1 private four-seat room in any 10 matches.
    assert_eq!(modes.get("ranked"), Some(&4), "{modes:?}");
    assert_eq!(modes.get("with_bots"), Some(&2), "{modes:?}");
    assert_eq!(modes.get("casual"), Some(&4), "{modes:?}");
    assert_eq!(rows.iter().filter(|r| r.3 == 4).count(), 1);

    // Every human seat is one of the simulated guests; ranked seats changed ratings.
    let (seats, guests, rated, off): (i64, i64, i64, i64) = sqlx::query_as(
        "SELECT count(*),
                count(*) FILTER (WHERE u.is_guest AND u.display_name LIKE 'Sim %'),
                count(*) FILTER (WHERE p.rating_change IS NOT NULL),
                count(*) FILTER (WHERE p.ranked <> (p.rating_change IS NOT NULL))
         FROM analyst.match_players p JOIN users u ON u.id = p.user_id",
    )
    .fetch_one(&db)
    .await
    .unwrap();
    let humans: i32 = rows.iter().map(|r| r.12).sum();
    assert_eq!(seats, i64::from(humans));
    assert_eq!(guests, seats, "only simulated guests played");
    assert_eq!(rated, 8, "two rated seats in each of the 4 ranked matches");
    assert_eq!(
        off, 0,
        "a seat's rating changed exactly when its match was ranked"
    );
    let (history,): (i64,) = sqlx::query_as("SELECT count(*) FROM analyst.rating_history")
        .fetch_one(&db)
        .await
        .unwrap();
    assert_eq!(history, 8);
    // Each completed round has a row per side, and its totals end at the match's.
    let (round_rows, mismatched): (i64, i64) = sqlx::query_as(
        "SELECT (SELECT count(*) FROM analyst.rounds),
                (SELECT count(*) FROM analyst.matches m
                 JOIN analyst.rounds r ON r.match_id = m.match_id AND r.round = m.rounds
                 WHERE r.total <> CASE r.side WHEN 0 THEN m.side0_total ELSE m.side1_total END)",
    )
    .fetch_one(&db)
    .await
    .unwrap();
    let rounds: i32 = rows.iter().map(|r| r.5).sum();
    assert_eq!(round_rows, 2 * i64::from(rounds));
    assert_eq!(mismatched, 0);
    let daily: i64 = sqlx::query_scalar("SELECT sum(matches)::BIGINT FROM analyst.daily_activity")
        .fetch_one(&db)
        .await
        .unwrap();
    assert_eq!(daily as u64, MATCHES);
    backend.stop().await.unwrap();
}
