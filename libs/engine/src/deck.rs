//! The deck, the seed and the shuffle (RULES.md §22).
//!
//! The shuffle is public so that anyone can check a match: round `r` (0-based) is dealt from
//! a deck in index order (`AC AD AH AS 2C … KS`) shuffled by Fisher–Yates from the last
//! position down, where position `i` swaps with `j`, uniform in `0..=i`, drawn from ChaCha20
//! (`rand_chacha::ChaCha20Rng`, seeded with the match seed, stream `r`) as a 32-bit word by
//! Lemire's widening multiply with rejection. The first card after the shuffle is the top.

use std::fmt;

use rand_chacha::ChaCha20Rng;
use rand_core::{RngCore, SeedableRng};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use sha2::{Digest, Sha256};

use crate::card::Card;

/// The 32-byte secret a match's shuffles come from.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Seed(pub [u8; 32]);

impl Seed {
    /// The SHA-256 commitment published when the match starts.
    pub fn commitment(&self) -> [u8; 32] {
        Sha256::digest(self.0).into()
    }

    /// The seed as 64 lowercase hex digits.
    pub fn to_hex(&self) -> String {
        hex(&self.0)
    }

    /// Parses 64 hex digits.
    pub fn from_hex(text: &str) -> Option<Seed> {
        if text.len() != 64 || !text.is_ascii() {
            return None;
        }
        let mut bytes = [0u8; 32];
        for (i, byte) in bytes.iter_mut().enumerate() {
            *byte = u8::from_str_radix(&text[2 * i..2 * i + 2], 16).ok()?;
        }
        Some(Seed(bytes))
    }
}

/// Lowercase hex of some bytes (seeds and commitments are shown this way).
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

impl fmt::Debug for Seed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never print a seed by accident in logs: it would reveal every deal.
        f.write_str("Seed(..)")
    }
}

/// Text formats write a seed as 64 hex digits; binary formats as its 32 bytes.
impl Serialize for Seed {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if serializer.is_human_readable() {
            serializer.serialize_str(&self.to_hex())
        } else {
            self.0.serialize(serializer)
        }
    }
}

impl<'de> Deserialize<'de> for Seed {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Seed, D::Error> {
        if deserializer.is_human_readable() {
            let text = String::deserialize(deserializer)?;
            Seed::from_hex(&text).ok_or_else(|| serde::de::Error::custom("a seed is 64 hex digits"))
        } else {
            <[u8; 32]>::deserialize(deserializer).map(Seed)
        }
    }
}

/// The undealt cards, top first. A fixed ring of 52 slots: cards come off the top and a
/// cleaned starting table puts cards back under the bottom. Serialized as the list of cards
/// left, top first.
#[derive(Clone)]
pub struct Deck {
    cards: [Card; 52],
    top: u8,
    len: u8,
}

impl PartialEq for Deck {
    fn eq(&self, other: &Deck) -> bool {
        self.iter().eq(other.iter())
    }
}

impl Eq for Deck {}

impl Serialize for Deck {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.iter())
    }
}

impl<'de> Deserialize<'de> for Deck {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Deck, D::Error> {
        let cards = Vec::<Card>::deserialize(deserializer)?;
        if cards.len() > 52 {
            return Err(serde::de::Error::custom("a deck holds at most 52 cards"));
        }
        let mut slots = [Card::KOMI; 52];
        slots[..cards.len()].copy_from_slice(&cards);
        Ok(Deck {
            cards: slots,
            top: 0,
            len: cards.len() as u8,
        })
    }
}

impl fmt::Debug for Deck {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The order of the deck is a secret of the server.
        write!(f, "Deck({} cards)", self.len)
    }
}

impl Deck {
    /// A deck in this order, top first.
    pub fn from_cards(cards: [Card; 52]) -> Deck {
        Deck {
            cards,
            top: 0,
            len: 52,
        }
    }

    /// A deck of these cards, top first (at most 52; the search bot's imagined decks).
    pub(crate) fn from_slice(cards: &[Card]) -> Deck {
        debug_assert!(cards.len() <= 52);
        let mut slots = [Card::KOMI; 52];
        slots[..cards.len()].copy_from_slice(cards);
        Deck {
            cards: slots,
            top: 0,
            len: cards.len() as u8,
        }
    }

