//! The four exported tables: their Arrow schemas (a public contract, documented in the
//! README; add columns at the end, never change or remove one) and builders that turn
//! decoded records into record batches.

use std::sync::{Arc, LazyLock};

use arrow_array::builder::{
    BooleanBuilder, Float64Builder, Int16Builder, Int32Builder, ListBuilder, StringBuilder,
    TimestampMicrosecondBuilder,
};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef, TimeUnit};
use basra_engine::{BasraKind, Card};
use chrono::{DateTime, Utc};

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

fn time() -> DataType {
    DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into()))
}

fn schema(fields: Vec<Field>) -> SchemaRef {
    Arc::new(Schema::new(fields))
}

static MATCHES: LazyLock<SchemaRef> = LazyLock::new(|| {
    schema(vec![
        Field::new("match_id", DataType::Utf8, false),
        Field::new("room_id", DataType::Utf8, false),
        Field::new("mode", DataType::Utf8, false),
        Field::new("ranked", DataType::Boolean, false),
        Field::new("seats", DataType::Int16, false),
        Field::new("settings_preset", DataType::Utf8, false),
        Field::new("target_score", DataType::Int32, false),
        Field::new("started_at", time(), false),
        Field::new("ended_at", time(), false),
        Field::new("duration_seconds", DataType::Float64, false),
        Field::new("rounds", DataType::Int32, false),
        Field::new("plays", DataType::Int32, false),
        Field::new("automatic_plays", DataType::Int32, false),
        Field::new("winner_side", DataType::Int16, true),
        Field::new("end_reason", DataType::Utf8, false),
        Field::new("side0_total", DataType::Int32, false),
        Field::new("side1_total", DataType::Int32, false),
        Field::new("bots", DataType::Int16, false),
        Field::new("humans", DataType::Int16, false),
        Field::new("settings", DataType::Utf8, false),
        Field::new("recorded_at", time(), false),
    ])
});

static MATCH_PLAYERS: LazyLock<SchemaRef> = LazyLock::new(|| {
    schema(vec![
        Field::new("match_id", DataType::Utf8, false),
        Field::new("seat", DataType::Int16, false),
        Field::new("side", DataType::Int16, false),
        Field::new("user_id", DataType::Utf8, true),
        Field::new("is_bot", DataType::Boolean, false),
        Field::new("won", DataType::Boolean, false),
        Field::new("lost", DataType::Boolean, false),
        Field::new("side_total", DataType::Int32, false),
        Field::new("basras", DataType::Int32, false),
        Field::new("jack_basras", DataType::Int32, false),
        Field::new("komi_basras", DataType::Int32, false),
        Field::new("rating_before", DataType::Float64, true),
        Field::new("rating_after", DataType::Float64, true),
        Field::new("rating_change", DataType::Float64, true),
        Field::new("deviation_after", DataType::Float64, true),
        Field::new("opponent_rating_before", DataType::Float64, true),
        Field::new("ranked", DataType::Boolean, false),
        Field::new("ended_at", time(), false),
        Field::new("seat_fill", DataType::Utf8, true),
        Field::new("queue_wait_seconds", DataType::Float64, true),
        Field::new("client_platform", DataType::Utf8, true),
        Field::new("client_app_version", DataType::Utf8, true),
    ])
});

static ROUNDS: LazyLock<SchemaRef> = LazyLock::new(|| {
    schema(vec![
        Field::new("match_id", DataType::Utf8, false),
        Field::new("round", DataType::Int32, false),
        Field::new("dealer", DataType::Int16, false),
        Field::new("side", DataType::Int16, false),
        Field::new("pile_size", DataType::Int32, false),
        Field::new("basras", DataType::Int32, false),
        Field::new("jack_basras", DataType::Int32, false),
        Field::new("komi_basras", DataType::Int32, false),
        Field::new("basra_points", DataType::Int32, false),
        Field::new("majority_points", DataType::Int32, false),
        Field::new("majority", DataType::Boolean, false),
        Field::new("card_points", DataType::Int32, false),
        Field::new("round_points", DataType::Int32, false),
        Field::new("total", DataType::Int32, false),
        Field::new("ended_at", time(), false),
    ])
});

