//! Friends and blocks on PostgreSQL ([`Friends`]; `friend_links`, `friend_request_days`, `users.friend_code`).
//! Every action is one transaction that first locks both players' `users` rows (in id
//! order, so two actions never wait on each other in a circle): actions on a pair, and
//! on either player's friend count, happen one at a time. Then one statement reads the
//! pair's state and one writes all the action's changes: five round trips with the
//! transaction's begin and commit.

use chrono::{DateTime, Utc};
use sqlx::Row as _;
use uuid::Uuid;

use super::{PgStore, user_from_row};
use crate::error::{AccountsError, Result};
use crate::friends::{
    Action, Change, FriendCode, FriendEntry, FriendLimits, FriendList, Link, Outcome, PairState,
    decide, request_day,
};
use crate::store::{Friends, User};

/// Fresh codes tried before giving up (a clash of 40 random bits is already rare).
const CODE_ATTEMPTS: usize = 8;

impl Friends for PgStore {
    /// The blocks held by any of `blockers`: (blocker, blocked).
    async fn blocks(&self, blockers: &[Uuid]) -> Result<Vec<(Uuid, Uuid)>> {
        let rows: Vec<(Uuid, Uuid)> = sqlx::query_as(
            "SELECT from_id, to_id FROM friend_links WHERE link = 'block' AND from_id = ANY($1)",
        )
        .bind(blockers)
        .fetch_all(&self.pool)
        .await?;
        Ok(rows)
    }

    async fn user_by_friend_code(&self, code: &FriendCode) -> Result<Option<User>> {
        let row = sqlx::query(
            "SELECT id, username, display_name, is_guest, created_at
             FROM users WHERE friend_code = $1",
        )
        .bind(code.as_str())
        .fetch_optional(&self.pool)
        .await?;
        row.as_ref().map(user_from_row).transpose()
    }

    async fn friend_code(&self, user_id: Uuid) -> Result<Option<FriendCode>> {
        for _ in 0..CODE_ATTEMPTS {
            let stored: Option<Option<String>> =
                sqlx::query_scalar("SELECT friend_code FROM users WHERE id = $1")
                    .bind(user_id)
                    .fetch_optional(&self.pool)
                    .await?;
            let code = match stored {
                None => return Ok(None),
                Some(Some(code)) => code,
                // None yet: give a fresh one, unless a concurrent call just did.
                Some(None) => {
                    let fresh = FriendCode::generate();
                    let given = sqlx::query(
                        "UPDATE users SET friend_code = $2 WHERE id = $1 AND friend_code IS NULL",
                    )
                    .bind(user_id)
                    .bind(fresh.as_str())
                    .execute(&self.pool)
                    .await;
                    match given {
                        Ok(done) if done.rows_affected() == 1 => return Ok(Some(fresh)),
                        // Another call gave one first: read it on the next pass.
                        Ok(_) => continue,
                        // Another user holds this code: draw again.
                        Err(sqlx::Error::Database(e)) if e.is_unique_violation() => continue,
                        Err(e) => return Err(e.into()),
                    }
                }
            };
            return FriendCode::parse(&code).map(Some).map_err(|_| {
                AccountsError::Internal(format!("stored friend code {code:?} is malformed"))
            });
        }
        Err(AccountsError::Internal(
            "could not draw an unused friend code".into(),
        ))
    }

    async fn befriend(
        &self,
        actor: Uuid,
        other: Uuid,
        action: Action,
        limits: FriendLimits,
        now: DateTime<Utc>,
    ) -> Result<Outcome> {
        let mut tx = self.pool.begin().await?;
        let locked =
            sqlx::query("SELECT id FROM users WHERE id = ANY($1) ORDER BY id FOR NO KEY UPDATE")
                .bind(&[actor, other][..])
                .fetch_all(&mut *tx)
                .await?;
        if locked.len() != 2 {
            return Err(AccountsError::UserNotFound);
        }
        let day = request_day(now);
        let row = sqlx::query(
            "SELECT (SELECT link FROM friend_links WHERE from_id = $1 AND to_id = $2) AS outgoing,
                    (SELECT link FROM friend_links WHERE from_id = $2 AND to_id = $1) AS incoming,
                    (SELECT count(*) FROM friend_links WHERE from_id = $1 AND link = 'friend')
                        AS actor_friends,
                    (SELECT count(*) FROM friend_links WHERE from_id = $2 AND link = 'friend')
                        AS other_friends,
                    (SELECT sent FROM friend_request_days WHERE user_id = $1 AND day = $3)
                        AS sent_today",
        )
        .bind(actor)
        .bind(other)
        .bind(day)
        .fetch_one(&mut *tx)
        .await?;
        let link = |col: &str| -> Result<Option<Link>> {
            row.try_get::<Option<String>, _>(col)?
                .as_deref()
                .map(Link::from_stored)
                .transpose()
        };
        let count = |col: &str| -> Result<u32> {
            Ok(u32::try_from(row.try_get::<i64, _>(col)?).unwrap_or(u32::MAX))
        };
        let pair = PairState {
            outgoing: link("outgoing")?,
            incoming: link("incoming")?,
            actor_friends: count("actor_friends")?,
            other_friends: count("other_friends")?,
            actor_requests_today: row
                .try_get::<Option<i32>, _>("sent_today")?
                .map_or(0, |n| u32::try_from(n).unwrap_or(0)),
        };
        let (outcome, changes) = decide(action, &pair, &limits)?;
        if !changes.is_empty() {
            changes_statement(&changes, actor, other, day, now)
                .build()
                .execute(&mut *tx)
                .await?;
        }
        tx.commit().await?;
        Ok(outcome)
    }

