//! The figures of the report, computed from an export one day partition at a time: each
//! day's four tables are read, joined by match id within the day, and folded into
//! running totals, so memory depends on the busiest day and the number of players, not
//! on the number of matches. The `players` snapshot, when the export has one, gives each
//! player's cohort (the day it was first seen) for the retention heat map.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use anyhow::Context as _;
use arrow_array::{Array, RecordBatch};
use chrono::NaiveDate;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

use crate::export::players::PlayersColumns;
use crate::export::tables::{MatchPlayersColumns, MatchesColumns, RoundsColumns, Table};

/// The modes, in the order the report shows them.
pub const MODES: [&str; 3] = ["ranked", "casual", "with_bots"];

/// Most points kept for the rating-change scatter plot.
pub const SCATTER_POINTS: usize = 3_000;

/// Days after the first that retention is followed for (D0 … D`RETENTION_DAYS`).
pub const RETENTION_DAYS: usize = 30;

/// The players first seen on one day, and how many of them played on each later day.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cohort {
    /// Players first seen that day.
    pub players: u64,
    /// `returned[k]`: of those, how many played a match `k` days later; only the days
    /// the export reaches.
    pub returned: Vec<u64>,
}

/// One player's first day and the days after it that it played on (bit k: day k).
#[derive(Debug, Clone, Copy)]
struct PlayerDays {
    cohort: NaiveDate,
    played: u64,
}

/// Wins of one group out of its decided matches.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct WinRate {
    /// Matches (or seats) counted.
    pub n: u64,
    /// Of those, wins.
    pub wins: u64,
}

impl WinRate {
    /// The win rate and its 95 % Wilson score interval.
    pub fn with_interval(&self) -> Option<(f64, f64, f64)> {
        if self.n == 0 {
            return None;
        }
        let n = self.n as f64;
        let p = self.wins as f64 / n;
        let z = 1.959_963_984_540_054_f64;
        let denominator = 1.0 + z * z / n;
        let centre = (p + z * z / (2.0 * n)) / denominator;
        let half = z * (p * (1.0 - p) / n + z * z / (4.0 * n * n)).sqrt() / denominator;
        Some((p, (centre - half).max(0.0), (centre + half).min(1.0)))
    }
}

/// Everything the report plots.
#[derive(Debug, Default)]
pub struct Figures {
    /// Matches per day, by mode ([`MODES`] order).
    pub per_day: BTreeMap<NaiveDate, [u64; 3]>,
    /// Matches by number of completed rounds.
    pub rounds: BTreeMap<i32, u64>,
    /// Matches by whole minutes of duration.
    pub minutes: BTreeMap<i64, u64>,
    /// The side that plays first (side 0) against the other, by seats (2, 4), matches
    /// won on the board (target reached).
    pub first_side: BTreeMap<i16, WinRate>,
    /// Scored rounds (one per round, both sides together).
    pub scored_rounds: u64,
    /// Basras in those rounds: ordinary, Jack, Komi.
    pub basras: [u64; 3],
    /// Matches won on the board, by target score: (all, decided by the majority bonus).
    pub majority_decides: BTreeMap<i32, (u64, u64)>,
    /// The latest rating of each rated player: (recorded_at, rating).
    pub latest_rating: HashMap<String, (i64, f64)>,
    /// Sampled (rating gap, rating change) points of rated seats.
    pub gap_change: Vec<(f64, f64)>,
    /// Rated seats seen (the scatter keeps a sample of them).
    pub rated_seats: u64,
    /// Mean rating change by gap bucket of 100 points: (sum, count).
    pub gap_buckets: BTreeMap<i64, (f64, u64)>,
    /// In matches with bots and people, decided: people's seats and bots' seats.
    pub people_vs_bots: [WinRate; 2],
    /// Matches by number of automatic plays.
    pub automatic: BTreeMap<i32, u64>,
    /// Queued seats' waits, by mode ([`MODES`] order) and UTC hour of the match's start:
    /// whole seconds → seats.
    pub queue_waits: [[BTreeMap<u32, u64>; 24]; 3],
    /// Retention by cohort day, for the cohorts within the export's days.
    pub cohorts: BTreeMap<NaiveDate, Cohort>,
    /// Matches read.
    pub matches: u64,
    /// Plays read.
    pub plays: u64,
}

