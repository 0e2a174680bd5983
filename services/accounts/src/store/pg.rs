//! The PostgreSQL store. Queries use sqlx's runtime API (no compile-time
//! checking, so building needs no database); migrations are embedded from
//! `migrations/` and run by [`PgStore::migrate`].

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use basra_platform::client_info::ClientInfo;
use basra_records::action_log;
use basra_records::{BasraCounts, EndReason, MatchRecord, SeatRecord};
use chrono::{DateTime, Utc};
use sqlx::postgres::{PgPool, PgPoolOptions, PgRow};
use sqlx::types::Json;
use sqlx::{Postgres, Row, Transaction};
use uuid::Uuid;

use super::{
    Counts, GuestUpgrade, HistoryCursor, HistoryEntry, LeaderboardCursor, LeaderboardRow,
    LeaderboardRules, NewAccount, NewGuest, NewSession, PoolStats, Profile, RatingChange, Recorded,
    Rotation, Store, User,
};
use crate::domain::DeviceId;
use crate::error::{AccountsError, Result};
use crate::friends::{Action, FriendCode, FriendLimits, FriendList, Outcome};
use crate::rating::{Rating, rate_in_order};
use crate::refresh::{RefreshTokenRecord, TokenHash, TokenState};

mod account;
mod friends;
mod names;
mod provider;

/// How long a call waits for a pooled connection before it is answered UNAVAILABLE:
/// well under a client's usual 3 s deadline, so a client hears "unavailable, retry"
/// rather than DEADLINE_EXCEEDED while PostgreSQL is down or the pool is exhausted.
pub(crate) const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(1);

fn pool_options(max_connections: u32) -> PgPoolOptions {
    PgPoolOptions::new()
        .max_connections(max_connections)
        .acquire_timeout(ACQUIRE_TIMEOUT)
}

/// A [`Store`] on PostgreSQL.
#[derive(Debug, Clone)]
pub struct PgStore {
    pool: PgPool,
}

/// The migrations of `services/accounts/migrations`, embedded at build time.
pub static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations");

impl PgStore {
    /// A store on an existing pool (tests get one per fresh database).
    pub fn new(pool: PgPool) -> PgStore {
        PgStore { pool }
    }

    /// Connects a pool of at most `max_connections` to `url`.
    pub async fn connect(url: &str, max_connections: u32) -> Result<PgStore> {
        let pool = pool_options(max_connections).connect(url).await?;
        Ok(PgStore { pool })
    }

    /// Connects a pool of at most `max_connections` with `options`.
    pub async fn connect_with(
        options: sqlx::postgres::PgConnectOptions,
        max_connections: u32,
    ) -> Result<PgStore> {
        let pool = pool_options(max_connections).connect_with(options).await?;
        Ok(PgStore { pool })
    }

    /// A store whose pool connects on first use: starts even while PostgreSQL is down,
    /// and answers UNAVAILABLE until it is back.
    pub fn connect_lazy(url: &str, max_connections: u32) -> Result<PgStore> {
        let pool = pool_options(max_connections).connect_lazy(url)?;
        Ok(PgStore { pool })
    }

    /// Applies the pending migrations. Migrations recorded in the database that this
    /// build does not know (a newer release's) are left alone, not refused: the migration
    /// policy (expand, then contract; deploy/README.md) makes the newer schema one this
    /// release runs on, so a rolled-back pod started with `database.migrate` still serves.
    pub async fn migrate(&self) -> Result<()> {
        let mut migrator =
            sqlx::migrate::Migrator::with_migrations(MIGRATOR.iter().cloned().collect());
        migrator.set_ignore_missing(true);
        migrator
            .run(&self.pool)
            .await
            .map_err(|e| AccountsError::Internal(format!("database migration failed: {e}")))
    }

    /// The pool.
    pub fn pool(&self) -> &PgPool {
        &self.pool
    }
}