    async fn friend_list(&self, user_id: Uuid) -> Result<FriendList> {
        let rows = sqlx::query(
            "SELECT CASE WHEN l.from_id = $1 THEN l.link ELSE 'incoming' END AS list,
                    u.id, u.display_name, u.is_guest, l.since
             FROM friend_links l
             JOIN users u ON u.id = CASE WHEN l.from_id = $1 THEN l.to_id ELSE l.from_id END
             WHERE l.from_id = $1 OR (l.to_id = $1 AND l.link = 'request')",
        )
        .bind(user_id)
        .fetch_all(&self.pool)
        .await?;
        let mut list = FriendList::default();
        for row in rows {
            let entry = FriendEntry {
                user_id: row.try_get("id")?,
                display_name: row.try_get("display_name")?,
                is_guest: row.try_get("is_guest")?,
                since: row.try_get("since")?,
            };
            let target = match row.try_get::<String, _>("list")?.as_str() {
                "incoming" => &mut list.incoming,
                stored => match Link::from_stored(stored)? {
                    Link::Friend => &mut list.friends,
                    Link::Request => &mut list.outgoing,
                    Link::Block => &mut list.blocked,
                },
            };
            target.push(entry);
        }
        Ok(list.sorted())
    }
}

/// An action's changes as one statement (one round trip): each change a data-modifying
/// `WITH` part when there are several, which PostgreSQL runs once each, to completion.
/// The changes of one action touch distinct rows (the two directions of the pair, the
/// actor's request count of the day), so no two parts write the same row.
fn changes_statement(
    changes: &[Change],
    actor: Uuid,
    other: Uuid,
    day: chrono::NaiveDate,
    now: DateTime<Utc>,
) -> sqlx::QueryBuilder<sqlx::Postgres> {
    let mut q = sqlx::QueryBuilder::new("");
    let several = changes.len() > 1;
    if several {
        q.push("WITH ");
    }
    for (i, change) in changes.iter().enumerate() {
        if several {
            q.push(if i > 0 { ", " } else { "" });
            q.push(format_args!("c{i} AS ("));
        }
        let (from, to) = match change {
            Change::SetOut(_) | Change::ClearOut | Change::CountRequest => (actor, other),
            Change::SetIn(_) | Change::ClearIn => (other, actor),
        };
        match change {
            Change::SetOut(link) | Change::SetIn(link) => {
                q.push("INSERT INTO friend_links (from_id, to_id, link, since) VALUES (");
                q.push_bind(from);
                q.push(", ");
                q.push_bind(to);
                q.push(", ");
                q.push_bind(link.as_str());
                q.push(", ");
                q.push_bind(now);
                q.push(
                    ") ON CONFLICT (from_id, to_id)
                     DO UPDATE SET link = EXCLUDED.link, since = EXCLUDED.since",
                );
            }
            Change::ClearOut | Change::ClearIn => {
                q.push("DELETE FROM friend_links WHERE from_id = ");
                q.push_bind(from);
                q.push(" AND to_id = ");
                q.push_bind(to);
            }
            Change::CountRequest => {
                q.push("INSERT INTO friend_request_days (user_id, day, sent) VALUES (");
                q.push_bind(actor);
                q.push(", ");
                q.push_bind(day);
                q.push(
                    ", 1) ON CONFLICT (user_id, day)
                     DO UPDATE SET sent = friend_request_days.sent + 1",
                );
            }
        }
        if several {
            q.push(")");
        }
    }
    if several {
        q.push(" SELECT 1");
    }
    q
}