/// Reads the export under `root`.
pub fn figures(root: &Path) -> anyhow::Result<Figures> {
    let mut figures = Figures::default();
    let mut sampler = Sampler::new(SCATTER_POINTS);
    let mut first_seen = cohorts_of_players(root)?;
    for day in days(root)? {
        let today = day_of(&day)?;
        let matches = read_day(root, Table::Matches, &day)?;
        let rounds = read_day(root, Table::Rounds, &day)?;
        let players = read_day(root, Table::MatchPlayers, &day)?;
        let plays = read_day(root, Table::Plays, &day)?;
        figures.plays += plays.iter().map(|b| b.num_rows() as u64).sum::<u64>();

        // Majority points per match and side over the day's scored rounds.
        let mut majority: HashMap<&str, [i64; 2]> = HashMap::new();
        for b in &rounds {
            let c = RoundsColumns::new(b);
            let ids = c.match_id()?;
            let side = c.side()?;
            let points = c.majority_points()?;
            let basras = [c.basras()?, c.jack_basras()?, c.komi_basras()?];
            for i in 0..b.num_rows() {
                let entry = majority.entry(ids.value(i)).or_default();
                entry[usize::from(side.value(i) == 1)] += i64::from(points.value(i));
                for (k, column) in basras.iter().enumerate() {
                    figures.basras[k] += column.value(i).max(0) as u64;
                }
            }
            figures.scored_rounds += b.num_rows() as u64 / 2;
        }

        // Each match's mode and the UTC hour it started, for the seats' queue waits.
        let mut start_hour: HashMap<&str, (usize, usize)> = HashMap::new();
        for b in &matches {
            let c = MatchesColumns::new(b);
            let ids = c.match_id()?;
            let mode = c.mode()?;
            let seats = c.seats()?;
            let target = c.target_score()?;
            let rounds = c.rounds()?;
            let duration = c.duration_seconds()?;
            let automatic = c.automatic_plays()?;
            let winner = c.winner_side()?;
            let reason = c.end_reason()?;
            let totals = [c.side0_total()?, c.side1_total()?];
            let started = c.started_at()?;
            for i in 0..b.num_rows() {
                figures.matches += 1;
                let slot = MODES.iter().position(|m| *m == mode.value(i)).unwrap_or(1);
                let hour = (started.value(i).div_euclid(3_600_000_000)).rem_euclid(24) as usize;
                start_hour.insert(ids.value(i), (slot, hour));
                figures.per_day.entry(day_of(&day)?).or_default()[slot] += 1;
                *figures.rounds.entry(rounds.value(i)).or_default() += 1;
                *figures
                    .minutes
                    .entry((duration.value(i) / 60.0) as i64)
                    .or_default() += 1;
                *figures.automatic.entry(automatic.value(i)).or_default() += 1;
                if reason.value(i) != "target_reached" || winner.is_null(i) {
                    continue;
                }
                let w = usize::from(winner.value(i) == 1);
                let first = figures.first_side.entry(seats.value(i)).or_default();
                first.n += 1;
                first.wins += u64::from(w == 0);
                let maj = majority.get(ids.value(i)).copied().unwrap_or_default();
                let without = |side: usize| i64::from(totals[side].value(i)) - maj[side];
                let decided = without(w) <= without(1 - w);
                let entry = figures.majority_decides.entry(target.value(i)).or_default();
                entry.0 += 1;
                entry.1 += u64::from(decided);
            }
        }

        // Seats: who won in mixed matches; ratings.
        // Which matches have a bot seat (`mixed`) and which a person's.
        let mut mixed: HashMap<&str, bool> = HashMap::new();
        let mut has_person: HashMap<&str, bool> = HashMap::new();
        for b in &players {
            let c = MatchPlayersColumns::new(b);
            let (ids, bot) = (c.match_id()?, c.is_bot()?);
            for i in 0..b.num_rows() {
                *mixed.entry(ids.value(i)).or_default() |= bot.value(i);
                *has_person.entry(ids.value(i)).or_default() |= !bot.value(i);
            }
        }
        for b in &players {
            let c = MatchPlayersColumns::new(b);
            let ids = c.match_id()?;
            let user = c.user_id()?;
            let bot = c.is_bot()?;
            let won = c.won()?;
            let lost = c.lost()?;
            let after = c.rating_after()?;
            let change = c.rating_change()?;
            let before = c.rating_before()?;
            let opponent = c.opponent_rating_before()?;
            let ended = c.ended_at()?;
            // Exports written before seats kept how they were filled lack these two.
            let fill = c.seat_fill().ok();
            let wait = c.queue_wait_seconds().ok();
            for i in 0..b.num_rows() {
                let id = ids.value(i);
                if let (Some(fill), Some(wait)) = (fill, wait)
                    && fill.is_valid(i)
                    && fill.value(i) == "queue"
                    && wait.is_valid(i)
                    && let Some(&(slot, hour)) = start_hour.get(id)
                {
                    *figures.queue_waits[slot][hour]
                        .entry(wait.value(i).max(0.0).round() as u32)
                        .or_default() += 1;
                }
                if !bot.value(i) && user.is_valid(i) {
                    note_played(&mut first_seen, user.value(i), today);
                }
                if mixed.get(id).copied().unwrap_or(false)
                    && has_person.get(id).copied().unwrap_or(false)
                    && (won.value(i) || lost.value(i))
                {
                    let group = &mut figures.people_vs_bots[usize::from(bot.value(i))];
                    group.n += 1;
                    group.wins += u64::from(won.value(i));
                }
                if after.is_null(i) || user.is_null(i) {
                    continue;
                }
                let at = ended.value(i);
                let latest = figures
                    .latest_rating
                    .entry(user.value(i).to_owned())
                    .or_insert((at, after.value(i)));
                if at >= latest.0 {
                    *latest = (at, after.value(i));
                }
                if !opponent.is_null(i) {
                    let gap = before.value(i) - opponent.value(i);
                    let delta = change.value(i);
                    figures.rated_seats += 1;
                    sampler.offer(&mut figures.gap_change, (gap, delta));
                    let bucket = (gap / 100.0).round() as i64 * 100;
                    let entry = figures.gap_buckets.entry(bucket).or_default();
                    entry.0 += delta;
                    entry.1 += 1;
                }
            }
        }
    }
    if let (Some(&first), Some(&last)) =
        (figures.per_day.keys().next(), figures.per_day.keys().last())
    {
        figures.cohorts = cohorts(&first_seen, first, last);
    }
    Ok(figures)
}

