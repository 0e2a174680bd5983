//! The analysis of a finished match for one seat, as lichess gives every game: each card
//! the seat chose is compared with what the search bot ([`crate::search`]) would have
//! played from the same information, and the expected points it gave away are marked
//! inaccuracy, mistake or blunder by [`Thresholds`].
//!
//! **The same information.** At each of the seat's plays the search sees the seat's
//! [`View`](crate::View) (its own hand, the table, counts and totals) and the round's
//! public [`Memory`] (the cards each side took, who captured last): what the player had
//! seen. Never another hand or the deck: two matches that differ only in cards hidden
//! from the seat at a play get the same verdict on it (a test below checks it). The
//! search values every card of the hand in the same worlds ([`card_values`]); a play's
//! *expected loss* is the best card's value minus the played card's (0 for the best card,
//! in points of the round for the seat's side, ± the match target when the round decides
//! the match).
//!
//! **Deterministic.** Each play's worlds are drawn from a generator seeded with the
//! play's index in the log, so the same match analysed twice gives the same analysis,
//! and nothing hidden decides which worlds are drawn.
//!
//! Plays the server made for the seat (a turn timer, an abandoned seat) are not the
//! player's choices and are left out; so are resignations.

use rand_chacha::ChaCha8Rng;
use rand_core::SeedableRng;
use serde::{Deserialize, Serialize};

use crate::card::Card;
use crate::deck::Seed;
use crate::event::Action;
use crate::game::{Game, ReplayError};
use crate::search::{Budget, Memory, card_values};
use crate::seat::Seat;
use crate::settings::Settings;

/// The expected losses from which a play is marked (each at least the one before).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Thresholds {
    /// An inaccuracy from this many points lost.
    pub inaccuracy: f64,
    /// A mistake from this many.
    pub mistake: f64,
    /// A blunder from this many (a Basra missed is 10 points).
    pub blunder: f64,
}

impl Default for Thresholds {
    fn default() -> Thresholds {
        Thresholds {
            inaccuracy: 1.5,
            mistake: 4.0,
            blunder: 8.0,
        }
    }
}

/// How good a play was.
/// Ordered from best to worst.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Quality {
    /// Lost less than an inaccuracy.
    Good,
    /// An inaccuracy.
    Inaccuracy,
    /// A mistake.
    Mistake,
    /// A blunder.
    Blunder,
}

impl Thresholds {
    /// The mark of a play that lost `loss` expected points.
    pub fn quality(&self, loss: f64) -> Quality {
        if loss >= self.blunder {
            Quality::Blunder
        } else if loss >= self.mistake {
            Quality::Mistake
        } else if loss >= self.inaccuracy {
            Quality::Inaccuracy
        } else {
            Quality::Good
        }
    }
}

/// The verdict on one play.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PlayReview {
    /// The play's index in the action log.
    pub action: usize,
    /// The card played.
    pub played: Card,
    /// The card the search valued most.
    pub best: Card,
    /// The expected points lost by the play (≥ 0).
    pub loss: f64,
    /// Its mark.
    pub quality: Quality,
}

/// The verdict on a play of `played` from `game`'s current position by the seat to play,
/// the search dealing `budget` worlds from `rng_seed`.
pub fn review_play(
    game: &Game,
    played: Card,
    budget: &Budget,
    thresholds: &Thresholds,
    rng_seed: u64,
    action: usize,
) -> Option<PlayReview> {
    let seat = game.turn()?;
    let view = game.view(Some(seat));
    let memory = Memory::of(game.round());
    let mut rng = ChaCha8Rng::seed_from_u64(rng_seed);
    let values = card_values(&view, &memory, budget, &mut rng)?;
    let (best, best_value) =
        values
            .iter()
            .copied()
            .fold(None::<(Card, f64)>, |best, (card, value)| match best {
                Some((_, v)) if v >= value => best,
                _ => Some((card, value)),
            })?;
    let played_value = values
        .iter()
        .find(|(card, _)| *card == played)
        .map(|&(_, v)| v)?;
    let loss = (best_value - played_value).max(0.0);
    Some(PlayReview {
        action,
        played,
        best: if loss > 0.0 { best } else { played },
        loss,
        quality: thresholds.quality(loss),
    })
}

