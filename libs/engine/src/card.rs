//! Cards, their text notation (`AS`, `7D`, `10H`, `QC`) and sets of cards.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A suit. The order is the order of the notation letters `C D H S`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Suit {
    /// Clubs, `C`.
    Clubs,
    /// Diamonds, `D`.
    Diamonds,
    /// Hearts, `H`.
    Hearts,
    /// Spades, `S`.
    Spades,
}

impl Suit {
    /// All four suits in notation order.
    pub const ALL: [Suit; 4] = [Suit::Clubs, Suit::Diamonds, Suit::Hearts, Suit::Spades];

    /// The notation letter.
    pub fn letter(self) -> char {
        ['C', 'D', 'H', 'S'][self as usize]
    }
}

/// A rank: 1 (ace) to 10 are number cards, 11 = J, 12 = Q, 13 = K.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Rank(u8);

impl Rank {
    /// The jack: sweeps the table.
    pub const JACK: Rank = Rank(11);
    /// The queen: takes only queens.
    pub const QUEEN: Rank = Rank(12);
    /// The king: takes only kings.
    pub const KING: Rank = Rank(13);

    /// The rank numbered `n` (1 = ace … 10, 11 = J, 12 = Q, 13 = K).
    pub fn new(n: u8) -> Option<Rank> {
        (1..=13).contains(&n).then_some(Rank(n))
    }

    /// The rank's number, 1..=13.
    pub fn number(self) -> u8 {
        self.0
    }

    /// The value used in sums, for A..10; `None` for J, Q and K.
    pub fn value(self) -> Option<u8> {
        (self.0 <= 10).then_some(self.0)
    }

    fn notation(self) -> &'static str {
        [
            "A", "2", "3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K",
        ][usize::from(self.0 - 1)]
    }
}

/// One card of the 52-card deck, stored as an index `0..52` (`(rank - 1) * 4 + suit`).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Card(u8);

impl Card {
    /// The Komi, 7 of diamonds.
    pub const KOMI: Card = Card::new(Rank(7), Suit::Diamonds);

    /// The card of this rank and suit.
    pub const fn new(rank: Rank, suit: Suit) -> Card {
        Card((rank.0 - 1) * 4 + suit as u8)
    }

    /// The card with this index, if it is below 52.
    pub fn from_index(index: u8) -> Option<Card> {
        (index < 52).then_some(Card(index))
    }

    /// The index `0..52`.
    pub fn index(self) -> u8 {
        self.0
    }

    /// Its rank, A (1) to K (13).
    pub fn rank(self) -> Rank {
        Rank(self.0 / 4 + 1)
    }

    /// Its suit (one of four).
    pub fn suit(self) -> Suit {
        Suit::ALL[usize::from(self.0 % 4)]
    }

    /// The sum value of a number card (A = 1 … 10); `None` for J, Q, K.
    pub fn value(self) -> Option<u8> {
        self.rank().value()
    }

    /// Whether this is a jack.
    pub fn is_jack(self) -> bool {
        self.rank() == Rank::JACK
    }

    /// Every card, in index order.
    pub fn all() -> impl Iterator<Item = Card> {
        (0..52).map(Card)
    }
}

impl fmt::Display for Card {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{}", self.rank().notation(), self.suit().letter())
    }
}

impl fmt::Debug for Card {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// A card written in a way the notation does not allow.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not a card (write rank then suit: A 2..10 J Q K and C D H S, e.g. 7D, 10H)")]
pub struct ParseCardError(pub String);

impl FromStr for Card {
    type Err = ParseCardError;

    fn from_str(text: &str) -> Result<Card, ParseCardError> {
        let error = || ParseCardError(text.to_owned());
        let split = text
            .len()
            .checked_sub(1)
            .filter(|&at| text.is_char_boundary(at));
        let (rank, suit) = text.split_at(split.ok_or_else(error)?);
        let suit = match suit {
            "C" => Suit::Clubs,
            "D" => Suit::Diamonds,
            "H" => Suit::Hearts,
            "S" => Suit::Spades,
            _ => return Err(error()),
        };
        let rank = match rank {
            "A" => Rank(1),
            "J" => Rank::JACK,
            "Q" => Rank::QUEEN,
            "K" => Rank::KING,
            // Only the digits 2..10, written without sign or leading zero.
            number if !number.starts_with(['0', '+']) => match number.parse::<u8>() {
                Ok(n @ 2..=10) => Rank(n),
                _ => return Err(error()),
            },
            _ => return Err(error()),
        };
        Ok(Card::new(rank, suit))
    }
}

/// Text formats (JSON) write a card as its name (`"7D"`); binary formats (the server's
/// stored room state) as its index, one byte.
impl Serialize for Card {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if serializer.is_human_readable() {
            serializer.collect_str(self)
        } else {
            serializer.serialize_u8(self.0)
        }
    }
}

impl<'de> Deserialize<'de> for Card {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Card, D::Error> {
        if deserializer.is_human_readable() {
            let text = String::deserialize(deserializer)?;
            text.parse().map_err(serde::de::Error::custom)
        } else {
            let index = u8::deserialize(deserializer)?;
            Card::from_index(index)
                .ok_or_else(|| serde::de::Error::custom("a card index is below 52"))
        }
    }
}

/// A set of cards as a 52-bit mask: hands, piles and captures. Copy, no allocation.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct CardSet(u64);

