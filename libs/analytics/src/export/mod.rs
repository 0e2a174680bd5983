//! `basra analytics export`: match records from PostgreSQL to Parquet, partitioned by day,
//! with a per-play table derived by replaying each record.
//!
//! - [`source`]: the streamed query over `analyst.match_records`.
//! - [`replay`]: plays from seed + action log, checked against the record.
//! - [`tables`]: the Arrow schemas (the public contract) and row builders.
//! - [`sink`]: day-partitioned Parquet files, renamed into place when complete.
//! - [`watermark`]: where the last incremental run stopped.
//!
//! Three stages run at once, joined by bounded channels: a task reads and decodes the
//! records, a thread replays them, another writes Parquet. At most [`CHANNEL_RECORDS`]
//! records wait in each channel, so memory does not grow with the number of matches, and
//! records keep their order (the day partitions rely on it).

pub mod replay;
pub mod sink;
pub mod source;
pub mod tables;
pub mod watermark;

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use chrono::{DateTime, Utc};
use sqlx::PgPool;
use tokio_stream::StreamExt as _;

use self::sink::PartitionedSink;
use self::source::{Selection, StoredMatch};
use self::tables::TABLES;
use self::watermark::Watermark;

/// Records waiting for the next stage, in each of the two channels.
pub const CHANNEL_RECORDS: usize = 256;

/// What to export and where.
#[derive(Debug, Clone)]
pub struct ExportOptions {
    /// The output directory.
    pub out: PathBuf,
    /// Only matches that ended at or after this. With `since` or `until` the run is a
    /// slice: it neither reads nor moves the watermark.
    pub since: Option<DateTime<Utc>>,
    /// Only matches that ended before this.
    pub until: Option<DateTime<Utc>>,
    /// Records younger than this (by recorded_at) wait for the next run, so a recording
    /// that commits late is not skipped by the watermark.
    pub settle: Duration,
    /// Show a progress bar (only ever on a terminal).
    pub progress: bool,
}

/// A record left out of the export, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// The match.
    pub match_id: String,
    /// Why it was skipped.
    pub error: String,
}

/// What a run did.
#[derive(Debug, Clone)]
pub struct ExportSummary {
    /// Records exported.
    pub matches: u64,
    /// Rows written per table, in [`TABLES`] order.
    pub rows: [u64; 4],
    /// Records that failed to decode or replay (skipped, listed in `_failures/`).
    pub failures: Vec<Failure>,
    /// The files written.
    pub files: Vec<PathBuf>,
    /// The records covered: recorded in `[from, before)`.
    pub recorded_from: Option<DateTime<Utc>>,
    /// See `recorded_from`.
    pub recorded_before: DateTime<Utc>,
    /// Wall time.
    pub elapsed: Duration,
}

impl ExportSummary {
    /// One line for people.
    pub fn describe(&self) -> String {
        let rows: Vec<String> = TABLES
            .iter()
            .zip(self.rows)
            .map(|(t, n)| format!("{} {n}", t.name()))
            .collect();
        let rate = self.matches as f64 / self.elapsed.as_secs_f64().max(1e-9);
        format!(
            "exported {} matches in {:.1}s ({rate:.0}/s): rows {}; {} files; {} skipped",
            self.matches,
            self.elapsed.as_secs_f64(),
            rows.join(", "),
            self.files.len(),
            self.failures.len()
        )
    }
}

enum Item {
    Record(Box<StoredMatch>),
    Undecodable(Failure),
}

/// A record after the replay stage: its plays, or why it is skipped.
enum Replayed {
    Plays(Box<StoredMatch>, Vec<replay::PlayRow>),
    Skipped(Failure),
}

