//! [`EventStore`] on PostgreSQL (`[events] database_url`). Queries use sqlx's runtime
//! API (building needs no database); the migrations of `services/matchmaking/migrations`
//! are embedded and run at start ([`PgEventStore::migrate`]). A rule-checking call locks
//! the event's row (`SELECT … FOR UPDATE`) for its transaction: registrations of one
//! event are serialised, so the cap holds across replicas.

use std::time::Duration;

use sqlx::Row;
use sqlx::postgres::{PgPool, PgPoolOptions, PgRow};

use super::{Cancelled, EventStore, Page, PhaseChange, Ruled};
use crate::clock::Millis;
use crate::error::{MatchmakingError, Result};
use crate::events::model::{
    self, EntryRecord, EntryStatus, EventRecord, Phase, Refusal, ResultRecord,
};

/// The migrations of `services/matchmaking/migrations`, embedded at build time.
pub(super) static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations");

/// Events in PostgreSQL.
#[derive(Debug, Clone)]
pub struct PgEventStore {
    pool: PgPool,
}

const EVENT_COLUMNS: &str = "id, series_id, request_id, spec, starts_at_ms, phase, cancel_reason, \
     champion, current_round, rounds_total, ended_at_ms, version, registered, starting_told";
const ENTRY_COLUMNS: &str = "event_id, user_id, rating, status, registered_at_ms, rank, points";

impl PgEventStore {
    /// A store on an existing pool (tests get one per fresh database).
    pub fn new(pool: PgPool) -> PgEventStore {
        PgEventStore { pool }
    }

    /// A store whose pool connects on first use (at most `max_connections`): starts
    /// while PostgreSQL is down and answers UNAVAILABLE until it is back.
    pub fn connect_lazy(url: &str, max_connections: u32) -> Result<PgEventStore> {
        let pool = PgPoolOptions::new()
            .max_connections(max_connections)
            .acquire_timeout(Duration::from_secs(1))
            .connect_lazy(url)?;
        Ok(PgEventStore { pool })
    }

    /// Applies the pending migrations (ignoring versions this build does not know: a
    /// newer release's, or another service's in a shared database).
    pub async fn migrate(&self) -> Result<()> {
        let mut migrator =
            sqlx::migrate::Migrator::with_migrations(MIGRATOR.iter().cloned().collect());
        migrator.set_ignore_missing(true);
        migrator
            .run(&self.pool)
            .await
            .map_err(|e| MatchmakingError::Corrupt(format!("events database migration: {e}")))
    }
}

fn event_row(row: &PgRow) -> Result<EventRecord> {
    let phase: String = row.try_get("phase")?;
    let spec: String = row.try_get("spec")?;
    Ok(EventRecord {
        id: row.try_get("id")?,
        series_id: row.try_get("series_id")?,
        request_id: row.try_get("request_id")?,
        spec: serde_json::from_str(&spec)?,
        starts_at_ms: row.try_get("starts_at_ms")?,
        phase: Phase::parse(&phase)
            .ok_or_else(|| MatchmakingError::Corrupt(format!("event phase {phase:?}")))?,
        cancel_reason: row.try_get("cancel_reason")?,
        champion: row.try_get("champion")?,
        current_round: row.try_get::<i32, _>("current_round")? as u32,
        rounds_total: row.try_get::<i32, _>("rounds_total")? as u32,
        ended_at_ms: row.try_get("ended_at_ms")?,
        version: row.try_get::<i64, _>("version")? as u64,
        registered: row.try_get::<i32, _>("registered")? as u32,
        starting_told: row.try_get("starting_told")?,
    })
}

fn entry_row(row: &PgRow) -> Result<EntryRecord> {
    let status: String = row.try_get("status")?;
    Ok(EntryRecord {
        event_id: row.try_get("event_id")?,
        user_id: row.try_get("user_id")?,
        rating: row.try_get("rating")?,
        status: EntryStatus::parse(&status)
            .ok_or_else(|| MatchmakingError::Corrupt(format!("entry status {status:?}")))?,
        registered_at_ms: row.try_get("registered_at_ms")?,
        rank: row.try_get::<i32, _>("rank")? as u32,
        points: row.try_get::<i32, _>("points")? as u32,
    })
}

fn result_row(row: &PgRow) -> Result<ResultRecord> {
    Ok(ResultRecord {
        event_id: row.try_get("event_id")?,
        match_key: row.try_get("match_key")?,
        room_id: row.try_get("room_id")?,
        players: [row.try_get("player_a")?, row.try_get("player_b")?],
        winner: row.try_get("winner")?,
        outcome: row.try_get("outcome")?,
        recorded_at_ms: row.try_get("recorded_at_ms")?,
        match_id: row
            .try_get::<Option<String>, _>("match_id")?
            .unwrap_or_default(),
    })
}

