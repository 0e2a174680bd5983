//! Match records on PostgreSQL ([`MatchRecords`]): `matches` (one row per match, the
//! action log in its binary form) and `match_players` (one row per human seat, with its
//! rating change), written by one transaction per batch; histories read in keyset pages.

use std::collections::{HashMap, HashSet};

use basra_engine::analysis::PlayReview;
use basra_platform::client_info::ClientInfo;
use basra_records::stored::StoredLog;
use basra_records::{
    ActionRecord, BasraCounts, EndReason, MatchRecord, RoundRecord, SeatRecord, action_log,
};
use chrono::{DateTime, Utc};
use sqlx::Row;
use sqlx::postgres::PgRow;
use sqlx::types::Json;
use uuid::Uuid;

use super::{PgStore, to_u32};
use crate::error::{AccountsError, Result};
use crate::rating::{Rating, rate_in_order};
use crate::seasons::NO_SEASON;
use crate::store::{
    HistoryCursor, HistoryEntry, KeptAnalysis, MatchRecords, PlayedMatch, RatingChange, Recorded,
};

/// The query of a page of one player's matches after a cursor, newest first (ended_at,
/// then match id, descending), selecting `$columns` (`m`: the match, `p`: the player's
/// seat) and the seat's columns [`seat_and_change`] reads. Binds: the player, the
/// cursor's end and match id (both NULL for the first page), the page's size.
macro_rules! history_page_sql {
    ($($columns:tt)+) => {
        concat!(
            "SELECT ",
            $($columns)+,
            ", p.seat, p.rating_before, p.rating_after, p.deviation_after
             FROM match_players p JOIN matches m ON m.match_id = p.match_id
             WHERE p.user_id = $1
               AND ($2::TIMESTAMPTZ IS NULL OR (p.ended_at, p.match_id) < ($2, $3))
             ORDER BY p.ended_at DESC, p.match_id DESC
             LIMIT $4"
        )
    };
}

/// The columns [`record_from_row`] reads (`m`: the match).
macro_rules! record_columns {
    () => {
        "m.match_id, m.room_id, m.ranked, m.settings, m.seats, m.seed, m.action_log,
         m.actions, m.rounds, m.final_totals, m.basra_counts, m.winner_side,
         m.end_reason, m.started_at, m.ended_at, m.allow_spectators, m.event_id"
    };
}

/// The columns [`played_from_row`] reads besides the seat's (`m`: the match, `p`: the
/// player's seat).
macro_rules! played_columns {
    () => {
        concat!(
            record_columns!(),
            ", p.client_platform, p.client_app_version"
        )
    };
}

impl MatchRecords for PgStore {
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
                let deleted = super::moderation::deleted_among(&self.pool, &ids).await?;
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

    async fn match_history(
        &self,
        user_id: Uuid,
        after: Option<HistoryCursor>,
        limit: u32,
    ) -> Result<Vec<HistoryEntry>> {
        let sql = history_page_sql!(
            "m.match_id, m.room_id, m.ranked, m.settings, m.seats, m.winner_side, m.end_reason,
             m.final_totals, jsonb_array_length(m.rounds) AS rounds, m.started_at, m.ended_at"
        );
        let rows = self.history_page(sql, user_id, after, limit).await?;
        rows.iter()
            .map(|row| {
                let (your_seat, your_rating_change) = seat_and_change(row, user_id)?;
                Ok(HistoryEntry {
                    match_id: row.try_get("match_id")?,
                    room_id: row.try_get("room_id")?,
                    ranked: row.try_get("ranked")?,
                    settings: row
                        .try_get::<Json<basra_engine::Settings>, _>("settings")?
                        .0,
                    seats: row.try_get::<Json<Vec<SeatRecord>>, _>("seats")?.0,
                    your_seat,
                    winner_side: winner_side(row)?,
                    end_reason: end_reason(row)?,
                    final_totals: row.try_get::<Json<Vec<u32>>, _>("final_totals")?.0,
                    rounds: to_u32(i64::from(row.try_get::<i32, _>("rounds")?)),
                    your_rating_change,
                    started_at: row.try_get("started_at")?,
                    ended_at: row.try_get("ended_at")?,
                })
            })
            .collect()
    }

