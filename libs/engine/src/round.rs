//! One round: the deal, the plays, the end-of-round leftovers and the round's scoring
//! (RULES.md §2–§5, §10–§11, §16–§19).

use serde::{Deserialize, Serialize};

use crate::capture::{self, Capture};
use crate::card::{Card, CardSet, Rank, Suit};
use crate::card_list::CardList;
use crate::deck::Deck;
use crate::error::RuleError;
use crate::event::{Event, RoundScore};
use crate::seat::Seat;
use crate::settings::{MajorityTie, Settings};

/// Cards per hand in every deal, and on the starting table.
pub const DEAL_SIZE: usize = 4;

/// The state of one round.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Round {
    index: u32,
    seats: u8,
    dealer: Seat,
    turn: Seat,
    deck: Deck,
    hands: [CardSet; 4],
    /// The table, in laying order (position 0 has lain longest).
    table: CardList,
    piles: [CardSet; 2],
    basras: [[u8; 3]; 2],
    basra_points: [u32; 2],
    last_capturer: Option<Seat>,
}

impl Round {
    /// Deals a round from `deck` (top first): four cards to each seat starting after the
    /// dealer, then the starting table (cleaned of J and 7D if the settings say so).
    /// Pushes `RoundStarted`, one `HandDealt` per seat, `TableDealt` and `Turn`.
    pub fn start(
        settings: &Settings,
        index: u32,
        deck: Deck,
        dealer: Seat,
        events: &mut Vec<Event>,
    ) -> Round {
        let seats = settings.seat_count();
        debug_assert!(dealer.0 < seats);
        let mut round = Round {
            index,
            seats,
            dealer,
            turn: dealer.next(seats),
            deck,
            hands: [CardSet::EMPTY; 4],
            table: CardList::EMPTY,
            piles: [CardSet::EMPTY; 2],
            basras: [[0; 3]; 2],
            basra_points: [0; 2],
            last_capturer: None,
        };
        events.push(Event::RoundStarted {
            round: index,
            dealer,
        });
        round.deal_hands(events);
        let mut starting = [Card::KOMI; DEAL_SIZE];
        for slot in &mut starting {
            *slot = round
                .deck
                .draw()
                .expect("a full deck holds the starting table");
        }
        // The four cards lie face up first; then, left to right, a J or the Komi goes under
        // the deck and the next top card takes its place.
        for slot in &mut starting {
            while settings.clean_start_table && (slot.is_jack() || *slot == Card::KOMI) {
                round.deck.put_under(*slot);
                *slot = round.deck.draw().expect("the deck is never empty here");
            }
            round.table.push(*slot);
        }
        events.push(Event::TableDealt { cards: starting });
        events.push(Event::Turn { seat: round.turn });
        round
    }