fn user_from_row(row: &PgRow) -> Result<User> {
    Ok(User {
        id: row.try_get("id")?,
        username: row.try_get("username")?,
        display_name: row.try_get("display_name")?,
        is_guest: row.try_get("is_guest")?,
        created_at: row.try_get("created_at")?,
    })
}

fn token_from_row(row: &PgRow) -> Result<RefreshTokenRecord> {
    let hash: Vec<u8> = row.try_get("token_hash")?;
    Ok(RefreshTokenRecord {
        hash: hash
            .try_into()
            .map_err(|_| AccountsError::Internal("stored token hash is not 32 bytes".into()))?,
        family_id: row.try_get("family_id")?,
        user_id: row.try_get("user_id")?,
        issued_at: row.try_get("issued_at")?,
        expires_at: row.try_get("expires_at")?,
        used_at: row.try_get("used_at")?,
        revoked_at: row.try_get("revoked_at")?,
    })
}

/// Whether `err` is a unique violation of `constraint`.
fn is_unique_violation(err: &sqlx::Error, constraint: &str) -> bool {
    match err {
        sqlx::Error::Database(db) => {
            db.is_unique_violation() && db.constraint().is_some_and(|c| c == constraint)
        }
        _ => false,
    }
}

fn to_u32(n: i64) -> u32 {
    u32::try_from(n.max(0)).unwrap_or(u32::MAX)
}

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

impl Store for PgStore {
    fn pool_stats(&self) -> Option<PoolStats> {
        Some(PoolStats {
            size: self.pool.size(),
            idle: self.pool.num_idle(),
            max: self.pool.options().get_max_connections(),
        })
    }

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

    async fn user(&self, id: Uuid) -> Result<Option<User>> {
        let row = sqlx::query(
            "SELECT id, username, display_name, is_guest, created_at FROM users WHERE id = $1",
        )
        .bind(id)
        .fetch_optional(&self.pool)
        .await?;
        row.as_ref().map(user_from_row).transpose()
    }

