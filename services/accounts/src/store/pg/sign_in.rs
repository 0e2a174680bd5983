//! Sign-in and tokens on PostgreSQL ([`SignIn`]): `users`, `device_identities`,
//! `password_credentials`, `provider_identities` (one row per provider account, bound to
//! one user), `refresh_tokens` and `sign_in_clients`. A first sign-in (device or
//! provider) is one statement; the rest are one transaction each.

use basra_platform::client_info::ClientInfo;
use chrono::{DateTime, Utc};
use sqlx::{Postgres, Row, Transaction};
use uuid::Uuid;

use super::{PgStore, is_unique_violation, token_from_row, user_from_row};
use crate::domain::DeviceId;
use crate::error::{AccountsError, Result};
use crate::oidc::{Provider, ProviderIdentity};
use crate::rating::Rating;
use crate::refresh::{RefreshTokenRecord, TokenHash, TokenState};
use crate::store::{
    AccountRecords, GuestUpgrade, LinkedProvider, NewAccount, NewGuest, NewProviderAccount,
    NewSession, Rotation, SignIn, User,
};

const IDENTITY_PKEY: &str = "provider_identities_pkey";

/// A unique violation on the username key is a taken username; anything else stays an error.
fn username_taken(err: sqlx::Error) -> AccountsError {
    if is_unique_violation(&err, "users_username_key_key") {
        AccountsError::UsernameTaken
    } else {
        err.into()
    }
}