    /// A round in the middle of play, as the search bot imagines it: every field given.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn imagined(
        settings: &Settings,
        index: u32,
        dealer: Seat,
        turn: Seat,
        deck: Deck,
        hands: [CardSet; 4],
        table: &[Card],
        piles: [CardSet; 2],
        basra_points: [u32; 2],
        last_capturer: Option<Seat>,
    ) -> Round {
        Round {
            index,
            seats: settings.seat_count(),
            dealer,
            turn,
            deck,
            hands,
            table: table.iter().copied().collect(),
            piles,
            basras: [[0; 3]; 2],
            basra_points,
            last_capturer,
        }
    }

    /// Deals the cards `viewer` cannot see (the other hands and the deck) again, at random,
    /// keeping every hand's size: a game that differs only in hidden cards.
    #[cfg(test)]
    pub(crate) fn redeal_hidden_from(&mut self, viewer: Seat, rng: &mut impl rand_core::RngCore) {
        let mut hidden: Vec<Card> = self.deck.iter().collect();
        for seat in (0..self.seats).map(Seat).filter(|&s| s != viewer) {
            hidden.extend(self.hands[seat.index()].iter());
        }
        for i in (1..hidden.len()).rev() {
            let j = ((u64::from(rng.next_u32()) * (i as u64 + 1)) >> 32) as usize;
            hidden.swap(i, j);
        }
        let mut cards = hidden.into_iter();
        for seat in (0..self.seats).map(Seat).filter(|&s| s != viewer) {
            let size = self.hands[seat.index()].len();
            self.hands[seat.index()] = cards.by_ref().take(size).collect();
        }
        let deck: Vec<Card> = cards.collect();
        self.deck = Deck::from_slice(&deck);
    }

    fn deal_hands(&mut self, events: &mut Vec<Event>) {
        let mut seat = self.dealer;
        for _ in 0..self.seats {
            seat = seat.next(self.seats);
            let mut hand = CardSet::EMPTY;
            for _ in 0..DEAL_SIZE {
                hand.insert(self.deck.draw().expect("the deck holds whole deals"));
            }
            self.hands[seat.index()] = hand;
            events.push(Event::HandDealt {
                seat,
                cards: Some(hand),
            });
        }
    }

    /// What playing `card` from `seat` would take, or why it is not allowed. Changes nothing.
    pub fn check(
        &self,
        settings: &Settings,
        seat: Seat,
        card: Card,
        take: Option<CardSet>,
    ) -> Result<Capture, RuleError> {
        if seat.0 >= self.seats {
            return Err(RuleError::NoSuchSeat {
                seat,
                seats: self.seats,
            });
        }
        if seat != self.turn {
            return Err(RuleError::NotYourTurn {
                seat,
                turn: self.turn,
            });
        }
        if !self.hands[seat.index()].contains(card) {
            return Err(RuleError::CardNotInHand { seat, card });
        }
        match take {
            None => Ok(capture::capture(self.table.as_slice(), card, settings)),
            Some(choice) => capture::chosen_capture(self.table.as_slice(), card, choice, settings),
        }
    }

    /// Plays `card` from `seat`. On error nothing changes. Pushes `CardPlayed`, the next
    /// deal's `HandDealt` events when every hand is empty, and `Turn` unless the round is over.
    pub fn play(
        &mut self,
        settings: &Settings,
        seat: Seat,
        card: Card,
        take: Option<CardSet>,
        events: &mut Vec<Event>,
    ) -> Result<(), RuleError> {
        let capture = self.check(settings, seat, card, take)?;
        self.hands[seat.index()].remove(card);
        let last_card = self.deck.is_empty() && self.hands_empty();
        let basra = capture
            .basra
            .filter(|_| settings.last_card_basra || !last_card);
        let side = seat.side().index();
        let mut taken = CardList::EMPTY;
        if capture.taken.is_empty() {
            self.table.push(card);
        } else {
            taken = self.table.remove(capture.taken);
            let mut won = capture.taken;
            won.insert(card);
            self.piles[side] = self.piles[side].union(won);
            self.last_capturer = Some(seat);
            if let Some(kind) = basra {
                self.basras[side][kind as usize] += 1;
                self.basra_points[side] += kind.points(settings);
            }
        }
        events.push(Event::CardPlayed {
            seat,
            card,
            taken,
            basra,
        });
        self.turn = seat.next(self.seats);
        if self.hands_empty() && !self.deck.is_empty() {
            self.deal_hands(events);
        }
        if !self.is_over() {
            events.push(Event::Turn { seat: self.turn });
        }
        Ok(())
    }

    fn hands_empty(&self) -> bool {
        self.hands.iter().all(|hand| hand.is_empty())
    }

    /// Whether every card has been played.
    pub fn is_over(&self) -> bool {
        self.deck.is_empty() && self.hands_empty()
    }

    /// Ends a finished round: the leftovers go to the last capturer (or out of play), and the
    /// round is scored. `carry` is the majority award carried over from tied rounds.
    /// `totals` are the match totals before this round; the score holds them after it.
    pub fn finish(&mut self, settings: &Settings, carry: &mut u32, totals: [u32; 2]) -> RoundScore {
        debug_assert!(self.is_over());
        let leftovers = self.table.take_all();
        if let Some(seat) = self.last_capturer {
            let side = seat.side().index();
            self.piles[side] = self.piles[side].union(leftovers.to_set());
        }
        let piles = self.piles.map(|pile| pile.len() as u8);
        let award = settings.majority_points + *carry;
        let majority_points = match piles[0].cmp(&piles[1]) {
            std::cmp::Ordering::Greater => [award, 0],
            std::cmp::Ordering::Less => [0, award],
            std::cmp::Ordering::Equal => match settings.majority_tie {
                MajorityTie::Nobody => [0, 0],
                MajorityTie::Both => [award, award],
                MajorityTie::CarryOver => [0, 0],
            },
        };
        *carry = match (piles[0] == piles[1], settings.majority_tie) {
            (true, MajorityTie::CarryOver) => award,
            _ => 0,
        };
        let card_points = if settings.card_points {
            self.piles.map(card_points)
        } else {
            [0, 0]
        };
        let points = [0, 1].map(|s| self.basra_points[s] + majority_points[s] + card_points[s]);
        RoundScore {
            round: self.index,
            leftovers,
            last_capturer: self.last_capturer,
            piles,
            basras: self.basras,
            basra_points: self.basra_points,
            majority_points,
            card_points,
            points,
            totals: [totals[0] + points[0], totals[1] + points[1]],
        }
    }

    /// The round number, from 0.
    pub fn index(&self) -> u32 {
        self.index
    }

    /// Who dealt this round (the seat after them plays first).
    pub fn dealer(&self) -> Seat {
        self.dealer
    }

    /// The seat to play.
    pub fn turn(&self) -> Seat {
        self.turn
    }

    /// A seat's hand.
    pub fn hand(&self, seat: Seat) -> CardSet {
        self.hands[seat.index()]
    }

    /// The table in laying order.
    pub fn table(&self) -> &[Card] {
        self.table.as_slice()
    }

    /// The cards in each side's pile.
    pub fn piles(&self) -> [CardSet; 2] {
        self.piles
    }

    /// The cards not yet dealt.
    pub fn deck(&self) -> &Deck {
        &self.deck
    }

    /// Basra points of each side so far this round.
    pub fn basra_points(&self) -> [u32; 2] {
        self.basra_points
    }

    /// The seat that captured last, if any.
    pub fn last_capturer(&self) -> Option<Seat> {
        self.last_capturer
    }
}

