//! Profiles and names in the memory store ([`Profiles`]): the current season's
//! leaderboard is sorted afresh on each read; a rating still in an earlier season is read
//! as the soft reset leaves it.

use basra_records::BasraCounts;
use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::{Inner, MemoryStore, PlayerRow, RatingRow};
use crate::domain::DisplayName;
use crate::error::{AccountsError, Result};
use crate::names::{NameChange, NameChangeLimit, decide};
use crate::rating::Rating;
use crate::store::{LeaderboardCursor, LeaderboardRow, LeaderboardRules, Profile, Profiles, User};

impl Inner {
    /// The current season's listed players, best first.
    fn listed(&self, rules: LeaderboardRules, season: &str) -> Vec<LeaderboardRow> {
        let rows = self
            .ratings
            .iter()
            .filter(|(_, r)| r.season == season)
            .map(|(id, r)| (*id, r));
        self.listed_rows(rows, rules)
    }

    /// `rows` (each in the season listed) that `rules` list, as leaderboard rows, best
    /// first; each with its rated matches in the season.
    pub(super) fn listed_rows<'a>(
        &self,
        rows: impl Iterator<Item = (Uuid, &'a RatingRow)>,
        rules: LeaderboardRules,
    ) -> Vec<LeaderboardRow> {
        let mut rows: Vec<LeaderboardRow> = rows
            .filter(|(_, r)| r.season_matches >= rules.min_ranked_matches)
            .filter_map(|(id, r)| {
                let user = self.users.get(&id).filter(|u| !u.is_guest)?;
                Some(LeaderboardRow {
                    user_id: id,
                    display_name: user.display_name.clone(),
                    rating: r.rating.rating,
                    ranked_matches: r.season_matches,
                })
            })
            .collect();
        rows.sort_by(|a, b| {
            b.rating
                .total_cmp(&a.rating)
                .then(b.ranked_matches.cmp(&a.ranked_matches))
                .then(a.user_id.cmp(&b.user_id))
        });
        rows
    }

    pub(super) fn find_by_display_name(&self, fragment: &str, limit: u32) -> Vec<User> {
        let fragment = fragment.to_lowercase();
        let mut found: Vec<User> = self
            .users
            .values()
            .filter(|u| u.display_name.to_lowercase().contains(&fragment))
            .cloned()
            .collect();
        found.sort_by(|a, b| a.display_name.cmp(&b.display_name).then(a.id.cmp(&b.id)));
        found.truncate(limit as usize);
        found
    }
}

/// Whether `row` comes after `cursor` in leaderboard order.
pub(super) fn after_cursor(row: &LeaderboardRow, cursor: &LeaderboardCursor) -> bool {
    row.rating < cursor.rating
        || (row.rating == cursor.rating
            && (row.ranked_matches < cursor.ranked_matches
                || (row.ranked_matches == cursor.ranked_matches && row.user_id > cursor.user_id)))
}

impl Profiles for MemoryStore {
    async fn user(&self, id: Uuid) -> Result<Option<User>> {
        Ok(self.lock().users.get(&id).cloned())
    }

    async fn set_display_name(
        &self,
        user_id: Uuid,
        name: &DisplayName,
        limit: NameChangeLimit,
        now: DateTime<Utc>,
    ) -> Result<NameChange> {
        let mut inner = self.lock();
        let inner = &mut *inner;
        let user = inner
            .users
            .get_mut(&user_id)
            .ok_or(AccountsError::UserNotFound)?;
        let start = limit.window_start(now);
        let changes = inner.name_changes.entry(user_id).or_default();
        changes.retain(|t| *t > start);
        let differs = user.display_name != name.as_str();
        let outcome = decide(changes, name.as_str(), differs, limit, now);
        if let NameChange::Done { changed: true, .. } = outcome {
            user.display_name = name.as_str().to_owned();
            changes.push(now);
        }
        Ok(outcome)
    }

    async fn players(&self, ids: &[Uuid]) -> Result<Vec<(User, Rating)>> {
        let season = self.current_season();
        let inner = self.lock();
        let mut seen = std::collections::HashSet::new();
        Ok(ids
            .iter()
            .filter(|id| seen.insert(**id))
            .filter_map(|id| {
                let user = inner.users.get(id)?.clone();
                let rating = inner
                    .ratings
                    .get(id)
                    .map(|row| self.calendar.roll(row.rating, &row.season, &season))
                    .unwrap_or_default();
                Some((user, rating))
            })
            .collect())
    }

    async fn profile(&self, user_id: Uuid, rules: LeaderboardRules) -> Result<Option<Profile>> {
        let season = self.current_season();
        let inner = self.lock();
        let Some(user) = inner.users.get(&user_id).cloned() else {
            return Ok(None);
        };
        let rating = inner
            .ratings
            .get(&user_id)
            .cloned()
            .unwrap_or_else(RatingRow::new);
        let rows = inner
            .players
            .get(&user_id)
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        let count = |f: fn(&PlayerRow) -> bool| rows.iter().filter(|r| f(r)).count() as u32;
        let basras = rows
            .iter()
            .fold(BasraCounts::default(), |acc, r| BasraCounts {
                basra: acc.basra + r.basras.basra,
                jack: acc.jack + r.basras.jack,
                komi: acc.komi + r.basras.komi,
            });
        let leaderboard_rank = inner
            .listed(rules, &season)
            .iter()
            .position(|r| r.user_id == user_id)
            .map(|i| i as u32 + 1);
        Ok(Some(Profile {
            user,
            rating: self.calendar.roll(rating.rating, &rating.season, &season),
            ranked_matches: rating.ranked_matches,
            season_matches: if rating.season == season {
                rating.season_matches
            } else {
                0
            },
            matches_played: rows.len() as u32,
            wins: count(|r| r.won),
            losses: count(|r| r.lost),
            basras,
            leaderboard_rank,
        }))
    }

    async fn leaderboard(
        &self,
        rules: LeaderboardRules,
        after: Option<LeaderboardCursor>,
        limit: u32,
    ) -> Result<Vec<LeaderboardRow>> {
        let season = self.current_season();
        let inner = self.lock();
        Ok(inner
            .listed(rules, &season)
            .into_iter()
            .filter(|row| after.as_ref().is_none_or(|c| after_cursor(row, c)))
            .take(limit as usize)
            .collect())
    }

    async fn leaderboard_position(
        &self,
        user_id: Uuid,
        rules: LeaderboardRules,
    ) -> Result<Option<(u32, LeaderboardRow)>> {
        let season = self.current_season();
        let inner = self.lock();
        Ok(inner
            .listed(rules, &season)
            .into_iter()
            .enumerate()
            .find(|(_, r)| r.user_id == user_id)
            .map(|(i, r)| (i as u32 + 1, r)))
    }

    async fn user_by_username(&self, username_key: &str) -> Result<Option<User>> {
        let inner = self.lock();
        Ok(inner
            .username_keys
            .get(username_key)
            .and_then(|id| inner.users.get(id).cloned()))
    }

    async fn find_by_display_name(&self, fragment: &str, limit: u32) -> Result<Vec<User>> {
        Ok(self.lock().find_by_display_name(fragment, limit))
    }
}