/// Each player of the `players` snapshot with its cohort: the day it was first seen
/// (its sign-up, or its first match when that is older). Empty for an export without it.
fn cohorts_of_players(root: &Path) -> anyhow::Result<HashMap<u128, PlayerDays>> {
    let mut players = HashMap::new();
    let path = root.join(crate::export::players::FILE);
    if !path.exists() {
        return Ok(players);
    }
    let file = std::fs::File::open(&path)?;
    let reader = ParquetRecordBatchReaderBuilder::try_new(file)
        .with_context(|| format!("{} is not Parquet", path.display()))?
        .build()?;
    for batch in reader {
        let b = batch?;
        let c = PlayersColumns::new(&b);
        let ids = c.user_id()?;
        let signed_up = c.signed_up_at()?;
        let first_match = c.first_match_at()?;
        for i in 0..b.num_rows() {
            let first_seen = [signed_up, first_match]
                .iter()
                .filter(|c| c.is_valid(i))
                .map(|c| c.value(i))
                .min();
            let (Some(micros), Ok(id)) = (first_seen, uuid::Uuid::parse_str(ids.value(i))) else {
                continue;
            };
            let Some(at) = chrono::DateTime::from_timestamp_micros(micros) else {
                continue;
            };
            players.insert(
                id.as_u128(),
                PlayerDays {
                    cohort: at.date_naive(),
                    played: 0,
                },
            );
        }
    }
    Ok(players)
}

/// Notes that `user` played on `day` (its first day, when the snapshot did not know it).
fn note_played(players: &mut HashMap<u128, PlayerDays>, user: &str, day: NaiveDate) {
    let Ok(id) = uuid::Uuid::parse_str(user) else {
        return;
    };
    let entry = players.entry(id.as_u128()).or_insert(PlayerDays {
        cohort: day,
        played: 0,
    });
    let k = (day - entry.cohort).num_days();
    if (0..64).contains(&k) {
        entry.played |= 1 << k;
    }
}

/// The cohorts of the days `first..=last` and their returns, D0 to [`RETENTION_DAYS`]
/// (only the days up to `last`).
fn cohorts(
    players: &HashMap<u128, PlayerDays>,
    first: NaiveDate,
    last: NaiveDate,
) -> BTreeMap<NaiveDate, Cohort> {
    let mut cohorts: BTreeMap<NaiveDate, Cohort> = BTreeMap::new();
    for p in players.values() {
        if p.cohort < first || p.cohort > last {
            continue;
        }
        let reach = ((last - p.cohort).num_days() as usize).min(RETENTION_DAYS);
        let cohort = cohorts.entry(p.cohort).or_insert_with(|| Cohort {
            players: 0,
            returned: vec![0; reach + 1],
        });
        cohort.players += 1;
        for (k, returned) in cohort.returned.iter_mut().enumerate() {
            *returned += (p.played >> k) & 1;
        }
    }
    cohorts
}

fn day_of(partition: &str) -> anyhow::Result<NaiveDate> {
    NaiveDate::parse_from_str(partition.trim_start_matches("date="), "%Y-%m-%d")
        .with_context(|| format!("{partition} is not a day partition"))
}

