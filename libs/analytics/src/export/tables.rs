//! The four exported tables, each one list of columns (a public contract, documented in
//! the README; add columns at the end, never change or remove one) that gives its Arrow
//! schema, its builder and its reader ([`table!`](super::columns)); and how each
//! builder turns a decoded record into rows.

use std::sync::LazyLock;

use arrow_schema::SchemaRef;
use basra_engine::{BasraKind, Card};
use chrono::{DateTime, Utc};

use super::columns::{Boolean, Float64, Int16, Int32, Nullable, Timestamp, Utf8, Utf8List, table};
use super::replay::PlayRow;
use super::source::StoredMatch;

/// The exported tables, in the order they are written.
pub const TABLES: [Table; 4] = [
    Table::Matches,
    Table::MatchPlayers,
    Table::Rounds,
    Table::Plays,
];

/// One exported table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Table {
    /// One row per match.
    Matches,
    /// One row per seat per match.
    MatchPlayers,
    /// One row per round per side.
    Rounds,
    /// One row per play.
    Plays,
}

impl Table {
    /// The table's directory name.
    pub fn name(self) -> &'static str {
        match self {
            Table::Matches => "matches",
            Table::MatchPlayers => "match_players",
            Table::Rounds => "rounds",
            Table::Plays => "plays",
        }
    }

    /// The table's schema.
    pub fn schema(self) -> SchemaRef {
        match self {
            Table::Matches => MATCHES.clone(),
            Table::MatchPlayers => MATCH_PLAYERS.clone(),
            Table::Rounds => ROUNDS.clone(),
            Table::Plays => PLAYS.clone(),
        }
    }
}

table! {
    "matches";
    static MATCHES;
    pub struct MatchesBuilder;
    pub struct MatchesColumns;
    columns {
        match_id: Utf8,
        room_id: Utf8,
        mode: Utf8,
        ranked: Boolean,
        seats: Int16,
        settings_preset: Utf8,
        target_score: Int32,
        started_at: Timestamp,
        ended_at: Timestamp,
        duration_seconds: Float64,
        rounds: Int32,
        plays: Int32,
        automatic_plays: Int32,
        winner_side: Nullable<Int16>,
        end_reason: Utf8,
        side0_total: Int32,
        side1_total: Int32,
        bots: Int16,
        humans: Int16,
        settings: Utf8,
        recorded_at: Timestamp,
    }
}

table! {
    "match_players";
    static MATCH_PLAYERS;
    pub struct MatchPlayersBuilder;
    pub struct MatchPlayersColumns;
    columns {
        match_id: Utf8,
        seat: Int16,
        side: Int16,
        user_id: Nullable<Utf8>,
        is_bot: Boolean,
        won: Boolean,
        lost: Boolean,
        side_total: Int32,
        basras: Int32,
        jack_basras: Int32,
        komi_basras: Int32,
        rating_before: Nullable<Float64>,
        rating_after: Nullable<Float64>,
        rating_change: Nullable<Float64>,
        deviation_after: Nullable<Float64>,
        opponent_rating_before: Nullable<Float64>,
        ranked: Boolean,
        ended_at: Timestamp,
        seat_fill: Nullable<Utf8>,
        queue_wait_seconds: Nullable<Float64>,
        client_platform: Nullable<Utf8>,
        client_app_version: Nullable<Utf8>,
    }
}

table! {
    "rounds";
    static ROUNDS;
    pub struct RoundsBuilder;
    pub struct RoundsColumns;
    columns {
        match_id: Utf8,
        round: Int32,
        dealer: Int16,
        side: Int16,
        pile_size: Int32,
        basras: Int32,
        jack_basras: Int32,
        komi_basras: Int32,
        basra_points: Int32,
        majority_points: Int32,
        majority: Boolean,
        card_points: Int32,
        round_points: Int32,
        total: Int32,
        ended_at: Timestamp,
    }
}

table! {
    "plays";
    static PLAYS;
    pub struct PlaysBuilder;
    pub struct PlaysColumns;
    columns {
        match_id: Utf8,
        round: Int32,
        turn: Int32,
        action_index: Int32,
        seat: Int16,
        side: Int16,
        card: Utf8,
        taken: Utf8List,
        taken_count: Int16,
        basra: Nullable<Utf8>,
        table_before: Int16,
        automatic: Boolean,
        at: Timestamp,
    }
}

