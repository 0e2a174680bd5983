//! Export → read back: the Parquet files hold exactly what SQL over the analyst views
//! says (row counts and sums), partitioned by day; incremental runs export only what is
//! new; a record that fails to replay is counted, listed and skipped.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::time::Duration;

use accounts::PgStore;
use accounts::store::prelude::*;
use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int16Type, Int32Type, TimestampMicrosecondType};
use arrow_array::{Array, RecordBatch};
use basra_analytics::dataset;
use basra_analytics::export::tables::{TABLES, Table};
use basra_analytics::export::{ExportOptions, ExportSummary, export};
use basra_platform::client_info::ClientInfo;
use basra_records::{ActionKind, ActionRecord, MatchRecord};
use chrono::{DateTime, NaiveDate, TimeZone, Utc};
use sqlx::PgPool;

use crate::helpers::{export_options, players, record_matches, scalar};

fn options(out: &Path) -> ExportOptions {
    export_options(out)
}

fn temp_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("basra-export-{name}-{}", uuid::Uuid::now_v7()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn batches(root: &Path, table: Table) -> Vec<RecordBatch> {
    let mut out = Vec::new();
    dataset::for_each_batch(root, table, &[], |b| {
        out.push(b.clone());
        Ok(())
    })
    .unwrap();
    out
}

fn rows(root: &Path, table: Table) -> i64 {
    batches(root, table)
        .iter()
        .map(|b| b.num_rows() as i64)
        .sum()
}

fn sum_i32(root: &Path, table: Table, column: &str) -> i64 {
    batches(root, table)
        .iter()
        .map(|b| {
            let c = b
                .column_by_name(column)
                .unwrap()
                .as_primitive::<Int32Type>();
            c.iter().flatten().map(i64::from).sum::<i64>()
        })
        .sum()
}

fn count_true(root: &Path, table: Table, column: &str) -> i64 {
    batches(root, table)
        .iter()
        .map(|b| b.column_by_name(column).unwrap().as_boolean().true_count() as i64)
        .sum()
}

#[sqlx::test(migrator = "accounts::store::MIGRATOR")]
async fn the_export_reads_back_equal_to_sql_over_the_views(pool: PgPool) {
    let store = PgStore::new(pool.clone());
    let people = players(&store, 10).await;
    // people[0] signed in from the web client before playing; the others named none.
    store
        .note_sign_in_client(
            people[0].user_id,
            &ClientInfo::parse("web/1.2.3").unwrap(),
            crate::helpers::until() - chrono::Duration::days(30),
        )
        .await
        .unwrap();
    record_matches(&store, &people, 60, 4, 11).await;
    let out = temp_dir("readback");

    let summary = export(&pool, &options(&out)).await.unwrap();
    assert!(summary.failures.is_empty(), "{:?}", summary.failures);
    assert_eq!(summary.matches, 60);

    // Row counts.
    let matches = scalar(&pool, "SELECT count(*) FROM analyst.matches").await;
    assert_eq!(rows(&out, Table::Matches), matches);
    let seats = scalar(&pool, "SELECT count(*) FROM analyst.match_players").await;
    assert_eq!(rows(&out, Table::MatchPlayers), seats);
    let round_rows = scalar(&pool, "SELECT count(*) FROM analyst.rounds").await;
    assert_eq!(rows(&out, Table::Rounds), round_rows);
    let plays = scalar(&pool, "SELECT sum(plays) FROM analyst.matches").await;
    assert_eq!(rows(&out, Table::Plays), plays);
    assert_eq!(
        summary.rows,
        [
            matches as u64,
            seats as u64,
            round_rows as u64,
            plays as u64
        ]
    );

    // Sums.
    assert_eq!(
        sum_i32(&out, Table::Matches, "rounds"),
        scalar(&pool, "SELECT sum(rounds) FROM analyst.matches").await
    );
    assert_eq!(
        sum_i32(&out, Table::Matches, "automatic_plays"),
        scalar(&pool, "SELECT sum(automatic_plays) FROM analyst.matches").await
    );
    assert_eq!(
        count_true(&out, Table::Plays, "automatic"),
        scalar(&pool, "SELECT sum(automatic_plays) FROM analyst.matches").await
    );
    assert_eq!(
        sum_i32(&out, Table::Matches, "side0_total") + sum_i32(&out, Table::Matches, "side1_total"),
        scalar(
            &pool,
            "SELECT sum(side0_total + side1_total) FROM analyst.matches"
        )
        .await
    );
    assert_eq!(
        count_true(&out, Table::Matches, "ranked"),
        scalar(&pool, "SELECT count(*) FROM analyst.matches WHERE ranked").await
    );
    for column in [
        "basras",
        "jack_basras",
        "komi_basras",
        "round_points",
        "pile_size",
        "card_points",
    ] {
        let sql: &'static str = match column {
            "basras" => "SELECT sum(basras) FROM analyst.rounds",
            "jack_basras" => "SELECT sum(jack_basras) FROM analyst.rounds",
            "komi_basras" => "SELECT sum(komi_basras) FROM analyst.rounds",
            "round_points" => "SELECT sum(round_points) FROM analyst.rounds",
            "pile_size" => "SELECT sum(pile_size) FROM analyst.rounds",
            _ => "SELECT sum(card_points) FROM analyst.rounds",
        };
        assert_eq!(
            sum_i32(&out, Table::Rounds, column),
            scalar(&pool, sql).await,
            "{column}"
        );
    }
    assert_eq!(
        count_true(&out, Table::Rounds, "majority"),
        scalar(&pool, "SELECT count(*) FROM analyst.rounds WHERE majority").await
    );
    assert_eq!(
        count_true(&out, Table::MatchPlayers, "won"),
        scalar(
            &pool,
            "SELECT count(*) FROM analyst.match_players WHERE won"
        )
        .await
    );
    let rating_change: f64 = batches(&out, Table::MatchPlayers)
        .iter()
        .map(|b| {
            let c = b
                .column_by_name("rating_change")
                .unwrap()
                .as_primitive::<Float64Type>();
            c.iter().flatten().sum::<f64>()
        })
        .sum();
    let sql_change: f64 =
        sqlx::query_scalar("SELECT sum(rating_change) FROM analyst.match_players")
            .fetch_one(&pool)
            .await
            .unwrap();
    assert!((rating_change - sql_change).abs() < 1e-6);
    // Queue waits and seat fills as the view has them.
    let queue_wait: f64 = batches(&out, Table::MatchPlayers)
        .iter()
        .map(|b| {
            let c = b
                .column_by_name("queue_wait_seconds")
                .unwrap()
                .as_primitive::<Float64Type>();
            c.iter().flatten().sum::<f64>()
        })
        .sum();
    let sql_wait: f64 =
        sqlx::query_scalar("SELECT sum(queue_wait_seconds) FROM analyst.match_players")
            .fetch_one(&pool)
            .await
            .unwrap();
    assert!(sql_wait > 0.0);
    assert!((queue_wait - sql_wait).abs() < 1e-6);
    for fill in ["queue", "code", "invite", "bot", "host"] {
        let exported = batches(&out, Table::MatchPlayers)
            .iter()
            .map(|b| {
                b.column_by_name("seat_fill")
                    .unwrap()
                    .as_string::<i32>()
                    .iter()
                    .filter(|v| *v == Some(fill))
                    .count() as i64
            })
            .sum::<i64>();
        let sql: i64 =
            sqlx::query_scalar("SELECT count(*) FROM analyst.match_players WHERE seat_fill = $1")
                .bind(fill)
                .fetch_one(&pool)
                .await
                .unwrap();
        assert!(sql > 0, "{fill}");
        assert_eq!(exported, sql, "{fill}");
    }
    // Each seat's client app as the view has it: web/1.2.3 on people[0]'s seats, null
    // on every other seat (bots, players who named no client).
    let mut exported: HashMap<(String, i16), (Option<String>, Option<String>)> = HashMap::new();
    for b in batches(&out, Table::MatchPlayers) {
        let ids = b.column_by_name("match_id").unwrap().as_string::<i32>();
        let seats = b
            .column_by_name("seat")
            .unwrap()
            .as_primitive::<Int16Type>();
        let platform = b
            .column_by_name("client_platform")
            .unwrap()
            .as_string::<i32>();
        let version = b
            .column_by_name("client_app_version")
            .unwrap()
            .as_string::<i32>();
        for i in 0..b.num_rows() {
            let value = |c: &arrow_array::StringArray| c.is_valid(i).then(|| c.value(i).to_owned());
            exported.insert(
                (ids.value(i).to_owned(), seats.value(i)),
                (value(platform), value(version)),
            );
        }
    }
    // match_id, seat, user_id, client_platform, client_app_version.
    type Seat = (
        String,
        i16,
        Option<uuid::Uuid>,
        Option<String>,
        Option<String>,
    );
    let viewed: Vec<Seat> = sqlx::query_as(
        "SELECT match_id, seat, user_id, client_platform, client_app_version
             FROM analyst.match_players",
    )
    .fetch_all(&pool)
    .await
    .unwrap();
    assert_eq!(exported.len(), viewed.len());
    let mut web = 0;
    for (match_id, seat, user, platform, version) in viewed {
        if user == Some(people[0].user_id) {
            assert_eq!(
                (platform.as_deref(), version.as_deref()),
                (Some("web"), Some("1.2.3"))
            );
            web += 1;
        } else {
            assert_eq!((&platform, &version), (&None, &None), "{user:?}");
        }
        assert_eq!(exported[&(match_id, seat)], (platform, version));
    }
    assert!(web > 0, "people[0] played");
    let rated = batches(&out, Table::MatchPlayers)
        .iter()
        .map(|b| (b.num_rows() - b.column_by_name("rating_after").unwrap().null_count()) as i64)
        .sum::<i64>();
    assert_eq!(
        rated,
        scalar(&pool, "SELECT count(*) FROM analyst.rating_history").await
    );

    // Replayed Basras equal the recorded ones over the rounds a match completed
    // (a resigned or abandoned match has plays in a round that was never scored).
    let mut completed: HashSet<(String, i32)> = HashSet::new();
    for b in batches(&out, Table::Rounds) {
        let ids = b.column_by_name("match_id").unwrap().as_string::<i32>();
        let rounds = b
            .column_by_name("round")
            .unwrap()
            .as_primitive::<Int32Type>();
        for i in 0..b.num_rows() {
            completed.insert((ids.value(i).to_owned(), rounds.value(i)));
        }
    }
    let mut replayed: HashMap<String, i64> = HashMap::new();
    let mut taken_total = 0i64;
    for b in batches(&out, Table::Plays) {
        let ids = b.column_by_name("match_id").unwrap().as_string::<i32>();
        let rounds = b
            .column_by_name("round")
            .unwrap()
            .as_primitive::<Int32Type>();
        let basra = b.column_by_name("basra").unwrap().as_string::<i32>();
        let taken = b.column_by_name("taken").unwrap().as_list::<i32>();
        let taken_count = b
            .column_by_name("taken_count")
            .unwrap()
            .as_primitive::<Int16Type>();
        for i in 0..b.num_rows() {
            assert_eq!(taken.value(i).len() as i16, taken_count.value(i));
            taken_total += i64::from(taken_count.value(i));
            if basra.is_valid(i) && completed.contains(&(ids.value(i).to_owned(), rounds.value(i)))
            {
                *replayed.entry(basra.value(i).to_owned()).or_default() += 1;
            }
        }
    }
    assert_eq!(
        replayed.get("basra").copied().unwrap_or(0),
        scalar(&pool, "SELECT sum(basras) FROM analyst.rounds").await
    );
    assert_eq!(
        replayed.get("jack").copied().unwrap_or(0),
        scalar(&pool, "SELECT sum(jack_basras) FROM analyst.rounds").await
    );
    assert_eq!(
        replayed.get("komi").copied().unwrap_or(0),
        scalar(&pool, "SELECT sum(komi_basras) FROM analyst.rounds").await
    );
    assert!(taken_total > 0);

    // Partitions: every row sits in the day its match ended.
    for table in [Table::Matches, Table::Rounds, Table::MatchPlayers] {
        for file in dataset::files(&out, table).unwrap() {
            let day = partition_day(&file);
            let mut tmp = Vec::new();
            let b = read_file(&file, &mut tmp);
            for b in b {
                let ended = b
                    .column_by_name("ended_at")
                    .unwrap()
                    .as_primitive::<TimestampMicrosecondType>();
                for t in ended.iter().flatten() {
                    assert_eq!(
                        DateTime::from_timestamp_micros(t).unwrap().date_naive(),
                        day
                    );
                }
            }
        }
    }
    let days = scalar(&pool, "SELECT count(*) FROM analyst.daily_activity").await;
    assert_eq!(
        dataset::files(&out, Table::Matches).unwrap().len() as i64,
        days
    );
    std::fs::remove_dir_all(&out).unwrap();
}

