//! Moderation on PostgreSQL ([`Moderation`]): an account's deletion (one transaction)
//! and the operators' audit table (`admin_audit`).

use chrono::{DateTime, Utc};
use sqlx::{PgPool, Row};
use uuid::Uuid;

use super::PgStore;
use crate::deletion::{DELETED_NAME, deleted_id_hash};
use crate::error::{AccountsError, Result};
use crate::store::{AuditEntry, DeletedAccount, Moderation};

impl Moderation for PgStore {
    async fn audit(&self, entry: AuditEntry) -> Result<()> {
        sqlx::query(
            "INSERT INTO admin_audit (at, operator_id, operator_name, action, target_id, reason, detail)
             VALUES ($1, $2, $3, $4, $5, $6, $7)",
        )
        .bind(entry.at)
        .bind(entry.operator_id)
        .bind(&entry.operator_name)
        .bind(&entry.action)
        .bind(entry.target_id)
        .bind(&entry.reason)
        .bind(&entry.detail)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    async fn audit_of(&self, target: Uuid) -> Result<Vec<AuditEntry>> {
        sqlx::query(
            "SELECT at, operator_id, operator_name, action, target_id, reason, detail FROM admin_audit
             WHERE target_id = $1 ORDER BY at, id",
        )
        .bind(target)
        .fetch_all(&self.pool)
        .await?
        .iter()
        .map(|row| {
            Ok(AuditEntry {
                at: row.try_get("at")?,
                operator_id: row.try_get("operator_id")?,
                operator_name: row.try_get("operator_name")?,
                action: row.try_get("action")?,
                target_id: row.try_get("target_id")?,
                reason: row.try_get("reason")?,
                detail: row.try_get("detail")?,
            })
        })
        .collect()
    }

    async fn delete_account(
        &self,
        user_id: Uuid,
        anonymous_key: Uuid,
        now: DateTime<Utc>,
    ) -> Result<DeletedAccount> {
        let mut tx = self.pool.begin().await?;
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
        // Other players' match result notices name the player in their seats: they go
        // (the notices naming them otherwise, and their own, go with the row below).
        sqlx::query(
            "DELETE FROM notices WHERE kind = 'match_result'
               AND position(convert_to($1::UUID::TEXT, 'UTF8') IN payload) > 0",
        )
        .bind(user_id)
        .execute(&mut *tx)
        .await?;
        // Devices, password, refresh tokens, rating, friend links (both ways), request
        // counts, name changes, notices to them and naming them go with the row (ON
        // DELETE CASCADE).
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
