//! The PostgreSQL store: [`PgStore`], its pool and migrations, and the row mapping the
//! roles share; each role's queries are in the file of its name. Queries use sqlx's
//! runtime API (no compile-time checking, so building needs no database); migrations are
//! embedded from `migrations/` and run by [`PgStore::migrate`].

use std::sync::Arc;
use std::time::Duration;

use sqlx::Row;
use sqlx::postgres::{PgPool, PgPoolOptions, PgRow};

use super::{Counts, PoolStats, Store, User};
use crate::error::{AccountsError, Result};
use crate::refresh::RefreshTokenRecord;
use crate::seasons::Calendar;

mod friends;
mod inbox;
mod moderation;
mod profiles;
mod pushes;
mod records;
mod reports;
mod seasons;
mod sign_in;

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
    /// The rating seasons (none by default).
    calendar: Arc<Calendar>,
}

/// The migrations of `services/accounts/migrations`, embedded at build time.
pub static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations");

impl PgStore {
    /// A store on an existing pool (tests get one per fresh database).
    pub fn new(pool: PgPool) -> PgStore {
        PgStore {
            pool,
            calendar: Arc::default(),
        }
    }

    /// Connects a pool of at most `max_connections` to `url`.
    pub async fn connect(url: &str, max_connections: u32) -> Result<PgStore> {
        let pool = pool_options(max_connections).connect(url).await?;
        Ok(PgStore {
            pool,
            calendar: Arc::default(),
        })
    }

    /// Connects a pool of at most `max_connections` with `options`.
    pub async fn connect_with(
        options: sqlx::postgres::PgConnectOptions,
        max_connections: u32,
    ) -> Result<PgStore> {
        let pool = pool_options(max_connections).connect_with(options).await?;
        Ok(PgStore {
            pool,
            calendar: Arc::default(),
        })
    }

    /// A store whose pool connects on first use: starts even while PostgreSQL is down,
    /// and answers UNAVAILABLE until it is back.
    pub fn connect_lazy(url: &str, max_connections: u32) -> Result<PgStore> {
        let pool = pool_options(max_connections).connect_lazy(url)?;
        Ok(PgStore {
            pool,
            calendar: Arc::default(),
        })
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

    /// The id of the season running now.
    fn current_season(&self) -> String {
        self.calendar.id_at(crate::domain::now()).to_owned()
    }

    /// The connection pool (tests and tools run their own queries on it).
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

impl Store for PgStore {
    fn with_calendar(self, calendar: Arc<Calendar>) -> PgStore {
        PgStore { calendar, ..self }
    }

    fn pool_stats(&self) -> Option<PoolStats> {
        Some(PoolStats {
            size: self.pool.size(),
            idle: self.pool.num_idle(),
            max: self.pool.options().get_max_connections(),
        })
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
}
