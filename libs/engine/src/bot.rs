//! Bots as pure policies: a view in, an action out. A bot sees exactly what a player in its
//! seat sees (its [`View`], and for the search bot the public [`Memory`] of the round), never
//! the deck or another hand.
//!
//! The levels a player picks map to policies: "easy" is [`Policy::Easy`], "medium"
//! [`Policy::Greedy`], "hard" [`Policy::Hard`] (the [`search`] bot).

use rand_core::RngCore;
use serde::{Deserialize, Serialize};

use crate::capture::{self, clearable};
use crate::card::{Card, CardSet};
use crate::deck::Seed;
use crate::event::Action;
use crate::game::Game;
use crate::search::{self, Budget, Memory};
use crate::settings::{Settings, SettingsError};
use crate::view::View;

/// How a bot picks its card.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Policy {
    /// Any legal card, uniformly at random.
    Random,
    /// The "easy" level: the greedy card, except that one play in [`EASY_SLIP_IN`] is a
    /// random card (a capture or a Basra overlooked, a card given away), as a new player does.
    Easy,
    /// The "medium" level: the card worth the most now: cards and Basras taken, minus an
    /// easy Basra left to the next player and the waste of a sweeper on a small table.
    #[serde(alias = "medium")]
    Greedy,
    /// The "hard" level: the [`search`] bot at [`Budget::HARD`].
    Hard,
}

impl Policy {
    /// Every policy, weakest first.
    pub const ALL: [Policy; 4] = [Policy::Random, Policy::Easy, Policy::Greedy, Policy::Hard];
}

/// The easy bot plays a random card once in this many plays (measured in `docs/performance.md`:
/// it loses clearly to greedy and beats random clearly).
pub const EASY_SLIP_IN: u32 = 2;

/// The bot's action for this view, or `None` when it is not the viewer's turn. A caller that
/// keeps no history of the round gives the search bot only what the view shows
/// ([`Memory::unknown`]); [`decide`] takes the round's public memory.
pub fn choose(policy: Policy, view: &View, rng: &mut impl RngCore) -> Option<Action> {
    decide(policy, view, &Memory::unknown(), &Budget::HARD, rng)
}

/// The bot's action for this view and the round's public `memory`, the search bot thinking
/// within `budget`; `None` when it is not the viewer's turn.
pub fn decide(
    policy: Policy,
    view: &View,
    memory: &Memory,
    budget: &Budget,
    rng: &mut impl RngCore,
) -> Option<Action> {
    let seat = view.viewer.filter(|_| view.my_turn())?;
    let card = match policy {
        Policy::Random => random_card(view.hand, rng)?,
        Policy::Easy if rng.next_u32().is_multiple_of(EASY_SLIP_IN) => random_card(view.hand, rng)?,
        Policy::Easy | Policy::Greedy => greedy_card(&view.table, view.hand, &view.settings)?,
        Policy::Hard => search::best_card(view, memory, budget, rng, || false)?,
    };
    Some(Action::Play {
        seat,
        card,
        take: None,
    })
}

/// Plays a whole match between bots, `policies[seat]` for each seat, and returns the
/// finished game with its action log. Each bot sees only its own view and the round's
/// public memory; the search bot thinks within [`Budget::HARD`].
pub fn self_play(
    settings: Settings,
    seed: Seed,
    policies: &[Policy],
    rng: &mut impl RngCore,
) -> Result<(Game, Vec<Action>), SettingsError> {
    self_play_within(settings, seed, policies, &Budget::HARD, rng)
}

/// [`self_play`] with the search bot thinking within `budget`.
pub fn self_play_within(
    settings: Settings,
    seed: Seed,
    policies: &[Policy],
    budget: &Budget,
    rng: &mut impl RngCore,
) -> Result<(Game, Vec<Action>), SettingsError> {
    let (mut game, _) = Game::new(settings, seed)?;
    assert_eq!(
        policies.len(),
        usize::from(settings.seat_count()),
        "one policy per seat"
    );
    let mut actions = Vec::new();
    let mut events = Vec::new();
    while let Some(seat) = game.turn() {
        let view = game.view(Some(seat));
        let memory = Memory::of(game.round());
        let action = decide(policies[seat.index()], &view, &memory, budget, rng)
            .expect("the seat to move plays");
        events.clear();
        game.apply_into(&action, &mut events)
            .expect("bots play only legal cards");
        actions.push(action);
    }
    Ok((game, actions))
}