/// Stores a user's password hash.
async fn insert_password(
    tx: &mut Transaction<'_, Postgres>,
    user_id: Uuid,
    password_hash: &str,
    now: DateTime<Utc>,
) -> Result<()> {
    sqlx::query(
        "INSERT INTO password_credentials (user_id, password_hash, updated_at) VALUES ($1, $2, $3)",
    )
    .bind(user_id)
    .bind(password_hash)
    .bind(now)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

async fn insert_rating(
    tx: &mut Transaction<'_, Postgres>,
    user_id: Uuid,
    now: DateTime<Utc>,
) -> Result<()> {
    let r = Rating::default();
    sqlx::query(
        "INSERT INTO ratings (user_id, rating, deviation, volatility, ranked_matches, updated_at)
         VALUES ($1, $2, $3, $4, 0, $5)",
    )
    .bind(user_id)
    .bind(r.rating)
    .bind(r.deviation)
    .bind(r.volatility)
    .bind(now)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

impl SignIn for PgStore {
    async fn guest_login(
        &self,
        device: &DeviceId,
        new: NewGuest,
        session: NewSession,
    ) -> Result<User> {
        // One statement, so one round trip and one implicit transaction: find
        // the device's user or create it (user, device, rating), then store
        // the sign-in's refresh token if the user is still a guest.
        const SIGN_IN: &str = "WITH existing AS (
                 SELECT u.id, u.username, u.display_name, u.is_guest, u.created_at
                 FROM device_identities d JOIN users u ON u.id = d.user_id
                 WHERE d.device_id = $1
             ), created AS (
                 INSERT INTO users (id, username, username_key, display_name, is_guest, created_at)
                 SELECT $2, NULL, NULL, $3, TRUE, $4
                 WHERE NOT EXISTS (SELECT 1 FROM existing)
                 RETURNING id, username, display_name, is_guest, created_at
             ), device AS (
                 INSERT INTO device_identities (device_id, user_id, created_at)
                 SELECT $1, id, $4 FROM created
             ), rating AS (
                 INSERT INTO ratings (user_id, rating, deviation, volatility, ranked_matches, updated_at)
                 SELECT id, $5, $6, $7, 0, $4 FROM created
             ), signed_in AS (
                 SELECT * FROM existing UNION ALL SELECT * FROM created
             ), token AS (
                 INSERT INTO refresh_tokens (token_hash, family_id, user_id, issued_at, expires_at)
                 SELECT $8, $9, id, $10, $11 FROM signed_in WHERE is_guest
             )
             SELECT * FROM signed_in";
        let r = Rating::default();
        let mut attempt = 0;
        loop {
            attempt += 1;
            let result = sqlx::query(SIGN_IN)
                .bind(device.as_str())
                .bind(new.id)
                .bind(new.display_name.as_str())
                .bind(new.now)
                .bind(r.rating)
                .bind(r.deviation)
                .bind(r.volatility)
                .bind(session.hash.as_slice())
                .bind(session.family_id)
                .bind(session.issued_at)
                .bind(session.expires_at)
                .fetch_one(&self.pool)
                .await;
            match result {
                Ok(row) => return user_from_row(&row),
                // A concurrent first sign-in of the same device created the
                // guest first: the retry finds it.
                Err(err) if attempt == 1 && is_unique_violation(&err, "device_identities_pkey") => {
                }
                Err(err) => return Err(err.into()),
            }
        }
    }

    async fn create_account(&self, new: NewAccount) -> Result<User> {
        let mut tx = self.pool.begin().await?;
        let row = sqlx::query(
            "INSERT INTO users (id, username, username_key, display_name, is_guest, created_at)
             VALUES ($1, $2, $3, $4, FALSE, $5)
             RETURNING id, username, display_name, is_guest, created_at",
        )
        .bind(new.id)
        .bind(new.username.as_str())
        .bind(new.username.key())
        .bind(new.display_name.as_str())
        .bind(new.now)
        .fetch_one(&mut *tx)
        .await
        .map_err(username_taken)?;
        let user = user_from_row(&row)?;
        insert_password(&mut tx, new.id, &new.password_hash, new.now).await?;
        insert_rating(&mut tx, new.id, new.now).await?;
        tx.commit().await?;
        Ok(user)
    }

    async fn upgrade_guest(&self, up: GuestUpgrade) -> Result<User> {
        let mut tx = self.pool.begin().await?;
        let row = sqlx::query("SELECT is_guest FROM users WHERE id = $1 FOR UPDATE")
            .bind(up.user_id)
            .fetch_optional(&mut *tx)
            .await?
            .ok_or(AccountsError::UserNotFound)?;
        if !row.try_get::<bool, _>("is_guest")? {
            return Err(AccountsError::AlreadyRegistered);
        }
        let row = sqlx::query(
            "UPDATE users
             SET username = $2, username_key = $3, display_name = COALESCE($4, display_name),
                 is_guest = FALSE, upgraded_at = $5
             WHERE id = $1
             RETURNING id, username, display_name, is_guest, created_at",
        )
        .bind(up.user_id)
        .bind(up.username.as_str())
        .bind(up.username.key())
        .bind(up.display_name.as_ref().map(|d| d.as_str()))
        .bind(up.now)
        .fetch_one(&mut *tx)
        .await
        .map_err(username_taken)?;
        let user = user_from_row(&row)?;
        insert_password(&mut tx, up.user_id, &up.password_hash, up.now).await?;
        sqlx::query(
            "UPDATE refresh_tokens SET revoked_at = $2 WHERE user_id = $1 AND revoked_at IS NULL",
        )
        .bind(up.user_id)
        .bind(up.now)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(user)
    }

    async fn password_credentials(&self, username_key: &str) -> Result<Option<(User, String)>> {
        let row = sqlx::query(
            "SELECT u.id, u.username, u.display_name, u.is_guest, u.created_at, p.password_hash
             FROM users u JOIN password_credentials p ON p.user_id = u.id
             WHERE u.username_key = $1",
        )
        .bind(username_key)
        .fetch_optional(&self.pool)
        .await?;
        row.map(|row| Ok((user_from_row(&row)?, row.try_get("password_hash")?)))
            .transpose()
    }

    async fn password_hash(&self, user_id: Uuid) -> Result<Option<String>> {
        Ok(
            sqlx::query_scalar("SELECT password_hash FROM password_credentials WHERE user_id = $1")
                .bind(user_id)
                .fetch_optional(&self.pool)
                .await?,
        )
    }

    async fn change_password(
        &self,
        user_id: Uuid,
        password_hash: &str,
        now: DateTime<Utc>,
    ) -> Result<u64> {
        let mut tx = self.pool.begin().await?;
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

    async fn device_user(&self, device: &DeviceId) -> Result<Option<Uuid>> {
        Ok(
            sqlx::query_scalar("SELECT user_id FROM device_identities WHERE device_id = $1")
                .bind(device.as_str())
                .fetch_optional(&self.pool)
                .await?,
        )
    }

    async fn note_sign_in_client(
        &self,
        user_id: Uuid,
        client: &ClientInfo,
        at: DateTime<Utc>,
    ) -> Result<()> {
        sqlx::query(
            "INSERT INTO sign_in_clients (user_id, platform, app_version, signed_in_at)
             VALUES ($1, $2, $3, $4)",
        )
        .bind(user_id)
        .bind(&client.platform)
        .bind(&client.version)
        .bind(at)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    async fn sign_in_clients(&self, user_id: Uuid) -> Result<Vec<(ClientInfo, DateTime<Utc>)>> {
        let rows = sqlx::query(
            "SELECT platform, app_version, signed_in_at FROM sign_in_clients
             WHERE user_id = $1 ORDER BY signed_in_at, id",
        )
        .bind(user_id)
        .fetch_all(&self.pool)
        .await?;
        Ok(rows
            .iter()
            .map(|row| {
                (
                    ClientInfo {
                        platform: row.get("platform"),
                        version: row.get("app_version"),
                    },
                    row.get("signed_in_at"),
                )
            })
            .collect())
    }

    async fn insert_refresh_token(&self, token: RefreshTokenRecord) -> Result<()> {
        sqlx::query(
            "INSERT INTO refresh_tokens
                 (token_hash, family_id, user_id, issued_at, expires_at, used_at, revoked_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7)",
        )
        .bind(token.hash.as_slice())
        .bind(token.family_id)
        .bind(token.user_id)
        .bind(token.issued_at)
        .bind(token.expires_at)
        .bind(token.used_at)
        .bind(token.revoked_at)
        .execute(&self.pool)
        .await
        .map_err(|err| match &err {
            sqlx::Error::Database(db) if db.is_foreign_key_violation() => {
                AccountsError::UserNotFound
            }
            _ => err.into(),
        })?;
        Ok(())
    }

    async fn refresh_token(&self, hash: TokenHash) -> Result<Option<RefreshTokenRecord>> {
        let row = sqlx::query("SELECT * FROM refresh_tokens WHERE token_hash = $1")
            .bind(hash.as_slice())
            .fetch_optional(&self.pool)
            .await?;
        row.as_ref().map(token_from_row).transpose()
    }

    async fn rotate_refresh_token(
        &self,
        presented: TokenHash,
        next: TokenHash,
        next_expires_at: DateTime<Utc>,
        now: DateTime<Utc>,
    ) -> Result<Rotation> {
        let mut tx = self.pool.begin().await?;
        // The row lock makes concurrent exchanges of one token queue up: the
        // second sees it used.
        let Some(row) =
            sqlx::query("SELECT * FROM refresh_tokens WHERE token_hash = $1 FOR UPDATE")
                .bind(presented.as_slice())
                .fetch_optional(&mut *tx)
                .await?
        else {
            return Ok(Rotation::Unknown);
        };
        let token = token_from_row(&row)?;
        match token.state(now) {
            TokenState::Valid => {}
            TokenState::Reused => {
                sqlx::query(
                    "UPDATE refresh_tokens SET revoked_at = $2
                     WHERE family_id = $1 AND revoked_at IS NULL",
                )
                .bind(token.family_id)
                .bind(now)
                .execute(&mut *tx)
                .await?;
                tx.commit().await?;
                return Ok(Rotation::Rejected(TokenState::Reused));
            }
            state => return Ok(Rotation::Rejected(state)),
        }
        sqlx::query("UPDATE refresh_tokens SET used_at = $2 WHERE token_hash = $1")
            .bind(presented.as_slice())
            .bind(now)
            .execute(&mut *tx)
            .await?;
        sqlx::query(
            "INSERT INTO refresh_tokens (token_hash, family_id, user_id, issued_at, expires_at)
             VALUES ($1, $2, $3, $4, $5)",
        )
        .bind(next.as_slice())
        .bind(token.family_id)
        .bind(token.user_id)
        .bind(now)
        .bind(next_expires_at)
        .execute(&mut *tx)
        .await?;
        let row = sqlx::query(
            "SELECT id, username, display_name, is_guest, created_at FROM users WHERE id = $1",
        )
        .bind(token.user_id)
        .fetch_one(&mut *tx)
        .await?;
        let user = user_from_row(&row)?;
        tx.commit().await?;
        Ok(Rotation::Rotated { user })
    }

    async fn revoke_refresh_family(
        &self,
        presented: TokenHash,
        now: DateTime<Utc>,
    ) -> Result<Option<Uuid>> {
        let row = sqlx::query(
            "WITH t AS (SELECT family_id, user_id FROM refresh_tokens WHERE token_hash = $1),
                  r AS (UPDATE refresh_tokens SET revoked_at = $2
                        WHERE family_id = (SELECT family_id FROM t) AND revoked_at IS NULL)
             SELECT user_id FROM t",
        )
        .bind(presented.as_slice())
        .bind(now)
        .fetch_optional(&self.pool)
        .await?;
        Ok(row.map(|r| r.try_get("user_id")).transpose()?)
    }

    async fn revoke_user_refresh_tokens(&self, user_id: Uuid, now: DateTime<Utc>) -> Result<u64> {
        let done = sqlx::query(
            "UPDATE refresh_tokens SET revoked_at = $2 WHERE user_id = $1 AND revoked_at IS NULL",
        )
        .bind(user_id)
        .bind(now)
        .execute(&self.pool)
        .await?;
        Ok(done.rows_affected())
    }

    async fn provider_sign_in(
        &self,
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
                .fetch_one(&self.pool)
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

    async fn link_provider(
        &self,
        user_id: Uuid,
        identity: &ProviderIdentity,
        now: DateTime<Utc>,
    ) -> Result<User> {
        let mut tx = self.pool.begin().await?;
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

    async fn linked_providers(&self, user_id: Uuid) -> Result<Vec<LinkedProvider>> {
        let rows = sqlx::query(
            "SELECT provider, subject, created_at FROM provider_identities
             WHERE user_id = $1 ORDER BY created_at, provider",
        )
        .bind(user_id)
        .fetch_all(&self.pool)
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

    async fn account_records(&self, user_id: Uuid) -> Result<AccountRecords> {
        let devices = sqlx::query(
            "SELECT device_id, created_at FROM device_identities WHERE user_id = $1 ORDER BY created_at",
        )
        .bind(user_id)
        .fetch_all(&self.pool)
        .await?
        .iter()
        .map(|row| Ok((row.try_get("device_id")?, row.try_get("created_at")?)))
        .collect::<Result<Vec<_>>>()?;
        let password_updated_at =
            sqlx::query_scalar("SELECT updated_at FROM password_credentials WHERE user_id = $1")
                .bind(user_id)
                .fetch_optional(&self.pool)
                .await?;
        let sessions = sqlx::query(
            "SELECT token_hash, family_id, user_id, issued_at, expires_at, used_at, revoked_at
             FROM refresh_tokens WHERE user_id = $1 ORDER BY issued_at, token_hash",
        )
        .bind(user_id)
        .fetch_all(&self.pool)
        .await?
        .iter()
        .map(super::token_from_row)
        .collect::<Result<Vec<_>>>()?;
        let name_changes = sqlx::query_scalar(
            "SELECT changed_at FROM display_name_changes WHERE user_id = $1 ORDER BY changed_at",
        )
        .bind(user_id)
        .fetch_all(&self.pool)
        .await?;
        Ok(AccountRecords {
            devices,
            password_updated_at,
            sessions,
            name_changes,
        })
    }
}
