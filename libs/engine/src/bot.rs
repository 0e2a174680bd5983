//! Bots as pure policies: a view in, an action out. A bot sees exactly what a player in its
//! seat sees (its [`View`]), never the deck or another hand.

use rand_core::RngCore;
use serde::{Deserialize, Serialize};

use crate::capture::clearable;
use crate::card::{Card, CardSet};
use crate::deck::Seed;
use crate::event::Action;
use crate::game::{Game, LegalPlay};
use crate::settings::{Settings, SettingsError};
use crate::view::View;

/// How a bot picks its card.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Policy {
    /// Any legal card, uniformly at random.
    Random,
    /// The card worth the most now: cards and Basras taken, minus an easy Basra left to the
    /// next player and the waste of a sweeper on a small table.
    Greedy,
}

/// The bot's action for this view, or `None` when it is not the viewer's turn.
pub fn choose(policy: Policy, view: &View, rng: &mut impl RngCore) -> Option<Action> {
    let seat = view.viewer.filter(|_| view.my_turn())?;
    let plays = view.legal_plays();
    let card = match policy {
        Policy::Random => random_card(view.hand, rng)?,
        Policy::Greedy => greedy_card(view, &plays)?,
    };
    Some(Action::Play {
        seat,
        card,
        take: None,
    })
}

/// Plays a whole match between bots, `policies[seat]` for each seat, and returns the
/// finished game with its action log. Each bot sees only its own view.
pub fn self_play(
    settings: Settings,
    seed: Seed,
    policies: &[Policy],
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
        let action = choose(policies[seat.index()], &view, rng).expect("the seat to move plays");
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

fn greedy_card(view: &View, plays: &[LegalPlay]) -> Option<Card> {
    plays
        .iter()
        .max_by_key(|play| (greedy_score(view, play), std::cmp::Reverse(play.card)))
        .map(|play| play.card)
}

/// The greedy bot's worth of a play, in tenths of a card.
fn greedy_score(view: &View, play: &LegalPlay) -> i32 {
    let taken = play.capture.taken.len() as i32;
    let mut score = 0;
    let mut table_after: Vec<Card> = view
        .table
        .iter()
        .copied()
        .filter(|card| !play.capture.taken.contains(*card))
        .collect();
    if taken > 0 {
        // The taken cards and the played card go to the pile.
        score += 10 * (taken + 1);
    } else {
        table_after.push(play.card);
        // Keep number cards, which can take sums later; prefer giving away a Q or K.
        if play.card.value().is_some() {
            score -= 2;
        }
    }
    if let Some(kind) = play.capture.basra {
        // A Basra is worth about as many points as five cards are toward the majority.
        score += 5 * kind.points(&view.settings) as i32;
    }
    let sweeper = play.card.is_jack() || play.card == Card::KOMI;
    if sweeper && play.capture.basra.is_none() {
        // A J or the Komi is a sweep in reserve: spending it on a small table wastes it.
        score -= 10 * (5 - taken).max(0);
    }
    if !table_after.is_empty() && clearable(&table_after) {
        // The next player may well hold the card that clears it.
        score -= 5 * view.settings.basra_points as i32 / 2;
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
        for policy in [Policy::Random, Policy::Greedy] {
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

    #[test]
    fn greedy_beats_random() {
        // The full 10,000-match measurement is `make bench` (examples/bot_duel.rs).
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let matches = 200;
        let mut greedy_wins = 0;
        for i in 0..matches {
            let greedy_seat = i % 2;
            let mut policies = [Policy::Random; 2];
            policies[greedy_seat] = Policy::Greedy;
            let seed = Seed([i as u8; 32]);
            let (game, _) = self_play(Settings::default(), seed, &policies, &mut rng).unwrap();
            if game.result().unwrap().winner == Side(greedy_seat as u8) {
                greedy_wins += 1;
            }
        }
        assert!(
            greedy_wins * 100 >= matches * 75,
            "greedy won {greedy_wins} of {matches}"
        );
    }
}
