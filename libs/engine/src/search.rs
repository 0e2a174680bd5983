//! The search bot (the "hard" level): determinized Monte Carlo over the cards its seat
//! cannot see, with greedy rollouts.
//!
//! **What it knows.** Its [`View`] (hand, table, hand sizes, pile sizes, deck count, totals)
//! and the round's public [`Memory`]: the cards each side has taken and who captured last.
//! Every card in a pile was seen face up (played, or on the table when it was taken), so a
//! player who watched the round knows them. It never reads the deck or another hand: its
//! only inputs are the view and the memory, and the `tests` below check that two games that
//! differ only in hidden cards get the same decision.
//!
//! **How it decides.** Each iteration deals a *world*: the cards the seat has not seen are
//! shuffled and dealt to the other hands (partners' too: the bot does not see its partner's
//! cards), then the deck, with the sizes the view shows. In that world every candidate card
//! is played and the round is finished by the greedy policy for every seat; the value is the
//! round's score difference for the bot's side as the rules count it (majority, Basras, Jack
//! and Komi Basras, card points when they are on), plus or minus the match target when the
//! round ends the match (RULES.md §20): near the end, winning the match is what counts, not
//! the points. The card with the best total over all worlds is played; cards that play
//! alike (same rank, not the Komi, no card points of their own) are tried once.
//!
//! **Why perfect-information Monte Carlo rather than information-set MCTS.** A Basra hand
//! holds at most four cards, so the decision is a choice among four, and nearly everything
//! hidden is chance (the deck and the next deals), not a strategy another player hides:
//! there is little bluffing or signalling to reason about, which is where PIMC's known
//! faults (strategy fusion, non-locality) bite and IS-MCTS earns its cost. Evaluating every
//! candidate in the *same* worlds (common random numbers) cancels most of the luck of the
//! deal between candidates, so a few hundred worlds separate them; a tree over later plays
//! would spend the same budget on positions that the next deal makes irrelevant. Each
//! iteration costs at most four rollouts, so a budget in iterations is a budget in time.
//!
//! **Deterministic.** For the same view, memory, budget and random generator state the
//! decision is the same. The engine reads no clock: a caller with a time limit passes a
//! `stop` callback, checked between worlds, and the decision then depends on how many worlds
//! fitted.

use rand_core::RngCore;
use serde::{Deserialize, Serialize};

use crate::bot::{greedy_card, greedy_score};
use crate::card::{Card, CardSet, Suit};
use crate::deck::Deck;
use crate::event::Event;
use crate::game::winner;
use crate::round::Round;
use crate::seat::{Seat, Side};
use crate::settings::Settings;
use crate::view::View;

/// How long the search bot thinks: the number of worlds it deals. Each world costs one
/// rollout to the end of the round per distinct card in hand.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Budget {
    /// Worlds dealt per decision.
    pub worlds: u32,
}

impl Budget {
    /// The "hard" level's budget, chosen from the budget → win rate → decision time table in
    /// `docs/performance.md`.
    pub const HARD: Budget = Budget { worlds: 100 };
}

/// The public history of the current round that a seat remembers beyond its [`View`]: the
/// cards each side has taken (its pile's contents) and who captured last.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Memory {
    /// The round remembered; `None` when nothing is.
    pub round: Option<u32>,
    /// The cards seen going to each side's pile: all of its cards for a seat that watched
    /// the whole round; fewer for one that joined late (the rest count as unseen).
    pub piles: [CardSet; 2],
    /// The seat that captured last.
    pub last_capturer: Option<Seat>,
}

impl Memory {
    /// A seat that remembers nothing of the round: the search bot then treats the pile
    /// contents as unseen too, and guesses that nobody has captured yet.
    pub fn unknown() -> Memory {
        Memory::default()
    }

    /// The public part of a round: what everyone at the table saw taken, and by whom. It
    /// reads nothing hidden (no hand, not the deck).
    pub fn of(round: &Round) -> Memory {
        Memory {
            round: Some(round.index()),
            piles: round.piles(),
            last_capturer: round.last_capturer(),
        }
    }

