//! Match records in the memory store ([`MatchRecords`]): each match once, its players'
//! rows beside it, rated from the ratings before it.

use std::collections::HashMap;

use basra_engine::analysis::PlayReview;
use basra_platform::client_info::ClientInfo;
use basra_records::MatchRecord;
use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::{Inner, MemoryStore, PlayerRow};
use crate::error::{AccountsError, Result};
use crate::rating::{Rating, rate};
use crate::seasons::Calendar;
use crate::store::{
    HistoryCursor, HistoryEntry, KeptAnalysis, MatchRecords, PlayedMatch, RatingChange, Recorded,
};

impl Inner {
    /// The client app of `user_id`'s latest sign-in at or before `at`; of two at the
    /// same time, the one noted last (the list is kept sorted by a stable sort), as
    /// PostgreSQL's `ORDER BY signed_in_at DESC, id DESC`.
    fn client_at(&self, user_id: Uuid, at: DateTime<Utc>) -> Option<ClientInfo> {
        self.clients
            .get(&user_id)?
            .iter()
            .rev()
            .find(|(_, signed_in_at)| *signed_in_at <= at)
            .map(|(client, _)| client.clone())
    }

    /// Records one match whose players all exist (checked by the caller), rated in
    /// `season`: a rated player's rating moves to it first ([`Inner::move_to_season`]).
    fn record_one(&mut self, record: &MatchRecord, calendar: &Calendar, season: &str) -> Recorded {
        if self.matches.contains_key(&record.match_id) {
            return Recorded {
                already_recorded: true,
                rating_changes: self
                    .changes
                    .get(&record.match_id)
                    .cloned()
                    .unwrap_or_default(),
            };
        }
        let current: HashMap<Uuid, Rating> = record
            .players()
            .filter_map(|(_, id)| {
                let row = self.ratings.get(&id)?;
                Some((id, calendar.roll(row.rating, &row.season, season)))
            })
            .collect();
        let updates = rate(record, &current);
        let changes: Vec<RatingChange> = updates.iter().map(RatingChange::from).collect();
        for u in &updates {
            self.move_to_season(u.user_id, calendar, season);
            if let Some(row) = self.ratings.get_mut(&u.user_id) {
                row.rating = u.after;
                row.ranked_matches += 1;
                row.season_matches += 1;
            }
        }
        for (seat, user_id) in record.players() {
            let side = usize::from(seat.side);
            let row = PlayerRow {
                match_id: record.match_id.clone(),
                seat: seat.seat,
                ended_at: record.ended_at,
                won: record.winner_side == Some(seat.side),
                lost: record.winner_side.is_some_and(|w| w != seat.side),
                basras: record.basra_counts.get(side).copied().unwrap_or_default(),
                change: changes.iter().find(|c| c.user_id == user_id).copied(),
                client: self.client_at(user_id, record.ended_at),
            };
            self.players.entry(user_id).or_default().push(row);
        }
        self.changes
            .insert(record.match_id.clone(), changes.clone());
        self.matches.insert(record.match_id.clone(), record.clone());
        Recorded {
            already_recorded: false,
            rating_changes: changes,
        }
    }

    /// Up to `limit` of `user_id`'s matches after `after`, newest first (ended_at, then
    /// match id, descending), each as the player's row and the record.
    fn history_page<'a>(
        &'a self,
        user_id: Uuid,
        after: Option<&'a HistoryCursor>,
        limit: u32,
    ) -> impl Iterator<Item = (&'a PlayerRow, &'a MatchRecord)> {
        let mut rows: Vec<&PlayerRow> = self
            .players
            .get(&user_id)
            .map(|rows| rows.iter().collect())
            .unwrap_or_default();
        rows.sort_by(|a, b| {
            b.ended_at
                .cmp(&a.ended_at)
                .then_with(|| b.match_id.cmp(&a.match_id))
        });
        rows.into_iter()
            .filter(move |r| {
                after.is_none_or(|c| {
                    (r.ended_at, r.match_id.as_str()) < (c.ended_at, c.match_id.as_str())
                })
            })
            .take(limit as usize)
            .filter_map(|r| Some((r, self.matches.get(&r.match_id)?)))
    }
}

