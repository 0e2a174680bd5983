//! Push devices and the outbox on PostgreSQL ([`Pushes`]): `push_devices`,
//! `push_outbox` (claimed with `FOR UPDATE SKIP LOCKED` and a lease) and `push_counts`
//! (migration `20261206000200_push.sql`).

use std::collections::BTreeMap;
use std::time::Duration;

use chrono::{DateTime, Utc};
use sqlx::Row;
use sqlx::postgres::PgRow;
use uuid::Uuid;

use super::PgStore;
use crate::error::{AccountsError, Result};
use crate::store::pushes::{
    ClaimedPush, Enqueued, MAX_PUSH_DEVICES, PushDevice, PushLimit, Pushes, QueuedPush,
    kind_from_name, platform_from_name, platform_name,
};

fn later(now: DateTime<Utc>, by: Duration) -> DateTime<Utc> {
    now + chrono::Duration::from_std(by).unwrap_or(chrono::Duration::MAX)
}

fn bad_row(what: &str) -> AccountsError {
    AccountsError::Internal(format!("push_outbox: a stored {what} is not known"))
}

fn device_from_row(row: &PgRow) -> Result<PushDevice> {
    let platform: String = row.try_get("platform")?;
    Ok(PushDevice {
        token: row.try_get("token")?,
        platform: platform_from_name(&platform).ok_or_else(|| bad_row("platform"))?,
        app_id: row.try_get("app_id")?,
        locale: row.try_get("locale")?,
        app_version: row.try_get("app_version")?,
        utc_offset_minutes: row.try_get("utc_offset_minutes")?,
        registered_at: row.try_get("registered_at")?,
    })
}

fn claimed_from_row(row: &PgRow) -> Result<ClaimedPush> {
    let kind: String = row.try_get("kind")?;
    let platform: String = row.try_get("platform")?;
    let data: sqlx::types::Json<BTreeMap<String, String>> = row.try_get("data")?;
    let attempts: i32 = row.try_get("attempts")?;
    Ok(ClaimedPush {
        push: QueuedPush {
            id: row.try_get("id")?,
            token: row.try_get("token")?,
            kind: kind_from_name(&kind).ok_or_else(|| bad_row("kind"))?,
            param: row.try_get("param")?,
            data: data.0,
            collapse_id: row.try_get("collapse_id")?,
            noticed_at: row.try_get("noticed_at")?,
            expires_at: row.try_get("expires_at")?,
            due_at: row.try_get("due_at")?,
        },
        user_id: row.try_get("user_id")?,
        platform: platform_from_name(&platform).ok_or_else(|| bad_row("platform"))?,
        app_id: row.try_get("app_id")?,
        locale: row.try_get("locale")?,
        attempts: attempts.max(0) as u32,
    })
}