fn partition_day(file: &Path) -> NaiveDate {
    let dir = file
        .parent()
        .unwrap()
        .file_name()
        .unwrap()
        .to_str()
        .unwrap();
    NaiveDate::parse_from_str(dir.strip_prefix("date=").unwrap(), "%Y-%m-%d").unwrap()
}

fn read_file<'a>(file: &Path, out: &'a mut Vec<RecordBatch>) -> &'a [RecordBatch] {
    let reader = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(
        std::fs::File::open(file).unwrap(),
    )
    .unwrap()
    .build()
    .unwrap();
    for b in reader {
        out.push(b.unwrap());
    }
    out
}

#[sqlx::test(migrator = "accounts::store::MIGRATOR")]
async fn incremental_runs_export_only_new_records_and_slices_leave_the_watermark(pool: PgPool) {
    let store = PgStore::new(pool.clone());
    let people = players(&store, 6).await;
    record_matches(&store, &people, 20, 3, 21).await;
    let out = temp_dir("incremental");

    let first = export(&pool, &options(&out)).await.unwrap();
    assert_eq!(first.matches, 20);
    assert!(out.join("_watermark.json").exists());
    let again = export(&pool, &options(&out)).await.unwrap();
    assert_eq!(again.matches, 0, "nothing new");
    assert!(again.files.is_empty());

    record_matches(&store, &people, 15, 3, 22).await;
    let second = export(&pool, &options(&out)).await.unwrap();
    assert_eq!(second.matches, 15);
    assert_eq!(second.recorded_from, Some(again.recorded_before));
    assert!(again.recorded_before > first.recorded_before);
    assert_eq!(rows(&out, Table::Matches), 35);
    assert_eq!(
        rows(&out, Table::Plays),
        scalar(&pool, "SELECT sum(plays) FROM analyst.matches").await
    );

    // A settle time keeps fresh records for the next run.
    record_matches(&store, &people, 3, 3, 23).await;
    let settled = export(
        &pool,
        &ExportOptions {
            settle: Duration::from_secs(3600),
            ..options(&out)
        },
    )
    .await
    .unwrap();
    assert_eq!(settled.matches, 0);

    // A slice by end time: its own directory, exactly the view's count, no watermark.
    let slice_dir = temp_dir("slice");
    let since = Utc.with_ymd_and_hms(2026, 11, 18, 0, 0, 0).unwrap();
    let until = Utc.with_ymd_and_hms(2026, 11, 19, 0, 0, 0).unwrap();
    let slice = export(
        &pool,
        &ExportOptions {
            since: Some(since),
            until: Some(until),
            ..options(&slice_dir)
        },
    )
    .await
    .unwrap();
    let expected: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM analyst.matches WHERE ended_at >= $1 AND ended_at < $2",
    )
    .bind(since)
    .bind(until)
    .fetch_one(&pool)
    .await
    .unwrap();
    assert!(expected > 0);
    assert_eq!(slice.matches as i64, expected);
    assert_eq!(rows(&slice_dir, Table::Matches), expected);
    assert!(!slice_dir.join("_watermark.json").exists());
    for dir in [out, slice_dir] {
        std::fs::remove_dir_all(dir).unwrap();
    }
}

