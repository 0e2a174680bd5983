//! Glicko-2 rating changes of a finished match (pure: the stores call it inside
//! the transaction that records the match).

use std::collections::HashMap;

use basra_records::MatchRecord;
use skillratings::Outcomes;
use skillratings::glicko2::{Glicko2Config, Glicko2Rating, glicko2_rating_period};
use uuid::Uuid;

/// A player's Glicko-2 state.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rating {
    /// The rating (new players: 1500).
    pub rating: f64,
    /// The rating deviation (new players: 350).
    pub deviation: f64,
    /// The volatility (new players: 0.06).
    pub volatility: f64,
}

impl Default for Rating {
    fn default() -> Rating {
        let r = Glicko2Rating::new();
        Rating {
            rating: r.rating,
            deviation: r.deviation,
            volatility: r.volatility,
        }
    }
}

impl From<Rating> for Glicko2Rating {
    fn from(r: Rating) -> Glicko2Rating {
        Glicko2Rating {
            rating: r.rating,
            deviation: r.deviation,
            volatility: r.volatility,
        }
    }
}

impl From<Glicko2Rating> for Rating {
    fn from(r: Glicko2Rating) -> Rating {
        Rating {
            rating: r.rating,
            deviation: r.deviation,
            volatility: r.volatility,
        }
    }
}

/// How one player's rating moved.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RatingUpdate {
    /// The player.
    pub user_id: Uuid,
    /// Their seat.
    pub seat: u8,
    /// Before the match.
    pub before: Rating,
    /// After the match.
    pub after: Rating,
}

/// The rating changes of `record`, given every human player's current rating.
///
/// Only a rated match ([`MatchRecord::is_rated`]) changes anything. Each human
/// player plays one Glicko-2 game against the humans of the other side; with
/// two opponents (4 seats) they count as one composite opponent (mean rating,
/// root-mean-square deviation), so a partnership match weighs as much as a
/// duel. Bots have no rating: a player facing only bots keeps theirs.
pub fn rate(record: &MatchRecord, current: &HashMap<Uuid, Rating>) -> Vec<RatingUpdate> {
    let Some(winner) = record.winner_side.filter(|_| record.is_rated()) else {
        return Vec::new();
    };
    let config = Glicko2Config::new();
    let mut updates = Vec::new();
    for (seat, user_id) in record.players() {
        let opponents: Vec<Rating> = record
            .players()
            .filter(|(other, _)| other.side != seat.side)
            .filter_map(|(_, id)| current.get(&id).copied())
            .collect();
        let Some(before) = current.get(&user_id).copied() else {
            continue;
        };
        if opponents.is_empty() {
            continue;
        }
        let n = opponents.len() as f64;
        let opponent = Glicko2Rating {
            rating: opponents.iter().map(|o| o.rating).sum::<f64>() / n,
            deviation: (opponents.iter().map(|o| o.deviation.powi(2)).sum::<f64>() / n).sqrt(),
            volatility: opponents.iter().map(|o| o.volatility).sum::<f64>() / n,
        };
        let outcome = if seat.side == winner {
            Outcomes::WIN
        } else {
            Outcomes::LOSS
        };
        let after = glicko2_rating_period(&before.into(), &[(opponent, outcome)], &config);
        updates.push(RatingUpdate {
            user_id,
            seat: seat.seat,
            before,
            after: after.into(),
        });
    }
    updates
}

/// The rating changes of `records`, rated one after the other: each record is rated
/// ([`rate`]) from `current`, which then takes its changes, so a batch of matches
/// rates exactly as recording them one by one. Answers each record's changes, in order.
pub fn rate_in_order<'a>(
    records: impl IntoIterator<Item = &'a MatchRecord>,
    current: &mut HashMap<Uuid, Rating>,
) -> Vec<Vec<RatingUpdate>> {
    records
        .into_iter()
        .map(|record| {
            let updates = rate(record, current);
            for update in &updates {
                current.insert(update.user_id, update.after);
            }
            updates
        })
        .collect()
}
