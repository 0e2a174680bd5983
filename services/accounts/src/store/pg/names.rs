//! Display name changes on PostgreSQL: the user's row locked (`FOR UPDATE`) so two
//! changes of one player are serialized, the recent changes read, [`decide`] applied,
//! and the name and the change written in the same transaction.

use chrono::{DateTime, Utc};
use sqlx::{PgPool, Row};
use uuid::Uuid;

use crate::domain::DisplayName;
use crate::error::{AccountsError, Result};
use crate::names::{NameChange, NameChangeLimit, decide};

pub(super) async fn set_display_name(
    pool: &PgPool,
    user_id: Uuid,
    name: &DisplayName,
    limit: NameChangeLimit,
    now: DateTime<Utc>,
) -> Result<NameChange> {
    let mut tx = pool.begin().await?;
    let current: String = sqlx::query("SELECT display_name FROM users WHERE id = $1 FOR UPDATE")
        .bind(user_id)
        .fetch_optional(&mut *tx)
        .await?
        .ok_or(AccountsError::UserNotFound)?
        .try_get("display_name")?;
    let start = limit.window_start(now);
    // What left the window counts no more: forget it.
    sqlx::query("DELETE FROM display_name_changes WHERE user_id = $1 AND changed_at <= $2")
        .bind(user_id)
        .bind(start)
        .execute(&mut *tx)
        .await?;
    let recent: Vec<DateTime<Utc>> =
        sqlx::query_scalar("SELECT changed_at FROM display_name_changes WHERE user_id = $1")
            .bind(user_id)
            .fetch_all(&mut *tx)
            .await?;
    let outcome = decide(&recent, name.as_str(), current != name.as_str(), limit, now);
    if let NameChange::Done { changed: true, .. } = outcome {
        sqlx::query("UPDATE users SET display_name = $2 WHERE id = $1")
            .bind(user_id)
            .bind(name.as_str())
            .execute(&mut *tx)
            .await?;
        sqlx::query("INSERT INTO display_name_changes (user_id, changed_at) VALUES ($1, $2)")
            .bind(user_id)
            .bind(now)
            .execute(&mut *tx)
            .await?;
    }
    tx.commit().await?;
    Ok(outcome)
}