    /// The deck for round `round` of a match with this seed.
    pub fn shuffled(seed: &Seed, round: u32) -> Deck {
        let mut rng = ChaCha20Rng::from_seed(seed.0);
        rng.set_stream(u64::from(round));
        let mut cards: [Card; 52] = std::array::from_fn(|i| Card::from_index(i as u8).unwrap());
        for i in (1..52usize).rev() {
            let j = uniform(&mut rng, i as u32 + 1) as usize;
            cards.swap(i, j);
        }
        Deck::from_cards(cards)
    }

    /// A deck with every card dealt (for tests that set up an end-of-round position).
    #[cfg(test)]
    pub(crate) fn empty() -> Deck {
        Deck {
            cards: Deck::shuffled(&Seed([0; 32]), 0).cards,
            top: 0,
            len: 0,
        }
    }

    /// How many cards are left.
    pub fn len(&self) -> u8 {
        self.len
    }

    /// Whether every card has been dealt.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Takes the top card.
    pub fn draw(&mut self) -> Option<Card> {
        if self.len == 0 {
            return None;
        }
        let card = self.cards[usize::from(self.top)];
        self.top = (self.top + 1) % 52;
        self.len -= 1;
        Some(card)
    }

    /// Puts a card under the bottom.
    pub fn put_under(&mut self, card: Card) {
        debug_assert!(self.len < 52);
        self.cards[(usize::from(self.top) + usize::from(self.len)) % 52] = card;
        self.len += 1;
    }

    /// The cards left, top first.
    pub fn iter(&self) -> impl Iterator<Item = Card> + '_ {
        (0..self.len).map(|i| self.cards[(usize::from(self.top) + usize::from(i)) % 52])
    }
}

/// A uniform number in `0..bound` (Lemire's method: unbiased, usually one draw).
fn uniform(rng: &mut impl RngCore, bound: u32) -> u32 {
    let threshold = bound.wrapping_neg() % bound;
    loop {
        let product = u64::from(rng.next_u32()) * u64::from(bound);
        if (product as u32) >= threshold {
            return (product >> 32) as u32;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::card::CardSet;

    #[test]
    fn a_shuffle_is_a_permutation_fixed_by_seed_and_round() {
        let seed = Seed([7; 32]);
        let deck = Deck::shuffled(&seed, 0);
        let cards: CardSet = deck.iter().collect();
        assert_eq!(cards, CardSet::FULL);
        assert_eq!(deck, Deck::shuffled(&seed, 0));
        assert_ne!(deck, Deck::shuffled(&seed, 1));
        assert_ne!(deck, Deck::shuffled(&Seed([8; 32]), 0));
    }

    #[test]
    fn the_shuffle_is_stable_across_releases() {
        // Published matches are replayed with this exact algorithm; if this changes, old
        // matches can no longer be checked.
        let deck = Deck::shuffled(&Seed([0; 32]), 0);
        let top: Vec<String> = deck.iter().take(8).map(|c| c.to_string()).collect();
        assert_eq!(
            top.join(" "),
            include_str!("../tests/data/seed0_round0_top8.txt").trim()
        );
    }

    #[test]
    fn commitment_is_sha256_of_the_seed() {
        // SHA-256 of 32 zero bytes.
        assert_eq!(
            hex(&Seed([0; 32]).commitment()),
            "66687aadf862bd776c8fc18b8e9f8e20089714856ee233b3902a591d0d5f2925"
        );
    }

    #[test]
    fn seeds_round_trip_through_hex() {
        let seed = Seed(std::array::from_fn(|i| i as u8 * 7));
        assert_eq!(Seed::from_hex(&seed.to_hex()), Some(seed));
        assert_eq!(Seed::from_hex("zz"), None);
        assert_eq!(format!("{seed:?}"), "Seed(..)");
    }

    #[test]
    fn cards_put_under_come_out_last() {
        let mut deck = Deck::shuffled(&Seed([1; 32]), 0);
        let first = deck.draw().unwrap();
        deck.put_under(first);
        assert_eq!(deck.len(), 52);
        assert_eq!(deck.iter().last(), Some(first));
        for _ in 0..51 {
            deck.draw();
        }
        assert_eq!(deck.draw(), Some(first));
        assert_eq!(deck.draw(), None);
    }
}