    async fn played_matches(
        &self,
        user_id: Uuid,
        after: Option<HistoryCursor>,
        limit: u32,
    ) -> Result<Vec<PlayedMatch>> {
        let sql = history_page_sql!(played_columns!());
        let rows = self.history_page(sql, user_id, after, limit).await?;
        rows.iter()
            .map(|row| played_from_row(row, user_id))
            .collect()
    }

    async fn played_match(&self, user_id: Uuid, match_id: &str) -> Result<Option<PlayedMatch>> {
        let row = sqlx::query(concat!(
            "SELECT ",
            played_columns!(),
            ", p.seat, p.rating_before, p.rating_after, p.deviation_after
             FROM match_players p JOIN matches m ON m.match_id = p.match_id
             WHERE p.user_id = $1 AND p.match_id = $2"
        ))
        .bind(user_id)
        .bind(match_id)
        .fetch_optional(&self.pool)
        .await?;
        row.map(|row| played_from_row(&row, user_id)).transpose()
    }

    async fn recorded_match(&self, match_id: &str) -> Result<Option<MatchRecord>> {
        let row = sqlx::query(concat!(
            "SELECT ",
            record_columns!(),
            " FROM matches m WHERE m.match_id = $1"
        ))
        .bind(match_id)
        .fetch_optional(&self.pool)
        .await?;
        row.map(|row| record_from_row(&row)).transpose()
    }

    async fn match_analysis(
        &self,
        match_id: &str,
        seat: u8,
        worlds: u32,
    ) -> Result<Option<Vec<PlayReview>>> {
        let kept: Option<Json<Vec<PlayReview>>> = sqlx::query_scalar(
            "SELECT reviews FROM match_analyses
             WHERE match_id = $1 AND seat = $2 AND worlds = $3",
        )
        .bind(match_id)
        .bind(i16::from(seat))
        .bind(i32::try_from(worlds).unwrap_or(i32::MAX))
        .fetch_optional(&self.pool)
        .await?;
        Ok(kept.map(|k| k.0))
    }

    async fn keep_match_analysis(
        &self,
        match_id: &str,
        seat: u8,
        worlds: u32,
        reviews: &[PlayReview],
        now: DateTime<Utc>,
    ) -> Result<()> {
        sqlx::query(
            "INSERT INTO match_analyses (match_id, seat, worlds, reviews, computed_at)
             VALUES ($1, $2, $3, $4, $5)
             ON CONFLICT (match_id, seat) DO UPDATE
                 SET worlds = EXCLUDED.worlds, reviews = EXCLUDED.reviews,
                     computed_at = EXCLUDED.computed_at
                 WHERE match_analyses.worlds <> EXCLUDED.worlds",
        )
        .bind(match_id)
        .bind(i16::from(seat))
        .bind(i32::try_from(worlds).unwrap_or(i32::MAX))
        .bind(Json(reviews))
        .bind(now)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    async fn kept_analyses(&self, seats: &[(String, u8)]) -> Result<Vec<KeptAnalysis>> {
        if seats.is_empty() {
            return Ok(Vec::new());
        }
        let ids: Vec<&str> = seats.iter().map(|(id, _)| id.as_str()).collect();
        let numbers: Vec<i16> = seats.iter().map(|(_, seat)| i16::from(*seat)).collect();
        let rows = sqlx::query(
            "SELECT a.match_id, a.seat, a.worlds, a.reviews
             FROM match_analyses a
             JOIN unnest($1::TEXT[], $2::SMALLINT[]) AS k (match_id, seat)
               ON a.match_id = k.match_id AND a.seat = k.seat",
        )
        .bind(&ids)
        .bind(&numbers)
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|row| {
                let seat: i16 = row.try_get("seat")?;
                let worlds: i32 = row.try_get("worlds")?;
                let reviews: Json<Vec<PlayReview>> = row.try_get("reviews")?;
                Ok(KeptAnalysis {
                    match_id: row.try_get("match_id")?,
                    seat: u8::try_from(seat)
                        .map_err(|_| AccountsError::Internal(format!("stored seat {seat}")))?,
                    worlds: to_u32(i64::from(worlds)),
                    reviews: reviews.0,
                })
            })
            .collect()
    }
}

