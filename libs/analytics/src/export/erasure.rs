//! Erasure: a deleted player is gone from the export within one export cycle.
//!
//! Deleting an account re-keys its seats, in the records the export reads, to an anonymous
//! key (services/accounts `deletion.rs`), but the `match_players` files an earlier run
//! wrote still name the old id. So every incremental run also does this:
//!
//! 1. Before it reads a record, it takes the keys of deleted accounts
//!    (`analyst.players WHERE deleted`): the files it writes itself show them. It reads
//!    `_erased.json`, the keys whose seats every file of the export already shows; the
//!    others are new deletions.
//! 2. For those, the seats they hold and the day each match ended
//!    (`analyst.match_players`): the only days whose `match_players` files can name an
//!    old id. The seat leads to the key; nothing leads from the key to the old id, here
//!    or anywhere.
//! 3. After its own files, it reads every other `match_players` file of those days and
//!    rewrites each where a seat names anyone but what the view shows: the new file is
//!    written aside and renamed over the old one (a directory) or uploaded under the same
//!    key (one PUT, or a multipart upload completed only when whole), so a reader sees the
//!    old file or the new one. Every other column, and the file's name, stay.
//! 4. It adds the keys to `_erased.json`.
//!
//! Interrupted anywhere, the next run finds the same keys missing from `_erased.json` and
//! checks the same files again: those already rewritten show the keys and are left alone,
//! the rest are rewritten. A deletion that commits while a run is reading may leave the
//! old id in that run's own files: the next run erases it. So the old id is gone from
//! every file once a run that started after the deletion has completed. Slices
//! (`--since`/`--until`) are copies made once: they are not erased (make them again).

use std::collections::{BTreeSet, HashMap};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context as _;
use arrow_array::builder::StringBuilder;
use arrow_array::{Array as _, RecordBatch, RecordBatchReader as _};
use chrono::{DateTime, NaiveDate, Utc};
use parquet::arrow::ArrowWriter;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use serde::{Deserialize, Serialize};
use sqlx::{PgPool, Row as _};
use uuid::Uuid;

use super::output::Output;
use super::sink;
use super::tables::{MatchPlayersColumns, Table};

/// The keys already erased, relative to the export's root.
pub const ERASED: &str = "_erased.json";

/// The anonymous keys of deleted accounts whose seats every file of the export shows
/// under the key (no file names their old id).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Erased {
    /// The pseudonymous player keys already erased from the files.
    pub keys: BTreeSet<Uuid>,
}

impl Erased {
    /// What `output` holds (nothing erased when it has no `_erased.json`: an export that
    /// has not seen a deletion, or one made before erasure was part of the export).
    pub async fn read(output: &Output) -> anyhow::Result<Erased> {
        match output.read(ERASED).await? {
            Some(bytes) => serde_json::from_slice(&bytes).with_context(|| {
                format!("{} is not what the export wrote", output.location(ERASED))
            }),
            None => Ok(Erased::default()),
        }
    }

    /// Stores it in `output` (whole).
    pub async fn write(&self, output: &Output) -> anyhow::Result<()> {
        output.write(ERASED, serde_json::to_vec(self)?).await
    }
}

/// The erasure a run owes, taken when it starts (step 1).
#[derive(Debug, Clone)]
pub struct Plan {
    deleted: BTreeSet<Uuid>,
    erased: Erased,
}

impl Plan {
    /// The keys of deleted accounts now, and those `output` has erased already.
    pub async fn take(pool: &PgPool, output: &Output) -> anyhow::Result<Plan> {
        let deleted: Vec<Uuid> =
            sqlx::query_scalar("SELECT user_id FROM analyst.players WHERE deleted")
                .fetch_all(pool)
                .await
                .context("reading the deleted players of analyst.players")?;
        Ok(Plan {
            deleted: deleted.into_iter().collect(),
            erased: Erased::read(output).await?,
        })
    }

    /// The deletions not yet erased.
    pub fn owed(&self) -> Vec<Uuid> {
        self.deleted
            .difference(&self.erased.keys)
            .copied()
            .collect()
    }
}

/// What erasure did in a run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ErasureSummary {
    /// Deletions erased by this run (keys new since the last complete erasure).
    pub deletions: usize,
    /// The files it rewrote (paths, or URLs in object storage).
    pub files: Vec<String>,
    /// The seats whose user id it replaced with the key.
    pub seats: u64,
}

/// The seats of deleted accounts: for each match, its re-keyed seats and the key the
/// views show there.
#[derive(Debug, Default)]
pub struct Rekeyed {
    seats: HashMap<String, Vec<(i16, String)>>,
    days: BTreeSet<NaiveDate>,
}

