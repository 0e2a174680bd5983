//! The account itself on PostgreSQL: its password (ChangePassword) and its deletion
//! (DeleteAccount), each one transaction.

use basra_platform::client_info::ClientInfo;
use chrono::{DateTime, Utc};
use sqlx::{PgPool, Row};
use uuid::Uuid;

use crate::deletion::{DELETED_NAME, deleted_id_hash};
use crate::domain::DeviceId;
use crate::error::{AccountsError, Result};
use crate::store::{AccountRecords, DeletedAccount, HistoryCursor, PlayedMatch, RatingChange};

pub(super) async fn password_hash(pool: &PgPool, user_id: Uuid) -> Result<Option<String>> {
    Ok(
        sqlx::query_scalar("SELECT password_hash FROM password_credentials WHERE user_id = $1")
            .bind(user_id)
            .fetch_optional(pool)
            .await?,
    )
}

pub(super) async fn change_password(
    pool: &PgPool,
    user_id: Uuid,
    password_hash: &str,
    now: DateTime<Utc>,
) -> Result<u64> {
    let mut tx = pool.begin().await?;
    let updated = sqlx::query(
        "UPDATE password_credentials SET password_hash = $2, updated_at = $3 WHERE user_id = $1",
    )
    .bind(user_id)
    .bind(password_hash)
    .bind(now)
    .execute(&mut *tx)
    .await?
    .rows_affected();
    if updated == 0 {
        return Err(AccountsError::UserNotFound);
    }
    let revoked = sqlx::query(
        "UPDATE refresh_tokens SET revoked_at = $2
         WHERE user_id = $1 AND revoked_at IS NULL AND used_at IS NULL AND expires_at > $2",
    )
    .bind(user_id)
    .bind(now)
    .execute(&mut *tx)
    .await?
    .rows_affected();
    tx.commit().await?;
    Ok(revoked)
}

pub(super) async fn device_user(pool: &PgPool, device: &DeviceId) -> Result<Option<Uuid>> {
    Ok(
        sqlx::query_scalar("SELECT user_id FROM device_identities WHERE device_id = $1")
            .bind(device.as_str())
            .fetch_optional(pool)
            .await?,
    )
}

pub(super) async fn delete_account(
    pool: &PgPool,
    user_id: Uuid,
    anonymous_key: Uuid,
    now: DateTime<Utc>,
) -> Result<DeletedAccount> {
    let mut tx = pool.begin().await?;
    // The rating row is the lock RecordMatch takes on a player: a recording of this
    // player's match either commits first (and its rows are re-keyed below) or waits and
    // then finds the account gone (and records the seat as a placeholder).
    sqlx::query("SELECT 1 FROM ratings WHERE user_id = $1 FOR UPDATE")
        .bind(user_id)
        .fetch_optional(&mut *tx)
        .await?;
    let found = sqlx::query("SELECT 1 FROM users WHERE id = $1 FOR UPDATE")
        .bind(user_id)
        .fetch_optional(&mut *tx)
        .await?;
    if found.is_none() {
        return Err(AccountsError::UserNotFound);
    }
    let linked: Vec<Uuid> = sqlx::query_scalar(
        "SELECT to_id FROM friend_links WHERE from_id = $1 AND link <> 'block'
         UNION
         SELECT from_id FROM friend_links WHERE to_id = $1 AND link <> 'block'",
    )
    .bind(user_id)
    .fetch_all(&mut *tx)
    .await?;
    let matches = sqlx::query(
        "UPDATE matches m
            SET seats = (SELECT jsonb_agg(CASE WHEN s ->> 'user_id' = $1::TEXT
                                               THEN s || jsonb_build_object('user_id', $2::TEXT,
                                                                            'display_name', $3::TEXT)
                                               ELSE s END
                                          ORDER BY (s ->> 'seat')::INTEGER)
                         FROM jsonb_array_elements(m.seats) AS s)
          WHERE m.match_id IN (SELECT match_id FROM match_players WHERE user_id = $1)",
    )
    .bind(user_id)
    .bind(anonymous_key)
    .bind(DELETED_NAME)
    .execute(&mut *tx)
    .await?
    .rows_affected();
    sqlx::query("UPDATE match_players SET user_id = $2 WHERE user_id = $1")
        .bind(user_id)
        .bind(anonymous_key)
        .execute(&mut *tx)
        .await?;
    // Devices, password, refresh tokens, rating, friend links (both ways), request
    // counts and name changes go with the row (ON DELETE CASCADE).
    sqlx::query("DELETE FROM users WHERE id = $1")
        .bind(user_id)
        .execute(&mut *tx)
        .await?;
    sqlx::query(
        "INSERT INTO deleted_accounts (id_hash, deleted_at) VALUES ($1, $2)
         ON CONFLICT (id_hash) DO NOTHING",
    )
    .bind(deleted_id_hash(user_id).as_slice())
    .bind(now)
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(DeletedAccount { linked, matches })
}

