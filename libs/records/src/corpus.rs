//! Realistic match records made by the engine: bots with a mix of policies play whole
//! matches, with human-like pacing, the odd timed-out (automatic) play, resignations and
//! abandoned matches, spread over a span of days with a daily rhythm.
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
        }
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

        let mut chosen: Vec<usize> = Vec::with_capacity(seat_count);
        while chosen.len() < seat_count {
            let pick = self.below(self.players.len() as u64) as usize;
            if !chosen.contains(&pick) {
                chosen.push(pick);
            }
        }
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

        let mut seed = [0u8; 32];
        self.rng.fill_bytes(&mut seed);
        let span = i64::from(self.options.days.max(1)) * 86_400;
        let started_at = self.options.until - Duration::seconds(span)
            + Duration::seconds(self.daytime_second(span));

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
