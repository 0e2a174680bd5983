//! Realistic match records made by the engine: bots with a mix of policies play whole
//! matches, with human-like pacing, the odd timed-out (automatic) play, resignations and
//! abandoned matches, spread over a span of days with a daily rhythm.
//!
//! With [`Corpus::with_returning_players`] the people come and go as in a live game: each
//! signs up on some day of the span and plays on later days with a chance that falls with
//! time (a share never comes back, a share stays), so retention by sign-up cohort has
//! something to show; without it, every match draws its players from everyone.
//!
//! Everything is a function of the corpus seed, so a corpus can be made again exactly.
//! It lives beside the record rather than in the analytics crate or the CLI because both
//! use it: the analytics tests and bench fill a store with it, `basra simulate --fast`
//! records it through accounts.

use basra_engine::bot::{self, Policy};
use basra_engine::settings::Seats;
use basra_engine::{Action, Event, Game, Seed, Settings};
use basra_proto::basra::accounts::v1 as pb;
use basra_proto::basra::common::v1 as common;
use chrono::{DateTime, Duration, Timelike, Utc};
use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};
use uuid::Uuid;

use crate::build::{LoggedAction, MatchFacts};

/// A simulated person: an account and the policy that plays for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Player {
    /// The account (it must exist before its matches are recorded).
    pub user_id: Uuid,
    /// How it plays.
    pub policy: Policy,
}

/// The shape of a corpus.
#[derive(Debug, Clone, PartialEq)]
pub struct CorpusOptions {
    /// Makes the corpus reproducible.
    pub seed: u64,
    /// Matches end within `[until - days, until)`.
    pub days: u32,
    /// The end of the span.
    pub until: DateTime<Utc>,
}

/// The policy of the `index`-th simulated player: about 60 % greedy, 40 % random, so
/// ratings spread out as the greedy players win more.
pub fn policy_of(index: usize) -> Policy {
    if index % 5 < 3 {
        Policy::Greedy
    } else {
        Policy::Random
    }
}

/// Makes match records from `players` (at least 4).
#[derive(Debug)]
pub struct Corpus {
    rng: ChaCha8Rng,
    players: Vec<Player>,
    options: CorpusOptions,
    made: u64,
    /// With returning players: who plays on each day of the span (indices into `players`).
    active: Option<Vec<Vec<u32>>>,
}

/// How a simulated person keeps playing after the day it first came: the chance of
/// playing on day `k` after it is `floor + (start - floor) * exp(-k / days)`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Habit {
    /// The share of people with this habit, in percent.
    pub percent: u64,
    /// The chance of playing the next day, roughly.
    pub start: f64,
    /// The chance that remains after a long time.
    pub floor: f64,
    /// How fast the chance falls, in days.
    pub days: f64,
}

/// The habits of [`Corpus::with_returning_players`]: half try the game and drift away
/// within days, a third play now and then for weeks, the rest stay. About 37 % of a
/// day's newcomers play the next day, 19 % a week later and 14 % a month later.
pub const HABITS: [Habit; 3] = [
    Habit {
        percent: 50,
        start: 0.20,
        floor: 0.0,
        days: 2.0,
    },
    Habit {
        percent: 35,
        start: 0.40,
        floor: 0.15,
        days: 4.0,
    },
    Habit {
        percent: 15,
        start: 0.90,
        floor: 0.60,
        days: 7.0,
    },
];

/// The share of players already there on the first day of the span, in percent (the
/// rest arrive on a day of the span, uniformly).
pub const PRESENT_AT_START: u64 = 25;

impl Habit {
    /// The chance of playing `k` days after the first (1 on the first day).
    pub fn chance(&self, k: u32) -> f64 {
        if k == 0 {
            return 1.0;
        }
        self.floor + (self.start - self.floor) * (-(f64::from(k) - 1.0) / self.days).exp()
    }
}

/// Seconds between a play and the next, and the turn timer of an automatic play.
const THINK_SECONDS: (u64, u64) = (1, 9);
const TURN_TIMER_SECONDS: i64 = 20;