/// The verdicts on `seat`'s own plays of the match played from `settings` and `seed` by
/// `actions` (each with whether the server made it), in log order. Errors as
/// [`crate::replay`] when the log does not apply.
pub fn review(
    settings: Settings,
    seed: Seed,
    actions: &[(Action, bool)],
    seat: Seat,
    budget: &Budget,
    thresholds: &Thresholds,
) -> Result<Vec<PlayReview>, ReplayError> {
    let (mut game, _) = Game::new(settings, seed)?;
    let mut reviews = Vec::new();
    for (index, (action, automatic)) in actions.iter().enumerate() {
        if let Action::Play { seat: by, card, .. } = *action
            && by == seat
            && !automatic
            && let Some(review) = review_play(&game, card, budget, thresholds, index as u64, index)
        {
            reviews.push(review);
        }
        game.apply(action)
            .map_err(|error| ReplayError::Action { index, error })?;
    }
    Ok(reviews)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bot::{Policy, decide};
    use crate::card::CardSet;
    use crate::event::Event;
    use crate::settings::Seats;
    use rand_chacha::ChaCha8Rng;

    const BUDGET: Budget = Budget { worlds: 24 };

    /// A match `plays` plays in, every seat playing greedy.
    fn game_after(settings: Settings, seed: u8, plays: usize) -> Game {
        let (mut game, _) = Game::new(settings, Seed([seed; 32])).unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(0);
        for _ in 0..plays {
            let seat = game.turn().unwrap();
            let view = game.view(Some(seat));
            let action = decide(
                Policy::Greedy,
                &view,
                &Memory::of(game.round()),
                &BUDGET,
                &mut rng,
            );
            game.apply(&action.unwrap()).unwrap();
        }
        game
    }

    #[test]
    fn the_verdict_never_reads_cards_hidden_from_the_seat() {
        let mut redeal = ChaCha8Rng::seed_from_u64(5);
        let mut compared = 0;
        for seats in [Seats::Two, Seats::Four] {
            let settings = Settings {
                seats,
                ..Settings::default()
            };
            for seed in 0..4u8 {
                for plays in [0, 5, 14, 27, 40] {
                    let game = game_after(settings, seed, plays);
                    let Some(seat) = game.turn() else { continue };
                    let mut other = game.clone();
                    other.round_mut().redeal_hidden_from(seat, &mut redeal);
                    let hidden = |g: &Game| {
                        let others: Vec<CardSet> = (0..settings.seat_count())
                            .filter(|&s| s != seat.0)
                            .map(|s| g.round().hand(Seat(s)))
                            .collect();
                        (others, g.round().deck().clone())
                    };
                    if hidden(&game) == hidden(&other) {
                        continue;
                    }
                    for card in game.round().hand(seat).iter() {
                        let verdict = |g: &Game| {
                            review_play(g, card, &BUDGET, &Thresholds::default(), 9, plays)
                        };
                        assert_eq!(verdict(&game), verdict(&other));
                    }
                    compared += 1;
                }
            }
        }
        assert!(compared >= 25, "{compared} positions compared");
    }

    #[test]
    fn a_missed_basra_is_marked_and_the_best_card_is_good() {
        let thresholds = Thresholds::default();
        let mut found = 0;
        let mut blunders = 0;
        for seed in 0..40u8 {
            for plays in 0..40 {
                let game = game_after(Settings::default(), seed, plays);
                let Some(seat) = game.turn() else { break };
                // A position where the greedy card makes a Basra.
                let view = game.view(Some(seat));
                let mut rng = ChaCha8Rng::seed_from_u64(0);
                let Some(Action::Play {
                    card: basra_card, ..
                }) = decide(Policy::Greedy, &view, &Memory::unknown(), &BUDGET, &mut rng)
                else {
                    continue;
                };
                let mut trial = game.clone();
                let made = trial
                    .apply(&Action::Play {
                        seat,
                        card: basra_card,
                        take: None,
                    })
                    .unwrap();
                let basra = made.iter().any(|e| {
                    matches!(e, Event::CardPlayed { basra: Some(_), taken, .. } if !taken.is_empty())
                });
                if !basra || basra_card == Card::KOMI || basra_card.rank().number() == 11 {
                    continue;
                }
                // Throwing a card that takes nothing instead.
                let Some(thrown) = game.round().hand(seat).iter().find(|&c| {
                    let mut t = game.clone();
                    let made = t
                        .apply(&Action::Play {
                            seat,
                            card: c,
                            take: None,
                        })
                        .unwrap();
                    made.iter().any(|e| {
                        matches!(e, Event::CardPlayed { taken, card, .. } if taken.is_empty() && *card == c)
                    })
                }) else {
                    continue;
                };
                let best = review_play(&game, basra_card, &BUDGET, &thresholds, 1, plays).unwrap();
                assert_eq!(best.quality, Quality::Good, "{best:?}");
                // The Basra may still be there next turn, so not every miss is a blunder;
                // none is less than a mistake.
                let bad = review_play(&game, thrown, &BUDGET, &thresholds, 1, plays).unwrap();
                assert!(bad.quality >= Quality::Mistake, "{bad:?}");
                blunders += usize::from(bad.quality == Quality::Blunder);
                found += 1;
                break;
            }
            if found >= 8 {
                break;
            }
        }
        assert!(found >= 5, "only {found} positions with a Basra to miss");
        assert!(blunders >= 1, "no missed Basra was a blunder");
    }

    #[test]
    fn a_whole_match_is_reviewed_deterministically_and_automatic_plays_are_left_out() {
        let settings = Settings::default();
        let (mut game, _) = Game::new(settings, Seed([3; 32])).unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let mut actions = Vec::new();
        while let Some(seat) = game.turn() {
            let policy = if seat.0 == 0 {
                Policy::Easy
            } else {
                Policy::Greedy
            };
            let view = game.view(Some(seat));
            let action =
                decide(policy, &view, &Memory::of(game.round()), &BUDGET, &mut rng).unwrap();
            game.apply(&action).unwrap();
            // Every 10th play of seat 0 made by the server.
            actions.push((action, seat.0 == 0 && actions.len() % 10 == 0));
        }
        let small = Budget { worlds: 8 };
        let first = review(
            settings,
            Seed([3; 32]),
            &actions,
            Seat(0),
            &small,
            &Thresholds::default(),
        )
        .unwrap();
        let again = review(
            settings,
            Seed([3; 32]),
            &actions,
            Seat(0),
            &small,
            &Thresholds::default(),
        )
        .unwrap();
        assert_eq!(first, again);
        let own = actions
            .iter()
            .filter(|(a, auto)| matches!(a, Action::Play { seat: Seat(0), .. }) && !auto)
            .count();
        assert_eq!(first.len(), own);
        assert!(first.iter().all(|r| r.loss >= 0.0));
        assert!(
            first.iter().any(|r| r.quality != Quality::Good),
            "the easy bot's random cards cost something"
        );
    }
}
