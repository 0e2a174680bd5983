//! The inbox on PostgreSQL ([`Inbox`]; the `notices` table). Keeping a notice is one
//! transaction that first locks the player's `users` row: one player's notices are kept
//! one at a time, so their ids rise in the order they are committed (and "up to an id"
//! never covers a notice committed after the client saw that id).

use std::collections::{HashMap, HashSet};

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

    /// One transaction of six statements for the whole batch, whatever its size: the
    /// players' rows locked (in id order, so two batches never wait on each other in a
    /// cycle), their expired notices dropped, the keys already kept read, the new
    /// notices' ids drawn (rising in the batch's order), the new notices inserted, and
    /// each player's oldest beyond `keep` dropped.
    async fn keep_notices(&self, notices: Vec<NewNotice>, keep: u32) -> Result<Vec<Result<Kept>>> {
        if notices.is_empty() {
            return Ok(Vec::new());
        }
        let mut users: Vec<Uuid> = notices.iter().map(|n| n.user_id).collect();
        users.sort_unstable();
        users.dedup();
        let mut tx = self.pool.begin().await?;
        let found: HashSet<Uuid> = sqlx::query_scalar::<_, Uuid>(
            "SELECT id FROM users WHERE id = ANY($1) ORDER BY id FOR NO KEY UPDATE",
        )
        .bind(&users)
        .fetch_all(&mut *tx)
        .await?
        .into_iter()
        .collect();
        // Each player's expired notices, as of their latest notice in the batch.
        let (who, when): (Vec<Uuid>, Vec<DateTime<Utc>>) = notices
            .iter()
            .filter(|n| found.contains(&n.user_id))
            .map(|n| (n.user_id, n.created_at))
            .unzip();
        sqlx::query(
            "DELETE FROM notices n
             USING (SELECT u, max(t) AS t FROM UNNEST($1::UUID[], $2::TIMESTAMPTZ[]) AS x(u, t)
                    GROUP BY u) AS x
             WHERE n.user_id = x.u AND n.expires_at <= x.t",
        )
        .bind(&who)
        .bind(&when)
        .execute(&mut *tx)
        .await?;
        let (key_users, keys): (Vec<Uuid>, Vec<String>) = notices
            .iter()
            .filter(|n| found.contains(&n.user_id))
            .filter_map(|n| Some((n.user_id, n.dedupe_key.clone()?)))
            .unzip();
        let mut known: HashMap<(Uuid, String), StoredNotice> = HashMap::new();
        if !keys.is_empty() {
            let rows = sqlx::query(concat!(
                "SELECT ",
                columns!(),
                ", dedupe_key FROM notices
                 WHERE (user_id, dedupe_key) IN
                   (SELECT * FROM UNNEST($1::UUID[], $2::TEXT[]))"
            ))
            .bind(&key_users)
            .bind(&keys)
            .fetch_all(&mut *tx)
            .await?;
            for row in &rows {
                let key: String = row.try_get("dedupe_key")?;
                let kept = notice_from_row(row)?;
                known.insert((kept.user_id, key), kept);
            }
        }
        // What each notice becomes: refused, the answer of a key kept before or earlier
        // in the batch, or a new row (the n-th inserted).
        enum Fate {
            Refused,
            Known(StoredNotice),
            SameAs(usize),
            New(usize),
        }
        let mut fates = Vec::with_capacity(notices.len());
        let mut in_batch: HashMap<(Uuid, String), usize> = HashMap::new();
        let mut fresh: Vec<NewNotice> = Vec::new();
        for notice in notices {
            if !found.contains(&notice.user_id) {
                fates.push(Fate::Refused);
                continue;
            }
            if let Some(key) = &notice.dedupe_key {
                let slot = (notice.user_id, key.clone());
                if let Some(kept) = known.get(&slot) {
                    fates.push(Fate::Known(kept.clone()));
                    continue;
                }
                if let Some(&n) = in_batch.get(&slot) {
                    fates.push(Fate::SameAs(n));
                    continue;
                }
                in_batch.insert(slot, fresh.len());
            }
            fates.push(Fate::New(fresh.len()));
            fresh.push(notice);
        }
        let mut inserted: Vec<StoredNotice> = Vec::with_capacity(fresh.len());
        if !fresh.is_empty() {
            let mut ids: Vec<i64> = sqlx::query_scalar(
                "SELECT nextval(pg_get_serial_sequence('notices', 'id'))
                 FROM generate_series(1, $1)",
            )
            .bind(fresh.len() as i64)
            .fetch_all(&mut *tx)
            .await?;
            ids.sort_unstable();
            let rows = sqlx::query(concat!(
                "INSERT INTO notices
                   (id, user_id, kind, payload, dedupe_key, about, created_at, expires_at)
                 SELECT * FROM UNNEST($1::BIGINT[], $2::UUID[], $3::TEXT[], $4::BYTEA[],
                                      $5::TEXT[], $6::UUID[], $7::TIMESTAMPTZ[],
                                      $8::TIMESTAMPTZ[])
                 RETURNING ",
                columns!()
            ))
            .bind(&ids)
            .bind(fresh.iter().map(|n| n.user_id).collect::<Vec<_>>())
            .bind(fresh.iter().map(|n| n.kind.as_str()).collect::<Vec<_>>())
            .bind(fresh.iter().map(|n| n.payload.clone()).collect::<Vec<_>>())
            .bind(
                fresh
                    .iter()
                    .map(|n| n.dedupe_key.clone())
                    .collect::<Vec<_>>(),
            )
            .bind(fresh.iter().map(|n| n.about).collect::<Vec<_>>())
            .bind(fresh.iter().map(|n| n.created_at).collect::<Vec<_>>())
            .bind(fresh.iter().map(|n| n.expires_at).collect::<Vec<_>>())
            .fetch_all(&mut *tx)
            .await?;
            let mut by_id: HashMap<u64, StoredNotice> = HashMap::with_capacity(rows.len());
            for row in &rows {
                let kept = notice_from_row(row)?;
                by_id.insert(kept.id, kept);
            }
            for id in &ids {
                let kept = by_id.remove(&(*id as u64)).ok_or_else(|| {
                    AccountsError::Internal(format!("notice {id} was inserted but not returned"))
                })?;
                inserted.push(kept);
            }
            sqlx::query(
                "DELETE FROM notices WHERE id IN
                   (SELECT id FROM
                      (SELECT id, row_number() OVER (PARTITION BY user_id ORDER BY id DESC) AS r
                       FROM notices WHERE user_id = ANY($1)) AS ranked
                    WHERE r > $2)",
            )
            .bind(&users)
            .bind(i64::from(keep))
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
        Ok(fates
            .into_iter()
            .map(|fate| match fate {
                Fate::Refused => Err(AccountsError::UserNotFound),
                Fate::Known(notice) => Ok(Kept {
                    notice,
                    duplicate: true,
                }),
                Fate::SameAs(n) => Ok(Kept {
                    notice: inserted[n].clone(),
                    duplicate: true,
                }),
                Fate::New(n) => Ok(Kept {
                    notice: inserted[n].clone(),
                    duplicate: false,
                }),
            })
            .collect())
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
