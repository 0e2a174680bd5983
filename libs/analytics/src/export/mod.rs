//! `basra analytics export`: match records from PostgreSQL to Parquet, partitioned by day,
//! with a per-play table derived by replaying each record.
//!
//! - [`source`]: the streamed query over `analyst.match_records`.
//! - [`replay`]: plays from seed + action log, checked against the record.
//! - [`tables`]: the Arrow schemas (the public contract) and row builders.
//! - [`sink`]: day-partitioned Parquet files, renamed into place when complete.
//! - [`watermark`]: where the last incremental run stopped.
//!
//! The database is read by one task and the records are replayed and written by a
//! blocking thread, joined by a bounded channel: at most [`CHANNEL_RECORDS`] decoded
//! records are in flight, so memory does not grow with the number of matches.

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

/// Decoded records waiting for the writer thread.
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
    let out = options.out.clone();
    let writer_run = run.clone();
    let writer_bar = bar.clone();
    let writer = tokio::task::spawn_blocking(move || {
        let mut sink = PartitionedSink::new(&out, &writer_run);
        let mut failures = Vec::new();
        let mut matches = 0u64;
        while let Some(item) = rx.blocking_recv() {
            writer_bar.inc(1);
            let record = match item {
                Item::Record(record) => record,
                Item::Undecodable(failure) => {
                    failures.push(failure);
                    continue;
                }
            };
            match replay::plays(&record) {
                Ok(plays) => {
                    if let Err(err) = sink.push(&record, &plays) {
                        sink.abandon();
                        return Err(anyhow::anyhow!("writing Parquet: {err}"));
                    }
                    matches += 1;
                }
                Err(err) => failures.push(Failure {
                    match_id: record.match_id.clone(),
                    error: err.to_string(),
                }),
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
