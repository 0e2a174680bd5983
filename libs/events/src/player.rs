//! Who plays: a player's id and the rating that seeds them.

use std::collections::HashSet;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::EventError;

/// A player: the 128 bits of their account id (`Uuid::as_u128`), so that the crate needs
/// no id type of the services.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct PlayerId(pub u128);

impl fmt::Display for PlayerId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:032x}", self.0)
    }
}

/// A player entering an event, with the rating (rounded) that seeds them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entrant {
    /// Who.
    pub id: PlayerId,
    /// Their rating when the event starts: a higher rating is a better seed.
    pub rating: i32,
}

impl Entrant {
    /// An entrant.
    pub fn new(id: PlayerId, rating: i32) -> Self {
        Self { id, rating }
    }
}

/// The entrants in seeding order (the initial ranking list: rating, highest first, then
/// id, lowest first, so that the order never depends on the order of registration), or the
/// refusal: fewer than `min`, or an id twice.
pub(crate) fn seeded(entrants: &[Entrant], min: usize) -> Result<Vec<Entrant>, EventError> {
    if entrants.len() < min {
        return Err(EventError::TooFewPlayers {
            got: entrants.len(),
            min,
        });
    }
    let mut seen = HashSet::with_capacity(entrants.len());
    if let Some(twice) = entrants.iter().find(|e| !seen.insert(e.id)) {
        return Err(EventError::DuplicatePlayer(twice.id));
    }
    let mut order = entrants.to_vec();
    order.sort_by(|a, b| b.rating.cmp(&a.rating).then(a.id.cmp(&b.id)));
    Ok(order)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeding_is_by_rating_then_id_whatever_the_entry_order() {
        let e = |id, rating| Entrant::new(PlayerId(id), rating);
        let order = seeded(&[e(5, 1500), e(2, 1700), e(9, 1500), e(1, 1400)], 2).unwrap();
        let ids: Vec<u128> = order.iter().map(|e| e.id.0).collect();
        assert_eq!(ids, [2, 5, 9, 1]);
    }

    #[test]
    fn too_few_and_duplicates_are_refused() {
        let e = |id| Entrant::new(PlayerId(id), 1500);
        assert_eq!(
            seeded(&[e(1)], 2),
            Err(EventError::TooFewPlayers { got: 1, min: 2 })
        );
        assert_eq!(
            seeded(&[e(1), e(2), e(1)], 2),
            Err(EventError::DuplicatePlayer(PlayerId(1)))
        );
    }
}