impl CardSet {
    /// The empty set.
    pub const EMPTY: CardSet = CardSet(0);
    /// All 52 cards.
    pub const FULL: CardSet = CardSet((1 << 52) - 1);

    /// The set's bits (bit `i` is the card with index `i`).
    pub fn bits(self) -> u64 {
        self.0
    }

    /// Whether the set holds `card`.
    pub fn contains(self, card: Card) -> bool {
        self.0 & (1 << card.0) != 0
    }

    /// Adds `card`.
    pub fn insert(&mut self, card: Card) {
        self.0 |= 1 << card.0;
    }

    /// Removes `card`.
    pub fn remove(&mut self, card: Card) {
        self.0 &= !(1 << card.0);
    }

    /// The number of cards.
    pub fn len(self) -> usize {
        self.0.count_ones() as usize
    }

    /// Whether the set is empty.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The cards in both sets.
    pub fn intersection(self, other: CardSet) -> CardSet {
        CardSet(self.0 & other.0)
    }

    /// The cards in either set.
    pub fn union(self, other: CardSet) -> CardSet {
        CardSet(self.0 | other.0)
    }

    /// The cards of `self` that are not in `other`.
    pub fn difference(self, other: CardSet) -> CardSet {
        CardSet(self.0 & !other.0)
    }

    /// Whether every card of `self` is in `other`.
    pub fn is_subset(self, other: CardSet) -> bool {
        self.0 & !other.0 == 0
    }

    /// The `n`-th card in index order, if the set has more than `n` cards.
    pub fn nth(self, n: usize) -> Option<Card> {
        self.iter().nth(n)
    }

    /// The cards in index order.
    pub fn iter(self) -> CardSetIter {
        CardSetIter(self.0)
    }
}

impl FromIterator<Card> for CardSet {
    fn from_iter<I: IntoIterator<Item = Card>>(cards: I) -> CardSet {
        let mut set = CardSet::EMPTY;
        for card in cards {
            set.insert(card);
        }
        set
    }
}

impl IntoIterator for CardSet {
    type Item = Card;
    type IntoIter = CardSetIter;

    fn into_iter(self) -> CardSetIter {
        self.iter()
    }
}

impl fmt::Debug for CardSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.iter()).finish()
    }
}

/// Text formats write a set as the list of its cards; binary formats as its 52-bit mask.
impl Serialize for CardSet {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if serializer.is_human_readable() {
            serializer.collect_seq(self.iter())
        } else {
            serializer.serialize_u64(self.0)
        }
    }
}

impl<'de> Deserialize<'de> for CardSet {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<CardSet, D::Error> {
        if deserializer.is_human_readable() {
            let cards = Vec::<Card>::deserialize(deserializer)?;
            Ok(cards.into_iter().collect())
        } else {
            let bits = u64::deserialize(deserializer)?;
            if bits & !CardSet::FULL.0 != 0 {
                return Err(serde::de::Error::custom(
                    "a card set holds 52 cards at most",
                ));
            }
            Ok(CardSet(bits))
        }
    }
}

/// Iterates a [`CardSet`] in index order.
#[derive(Debug, Clone)]
pub struct CardSetIter(u64);

impl Iterator for CardSetIter {
    type Item = Card;

    fn next(&mut self) -> Option<Card> {
        if self.0 == 0 {
            return None;
        }
        let index = self.0.trailing_zeros() as u8;
        self.0 &= self.0 - 1;
        Some(Card(index))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.0.count_ones() as usize;
        (n, Some(n))
    }
}

impl ExactSizeIterator for CardSetIter {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_card_round_trips_through_its_notation() {
        for card in Card::all() {
            let text = card.to_string();
            assert_eq!(text.parse::<Card>(), Ok(card), "{text}");
        }
        assert_eq!(Card::all().count(), 52);
    }

    #[test]
    fn notation_examples_from_the_rules() {
        let komi: Card = "7D".parse().unwrap();
        assert_eq!(komi, Card::KOMI);
        assert_eq!("10H".parse::<Card>().unwrap().value(), Some(10));
        assert_eq!("AS".parse::<Card>().unwrap().value(), Some(1));
        let queen: Card = "QC".parse().unwrap();
        assert_eq!(queen.rank(), Rank::QUEEN);
        assert_eq!(queen.suit(), Suit::Clubs);
        assert_eq!(queen.value(), None);
        assert!("JS".parse::<Card>().unwrap().is_jack());
    }

    #[test]
    fn malformed_cards_are_rejected() {
        for bad in [
            "", "7", "D", "1S", "11S", "010H", "+7D", "7X", "7d", "AS ", " AS", "ÄS", "10",
        ] {
            assert!(bad.parse::<Card>().is_err(), "{bad:?} parsed");
        }
    }

    #[test]
    fn card_set_operations() {
        let a: Card = "AS".parse().unwrap();
        let k: Card = "KD".parse().unwrap();
        let mut set = CardSet::EMPTY;
        set.insert(k);
        set.insert(a);
        assert_eq!(set.len(), 2);
        assert_eq!(set.iter().collect::<Vec<_>>(), vec![a, k]);
        set.remove(a);
        assert!(!set.contains(a) && set.contains(k));
        assert_eq!(CardSet::FULL.len(), 52);
        assert!(set.is_subset(CardSet::FULL));
    }
}
