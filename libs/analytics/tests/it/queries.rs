//! Queries that cannot rot: every SQL query printed in `libs/analytics/README.md` (its
//! ```sql blocks) and every file of `docs/analytics/*.sql` runs here, read from the
//! documents themselves — DuckDB's (the `duckdb` package from PyPI, through
//! `tests/queries/run_duckdb.py`) over a fresh export of a simulated corpus, PostgreSQL's
//! as the `basra_analyst` role over the views — so a renamed column fails `make test`,
//! not an analyst's morning. A few totals are checked against SQL over the views.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use accounts::PgStore;
use accounts::store::prelude::*;
use basra_analytics::export::export;
use sqlx::{Executor as _, PgPool, Row as _};

use crate::helpers::{
    export_options, players, record_returning_matches, scalar, sign_up_before_first_match,
};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Engine {
    DuckDb,
    Postgres,
}

/// A query text as documented: where it is printed, for which engine.
#[derive(Debug, Clone)]
struct Documented {
    name: String,
    engine: Engine,
    sql: String,
}

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The ```sql blocks of a Markdown file: DuckDB's when they read Parquet, else
/// PostgreSQL's.
fn markdown_blocks(path: &Path, name: &str) -> Vec<Documented> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut blocks = Vec::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        match &mut current {
            None if line.trim_start() == "```sql" => current = Some(String::new()),
            Some(sql) if line.trim_start().starts_with("```") => {
                let engine = if sql.contains("read_parquet") {
                    Engine::DuckDb
                } else {
                    Engine::Postgres
                };
                blocks.push(Documented {
                    name: format!("{name}, sql block {}", blocks.len() + 1),
                    engine,
                    sql: std::mem::take(sql),
                });
                current = None;
            }
            Some(sql) => {
                sql.push_str(line);
                sql.push('\n');
            }
            None => {}
        }
    }
    assert!(current.is_none(), "{name}: an sql block is not closed");
    blocks
}

/// `docs/analytics/*.sql`, each naming its engine on its first line (`-- engine: duckdb`
/// or `-- engine: postgres`).
fn documented_files() -> Vec<Documented> {
    let dir = repository().join("docs/analytics");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "sql"))
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|path| {
            let sql = std::fs::read_to_string(&path).unwrap();
            let name = format!(
                "docs/analytics/{}",
                path.file_name().unwrap().to_string_lossy()
            );
            let first = sql.lines().next().unwrap_or_default();
            let engine = if first.starts_with("-- engine: duckdb") {
                Engine::DuckDb
            } else if first.starts_with("-- engine: postgres") {
                Engine::Postgres
            } else {
                panic!("{name}: the first line names no engine (-- engine: duckdb|postgres)")
            };
            Documented { name, engine, sql }
        })
        .collect()
}

fn documented() -> Vec<Documented> {
    let mut all = markdown_blocks(
        &repository().join("libs/analytics/README.md"),
        "libs/analytics/README.md",
    );
    all.extend(documented_files());
    all
}