    async fn blocks(&self, blockers: &[Uuid]) -> Result<Vec<(Uuid, Uuid)>> {
        friends::blocks(&self.pool, blockers).await
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

    async fn set_display_name(
        &self,
        user_id: Uuid,
        name: &crate::domain::DisplayName,
        limit: crate::names::NameChangeLimit,
        now: DateTime<Utc>,
    ) -> Result<crate::names::NameChange> {
        names::set_display_name(&self.pool, user_id, name, limit, now).await
    }

    async fn players(&self, ids: &[Uuid]) -> Result<Vec<(User, Rating)>> {
        let rows = sqlx::query(
            "SELECT u.id, u.username, u.display_name, u.is_guest, u.created_at,
                    r.rating, r.deviation, r.volatility
             FROM users u JOIN ratings r ON r.user_id = u.id
             WHERE u.id = ANY($1)",
        )
        .bind(ids)
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|row| {
                let rating = Rating {
                    rating: row.try_get("rating")?,
                    deviation: row.try_get("deviation")?,
                    volatility: row.try_get("volatility")?,
                };
                Ok((user_from_row(row)?, rating))
            })
            .collect()
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

    async fn profile(&self, user_id: Uuid, rules: LeaderboardRules) -> Result<Option<Profile>> {
        let Some(row) = sqlx::query(
            "SELECT u.id, u.username, u.display_name, u.is_guest, u.created_at,
                    r.rating, r.deviation, r.volatility, r.ranked_matches,
                    s.played, s.wins, s.losses, s.basras, s.jack_basras, s.komi_basras
             FROM users u
             JOIN ratings r ON r.user_id = u.id
             CROSS JOIN LATERAL (
                 SELECT count(*) AS played,
                        count(*) FILTER (WHERE won) AS wins,
                        count(*) FILTER (WHERE lost) AS losses,
                        COALESCE(sum(basras), 0)::BIGINT AS basras,
                        COALESCE(sum(jack_basras), 0)::BIGINT AS jack_basras,
                        COALESCE(sum(komi_basras), 0)::BIGINT AS komi_basras
                 FROM match_players WHERE user_id = u.id
             ) s
             WHERE u.id = $1",
        )
        .bind(user_id)
        .fetch_optional(&self.pool)
        .await?
        else {
            return Ok(None);
        };
        let user = user_from_row(&row)?;
        let leaderboard_rank = self
            .leaderboard_position(user_id, rules)
            .await?
            .map(|(rank, _)| rank);
        Ok(Some(Profile {
            user,
            rating: Rating {
                rating: row.try_get("rating")?,
                deviation: row.try_get("deviation")?,
                volatility: row.try_get("volatility")?,
            },
            ranked_matches: to_u32(i64::from(row.try_get::<i32, _>("ranked_matches")?)),
            matches_played: to_u32(row.try_get("played")?),
            wins: to_u32(row.try_get("wins")?),
            losses: to_u32(row.try_get("losses")?),
            basras: BasraCounts {
                basra: to_u32(row.try_get("basras")?),
                jack: to_u32(row.try_get("jack_basras")?),
                komi: to_u32(row.try_get("komi_basras")?),
            },
            leaderboard_rank,
        }))
    }

    async fn leaderboard(
        &self,
        rules: LeaderboardRules,
        after: Option<LeaderboardCursor>,
        limit: u32,
    ) -> Result<Vec<LeaderboardRow>> {
        // Rating and ranked matches both descend, so "after the cursor" is a
        // row comparison on them, with the user id (ascending) breaking ties.
        let rows = sqlx::query(
            "SELECT r.user_id, u.display_name, r.rating, r.ranked_matches
             FROM ratings r JOIN users u ON u.id = r.user_id
             WHERE NOT u.is_guest AND r.ranked_matches >= $1
               AND ($2::DOUBLE PRECISION IS NULL
                    OR (r.rating, r.ranked_matches) < ($2, $3)
                    OR ((r.rating, r.ranked_matches) = ($2, $3) AND r.user_id > $4))
             ORDER BY r.rating DESC, r.ranked_matches DESC, r.user_id
             LIMIT $5",
        )
        .bind(i32::try_from(rules.min_ranked_matches).unwrap_or(i32::MAX))
        .bind(after.map(|c| c.rating))
        .bind(after.map(|c| i32::try_from(c.ranked_matches).unwrap_or(i32::MAX)))
        .bind(after.map(|c| c.user_id))
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|row| {
                Ok(LeaderboardRow {
                    user_id: row.try_get("user_id")?,
                    display_name: row.try_get("display_name")?,
                    rating: row.try_get("rating")?,
                    ranked_matches: to_u32(i64::from(row.try_get::<i32, _>("ranked_matches")?)),
                })
            })
            .collect()
    }

    async fn leaderboard_position(
        &self,
        user_id: Uuid,
        rules: LeaderboardRules,
    ) -> Result<Option<(u32, LeaderboardRow)>> {
        let row = sqlx::query(
            "SELECT me.user_id, u.display_name, me.rating, me.ranked_matches,
                    (SELECT count(*) FROM ratings r JOIN users ru ON ru.id = r.user_id
                     WHERE NOT ru.is_guest AND r.ranked_matches >= $2
                       AND ((r.rating, r.ranked_matches) > (me.rating, me.ranked_matches)
                            OR ((r.rating, r.ranked_matches) = (me.rating, me.ranked_matches)
                                AND r.user_id < me.user_id))) AS ahead
             FROM ratings me JOIN users u ON u.id = me.user_id
             WHERE me.user_id = $1 AND NOT u.is_guest AND me.ranked_matches >= $2",
        )
        .bind(user_id)
        .bind(i32::try_from(rules.min_ranked_matches).unwrap_or(i32::MAX))
        .fetch_optional(&self.pool)
        .await?;
        row.map(|row| {
            let ahead: i64 = row.try_get("ahead")?;
            Ok((
                to_u32(ahead + 1),
                LeaderboardRow {
                    user_id: row.try_get("user_id")?,
                    display_name: row.try_get("display_name")?,
                    rating: row.try_get("rating")?,
                    ranked_matches: to_u32(i64::from(row.try_get::<i32, _>("ranked_matches")?)),
                },
            ))
        })
        .transpose()
    }

