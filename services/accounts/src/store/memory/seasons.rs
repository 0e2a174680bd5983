//! The finished seasons' leaderboards in the memory store ([`Seasons`]): each season's
//! archived ratings, sorted afresh on each read.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::{Inner, MemoryStore, RatingRow};
use crate::error::Result;
use crate::seasons::{Calendar, NO_SEASON};
use crate::store::{
    LeaderboardCursor, LeaderboardRow, LeaderboardRules, SeasonFinish, SeasonRating, Seasons,
};

impl Inner {
    /// Moves `user_id`'s rating to `season` if it is in an earlier one: its last value
    /// there archived (unless already), then the soft reset applied
    /// ([`Calendar::roll`]) and the season's rated matches counted from 0.
    pub(super) fn move_to_season(&mut self, user_id: Uuid, calendar: &Calendar, season: &str) {
        let Some(row) = self.ratings.get(&user_id).cloned() else {
            return;
        };
        if row.season == season {
            return;
        }
        if row.season != NO_SEASON && row.season_matches > 0 {
            self.season_ratings
                .entry(row.season.clone())
                .or_default()
                .entry(user_id)
                .or_insert_with(|| row.clone());
        }
        self.ratings.insert(
            user_id,
            RatingRow {
                rating: calendar.roll(row.rating, &row.season, season),
                ranked_matches: row.ranked_matches,
                season: season.to_owned(),
                season_matches: 0,
            },
        );
    }

    /// The listed rows of an archived season, best first.
    fn season_listed(&self, season_id: &str, rules: LeaderboardRules) -> Vec<LeaderboardRow> {
        let Some(rows) = self.season_ratings.get(season_id) else {
            return Vec::new();
        };
        let rows = rows.iter().map(|(id, r)| (*id, r));
        self.listed_rows(rows, rules)
    }
}

impl Seasons for MemoryStore {
    async fn close_season(&self, season_id: &str, now: DateTime<Utc>) -> Result<bool> {
        let mut inner = self.lock();
        if inner.closed_seasons.contains_key(season_id) {
            return Ok(false);
        }
        inner.closed_seasons.insert(season_id.to_owned(), now);
        let still: Vec<(Uuid, RatingRow)> = inner
            .ratings
            .iter()
            .filter(|(_, r)| r.season == season_id && r.season_matches > 0)
            .map(|(id, r)| (*id, r.clone()))
            .collect();
        let archive = inner
            .season_ratings
            .entry(season_id.to_owned())
            .or_default();
        for (id, row) in still {
            archive.entry(id).or_insert(row);
        }
        Ok(true)
    }

    async fn season_leaderboard(
        &self,
        season_id: &str,
        rules: LeaderboardRules,
        after: Option<LeaderboardCursor>,
        limit: u32,
    ) -> Result<Vec<LeaderboardRow>> {
        let inner = self.lock();
        Ok(inner
            .season_listed(season_id, rules)
            .into_iter()
            .filter(|row| {
                after
                    .as_ref()
                    .is_none_or(|c| super::profiles::after_cursor(row, c))
            })
            .take(limit as usize)
            .collect())
    }

    async fn season_position(
        &self,
        user_id: Uuid,
        season_id: &str,
        rules: LeaderboardRules,
    ) -> Result<Option<(u32, LeaderboardRow)>> {
        let inner = self.lock();
        Ok(inner
            .season_listed(season_id, rules)
            .into_iter()
            .enumerate()
            .find(|(_, r)| r.user_id == user_id)
            .map(|(i, r)| (i as u32 + 1, r)))
    }

    async fn season_finishes(
        &self,
        user_id: Uuid,
        rules: LeaderboardRules,
    ) -> Result<Vec<SeasonFinish>> {
        let inner = self.lock();
        Ok(inner
            .season_ratings
            .keys()
            .filter_map(|season| {
                let (i, row) = inner
                    .season_listed(season, rules)
                    .into_iter()
                    .enumerate()
                    .find(|(_, r)| r.user_id == user_id)?;
                Some(SeasonFinish {
                    season_id: season.clone(),
                    rank: i as u32 + 1,
                    rating: row.rating,
                    ranked_matches: row.ranked_matches,
                })
            })
            .collect())
    }

    async fn season_ratings(&self, user_id: Uuid) -> Result<Vec<SeasonRating>> {
        let inner = self.lock();
        let mut out: Vec<SeasonRating> = inner
            .season_ratings
            .iter()
            .filter_map(|(season, rows)| {
                let row = rows.get(&user_id)?;
                Some(SeasonRating {
                    season_id: season.clone(),
                    rating: row.rating,
                    season_matches: row.season_matches,
                })
            })
            .collect();
        out.sort_by(|a, b| a.season_id.cmp(&b.season_id));
        Ok(out)
    }
}
