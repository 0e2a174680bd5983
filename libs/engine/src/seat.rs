//! Seats and sides: a side is a player with two seats, a team (0+2, 1+3) with four.

use std::fmt;

use serde::{Deserialize, Serialize};

/// A seat at the table, numbered from 0 in turn order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Seat(pub u8);

impl Seat {
    /// The side this seat scores for.
    pub fn side(self) -> Side {
        Side(self.0 % 2)
    }

    /// The seat after this one at a table of `seats`.
    pub fn next(self, seats: u8) -> Seat {
        Seat((self.0 + 1) % seats)
    }

    /// The seat number as an index.
    pub fn index(self) -> usize {
        usize::from(self.0)
    }
}

impl fmt::Display for Seat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// A scoring side: 0 or 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Side(pub u8);

impl Side {
    /// The other side.
    pub fn other(self) -> Side {
        Side(1 - self.0)
    }

    /// The side number as an index.
    pub fn index(self) -> usize {
        usize::from(self.0)
    }
}

impl fmt::Display for Side {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}