    /// Updates the memory with an event as the seat saw it (for clients that follow the
    /// event stream): a new round forgets the last one; a capture adds to its side's pile.
    pub fn observe(&mut self, event: &Event) {
        match *event {
            Event::RoundStarted { round, .. } => {
                *self = Memory {
                    round: Some(round),
                    ..Memory::default()
                };
            }
            Event::CardPlayed {
                seat, card, taken, ..
            } if !taken.is_empty() => {
                let pile = &mut self.piles[seat.side().index()];
                *pile = pile.union(taken.to_set());
                pile.insert(card);
                self.last_capturer = Some(seat);
            }
            _ => {}
        }
    }
}

/// The search bot's card for this view, or `None` when it is not the viewer's turn. It deals
/// up to `budget.worlds` worlds, asking `stop` before each whether to stop early (a time
/// limit); with no world dealt, or a view and memory that do not add up, it plays the
/// greedy card.
pub fn best_card(
    view: &View,
    memory: &Memory,
    budget: &Budget,
    rng: &mut impl RngCore,
    stop: impl FnMut() -> bool,
) -> Option<Card> {
    let values = evaluate(view, memory, budget, rng, stop)?;
    // The first best: candidates are in greedy order, so a tie goes to the greedy card.
    let mut best = 0;
    for (i, &(_, total)) in values.iter().enumerate() {
        if total > values[best].1 {
            best = i;
        }
    }
    Some(values[best].0)
}

/// What the search bot expects each card of the hand to be worth, in points of the round
/// for the viewer's side (± the match target when the round ends the match), from the
/// same worlds as [`best_card`] (which plays the best of them): one value per card in
/// hand, in hand order, cards that play alike valued alike. `None` when it is not the
/// viewer's turn. With one card worth trying, or a view and memory that do not add up,
/// every card is valued 0 (nothing to compare).
pub fn card_values(
    view: &View,
    memory: &Memory,
    budget: &Budget,
    rng: &mut impl RngCore,
) -> Option<Vec<(Card, f64)>> {
    let values = evaluate(view, memory, budget, rng, || false)?;
    let settings = &view.settings;
    let value_of = |card: Card| {
        values
            .iter()
            .find(|(tried, _)| play_class(*tried, settings) == play_class(card, settings))
            .map_or(0.0, |&(_, total)| total as f64)
    };
    let worlds = f64::from(budget.worlds.max(1));
    Some(
        view.hand
            .iter()
            .map(|card| (card, value_of(card) / worlds))
            .collect(),
    )
}

/// Each card worth trying (best greedy card first) with its total worth over the worlds
/// dealt; all totals 0 when there is nothing to search.
fn evaluate(
    view: &View,
    memory: &Memory,
    budget: &Budget,
    rng: &mut impl RngCore,
    mut stop: impl FnMut() -> bool,
) -> Option<Vec<(Card, i64)>> {
    let seat = view.viewer.filter(|_| view.my_turn())?;
    let settings = &view.settings;
    let candidates = candidates(view);
    candidates.first()?;
    let mut totals = vec![0i64; candidates.len()];
    let unseen = Unseen::of(view, memory, seat).filter(|_| candidates.len() > 1);
    if let Some(unseen) = unseen {
        let side = seat.side();
        let mut events = Vec::with_capacity(16);
        for _ in 0..budget.worlds {
            if stop() {
                break;
            }
            let world = unseen.deal(view, rng);
            for (total, &card) in totals.iter_mut().zip(&candidates) {
                let mut round = world.clone();
                events.clear();
                round
                    .play(settings, seat, card, None, &mut events)
                    .expect("the card is in the hand");
                *total += rollout(round, settings, view.totals, side, &mut events);
            }
        }
    }
    Some(candidates.into_iter().zip(totals).collect())
}