type Tx<'a> = sqlx::Transaction<'a, sqlx::Postgres>;

/// The event's row, locked for the transaction.
async fn locked_event(tx: &mut Tx<'_>, id: &str) -> Result<Option<EventRecord>> {
    let row = sqlx::query(sqlx::AssertSqlSafe(format!(
        "SELECT {EVENT_COLUMNS} FROM event_events WHERE id = $1 FOR UPDATE"
    )))
    .bind(id)
    .fetch_optional(&mut **tx)
    .await?;
    row.as_ref().map(event_row).transpose()
}

async fn entry_in(tx: &mut Tx<'_>, event_id: &str, user: &str) -> Result<Option<EntryRecord>> {
    let row = sqlx::query(sqlx::AssertSqlSafe(format!(
        "SELECT {ENTRY_COLUMNS} FROM event_entries WHERE event_id = $1 AND user_id = $2"
    )))
    .bind(event_id)
    .bind(user)
    .fetch_optional(&mut **tx)
    .await?;
    row.as_ref().map(entry_row).transpose()
}

/// Stores `event`, or answers the one stored with its request id.
async fn insert_event(conn: &mut sqlx::PgConnection, event: EventRecord) -> Result<EventRecord> {
    let inserted = sqlx::query(sqlx::AssertSqlSafe(format!(
        "INSERT INTO event_events ({EVENT_COLUMNS}) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14) \
         ON CONFLICT (request_id) DO NOTHING"
    )))
    .bind(&event.id)
    .bind(&event.series_id)
    .bind(&event.request_id)
    .bind(serde_json::to_string(&event.spec)?)
    .bind(event.starts_at_ms)
    .bind(event.phase.as_str())
    .bind(&event.cancel_reason)
    .bind(&event.champion)
    .bind(event.current_round as i32)
    .bind(event.rounds_total as i32)
    .bind(event.ended_at_ms)
    .bind(event.version as i64)
    .bind(event.registered as i32)
    .bind(event.starting_told)
    .execute(&mut *conn)
    .await?;
    if inserted.rows_affected() == 1 {
        return Ok(event);
    }
    let row = sqlx::query(sqlx::AssertSqlSafe(format!(
        "SELECT {EVENT_COLUMNS} FROM event_events WHERE request_id = $1"
    )))
    .bind(&event.request_id)
    .fetch_one(&mut *conn)
    .await?;
    event_row(&row)
}

/// The series' lock for the transaction: its first occurrence's row (`series_id`), taken
/// before any other event row, by the making of an occurrence and by a cancellation.
async fn lock_series(tx: &mut Tx<'_>, series_id: &str) -> Result<()> {
    sqlx::query("SELECT 1 FROM event_events WHERE id = $1 FOR UPDATE")
        .bind(series_id)
        .fetch_optional(&mut **tx)
        .await?;
    Ok(())
}

