//! One round: the deal, the plays, the end-of-round leftovers and the round's scoring
//! (RULES.md §2–§5, §10–§11, §16–§19).

use crate::capture::{self, Capture};
use crate::card::{Card, CardSet, Rank, Suit};
use crate::deck::Deck;
use crate::error::RuleError;
use crate::event::{Event, RoundScore};
use crate::seat::Seat;
use crate::settings::{MajorityTie, Settings};

/// Cards per hand in every deal, and on the starting table.
pub const DEAL_SIZE: usize = 4;

/// The table, in laying order (position 0 has lain longest). Fixed capacity, no allocation.
#[derive(Clone, PartialEq, Eq)]
struct Table {
    cards: [Card; 52],
    len: u8,
}

impl Table {
    fn new() -> Table {
        Table {
            cards: [Card::KOMI; 52],
            len: 0,
        }
    }

    fn as_slice(&self) -> &[Card] {
        &self.cards[..usize::from(self.len)]
    }

    fn push(&mut self, card: Card) {
        self.cards[usize::from(self.len)] = card;
        self.len += 1;
    }

    fn remove(&mut self, taken: CardSet) {
        let mut kept = 0;
        for i in 0..usize::from(self.len) {
            let card = self.cards[i];
            if !taken.contains(card) {
                self.cards[kept] = card;
                kept += 1;
            }
        }
        self.len = kept as u8;
    }

    fn take_all(&mut self) -> CardSet {
        let all = self.as_slice().iter().copied().collect();
        self.len = 0;
        all
    }
}

impl std::fmt::Debug for Table {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.as_slice()).finish()
    }
}

/// The state of one round.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Round {
    index: u32,
    seats: u8,
    dealer: Seat,
    turn: Seat,
    deck: Deck,
    hands: [CardSet; 4],
    table: Table,
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
            table: Table::new(),
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
            *slot = round.deck.draw().expect("a full deck holds the starting table");
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
        if capture.taken.is_empty() {
            self.table.push(card);
        } else {
            self.table.remove(capture.taken);
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
            taken: capture.taken,
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
            self.piles[side] = self.piles[side].union(leftovers);
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

    /// The dealer.
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

    #[test]
    fn card_points_count_jacks_aces_two_of_clubs_and_ten_of_diamonds() {
        assert_eq!(card_points(CardSet::FULL), 4 + 4 + 2 + 3);
        let pile: CardSet = ["2C", "10D", "2D", "10H"]
            .iter()
            .map(|c| c.parse::<Card>().unwrap())
            .collect();
        assert_eq!(card_points(pile), 5);
    }
}