    async fn record_matches(
        &self,
        records: &[MatchRecord],
        now: DateTime<Utc>,
    ) -> Result<Vec<Recorded>> {
        match self.record_matches_once(records, now).await {
            Err(AccountsError::InvalidRecord { index, error }) => {
                // An unknown player may be an account deleted while its match was
                // played: record those seats as placeholders and try once more. Only
                // this (rare) path pays the look-up.
                let ids: Vec<Uuid> = records
                    .iter()
                    .flat_map(|r| r.players().map(|(_, id)| id))
                    .collect();
                let deleted = account::deleted_among(&self.pool, &ids).await?;
                if deleted.is_empty() {
                    return Err(AccountsError::InvalidRecord { index, error });
                }
                let records: Vec<MatchRecord> = records
                    .iter()
                    .map(|r| {
                        crate::deletion::placeholder_seats(r, &deleted).unwrap_or_else(|| r.clone())
                    })
                    .collect();
                self.record_matches_once(&records, now).await
            }
            other => other,
        }
    }

    async fn password_hash(&self, user_id: Uuid) -> Result<Option<String>> {
        account::password_hash(&self.pool, user_id).await
    }

    async fn change_password(
        &self,
        user_id: Uuid,
        password_hash: &str,
        now: DateTime<Utc>,
    ) -> Result<u64> {
        account::change_password(&self.pool, user_id, password_hash, now).await
    }

    async fn account_records(&self, user_id: Uuid) -> Result<super::AccountRecords> {
        account::account_records(&self.pool, user_id).await
    }

    async fn played_matches(
        &self,
        user_id: Uuid,
        after: Option<HistoryCursor>,
        limit: u32,
    ) -> Result<Vec<super::PlayedMatch>> {
        account::played_matches(&self.pool, user_id, after, limit).await
    }

    async fn audit(&self, entry: super::AuditEntry) -> Result<()> {
        account::audit(&self.pool, entry).await
    }

    async fn audit_of(&self, target: Uuid) -> Result<Vec<super::AuditEntry>> {
        account::audit_of(&self.pool, target).await
    }

    async fn device_user(&self, device: &DeviceId) -> Result<Option<Uuid>> {
        account::device_user(&self.pool, device).await
    }

    async fn delete_account(
        &self,
        user_id: Uuid,
        anonymous_key: Uuid,
        now: DateTime<Utc>,
    ) -> Result<super::DeletedAccount> {
        account::delete_account(&self.pool, user_id, anonymous_key, now).await
    }

