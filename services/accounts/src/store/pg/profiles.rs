//! Profiles and names on PostgreSQL ([`Profiles`]): `users` with `ratings` (a rating
//! still in an earlier season read as the soft reset leaves it), the current season's
//! leaderboard as keyset pages, and display name changes: the user's row locked
//! (`FOR UPDATE`) so two changes of one player are serialized, the recent changes read,
//! [`decide`] applied, and the name and the change written in the same transaction.

use basra_records::BasraCounts;
use chrono::{DateTime, Utc};
use sqlx::Row;
use uuid::Uuid;

use super::{PgStore, to_u32, user_from_row};
use crate::domain::DisplayName;
use crate::error::{AccountsError, Result};
use crate::names::{NameChange, NameChangeLimit, decide};
use crate::rating::Rating;
use crate::store::{LeaderboardCursor, LeaderboardRow, LeaderboardRules, Profile, Profiles, User};

impl PgStore {
    /// The rating on `row` (its `rating`, `deviation`, `volatility` and `season_id`) as it
    /// stands in `season`: the soft reset applied to one still in an earlier season.
    fn rating_in(&self, row: &sqlx::postgres::PgRow, season: &str) -> Result<Rating> {
        let rating = Rating {
            rating: row.try_get("rating")?,
            deviation: row.try_get("deviation")?,
            volatility: row.try_get("volatility")?,
        };
        let from: String = row.try_get("season_id")?;
        Ok(self.calendar.roll(rating, &from, season))
    }
}

impl Profiles for PgStore {
    async fn user(&self, id: Uuid) -> Result<Option<User>> {
        let row = sqlx::query(
            "SELECT id, username, display_name, is_guest, created_at FROM users WHERE id = $1",
        )
        .bind(id)
        .fetch_optional(&self.pool)
        .await?;
        row.as_ref().map(user_from_row).transpose()
    }

    async fn players(&self, ids: &[Uuid]) -> Result<Vec<(User, Rating)>> {
        let rows = sqlx::query(
            "SELECT u.id, u.username, u.display_name, u.is_guest, u.created_at,
                    r.rating, r.deviation, r.volatility, r.season_id
             FROM users u JOIN ratings r ON r.user_id = u.id
             WHERE u.id = ANY($1)",
        )
        .bind(ids)
        .fetch_all(&self.pool)
        .await?;
        let season = self.current_season();
        rows.iter()
            .map(|row| Ok((user_from_row(row)?, self.rating_in(row, &season)?)))
            .collect()
    }

    async fn user_by_username(&self, username_key: &str) -> Result<Option<User>> {
        let row = sqlx::query(
            "SELECT id, username, display_name, is_guest, created_at
             FROM users WHERE username_key = $1",
        )
        .bind(username_key)
        .fetch_optional(&self.pool)
        .await?;
        row.as_ref().map(user_from_row).transpose()
    }

    async fn set_display_name(
        &self,
        user_id: Uuid,
        name: &DisplayName,
        limit: NameChangeLimit,
        now: DateTime<Utc>,
    ) -> Result<NameChange> {
        let mut tx = self.pool.begin().await?;
        let current: String =
            sqlx::query("SELECT display_name FROM users WHERE id = $1 FOR UPDATE")
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

    async fn profile(&self, user_id: Uuid, rules: LeaderboardRules) -> Result<Option<Profile>> {
        let Some(row) = sqlx::query(
            "SELECT u.id, u.username, u.display_name, u.is_guest, u.created_at,
                    r.rating, r.deviation, r.volatility, r.ranked_matches, r.season_id,
                    r.season_matches, s.played, s.wins, s.losses, s.basras, s.jack_basras, s.komi_basras
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
        let season = self.current_season();
        let in_season = row.try_get::<String, _>("season_id")? == season;
        Ok(Some(Profile {
            user,
            rating: self.rating_in(&row, &season)?,
            ranked_matches: to_u32(i64::from(row.try_get::<i32, _>("ranked_matches")?)),
            season_matches: if in_season {
                to_u32(i64::from(row.try_get::<i32, _>("season_matches")?))
            } else {
                0
            },
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
        // Rating and the season's rated matches both descend, so "after the cursor" is
        // a row comparison on them, with the user id (ascending) breaking ties.
        let rows = sqlx::query(
            "SELECT r.user_id, u.display_name, r.rating, r.season_matches AS ranked_matches
             FROM ratings r JOIN users u ON u.id = r.user_id
             WHERE r.season_id = $6 AND NOT u.is_guest AND r.season_matches >= $1
               AND ($2::DOUBLE PRECISION IS NULL
                    OR (r.rating, r.season_matches) < ($2, $3)
                    OR ((r.rating, r.season_matches) = ($2, $3) AND r.user_id > $4))
             ORDER BY r.rating DESC, r.season_matches DESC, r.user_id
             LIMIT $5",
        )
        .bind(i32::try_from(rules.min_ranked_matches).unwrap_or(i32::MAX))
        .bind(after.map(|c| c.rating))
        .bind(after.map(|c| i32::try_from(c.ranked_matches).unwrap_or(i32::MAX)))
        .bind(after.map(|c| c.user_id))
        .bind(i64::from(limit))
        .bind(self.current_season())
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
            "SELECT me.user_id, u.display_name, me.rating, me.season_matches AS ranked_matches,
                    (SELECT count(*) FROM ratings r JOIN users ru ON ru.id = r.user_id
                     WHERE r.season_id = $3 AND NOT ru.is_guest AND r.season_matches >= $2
                       AND ((r.rating, r.season_matches) > (me.rating, me.season_matches)
                            OR ((r.rating, r.season_matches) = (me.rating, me.season_matches)
                                AND r.user_id < me.user_id))) AS ahead
             FROM ratings me JOIN users u ON u.id = me.user_id
             WHERE me.user_id = $1 AND me.season_id = $3 AND NOT u.is_guest
               AND me.season_matches >= $2",
        )
        .bind(user_id)
        .bind(i32::try_from(rules.min_ranked_matches).unwrap_or(i32::MAX))
        .bind(self.current_season())
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

    async fn find_by_display_name(&self, fragment: &str, limit: u32) -> Result<Vec<User>> {
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
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(user_from_row).collect()
    }
}
