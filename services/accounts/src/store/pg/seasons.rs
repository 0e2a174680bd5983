//! The finished seasons' leaderboards on PostgreSQL ([`Seasons`]): `season_ratings` (a
//! player's last rating in each finished season), `season_closings` (one row per closed
//! season: the claim that makes the closing happen once).

use chrono::{DateTime, Utc};
use sqlx::Row;
use sqlx::postgres::PgRow;
use uuid::Uuid;

use super::{PgStore, to_u32};
use crate::error::Result;
use crate::rating::Rating;
use crate::store::{
    LeaderboardCursor, LeaderboardRow, LeaderboardRules, SeasonFinish, SeasonRating, Seasons,
};

fn min_matches(rules: LeaderboardRules) -> i32 {
    i32::try_from(rules.min_ranked_matches).unwrap_or(i32::MAX)
}

fn row_of(row: &PgRow) -> Result<LeaderboardRow> {
    Ok(LeaderboardRow {
        user_id: row.try_get("user_id")?,
        display_name: row.try_get("display_name")?,
        rating: row.try_get("rating")?,
        ranked_matches: to_u32(i64::from(row.try_get::<i32, _>("season_matches")?)),
    })
}

/// The count of listed rows of the season (`$2`: the least matches) ahead of `me`.
macro_rules! ahead_sql {
    () => {
        "(SELECT count(*) FROM season_ratings o JOIN users ou ON ou.id = o.user_id
          WHERE o.season_id = me.season_id AND NOT ou.is_guest AND o.season_matches >= $2
            AND ((o.rating, o.season_matches) > (me.rating, me.season_matches)
                 OR ((o.rating, o.season_matches) = (me.rating, me.season_matches)
                     AND o.user_id < me.user_id))) AS ahead"
    };
}

impl Seasons for PgStore {
    async fn close_season(&self, season_id: &str, now: DateTime<Utc>) -> Result<bool> {
        let mut tx = self.pool.begin().await?;
        // The claim: a second closer waits here for the first to commit, then conflicts.
        let claimed = sqlx::query(
            "INSERT INTO season_closings (season_id, closed_at, archived) VALUES ($1, $2, 0)
             ON CONFLICT (season_id) DO NOTHING RETURNING season_id",
        )
        .bind(season_id)
        .bind(now)
        .fetch_optional(&mut *tx)
        .await?
        .is_some();
        if !claimed {
            return Ok(false);
        }
        let archived = sqlx::query(
            "INSERT INTO season_ratings (season_id, user_id, rating, deviation, volatility,
                                         season_matches)
             SELECT season_id, user_id, rating, deviation, volatility, season_matches
             FROM ratings WHERE season_id = $1 AND season_matches > 0
             ON CONFLICT (season_id, user_id) DO NOTHING",
        )
        .bind(season_id)
        .execute(&mut *tx)
        .await?
        .rows_affected();
        sqlx::query("UPDATE season_closings SET archived = $2 WHERE season_id = $1")
            .bind(season_id)
            .bind(i32::try_from(archived).unwrap_or(i32::MAX))
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(true)
    }

    async fn season_leaderboard(
        &self,
        season_id: &str,
        rules: LeaderboardRules,
        after: Option<LeaderboardCursor>,
        limit: u32,
    ) -> Result<Vec<LeaderboardRow>> {
        let rows = sqlx::query(
            "SELECT s.user_id, u.display_name, s.rating, s.season_matches
             FROM season_ratings s JOIN users u ON u.id = s.user_id
             WHERE s.season_id = $6 AND NOT u.is_guest AND s.season_matches >= $1
               AND ($2::DOUBLE PRECISION IS NULL
                    OR (s.rating, s.season_matches) < ($2, $3)
                    OR ((s.rating, s.season_matches) = ($2, $3) AND s.user_id > $4))
             ORDER BY s.rating DESC, s.season_matches DESC, s.user_id
             LIMIT $5",
        )
        .bind(min_matches(rules))
        .bind(after.map(|c| c.rating))
        .bind(after.map(|c| i32::try_from(c.ranked_matches).unwrap_or(i32::MAX)))
        .bind(after.map(|c| c.user_id))
        .bind(i64::from(limit))
        .bind(season_id)
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(row_of).collect()
    }

    async fn season_position(
        &self,
        user_id: Uuid,
        season_id: &str,
        rules: LeaderboardRules,
    ) -> Result<Option<(u32, LeaderboardRow)>> {
        let row = sqlx::query(concat!(
            "SELECT me.user_id, u.display_name, me.rating, me.season_matches, ",
            ahead_sql!(),
            " FROM season_ratings me JOIN users u ON u.id = me.user_id
             WHERE me.user_id = $1 AND me.season_id = $3 AND NOT u.is_guest
               AND me.season_matches >= $2"
        ))
        .bind(user_id)
        .bind(min_matches(rules))
        .bind(season_id)
        .fetch_optional(&self.pool)
        .await?;
        row.map(|row| Ok((to_u32(row.try_get::<i64, _>("ahead")? + 1), row_of(&row)?)))
            .transpose()
    }

    async fn season_finishes(
        &self,
        user_id: Uuid,
        rules: LeaderboardRules,
    ) -> Result<Vec<SeasonFinish>> {
        let rows = sqlx::query(concat!(
            "SELECT me.season_id, me.rating, me.season_matches, ",
            ahead_sql!(),
            " FROM season_ratings me JOIN users u ON u.id = me.user_id
             WHERE me.user_id = $1 AND NOT u.is_guest AND me.season_matches >= $2"
        ))
        .bind(user_id)
        .bind(min_matches(rules))
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|row| {
                Ok(SeasonFinish {
                    season_id: row.try_get("season_id")?,
                    rank: to_u32(row.try_get::<i64, _>("ahead")? + 1),
                    rating: row.try_get("rating")?,
                    ranked_matches: to_u32(i64::from(row.try_get::<i32, _>("season_matches")?)),
                })
            })
            .collect()
    }

    async fn season_ratings(&self, user_id: Uuid) -> Result<Vec<SeasonRating>> {
        let rows = sqlx::query(
            "SELECT season_id, rating, deviation, volatility, season_matches
             FROM season_ratings WHERE user_id = $1 ORDER BY season_id",
        )
        .bind(user_id)
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|row| {
                Ok(SeasonRating {
                    season_id: row.try_get("season_id")?,
                    rating: Rating {
                        rating: row.try_get("rating")?,
                        deviation: row.try_get("deviation")?,
                        volatility: row.try_get("volatility")?,
                    },
                    season_matches: to_u32(i64::from(row.try_get::<i32, _>("season_matches")?)),
                })
            })
            .collect()
    }
}