static PLAYS: LazyLock<SchemaRef> = LazyLock::new(|| {
    schema(vec![
        Field::new("match_id", DataType::Utf8, false),
        Field::new("round", DataType::Int32, false),
        Field::new("turn", DataType::Int32, false),
        Field::new("action_index", DataType::Int32, false),
        Field::new("seat", DataType::Int16, false),
        Field::new("side", DataType::Int16, false),
        Field::new("card", DataType::Utf8, false),
        Field::new(
            "taken",
            DataType::List(Arc::new(Field::new("item", DataType::Utf8, true))),
            false,
        ),
        Field::new("taken_count", DataType::Int16, false),
        Field::new("basra", DataType::Utf8, true),
        Field::new("table_before", DataType::Int16, false),
        Field::new("automatic", DataType::Boolean, false),
        Field::new("at", time(), false),
    ])
});

fn micros(t: DateTime<Utc>) -> i64 {
    t.timestamp_micros()
}

fn tz(b: TimestampMicrosecondBuilder) -> TimestampMicrosecondBuilder {
    b.with_timezone("UTC")
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

/// Rows of the `matches` table being built.
#[derive(Debug, Default)]
pub struct MatchesBuilder {
    match_id: StringBuilder,
    room_id: StringBuilder,
    mode: StringBuilder,
    ranked: BooleanBuilder,
    seats: Int16Builder,
    preset: StringBuilder,
    target: Int32Builder,
    started_at: TimestampMicrosecondBuilder,
    ended_at: TimestampMicrosecondBuilder,
    duration: Float64Builder,
    rounds: Int32Builder,
    plays: Int32Builder,
    automatic: Int32Builder,
    winner: Int16Builder,
    end_reason: StringBuilder,
    total0: Int32Builder,
    total1: Int32Builder,
    bots: Int16Builder,
    humans: Int16Builder,
    settings: StringBuilder,
    recorded_at: TimestampMicrosecondBuilder,
    rows: usize,
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
        self.preset.append_value(settings_preset(record));
        self.target
            .append_value(i32_of(record.settings.target_score));
        self.started_at.append_value(micros(record.started_at));
        self.ended_at.append_value(micros(record.ended_at));
        self.duration.append_value(
            (record.ended_at - record.started_at)
                .num_microseconds()
                .unwrap_or(0) as f64
                / 1e6,
        );
        self.rounds.append_value(record.rounds.len() as i32);
        self.plays.append_value(plays.len() as i32);
        self.automatic
            .append_value(plays.iter().filter(|p| p.automatic).count() as i32);
        self.winner.append_option(record.winner_side.map(i16::from));
        self.end_reason.append_value(&record.end_reason);
        self.total0
            .append_value(i32_of(record.final_totals.first().copied().unwrap_or(0)));
        self.total1
            .append_value(i32_of(record.final_totals.get(1).copied().unwrap_or(0)));
        let bots = record.seats.iter().filter(|s| s.is_bot).count() as i16;
        self.bots.append_value(bots);
        self.humans.append_value(record.seats.len() as i16 - bots);
        self.settings
            .append_value(serde_json::to_string(&record.settings).expect("settings serialize"));
        self.recorded_at.append_value(micros(record.recorded_at));
        self.rows += 1;
    }

    /// Rows so far.
    pub fn len(&self) -> usize {
        self.rows
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.rows == 0
    }

    /// The rows as a batch; the builder starts empty again.
    pub fn finish(&mut self) -> RecordBatch {
        let columns: Vec<ArrayRef> = vec![
            Arc::new(self.match_id.finish()),
            Arc::new(self.room_id.finish()),
            Arc::new(self.mode.finish()),
            Arc::new(self.ranked.finish()),
            Arc::new(self.seats.finish()),
            Arc::new(self.preset.finish()),
            Arc::new(self.target.finish()),
            Arc::new(tz(std::mem::take(&mut self.started_at)).finish()),
            Arc::new(tz(std::mem::take(&mut self.ended_at)).finish()),
            Arc::new(self.duration.finish()),
            Arc::new(self.rounds.finish()),
            Arc::new(self.plays.finish()),
            Arc::new(self.automatic.finish()),
            Arc::new(self.winner.finish()),
            Arc::new(self.end_reason.finish()),
            Arc::new(self.total0.finish()),
            Arc::new(self.total1.finish()),
            Arc::new(self.bots.finish()),
            Arc::new(self.humans.finish()),
            Arc::new(self.settings.finish()),
            Arc::new(tz(std::mem::take(&mut self.recorded_at)).finish()),
        ];
        self.rows = 0;
        RecordBatch::try_new(MATCHES.clone(), columns).expect("columns match the schema")
    }
}