/// The hand's cards worth trying, best greedy card first: one card of each class that plays
/// alike (same rank; the Komi and, with card points, 2C and 10D are classes of their own).
fn candidates(view: &View) -> Vec<Card> {
    let settings = &view.settings;
    let mut seen = Vec::with_capacity(4);
    let mut cards: Vec<(i32, Card)> = Vec::with_capacity(4);
    for card in view.hand.iter() {
        let class = play_class(card, settings);
        if seen.contains(&class) {
            continue;
        }
        seen.push(class);
        cards.push((greedy_score(&view.table, card, settings), card));
    }
    // Stable: equal scores keep index order, as the greedy bot breaks ties.
    cards.sort_by_key(|&(score, _)| std::cmp::Reverse(score));
    debug_assert_eq!(
        cards.first().map(|&(_, card)| card),
        greedy_card(&view.table, view.hand, settings)
    );
    cards.into_iter().map(|(_, card)| card).collect()
}

/// Cards of one class play alike for the rest of the round.
fn play_class(card: Card, settings: &Settings) -> u8 {
    let points_of_its_own = settings.card_points
        && matches!(
            (card.value(), card.suit()),
            (Some(2), Suit::Clubs) | (Some(10), Suit::Diamonds)
        );
    if card == Card::KOMI || points_of_its_own {
        100 + card.index()
    } else {
        card.rank().number()
    }
}

/// Where the cards the seat has not seen may be: the other hands, the deck, and the part of
/// each pile it does not remember (all of it for [`Memory::unknown`]).
struct Unseen {
    cards: Vec<Card>,
    /// How many of `cards` a world deals (all of them unless the view and memory disagree).
    needed: usize,
    me: Seat,
    memory: Memory,
    piles_unknown: [usize; 2],
}

impl Unseen {
    /// `None` when the view and memory do not add up (a memory of another round is ignored).
    fn of(view: &View, memory: &Memory, me: Seat) -> Option<Unseen> {
        let memory = if memory.round == Some(view.round) {
            *memory
        } else {
            Memory::unknown()
        };
        let mut seen = view.visible_cards();
        for (side, pile) in memory.piles.iter().enumerate() {
            if pile.len() > usize::from(view.pile_sizes[side]) {
                return None;
            }
            seen = seen.union(*pile);
        }
        let cards: Vec<Card> = CardSet::FULL.difference(seen).iter().collect();
        let piles_unknown =
            [0, 1].map(|side| usize::from(view.pile_sizes[side]) - memory.piles[side].len());
        let hands: usize = (0..view.hand_sizes.len())
            .filter(|&s| s != me.index())
            .map(|s| usize::from(view.hand_sizes[s]))
            .sum();
        let needed = hands + usize::from(view.deck_left) + piles_unknown[0] + piles_unknown[1];
        (cards.len() >= needed && view.hand_sizes.len() <= 4).then_some(Unseen {
            cards,
            needed,
            me,
            memory,
            piles_unknown,
        })
    }

    /// A world: the unseen cards shuffled and dealt to the other hands, the forgotten part
    /// of the piles and the deck.
    fn deal(&self, view: &View, rng: &mut impl RngCore) -> Round {
        let mut cards = self.cards.clone();
        // Fisher–Yates from the front, only as far as the cards dealt.
        for i in 0..self.needed {
            let j = i + below(rng, cards.len() - i);
            cards.swap(i, j);
        }
        let mut next = 0;
        let mut take = |count: usize| {
            next += count;
            next - count..next
        };
        let mut hands = [CardSet::EMPTY; 4];
        hands[self.me.index()] = view.hand;
        for (seat, &size) in view.hand_sizes.iter().enumerate() {
            if seat != self.me.index() {
                let range = take(usize::from(size));
                hands[seat] = cards[range].iter().copied().collect();
            }
        }
        let mut piles = self.memory.piles;
        for (pile, &unknown) in piles.iter_mut().zip(&self.piles_unknown) {
            let range = take(unknown);
            *pile = pile.union(cards[range].iter().copied().collect());
        }
        let range = take(usize::from(view.deck_left));
        let deck = Deck::from_slice(&cards[range]);
        Round::imagined(
            &view.settings,
            view.round,
            view.dealer,
            self.me,
            deck,
            hands,
            &view.table,
            piles,
            view.round_basra_points,
            self.memory.last_capturer,
        )
    }
}