/// The day partitions (`date=…`) of the `matches` table, in order.
fn days(root: &Path) -> anyhow::Result<Vec<String>> {
    let dir = root.join(Table::Matches.name());
    let mut days: Vec<String> = std::fs::read_dir(&dir)
        .with_context(|| format!("{} is not an export (no matches/)", root.display()))?
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| n.starts_with("date="))
        .collect();
    days.sort();
    Ok(days)
}

fn read_day(root: &Path, table: Table, day: &str) -> anyhow::Result<Vec<RecordBatch>> {
    let dir = root.join(table.name()).join(day);
    let mut batches = Vec::new();
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Ok(batches);
    };
    let mut files: Vec<_> = entries
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("part-") && n.ends_with(".parquet"))
        })
        .collect();
    files.sort();
    for path in files {
        let file = std::fs::File::open(&path)?;
        let reader = ParquetRecordBatchReaderBuilder::try_new(file)
            .with_context(|| format!("{} is not Parquet", path.display()))?
            .with_batch_size(65_536)
            .build()?;
        for batch in reader {
            batches.push(batch?);
        }
    }
    Ok(batches)
}

/// Reservoir sampling with a fixed-seed generator: the same export gives the same plot.
struct Sampler {
    capacity: usize,
    seen: u64,
    state: u64,
}

impl Sampler {
    fn new(capacity: usize) -> Sampler {
        Sampler {
            capacity,
            seen: 0,
            state: 0x9E37_79B9_7F4A_7C15,
        }
    }

    fn next(&mut self) -> u64 {
        // xorshift64*
        self.state ^= self.state >> 12;
        self.state ^= self.state << 25;
        self.state ^= self.state >> 27;
        self.state.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn offer<T>(&mut self, sample: &mut Vec<T>, item: T) {
        self.seen += 1;
        if sample.len() < self.capacity {
            sample.push(item);
        } else {
            let pick = self.next() % self.seen;
            if (pick as usize) < self.capacity {
                sample[pick as usize] = item;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wilson_interval_brackets_the_rate() {
        let (p, low, high) = WinRate { n: 100, wins: 55 }.with_interval().unwrap();
        assert!((p - 0.55).abs() < 1e-12);
        assert!((low - 0.4524).abs() < 1e-3, "{low}");
        assert!((high - 0.6438).abs() < 1e-3, "{high}");
        assert_eq!(WinRate::default().with_interval(), None);
        let (_, low, high) = WinRate { n: 10, wins: 10 }.with_interval().unwrap();
        assert!(low > 0.7 && high > 0.999_999 && high <= 1.0, "{low} {high}");
    }

    #[test]
    fn cohorts_count_who_came_back_on_each_day_the_export_reaches() {
        let day = |d: u32| NaiveDate::from_ymd_opt(2026, 11, d).unwrap();
        let mut players = HashMap::new();
        let ids: Vec<String> = (1..=4u128)
            .map(|i| uuid::Uuid::from_u128(i).to_string())
            .collect();
        // Signed up on the 1st (from the snapshot), played the 1st, 2nd and 8th.
        players.insert(
            1,
            PlayerDays {
                cohort: day(1),
                played: 0,
            },
        );
        for d in [1, 2, 8] {
            note_played(&mut players, &ids[0], day(d));
        }
        // First seen playing on the 1st, again the 3rd.
        note_played(&mut players, &ids[1], day(1));
        note_played(&mut players, &ids[1], day(3));
        // Signed up on the 1st, never played.
        players.insert(
            3,
            PlayerDays {
                cohort: day(1),
                played: 0,
            },
        );
        // First seen on the 9th, the last day.
        note_played(&mut players, &ids[3], day(9));
        // Before the export's days: not a cohort of it.
        players.insert(
            99,
            PlayerDays {
                cohort: day(1) - chrono::Days::new(5),
                played: 0,
            },
        );

        let cohorts = cohorts(&players, day(1), day(9));
        assert_eq!(cohorts.len(), 2);
        let first = &cohorts[&day(1)];
        assert_eq!(first.players, 3);
        assert_eq!(first.returned, vec![2, 1, 1, 0, 0, 0, 0, 1, 0]);
        let last = &cohorts[&day(9)];
        assert_eq!((last.players, last.returned.clone()), (1, vec![1]));
    }

    #[test]
    fn the_sampler_keeps_at_most_its_capacity() {
        let mut sampler = Sampler::new(10);
        let mut sample = Vec::new();
        for i in 0..1_000 {
            sampler.offer(&mut sample, i);
        }
        assert_eq!(sample.len(), 10);
        assert!(sample.iter().any(|&i| i >= 10), "later items get in");
    }
}