    async fn match_history(
        &self,
        user_id: Uuid,
        after: Option<HistoryCursor>,
        limit: u32,
    ) -> Result<Vec<HistoryEntry>> {
        let rows = sqlx::query(
            "SELECT m.match_id, m.room_id, m.ranked, m.settings, m.seats, m.winner_side,
                    m.end_reason, m.final_totals, jsonb_array_length(m.rounds) AS rounds,
                    m.started_at, m.ended_at,
                    p.seat, p.rating_before, p.rating_after, p.deviation_after
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
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|row| {
                let seat = u8::try_from(row.try_get::<i16, _>("seat")?).unwrap_or(u8::MAX);
                let after: Option<f64> = row.try_get("rating_after")?;
                let your_rating_change = match after {
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
                let end_reason: String = row.try_get("end_reason")?;
                Ok(HistoryEntry {
                    match_id: row.try_get("match_id")?,
                    room_id: row.try_get("room_id")?,
                    ranked: row.try_get("ranked")?,
                    settings: row
                        .try_get::<Json<basra_engine::Settings>, _>("settings")?
                        .0,
                    seats: row.try_get::<Json<Vec<SeatRecord>>, _>("seats")?.0,
                    your_seat: seat,
                    winner_side: row
                        .try_get::<Option<i16>, _>("winner_side")?
                        .and_then(|w| u8::try_from(w).ok()),
                    end_reason: EndReason::from_name(&end_reason).ok_or_else(|| {
                        AccountsError::Internal(format!("stored end reason {end_reason:?}"))
                    })?,
                    final_totals: row.try_get::<Json<Vec<u32>>, _>("final_totals")?.0,
                    rounds: to_u32(i64::from(row.try_get::<i32, _>("rounds")?)),
                    your_rating_change,
                    started_at: row.try_get("started_at")?,
                    ended_at: row.try_get("ended_at")?,
                })
            })
            .collect()
    }

    async fn counts(&self) -> Result<Counts> {
        let row = sqlx::query(
            "SELECT (SELECT count(*) FROM users) AS users,
                    (SELECT count(*) FROM password_credentials) AS credentials,
                    (SELECT count(*) FROM refresh_tokens) AS refresh_tokens,
                    (SELECT count(*) FROM refresh_tokens WHERE revoked_at IS NOT NULL) AS revoked,
                    (SELECT count(*) FROM matches) AS matches,
                    (SELECT count(*) FROM friend_links) AS friend_links",
        )
        .fetch_one(&self.pool)
        .await?;
        let n = |col: &str| -> Result<u64> { Ok(row.try_get::<i64, _>(col)?.max(0) as u64) };
        Ok(Counts {
            users: n("users")?,
            credentials: n("credentials")?,
            refresh_tokens: n("refresh_tokens")?,
            revoked_refresh_tokens: n("revoked")?,
            matches: n("matches")?,
            friend_links: n("friend_links")?,
        })
    }

    async fn user_by_username(&self, username_key: &str) -> Result<Option<User>> {
        friends::user_by_username(&self.pool, username_key).await
    }

    async fn user_by_friend_code(&self, code: &FriendCode) -> Result<Option<User>> {
        friends::user_by_friend_code(&self.pool, code).await
    }

    async fn friend_code(&self, user_id: Uuid) -> Result<Option<FriendCode>> {
        friends::friend_code(&self.pool, user_id).await
    }

    async fn befriend(
        &self,
        actor: Uuid,
        other: Uuid,
        action: Action,
        limits: FriendLimits,
        now: DateTime<Utc>,
    ) -> Result<Outcome> {
        friends::befriend(&self.pool, actor, other, action, limits, now).await
    }

    async fn friend_list(&self, user_id: Uuid) -> Result<FriendList> {
        friends::friend_list(&self.pool, user_id).await
    }

    async fn provider_sign_in(
        &self,
        identity: &crate::oidc::ProviderIdentity,
        new: super::NewProviderAccount,
    ) -> Result<(User, bool)> {
        provider::provider_sign_in(&self.pool, identity, new).await
    }

    async fn link_provider(
        &self,
        user_id: Uuid,
        identity: &crate::oidc::ProviderIdentity,
        now: DateTime<Utc>,
    ) -> Result<User> {
        provider::link_provider(&self.pool, user_id, identity, now).await
    }

    async fn linked_providers(&self, user_id: Uuid) -> Result<Vec<super::LinkedProvider>> {
        provider::linked_providers(&self.pool, user_id).await
    }

    async fn find_by_display_name(&self, fragment: &str, limit: u32) -> Result<Vec<User>> {
        provider::find_by_display_name(&self.pool, fragment, limit).await
    }
}

/// The `match_players` rows of new matches, column by column (one UNNEST insert).
#[derive(Default)]
struct PlayerRows<'a> {
    match_id: Vec<&'a str>,
    seat: Vec<i16>,
    side: Vec<i16>,
    user_id: Vec<Uuid>,
    won: Vec<bool>,
    lost: Vec<bool>,
    basras: Vec<i32>,
    jack: Vec<i32>,
    komi: Vec<i32>,
    before: Vec<Option<f64>>,
    after: Vec<Option<f64>>,
    deviation: Vec<Option<f64>>,
    ended_at: Vec<DateTime<Utc>>,
}