fn micros(t: DateTime<Utc>) -> i64 {
    t.timestamp_micros()
}

fn i32_of(n: u32) -> i32 {
    i32::try_from(n).unwrap_or(i32::MAX)
}

/// The `mode` of a match: `ranked`, `with_bots` (unranked with a bot seat) or `casual`.
pub fn mode(record: &StoredMatch) -> &'static str {
    if record.ranked {
        "ranked"
    } else if record.seats.iter().any(|s| s.is_bot) {
        "with_bots"
    } else {
        "casual"
    }
}

/// The queue preset (`2p-101`: seats and target, every other rule the default) or `custom`.
pub fn settings_preset(record: &StoredMatch) -> String {
    let s = record.settings;
    let standard = basra_engine::Settings {
        seats: s.seats,
        target_score: s.target_score,
        ..basra_engine::Settings::default()
    };
    if s == standard {
        format!("{}p-{}", s.seat_count(), s.target_score)
    } else {
        "custom".to_owned()
    }
}

/// A card's notation (`AS`, `10H`), made once for all 52 cards: the plays table
/// writes one or more per row.
fn card_name(card: Card) -> &'static str {
    static NAMES: LazyLock<Vec<String>> =
        LazyLock::new(|| Card::all().map(|card| card.to_string()).collect());
    &NAMES[usize::from(card.index())]
}

/// The name of a Basra kind in the export.
pub fn basra_name(kind: BasraKind) -> &'static str {
    match kind {
        BasraKind::Basra => "basra",
        BasraKind::Jack => "jack",
        BasraKind::Komi => "komi",
    }
}

impl MatchesBuilder {
    /// Adds `record`, whose replay gave `plays`.
    pub fn push(&mut self, record: &StoredMatch, plays: &[PlayRow]) {
        self.match_id.append_value(&record.match_id);
        self.room_id.append_value(&record.room_id);
        self.mode.append_value(mode(record));
        self.ranked.append_value(record.ranked);
        self.seats
            .append_value(i16::from(record.settings.seat_count()));
        self.settings_preset.append_value(settings_preset(record));
        self.target_score
            .append_value(i32_of(record.settings.target_score));
        self.started_at.append_value(micros(record.started_at));
        self.ended_at.append_value(micros(record.ended_at));
        self.duration_seconds.append_value(
            (record.ended_at - record.started_at)
                .num_microseconds()
                .unwrap_or(0) as f64
                / 1e6,
        );
        self.rounds.append_value(record.rounds.len() as i32);
        self.plays.append_value(plays.len() as i32);
        self.automatic_plays
            .append_value(plays.iter().filter(|p| p.automatic).count() as i32);
        self.winner_side
            .append_option(record.winner_side.map(i16::from));
        self.end_reason.append_value(&record.end_reason);
        self.side0_total
            .append_value(i32_of(record.final_totals.first().copied().unwrap_or(0)));
        self.side1_total
            .append_value(i32_of(record.final_totals.get(1).copied().unwrap_or(0)));
        let bots = record.seats.iter().filter(|s| s.is_bot).count() as i16;
        self.bots.append_value(bots);
        self.humans.append_value(record.seats.len() as i16 - bots);
        self.settings
            .append_value(serde_json::to_string(&record.settings).expect("settings serialize"));
        self.recorded_at.append_value(micros(record.recorded_at));
        self.rows += 1;
    }
}

