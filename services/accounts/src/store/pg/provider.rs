//! Provider sign-in on PostgreSQL: `provider_identities` (one row per provider account,
//! bound to one user).

use chrono::{DateTime, Utc};
use sqlx::{PgPool, Row};
use uuid::Uuid;

use super::{is_unique_violation, user_from_row};
use crate::error::{AccountsError, Result};
use crate::oidc::{Provider, ProviderIdentity};
use crate::rating::Rating;
use crate::store::{LinkedProvider, NewProviderAccount, User};

const IDENTITY_PKEY: &str = "provider_identities_pkey";

pub(super) async fn provider_sign_in(
    pool: &PgPool,
    identity: &ProviderIdentity,
    new: NewProviderAccount,
) -> Result<(User, bool)> {
    // One statement: find the identity's user or create it (user, identity, rating).
    const SIGN_IN: &str = "WITH existing AS (
             SELECT u.id, u.username, u.display_name, u.is_guest, u.created_at
             FROM provider_identities p JOIN users u ON u.id = p.user_id
             WHERE p.provider = $1 AND p.subject = $2
         ), created AS (
             INSERT INTO users (id, username, username_key, display_name, is_guest, created_at)
             SELECT $3, NULL, NULL, $4, FALSE, $5
             WHERE NOT EXISTS (SELECT 1 FROM existing)
             RETURNING id, username, display_name, is_guest, created_at
         ), identity AS (
             INSERT INTO provider_identities (provider, subject, user_id, created_at)
             SELECT $1, $2, id, $5 FROM created
         ), rating AS (
             INSERT INTO ratings (user_id, rating, deviation, volatility, ranked_matches, updated_at)
             SELECT id, $6, $7, $8, 0, $5 FROM created
         )
         SELECT *, FALSE AS created FROM existing
         UNION ALL SELECT *, TRUE AS created FROM created";
    let r = Rating::default();
    let mut attempt = 0;
    loop {
        attempt += 1;
        let result = sqlx::query(SIGN_IN)
            .bind(identity.provider.as_str())
            .bind(&identity.subject)
            .bind(new.id)
            .bind(new.display_name.as_str())
            .bind(new.now)
            .bind(r.rating)
            .bind(r.deviation)
            .bind(r.volatility)
            .fetch_one(pool)
            .await;
        match result {
            Ok(row) => return Ok((user_from_row(&row)?, row.try_get("created")?)),
            // A concurrent first sign-in of the same identity created the account
            // first: the retry finds it.
            Err(err) if attempt == 1 && is_unique_violation(&err, IDENTITY_PKEY) => {}
            Err(err) => return Err(err.into()),
        }
    }
}

pub(super) async fn link_provider(
    pool: &PgPool,
    user_id: Uuid,
    identity: &ProviderIdentity,
    now: DateTime<Utc>,
) -> Result<User> {
    let mut tx = pool.begin().await?;
    let row = sqlx::query("SELECT is_guest FROM users WHERE id = $1 FOR UPDATE")
        .bind(user_id)
        .fetch_optional(&mut *tx)
        .await?
        .ok_or(AccountsError::UserNotFound)?;
    if !row.try_get::<bool, _>("is_guest")? {
        return Err(AccountsError::AlreadyRegistered);
    }
    sqlx::query(
        "INSERT INTO provider_identities (provider, subject, user_id, created_at)
         VALUES ($1, $2, $3, $4)",
    )
    .bind(identity.provider.as_str())
    .bind(&identity.subject)
    .bind(user_id)
    .bind(now)
    .execute(&mut *tx)
    .await
    .map_err(|err| {
        if is_unique_violation(&err, IDENTITY_PKEY) {
            AccountsError::ProviderTaken(identity.provider.title())
        } else {
            err.into()
        }
    })?;
    let row = sqlx::query(
        "UPDATE users SET is_guest = FALSE, upgraded_at = $2 WHERE id = $1
         RETURNING id, username, display_name, is_guest, created_at",
    )
    .bind(user_id)
    .bind(now)
    .fetch_one(&mut *tx)
    .await?;
    let user = user_from_row(&row)?;
    sqlx::query(
        "UPDATE refresh_tokens SET revoked_at = $2 WHERE user_id = $1 AND revoked_at IS NULL",
    )
    .bind(user_id)
    .bind(now)
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(user)
}

pub(super) async fn linked_providers(pool: &PgPool, user_id: Uuid) -> Result<Vec<LinkedProvider>> {
    let rows = sqlx::query(
        "SELECT provider, subject, created_at FROM provider_identities
         WHERE user_id = $1 ORDER BY created_at, provider",
    )
    .bind(user_id)
    .fetch_all(pool)
    .await?;
    rows.iter()
        .map(|row| {
            let name: String = row.try_get("provider")?;
            let provider = Provider::from_name(&name).ok_or_else(|| {
                AccountsError::Internal(format!("unknown provider {name:?} stored"))
            })?;
            Ok(LinkedProvider {
                identity: ProviderIdentity {
                    provider,
                    subject: row.try_get("subject")?,
                },
                linked_at: row.try_get("created_at")?,
            })
        })
        .collect()
}

pub(super) async fn find_by_display_name(
    pool: &PgPool,
    fragment: &str,
    limit: u32,
) -> Result<Vec<User>> {
    // An operator's search: a scan of the users, fine at the sizes an operator searches.
    let pattern = format!(
        "%{}%",
        fragment
            .to_lowercase()
            .replace('\\', "\\\\")
            .replace('%', "\\%")
            .replace('_', "\\_")
    );
    let rows = sqlx::query(
        "SELECT id, username, display_name, is_guest, created_at FROM users
         WHERE lower(display_name) LIKE $1
         ORDER BY display_name COLLATE \"C\", id LIMIT $2",
    )
    .bind(pattern)
    .bind(i64::from(limit))
    .fetch_all(pool)
    .await?;
    rows.iter().map(user_from_row).collect()
}