/// A whole match of one player from a row of [`played_columns!`] and the seat's columns.
fn played_from_row(row: &PgRow, user_id: Uuid) -> Result<PlayedMatch> {
    let (your_seat, rating_change) = seat_and_change(row, user_id)?;
    // Written together (both or neither).
    let your_client = match (
        row.try_get::<Option<String>, _>("client_platform")?,
        row.try_get::<Option<String>, _>("client_app_version")?,
    ) {
        (Some(platform), Some(version)) => Some(ClientInfo { platform, version }),
        _ => None,
    };
    Ok(PlayedMatch {
        record: record_from_row(row)?,
        your_seat,
        rating_change,
        your_client,
    })
}

/// A whole match from a row of [`record_columns!`].
fn record_from_row(row: &PgRow) -> Result<MatchRecord> {
    let binary: Option<Vec<u8>> = row.try_get("action_log")?;
    let json: Option<Json<Vec<ActionRecord>>> = row.try_get("actions")?;
    let log = match (&binary, json) {
        (Some(bytes), _) => StoredLog::Binary(bytes),
        (None, Some(actions)) => StoredLog::Json(actions.0),
        (None, None) => StoredLog::Json(Vec::new()),
    };
    let actions = log
        .decode()
        .map_err(|e| AccountsError::Internal(format!("stored action log: {e}")))?;
    let seed: Vec<u8> = row.try_get("seed")?;
    Ok(MatchRecord {
        match_id: row.try_get("match_id")?,
        room_id: row.try_get("room_id")?,
        ranked: row.try_get("ranked")?,
        settings: row
            .try_get::<Json<basra_engine::Settings>, _>("settings")?
            .0,
        seats: row.try_get::<Json<Vec<SeatRecord>>, _>("seats")?.0,
        seed: seed
            .try_into()
            .map_err(|_| AccountsError::Internal("stored seed is not 32 bytes".into()))?,
        actions,
        rounds: row.try_get::<Json<Vec<RoundRecord>>, _>("rounds")?.0,
        final_totals: row.try_get::<Json<Vec<u32>>, _>("final_totals")?.0,
        basra_counts: row.try_get::<Json<Vec<BasraCounts>>, _>("basra_counts")?.0,
        winner_side: winner_side(row)?,
        end_reason: end_reason(row)?,
        started_at: row.try_get("started_at")?,
        ended_at: row.try_get("ended_at")?,
        allow_spectators: row.try_get("allow_spectators")?,
        event_id: row.try_get("event_id")?,
    })
}

impl PgStore {
    /// The rows of a page of `user_id`'s matches: `sql` is [`history_page_sql!`]'s.
    async fn history_page(
        &self,
        sql: &'static str,
        user_id: Uuid,
        after: Option<HistoryCursor>,
        limit: u32,
    ) -> Result<Vec<PgRow>> {
        Ok(sqlx::query(sql)
            .bind(user_id)
            .bind(after.as_ref().map(|c| c.ended_at))
            .bind(after.as_ref().map(|c| c.match_id.as_str()))
            .bind(i64::from(limit))
            .fetch_all(&self.pool)
            .await?)
    }
}