/// Of `ids`, those of deleted accounts.
pub(super) async fn deleted_among(pool: &PgPool, ids: &[Uuid]) -> Result<Vec<Uuid>> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let hashes: Vec<Vec<u8>> = ids.iter().map(|id| deleted_id_hash(*id).to_vec()).collect();
    let rows = sqlx::query("SELECT id_hash FROM deleted_accounts WHERE id_hash = ANY($1)")
        .bind(&hashes)
        .fetch_all(pool)
        .await?;
    let found: Vec<Vec<u8>> = rows
        .iter()
        .map(|r| r.try_get::<Vec<u8>, _>("id_hash"))
        .collect::<std::result::Result<_, _>>()?;
    Ok(ids
        .iter()
        .zip(&hashes)
        .filter(|(_, h)| found.contains(h))
        .map(|(id, _)| *id)
        .collect())
}

pub(super) async fn account_records(pool: &PgPool, user_id: Uuid) -> Result<AccountRecords> {
    let devices = sqlx::query(
        "SELECT device_id, created_at FROM device_identities WHERE user_id = $1 ORDER BY created_at",
    )
    .bind(user_id)
    .fetch_all(pool)
    .await?
    .iter()
    .map(|row| Ok((row.try_get("device_id")?, row.try_get("created_at")?)))
    .collect::<Result<Vec<_>>>()?;
    let password_updated_at =
        sqlx::query_scalar("SELECT updated_at FROM password_credentials WHERE user_id = $1")
            .bind(user_id)
            .fetch_optional(pool)
            .await?;
    let sessions = sqlx::query(
        "SELECT token_hash, family_id, user_id, issued_at, expires_at, used_at, revoked_at
         FROM refresh_tokens WHERE user_id = $1 ORDER BY issued_at, token_hash",
    )
    .bind(user_id)
    .fetch_all(pool)
    .await?
    .iter()
    .map(super::token_from_row)
    .collect::<Result<Vec<_>>>()?;
    let name_changes = sqlx::query_scalar(
        "SELECT changed_at FROM display_name_changes WHERE user_id = $1 ORDER BY changed_at",
    )
    .bind(user_id)
    .fetch_all(pool)
    .await?;
    Ok(AccountRecords {
        devices,
        password_updated_at,
        sessions,
        name_changes,
    })
}

