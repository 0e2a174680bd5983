//! Why an action is refused. A refused action leaves the game exactly as it was.

use crate::card::{Card, CardSet};
use crate::seat::Seat;

/// An action the rules do not allow in this state.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RuleError {
    /// The match has ended; nothing more can be played.
    #[error("the match is over")]
    MatchOver,
    /// The seat is not at this table.
    #[error("there is no seat {seat} at a table of {seats}")]
    NoSuchSeat {
        /// The seat named.
        seat: Seat,
        /// The number of seats at the table.
        seats: u8,
    },
    /// Another seat is to play.
    #[error("it is seat {turn}'s turn, not seat {seat}'s")]
    NotYourTurn {
        /// The seat that tried to play.
        seat: Seat,
        /// The seat whose turn it is.
        turn: Seat,
    },
    /// The card is not in the player's hand.
    #[error("{card} is not in seat {seat}'s hand")]
    CardNotInHand {
        /// The seat that tried to play.
        seat: Seat,
        /// The card it named.
        card: Card,
    },
    /// A named capture holds a card that is not on the table.
    #[error("{0} is not on the table")]
    NotOnTable(Card),
    /// A named capture holds a card that cannot be part of a sum of the played value.
    #[error("{card} cannot be part of a sum of {value}")]
    NotInSum {
        /// The named card.
        card: Card,
        /// The played value.
        value: u8,
    },
    /// The named cards do not split into disjoint groups of the played value.
    #[error("the named cards do not split into groups that each sum to {value}")]
    NotGroups {
        /// The played value.
        value: u8,
    },
    /// The named capture is not as large as the rules require.
    #[error("capturing is compulsory and takes the most cards: {named} named, {largest} possible")]
    NotLargest {
        /// How many cards were named.
        named: usize,
        /// How many the largest capture takes.
        largest: usize,
    },
    /// J, Q, K and the Komi take a fixed set of cards; another was named.
    #[error("{card} takes exactly {takes:?}; name those cards or none")]
    FixedCapture {
        /// The played card.
        card: Card,
        /// What it takes.
        takes: CardSet,
    },
}