/// The player's seat on a history row, and their rating change when the match changed
/// it.
fn seat_and_change(row: &PgRow, user_id: Uuid) -> Result<(u8, Option<RatingChange>)> {
    let seat = u8::try_from(row.try_get::<i16, _>("seat")?).unwrap_or(u8::MAX);
    let change = match row.try_get::<Option<f64>, _>("rating_after")? {
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
    Ok((seat, change))
}

/// The winning side stored with a match.
fn winner_side(row: &PgRow) -> Result<Option<u8>> {
    Ok(row
        .try_get::<Option<i16>, _>("winner_side")?
        .and_then(|w| u8::try_from(w).ok()))
}

/// How a stored match ended.
fn end_reason(row: &PgRow) -> Result<EndReason> {
    let name: String = row.try_get("end_reason")?;
    EndReason::from_name(&name)
        .ok_or_else(|| AccountsError::Internal(format!("stored end reason {name:?}")))
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

/// One column of the new matches' rows: `value` of each candidate, in order.
fn column<'a, T>(candidates: &[&'a MatchRecord], value: impl Fn(&'a MatchRecord) -> T) -> Vec<T> {
    candidates.iter().map(|r| value(r)).collect()
}

fn clamp_i32(n: u32) -> i32 {
    i32::try_from(n).unwrap_or(i32::MAX)
}

impl PgStore {
    /// [`MatchRecords::record_matches`] without the second try for deleted players.
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
                                  started_at, ended_at, plays, automatic_plays,
                                  allow_spectators, event_id, recorded_at)
             SELECT m.*, $19 FROM UNNEST($1::TEXT[], $2::TEXT[], $3::BOOLEAN[], $4::JSONB[],
                                         $5::JSONB[], $6::BYTEA[], $7::BYTEA[], $8::JSONB[],
                                         $9::JSONB[], $10::JSONB[], $11::SMALLINT[], $12::TEXT[],
                                         $13::TIMESTAMPTZ[], $14::TIMESTAMPTZ[], $15::INT[],
                                         $16::INT[], $17::BOOLEAN[], $18::TEXT[]) AS m
             ORDER BY 1
             ON CONFLICT (match_id) DO NOTHING
             RETURNING match_id",
        )
        .bind(column(&candidates, |r| r.match_id.as_str()))
        .bind(column(&candidates, |r| r.room_id.as_str()))
        .bind(column(&candidates, |r| r.ranked))
        .bind(column(&candidates, |r| Json(&r.settings)))
        .bind(column(&candidates, |r| Json(&r.seats)))
        .bind(column(&candidates, |r| r.seed.as_slice()))
        .bind(column(&candidates, |r| action_log::encode(&r.actions)))
        .bind(column(&candidates, |r| Json(&r.rounds)))
        .bind(column(&candidates, |r| Json(&r.final_totals)))
        .bind(column(&candidates, |r| Json(&r.basra_counts)))
        .bind(column(&candidates, |r| r.winner_side.map(i16::from)))
        .bind(column(&candidates, |r| r.end_reason.as_str()))
        .bind(column(&candidates, |r| r.started_at))
        .bind(column(&candidates, |r| r.ended_at))
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
        .bind(column(&candidates, |r| r.allow_spectators))
        .bind(column(&candidates, |r| r.event_id.as_deref()))
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
            "SELECT user_id, rating, deviation, volatility, season_id, season_matches
             FROM ratings WHERE user_id = ANY($1) ORDER BY user_id FOR UPDATE",
        )
        .bind(&ids)
        .fetch_all(&mut *tx)
        .await?;
        // Each player's rating as it stands in the season of `now` (the soft reset applied
        // to one still in an earlier season), and the stored row it came from.
        let season = self.calendar.id_at(now).to_owned();
        let mut current = HashMap::with_capacity(rows.len());
        let mut stored_rows: HashMap<Uuid, (Rating, String, i32)> = HashMap::new();
        for row in &rows {
            let user_id: Uuid = row.try_get("user_id")?;
            let rating = Rating {
                rating: row.try_get("rating")?,
                deviation: row.try_get("deviation")?,
                volatility: row.try_get("volatility")?,
            };
            let from: String = row.try_get("season_id")?;
            current.insert(user_id, self.calendar.roll(rating, &from, &season));
            stored_rows.insert(user_id, (rating, from, row.try_get("season_matches")?));
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
            // Each seat's client app: its player's latest sign-in at or before the
            // match's end that named one (`sign_in_clients_user` finds it; the same
            // pick as the memory store's `client_at`).
            sqlx::query(
                "INSERT INTO match_players (match_id, seat, side, user_id, won, lost, basras,
                                            jack_basras, komi_basras, rating_before, rating_after,
                                            deviation_after, ended_at, client_platform,
                                            client_app_version)
                 SELECT p.*, c.platform, c.app_version
                 FROM UNNEST($1::TEXT[], $2::SMALLINT[], $3::SMALLINT[], $4::UUID[],
                             $5::BOOLEAN[], $6::BOOLEAN[], $7::INT[], $8::INT[], $9::INT[],
                             $10::DOUBLE PRECISION[], $11::DOUBLE PRECISION[],
                             $12::DOUBLE PRECISION[], $13::TIMESTAMPTZ[])
                      AS p(match_id, seat, side, user_id, won, lost, basras, jack_basras,
                           komi_basras, rating_before, rating_after, deviation_after, ended_at)
                 LEFT JOIN LATERAL (
                     SELECT s.platform, s.app_version FROM sign_in_clients s
                     WHERE s.user_id = p.user_id AND s.signed_in_at <= p.ended_at
                     ORDER BY s.signed_in_at DESC, s.id DESC
                     LIMIT 1
                 ) c ON TRUE",
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
            // A rating that moves on to this season leaves its last value in its old one
            // archived (the closing of that season may have archived it already).
            let moving: Vec<(Uuid, &(Rating, String, i32))> = users
                .iter()
                .filter_map(|id| Some((*id, stored_rows.get(id)?)))
                .filter(|(_, (_, from, matches))| {
                    *from != season && from != NO_SEASON && *matches > 0
                })
                .collect();
            if !moving.is_empty() {
                sqlx::query(
                    "INSERT INTO season_ratings (season_id, user_id, rating, deviation,
                                                 volatility, season_matches)
                     SELECT * FROM UNNEST($1::TEXT[], $2::UUID[], $3::DOUBLE PRECISION[],
                                          $4::DOUBLE PRECISION[], $5::DOUBLE PRECISION[],
                                          $6::INT[])
                     ON CONFLICT (season_id, user_id) DO NOTHING",
                )
                .bind(moving.iter().map(|(_, r)| r.1.as_str()).collect::<Vec<_>>())
                .bind(moving.iter().map(|(id, _)| *id).collect::<Vec<_>>())
                .bind(moving.iter().map(|(_, r)| r.0.rating).collect::<Vec<_>>())
                .bind(
                    moving
                        .iter()
                        .map(|(_, r)| r.0.deviation)
                        .collect::<Vec<_>>(),
                )
                .bind(
                    moving
                        .iter()
                        .map(|(_, r)| r.0.volatility)
                        .collect::<Vec<_>>(),
                )
                .bind(moving.iter().map(|(_, r)| r.2).collect::<Vec<_>>())
                .execute(&mut *tx)
                .await?;
            }
            let finals: Vec<Rating> = users.iter().map(|id| current[id]).collect();
            sqlx::query(
                "UPDATE ratings r
                 SET rating = n.rating, deviation = n.deviation, volatility = n.volatility,
                     ranked_matches = r.ranked_matches + n.rated, updated_at = $1,
                     season_matches = CASE WHEN r.season_id = $7 THEN r.season_matches + n.rated
                                           ELSE n.rated END,
                     season_id = $7
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
            .bind(&season)
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
