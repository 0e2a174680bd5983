//! `basra analytics export`: match records from PostgreSQL to Parquet, partitioned by day,
//! with a per-play table derived by replaying each record.
//!
//! - [`source`]: the streamed query over `analyst.match_records`.
//! - [`replay`]: plays from seed + action log, checked against the record.
//! - [`tables`]: the Arrow schemas (the public contract), row builders and readers, each
//!   table's from one list of its columns ([`columns`]).
//! - [`sink`]: day-partitioned Parquet files, renamed into place when complete.
//! - [`players`]: the `players` table, a snapshot rewritten whole by every run.
//! - [`output`]: a directory or object storage ([`bucket`]: `s3://bucket/prefix`, the
//!   files staged locally and uploaded day by day).
//! - [`watermark`]: where the last incremental run stopped, and how an interrupted run is
//!   resumed without duplicate rows.
//! - [`erasure`]: a deleted player's old id gone from the files earlier runs wrote.
//! - [`staging`]: where files wait before they are in place (for object storage, a
//!   local directory cleared of what an earlier, killed run left).
//!
//! Three stages run at once, joined by bounded channels: a task reads and decodes the
//! records, a thread replays them, another writes Parquet. At most [`CHANNEL_RECORDS`]
//! records wait in each channel, so memory does not grow with the number of matches, and
//! records keep their order (the day partitions rely on it).

pub mod bucket;
pub mod columns;
pub mod erasure;
pub mod output;
pub mod players;
pub mod replay;
pub mod sink;
pub mod source;
pub mod staging;
pub mod tables;
pub mod watermark;

use std::io::Write as _;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use chrono::{DateTime, Utc};
use sqlx::PgPool;
use tokio_stream::StreamExt as _;

use self::bucket::Bucket;
use self::erasure::{ErasureSummary, Plan};
pub use self::output::Output;
use self::sink::PartitionedSink;
use self::source::{Selection, StoredMatch};
use self::staging::Staging;
use self::tables::TABLES;
use self::watermark::{Pending, Watermark};

/// Records waiting for the next stage, in each of the two channels.
pub const CHANNEL_RECORDS: usize = 256;

/// Finished files waiting for their upload to object storage (a day has four): what the
/// local staging directory holds at most, besides the day being written.
pub const UPLOAD_BACKLOG: usize = 8;