impl MatchPlayersBuilder {
    /// Adds every seat of `record`.
    pub fn push(&mut self, record: &StoredMatch) {
        for seat in &record.seats {
            let side = usize::from(seat.side);
            let rating = record.ratings.iter().find(|r| r.seat == seat.seat);
            let opponents: Vec<f64> = record
                .ratings
                .iter()
                .filter(|r| {
                    record
                        .seats
                        .get(usize::from(r.seat))
                        .is_some_and(|s| s.side != seat.side)
                })
                .map(|r| r.rating_before)
                .collect();
            self.match_id.append_value(&record.match_id);
            self.seat.append_value(i16::from(seat.seat));
            self.side.append_value(i16::from(seat.side));
            self.user_id
                .append_option(seat.user_id.map(|id| id.to_string()));
            self.is_bot.append_value(seat.is_bot);
            self.won.append_value(record.winner_side == Some(seat.side));
            self.lost
                .append_value(record.winner_side.is_some_and(|w| w != seat.side));
            self.side_total
                .append_value(i32_of(record.final_totals.get(side).copied().unwrap_or(0)));
            let counts = record.basra_counts.get(side).copied().unwrap_or_default();
            self.basras.append_value(i32_of(counts.basra));
            self.jack_basras.append_value(i32_of(counts.jack));
            self.komi_basras.append_value(i32_of(counts.komi));
            self.rating_before
                .append_option(rating.map(|r| r.rating_before));
            self.rating_after
                .append_option(rating.map(|r| r.rating_after));
            self.rating_change
                .append_option(rating.map(|r| r.rating_after - r.rating_before));
            self.deviation_after
                .append_option(rating.map(|r| r.deviation_after));
            self.opponent_rating_before.append_option(
                (rating.is_some() && !opponents.is_empty())
                    .then(|| opponents.iter().sum::<f64>() / opponents.len() as f64),
            );
            self.ranked.append_value(record.ranked);
            self.ended_at.append_value(micros(record.ended_at));
            self.seat_fill
                .append_option(seat.fill.map(|fill| fill.as_str()));
            self.queue_wait_seconds
                .append_option(seat.queue_wait_ms.map(|ms| f64::from(ms) / 1000.0));
            let client = record.clients.iter().find(|c| c.seat == seat.seat);
            self.client_platform
                .append_option(client.map(|c| c.platform.as_str()));
            self.client_app_version
                .append_option(client.map(|c| c.app_version.as_str()));
            self.rows += 1;
        }
    }
}

impl RoundsBuilder {
    /// Adds every round and side of `record`.
    pub fn push(&mut self, record: &StoredMatch) {
        for round in &record.rounds {
            for side in &round.sides {
                self.match_id.append_value(&record.match_id);
                self.round.append_value(i32_of(round.round));
                self.dealer.append_value(i16::from(round.dealer));
                self.side.append_value(i16::from(side.side));
                self.pile_size.append_value(i32_of(side.pile_size));
                self.basras.append_value(i32_of(side.basras.basra));
                self.jack_basras.append_value(i32_of(side.basras.jack));
                self.komi_basras.append_value(i32_of(side.basras.komi));
                self.basra_points.append_value(i32_of(side.basra_points));
                self.majority_points
                    .append_value(i32_of(side.majority_points));
                self.majority.append_value(side.majority_points > 0);
                self.card_points.append_value(i32_of(side.card_points));
                self.round_points.append_value(i32_of(side.round_points));
                self.total.append_value(i32_of(side.total));
                self.ended_at.append_value(micros(record.ended_at));
                self.rows += 1;
            }
        }
    }
}

impl PlaysBuilder {
    /// Adds the plays of `record`.
    pub fn push(&mut self, record: &StoredMatch, plays: &[PlayRow]) {
        for play in plays {
            self.match_id.append_value(&record.match_id);
            self.round.append_value(i32_of(play.round));
            self.turn.append_value(i32_of(play.turn));
            self.action_index.append_value(i32_of(play.action_index));
            self.seat.append_value(i16::from(play.seat));
            self.side.append_value(i16::from(play.side));
            self.card.append_value(card_name(play.card));
            for card in play.taken.iter() {
                self.taken.values().append_value(card_name(card));
            }
            self.taken.append(true);
            self.taken_count.append_value(play.taken.len() as i16);
            self.basra.append_option(play.basra.map(basra_name));
            self.table_before.append_value(i16::from(play.table_before));
            self.automatic.append_value(play.automatic);
            self.at.append_value(micros(play.at));
            self.rows += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_card_name_is_its_notation() {
        for card in Card::all() {
            assert_eq!(card_name(card), card.to_string());
        }
        assert_eq!(card_name("10H".parse().unwrap()), "10H");
    }
}