impl Corpus {
    /// A corpus over `players` (at least 4, for four-seat matches).
    pub fn new(players: Vec<Player>, options: CorpusOptions) -> Corpus {
        assert!(players.len() >= 4, "a corpus needs at least 4 players");
        Corpus {
            rng: ChaCha8Rng::seed_from_u64(options.seed),
            players,
            options,
            made: 0,
            active: None,
        }
    }

    /// People who come and go ([`HABITS`]): each player arrives on a day of the span
    /// ([`PRESENT_AT_START`] % on the first), plays that day and on each later day with
    /// its habit's chance, and each match draws its players from those who play on its
    /// day (from everyone who has arrived when too few do).
    pub fn with_returning_players(mut self) -> Corpus {
        let days = self.options.days.max(1);
        // A stream of its own, so the matches' draws do not depend on the player count.
        let mut rng = ChaCha8Rng::seed_from_u64(self.options.seed ^ 0x005e_ed0f_da75);
        let mut below = |n: u64| (u64::from(rng.next_u32()) * n) >> 32;
        let mut active = vec![Vec::new(); days as usize];
        for index in 0..self.players.len() {
            let first = if below(100) < PRESENT_AT_START {
                0
            } else {
                below(u64::from(days)) as u32
            };
            let mut pick = below(100);
            let habit = HABITS
                .iter()
                .find(|h| {
                    let inside = pick < h.percent;
                    pick = pick.saturating_sub(h.percent);
                    inside
                })
                .unwrap_or(&HABITS[0]);
            for day in first..days {
                let chance = (habit.chance(day - first) * 1_000_000.0) as u64;
                if below(1_000_000) < chance {
                    active[day as usize].push(index as u32);
                }
            }
        }
        self.active = Some(active);
        self
    }

    fn below(&mut self, n: u64) -> u64 {
        (u64::from(self.rng.next_u32()) * n) >> 32
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.below(1000) < percent * 10
    }