impl<'a> PlayerRows<'a> {
    /// The human seats of each match, with the match's rating changes.
    fn of(matches: impl Iterator<Item = (&'a MatchRecord, &'a Vec<RatingChange>)>) -> Self {
        let mut rows = PlayerRows::default();
        for (record, changes) in matches {
            for (seat, id) in record.players() {
                let basras = record
                    .basra_counts
                    .get(usize::from(seat.side))
                    .copied()
                    .unwrap_or_default();
                let change = changes.iter().find(|c| c.user_id == id);
                rows.match_id.push(&record.match_id);
                rows.seat.push(i16::from(seat.seat));
                rows.side.push(i16::from(seat.side));
                rows.user_id.push(id);
                rows.won.push(record.winner_side == Some(seat.side));
                rows.lost
                    .push(record.winner_side.is_some_and(|w| w != seat.side));
                rows.basras.push(clamp_i32(basras.basra));
                rows.jack.push(clamp_i32(basras.jack));
                rows.komi.push(clamp_i32(basras.komi));
                rows.before.push(change.map(|c| c.rating_before));
                rows.after.push(change.map(|c| c.rating_after));
                rows.deviation.push(change.map(|c| c.deviation_after));
                rows.ended_at.push(record.ended_at);
            }
        }
        rows
    }
}

fn clamp_i32(n: u32) -> i32 {
    i32::try_from(n).unwrap_or(i32::MAX)
}

impl PgStore {
    /// [`Store::record_matches`] without the second try for deleted players.
    async fn record_matches_once(
        &self,
        records: &[MatchRecord],
        now: DateTime<Utc>,
    ) -> Result<Vec<Recorded>> {
        // The first occurrence of each match id is the one that may be recorded; a
        // repeat is answered like a retry.
        let mut first_of: HashMap<&str, usize> = HashMap::with_capacity(records.len());
        for (index, record) in records.iter().enumerate() {
            first_of.entry(record.match_id.as_str()).or_insert(index);
        }
        let candidates: Vec<&MatchRecord> = records
            .iter()
            .enumerate()
            .filter(|(index, r)| first_of[r.match_id.as_str()] == *index)
            .map(|(_, r)| r)
            .collect();

        let counts: Vec<(u32, u32)> = candidates
            .iter()
            .map(|r| action_log::play_counts(&r.actions))
            .collect();

        let mut tx = self.pool.begin().await?;
        // The primary key is the idempotency guard: a concurrent recording of one of
        // these matches waits here for the first to commit, then conflicts. Rows go in
        // match id order, so two batches sharing matches never deadlock.
        let inserted: Vec<String> = sqlx::query_scalar(
            "INSERT INTO matches (match_id, room_id, ranked, settings, seats, seed, action_log,
                                  rounds, final_totals, basra_counts, winner_side, end_reason,
                                  started_at, ended_at, plays, automatic_plays, recorded_at)
             SELECT m.*, $17 FROM UNNEST($1::TEXT[], $2::TEXT[], $3::BOOLEAN[], $4::JSONB[],
                                         $5::JSONB[], $6::BYTEA[], $7::BYTEA[], $8::JSONB[],
                                         $9::JSONB[], $10::JSONB[], $11::SMALLINT[], $12::TEXT[],
                                         $13::TIMESTAMPTZ[], $14::TIMESTAMPTZ[], $15::INT[],
                                         $16::INT[]) AS m
             ORDER BY 1
             ON CONFLICT (match_id) DO NOTHING
             RETURNING match_id",
        )
        .bind(
            candidates
                .iter()
                .map(|r| r.match_id.as_str())
                .collect::<Vec<_>>(),
        )
        .bind(
            candidates
                .iter()
                .map(|r| r.room_id.as_str())
                .collect::<Vec<_>>(),
        )
        .bind(candidates.iter().map(|r| r.ranked).collect::<Vec<_>>())
        .bind(
            candidates
                .iter()
                .map(|r| Json(&r.settings))
                .collect::<Vec<_>>(),
        )
        .bind(
            candidates
                .iter()
                .map(|r| Json(&r.seats))
                .collect::<Vec<_>>(),
        )
        .bind(
            candidates
                .iter()
                .map(|r| r.seed.as_slice())
                .collect::<Vec<_>>(),
        )
        .bind(
            candidates
                .iter()
                .map(|r| action_log::encode(&r.actions))
                .collect::<Vec<_>>(),
        )
        .bind(
            candidates
                .iter()
                .map(|r| Json(&r.rounds))
                .collect::<Vec<_>>(),
        )
        .bind(
            candidates
                .iter()
                .map(|r| Json(&r.final_totals))
                .collect::<Vec<_>>(),
        )
        .bind(
            candidates
                .iter()
                .map(|r| Json(&r.basra_counts))
                .collect::<Vec<_>>(),
        )
        .bind(
            candidates
                .iter()
                .map(|r| r.winner_side.map(i16::from))
                .collect::<Vec<_>>(),
        )
        .bind(
            candidates
                .iter()
                .map(|r| r.end_reason.as_str())
                .collect::<Vec<_>>(),
        )
        .bind(candidates.iter().map(|r| r.started_at).collect::<Vec<_>>())
        .bind(candidates.iter().map(|r| r.ended_at).collect::<Vec<_>>())
        .bind(
            counts
                .iter()
                .map(|c| i32::try_from(c.0).unwrap_or(i32::MAX))
                .collect::<Vec<_>>(),
        )
        .bind(
            counts
                .iter()
                .map(|c| i32::try_from(c.1).unwrap_or(i32::MAX))
                .collect::<Vec<_>>(),
        )
        .bind(now)
        .fetch_all(&mut *tx)
        .await?;
        let inserted: HashSet<String> = inserted.into_iter().collect();
        // The new matches, in request order (the order they are rated in).
        let new: Vec<(usize, &MatchRecord)> = records
            .iter()
            .enumerate()
            .filter(|(index, r)| {
                first_of[r.match_id.as_str()] == *index && inserted.contains(&r.match_id)
            })
            .collect();