impl Pushes for PgStore {
    async fn register_push_device(&self, user: Uuid, device: PushDevice) -> Result<bool> {
        let mut tx = self.pool.begin().await?;
        let exists = sqlx::query("SELECT 1 FROM users WHERE id = $1 FOR SHARE")
            .bind(user)
            .fetch_optional(&mut *tx)
            .await?;
        if exists.is_none() {
            return Err(AccountsError::UserNotFound);
        }
        let previous: Option<Uuid> =
            sqlx::query_scalar("SELECT user_id FROM push_devices WHERE token = $1 FOR UPDATE")
                .bind(&device.token)
                .fetch_optional(&mut *tx)
                .await?;
        let moved = previous.is_some_and(|owner| owner != user);
        if moved {
            // Its waiting pushes were the former account's: they go.
            sqlx::query("DELETE FROM push_outbox WHERE token = $1")
                .bind(&device.token)
                .execute(&mut *tx)
                .await?;
        }
        sqlx::query(
            "INSERT INTO push_devices (token, user_id, platform, app_id, locale, app_version,
                                       utc_offset_minutes, registered_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
             ON CONFLICT (token) DO UPDATE SET user_id = EXCLUDED.user_id,
                 platform = EXCLUDED.platform, app_id = EXCLUDED.app_id,
                 locale = EXCLUDED.locale, app_version = EXCLUDED.app_version,
                 utc_offset_minutes = EXCLUDED.utc_offset_minutes,
                 registered_at = EXCLUDED.registered_at",
        )
        .bind(&device.token)
        .bind(user)
        .bind(platform_name(device.platform))
        .bind(&device.app_id)
        .bind(&device.locale)
        .bind(&device.app_version)
        .bind(device.utc_offset_minutes)
        .bind(device.registered_at)
        .execute(&mut *tx)
        .await?;
        sqlx::query(
            "DELETE FROM push_devices WHERE token IN (
                 SELECT token FROM push_devices WHERE user_id = $1
                 ORDER BY registered_at DESC, token OFFSET $2)",
        )
        .bind(user)
        .bind(MAX_PUSH_DEVICES as i64)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(moved)
    }

    async fn remove_push_device(&self, user: Uuid, token: &str) -> Result<bool> {
        let done = sqlx::query("DELETE FROM push_devices WHERE token = $1 AND user_id = $2")
            .bind(token)
            .bind(user)
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected() > 0)
    }

    async fn remove_push_devices(&self, user: Uuid) -> Result<u64> {
        let done = sqlx::query("DELETE FROM push_devices WHERE user_id = $1")
            .bind(user)
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected())
    }

    async fn push_devices(&self, user: Uuid) -> Result<Vec<PushDevice>> {
        sqlx::query(
            "SELECT token, platform, app_id, locale, app_version, utc_offset_minutes, registered_at
             FROM push_devices WHERE user_id = $1 ORDER BY registered_at DESC, token",
        )
        .bind(user)
        .fetch_all(&self.pool)
        .await?
        .iter()
        .map(device_from_row)
        .collect()
    }

    async fn forget_push_token(&self, token: &str) -> Result<bool> {
        let done = sqlx::query("DELETE FROM push_devices WHERE token = $1")
            .bind(token)
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected() > 0)
    }

    async fn enqueue_pushes(
        &self,
        user: Uuid,
        pushes: Vec<QueuedPush>,
        limit: PushLimit,
        now: DateTime<Utc>,
    ) -> Result<Enqueued> {
        if pushes.is_empty() {
            return Ok(Enqueued::Queued(0));
        }
        let mut tx = self.pool.begin().await?;
        // The devices' rows are locked so none moves or goes between the check and the
        // insert (the insert would break the foreign key).
        let tokens: Vec<String> = pushes.iter().map(|p| p.token.clone()).collect();
        let mine: Vec<String> = sqlx::query_scalar(
            "SELECT token FROM push_devices WHERE token = ANY($1) AND user_id = $2
             ORDER BY token FOR SHARE",
        )
        .bind(&tokens)
        .bind(user)
        .fetch_all(&mut *tx)
        .await?;
        let pushes: Vec<QueuedPush> = pushes
            .into_iter()
            .filter(|p| mine.contains(&p.token))
            .collect();
        if pushes.is_empty() {
            return Ok(Enqueued::Queued(0));
        }
        let window_start =
            now - chrono::Duration::from_std(limit.window).unwrap_or(chrono::Duration::MAX);
        let pushed: i32 = sqlx::query_scalar(
            "INSERT INTO push_counts (user_id, window_start, pushed) VALUES ($1, $2, 1)
             ON CONFLICT (user_id) DO UPDATE SET
                 window_start = CASE WHEN push_counts.window_start <= $3 THEN $2
                                     ELSE push_counts.window_start END,
                 pushed = CASE WHEN push_counts.window_start <= $3 THEN 1
                               ELSE push_counts.pushed + 1 END
             RETURNING pushed",
        )
        .bind(user)
        .bind(now)
        .bind(window_start)
        .fetch_one(&mut *tx)
        .await?;
        if pushed.max(0) as u32 > limit.max {
            // Over the limit: the count is not kept either (the transaction is dropped).
            return Ok(Enqueued::OverLimit);
        }
        let mut ids = Vec::with_capacity(pushes.len());
        let mut tokens = Vec::with_capacity(pushes.len());
        let mut kinds = Vec::with_capacity(pushes.len());
        let mut params = Vec::with_capacity(pushes.len());
        let mut data = Vec::with_capacity(pushes.len());
        let mut collapse = Vec::with_capacity(pushes.len());
        let mut noticed = Vec::with_capacity(pushes.len());
        let mut expires = Vec::with_capacity(pushes.len());
        let mut due = Vec::with_capacity(pushes.len());
        for push in &pushes {
            ids.push(push.id);
            tokens.push(push.token.clone());
            kinds.push(push.kind.as_str().to_owned());
            params.push(push.param.clone());
            data.push(serde_json::to_value(&push.data).map_err(|e| {
                AccountsError::Internal(format!("a push's data does not encode: {e}"))
            })?);
            collapse.push(push.collapse_id.clone());
            noticed.push(push.noticed_at);
            expires.push(push.expires_at);
            due.push(push.due_at);
        }
        sqlx::query(
            "INSERT INTO push_outbox (id, user_id, token, kind, param, data, collapse_id,
                                      noticed_at, expires_at, due_at)
             SELECT id, $2, token, kind, param, data, collapse_id, noticed_at, expires_at, due_at
             FROM UNNEST($1::uuid[], $3::text[], $4::text[], $5::text[], $6::jsonb[],
                         $7::text[], $8::timestamptz[], $9::timestamptz[], $10::timestamptz[])
                  AS p (id, token, kind, param, data, collapse_id, noticed_at, expires_at, due_at)",
        )
        .bind(&ids)
        .bind(user)
        .bind(&tokens)
        .bind(&kinds)
        .bind(&params)
        .bind(&data)
        .bind(&collapse)
        .bind(&noticed)
        .bind(&expires)
        .bind(&due)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(Enqueued::Queued(pushes.len()))
    }

    async fn claim_pushes(
        &self,
        claim: Uuid,
        now: DateTime<Utc>,
        lease: Duration,
        max: usize,
    ) -> Result<Vec<ClaimedPush>> {
        sqlx::query(
            "WITH due AS (
                 SELECT id FROM push_outbox
                 WHERE due_at <= $2 AND (claimed_until IS NULL OR claimed_until <= $2)
                 ORDER BY due_at LIMIT $4 FOR UPDATE SKIP LOCKED),
             claimed AS (
                 UPDATE push_outbox o SET claimed_by = $1, claimed_until = $3
                 FROM due WHERE o.id = due.id
                 RETURNING o.*)
             SELECT c.id, c.user_id, c.token, c.kind, c.param, c.data, c.collapse_id,
                    c.noticed_at, c.expires_at, c.due_at, c.attempts,
                    d.platform, d.app_id, d.locale
             FROM claimed c JOIN push_devices d ON d.token = c.token
             ORDER BY c.due_at, c.id",
        )
        .bind(claim)
        .bind(now)
        .bind(later(now, lease))
        .bind(max as i64)
        .fetch_all(&self.pool)
        .await?
        .iter()
        .map(claimed_from_row)
        .collect()
    }

    async fn finish_push(&self, id: Uuid, claim: Uuid) -> Result<bool> {
        let done = sqlx::query("DELETE FROM push_outbox WHERE id = $1 AND claimed_by = $2")
            .bind(id)
            .bind(claim)
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected() > 0)
    }

    async fn retry_push(&self, id: Uuid, claim: Uuid, due_at: DateTime<Utc>) -> Result<bool> {
        let done = sqlx::query(
            "UPDATE push_outbox SET due_at = $3, attempts = attempts + 1,
                                    claimed_by = NULL, claimed_until = NULL
             WHERE id = $1 AND claimed_by = $2",
        )
        .bind(id)
        .bind(claim)
        .bind(due_at)
        .execute(&self.pool)
        .await?;
        Ok(done.rows_affected() > 0)
    }

    async fn outbox_len(&self) -> Result<u64> {
        let n: i64 = sqlx::query_scalar("SELECT count(*) FROM push_outbox")
            .fetch_one(&self.pool)
            .await?;
        Ok(n.max(0) as u64)
    }
}