/// Runs one export into `options.out`.
pub async fn export(pool: &PgPool, options: &ExportOptions) -> anyhow::Result<ExportSummary> {
    let started = Instant::now();
    std::fs::create_dir_all(&options.out)
        .with_context(|| format!("cannot create {}", options.out.display()))?;
    let slice = options.since.is_some() || options.until.is_some();
    let now: DateTime<Utc> = sqlx::query_scalar("SELECT now()").fetch_one(pool).await?;
    let recorded_before =
        now - chrono::Duration::from_std(options.settle).context("settle is too long")?;
    let recorded_from = if slice {
        None
    } else {
        Watermark::read(&options.out)?.map(|w| w.recorded_before)
    };
    let selection = Selection {
        recorded_from,
        recorded_before,
        since: options.since,
        until: options.until,
    };
    let run = format!(
        "{}-{}",
        recorded_before.format("%Y%m%dT%H%M%S%6fZ"),
        &uuid::Uuid::now_v7().simple().to_string()[24..]
    );

    let total = source::count(pool, &selection).await?;
    let bar = crate::progress::matches_bar(options.progress, total);

    let (tx, mut rx) = tokio::sync::mpsc::channel::<Item>(CHANNEL_RECORDS);
    let (replayed_tx, replayed_rx) = std::sync::mpsc::sync_channel::<Replayed>(CHANNEL_RECORDS);
    // Replaying is pure engine work: on its own thread it overlaps the database read
    // and the Parquet encoding. It stops when the writer does (its sends fail).
    let replayer = tokio::task::spawn_blocking(move || {
        while let Some(item) = rx.blocking_recv() {
            let replayed = match item {
                Item::Record(record) => match replay::plays(&record) {
                    Ok(plays) => Replayed::Plays(record, plays),
                    Err(err) => Replayed::Skipped(Failure {
                        match_id: record.match_id.clone(),
                        error: err.to_string(),
                    }),
                },
                Item::Undecodable(failure) => Replayed::Skipped(failure),
            };
            if replayed_tx.send(replayed).is_err() {
                return;
            }
        }
    });
    let out = options.out.clone();
    let writer_run = run.clone();
    let writer_bar = bar.clone();
    let writer = tokio::task::spawn_blocking(move || {
        let mut sink = PartitionedSink::new(&out, &writer_run);
        let mut failures = Vec::new();
        let mut matches = 0u64;
        while let Ok(replayed) = replayed_rx.recv() {
            writer_bar.inc(1);
            match replayed {
                Replayed::Plays(record, plays) => {
                    if let Err(err) = sink.push(&record, &plays) {
                        sink.abandon();
                        return Err(anyhow::anyhow!("writing Parquet: {err}"));
                    }
                    matches += 1;
                }
                Replayed::Skipped(failure) => failures.push(failure),
            }
        }
        let (files, rows) = sink
            .finish()
            .map_err(|err| anyhow::anyhow!("writing Parquet: {err}"))?;
        Ok((matches, rows, failures, files))
    });

    let mut records = std::pin::pin!(source::stream(pool, &selection));
    let mut read_error = None;
    while let Some(row) = records.next().await {
        let item = match row {
            Ok(Ok(record)) => Item::Record(Box::new(record)),
            Ok(Err(bad)) => Item::Undecodable(Failure {
                match_id: bad.match_id,
                error: format!("cannot decode the record: {}", bad.error),
            }),
            Err(err) => {
                read_error = Some(err);
                break;
            }
        };
        if tx.send(item).await.is_err() {
            break; // the writer stopped; its error is reported below
        }
    }
    drop(tx);
    let written = writer.await.context("the export writer panicked")?;
    replayer.await.context("the export replayer panicked")?;
    bar.finish_and_clear();
    if let Some(err) = read_error {
        if let Ok((_, _, _, files)) = &written {
            for file in files {
                let _ = std::fs::remove_file(file);
            }
        }
        return Err(anyhow::Error::new(err).context("reading match records"));
    }
    let (matches, rows, failures, files) = written?;

    write_failures(&options.out, &run, &failures)?;
    if !slice {
        Watermark { recorded_before }.write(&options.out)?;
    }
    Ok(ExportSummary {
        matches,
        rows,
        failures,
        files,
        recorded_from,
        recorded_before,
        elapsed: started.elapsed(),
    })
}

fn write_failures(out: &Path, run: &str, failures: &[Failure]) -> anyhow::Result<()> {
    if failures.is_empty() {
        return Ok(());
    }
    let dir = out.join("_failures");
    std::fs::create_dir_all(&dir)?;
    let mut file =
        std::io::BufWriter::new(std::fs::File::create(dir.join(format!("{run}.jsonl")))?);
    for f in failures {
        let line = serde_json::json!({ "match_id": f.match_id, "error": f.error });
        writeln!(file, "{line}")?;
    }
    file.flush()?;
    Ok(())
}