impl Rekeyed {
    /// The seats of `keys` (step 2).
    pub async fn load(pool: &PgPool, keys: &[Uuid]) -> anyhow::Result<Rekeyed> {
        let rows = sqlx::query(
            "SELECT match_id, seat, user_id::TEXT AS user_id, ended_at
             FROM analyst.match_players WHERE user_id = ANY($1)",
        )
        .bind(keys)
        .fetch_all(pool)
        .await
        .context("reading the seats of deleted players")?;
        let mut rekeyed = Rekeyed::default();
        for row in rows {
            let ended_at: DateTime<Utc> = row.try_get("ended_at")?;
            rekeyed.insert(
                row.try_get("match_id")?,
                row.try_get("seat")?,
                row.try_get("user_id")?,
                ended_at.date_naive(),
            );
        }
        Ok(rekeyed)
    }

    /// Adds a seat of match `match_id`, which ended on `day`, shown under `key`.
    pub fn insert(&mut self, match_id: String, seat: i16, key: String, day: NaiveDate) {
        self.seats.entry(match_id).or_default().push((seat, key));
        self.days.insert(day);
    }

    /// The UTC days the matches ended: the day partitions to check.
    pub fn days(&self) -> impl Iterator<Item = NaiveDate> + '_ {
        self.days.iter().copied()
    }

    /// The key `seat` of `match_id` shows, if a deleted player sat there.
    pub fn key_of(&self, match_id: &str, seat: i16) -> Option<&str> {
        self.seats
            .get(match_id)?
            .iter()
            .find(|(s, _)| *s == seat)
            .map(|(_, key)| key.as_str())
    }

    /// `batch`, a batch of `match_players`, with each re-keyed seat showing its key; and
    /// how many seats that changed.
    pub fn apply(&self, batch: &RecordBatch) -> anyhow::Result<(RecordBatch, u64)> {
        let columns = MatchPlayersColumns::new(batch);
        let (match_ids, seats, user_ids) =
            (columns.match_id()?, columns.seat()?, columns.user_id()?);
        let mut rekeyed = StringBuilder::with_capacity(batch.num_rows(), batch.num_rows() * 36);
        let mut changed = 0u64;
        for row in 0..batch.num_rows() {
            let old = user_ids.is_valid(row).then(|| user_ids.value(row));
            let new = self.key_of(match_ids.value(row), seats.value(row)).or(old);
            if new != old {
                changed += 1;
            }
            rekeyed.append_option(new);
        }
        if changed == 0 {
            return Ok((batch.clone(), 0));
        }
        let mut columns = batch.columns().to_vec();
        columns[batch.schema().index_of("user_id")?] = Arc::new(rekeyed.finish());
        Ok((RecordBatch::try_new(batch.schema(), columns)?, changed))
    }
}

/// Erases the deletions `plan` owes from every `match_players` file of `output` but this
/// run's (`part-<run>.parquet`, written with them already), then notes them in
/// `_erased.json` (steps 2 to 4). `staging` holds the files of object storage while
/// they are rewritten.
pub async fn erase(
    pool: &PgPool,
    output: &Output,
    plan: Plan,
    run: &str,
    staging: &Path,
) -> anyhow::Result<ErasureSummary> {
    let owed = plan.owed();
    let mut summary = ErasureSummary {
        deletions: owed.len(),
        ..ErasureSummary::default()
    };
    if owed.is_empty() {
        return Ok(summary);
    }
    let rekeyed = Arc::new(Rekeyed::load(pool, &owed).await?);
    let own = format!("part-{run}.parquet");
    for day in rekeyed.days() {
        let dir = format!(
            "{}/date={}",
            Table::MatchPlayers.name(),
            day.format("%Y-%m-%d")
        );
        for name in output.list(&dir).await? {
            if !name.starts_with("part-") || !name.ends_with(".parquet") || name == own {
                continue;
            }
            let relative = format!("{dir}/{name}");
            let seats = rewrite(output, &relative, &rekeyed, staging).await?;
            if seats > 0 {
                summary.files.push(output.location(&relative));
                summary.seats += seats;
            }
        }
    }
    let mut erased = plan.erased;
    erased.keys.extend(owed);
    erased.write(output).await?;
    Ok(summary)
}