/// Card points of a pile (RULES.md §19): each J 1, each A 1, 2C 2, 10D 3.
fn card_points(pile: CardSet) -> u32 {
    let two_of_clubs = Card::new(Rank::new(2).expect("2 is a rank"), Suit::Clubs);
    let ten_of_diamonds = Card::new(Rank::new(10).expect("10 is a rank"), Suit::Diamonds);
    pile.iter()
        .map(|card| match card {
            c if c == two_of_clubs => 2,
            c if c == ten_of_diamonds => 3,
            c if c.is_jack() || c.value() == Some(1) => 1,
            _ => 0,
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::BasraKind;
    use crate::settings::Seats;

    fn card(text: &str) -> Card {
        text.parse().unwrap()
    }

    fn cards(text: &str) -> Vec<Card> {
        text.split_whitespace().map(card).collect()
    }

    fn list(text: &str) -> CardList {
        cards(text).into_iter().collect()
    }

    fn set(text: &str) -> CardSet {
        cards(text).into_iter().collect()
    }

    /// A deck in index order (AC AD AH AS 2C … KS) with `front` moved to the top.
    fn deck_with(front: &str) -> Deck {
        let front = cards(front);
        let mut all: Vec<Card> = front.clone();
        all.extend(Card::all().filter(|c| !front.contains(c)));
        Deck::from_cards(all.try_into().unwrap())
    }

    /// The last plays of a round: the deck is empty, hands and table as given.
    fn ending(hands: [&str; 2], table: &str, turn: u8, last_capturer: Option<u8>) -> Round {
        let mut round = Round::start(
            &Settings::default(),
            0,
            deck_with(""),
            Seat(1),
            &mut Vec::new(),
        );
        round.deck = Deck::empty();
        round.hands = [set(hands[0]), set(hands[1]), CardSet::EMPTY, CardSet::EMPTY];
        round.table = CardList::EMPTY;
        for c in cards(table) {
            round.table.push(c);
        }
        round.turn = Seat(turn);
        round.last_capturer = last_capturer.map(Seat);
        round.piles = [CardSet::EMPTY; 2];
        round
    }

    #[test]
    fn deal_gives_blocks_of_four_from_the_seat_after_the_dealer_then_the_table() {
        let mut events = Vec::new();
        let round = Round::start(&Settings::default(), 0, deck_with(""), Seat(0), &mut events);
        assert_eq!(round.hand(Seat(1)), set("AC AD AH AS"));
        assert_eq!(round.hand(Seat(0)), set("2C 2D 2H 2S"));
        assert_eq!(round.table(), cards("3C 3D 3H 3S").as_slice());
        assert_eq!(
            round.turn(),
            Seat(1),
            "the player after the dealer plays first"
        );
        assert_eq!(round.deck().len(), 40);
        assert_eq!(
            events[0],
            Event::RoundStarted {
                round: 0,
                dealer: Seat(0)
            }
        );
        assert!(matches!(events[1], Event::HandDealt { seat: Seat(1), .. }));
        assert!(matches!(events[2], Event::HandDealt { seat: Seat(0), .. }));
        assert!(matches!(events[3], Event::TableDealt { .. }));
        assert_eq!(events[4], Event::Turn { seat: Seat(1) });
    }

    #[test]
    fn four_seats_deal_sixteen_cards_then_the_table() {
        let rules = Settings {
            seats: Seats::Four,
            ..Settings::default()
        };
        let round = Round::start(&rules, 0, deck_with(""), Seat(3), &mut Vec::new());
        assert_eq!(round.hand(Seat(0)), set("AC AD AH AS"));
        assert_eq!(round.hand(Seat(1)), set("2C 2D 2H 2S"));
        assert_eq!(round.hand(Seat(3)), set("4C 4D 4H 4S"));
        assert_eq!(round.table(), cards("5C 5D 5H 5S").as_slice());
        assert_eq!(round.turn(), Seat(0));
        assert_eq!(round.deck().len(), 32);
    }

    #[test]
    fn jacks_and_the_komi_leave_the_starting_table_for_the_bottom_of_the_deck() {
        let top = "AC AD AH AS 2C 2D 2H 2S JC 5H 7D 6S JD 9C";
        let mut events = Vec::new();
        let round = Round::start(
            &Settings::default(),
            0,
            deck_with(top),
            Seat(0),
            &mut events,
        );
        // JC is replaced by JD, which is replaced by 9C; 7D is replaced by the next card.
        let next = Card::all().find(|c| !cards(top).contains(c)).unwrap();
        assert_eq!(round.table(), [card("9C"), card("5H"), next, card("6S")]);
        assert_eq!(
            events[3],
            Event::TableDealt {
                cards: [card("9C"), card("5H"), next, card("6S")]
            }
        );
        let bottom: Vec<Card> = round.deck().iter().collect();
        assert_eq!(&bottom[bottom.len() - 3..], cards("JC JD 7D").as_slice());
        assert_eq!(round.deck().len(), 40);
        let raw = Settings {
            clean_start_table: false,
            ..Settings::default()
        };
        let round = Round::start(&raw, 0, deck_with(top), Seat(0), &mut Vec::new());
        assert_eq!(round.table(), cards("JC 5H 7D 6S").as_slice());
    }

    #[test]
    fn hands_are_dealt_again_when_all_are_empty() {
        let rules = Settings::default();
        let mut events = Vec::new();
        let mut round = Round::start(&rules, 0, deck_with(""), Seat(0), &mut events);
        for _ in 0..8 {
            let seat = round.turn();
            let card = round.hand(seat).iter().next().unwrap();
            round.play(&rules, seat, card, None, &mut events).unwrap();
        }
        assert_eq!(round.hand(Seat(0)).len(), 4);
        assert_eq!(round.hand(Seat(1)).len(), 4);
        assert_eq!(round.deck().len(), 32);
        assert_eq!(round.turn(), Seat(1), "turns keep going seat by seat");
        let deals = events
            .iter()
            .filter(|e| matches!(e, Event::HandDealt { .. }))
            .count();
        assert_eq!(deals, 4);
    }

    #[test]
    fn turn_and_hand_are_checked_and_refusals_change_nothing() {
        let rules = Settings::default();
        let round = Round::start(&rules, 0, deck_with(""), Seat(0), &mut Vec::new());
        let before = round.clone();
        let mut copy = round.clone();
        let mut events = Vec::new();
        assert_eq!(
            copy.play(&rules, Seat(0), card("2C"), None, &mut events),
            Err(RuleError::NotYourTurn {
                seat: Seat(0),
                turn: Seat(1)
            })
        );
        assert_eq!(
            copy.play(&rules, Seat(1), card("2C"), None, &mut events),
            Err(RuleError::CardNotInHand {
                seat: Seat(1),
                card: card("2C")
            })
        );
        assert_eq!(
            copy.play(&rules, Seat(2), card("AC"), None, &mut events),
            Err(RuleError::NoSuchSeat {
                seat: Seat(2),
                seats: 2
            })
        );
        assert_eq!(
            copy.play(&rules, Seat(1), card("AC"), Some(set("3C")), &mut events),
            Err(RuleError::NotInSum {
                card: card("3C"),
                value: 1
            })
        );
        assert_eq!(copy, before);
        assert!(events.is_empty());
    }

    #[test]
    fn a_basra_with_the_last_card_counts_unless_the_setting_says_otherwise() {
        for (last_card_basra, expected) in [(true, Some(BasraKind::Basra)), (false, None)] {
            let rules = Settings {
                last_card_basra,
                ..Settings::default()
            };
            let mut round = ending(["5S", ""], "5C", 0, None);
            let mut events = Vec::new();
            round
                .play(&rules, Seat(0), card("5S"), None, &mut events)
                .unwrap();
            assert_eq!(
                events,
                [Event::CardPlayed {
                    seat: Seat(0),
                    card: card("5S"),
                    taken: list("5C"),
                    basra: expected
                }]
            );
            assert!(round.is_over());
            let score = round.finish(&rules, &mut 0, [0, 0]);
            assert_eq!(score.basra_points[0], if last_card_basra { 10 } else { 0 });
        }
    }

    #[test]
    fn the_cards_taken_are_listed_in_the_tables_laying_order() {
        let rules = Settings::default();
        let mut round = ending(["9H", "KS"], "8H 8S 3D 10S 2C KD 4S", 0, None);
        let mut events = Vec::new();
        round
            .play(&rules, Seat(0), card("9H"), None, &mut events)
            .unwrap();
        assert!(matches!(
            events[0],
            Event::CardPlayed { taken, .. } if taken == list("3D 2C 4S")
        ));
        assert_eq!(round.table(), cards("8H 8S 10S KD").as_slice());
    }

    #[test]
    fn leftovers_go_to_the_last_capturer_and_are_not_a_basra() {
        let rules = Settings::default();
        let mut round = ending(["9S", ""], "3D 2C", 0, Some(1));
        round.piles[1] = set("KC KD");
        let mut events = Vec::new();
        round
            .play(&rules, Seat(0), card("9S"), None, &mut events)
            .unwrap();
        let score = round.finish(&rules, &mut 0, [0, 0]);
        // In laying order, not in card order.
        assert_eq!(score.leftovers, list("3D 2C 9S"));
        assert_eq!(score.last_capturer, Some(Seat(1)));
        assert_eq!(score.piles, [0, 5]);
        assert_eq!(score.basras, [[0; 3]; 2]);
        assert_eq!(score.points, [0, 30]);
    }

    #[test]
    fn leftovers_are_out_of_play_when_nobody_captured() {
        let rules = Settings::default();
        let mut round = ending(["9S", ""], "2C 3D", 0, None);
        round
            .play(&rules, Seat(0), card("9S"), None, &mut Vec::new())
            .unwrap();
        let score = round.finish(&rules, &mut 0, [0, 0]);
        assert_eq!(score.piles, [0, 0]);
        assert_eq!(score.last_capturer, None);
        assert_eq!(score.points, [0, 0], "a tie gives the majority to nobody");
    }

    #[test]
    fn majority_ties_follow_the_setting() {
        let tied = |majority_tie, carry: &mut u32| {
            let rules = Settings {
                majority_tie,
                ..Settings::default()
            };
            let mut round = ending(["", ""], "", 0, Some(0));
            round.piles = [set("2C 3C"), set("2D 3D")];
            round.finish(&rules, carry, [0, 0]).majority_points
        };
        assert_eq!(tied(MajorityTie::Nobody, &mut 0), [0, 0]);
        assert_eq!(tied(MajorityTie::Both, &mut 0), [30, 30]);
        let mut carry = 0;
        assert_eq!(tied(MajorityTie::CarryOver, &mut carry), [0, 0]);
        assert_eq!(carry, 30);
        assert_eq!(tied(MajorityTie::CarryOver, &mut carry), [0, 0]);
        assert_eq!(carry, 60, "ties keep adding to the carried award");
        let rules = Settings {
            majority_tie: MajorityTie::CarryOver,
            ..Settings::default()
        };
        let mut round = ending(["", ""], "", 0, Some(0));
        round.piles = [set("2C 3C 4C"), set("2D")];
        let score = round.finish(&rules, &mut carry, [5, 7]);
        assert_eq!(score.majority_points, [90, 0]);
        assert_eq!(score.totals, [95, 7]);
        assert_eq!(carry, 0);
    }

    #[test]
    fn partners_share_a_pile() {
        let rules = Settings {
            seats: Seats::Four,
            ..Settings::default()
        };
        let mut round = Round::start(&rules, 0, deck_with(""), Seat(1), &mut Vec::new());
        // Seat 2 holds the 2s; the table holds the 5s. Play to seat 2 without captures.
        round.table = CardList::EMPTY;
        for c in cards("5C 5D") {
            round.table.push(c);
        }
        round.hands[2] = set("5H");
        round
            .play(&rules, Seat(2), card("5H"), None, &mut Vec::new())
            .unwrap();
        assert_eq!(round.piles()[0], set("5C 5D 5H"));
        assert_eq!(round.turn(), Seat(3));
    }

    #[test]
    fn card_points_count_jacks_aces_two_of_clubs_and_ten_of_diamonds() {
        assert_eq!(card_points(CardSet::FULL), 4 + 4 + 2 + 3);
        assert_eq!(card_points(set("2C 10D 2D 10H")), 5);
        let rules = Settings {
            card_points: true,
            ..Settings::default()
        };
        let mut round = ending(["", ""], "", 0, Some(0));
        round.piles = [set("JC AS 2C"), set("10D 4H")];
        let score = round.finish(&rules, &mut 0, [0, 0]);
        assert_eq!(score.card_points, [4, 3]);
        assert_eq!(score.points, [34, 3]);
    }
}