/// Rows of the `match_players` table being built.
#[derive(Debug, Default)]
pub struct MatchPlayersBuilder {
    match_id: StringBuilder,
    seat: Int16Builder,
    side: Int16Builder,
    user_id: StringBuilder,
    is_bot: BooleanBuilder,
    won: BooleanBuilder,
    lost: BooleanBuilder,
    side_total: Int32Builder,
    basras: Int32Builder,
    jack: Int32Builder,
    komi: Int32Builder,
    before: Float64Builder,
    after: Float64Builder,
    change: Float64Builder,
    deviation: Float64Builder,
    opponent: Float64Builder,
    ranked: BooleanBuilder,
    ended_at: TimestampMicrosecondBuilder,
    seat_fill: StringBuilder,
    queue_wait: Float64Builder,
    client_platform: StringBuilder,
    client_version: StringBuilder,
    rows: usize,
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
            self.jack.append_value(i32_of(counts.jack));
            self.komi.append_value(i32_of(counts.komi));
            self.before.append_option(rating.map(|r| r.rating_before));
            self.after.append_option(rating.map(|r| r.rating_after));
            self.change
                .append_option(rating.map(|r| r.rating_after - r.rating_before));
            self.deviation
                .append_option(rating.map(|r| r.deviation_after));
            self.opponent.append_option(
                (rating.is_some() && !opponents.is_empty())
                    .then(|| opponents.iter().sum::<f64>() / opponents.len() as f64),
            );
            self.ranked.append_value(record.ranked);
            self.ended_at.append_value(micros(record.ended_at));
            self.seat_fill
                .append_option(seat.fill.map(|fill| fill.as_str()));
            self.queue_wait
                .append_option(seat.queue_wait_ms.map(|ms| f64::from(ms) / 1000.0));
            let client = record.clients.iter().find(|c| c.seat == seat.seat);
            self.client_platform
                .append_option(client.map(|c| c.platform.as_str()));
            self.client_version
                .append_option(client.map(|c| c.app_version.as_str()));
            self.rows += 1;
        }
    }

    /// Rows so far.
    pub fn len(&self) -> usize {
        self.rows
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.rows == 0
    }

    /// The rows as a batch; the builder starts empty again.
    pub fn finish(&mut self) -> RecordBatch {
        let columns: Vec<ArrayRef> = vec![
            Arc::new(self.match_id.finish()),
            Arc::new(self.seat.finish()),
            Arc::new(self.side.finish()),
            Arc::new(self.user_id.finish()),
            Arc::new(self.is_bot.finish()),
            Arc::new(self.won.finish()),
            Arc::new(self.lost.finish()),
            Arc::new(self.side_total.finish()),
            Arc::new(self.basras.finish()),
            Arc::new(self.jack.finish()),
            Arc::new(self.komi.finish()),
            Arc::new(self.before.finish()),
            Arc::new(self.after.finish()),
            Arc::new(self.change.finish()),
            Arc::new(self.deviation.finish()),
            Arc::new(self.opponent.finish()),
            Arc::new(self.ranked.finish()),
            Arc::new(tz(std::mem::take(&mut self.ended_at)).finish()),
            Arc::new(self.seat_fill.finish()),
            Arc::new(self.queue_wait.finish()),
            Arc::new(self.client_platform.finish()),
            Arc::new(self.client_version.finish()),
        ];
        self.rows = 0;
        RecordBatch::try_new(MATCH_PLAYERS.clone(), columns).expect("columns match the schema")
    }
}

