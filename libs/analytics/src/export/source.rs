//! Reading match records from PostgreSQL: one streamed query over
//! `analyst.match_records` (a view the `basra_analyst` role may read), in the order of
//! the day partitions (ended_at, then match id), so a day's files are written and closed
//! before the next day starts. The action log comes in `basra_records::action_log`'s
//! binary form, or as JSON for rows recorded before it ([`StoredLog`]).

use basra_engine::Settings;
use basra_records::stored::StoredLog;
use basra_records::{ActionRecord, BasraCounts, RoundRecord};
use chrono::{DateTime, Utc};
use sqlx::postgres::PgRow;
use sqlx::types::Json;
use sqlx::{PgPool, Row};
use tokio_stream::{Stream, StreamExt};

pub use basra_records::stored::{SeatClient, SeatInfo, SeatRating, StoredMatch};

/// A row that could not be decoded: its match id and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Undecodable {
    /// The match.
    pub match_id: String,
    /// What was wrong.
    pub error: String,
}

/// Which records to read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Selection {
    /// Recorded at or after this (the watermark), if set.
    pub recorded_from: Option<DateTime<Utc>>,
    /// Recorded strictly before this.
    pub recorded_before: DateTime<Utc>,
    /// Ended at or after this, if set.
    pub since: Option<DateTime<Utc>>,
    /// Ended strictly before this, if set.
    pub until: Option<DateTime<Utc>>,
}

const FILTER: &str = "WHERE ($1::TIMESTAMPTZ IS NULL OR recorded_at >= $1) AND recorded_at < $2
                        AND ($3::TIMESTAMPTZ IS NULL OR ended_at >= $3)
                        AND ($4::TIMESTAMPTZ IS NULL OR ended_at < $4)";

/// How many records `selection` holds (for the progress bar).
pub async fn count(pool: &PgPool, selection: &Selection) -> Result<u64, sqlx::Error> {
    let query = format!("SELECT count(*) FROM analyst.match_records {FILTER}");
    let n: i64 = sqlx::query_scalar(sqlx::AssertSqlSafe(query))
        .bind(selection.recorded_from)
        .bind(selection.recorded_before)
        .bind(selection.since)
        .bind(selection.until)
        .fetch_one(pool)
        .await?;
    Ok(n.max(0) as u64)
}

/// The records of `selection`, streamed in (ended_at, match_id) order. A database error
/// ends the stream with `Err`; a row that does not decode is `Ok(Err(..))`.
pub fn stream<'a>(
    pool: &'a PgPool,
    selection: &Selection,
) -> impl Stream<Item = Result<Result<StoredMatch, Undecodable>, sqlx::Error>> + 'a {
    let query = format!(
        "SELECT match_id, room_id, ranked, settings, seats, seed, actions, rounds, final_totals,
                basra_counts, winner_side, end_reason, started_at, ended_at, recorded_at,
                rating_changes, action_log, seat_clients
         FROM analyst.match_records {FILTER}
         ORDER BY ended_at, match_id"
    );
    sqlx::query(sqlx::AssertSqlSafe(query))
        .bind(selection.recorded_from)
        .bind(selection.recorded_before)
        .bind(selection.since)
        .bind(selection.until)
        .fetch(pool)
        .map(|row| row.map(|row| decode(&row)))
}

fn decode(row: &PgRow) -> Result<StoredMatch, Undecodable> {
    let match_id: String = row.try_get("match_id").unwrap_or_default();
    decode_fields(row).map_err(|error| Undecodable {
        match_id,
        error: error.to_string(),
    })
}

/// The action log: binary for rows recorded since the binary log, JSON before.
fn actions(row: &PgRow) -> Result<Vec<ActionRecord>, sqlx::Error> {
    let log = match row.try_get::<Option<&[u8]>, _>("action_log")? {
        Some(bytes) => StoredLog::Binary(bytes),
        None => StoredLog::Json(row.try_get::<Json<Vec<ActionRecord>>, _>("actions")?.0),
    };
    log.decode().map_err(|e| sqlx::Error::Decode(Box::new(e)))
}

fn decode_fields(row: &PgRow) -> Result<StoredMatch, sqlx::Error> {
    let seed: Vec<u8> = row.try_get("seed")?;
    let seed: [u8; 32] = seed
        .as_slice()
        .try_into()
        .map_err(|_| sqlx::Error::Decode("the seed is not 32 bytes".into()))?;
    Ok(StoredMatch {
        match_id: row.try_get("match_id")?,
        room_id: row.try_get("room_id")?,
        ranked: row.try_get("ranked")?,
        settings: row.try_get::<Json<Settings>, _>("settings")?.0,
        seats: row.try_get::<Json<Vec<SeatInfo>>, _>("seats")?.0,
        seed,
        actions: actions(row)?,
        rounds: row.try_get::<Json<Vec<RoundRecord>>, _>("rounds")?.0,
        final_totals: row.try_get::<Json<Vec<u32>>, _>("final_totals")?.0,
        basra_counts: row.try_get::<Json<Vec<BasraCounts>>, _>("basra_counts")?.0,
        winner_side: row
            .try_get::<Option<i16>, _>("winner_side")?
            .and_then(|w| u8::try_from(w).ok()),
        end_reason: row.try_get("end_reason")?,
        started_at: row.try_get("started_at")?,
        ended_at: row.try_get("ended_at")?,
        recorded_at: row.try_get("recorded_at")?,
        ratings: row
            .try_get::<Option<Json<Vec<SeatRating>>>, _>("rating_changes")?
            .map(|r| r.0)
            .unwrap_or_default(),
        clients: row
            .try_get::<Option<Json<Vec<SeatClient>>>, _>("seat_clients")?
            .map(|c| c.0)
            .unwrap_or_default(),
    })
}