/// What to export and where.
#[derive(Debug, Clone)]
pub struct ExportOptions {
    /// Where the files go: a directory or object storage.
    pub out: Output,
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
    /// Rows of the `players` snapshot.
    pub players: u64,
    /// Records that failed to decode or replay (skipped, listed in `_failures/`).
    pub failures: Vec<Failure>,
    /// The files written (paths, or URLs in object storage).
    pub files: Vec<String>,
    /// The deletions erased from files earlier runs wrote, and the files rewritten.
    pub erasure: ErasureSummary,
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
            "exported {} matches in {:.1}s ({rate:.0}/s): rows {}; {} files; {} players; {} skipped; \
             erasure: {} files rewritten for {} deleted players",
            self.matches,
            self.elapsed.as_secs_f64(),
            rows.join(", "),
            self.files.len(),
            self.players,
            self.failures.len(),
            self.erasure.files.len(),
            self.erasure.deletions,
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
///
/// An incremental run writes `_pending.json` first, its Parquet files next (each
/// complete, under names that depend only on the watermark it starts from), then
/// rewrites the earlier files that still name a player deleted since ([`erasure`]),
/// then the `players` snapshot, the failures list, and the watermark last. Interrupted
/// anywhere, it is simply run again: the rerun exports a superset of the same records
/// under the same names, replacing what the interrupted run left ([`watermark`] says
/// why), so no row is ever there twice, and finishes the erasure.
pub async fn export(pool: &PgPool, options: &ExportOptions) -> anyhow::Result<ExportSummary> {
    let started = Instant::now();
    let output = &options.out;
    output.prepare()?;
    let staging = Staging::for_output(output)?;
    let slice = options.since.is_some() || options.until.is_some();
    let now: DateTime<Utc> = sqlx::query_scalar("SELECT now()").fetch_one(pool).await?;
    let settled = now - chrono::Duration::from_std(options.settle).context("settle is too long")?;
    let (recorded_from, recorded_before) = if slice {
        (None, settled)
    } else {
        let from = Watermark::read(output).await?.map(|w| w.recorded_before);
        let pending = Pending::read(output).await?;
        (from, watermark::resumed_bound(from, settled, pending))
    };
    let selection = Selection {
        recorded_from,
        recorded_before,
        since: options.since,
        until: options.until,
    };
    let run = watermark::run_name(
        recorded_from,
        slice.then_some((options.since, options.until)),
    );
    if !slice {
        Pending {
            recorded_from,
            recorded_before,
        }
        .write(output)
        .await?;
    }
    // Before any record is read: the files of this run show every key deleted by now.
    let erasure = if slice {
        None
    } else {
        Some(Plan::take(pool, output).await?)
    };

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
    let mut sink = PartitionedSink::new(staging.root(), &run);
    // Into object storage, each finished file is uploaded while the next day is written.
    let uploader = match output {
        Output::Bucket(bucket) => {
            let (closed_tx, closed_rx) = tokio::sync::mpsc::channel(UPLOAD_BACKLOG);
            sink = sink.hand_on(closed_tx);
            Some(tokio::spawn(upload_all(
                bucket.clone(),
                staging.root().to_owned(),
                closed_rx,
            )))
        }
        Output::Dir(_) => None,
    };
    let writer_bar = bar.clone();
    let writer = tokio::task::spawn_blocking(move || {
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
    let uploaded = match uploader {
        Some(uploader) => Some(uploader.await.context("the export uploader panicked")?),
        None => None,
    };
    bar.finish_and_clear();
    if let Some(err) = read_error {
        // A directory loses the run's files; objects already uploaded stay until the run
        // is made again, which replaces them (the watermark has not moved).
        if let (Ok((_, _, _, files)), Output::Dir(_)) = (&written, output) {
            for file in files {
                let _ = std::fs::remove_file(file);
            }
        }
        return Err(anyhow::Error::new(err).context("reading match records"));
    }
    // An upload that failed stopped the writer: its error is the one to report.
    let uploaded = uploaded.transpose()?;
    let (matches, rows, failures, written) = written?;
    let files = uploaded.unwrap_or_else(|| {
        written
            .iter()
            .map(|path| path.display().to_string())
            .collect()
    });
    let erasure = match erasure {
        Some(plan) => erasure::erase(pool, output, plan, &run, staging.root()).await?,
        None => ErasureSummary::default(),
    };
    let (players_file, players) = players::write(pool, staging.root()).await?;
    if let Output::Bucket(bucket) = output {
        bucket.upload(&players_file, players::FILE).await?;
    }
    drop(staging);

    write_failures(output, &run, &failures).await?;
    if !slice {
        Watermark { recorded_before }.write(output).await?;
        Pending::clear(output).await?;
    }
    Ok(ExportSummary {
        matches,
        rows,
        players,
        failures,
        files,
        erasure,
        recorded_from,
        recorded_before,
        elapsed: started.elapsed(),
    })
}

/// Uploads each finished file under its path relative to `root`, in the order they come,
/// and removes it locally; answers the objects' URLs.
async fn upload_all(
    bucket: Bucket,
    root: PathBuf,
    mut closed: tokio::sync::mpsc::Receiver<PathBuf>,
) -> anyhow::Result<Vec<String>> {
    let mut uploaded = Vec::new();
    while let Some(path) = closed.recv().await {
        let relative = path
            .strip_prefix(&root)
            .context("a finished file outside the staging directory")?
            .components()
            .map(|c| c.as_os_str().to_string_lossy())
            .collect::<Vec<_>>()
            .join("/");
        bucket.upload(&path, &relative).await?;
        let _ = tokio::fs::remove_file(&path).await;
        uploaded.push(bucket.location(&relative));
    }
    Ok(uploaded)
}

async fn write_failures(output: &Output, run: &str, failures: &[Failure]) -> anyhow::Result<()> {
    if failures.is_empty() {
        return Ok(());
    }
    let mut lines = Vec::new();
    for f in failures {
        let line = serde_json::json!({ "match_id": f.match_id, "error": f.error });
        writeln!(lines, "{line}")?;
    }
    output.write(&format!("_failures/{run}.jsonl"), lines).await
}
