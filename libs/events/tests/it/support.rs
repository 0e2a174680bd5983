//! Fields and results drawn for the property tests.

use basra_events::{Entrant, Outcome, PlayerId};
use proptest::prelude::*;

/// A field of `n` players with distinct ids and random ratings (ties included, so the
/// seeding's tie-break by id is exercised).
pub(crate) fn field(n: usize, ratings: &[i32]) -> Vec<Entrant> {
    (0..n)
        .map(|i| Entrant::new(PlayerId(1000 + i as u128), ratings[i % ratings.len()]))
        .collect()
}

/// Ratings to draw a field from.
pub(crate) fn ratings() -> impl Strategy<Value = Vec<i32>> {
    prop::collection::vec(1000..2000i32, 1..64)
}

/// How a match between `a` and `b` ends, from a random number: a win either way (played
/// or by forfeit), or, when `double` is allowed, a double forfeit.
pub(crate) fn outcome(a: PlayerId, b: PlayerId, roll: u32, double: bool) -> Outcome {
    match roll % if double { 5 } else { 4 } {
        0 => Outcome::Won(a),
        1 => Outcome::Won(b),
        2 => Outcome::Forfeit { absent: a },
        3 => Outcome::Forfeit { absent: b },
        _ => Outcome::BothAbsent,
    }
}

/// The winner of `outcome` between `a` and `b`.
pub(crate) fn winner(a: PlayerId, b: PlayerId, outcome: Outcome) -> Option<PlayerId> {
    match outcome {
        Outcome::Won(w) => Some(w),
        Outcome::Forfeit { absent } => Some(if absent == a { b } else { a }),
        Outcome::BothAbsent => None,
    }
}