        // Lock the players' ratings in id order (no deadlock between batches sharing
        // players) and read them.
        let mut ids: Vec<Uuid> = new
            .iter()
            .flat_map(|(_, r)| r.players().map(|(_, id)| id))
            .collect();
        ids.sort();
        ids.dedup();
        let rows = sqlx::query(
            "SELECT user_id, rating, deviation, volatility FROM ratings
             WHERE user_id = ANY($1) ORDER BY user_id FOR UPDATE",
        )
        .bind(&ids)
        .fetch_all(&mut *tx)
        .await?;
        let mut current = HashMap::with_capacity(rows.len());
        for row in &rows {
            current.insert(
                row.try_get::<Uuid, _>("user_id")?,
                Rating {
                    rating: row.try_get("rating")?,
                    deviation: row.try_get("deviation")?,
                    volatility: row.try_get("volatility")?,
                },
            );
        }
        for &(index, record) in &new {
            if let Some((seat, id)) = record.players().find(|(_, id)| !current.contains_key(id)) {
                // Dropping the transaction rolls the match rows back.
                return Err(AccountsError::invalid(
                    "record.seats",
                    format!("seat {}: unknown user {id}", seat.seat),
                )
                .in_record(index));
            }
        }
        let updates = rate_in_order(new.iter().map(|(_, r)| *r), &mut current);
        let changes: Vec<Vec<RatingChange>> = updates
            .iter()
            .map(|updates| {
                let mut changes: Vec<RatingChange> =
                    updates.iter().map(RatingChange::from).collect();
                changes.sort_by_key(|c| c.seat);
                changes
            })
            .collect();

