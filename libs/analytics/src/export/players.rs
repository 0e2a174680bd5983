//! The exported `players` table: one row per player from `analyst.players` (accounts,
//! guests included, and deleted accounts under their anonymous key), with no personal
//! data. It describes players as they are now, not events, so it is not partitioned by
//! day: every run rewrites it whole, as `players/players.parquet` (replaced at once, so
//! a reader sees the old snapshot or the new one; never a duplicate row).
//!
//! The schema is a public contract (libs/analytics/README.md): columns are only ever
//! added at the end.

use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock};

use anyhow::Context as _;
use arrow_array::builder::{
    BooleanBuilder, Float64Builder, Int32Builder, StringBuilder, TimestampMicrosecondBuilder,
};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef, TimeUnit};
use chrono::{DateTime, Utc};
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::properties::WriterProperties;
use sqlx::{PgPool, Row as _};
use tokio_stream::StreamExt as _;

/// The table's file, relative to the export's root.
pub const FILE: &str = "players/players.parquet";

/// Rows per record batch.
const BATCH_ROWS: usize = 8_192;

fn time() -> DataType {
    DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into()))
}

/// The schema of `players`.
pub static SCHEMA: LazyLock<SchemaRef> = LazyLock::new(|| {
    Arc::new(Schema::new(vec![
        Field::new("user_id", DataType::Utf8, false),
        Field::new("signed_up_at", time(), true),
        Field::new("kind", DataType::Utf8, true),
        Field::new("upgraded_at", time(), true),
        Field::new("first_match_at", time(), true),
        Field::new("last_match_at", time(), true),
        Field::new("matches_played", DataType::Int32, false),
        Field::new("rating", DataType::Float64, true),
        Field::new("rating_deviation", DataType::Float64, true),
        Field::new("ranked_matches", DataType::Int32, true),
        Field::new("signup_platform", DataType::Utf8, true),
        Field::new("signup_app_version", DataType::Utf8, true),
        Field::new("last_platform", DataType::Utf8, true),
        Field::new("last_app_version", DataType::Utf8, true),
        Field::new("deleted", DataType::Boolean, false),
    ]))
});

const QUERY: &str = "SELECT user_id::TEXT AS user_id, signed_up_at, kind, upgraded_at,
        first_match_at, last_match_at, matches_played, rating, rating_deviation,
        ranked_matches, signup_platform, signup_app_version, last_platform,
        last_app_version, deleted
     FROM analyst.players
     ORDER BY user_id";

#[derive(Default)]
struct Builder {
    user_id: StringBuilder,
    signed_up_at: TimestampMicrosecondBuilder,
    kind: StringBuilder,
    upgraded_at: TimestampMicrosecondBuilder,
    first_match_at: TimestampMicrosecondBuilder,
    last_match_at: TimestampMicrosecondBuilder,
    matches_played: Int32Builder,
    rating: Float64Builder,
    rating_deviation: Float64Builder,
    ranked_matches: Int32Builder,
    signup_platform: StringBuilder,
    signup_app_version: StringBuilder,
    last_platform: StringBuilder,
    last_app_version: StringBuilder,
    deleted: BooleanBuilder,
    rows: usize,
}

fn micros(t: Option<DateTime<Utc>>) -> Option<i64> {
    t.map(|t| t.timestamp_micros())
}

impl Builder {
    fn push(&mut self, row: &sqlx::postgres::PgRow) -> Result<(), sqlx::Error> {
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

    fn finish(&mut self) -> RecordBatch {
        let utc = |b: &mut TimestampMicrosecondBuilder| -> ArrayRef {
            Arc::new(b.finish().with_timezone("UTC"))
        };
        let columns: Vec<ArrayRef> = vec![
            Arc::new(self.user_id.finish()),
            utc(&mut self.signed_up_at),
            Arc::new(self.kind.finish()),
            utc(&mut self.upgraded_at),
            utc(&mut self.first_match_at),
            utc(&mut self.last_match_at),
            Arc::new(self.matches_played.finish()),
            Arc::new(self.rating.finish()),
            Arc::new(self.rating_deviation.finish()),
            Arc::new(self.ranked_matches.finish()),
            Arc::new(self.signup_platform.finish()),
            Arc::new(self.signup_app_version.finish()),
            Arc::new(self.last_platform.finish()),
            Arc::new(self.last_app_version.finish()),
            Arc::new(self.deleted.finish()),
        ];
        self.rows = 0;
        RecordBatch::try_new(SCHEMA.clone(), columns).expect("the columns follow SCHEMA")
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
    let mut builder = Builder::default();
    let mut total = 0u64;
    let mut rows = sqlx::query(QUERY).fetch(pool);
    while let Some(row) = rows.next().await {
        builder
            .push(&row.context("reading analyst.players")?)
            .context("decoding analyst.players")?;
        total += 1;
        if builder.rows == BATCH_ROWS {
            writer.write(&builder.finish())?;
        }
    }
    if builder.rows > 0 {
        writer.write(&builder.finish())?;
    }
    writer.close()?;
    std::fs::rename(&temp, &path).with_context(|| format!("cannot write {}", path.display()))?;
    Ok((path, total))
}
