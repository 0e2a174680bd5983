//! The inbox on PostgreSQL ([`Inbox`]; the `notices` table). Keeping a notice is one
//! transaction that first locks the player's `users` row: one player's notices are kept
//! one at a time, so their ids rise in the order they are committed (and "up to an id"
//! never covers a notice committed after the client saw that id).

use chrono::{DateTime, Utc};
use sqlx::Row as _;
use sqlx::postgres::PgRow;
use uuid::Uuid;

use super::PgStore;
use crate::error::{AccountsError, Result};
use crate::inbox::{Kept, Marking, NewNotice, NoticeKind, NoticePage, StoredNotice, Unread};
use crate::store::Inbox;

/// The columns a [`StoredNotice`] is read from (a literal: queries are `&'static str`).
macro_rules! columns {
    () => {
        "id, user_id, kind, payload, created_at, expires_at, read"
    };
}

fn notice_from_row(row: &PgRow) -> Result<StoredNotice> {
    let kind: String = row.try_get("kind")?;
    Ok(StoredNotice {
        id: row.try_get::<i64, _>("id")?.max(0) as u64,
        user_id: row.try_get("user_id")?,
        kind: NoticeKind::parse(&kind)
            .ok_or_else(|| AccountsError::Internal(format!("a notice of unknown kind {kind}")))?,
        payload: row.try_get("payload")?,
        created_at: row.try_get("created_at")?,
        expires_at: row.try_get("expires_at")?,
        read: row.try_get("read")?,
    })
}

/// An id as stored (ids above `i64::MAX` name no notice).
fn stored_id(id: u64) -> i64 {
    i64::try_from(id).unwrap_or(i64::MAX)
}

impl Inbox for PgStore {
    async fn keep_notice(&self, notice: NewNotice, keep: u32) -> Result<Kept> {
        let mut tx = self.pool.begin().await?;
        let found = sqlx::query("SELECT 1 FROM users WHERE id = $1 FOR NO KEY UPDATE")
            .bind(notice.user_id)
            .fetch_optional(&mut *tx)
            .await?;
        if found.is_none() {
            return Err(AccountsError::UserNotFound);
        }
        sqlx::query("DELETE FROM notices WHERE user_id = $1 AND expires_at <= $2")
            .bind(notice.user_id)
            .bind(notice.created_at)
            .execute(&mut *tx)
            .await?;
        if let Some(key) = &notice.dedupe_key {
            let before = sqlx::query(concat!(
                "SELECT ",
                columns!(),
                " FROM notices WHERE user_id = $1 AND dedupe_key = $2"
            ))
            .bind(notice.user_id)
            .bind(key)
            .fetch_optional(&mut *tx)
            .await?;
            if let Some(row) = before {
                let kept = notice_from_row(&row)?;
                tx.commit().await?;
                return Ok(Kept {
                    notice: kept,
                    duplicate: true,
                });
            }
        }
        let row = sqlx::query(concat!(
            "INSERT INTO notices (user_id, kind, payload, dedupe_key, about, created_at, expires_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7)
             RETURNING ",
            columns!()
        ))
        .bind(notice.user_id)
        .bind(notice.kind.as_str())
        .bind(&notice.payload)
        .bind(&notice.dedupe_key)
        .bind(notice.about)
        .bind(notice.created_at)
        .bind(notice.expires_at)
        .fetch_one(&mut *tx)
        .await?;
        let kept = notice_from_row(&row)?;
        sqlx::query(
            "DELETE FROM notices WHERE user_id = $1 AND id NOT IN
               (SELECT id FROM notices WHERE user_id = $1 ORDER BY id DESC LIMIT $2)",
        )
        .bind(notice.user_id)
        .bind(i64::from(keep))
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(Kept {
            notice: kept,
            duplicate: false,
        })
    }

    async fn notices(
        &self,
        user: Uuid,
        page: NoticePage,
        now: DateTime<Utc>,
    ) -> Result<Vec<StoredNotice>> {
        sqlx::query(concat!(
            "SELECT ",
            columns!(),
            " FROM notices
             WHERE user_id = $1 AND expires_at > $2
               AND ($3::BIGINT IS NULL OR id < $3) AND (NOT $4 OR NOT read)
             ORDER BY id DESC LIMIT $5"
        ))
        .bind(user)
        .bind(now)
        .bind(page.before.map(stored_id))
        .bind(page.unread_only)
        .bind(i64::from(page.limit))
        .fetch_all(&self.pool)
        .await?
        .iter()
        .map(notice_from_row)
        .collect()
    }

    async fn unread_notices(&self, user: Uuid, now: DateTime<Utc>) -> Result<Unread> {
        let (count, newest): (i64, Option<i64>) = sqlx::query_as(
            "SELECT count(*) FILTER (WHERE NOT read), max(id) FROM notices
             WHERE user_id = $1 AND expires_at > $2",
        )
        .bind(user)
        .bind(now)
        .fetch_one(&self.pool)
        .await?;
        Ok(Unread {
            count: super::to_u32(count),
            newest_id: newest.unwrap_or(0).max(0) as u64,
        })
    }

    async fn mark_notices_read(
        &self,
        user: Uuid,
        marking: Marking,
        now: DateTime<Utc>,
    ) -> Result<u32> {
        let marked = match marking {
            Marking::Ids(ids) => {
                let mut ids: Vec<i64> = ids
                    .into_iter()
                    .map(|id| i64::try_from(id).map_err(|_| AccountsError::NoticeNotFound))
                    .collect::<Result<_>>()?;
                ids.sort_unstable();
                ids.dedup();
                let mut tx = self.pool.begin().await?;
                let found: i64 = sqlx::query_scalar(
                    "SELECT count(*) FROM notices
                     WHERE user_id = $1 AND id = ANY($2) AND expires_at > $3",
                )
                .bind(user)
                .bind(&ids)
                .bind(now)
                .fetch_one(&mut *tx)
                .await?;
                if found != ids.len() as i64 {
                    return Err(AccountsError::NoticeNotFound);
                }
                let marked = sqlx::query(
                    "UPDATE notices SET read = true
                     WHERE user_id = $1 AND id = ANY($2) AND expires_at > $3 AND NOT read",
                )
                .bind(user)
                .bind(&ids)
                .bind(now)
                .execute(&mut *tx)
                .await?
                .rows_affected();
                tx.commit().await?;
                marked
            }
            Marking::UpTo(last) => sqlx::query(
                "UPDATE notices SET read = true
                 WHERE user_id = $1 AND id <= $2 AND expires_at > $3 AND NOT read",
            )
            .bind(user)
            .bind(stored_id(last))
            .bind(now)
            .execute(&self.pool)
            .await?
            .rows_affected(),
        };
        Ok(u32::try_from(marked).unwrap_or(u32::MAX))
    }

    async fn drop_expired_notices(&self, now: DateTime<Utc>) -> Result<u64> {
        Ok(sqlx::query("DELETE FROM notices WHERE expires_at <= $1")
            .bind(now)
            .execute(&self.pool)
            .await?
            .rows_affected())
    }
}