/// A number uniform enough in `0..bound` (`bound` ≤ 52: the bias of the widening multiply is
/// below 2⁻²⁶).
fn below(rng: &mut impl RngCore, bound: usize) -> usize {
    ((u64::from(rng.next_u32()) * bound as u64) >> 32) as usize
}

/// Finishes `round` with the greedy policy for every seat and answers its worth to `side`:
/// its points minus the other side's, ± the target when the round ends the match.
fn rollout(
    mut round: Round,
    settings: &Settings,
    totals: [u32; 2],
    side: Side,
    events: &mut Vec<Event>,
) -> i64 {
    while !round.is_over() {
        let seat = round.turn();
        let card = greedy_card(round.table(), round.hand(seat), settings)
            .expect("the seat to play holds a card");
        events.clear();
        round
            .play(settings, seat, card, None, events)
            .expect("the greedy card is legal");
    }
    // The carry of tied rounds is not in the view; the bot counts without it.
    let score = round.finish(settings, &mut 0, totals);
    let (mine, theirs) = (side.index(), side.other().index());
    let mut worth = i64::from(score.points[mine]) - i64::from(score.points[theirs]);
    match winner(score.totals, settings.target_score) {
        Some(won) if won == side => worth += i64::from(settings.target_score),
        Some(_) => worth -= i64::from(settings.target_score),
        None => {}
    }
    worth
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bot::{Policy, decide, self_play_within};
    use crate::deck::Seed;
    use crate::event::Action;
    use crate::game::Game;
    use crate::settings::Seats;
    use rand_chacha::ChaCha8Rng;
    use rand_core::SeedableRng;

    const SMALL: Budget = Budget { worlds: 6 };

    fn four_seats() -> Settings {
        Settings {
            seats: Seats::Four,
            ..Settings::default()
        }
    }

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
                &SMALL,
                &mut rng,
            );
            game.apply(&action.unwrap()).unwrap();
        }
        game
    }

    fn card_of(action: Option<Action>) -> Card {
        match action {
            Some(Action::Play { card, .. }) => card,
            other => panic!("expected a play, got {other:?}"),
        }
    }

    #[test]
    fn the_decision_depends_only_on_what_the_seat_sees() {
        let mut redeal = ChaCha8Rng::seed_from_u64(99);
        let mut compared = 0;
        for settings in [Settings::default(), four_seats()] {
            for seed in 0..6u8 {
                // Early, mid-round and late positions, in the first round and later ones.
                for plays in [0, 3, 9, 17, 30, 45, 61] {
                    let game = game_after(settings, seed, plays);
                    let Some(seat) = game.turn() else { continue };
                    let view = game.view(Some(seat));
                    let memory = Memory::of(game.round());
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
                        continue; // the last card: nothing left to hide
                    }
                    assert_eq!(other.view(Some(seat)), view, "the seat sees the same");
                    assert_eq!(Memory::of(other.round()), memory, "and remembers the same");
                    let budget = Budget { worlds: 12 };
                    let choice = |g: &Game| {
                        let mut rng = ChaCha8Rng::seed_from_u64(u64::from(seed));
                        let view = g.view(Some(seat));
                        card_of(decide(
                            Policy::Hard,
                            &view,
                            &Memory::of(g.round()),
                            &budget,
                            &mut rng,
                        ))
                    };
                    assert_eq!(choice(&game), choice(&other));
                    compared += 1;
                }
            }
        }
        assert!(compared >= 70, "{compared} positions compared");
    }

    #[test]
    fn the_same_seed_plays_the_same_match_and_another_seed_may_not() {
        let policies = [Policy::Hard, Policy::Greedy, Policy::Hard, Policy::Greedy];
        for (settings, policies) in [
            (Settings::default(), &policies[..2]),
            (four_seats(), &policies[..]),
        ] {
            let play = |rng_seed| {
                let mut rng = ChaCha8Rng::seed_from_u64(rng_seed);
                self_play_within(settings, Seed([5; 32]), policies, &SMALL, &mut rng)
                    .unwrap()
                    .1
            };
            let actions = play(1);
            assert_eq!(actions, play(1));
            // With two worlds a decision, the worlds dealt decide some close calls.
            assert!((2..6).any(|rng_seed| play(rng_seed) != actions));
        }
    }

    #[test]
    fn the_memory_followed_from_the_seats_events_is_the_rounds_public_part() {
        for settings in [Settings::default(), four_seats()] {
            let (mut game, opening) = Game::new(settings, Seed([8; 32])).unwrap();
            let seat = Seat(1);
            let mut memory = Memory::unknown();
            for event in &opening {
                memory.observe(&event.for_viewer(Some(seat)));
            }
            let mut rng = ChaCha8Rng::seed_from_u64(3);
            let mut checked = 0;
            while let Some(turn) = game.turn() {
                assert_eq!(memory, Memory::of(game.round()));
                let action = decide(
                    Policy::Greedy,
                    &game.view(Some(turn)),
                    &memory,
                    &SMALL,
                    &mut rng,
                );
                for event in game.apply(&action.unwrap()).unwrap() {
                    memory.observe(&event.for_viewer(Some(seat)));
                }
                checked += 1;
            }
            assert!(checked > 48, "{checked} plays: more than one round");
        }
    }

    #[test]
    fn without_memory_the_bot_still_plays_a_card_of_its_hand() {
        for settings in [Settings::default(), four_seats()] {
            for plays in [0, 7, 20, 40] {
                let game = game_after(settings, 4, plays);
                let seat = game.turn().unwrap();
                let view = game.view(Some(seat));
                let mut rng = ChaCha8Rng::seed_from_u64(1);
                let card = best_card(&view, &Memory::unknown(), &SMALL, &mut rng, || false);
                assert!(view.hand.contains(card.unwrap()));
                // A memory of another round is ignored the same way.
                let stale = Memory {
                    round: Some(view.round + 1),
                    ..Memory::of(game.round())
                };
                let card = best_card(&view, &stale, &SMALL, &mut rng, || false);
                assert!(view.hand.contains(card.unwrap()));
            }
        }
    }

    #[test]
    fn a_search_stopped_before_its_first_world_plays_the_greedy_card() {
        for plays in [0, 5, 11, 26] {
            let game = game_after(Settings::default(), 6, plays);
            let view = game.view(game.turn());
            let memory = Memory::of(game.round());
            let mut rng = ChaCha8Rng::seed_from_u64(1);
            let mut asked = 0;
            let card = best_card(&view, &memory, &Budget::HARD, &mut rng, || {
                asked += 1;
                true
            });
            assert_eq!(card, greedy_card(&view.table, view.hand, &view.settings));
            assert!(asked <= 1);
        }
    }

    #[test]
    fn hard_beats_greedy_even_on_a_small_budget() {
        // The 10,000-match measurement at the full budget is in docs/performance.md
        // (examples/bot_duel.rs); this is a fixed set of seeds, so it cannot flake.
        let matches = 30;
        let mut hard_wins = 0;
        for i in 0..matches {
            let hard_seat = i % 2;
            let mut policies = [Policy::Greedy; 2];
            policies[hard_seat] = Policy::Hard;
            let mut rng = ChaCha8Rng::seed_from_u64(i as u64);
            let budget = Budget { worlds: 4 };
            let (game, _) = self_play_within(
                Settings::default(),
                Seed([i as u8; 32]),
                &policies,
                &budget,
                &mut rng,
            )
            .unwrap();
            if game.result().unwrap().winner == Side(hard_seat as u8) {
                hard_wins += 1;
            }
        }
        assert!(
            hard_wins * 100 >= matches * 65,
            "hard won {hard_wins} of {matches}"
        );
    }
}
