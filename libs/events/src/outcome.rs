//! How a match ended, as the services report it, and the id that names a match.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::PlayerId;

/// The result of one match of an event. Basra matches have no draws (a match ends only
/// when one side is ahead: docs/rules.md §20), so a played match always has a winner.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Outcome {
    /// The match was played (to the target, or someone resigned or lost by absence
    /// during play): this player won.
    Won(PlayerId),
    /// This player did not join the match within the stated time: the other wins by
    /// forfeit.
    Forfeit {
        /// The player who did not join.
        absent: PlayerId,
    },
    /// Neither joined: nobody wins.
    BothAbsent,
}

impl Outcome {
    /// The winner of a match between `a` and `b` with this outcome, if any (the caller
    /// has checked that the outcome names `a` or `b`).
    pub(crate) fn winner(self, a: PlayerId, b: PlayerId) -> Option<PlayerId> {
        match self {
            Outcome::Won(w) => Some(w),
            Outcome::Forfeit { absent } => Some(if absent == a { b } else { a }),
            Outcome::BothAbsent => None,
        }
    }

    /// The player the outcome names, if any.
    pub(crate) fn named(self) -> Option<PlayerId> {
        match self {
            Outcome::Won(p) | Outcome::Forfeit { absent: p } => Some(p),
            Outcome::BothAbsent => None,
        }
    }
}

/// One match of a round-based event (knockout, Swiss): its round (from 1) and its table
/// in that round (from 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct MatchId {
    /// The round, from 1.
    pub round: u32,
    /// The table in the round, from 1.
    pub table: u32,
}

impl MatchId {
    /// Round `round`, table `table`.
    pub fn new(round: u32, table: u32) -> Self {
        Self { round, table }
    }
}

impl fmt::Display for MatchId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.round, self.table)
    }
}