/// Rewrites the file `relative` of `output` if a seat in it is re-keyed; answers how
/// many seats changed (0: the file is left as it was).
async fn rewrite(
    output: &Output,
    relative: &str,
    rekeyed: &Arc<Rekeyed>,
    staging: &Path,
) -> anyhow::Result<u64> {
    match output {
        Output::Dir(dir) => {
            let source = dir.join(relative);
            let temp = aside(&source);
            let changed = rekey_file(&source, &temp, rekeyed).await?;
            if changed > 0 {
                std::fs::rename(&temp, &source)
                    .with_context(|| format!("cannot replace {}", source.display()))?;
            } else {
                let _ = std::fs::remove_file(&temp);
            }
            Ok(changed)
        }
        Output::Bucket(bucket) => {
            let local = staging.join("erasure").join(relative);
            let parent = local.parent().expect("a file under the staging directory");
            std::fs::create_dir_all(parent)
                .with_context(|| format!("cannot create {}", parent.display()))?;
            bucket.download(relative, &local).await?;
            let temp = aside(&local);
            let changed = rekey_file(&local, &temp, rekeyed).await;
            let uploaded = match changed {
                Ok(changed) if changed > 0 => {
                    bucket.upload(&temp, relative).await.map(|()| changed)
                }
                other => other,
            };
            let _ = std::fs::remove_file(&local);
            let _ = std::fs::remove_file(&temp);
            uploaded
        }
    }
}

/// Where the rewritten `file` is written before it replaces it.
fn aside(file: &Path) -> PathBuf {
    let name = file.file_name().and_then(|n| n.to_str()).unwrap_or("file");
    file.with_file_name(format!(".{name}.erasure.tmp"))
}

/// Writes `source`, a `match_players` file, to `target` with the re-keyed seats showing
/// their keys (the file's own schema, encoded as the export encodes the table); answers
/// how many seats changed. Parquet work is blocking: on a thread of the blocking pool.
async fn rekey_file(source: &Path, target: &Path, rekeyed: &Arc<Rekeyed>) -> anyhow::Result<u64> {
    let (source, target, rekeyed) = (source.to_owned(), target.to_owned(), rekeyed.clone());
    tokio::task::spawn_blocking(move || -> anyhow::Result<u64> {
        let open =
            File::open(&source).with_context(|| format!("cannot open {}", source.display()))?;
        let reader = ParquetRecordBatchReaderBuilder::try_new(open)
            .with_context(|| format!("{} is not Parquet", source.display()))?
            .build()?;
        let created =
            File::create(&target).with_context(|| format!("cannot create {}", target.display()))?;
        let mut writer = ArrowWriter::try_new(
            created,
            reader.schema(),
            Some(sink::writer_properties(Table::MatchPlayers)),
        )?;
        let mut changed = 0;
        for batch in reader {
            let (batch, seats) = rekeyed.apply(&batch?)?;
            changed += seats;
            writer.write(&batch)?;
        }
        writer.close()?;
        Ok(changed)
    })
    .await
    .context("the erasure rewrite panicked")?
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::cast::AsArray as _;
    use arrow_array::{Int16Array, StringArray};
    use arrow_schema::{DataType, Field, Schema};

    use super::*;

    fn batch(rows: &[(&str, i16, Option<&str>)]) -> RecordBatch {
        let schema = Arc::new(Schema::new(vec![
            Field::new("match_id", DataType::Utf8, false),
            Field::new("seat", DataType::Int16, false),
            Field::new("user_id", DataType::Utf8, true),
        ]));
        RecordBatch::try_new(
            schema,
            vec![
                Arc::new(StringArray::from_iter_values(rows.iter().map(|r| r.0))),
                Arc::new(Int16Array::from_iter_values(rows.iter().map(|r| r.1))),
                Arc::new(StringArray::from_iter(rows.iter().map(|r| r.2))),
            ],
        )
        .unwrap()
    }

    #[test]
    fn only_the_re_keyed_seats_change_to_the_key_the_views_show() {
        let day = NaiveDate::from_ymd_opt(2026, 11, 30).unwrap();
        let mut rekeyed = Rekeyed::default();
        rekeyed.insert("m1".into(), 1, "key-a".into(), day);
        rekeyed.insert("m2".into(), 0, "key-a".into(), day);
        let before = batch(&[
            ("m1", 0, Some("alice")),
            ("m1", 1, Some("old-id")),
            ("m2", 0, Some("old-id")),
            ("m2", 1, None),
            ("m3", 0, Some("old-id-elsewhere")),
        ]);
        let (after, changed) = rekeyed.apply(&before).unwrap();
        assert_eq!(changed, 2);
        assert_eq!(
            after
                .column(2)
                .as_string::<i32>()
                .iter()
                .collect::<Vec<_>>(),
            [
                Some("alice"),
                Some("key-a"),
                Some("key-a"),
                None,
                Some("old-id-elsewhere")
            ]
        );
        assert_eq!(after.column(0), before.column(0));
        // Applied again: nothing left to change.
        assert_eq!(rekeyed.apply(&after).unwrap().1, 0);
        assert_eq!(rekeyed.days().collect::<Vec<_>>(), [day]);
    }

    #[test]
    fn owed_deletions_are_those_not_yet_erased() {
        let (a, b) = (Uuid::now_v7(), Uuid::now_v7());
        let plan = Plan {
            deleted: [a, b].into(),
            erased: Erased { keys: [a].into() },
        };
        assert_eq!(plan.owed(), [b]);
    }
}