/// Rows of the `rounds` table being built.
#[derive(Debug, Default)]
pub struct RoundsBuilder {
    match_id: StringBuilder,
    round: Int32Builder,
    dealer: Int16Builder,
    side: Int16Builder,
    pile: Int32Builder,
    basras: Int32Builder,
    jack: Int32Builder,
    komi: Int32Builder,
    basra_points: Int32Builder,
    majority_points: Int32Builder,
    majority: BooleanBuilder,
    card_points: Int32Builder,
    round_points: Int32Builder,
    total: Int32Builder,
    ended_at: TimestampMicrosecondBuilder,
    rows: usize,
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
                self.pile.append_value(i32_of(side.pile_size));
                self.basras.append_value(i32_of(side.basras.basra));
                self.jack.append_value(i32_of(side.basras.jack));
                self.komi.append_value(i32_of(side.basras.komi));
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

    /// Rows so far.
    pub fn len(&self) -> usize {
        self.rows
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.rows == 0
    }

    /// The rows as a batch; the builder starts empty again.
    pub fn finish(&mut self) -> RecordBatch {
        let columns: Vec<ArrayRef> = vec![
            Arc::new(self.match_id.finish()),
            Arc::new(self.round.finish()),
            Arc::new(self.dealer.finish()),
            Arc::new(self.side.finish()),
            Arc::new(self.pile.finish()),
            Arc::new(self.basras.finish()),
            Arc::new(self.jack.finish()),
            Arc::new(self.komi.finish()),
            Arc::new(self.basra_points.finish()),
            Arc::new(self.majority_points.finish()),
            Arc::new(self.majority.finish()),
            Arc::new(self.card_points.finish()),
            Arc::new(self.round_points.finish()),
            Arc::new(self.total.finish()),
            Arc::new(tz(std::mem::take(&mut self.ended_at)).finish()),
        ];
        self.rows = 0;
        RecordBatch::try_new(ROUNDS.clone(), columns).expect("columns match the schema")
    }
}

/// Rows of the `plays` table being built.
#[derive(Debug)]
pub struct PlaysBuilder {
    match_id: StringBuilder,
    round: Int32Builder,
    turn: Int32Builder,
    action_index: Int32Builder,
    seat: Int16Builder,
    side: Int16Builder,
    card: StringBuilder,
    taken: ListBuilder<StringBuilder>,
    taken_count: Int16Builder,
    basra: StringBuilder,
    table_before: Int16Builder,
    automatic: BooleanBuilder,
    at: TimestampMicrosecondBuilder,
    rows: usize,
}

impl Default for PlaysBuilder {
    fn default() -> PlaysBuilder {
        PlaysBuilder {
            match_id: StringBuilder::new(),
            round: Int32Builder::new(),
            turn: Int32Builder::new(),
            action_index: Int32Builder::new(),
            seat: Int16Builder::new(),
            side: Int16Builder::new(),
            card: StringBuilder::new(),
            taken: ListBuilder::new(StringBuilder::new()).with_field(Arc::new(Field::new(
                "item",
                DataType::Utf8,
                true,
            ))),
            taken_count: Int16Builder::new(),
            basra: StringBuilder::new(),
            table_before: Int16Builder::new(),
            automatic: BooleanBuilder::new(),
            at: TimestampMicrosecondBuilder::new(),
            rows: 0,
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

    /// Rows so far.
    pub fn len(&self) -> usize {
        self.rows
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.rows == 0
    }

    /// The rows as a batch; the builder starts empty again.
    pub fn finish(&mut self) -> RecordBatch {
        let columns: Vec<ArrayRef> = vec![
            Arc::new(self.match_id.finish()),
            Arc::new(self.round.finish()),
            Arc::new(self.turn.finish()),
            Arc::new(self.action_index.finish()),
            Arc::new(self.seat.finish()),
            Arc::new(self.side.finish()),
            Arc::new(self.card.finish()),
            Arc::new(self.taken.finish()),
            Arc::new(self.taken_count.finish()),
            Arc::new(self.basra.finish()),
            Arc::new(self.table_before.finish()),
            Arc::new(self.automatic.finish()),
            Arc::new(tz(std::mem::take(&mut self.at)).finish()),
        ];
        self.rows = 0;
        RecordBatch::try_new(PLAYS.clone(), columns).expect("columns match the schema")
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
