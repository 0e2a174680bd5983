//! Actions players take and the events the engine answers with.

use serde::{Deserialize, Serialize};

use crate::capture::BasraKind;
use crate::card::{Card, CardSet};
use crate::card_list::CardList;
use crate::deck::Seed;
use crate::seat::{Seat, Side};
use crate::settings::Settings;

/// What a player does. The action log of a match is a list of these.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum Action {
    /// Play a card. `take` names the table cards to capture where the rules let the player
    /// choose; `None` takes the canonical capture.
    Play {
        /// The seat playing.
        seat: Seat,
        /// The card played from the seat's hand.
        card: Card,
        /// The capture the player names, if any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        take: Option<CardSet>,
    },
    /// Give up the match: the other side wins.
    Resign {
        /// The seat resigning.
        seat: Seat,
    },
}

/// Something that happened, in the order it happened. Clients see these through
/// [`Event::for_viewer`], which hides other seats' cards.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    /// The match began; the seed's SHA-256 commitment is published now.
    MatchStarted {
        /// The rules of the match.
        settings: Settings,
        /// SHA-256 of the seed.
        #[serde(with = "hex32")]
        commitment: [u8; 32],
    },
    /// A round began with this dealer.
    RoundStarted {
        /// The round number, from 0.
        round: u32,
        /// The dealer of the round.
        dealer: Seat,
    },
    /// The four starting table cards, face up (after cleaning, left to right).
    TableDealt {
        /// The cards, in laying order.
        cards: [Card; 4],
    },
    /// Four cards were dealt to a seat; `cards` is `None` for everyone but that seat.
    HandDealt {
        /// The seat dealt to.
        seat: Seat,
        /// The cards dealt, visible only to their seat.
        cards: Option<CardSet>,
    },
    /// It is this seat's turn.
    Turn {
        /// The seat to play.
        seat: Seat,
    },
    /// A card was played and took `taken` from the table (nothing: the card stays there).
    CardPlayed {
        /// The seat that played.
        seat: Seat,
        /// The card played.
        card: Card,
        /// The table cards taken, in the table's laying order.
        taken: CardList,
        /// The Basra scored, if any.
        basra: Option<BasraKind>,
    },
    /// A round ended and was scored.
    RoundEnded(RoundScore),
    /// The match ended; the seed is revealed.
    MatchEnded(MatchResult),
}

/// The scoring of one round, per side.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoundScore {
    /// The round number, from 0.
    pub round: u32,
    /// The cards left on the table at the end, in laying order.
    pub leftovers: CardList,
    /// The seat that took the leftovers (the last to capture), if anyone captured.
    pub last_capturer: Option<Seat>,
    /// Cards in each side's pile.
    pub piles: [u8; 2],
    /// Basras of each side, by kind: basra, jack, komi.
    pub basras: [[u8; 3]; 2],
    /// Points from Basras.
    pub basra_points: [u32; 2],
    /// Points for the majority of cards.
    pub majority_points: [u32; 2],
    /// Card points (only with `card_points`).
    pub card_points: [u32; 2],
    /// The round's points.
    pub points: [u32; 2],
    /// The match totals after this round.
    pub totals: [u32; 2],
}

/// How a match ended. Text formats write it internally tagged (`{"reason":"resigned",
/// "seat":1}`); binary formats, which cannot read an internal tag, externally tagged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EndReason {
    /// A side reached the target score alone in the lead.
    TargetReached,
    /// A seat resigned.
    Resigned {
        /// The seat that resigned.
        seat: Seat,
    },
}

/// [`EndReason`]'s text form.
#[derive(Serialize, Deserialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
enum EndReasonText {
    TargetReached,
    Resigned { seat: Seat },
}

/// [`EndReason`]'s binary form.
#[derive(Serialize, Deserialize)]
enum EndReasonBinary {
    TargetReached,
    Resigned { seat: Seat },
}

impl Serialize for EndReason {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match (*self, serializer.is_human_readable()) {
            (EndReason::TargetReached, true) => EndReasonText::TargetReached.serialize(serializer),
            (EndReason::Resigned { seat }, true) => {
                EndReasonText::Resigned { seat }.serialize(serializer)
            }
            (EndReason::TargetReached, false) => {
                EndReasonBinary::TargetReached.serialize(serializer)
            }
            (EndReason::Resigned { seat }, false) => {
                EndReasonBinary::Resigned { seat }.serialize(serializer)
            }
        }
    }
}

impl<'de> Deserialize<'de> for EndReason {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<EndReason, D::Error> {
        Ok(if deserializer.is_human_readable() {
            match EndReasonText::deserialize(deserializer)? {
                EndReasonText::TargetReached => EndReason::TargetReached,
                EndReasonText::Resigned { seat } => EndReason::Resigned { seat },
            }
        } else {
            match EndReasonBinary::deserialize(deserializer)? {
                EndReasonBinary::TargetReached => EndReason::TargetReached,
                EndReasonBinary::Resigned { seat } => EndReason::Resigned { seat },
            }
        })
    }
}

/// The end of a match.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct MatchResult {
    /// The winning side.
    pub winner: Side,
    /// Why the match ended.
    pub reason: EndReason,
    /// The final totals.
    pub totals: [u32; 2],
    /// The seed, revealed so anyone can replay the match.
    pub seed: Seed,
}

impl Event {
    /// This event as `viewer` may see it (`None` = a spectator): other seats' dealt cards are
    /// hidden. Every client-facing payload goes through here or through [`crate::View`].
    pub fn for_viewer(&self, viewer: Option<Seat>) -> Event {
        match *self {
            Event::HandDealt { seat, .. } if Some(seat) != viewer => {
                Event::HandDealt { seat, cards: None }
            }
            event => event,
        }
    }
}

pub(crate) mod hex32 {
    use serde::{Deserialize, Deserializer, Serializer};

    pub(crate) fn serialize<S: Serializer>(bytes: &[u8; 32], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&crate::deck::hex(bytes))
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<[u8; 32], D::Error> {
        let text = String::deserialize(d)?;
        crate::deck::Seed::from_hex(&text)
            .map(|seed| seed.0)
            .ok_or_else(|| serde::de::Error::custom("expected 64 hex digits"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The text form is what stored rooms and logs hold: it must not change.
    #[test]
    fn end_reasons_keep_their_text_form() {
        let cases = [
            (EndReason::TargetReached, r#"{"reason":"target_reached"}"#),
            (
                EndReason::Resigned { seat: Seat(1) },
                r#"{"reason":"resigned","seat":1}"#,
            ),
        ];
        for (reason, text) in cases {
            assert_eq!(serde_json::to_string(&reason).unwrap(), text);
            assert_eq!(serde_json::from_str::<EndReason>(text).unwrap(), reason);
        }
        assert!(serde_json::from_str::<EndReason>(r#"{"reason":"bored"}"#).is_err());
    }
}
