//! Realistic match records made by the engine: bots with a mix of policies play whole
//! matches, with human-like pacing, the odd timed-out (automatic) play, resignations and
//! abandoned matches, spread over a span of days with a daily rhythm.
//!
//! Everything is a function of the corpus seed, so a corpus can be made again exactly.

use basra_engine::bot::{self, Policy};
use basra_engine::settings::Seats;
use basra_engine::{Action, Event, Game, Seed, Settings};
use basra_proto::basra::accounts::v1 as pb;
use basra_proto::basra::common::v1 as common;
use basra_proto::convert::{card_to_pb, settings_to_pb};
use chrono::{DateTime, Duration, Utc};
use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};
use uuid::Uuid;

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
                });
            } else {
                let player = self.players[index];
                policies.push(player.policy);
                seats.push(pb::RecordedSeat {
                    seat: seat as u32,
                    user_id: player.user_id.to_string(),
                    is_bot: false,
                    display_name: format!("Player {}", index + 1),
                });
            }
        }

        let mut seed = [0u8; 32];
        self.rng.fill_bytes(&mut seed);
        let span = i64::from(self.options.days.max(1)) * 86_400;
        let started_at = self.options.until - Duration::seconds(span)
            + Duration::seconds(self.daytime_second(span));

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
        let mut closed_winner = None;
        while let Some(seat) = game.turn() {
            if let Some((reason, after)) = stop
                && actions.len() >= after
            {
                end_reason = reason;
                at += Duration::seconds(self.think());
                match reason {
                    common::MatchEndReason::Resigned => {
                        actions.push(pb::RecordedAction {
                            seat: u32::from(seat.0),
                            action: Some(pb::recorded_action::Action::Resign(
                                pb::RecordedResign {},
                            )),
                            automatic: false,
                            at: Some(timestamp(at)),
                        });
                        game.apply_into(&Action::Resign { seat }, &mut events)
                            .expect("a seat may always resign");
                    }
                    _ => {
                        // The seat to move never came back: the other side wins.
                        at += Duration::seconds(120);
                        closed_winner = Some(u32::from(seat.side().other().0));
                    }
                }
                break;
            }
            let automatic = self.chance(2);
            at += Duration::seconds(if automatic {
                TURN_TIMER_SECONDS
            } else {
                self.think()
            });
            let view = game.view(Some(seat));
            let action = bot::choose(policies[seat.index()], &view, &mut self.rng)
                .expect("the seat to move has a card");
            events.clear();
            game.apply_into(&action, &mut events)
                .expect("bots play legal cards");
            let Action::Play { card, .. } = action else {
                unreachable!("bots only play cards")
            };
            actions.push(pb::RecordedAction {
                seat: u32::from(seat.0),
                action: Some(pb::recorded_action::Action::Play(pb::RecordedPlay {
                    card: Some(card_to_pb(card)),
                    capture_choice: None,
                })),
                automatic,
                at: Some(timestamp(at)),
            });
            for event in &events {
                if let Event::RoundEnded(score) = event {
                    rounds.push(pb::RoundRecord {
                        round: score.round + 1,
                        dealer: u32::from(game_dealer(&settings, score.round)),
                        sides: side_scores(score),
                    });
                }
            }
        }
        let mut basra_counts = [
            common::BasraCounts::default(),
            common::BasraCounts::default(),
        ];
        for round in &rounds {
            for (side, counts) in basra_counts.iter_mut().enumerate() {
                let b = round.sides[side].basras.unwrap_or_default();
                counts.basra += b.basra;
                counts.jack += b.jack;
                counts.komi += b.komi;
            }
        }
        let winner_side = closed_winner.or_else(|| game.result().map(|r| u32::from(r.winner.0)));
        pb::MatchRecord {
            match_id: Uuid::now_v7().to_string(),
            room_id: format!("sim-{:x}-{}", self.options.seed, self.made),
            ranked,
            settings: Some(settings_to_pb(&settings)),
            seats,
            seed: seed.to_vec(),
            actions,
            rounds,
            final_totals: game.totals().to_vec(),
            basra_counts: basra_counts.to_vec(),
            winner_side,
            end_reason: end_reason as i32,
            started_at: Some(timestamp(started_at)),
            ended_at: Some(timestamp(at)),
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

/// The dealer of round `round` (from 0): the last seat deals round 0, then the deal
/// passes on (RULES.md §5), as the engine does.
fn game_dealer(settings: &Settings, round: u32) -> u8 {
    let seats = u32::from(settings.seat_count());
    ((seats - 1 + round % seats) % seats) as u8
}

fn side_scores(score: &basra_engine::RoundScore) -> Vec<common::SideRoundScore> {
    (0..2)
        .map(|side| common::SideRoundScore {
            side: side as u32,
            pile_size: u32::from(score.piles[side]),
            basras: Some(common::BasraCounts {
                basra: u32::from(score.basras[side][0]),
                jack: u32::from(score.basras[side][1]),
                komi: u32::from(score.basras[side][2]),
            }),
            basra_points: score.basra_points[side],
            majority_points: score.majority_points[side],
            card_points: score.card_points[side],
            round_points: score.points[side],
            total: score.totals[side],
        })
        .collect()
}

fn timestamp(t: DateTime<Utc>) -> prost_types::Timestamp {
    prost_types::Timestamp {
        seconds: t.timestamp(),
        nanos: t.timestamp_subsec_nanos() as i32,
    }
}