/// A uniformly random card of `hand`.
pub fn random_card(hand: CardSet, rng: &mut impl RngCore) -> Option<Card> {
    if hand.is_empty() {
        return None;
    }
    let pick = (u64::from(rng.next_u32()) * hand.len() as u64) >> 32;
    hand.nth(pick as usize)
}

/// The greedy bot's card from `hand` on `table` (`None` for an empty hand). It allocates
/// nothing, so the search bot's rollouts use it for every play.
pub(crate) fn greedy_card(table: &[Card], hand: CardSet, settings: &Settings) -> Option<Card> {
    // Ties go to the lowest card, as `max_by_key` over `Reverse(card)` would.
    let mut best: Option<(i32, Card)> = None;
    for card in hand.iter() {
        let score = greedy_score(table, card, settings);
        if best.is_none_or(|(top, _)| score > top) {
            best = Some((score, card));
        }
    }
    best.map(|(_, card)| card)
}

/// The greedy bot's worth of playing `card` on `table`, in tenths of a card.
pub(crate) fn greedy_score(table: &[Card], card: Card, settings: &Settings) -> i32 {
    let capture = capture::capture(table, card, settings);
    let taken = capture.taken.len() as i32;
    let mut score = 0;
    let mut after = [Card::KOMI; 53];
    let mut len = 0;
    for &left in table.iter().filter(|c| !capture.taken.contains(**c)) {
        after[len] = left;
        len += 1;
    }
    if taken > 0 {
        // The taken cards and the played card go to the pile.
        score += 10 * (taken + 1);
    } else {
        after[len] = card;
        len += 1;
        // Keep number cards, which can take sums later; prefer giving away a Q or K.
        if card.value().is_some() {
            score -= 2;
        }
    }
    if let Some(kind) = capture.basra {
        // A Basra is worth about as many points as five cards are toward the majority.
        score += 5 * kind.points(settings) as i32;
    }
    let sweeper = card.is_jack() || card == Card::KOMI;
    if sweeper && capture.basra.is_none() {
        // A J or the Komi is a sweep in reserve: spending it on a small table wastes it.
        score -= 10 * (5 - taken).max(0);
    }
    if len > 0 && clearable(&after[..len]) {
        // The next player may well hold the card that clears it.
        score -= 5 * settings.basra_points as i32 / 2;
    }
    score
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::seat::Side;
    use rand_chacha::ChaCha8Rng;
    use rand_core::SeedableRng;

    #[test]
    fn bots_only_play_on_their_turn_and_only_their_cards() {
        let (game, _) = Game::new(Settings::default(), Seed([3; 32])).unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let turn = game.turn().unwrap();
        let other = turn.next(2);
        for policy in Policy::ALL {
            assert_eq!(choose(policy, &game.view(Some(other)), &mut rng), None);
            assert_eq!(choose(policy, &game.view(None), &mut rng), None);
            let Some(Action::Play { seat, card, .. }) =
                choose(policy, &game.view(Some(turn)), &mut rng)
            else {
                panic!("the bot to move plays");
            };
            assert_eq!(seat, turn);
            assert!(game.round().hand(turn).contains(card));
        }
    }

    /// Matches `a` won against `b` of `matches`, each in seat 0 half the time.
    fn wins(a: Policy, b: Policy, matches: usize) -> usize {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let mut won = 0;
        for i in 0..matches {
            let a_seat = i % 2;
            let mut policies = [b; 2];
            policies[a_seat] = a;
            let seed = Seed([i as u8; 32]);
            let (game, _) = self_play(Settings::default(), seed, &policies, &mut rng).unwrap();
            if game.result().unwrap().winner == Side(a_seat as u8) {
                won += 1;
            }
        }
        won
    }

    #[test]
    fn greedy_beats_random() {
        // The full 10,000-match measurement is `make bench` (examples/bot_duel.rs).
        let greedy_wins = wins(Policy::Greedy, Policy::Random, 200);
        assert!(greedy_wins >= 150, "greedy won {greedy_wins} of 200");
    }

    #[test]
    fn easy_loses_to_greedy_and_beats_random() {
        let against_greedy = wins(Policy::Easy, Policy::Greedy, 200);
        assert!(
            against_greedy <= 70,
            "easy won {against_greedy} of 200 against greedy"
        );
        let against_random = wins(Policy::Easy, Policy::Random, 200);
        assert!(
            against_random >= 130,
            "easy won {against_random} of 200 against random"
        );
    }
}