    /// The next match record, ready for `RecordMatch`.
    pub fn next_record(&mut self) -> pb::MatchRecord {
        self.made += 1;
        let four = self.chance(15);
        let seat_count = if four { 4 } else { 2 };
        // One match in five fills a seat with a bot (then it is unranked); of the rest,
        // three in five are ranked.
        let bot_seat = self
            .chance(20)
            .then(|| self.below(seat_count as u64) as usize);
        let ranked = bot_seat.is_none() && self.chance(60);
        let target_score = match self.below(10) {
            0 => 61,
            1 => 151,
            _ => 101,
        };
        let settings = Settings {
            seats: if four { Seats::Four } else { Seats::Two },
            target_score,
            ..Settings::default()
        };

        let span = i64::from(self.options.days.max(1)) * 86_400;
        let mut seed = [0u8; 32];
        let (chosen, second) = if self.active.is_none() {
            // Everyone plays every day (the draws in the order corpora always had).
            let chosen = self.choose_players(seat_count, None);
            self.rng.fill_bytes(&mut seed);
            (chosen, self.daytime_second(span))
        } else {
            // The day first, then who plays that day.
            self.rng.fill_bytes(&mut seed);
            let second = self.daytime_second(span);
            let day = (second / 86_400) as usize;
            (self.choose_players(seat_count, Some(day)), second)
        };
        let started_at = self.options.until - Duration::seconds(span) + Duration::seconds(second);
        let mut policies = Vec::with_capacity(seat_count);
        let mut seats = Vec::with_capacity(seat_count);
        for (seat, &index) in chosen.iter().enumerate() {
            if bot_seat == Some(seat) {
                policies.push(Policy::Greedy);
                seats.push(pb::RecordedSeat {
                    seat: seat as u32,
                    user_id: String::new(),
                    is_bot: true,
                    display_name: "Bot".to_owned(),
                    fill: common::SeatFill::Bot as i32,
                    queue_wait_ms: None,
                });
            } else {
                let player = self.players[index];
                policies.push(player.policy);
                seats.push(pb::RecordedSeat {
                    seat: seat as u32,
                    user_id: player.user_id.to_string(),
                    is_bot: false,
                    display_name: format!("Player {}", index + 1),
                    fill: common::SeatFill::Unspecified as i32,
                    queue_wait_ms: None,
                });
            }
        }

        self.fill_seats(&mut seats, ranked, bot_seat.is_some(), started_at);

        // Some matches stop early: a resignation (3 %) or an abandoned seat (2 %), at a
        // random point of the first rounds.
        let stop = match self.below(100) {
            0..=2 => Some((common::MatchEndReason::Resigned, self.below(150) as usize)),
            3..=4 => Some((common::MatchEndReason::Abandoned, self.below(150) as usize)),
            _ => None,
        };

        let (mut game, _) = Game::new(settings, Seed(seed)).expect("default settings are valid");
        let mut at = started_at;
        let mut actions = Vec::new();
        let mut rounds = Vec::new();
        let mut events = Vec::new();
        let mut end_reason = common::MatchEndReason::TargetReached;
        while let Some(seat) = game.turn() {
            let (action, automatic) = match stop {
                Some((reason, after)) if actions.len() >= after => {
                    // A resignation, or a seat that never came back and resigns
                    // automatically after the grace period (as game-session records it).
                    end_reason = reason;
                    let abandoned = reason == common::MatchEndReason::Abandoned;
                    at += Duration::seconds(self.think() + if abandoned { 120 } else { 0 });
                    (Action::Resign { seat }, abandoned)
                }
                _ => {
                    let automatic = self.chance(2);
                    at += Duration::seconds(if automatic {
                        TURN_TIMER_SECONDS
                    } else {
                        self.think()
                    });
                    let view = game.view(Some(seat));
                    let action = bot::choose(policies[seat.index()], &view, &mut self.rng)
                        .expect("the seat to move has a card");
                    (action, automatic)
                }
            };
            let dealer = game.round().dealer().0;
            events.clear();
            game.apply_into(&action, &mut events)
                .expect("bots play legal cards, and a seat may always resign");
            actions.push(LoggedAction {
                action,
                automatic,
                at_ms: at.timestamp_millis(),
            });
            for event in &events {
                if let Event::RoundEnded(score) = event {
                    rounds.push((dealer, *score));
                }
            }
        }
        crate::build::match_record(
            MatchFacts {
                match_id: Uuid::now_v7().to_string(),
                room_id: format!("sim-{:x}-{}", self.options.seed, self.made),
                ranked,
                seats,
                end_reason,
                started_at_ms: started_at.timestamp_millis(),
                ended_at_ms: at.timestamp_millis(),
                allow_spectators: false,
                event_id: None,
            },
            &game,
            actions,
            rounds.iter().map(|(dealer, score)| (*dealer, score)),
        )
    }

    /// How each human seat was filled, as matchmaking would say: a ranked match and
    /// half the matches with a bot come from the queue (each player with the wait it
    /// had: longer at night, when fewer search); the rest are rooms made by seat 0
    /// (the host) and joined by code, from the lobby or after an invite, or rematches.
    fn fill_seats(
        &mut self,
        seats: &mut [pb::RecordedSeat],
        ranked: bool,
        with_bot: bool,
        started_at: DateTime<Utc>,
    ) {
        let queued = ranked || (with_bot && self.chance(50));
        let rematch = !queued && self.chance(10);
        let night = started_at.hour() < 7;
        for (index, seat) in seats.iter_mut().enumerate() {
            if seat.is_bot {
                continue;
            }
            let fill = if queued {
                // 2–30 s by day, 3 times that at night; now and then a long wait.
                let base = 2_000 + self.below(28_000) as u32;
                let long = if self.chance(5) { 60_000 } else { 0 };
                let wait = (base + long) * if night { 3 } else { 1 };
                seat.queue_wait_ms = Some(wait);
                common::SeatFill::Queue
            } else if rematch {
                common::SeatFill::Rematch
            } else if index == 0 {
                common::SeatFill::Host
            } else {
                match self.below(10) {
                    0..=4 => common::SeatFill::Code,
                    5..=7 => common::SeatFill::Invite,
                    _ => common::SeatFill::Lobby,
                }
            };
            seat.fill = fill as i32;
        }
    }