impl MatchRecords for MemoryStore {
    async fn record_matches(
        &self,
        records: &[MatchRecord],
        now: DateTime<Utc>,
    ) -> Result<Vec<Recorded>> {
        let season = self.calendar.id_at(now).to_owned();
        let mut inner = self.lock();
        // A seat of an account deleted while its match was played becomes a placeholder.
        let records: Vec<std::borrow::Cow<'_, MatchRecord>> = records
            .iter()
            .map(|record| {
                let deleted = inner.deleted_among(record.players().map(|(_, id)| id));
                match crate::deletion::placeholder_seats(record, &deleted) {
                    Some(changed) => std::borrow::Cow::Owned(changed),
                    None => std::borrow::Cow::Borrowed(record),
                }
            })
            .collect();
        // Every player must exist before anything is written (all or nothing).
        for (index, record) in records.iter().enumerate() {
            if inner.matches.contains_key(&record.match_id) {
                continue;
            }
            if let Some((seat, user_id)) = record
                .players()
                .find(|(_, id)| !inner.ratings.contains_key(id))
            {
                return Err(AccountsError::invalid(
                    "record.seats",
                    format!("seat {}: unknown user {user_id}", seat.seat),
                )
                .in_record(index));
            }
        }
        Ok(records
            .iter()
            .map(|record| inner.record_one(record, &self.calendar, &season))
            .collect())
    }

    async fn played_matches(
        &self,
        user_id: Uuid,
        after: Option<HistoryCursor>,
        limit: u32,
    ) -> Result<Vec<PlayedMatch>> {
        let inner = self.lock();
        Ok(inner
            .history_page(user_id, after.as_ref(), limit)
            .map(|(r, m)| PlayedMatch {
                record: m.clone(),
                your_seat: r.seat,
                rating_change: r.change,
                your_client: r.client.clone(),
            })
            .collect())
    }

    async fn match_history(
        &self,
        user_id: Uuid,
        after: Option<HistoryCursor>,
        limit: u32,
    ) -> Result<Vec<HistoryEntry>> {
        let inner = self.lock();
        Ok(inner
            .history_page(user_id, after.as_ref(), limit)
            .map(|(r, m)| HistoryEntry {
                match_id: m.match_id.clone(),
                room_id: m.room_id.clone(),
                ranked: m.ranked,
                settings: m.settings,
                seats: m.seats.clone(),
                your_seat: r.seat,
                winner_side: m.winner_side,
                end_reason: m.end_reason,
                final_totals: m.final_totals.clone(),
                rounds: m.rounds.len() as u32,
                your_rating_change: r.change,
                started_at: m.started_at,
                ended_at: m.ended_at,
            })
            .collect())
    }

    async fn played_match(&self, user_id: Uuid, match_id: &str) -> Result<Option<PlayedMatch>> {
        let inner = self.lock();
        let Some(row) = inner
            .players
            .get(&user_id)
            .and_then(|rows| rows.iter().find(|r| r.match_id == match_id))
        else {
            return Ok(None);
        };
        Ok(inner.matches.get(match_id).map(|record| PlayedMatch {
            record: record.clone(),
            your_seat: row.seat,
            rating_change: row.change,
            your_client: row.client.clone(),
        }))
    }

    async fn recorded_match(&self, match_id: &str) -> Result<Option<MatchRecord>> {
        Ok(self.lock().matches.get(match_id).cloned())
    }

    async fn match_analysis(
        &self,
        match_id: &str,
        seat: u8,
        worlds: u32,
    ) -> Result<Option<Vec<PlayReview>>> {
        Ok(self
            .lock()
            .analyses
            .get(&(match_id.to_owned(), seat))
            .filter(|(w, _)| *w == worlds)
            .map(|(_, reviews)| reviews.clone()))
    }

    async fn keep_match_analysis(
        &self,
        match_id: &str,
        seat: u8,
        worlds: u32,
        reviews: &[PlayReview],
        _now: DateTime<Utc>,
    ) -> Result<()> {
        let mut inner = self.lock();
        if !inner.matches.contains_key(match_id) {
            return Ok(());
        }
        let kept = inner
            .analyses
            .entry((match_id.to_owned(), seat))
            .or_insert_with(|| (worlds, reviews.to_vec()));
        if kept.0 != worlds {
            *kept = (worlds, reviews.to_vec());
        }
        Ok(())
    }

    async fn kept_analyses(&self, seats: &[(String, u8)]) -> Result<Vec<KeptAnalysis>> {
        let inner = self.lock();
        Ok(seats
            .iter()
            .filter_map(|key| {
                let (worlds, reviews) = inner.analyses.get(key)?;
                Some(KeptAnalysis {
                    match_id: key.0.clone(),
                    seat: key.1,
                    worlds: *worlds,
                    reviews: reviews.clone(),
                })
            })
            .collect())
    }
}
