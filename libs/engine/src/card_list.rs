//! [`CardList`]: cards in a meaningful order (the table's laying order), where a
//! [`CardSet`] would lose it. Fixed capacity and `Copy`, so events stay allocation-free.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::card::{Card, CardSet};

/// Distinct cards in order, at most a whole deck. Serialized as the list of its cards, the
/// same shape as a [`CardSet`], so a stored set reads back as a list in index order.
#[derive(Clone, Copy)]
pub struct CardList {
    cards: [Card; 52],
    len: u8,
}

impl CardList {
    /// No cards.
    pub const EMPTY: CardList = CardList {
        cards: [Card::KOMI; 52],
        len: 0,
    };

    /// The cards, in order.
    pub fn as_slice(&self) -> &[Card] {
        &self.cards[..usize::from(self.len)]
    }

    /// How many cards.
    pub fn len(&self) -> usize {
        usize::from(self.len)
    }

    /// Whether there are no cards.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The cards, in order.
    pub fn iter(&self) -> impl Iterator<Item = Card> + '_ {
        self.as_slice().iter().copied()
    }

    /// The same cards as a set (the order is lost).
    pub fn to_set(&self) -> CardSet {
        self.iter().collect()
    }

    /// Appends `card`. The caller keeps the cards distinct; a deck has 52, so it never fills.
    pub fn push(&mut self, card: Card) {
        debug_assert!(!self.iter().any(|c| c == card), "{card} is already listed");
        self.cards[self.len()] = card;
        self.len += 1;
    }

    /// Removes the cards of `taken` and answers them in this list's order; the rest keep
    /// their order.
    pub fn remove(&mut self, taken: CardSet) -> CardList {
        let mut removed = CardList::EMPTY;
        let mut kept = 0;
        for i in 0..self.len() {
            let card = self.cards[i];
            if taken.contains(card) {
                removed.push(card);
            } else {
                self.cards[kept] = card;
                kept += 1;
            }
        }
        self.len = kept as u8;
        removed
    }

    /// Removes and answers every card, in order.
    pub fn take_all(&mut self) -> CardList {
        std::mem::replace(self, CardList::EMPTY)
    }
}

impl Default for CardList {
    fn default() -> CardList {
        CardList::EMPTY
    }
}

impl FromIterator<Card> for CardList {
    /// Lists the cards in the iterator's order; a repeated card is listed once.
    fn from_iter<I: IntoIterator<Item = Card>>(iter: I) -> CardList {
        let mut list = CardList::EMPTY;
        let mut seen = CardSet::EMPTY;
        for card in iter {
            if !seen.contains(card) {
                seen.insert(card);
                list.push(card);
            }
        }
        list
    }
}

impl IntoIterator for CardList {
    type Item = Card;
    type IntoIter = std::iter::Take<std::array::IntoIter<Card, 52>>;

    fn into_iter(self) -> Self::IntoIter {
        let len = self.len();
        self.cards.into_iter().take(len)
    }
}

impl PartialEq for CardList {
    fn eq(&self, other: &CardList) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl Eq for CardList {}

impl fmt::Debug for CardList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.as_slice()).finish()
    }
}

impl Serialize for CardList {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.as_slice().serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for CardList {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<CardList, D::Error> {
        let cards = Vec::<Card>::deserialize(deserializer)?;
        let list: CardList = cards.iter().copied().collect();
        if list.len() != cards.len() {
            return Err(serde::de::Error::custom("a card is listed twice"));
        }
        Ok(list)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(text: &str) -> CardList {
        text.split_whitespace()
            .map(|c| c.parse().unwrap())
            .collect()
    }

    #[test]
    fn remove_answers_the_taken_cards_in_list_order_and_keeps_the_rest_in_order() {
        let mut table = list("8H 8S 3D 10S 2C KD 4S");
        let taken = table.remove(list("2C 3D 4S").to_set());
        assert_eq!(taken, list("3D 2C 4S"));
        assert_eq!(table, list("8H 8S 10S KD"));
    }

    #[test]
    fn serializes_as_a_list_in_order_and_refuses_repeats() {
        let table = list("JD KH 10H 6S 4D AC");
        let json = serde_json::to_string(&table).unwrap();
        assert_eq!(json, r#"["JD","KH","10H","6S","4D","AC"]"#);
        assert_eq!(serde_json::from_str::<CardList>(&json).unwrap(), table);
        assert!(serde_json::from_str::<CardList>(r#"["JD","JD"]"#).is_err());
    }
}