pub(super) async fn played_matches(
    pool: &PgPool,
    user_id: Uuid,
    after: Option<HistoryCursor>,
    limit: u32,
) -> Result<Vec<PlayedMatch>> {
    use basra_records::stored::StoredLog;
    use basra_records::{
        ActionRecord, BasraCounts, EndReason, MatchRecord, RoundRecord, SeatRecord,
    };
    use sqlx::types::Json;

    let rows = sqlx::query(
        "SELECT m.match_id, m.room_id, m.ranked, m.settings, m.seats, m.seed, m.action_log,
                m.actions, m.rounds, m.final_totals, m.basra_counts, m.winner_side,
                m.end_reason, m.started_at, m.ended_at,
                p.seat, p.rating_before, p.rating_after, p.deviation_after,
                p.client_platform, p.client_app_version
         FROM match_players p JOIN matches m ON m.match_id = p.match_id
         WHERE p.user_id = $1
           AND ($2::TIMESTAMPTZ IS NULL OR (p.ended_at, p.match_id) < ($2, $3))
         ORDER BY p.ended_at DESC, p.match_id DESC
         LIMIT $4",
    )
    .bind(user_id)
    .bind(after.as_ref().map(|c| c.ended_at))
    .bind(after.as_ref().map(|c| c.match_id.as_str()))
    .bind(i64::from(limit))
    .fetch_all(pool)
    .await?;
    rows.iter()
        .map(|row| {
            let seat = u8::try_from(row.try_get::<i16, _>("seat")?).unwrap_or(u8::MAX);
            let binary: Option<Vec<u8>> = row.try_get("action_log")?;
            let json: Option<Json<Vec<ActionRecord>>> = row.try_get("actions")?;
            let log = match (&binary, json) {
                (Some(bytes), _) => StoredLog::Binary(bytes),
                (None, Some(actions)) => StoredLog::Json(actions.0),
                (None, None) => StoredLog::Json(Vec::new()),
            };
            let actions = log
                .decode()
                .map_err(|e| AccountsError::Internal(format!("stored action log: {e}")))?;
            let seed: Vec<u8> = row.try_get("seed")?;
            let end_reason: String = row.try_get("end_reason")?;
            let rating_change = match row.try_get::<Option<f64>, _>("rating_after")? {
                Some(rating_after) => Some(RatingChange {
                    user_id,
                    seat,
                    rating_before: row
                        .try_get::<Option<f64>, _>("rating_before")?
                        .unwrap_or_default(),
                    rating_after,
                    deviation_after: row
                        .try_get::<Option<f64>, _>("deviation_after")?
                        .unwrap_or_default(),
                }),
                None => None,
            };
            // Written together (both or neither).
            let your_client = match (
                row.try_get::<Option<String>, _>("client_platform")?,
                row.try_get::<Option<String>, _>("client_app_version")?,
            ) {
                (Some(platform), Some(version)) => Some(ClientInfo { platform, version }),
                _ => None,
            };
            Ok(PlayedMatch {
                record: MatchRecord {
                    match_id: row.try_get("match_id")?,
                    room_id: row.try_get("room_id")?,
                    ranked: row.try_get("ranked")?,
                    settings: row
                        .try_get::<Json<basra_engine::Settings>, _>("settings")?
                        .0,
                    seats: row.try_get::<Json<Vec<SeatRecord>>, _>("seats")?.0,
                    seed: seed.try_into().map_err(|_| {
                        AccountsError::Internal("stored seed is not 32 bytes".into())
                    })?,
                    actions,
                    rounds: row.try_get::<Json<Vec<RoundRecord>>, _>("rounds")?.0,
                    final_totals: row.try_get::<Json<Vec<u32>>, _>("final_totals")?.0,
                    basra_counts: row.try_get::<Json<Vec<BasraCounts>>, _>("basra_counts")?.0,
                    winner_side: row
                        .try_get::<Option<i16>, _>("winner_side")?
                        .and_then(|w| u8::try_from(w).ok()),
                    end_reason: EndReason::from_name(&end_reason).ok_or_else(|| {
                        AccountsError::Internal(format!("stored end reason {end_reason:?}"))
                    })?,
                    started_at: row.try_get("started_at")?,
                    ended_at: row.try_get("ended_at")?,
                },
                your_seat: seat,
                rating_change,
                your_client,
            })
        })
        .collect()
}

pub(super) async fn audit(pool: &PgPool, entry: crate::store::AuditEntry) -> Result<()> {
    sqlx::query(
        "INSERT INTO admin_audit (at, operator_id, action, target_id, reason, detail)
         VALUES ($1, $2, $3, $4, $5, $6)",
    )
    .bind(entry.at)
    .bind(entry.operator_id)
    .bind(&entry.action)
    .bind(entry.target_id)
    .bind(&entry.reason)
    .bind(&entry.detail)
    .execute(pool)
    .await?;
    Ok(())
}

pub(super) async fn audit_of(pool: &PgPool, target: Uuid) -> Result<Vec<crate::store::AuditEntry>> {
    sqlx::query(
        "SELECT at, operator_id, action, target_id, reason, detail FROM admin_audit
         WHERE target_id = $1 ORDER BY at, id",
    )
    .bind(target)
    .fetch_all(pool)
    .await?
    .iter()
    .map(|row| {
        Ok(crate::store::AuditEntry {
            at: row.try_get("at")?,
            operator_id: row.try_get("operator_id")?,
            action: row.try_get("action")?,
            target_id: row.try_get("target_id")?,
            reason: row.try_get("reason")?,
            detail: row.try_get("detail")?,
        })
    })
    .collect()
}