    /// `count` different players for a match on `day` of the span: from those who play
    /// that day (with returning players, when enough do), else from everyone.
    fn choose_players(&mut self, count: usize, day: Option<usize>) -> Vec<usize> {
        let today = day
            .and_then(|day| self.active.as_ref()?.get(day).map(|a| (day, a.len())))
            .filter(|(_, playing)| *playing >= count);
        let mut chosen: Vec<usize> = Vec::with_capacity(count);
        while chosen.len() < count {
            let pick = match today {
                Some((day, playing)) => {
                    let at = self.below(playing as u64) as usize;
                    self.active.as_ref().expect("checked above")[day][at] as usize
                }
                None => self.below(self.players.len() as u64) as usize,
            };
            if !chosen.contains(&pick) {
                chosen.push(pick);
            }
        }
        chosen
    }

    fn think(&mut self) -> i64 {
        let (low, high) = THINK_SECONDS;
        (low + self.below(high - low + 1)) as i64
    }

    /// A second of the span, more often in the evening than at night.
    fn daytime_second(&mut self, span: i64) -> i64 {
        loop {
            let second = self.below(span as u64) as i64;
            let hour = (second % 86_400) / 3_600;
            // Acceptance by hour: quiet at night, busy from 18:00 to 23:00.
            let weight = match hour {
                0..=6 => 15,
                7..=17 => 50,
                _ => 100,
            };
            if self.below(100) < weight {
                return second;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone as _;

    use super::*;

    fn corpus(players: usize, days: u32) -> Corpus {
        Corpus::new(
            (0..players)
                .map(|i| Player {
                    user_id: Uuid::from_u128(i as u128 + 1),
                    policy: policy_of(i),
                })
                .collect(),
            CorpusOptions {
                seed: 3,
                days,
                until: Utc.with_ymd_and_hms(2026, 12, 1, 0, 0, 0).unwrap(),
            },
        )
        .with_returning_players()
    }

    #[test]
    fn returning_players_come_back_less_and_less() {
        let days = 40;
        let corpus = corpus(20_000, days);
        let active: Vec<std::collections::HashSet<u32>> = corpus
            .active
            .as_ref()
            .unwrap()
            .iter()
            .map(|day| day.iter().copied().collect())
            .collect();
        // Each player's first day, and whether it plays k days later.
        let mut first = vec![u32::MAX; 20_000];
        for (day, playing) in active.iter().enumerate() {
            for &p in playing {
                first[p as usize] = first[p as usize].min(day as u32);
            }
        }
        assert!(
            first.iter().all(|&f| f < days),
            "everyone plays its first day"
        );
        let at_start = first.iter().filter(|&&f| f == 0).count() as f64 / 20_000.0;
        assert!((0.24..0.30).contains(&at_start), "{at_start}");
        let retained = |k: u32| {
            let cohort: Vec<usize> = (0..20_000)
                .filter(|&p| first[p] > 0 && first[p] + k < days)
                .collect();
            let back = cohort
                .iter()
                .filter(|&&p| active[(first[p] + k) as usize].contains(&(p as u32)))
                .count();
            back as f64 / cohort.len() as f64
        };
        let (d1, d7, d30) = (retained(1), retained(7), retained(30));
        assert!((0.32..0.43).contains(&d1), "D1 {d1}");
        assert!((0.15..0.23).contains(&d7), "D7 {d7}");
        assert!((0.11..0.18).contains(&d30), "D30 {d30}");
        assert!(d1 > d7 && d7 > d30);
    }

    #[test]
    fn matches_draw_their_players_from_those_who_play_that_day() {
        let mut corpus = corpus(300, 10);
        let start = corpus.options.until - Duration::days(10);
        for _ in 0..40 {
            let record = corpus.next_record();
            let started = record.started_at.as_ref().unwrap().seconds;
            let day = ((started - start.timestamp()) / 86_400) as usize;
            let playing = &corpus.active.as_ref().unwrap()[day];
            for seat in record.seats.iter().filter(|s| !s.is_bot) {
                let index = (Uuid::parse_str(&seat.user_id).unwrap().as_u128() - 1) as u32;
                assert!(playing.contains(&index), "player {index} on day {day}");
            }
        }
    }
}