        let players = PlayerRows::of(new.iter().map(|(_, r)| *r).zip(&changes));
        if !players.match_id.is_empty() {
            sqlx::query(
                "INSERT INTO match_players (match_id, seat, side, user_id, won, lost, basras,
                                            jack_basras, komi_basras, rating_before, rating_after,
                                            deviation_after, ended_at)
                 SELECT * FROM UNNEST($1::TEXT[], $2::SMALLINT[], $3::SMALLINT[], $4::UUID[],
                                      $5::BOOLEAN[], $6::BOOLEAN[], $7::INT[], $8::INT[], $9::INT[],
                                      $10::DOUBLE PRECISION[], $11::DOUBLE PRECISION[],
                                      $12::DOUBLE PRECISION[], $13::TIMESTAMPTZ[])",
            )
            .bind(&players.match_id)
            .bind(&players.seat)
            .bind(&players.side)
            .bind(&players.user_id)
            .bind(&players.won)
            .bind(&players.lost)
            .bind(&players.basras)
            .bind(&players.jack)
            .bind(&players.komi)
            .bind(&players.before)
            .bind(&players.after)
            .bind(&players.deviation)
            .bind(&players.ended_at)
            .execute(&mut *tx)
            .await?;
        }

        // Each changed rating is written once: its value after the batch's last match,
        // and its count of rated matches grown by the batch's.
        let mut rated: HashMap<Uuid, i32> = HashMap::new();
        for update in updates.iter().flatten() {
            *rated.entry(update.user_id).or_default() += 1;
        }
        if !rated.is_empty() {
            let mut users: Vec<Uuid> = rated.keys().copied().collect();
            users.sort();
            let finals: Vec<Rating> = users.iter().map(|id| current[id]).collect();
            sqlx::query(
                "UPDATE ratings r
                 SET rating = n.rating, deviation = n.deviation, volatility = n.volatility,
                     ranked_matches = r.ranked_matches + n.rated, updated_at = $1
                 FROM UNNEST($2::UUID[], $3::DOUBLE PRECISION[], $4::DOUBLE PRECISION[],
                             $5::DOUBLE PRECISION[], $6::INT[])
                      AS n(user_id, rating, deviation, volatility, rated)
                 WHERE r.user_id = n.user_id",
            )
            .bind(now)
            .bind(&users)
            .bind(finals.iter().map(|r| r.rating).collect::<Vec<_>>())
            .bind(finals.iter().map(|r| r.deviation).collect::<Vec<_>>())
            .bind(finals.iter().map(|r| r.volatility).collect::<Vec<_>>())
            .bind(users.iter().map(|id| rated[id]).collect::<Vec<_>>())
            .execute(&mut *tx)
            .await?;
        }

        // The changes stored by the first recording of each match that was not new.
        let mut stored: HashMap<String, Vec<RatingChange>> = HashMap::new();
        let old: Vec<&str> = candidates
            .iter()
            .filter(|r| !inserted.contains(&r.match_id))
            .map(|r| r.match_id.as_str())
            .collect();
        if !old.is_empty() {
            let rows = sqlx::query(
                "SELECT match_id, seat, user_id, rating_before, rating_after, deviation_after
                 FROM match_players
                 WHERE match_id = ANY($1) AND rating_after IS NOT NULL
                 ORDER BY match_id, seat",
            )
            .bind(&old)
            .fetch_all(&mut *tx)
            .await?;
            for row in &rows {
                stored
                    .entry(row.try_get("match_id")?)
                    .or_default()
                    .push(RatingChange {
                        user_id: row.try_get("user_id")?,
                        seat: u8::try_from(row.try_get::<i16, _>("seat")?).unwrap_or(u8::MAX),
                        rating_before: row.try_get("rating_before")?,
                        rating_after: row.try_get("rating_after")?,
                        deviation_after: row.try_get("deviation_after")?,
                    });
            }
        }
        tx.commit().await?;

        for ((_, record), changes) in new.iter().zip(changes) {
            stored.insert(record.match_id.clone(), changes);
        }
        Ok(records
            .iter()
            .enumerate()
            .map(|(index, record)| {
                let id = record.match_id.as_str();
                Recorded {
                    already_recorded: !(first_of[id] == index && inserted.contains(id)),
                    rating_changes: stored.get(id).cloned().unwrap_or_default(),
                }
            })
            .collect())
    }
}