#[sqlx::test(migrator = "accounts::store::MIGRATOR")]
async fn a_record_that_does_not_replay_is_reported_counted_and_skipped(pool: PgPool) {
    let store = PgStore::new(pool.clone());
    let people = players(&store, 4).await;
    let recorded = record_matches(&store, &people, 10, 1, 31).await;
    let out = temp_dir("failures");
    // One log plays a card its seat never held: the third action replays the first card
    // (a log stored as JSON, as before the binary log).
    let (broken_record, _) = recorded.iter().find(|(r, _)| r.actions.len() > 3).unwrap();
    let broken = &broken_record.match_id;
    let mut log = broken_record.actions.clone();
    log[2].action = log[0].action.clone();
    store_as_json(&pool, broken, &log).await;
    // One whose settings no longer decode.
    let undecodable = &recorded
        .iter()
        .find(|(r, _)| &r.match_id != broken)
        .unwrap()
        .0
        .match_id;
    sqlx::query("UPDATE matches SET settings = settings || '{\"seats\": 3}' WHERE match_id = $1")
        .bind(undecodable)
        .execute(&pool)
        .await
        .unwrap();
    // And one whose binary log is cut short.
    let truncated = &recorded
        .iter()
        .find(|(r, _)| &r.match_id != broken && &r.match_id != undecodable)
        .unwrap()
        .0
        .match_id;
    sqlx::query(
        "UPDATE matches SET action_log = substring(action_log FROM 1 FOR 5) WHERE match_id = $1",
    )
    .bind(truncated)
    .execute(&pool)
    .await
    .unwrap();

    let summary: ExportSummary = export(&pool, &options(&out)).await.unwrap();
    assert_eq!(summary.matches, 7);
    let mut failed: Vec<&str> = summary
        .failures
        .iter()
        .map(|f| f.match_id.as_str())
        .collect();
    failed.sort();
    let mut expected = vec![broken.as_str(), undecodable.as_str(), truncated.as_str()];
    expected.sort();
    assert_eq!(failed, expected);
    let error_of = |id: &str| {
        summary
            .failures
            .iter()
            .find(|f| f.match_id == id)
            .unwrap()
            .error
            .clone()
    };
    let broken_failure = error_of(broken);
    assert!(
        broken_failure.contains("action 2 was refused"),
        "{broken_failure}"
    );
    let truncated_failure = error_of(truncated);
    assert!(
        truncated_failure.contains("cannot decode the record")
            && truncated_failure.contains("action log"),
        "{truncated_failure}"
    );
    assert_eq!(rows(&out, Table::Matches), 7);
    assert!(
        summary.describe().contains("3 skipped"),
        "{}",
        summary.describe()
    );
    // The failures are listed next to the data.
    let listed: Vec<String> = std::fs::read_dir(out.join("_failures"))
        .unwrap()
        .map(|f| std::fs::read_to_string(f.unwrap().path()).unwrap())
        .collect();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].lines().count(), 3);
    assert!(listed[0].contains(broken.as_str()));
    std::fs::remove_dir_all(&out).unwrap();
}

