//! The standings table every format answers: rank, points, tie-breaks, matches played.
//!
//! Each format computes its rows from its results so far ([`Knockout::standings`],
//! [`Swiss::standings`], [`Arena::standings`]); this module holds the row and the one way
//! ranks are given: rows are ordered by a key (points first, then the format's
//! tie-breaks), and rows with equal keys share a rank, the next rank skipping as many
//! places ("1, 2, 2, 4"). Within a shared rank rows are listed by seed.
//!
//! [`Knockout::standings`]: crate::Knockout::standings
//! [`Swiss::standings`]: crate::Swiss::standings
//! [`Arena::standings`]: crate::Arena::standings

use serde::{Deserialize, Serialize};

use crate::PlayerId;

/// One row of a standings table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Standing {
    /// 1 for the leaders; tied rows share a rank.
    pub rank: u32,
    /// Who.
    pub player: PlayerId,
    /// The format's points (knockout: matches won; Swiss: wins and byes; arena: with the
    /// streak bonus).
    pub points: u32,
    /// Matches with a result that the player was in (byes and walkovers not counted).
    pub played: u32,
    /// The format's tie-breaks, in the order they are applied.
    pub tie_breaks: TieBreaks,
}

/// The tie-breaks of a row, by format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum TieBreaks {
    /// Knockout: the round a player reached (still in: the current round; the champion:
    /// one past the final). Rank goes by this alone, so players out in the same round
    /// share a rank (two semi-final losers are both third).
    Knockout {
        /// The round reached.
        reached: u32,
    },
    /// Swiss, applied in this order after points.
    Swiss {
        /// Buchholz cut-1: Buchholz less the lowest opponent's points.
        buchholz_cut1: u32,
        /// Buchholz: the sum of the opponents' points.
        buchholz: u32,
        /// Sonneborn–Berger: the sum of the points of the opponents beaten.
        sonneborn_berger: u32,
    },
    /// Arena, after points.
    Arena {
        /// Performance: the opponents' mean rating plus 400 × (wins − losses) ÷ played,
        /// rounded down (0 before a first result).
        performance: i32,
    },
}

/// Gives ranks to `rows`, each with its ordering key and its seed (0 is the top seed):
/// sorts by key, highest first, then seed, and gives equal keys the same rank.
pub(crate) fn ranked<K: Ord + Copy>(mut rows: Vec<(K, usize, Standing)>) -> Vec<Standing> {
    rows.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    let mut out = Vec::with_capacity(rows.len());
    let mut previous: Option<K> = None;
    let mut rank = 0;
    for (place, (key, _, mut row)) in rows.into_iter().enumerate() {
        if previous != Some(key) {
            rank = place as u32 + 1;
            previous = Some(key);
        }
        row.rank = rank;
        out.push(row);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(id: u128) -> Standing {
        Standing {
            rank: 0,
            player: PlayerId(id),
            points: 0,
            played: 0,
            tie_breaks: TieBreaks::Knockout { reached: 1 },
        }
    }

    #[test]
    fn equal_keys_share_a_rank_and_the_next_rank_skips() {
        let rows = vec![
            ((1, 0), 3, row(4)),
            ((3, 0), 1, row(1)),
            ((2, 5), 2, row(3)),
            ((2, 5), 0, row(2)),
        ];
        let got: Vec<(u32, u128)> = ranked(rows).iter().map(|s| (s.rank, s.player.0)).collect();
        // The tied pair is listed by seed (seed 0 before seed 2).
        assert_eq!(got, [(1, 1), (2, 2), (2, 3), (4, 4)]);
    }
}