async fn bump(tx: &mut Tx<'_>, event_id: &str, registered_by: i32) -> Result<()> {
    sqlx::query(
        "UPDATE event_events SET version = version + 1, registered = registered + $2 WHERE id = $1",
    )
    .bind(event_id)
    .bind(registered_by)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

async fn set_status(tx: &mut Tx<'_>, entry: &EntryRecord) -> Result<()> {
    sqlx::query(
        "UPDATE event_entries SET status = $3, rank = $4, points = $5 WHERE event_id = $1 AND user_id = $2",
    )
    .bind(&entry.event_id)
    .bind(&entry.user_id)
    .bind(entry.status.as_str())
    .bind(entry.rank as i32)
    .bind(entry.points as i32)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

fn page<T>(mut rows: Vec<T>, offset: u64, limit: u32) -> Page<T> {
    let more = rows.len() > limit as usize;
    rows.truncate(limit as usize);
    let next = offset + rows.len() as u64;
    (rows, more.then_some(next))
}

#[tonic::async_trait]
impl EventStore for PgEventStore {
    async fn create(&self, event: EventRecord) -> Result<EventRecord> {
        let mut conn = self.pool.acquire().await?;
        insert_event(&mut conn, event).await
    }

    async fn create_occurrence(
        &self,
        after: &str,
        next: EventRecord,
    ) -> Result<Option<EventRecord>> {
        let mut tx = self.pool.begin().await?;
        let series = next.series_id.clone().unwrap_or_else(|| after.to_owned());
        lock_series(&mut tx, &series).await?;
        let phase: Option<String> =
            sqlx::query_scalar("SELECT phase FROM event_events WHERE id = $1")
                .bind(after)
                .fetch_optional(&mut *tx)
                .await?;
        if phase.as_deref() != Some(Phase::Upcoming.as_str()) {
            return Ok(None);
        }
        let event = insert_event(&mut tx, next).await?;
        tx.commit().await?;
        Ok(Some(event))
    }

    async fn get(&self, id: &str) -> Result<Option<EventRecord>> {
        let row = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT {EVENT_COLUMNS} FROM event_events WHERE id = $1"
        )))
        .bind(id)
        .fetch_optional(&self.pool)
        .await?;
        row.as_ref().map(event_row).transpose()
    }

    async fn version(&self, id: &str) -> Result<Option<u64>> {
        let version: Option<i64> =
            sqlx::query_scalar("SELECT version FROM event_events WHERE id = $1")
                .bind(id)
                .fetch_optional(&self.pool)
                .await?;
        Ok(version.map(|v| v as u64))
    }

    async fn list(
        &self,
        phases: &[Phase],
        ascending: bool,
        offset: u64,
        limit: u32,
    ) -> Result<Page<EventRecord>> {
        let phases: Vec<&str> = phases.iter().map(|p| p.as_str()).collect();
        let order = if ascending { "ASC" } else { "DESC" };
        let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT {EVENT_COLUMNS} FROM event_events WHERE phase = ANY($1) \
             ORDER BY starts_at_ms {order}, id {order} OFFSET $2 LIMIT $3"
        )))
        .bind(&phases)
        .bind(offset as i64)
        .bind(i64::from(limit) + 1)
        .fetch_all(&self.pool)
        .await?;
        let rows = rows.iter().map(event_row).collect::<Result<Vec<_>>>()?;
        Ok(page(rows, offset, limit))
    }

    async fn due(&self, before: Millis, notice_horizon_ms: Millis) -> Result<Vec<EventRecord>> {
        let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT {EVENT_COLUMNS} FROM event_events \
             WHERE phase = 'running' OR (phase = 'upcoming' AND (starts_at_ms <= $1 \
               OR (NOT starting_told AND starts_at_ms <= $2))) \
             ORDER BY starts_at_ms"
        )))
        .bind(before)
        .bind(before.saturating_add(notice_horizon_ms))
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(event_row).collect()
    }

    async fn mark_starting_told(&self, event_id: &str) -> Result<bool> {
        let done = sqlx::query(
            "UPDATE event_events SET starting_told = true \
             WHERE id = $1 AND phase = 'upcoming' AND NOT starting_told",
        )
        .bind(event_id)
        .execute(&self.pool)
        .await?;
        Ok(done.rows_affected() == 1)
    }

    async fn register(
        &self,
        event_id: &str,
        user: &str,
        rating: i32,
        now: Millis,
    ) -> Ruled<EntryRecord> {
        let mut tx = self.pool.begin().await?;
        let Some(event) = locked_event(&mut tx, event_id).await? else {
            return Ok(Err(Refusal::NotRegistered));
        };
        let existing = entry_in(&mut tx, event_id, user).await?;
        if let Err(refusal) = model::admit(&event, existing.as_ref(), rating, now) {
            return Ok(Err(refusal));
        }
        let status = model::registered_status(&event);
        let entry = match existing {
            Some(mut paused) => {
                paused.status = status;
                set_status(&mut tx, &paused).await?;
                bump(&mut tx, event_id, 0).await?;
                paused
            }
            None => {
                let entry = EntryRecord {
                    event_id: event_id.to_owned(),
                    user_id: user.to_owned(),
                    rating,
                    status,
                    registered_at_ms: now,
                    rank: 0,
                    points: 0,
                };
                sqlx::query(sqlx::AssertSqlSafe(format!(
                    "INSERT INTO event_entries ({ENTRY_COLUMNS}) VALUES ($1, $2, $3, $4, $5, 0, 0)"
                )))
                .bind(event_id)
                .bind(user)
                .bind(rating)
                .bind(status.as_str())
                .bind(now)
                .execute(&mut *tx)
                .await?;
                bump(&mut tx, event_id, 1).await?;
                entry
            }
        };
        tx.commit().await?;
        Ok(Ok(entry))
    }

    async fn withdraw(&self, event_id: &str, user: &str) -> Ruled<Option<EntryRecord>> {
        let mut tx = self.pool.begin().await?;
        let Some(event) = locked_event(&mut tx, event_id).await? else {
            return Ok(Err(Refusal::NotRegistered));
        };
        let Some(mut entry) = entry_in(&mut tx, event_id, user).await? else {
            return Ok(Err(Refusal::NotRegistered));
        };
        let answer = match model::withdrawal(&event, &entry) {
            Err(refusal) => return Ok(Err(refusal)),
            Ok(None) => {
                sqlx::query("DELETE FROM event_entries WHERE event_id = $1 AND user_id = $2")
                    .bind(event_id)
                    .bind(user)
                    .execute(&mut *tx)
                    .await?;
                bump(&mut tx, event_id, -1).await?;
                None
            }
            Ok(Some(status)) => {
                if entry.status != status {
                    entry.status = status;
                    set_status(&mut tx, &entry).await?;
                    bump(&mut tx, event_id, 0).await?;
                }
                Some(entry)
            }
        };
        tx.commit().await?;
        Ok(Ok(answer))
    }

    async fn check_in(&self, event_id: &str, user: &str, now: Millis) -> Ruled<EntryRecord> {
        let mut tx = self.pool.begin().await?;
        let Some(event) = locked_event(&mut tx, event_id).await? else {
            return Ok(Err(Refusal::NotRegistered));
        };
        let Some(mut entry) = entry_in(&mut tx, event_id, user).await? else {
            return Ok(Err(Refusal::NotRegistered));
        };
        if let Err(refusal) = model::check_in(&event, &entry, now) {
            return Ok(Err(refusal));
        }
        if entry.status != EntryStatus::CheckedIn {
            entry.status = EntryStatus::CheckedIn;
            set_status(&mut tx, &entry).await?;
            bump(&mut tx, event_id, 0).await?;
        }
        tx.commit().await?;
        Ok(Ok(entry))
    }

    async fn entry(&self, event_id: &str, user: &str) -> Result<Option<EntryRecord>> {
        let row = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT {ENTRY_COLUMNS} FROM event_entries WHERE event_id = $1 AND user_id = $2"
        )))
        .bind(event_id)
        .bind(user)
        .fetch_optional(&self.pool)
        .await?;
        row.as_ref().map(entry_row).transpose()
    }

    async fn entries(&self, event_id: &str) -> Result<Vec<EntryRecord>> {
        let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT {ENTRY_COLUMNS} FROM event_entries WHERE event_id = $1 \
             ORDER BY registered_at_ms, user_id"
        )))
        .bind(event_id)
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(entry_row).collect()
    }

    async fn update_entries(&self, entries: &[EntryRecord]) -> Result<()> {
        let mut tx = self.pool.begin().await?;
        // One statement for them all (an event's start sets thousands), not one each.
        let column = |f: fn(&EntryRecord) -> String| entries.iter().map(f).collect::<Vec<_>>();
        let number =
            |f: fn(&EntryRecord) -> u32| entries.iter().map(|e| f(e) as i32).collect::<Vec<_>>();
        sqlx::query(
            "UPDATE event_entries AS n SET status = u.status, rank = u.rank, points = u.points \
             FROM UNNEST($1::TEXT[], $2::TEXT[], $3::TEXT[], $4::INTEGER[], $5::INTEGER[]) \
               AS u (event_id, user_id, status, rank, points) \
             WHERE n.event_id = u.event_id AND n.user_id = u.user_id",
        )
        .bind(column(|e| e.event_id.clone()))
        .bind(column(|e| e.user_id.clone()))
        .bind(column(|e| e.status.as_str().to_owned()))
        .bind(number(|e| e.rank))
        .bind(number(|e| e.points))
        .execute(&mut *tx)
        .await?;
        let mut events: Vec<&str> = entries.iter().map(|e| e.event_id.as_str()).collect();
        events.sort_unstable();
        events.dedup();
        for event in events {
            bump(&mut tx, event, 0).await?;
        }
        tx.commit().await?;
        Ok(())
    }

    async fn entries_of(&self, user: &str, offset: u64, limit: u32) -> Result<Page<EntryRecord>> {
        let rows = sqlx::query(
            "SELECT n.event_id, n.user_id, n.rating, n.status, n.registered_at_ms, n.rank, n.points \
             FROM event_entries n JOIN event_events e ON e.id = n.event_id \
             WHERE n.user_id = $1 ORDER BY e.starts_at_ms DESC, n.event_id OFFSET $2 LIMIT $3",
        )
        .bind(user)
        .bind(offset as i64)
        .bind(i64::from(limit) + 1)
        .fetch_all(&self.pool)
        .await?;
        let rows = rows.iter().map(entry_row).collect::<Result<Vec<_>>>()?;
        Ok(page(rows, offset, limit))
    }

    async fn change_phase(&self, event_id: &str, change: &PhaseChange) -> Result<bool> {
        let done = sqlx::query(
            "UPDATE event_events SET phase = $3, current_round = $4, rounds_total = $5, \
             champion = $6, cancel_reason = $7, ended_at_ms = $8, version = version + 1 \
             WHERE id = $1 AND phase = $2",
        )
        .bind(event_id)
        .bind(change.from.as_str())
        .bind(change.to.as_str())
        .bind(change.current_round as i32)
        .bind(change.rounds_total as i32)
        .bind(&change.champion)
        .bind(&change.cancel_reason)
        .bind(change.ended_at_ms)
        .execute(&self.pool)
        .await?;
        Ok(done.rows_affected() == 1)
    }

    async fn cancel(
        &self,
        event_id: &str,
        reason: &str,
        now: Millis,
        series: bool,
    ) -> Ruled<Cancelled> {
        let mut tx = self.pool.begin().await?;
        // The series' lock first, as the making of an occurrence takes it.
        let series_id: Option<Option<String>> =
            sqlx::query_scalar("SELECT series_id FROM event_events WHERE id = $1")
                .bind(event_id)
                .fetch_optional(&mut *tx)
                .await?;
        let Some(series_id) = series_id else {
            return Ok(Err(Refusal::NotRegistered));
        };
        if let Some(series_id) = &series_id {
            lock_series(&mut tx, series_id).await?;
        }
        let Some(mut event) = locked_event(&mut tx, event_id).await? else {
            return Ok(Err(Refusal::NotRegistered));
        };
        let (cancel_it, ends_series) = match model::cancellation(&event, series) {
            Ok(decided) => decided,
            Err(refusal) => return Ok(Err(refusal)),
        };
        if cancel_it {
            sqlx::query(
                "UPDATE event_events SET phase = 'cancelled', cancel_reason = $2, \
                 ended_at_ms = $3, version = version + 1 WHERE id = $1",
            )
            .bind(event_id)
            .bind(reason)
            .bind(now)
            .execute(&mut *tx)
            .await?;
            event.cancel(reason, now);
        }
        let mut others = Vec::new();
        if ends_series {
            let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
                "UPDATE event_events SET phase = 'cancelled', cancel_reason = $3, \
                 ended_at_ms = $4, version = version + 1 \
                 WHERE series_id = $1 AND id <> $2 AND phase = 'upcoming' \
                 RETURNING {EVENT_COLUMNS}"
            )))
            .bind(&event.series_id)
            .bind(event_id)
            .bind(reason)
            .bind(now)
            .fetch_all(&mut *tx)
            .await?;
            others = rows.iter().map(event_row).collect::<Result<Vec<_>>>()?;
            others.sort_by_key(|e| e.starts_at_ms);
        }
        tx.commit().await?;
        Ok(Ok(Cancelled {
            event,
            now: cancel_it,
            series: others,
        }))
    }

    async fn record_result(&self, result: &ResultRecord) -> Result<bool> {
        let mut tx = self.pool.begin().await?;
        let done = sqlx::query(
            "INSERT INTO event_results (event_id, match_key, room_id, player_a, player_b, winner, \
             outcome, recorded_at_ms, match_id) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, NULLIF($9, '')) \
             ON CONFLICT (event_id, match_key) DO NOTHING",
        )
        .bind(&result.event_id)
        .bind(&result.match_key)
        .bind(&result.room_id)
        .bind(&result.players[0])
        .bind(&result.players[1])
        .bind(&result.winner)
        .bind(&result.outcome)
        .bind(result.recorded_at_ms)
        .bind(&result.match_id)
        .execute(&mut *tx)
        .await?;
        let recorded = done.rows_affected() == 1;
        if recorded {
            bump(&mut tx, &result.event_id, 0).await?;
        }
        tx.commit().await?;
        Ok(recorded)
    }

    async fn results(&self, event_id: &str) -> Result<Vec<ResultRecord>> {
        let rows = sqlx::query(
            "SELECT event_id, match_key, room_id, player_a, player_b, winner, outcome, \
             recorded_at_ms, match_id FROM event_results WHERE event_id = $1 ORDER BY seq",
        )
        .bind(event_id)
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(result_row).collect()
    }
}