/// Stores `log` as a row recorded before the binary log had it: JSON `actions`, no
/// `action_log`.
async fn store_as_json(pool: &PgPool, match_id: &str, log: &[ActionRecord]) {
    sqlx::query("UPDATE matches SET actions = $2, action_log = NULL WHERE match_id = $1")
        .bind(match_id)
        .bind(sqlx::types::Json(log))
        .execute(pool)
        .await
        .unwrap();
}

/// Every batch of every table, in order.
fn all_batches(root: &Path) -> Vec<Vec<RecordBatch>> {
    TABLES.iter().map(|&t| batches(root, t)).collect()
}

#[sqlx::test(migrator = "accounts::store::MIGRATOR")]
async fn rows_with_a_json_log_export_the_same_as_rows_with_a_binary_log(pool: PgPool) {
    let store = PgStore::new(pool.clone());
    let people = players(&store, 6).await;
    let recorded = record_matches(&store, &people, 30, 3, 41).await;
    let binary = temp_dir("binary-log");
    let summary = export(&pool, &options(&binary)).await.unwrap();
    assert_eq!((summary.matches, summary.failures.len()), (30, 0));

    // Two thirds of the rows as they were stored before the binary log.
    for (record, _) in recorded
        .iter()
        .step_by(3)
        .chain(recorded.iter().skip(1).step_by(3))
    {
        store_as_json(&pool, &record.match_id, &record.actions).await;
    }
    let json_rows = scalar(
        &pool,
        "SELECT count(*) FROM matches WHERE action_log IS NULL",
    )
    .await;
    assert_eq!(json_rows, 20);
    let mixed = temp_dir("json-log");
    let summary = export(&pool, &options(&mixed)).await.unwrap();
    assert_eq!((summary.matches, summary.failures.len()), (30, 0));

    let (a, b) = (all_batches(&binary), all_batches(&mixed));
    assert!(a[3].iter().map(RecordBatch::num_rows).sum::<usize>() > 1000);
    assert_eq!(a, b);
    for dir in [binary, mixed] {
        std::fs::remove_dir_all(dir).unwrap();
    }
}