/// The statements of a PostgreSQL text: comment lines dropped, split at `;`.
fn statements(sql: &str) -> Vec<String> {
    let text: String = sql
        .lines()
        .filter(|l| !l.trim_start().starts_with("--"))
        .map(|l| format!("{l}\n"))
        .collect();
    text.split(';')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

/// One statement's answer from DuckDB.
#[derive(Debug, serde::Deserialize)]
struct Answer {
    columns: Vec<String>,
    rows: usize,
    first: Vec<Vec<Option<String>>>,
}

impl Answer {
    fn column(&self, name: &str) -> Vec<Option<String>> {
        let at = self
            .columns
            .iter()
            .position(|c| c == name)
            .unwrap_or_else(|| panic!("no column {name} in {:?}", self.columns));
        self.first.iter().map(|row| row[at].clone()).collect()
    }

    fn sum(&self, name: &str) -> i64 {
        self.column(name)
            .iter()
            .flatten()
            .map(|v| v.parse::<i64>().unwrap())
            .sum()
    }
}

#[derive(Debug, serde::Deserialize)]
struct Ran {
    name: String,
    error: Option<String>,
    results: Vec<Answer>,
}

/// Runs the DuckDB texts against the export in `dir`.
fn run_duckdb(dir: &Path, queries: &[Documented]) -> HashMap<String, Ran> {
    let input = serde_json::to_vec(
        &queries
            .iter()
            .map(|q| serde_json::json!({ "name": q.name, "sql": q.sql }))
            .collect::<Vec<_>>(),
    )
    .unwrap();
    let runner = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/queries/run_duckdb.py");
    let mut child = Command::new("python3")
        .arg(runner)
        .arg(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python3 runs (make deps)");
    {
        use std::io::Write as _;
        child.stdin.take().unwrap().write_all(&input).unwrap();
    }
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "run_duckdb.py failed (is DuckDB installed? python3 -m pip install duckdb; make deps): {stderr}"
    );
    let ran: Vec<Ran> = serde_json::from_slice(&output.stdout).unwrap();
    ran.into_iter().map(|r| (r.name.clone(), r)).collect()
}

#[test]
fn the_documents_hold_the_queries_this_test_runs() {
    let all = documented();
    let names: Vec<&str> = all.iter().map(|q| q.name.as_str()).collect();
    for file in [
        "docs/analytics/new_players.sql",
        "docs/analytics/retention.sql",
        "docs/analytics/daily_active_players.sql",
        "docs/analytics/matches_per_player.sql",
        "docs/analytics/time_to_match.sql",
        "docs/analytics/bot_seats.sql",
        "docs/analytics/matches_by_client.sql",
        "docs/analytics/views_retention.sql",
    ] {
        assert!(names.contains(&file), "{file} in {names:?}");
    }
    let readme: Vec<&Documented> = all
        .iter()
        .filter(|q| q.name.starts_with("libs/analytics/README.md"))
        .collect();
    assert!(readme.iter().filter(|q| q.engine == Engine::DuckDb).count() >= 2);
    assert!(readme.iter().any(|q| q.engine == Engine::Postgres));
    assert_eq!(
        statements("-- a comment; with a semicolon\nSELECT 1;\n\nSELECT 2;\n"),
        ["SELECT 1", "SELECT 2"]
    );
}

#[sqlx::test(migrator = "accounts::store::MIGRATOR")]
async fn every_documented_query_runs_against_a_fresh_export_and_the_views(pool: PgPool) {
    let store = PgStore::new(pool.clone());
    let people = players(&store, 24).await;
    // Client apps from before the corpus's first day: a third on the web, a third on
    // Android, a third naming none.
    for (i, person) in people.iter().enumerate() {
        let client = match i % 3 {
            0 => "web/1.2.3",
            1 => "android/2.0.3",
            _ => continue,
        };
        store
            .note_sign_in_client(
                person.user_id,
                &basra_platform::client_info::ClientInfo::parse(client).unwrap(),
                crate::helpers::until() - chrono::Duration::days(30),
            )
            .await
            .unwrap();
    }
    // 20 days up to 2026-11-20: the README's week of 2026-11-01 is in it.
    record_returning_matches(&store, &people, 160, 20, 81).await;
    sign_up_before_first_match(&pool).await;
    // A player who deleted the account: analyst.players keeps it under its anonymous key.
    store
        .delete_account(people[5].user_id, uuid::Uuid::now_v7(), chrono::Utc::now())
        .await
        .unwrap();
    let dir = std::env::temp_dir().join(format!("basra-queries-{}", uuid::Uuid::now_v7()));
    let summary = export(&pool, &export_options(dir.clone())).await.unwrap();
    assert_eq!((summary.matches, summary.failures.len()), (160, 0));
    assert_eq!(summary.players, 24);

    // DuckDB over the export: every text runs, every statement answers rows.
    let mut duck: Vec<Documented> = documented()
        .into_iter()
        .filter(|q| q.engine == Engine::DuckDb)
        .collect();
    // The harness catches rot: the same query with a renamed column fails.
    let rotten = duck
        .iter()
        .find(|q| q.name.ends_with("time_to_match.sql"))
        .unwrap()
        .sql
        .replace("queue_wait_seconds", "queue_wait_secs");
    duck.push(Documented {
        name: "rotten".into(),
        engine: Engine::DuckDb,
        sql: rotten,
    });
    let ran = run_duckdb(&dir, &duck);
    assert_eq!(ran.len(), duck.len());
    let rot = ran["rotten"].error.as_deref().unwrap_or_default();
    assert!(rot.contains("queue_wait_secs"), "{rot}");
    for query in duck.iter().filter(|q| q.name != "rotten") {
        let result = &ran[&query.name];
        assert_eq!(result.error, None, "{}", query.name);
        assert!(!result.results.is_empty(), "{}: no answer", query.name);
        for answer in &result.results {
            assert!(answer.rows > 0, "{}: no rows", query.name);
        }
    }
    let answer = |file: &str| -> &Answer {
        let name = format!("docs/analytics/{file}");
        ran[&name].results.last().unwrap()
    };

    // Their figures agree with the views.
    assert_eq!(
        answer("new_players.sql").sum("new_players"),
        scalar(&pool, "SELECT count(*) FROM analyst.players").await
    );
    assert_eq!(answer("new_players.sql").sum("deleted_since"), 1);
    let active: Vec<(chrono::NaiveDate, i64)> = sqlx::query_as(
        "SELECT day, count(DISTINCT user_id) FROM analyst.match_players
         WHERE user_id IS NOT NULL GROUP BY day ORDER BY day",
    )
    .fetch_all(&pool)
    .await
    .unwrap();
    let daily = answer("daily_active_players.sql");
    let exported: Vec<(chrono::NaiveDate, i64)> = daily
        .column("day")
        .iter()
        .zip(daily.column("active_players"))
        .map(|(d, n)| {
            (
                d.as_ref().unwrap().parse().unwrap(),
                n.unwrap().parse().unwrap(),
            )
        })
        .collect();
    assert_eq!(exported, active);
    assert!(daily.sum("returning_players") > 0, "players come back");
    assert_eq!(
        answer("time_to_match.sql").sum("queued_seats"),
        scalar(
            &pool,
            "SELECT count(*) FROM analyst.match_players WHERE seat_fill = 'queue'"
        )
        .await
    );
    assert_eq!(
        answer("bot_seats.sql").sum("seats"),
        scalar(&pool, "SELECT count(*) FROM analyst.match_players").await
    );
    let by_client = answer("matches_by_client.sql");
    assert_eq!(
        by_client.sum("seats"),
        scalar(
            &pool,
            "SELECT count(*) FROM analyst.match_players WHERE NOT is_bot"
        )
        .await
    );
    let platforms: HashSet<Option<String>> = by_client.column("platform").into_iter().collect();
    for platform in [Some("web".to_owned()), Some("android".to_owned()), None] {
        assert!(
            platforms.contains(&platform),
            "{platform:?} in {platforms:?}"
        );
    }
    let retention = answer("retention.sql");
    assert_eq!(
        retention.sum("players"),
        scalar(&pool, "SELECT count(*) FROM analyst.players").await
    );
    let d1: Vec<f64> = retention
        .column("d1")
        .into_iter()
        .flatten()
        .map(|v| v.parse().unwrap())
        .collect();
    assert!(
        !d1.is_empty() && d1.iter().all(|r| (0.0..=1.0).contains(r)),
        "{d1:?}"
    );
    assert!(
        d1.iter().any(|r| *r > 0.0),
        "someone came back the next day: {d1:?}"
    );

    // PostgreSQL over the views, as the analyst role; each statement in a transaction
    // rolled back (the README's CREATE ROLE leaves nothing behind).
    let postgres: Vec<Documented> = documented()
        .into_iter()
        .filter(|q| q.engine == Engine::Postgres)
        .collect();
    assert!(!postgres.is_empty());
    for query in &postgres {
        for statement in statements(&query.sql) {
            let mut tx = pool.begin().await.unwrap();
            let reads = {
                let upper = statement.to_ascii_uppercase();
                upper.starts_with("SELECT") || upper.starts_with("WITH")
            };
            if reads {
                tx.execute("SET LOCAL ROLE basra_analyst").await.unwrap();
                let rows = sqlx::query(sqlx::AssertSqlSafe(statement.clone()))
                    .fetch_all(&mut *tx)
                    .await
                    .unwrap_or_else(|e| panic!("{}: {e}\n{statement}", query.name));
                assert!(!rows.is_empty(), "{}: no rows\n{statement}", query.name);
                assert!(rows[0].len() > 0);
            } else {
                sqlx::raw_sql(sqlx::AssertSqlSafe(statement.clone()))
                    .execute(&mut *tx)
                    .await
                    .unwrap_or_else(|e| panic!("{}: {e}\n{statement}", query.name));
            }
            tx.rollback().await.unwrap();
        }
    }
    std::fs::remove_dir_all(dir).unwrap();
}
