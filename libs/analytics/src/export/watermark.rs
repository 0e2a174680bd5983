//! The watermark of incremental exports, and how a run that was interrupted is resumed
//! without duplicate rows.
//!
//! - `_watermark.json` holds the `recorded_at` bound of the last complete run; the next
//!   run exports the records recorded from there on. It is written last, when every file
//!   of the run is in place.
//! - `_pending.json` holds the run in progress: the watermark it started from and the
//!   bound it reads up to. It is written before the first file. A run that finds a
//!   pending run starting from the same watermark (the previous run was interrupted)
//!   reads up to at least that bound, so it exports a superset of the interrupted run's
//!   records, under the same file names (named by the watermark they start from, see
//!   [`run_name`]): every file the interrupted run left is overwritten, none is added
//!   beside it.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::output::Output;

const WATERMARK: &str = "_watermark.json";
const PENDING: &str = "_pending.json";

/// Where the last incremental run stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Watermark {
    /// Records recorded before this are exported.
    pub recorded_before: DateTime<Utc>,
}

/// An incremental run that started and has not finished (or was interrupted).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pending {
    /// The watermark it started from (none for the first run).
    pub recorded_from: Option<DateTime<Utc>>,
    /// The bound it reads up to.
    pub recorded_before: DateTime<Utc>,
}

async fn read<T: for<'de> Deserialize<'de>>(
    output: &Output,
    name: &str,
) -> anyhow::Result<Option<T>> {
    match output.read(name).await? {
        Some(bytes) => serde_json::from_slice(&bytes).map(Some).map_err(|err| {
            anyhow::anyhow!(
                "{} is not what the export wrote: {err}",
                output.location(name)
            )
        }),
        None => Ok(None),
    }
}

impl Watermark {
    /// The watermark of `output`, if a run left one.
    pub async fn read(output: &Output) -> anyhow::Result<Option<Watermark>> {
        read(output, WATERMARK).await
    }

    /// Stores it in `output` (whole: never half a file).
    pub async fn write(&self, output: &Output) -> anyhow::Result<()> {
        output
            .write(WATERMARK, serde_json::to_vec_pretty(self)?)
            .await
    }
}

impl Pending {
    /// The run in progress in `output`, if any.
    pub async fn read(output: &Output) -> anyhow::Result<Option<Pending>> {
        read(output, PENDING).await
    }

    /// Stores it in `output`.
    pub async fn write(&self, output: &Output) -> anyhow::Result<()> {
        output
            .write(PENDING, serde_json::to_vec_pretty(self)?)
            .await
    }

    /// Removes it, once the watermark has moved past it.
    pub async fn clear(output: &Output) -> anyhow::Result<()> {
        output.remove(PENDING).await
    }
}

/// The bound an incremental run from `from` reads up to: `now` (already less the settle
/// time), never before `from`, and never before what an interrupted run from the same
/// watermark read (`pending`), so a resumed run covers every record it did.
pub fn resumed_bound(
    from: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
    pending: Option<Pending>,
) -> DateTime<Utc> {
    let mut bound = now;
    if let Some(from) = from {
        bound = bound.max(from);
    }
    if let Some(pending) = pending.filter(|p| p.recorded_from == from) {
        bound = bound.max(pending.recorded_before);
    }
    bound
}

/// A slice's bounds by end time: `--since`, `--until`.
pub type SliceBounds = (Option<DateTime<Utc>>, Option<DateTime<Utc>>);

/// The name of a run's files (`part-<run>.parquet`), a function of what it exports so
/// that running it again writes the same names: an incremental run is named by the
/// watermark it starts from (`from-start` for the first), a slice by its bounds.
pub fn run_name(incremental_from: Option<DateTime<Utc>>, slice: Option<SliceBounds>) -> String {
    let stamp = |t: DateTime<Utc>| t.format("%Y%m%dT%H%M%S%6fZ").to_string();
    match slice {
        Some((since, until)) => format!(
            "slice-{}-{}",
            since.map_or_else(|| "start".to_owned(), stamp),
            until.map_or_else(|| "end".to_owned(), stamp)
        ),
        None => format!(
            "from-{}",
            incremental_from.map_or_else(|| "start".to_owned(), stamp)
        ),
    }
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone as _;

    use super::*;

    fn t(hour: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 12, 4, hour, 0, 0).unwrap()
    }

    #[test]
    fn a_resumed_run_reads_at_least_as_far_as_the_interrupted_one() {
        // No interrupted run: up to now.
        assert_eq!(resumed_bound(Some(t(1)), t(5), None), t(5));
        // Interrupted from the same watermark, with a later bound (a shorter settle
        // time then): at least that far.
        let pending = Pending {
            recorded_from: Some(t(1)),
            recorded_before: t(7),
        };
        assert_eq!(resumed_bound(Some(t(1)), t(5), Some(pending)), t(7));
        assert_eq!(resumed_bound(Some(t(1)), t(9), Some(pending)), t(9));
        // A pending run from another watermark is stale (it finished and moved it).
        assert_eq!(resumed_bound(Some(t(7)), t(8), Some(pending)), t(8));
        // The first run, interrupted.
        let first = Pending {
            recorded_from: None,
            recorded_before: t(6),
        };
        assert_eq!(resumed_bound(None, t(3), Some(first)), t(6));
        // Never before the watermark (a settle time longer than since the last run).
        assert_eq!(resumed_bound(Some(t(4)), t(2), None), t(4));
    }

    #[test]
    fn runs_are_named_by_what_they_export() {
        assert_eq!(run_name(None, None), "from-start");
        assert_eq!(run_name(Some(t(1)), None), "from-20261204T010000000000Z");
        assert_eq!(
            run_name(None, Some((Some(t(0)), None))),
            "slice-20261204T000000000000Z-end"
        );
        assert_eq!(run_name(None, Some((None, None))), "slice-start-end");
    }
}