async fn apply<'a>(
    pool: &PgPool,
    migrations: impl Iterator<Item = &'a &'a sqlx::migrate::Migration>,
) {
    for m in migrations {
        sqlx::raw_sql(m.sql.clone())
            .execute(pool)
            .await
            .unwrap_or_else(|e| panic!("migration {}: {e}", m.version));
    }
}

/// The version of the migration that brought the binary log.
const BINARY_LOG_MIGRATION: i64 = 20261201000003;

#[sqlx::test(migrations = false)]
async fn the_binary_log_migration_counts_the_plays_of_older_rows_which_still_export(pool: PgPool) {
    let migrations: Vec<_> = accounts::store::MIGRATOR.iter().collect();
    assert!(migrations.iter().any(|m| m.version == BINARY_LOG_MIGRATION));
    apply(
        &pool,
        migrations
            .iter()
            .filter(|m| m.version < BINARY_LOG_MIGRATION),
    )
    .await;
    // Unrated matches as the accounts of before stored them (no player rows needed).
    let mut corpus = basra_records::corpus::Corpus::new(
        (0..4)
            .map(|i| basra_records::corpus::Player {
                user_id: uuid::Uuid::now_v7(),
                policy: basra_records::corpus::policy_of(i),
            })
            .collect(),
        basra_records::corpus::CorpusOptions {
            seed: 51,
            days: 2,
            until: crate::helpers::until(),
        },
    );
    let mut expected_plays = 0i64;
    let mut expected_automatic = 0i64;
    for _ in 0..12 {
        let r = MatchRecord::from_proto(corpus.next_record()).unwrap();
        for a in &r.actions {
            if matches!(a.action, ActionKind::Play { .. }) {
                expected_plays += 1;
                expected_automatic += i64::from(a.automatic);
            }
        }
        sqlx::query(
            "INSERT INTO matches (match_id, room_id, ranked, settings, seats, seed, actions,
                                  rounds, final_totals, basra_counts, winner_side, end_reason,
                                  started_at, ended_at, recorded_at)
             VALUES ($1, $2, false, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, now())",
        )
        .bind(&r.match_id)
        .bind(&r.room_id)
        .bind(sqlx::types::Json(&r.settings))
        .bind(sqlx::types::Json(&r.seats))
        .bind(r.seed.as_slice())
        .bind(sqlx::types::Json(&r.actions))
        .bind(sqlx::types::Json(&r.rounds))
        .bind(sqlx::types::Json(&r.final_totals))
        .bind(sqlx::types::Json(&r.basra_counts))
        .bind(r.winner_side.map(i16::from))
        .bind(r.end_reason.as_str())
        .bind(r.started_at)
        .bind(r.ended_at)
        .execute(&pool)
        .await
        .unwrap();
    }
    let before = scalar(&pool, "SELECT sum(plays)::BIGINT FROM analyst.matches").await;
    assert_eq!(before, expected_plays);

    apply(
        &pool,
        migrations
            .iter()
            .filter(|m| m.version >= BINARY_LOG_MIGRATION),
    )
    .await;
    assert_eq!(
        scalar(&pool, "SELECT sum(plays)::BIGINT FROM matches").await,
        expected_plays
    );
    assert_eq!(
        scalar(&pool, "SELECT sum(plays)::BIGINT FROM analyst.matches").await,
        expected_plays
    );
    assert_eq!(
        scalar(
            &pool,
            "SELECT sum(automatic_plays)::BIGINT FROM analyst.matches"
        )
        .await,
        expected_automatic
    );
    let out = temp_dir("migrated");
    let summary = export(&pool, &options(&out)).await.unwrap();
    assert_eq!((summary.matches, summary.failures.len()), (12, 0));
    assert_eq!(rows(&out, Table::Plays), expected_plays);
    assert_eq!(
        count_true(&out, Table::Plays, "automatic"),
        expected_automatic
    );
    std::fs::remove_dir_all(&out).unwrap();
}
