//! The exported `players` table: one row per player from `analyst.players` (accounts,
//! guests included, and deleted accounts under their anonymous key), with no personal
//! data. It describes players as they are now, not events, so it is not partitioned by
//! day: every run rewrites it whole, as `players/players.parquet` (replaced at once, so
//! a reader sees the old snapshot or the new one; never a duplicate row).
//!
//! The schema is a public contract (libs/analytics/README.md): columns are only ever
//! added at the end.

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use chrono::{DateTime, Utc};
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::properties::WriterProperties;
use sqlx::{PgPool, Row as _};
use tokio_stream::StreamExt as _;

use super::columns::{Boolean, Float64, Int32, Nullable, Timestamp, Utf8, table};

/// The table's file, relative to the export's root.
pub const FILE: &str = "players/players.parquet";

/// Rows per record batch.
const BATCH_ROWS: usize = 8_192;

table! {
    "players";
    pub static SCHEMA;
    pub struct PlayersBuilder;
    pub struct PlayersColumns;
    columns {
        user_id: Utf8,
        signed_up_at: Nullable<Timestamp>,
        kind: Nullable<Utf8>,
        upgraded_at: Nullable<Timestamp>,
        first_match_at: Nullable<Timestamp>,
        last_match_at: Nullable<Timestamp>,
        matches_played: Int32,
        rating: Nullable<Float64>,
        rating_deviation: Nullable<Float64>,
        ranked_matches: Nullable<Int32>,
        signup_platform: Nullable<Utf8>,
        signup_app_version: Nullable<Utf8>,
        last_platform: Nullable<Utf8>,
        last_app_version: Nullable<Utf8>,
        deleted: Boolean,
    }
}

const QUERY: &str = "SELECT user_id::TEXT AS user_id, signed_up_at, kind, upgraded_at,
        first_match_at, last_match_at, matches_played, rating, rating_deviation,
        ranked_matches, signup_platform, signup_app_version, last_platform,
        last_app_version, deleted
     FROM analyst.players
     ORDER BY user_id";

fn micros(t: Option<DateTime<Utc>>) -> Option<i64> {
    t.map(|t| t.timestamp_micros())
}

impl PlayersBuilder {
    /// Adds a row of `analyst.players`.
    pub fn push(&mut self, row: &sqlx::postgres::PgRow) -> Result<(), sqlx::Error> {
        self.user_id
            .append_value(row.try_get::<String, _>("user_id")?);
        self.signed_up_at
            .append_option(micros(row.try_get("signed_up_at")?));
        self.kind
            .append_option(row.try_get::<Option<String>, _>("kind")?);
        self.upgraded_at
            .append_option(micros(row.try_get("upgraded_at")?));
        self.first_match_at
            .append_option(micros(row.try_get("first_match_at")?));
        self.last_match_at
            .append_option(micros(row.try_get("last_match_at")?));
        self.matches_played
            .append_value(row.try_get::<i32, _>("matches_played")?);
        self.rating
            .append_option(row.try_get::<Option<f64>, _>("rating")?);
        self.rating_deviation
            .append_option(row.try_get::<Option<f64>, _>("rating_deviation")?);
        self.ranked_matches
            .append_option(row.try_get::<Option<i32>, _>("ranked_matches")?);
        for (builder, column) in [
            (&mut self.signup_platform, "signup_platform"),
            (&mut self.signup_app_version, "signup_app_version"),
            (&mut self.last_platform, "last_platform"),
            (&mut self.last_app_version, "last_app_version"),
        ] {
            builder.append_option(row.try_get::<Option<String>, _>(column)?);
        }
        self.deleted
            .append_value(row.try_get::<bool, _>("deleted")?);
        self.rows += 1;
        Ok(())
    }
}

/// Writes the table under `root` (aside, then renamed into place); answers the file and
/// its rows.
pub async fn write(pool: &PgPool, root: &Path) -> anyhow::Result<(PathBuf, u64)> {
    let path = root.join(FILE);
    let dir = path.parent().expect("FILE has a directory");
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let temp = dir.join(".players.parquet.tmp");
    let props = WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .set_created_by("basra analytics export".to_owned())
        .build();
    let file = std::fs::File::create(&temp)
        .with_context(|| format!("cannot create {}", temp.display()))?;
    let mut writer = ArrowWriter::try_new(file, SCHEMA.clone(), Some(props))?;
    let mut builder = PlayersBuilder::default();
    let mut total = 0u64;
    let mut rows = sqlx::query(QUERY).fetch(pool);
    while let Some(row) = rows.next().await {
        builder
            .push(&row.context("reading analyst.players")?)
            .context("decoding analyst.players")?;
        total += 1;
        if builder.len() == BATCH_ROWS {
            writer.write(&builder.finish())?;
        }
    }
    if !builder.is_empty() {
        writer.write(&builder.finish())?;
    }
    writer.close()?;
    std::fs::rename(&temp, &path).with_context(|| format!("cannot write {}", path.display()))?;
    Ok((path, total))
}
