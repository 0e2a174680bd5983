//! Single elimination, seeded by rating.
//!
//! **The bracket.** The field is seeded by rating (seed 1 the highest) and placed in a
//! bracket of the next power of two, `size`, in the standard order: from `[1, 2]`, each
//! doubling puts every seed `s` beside `2k + 1 - s` (`[1, 4, 2, 3]`, then
//! `[1, 8, 4, 5, 2, 7, 3, 6]`, …). So seeds 1 and 2 are in different halves and can meet
//! only in the final, seeds 1–4 only from the semi-finals, and so on. The places of the
//! missing seeds `n + 1 ..= size` are empty: their first-round opponents, seeds
//! `1 ..= size - n`, advance without playing (a bye).
//!
//! **Rounds.** There are `log2(size)` rounds. Round `r`'s table `t` is played by the
//! winners of round `r - 1`'s tables `2t - 1` and `2t`. A result is taken only for a
//! match of the round being played, once; when the last result of a round is in, the
//! next round is drawn at once ([`Progress::RoundStarted`]).
//!
//! **Forfeits.** A player who does not join loses ([`Outcome::Forfeit`]); if neither
//! joins ([`Outcome::BothAbsent`]) nobody advances from that table and its next opponent
//! advances without playing (a walkover). So an event whose final was forfeited by both
//! ends without a champion; otherwise it has exactly one.
//!
//! A round "timing out" is the service's affair: it records the forfeits of the matches
//! not joined in time, which completes the round.

use serde::{Deserialize, Serialize};

use crate::player::seeded;
use crate::standings::{Standing, TieBreaks, ranked};
use crate::{Entrant, EventError, MatchId, Outcome, PlayerId};

/// One table of a knockout round.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Table {
    /// The match's id.
    pub id: MatchId,
    /// The two places, the better bracket position first; `None` is an empty place (a
    /// missing seed, or a table whose players both forfeited).
    pub players: [Option<PlayerId>; 2],
    /// The result, once recorded. Always `None` for a table that is not played.
    pub outcome: Option<Outcome>,
}

impl Table {
    /// Whether the table is a match to play (two players).
    pub fn is_match(&self) -> bool {
        self.players.iter().all(Option::is_some)
    }

    /// Who comes out of this table, once decided: the winner of a played match, the lone
    /// player of a bye or walkover, nobody from an empty table or a double forfeit.
    /// `None` too while the match waits for its result.
    pub fn advancing(&self) -> Option<PlayerId> {
        match self.players {
            [Some(a), Some(b)] => self.outcome.and_then(|o| o.winner(a, b)),
            [Some(p), None] | [None, Some(p)] => Some(p),
            [None, None] => None,
        }
    }

    fn decided(&self) -> bool {
        !self.is_match() || self.outcome.is_some()
    }
}

/// What recording a result did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Progress {
    /// Recorded; the round still has matches to finish.
    Recorded,
    /// Recorded, and it completed the round: this round has been drawn and is now being
    /// played.
    RoundStarted(u32),
    /// Recorded, and the event is over: its champion, if the final was not forfeited by
    /// both.
    Finished {
        /// The winner of the final.
        champion: Option<PlayerId>,
    },
}

/// A single-elimination event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Knockout {
    /// The field in seeding order (index 0 is seed 1).
    seeds: Vec<Entrant>,
    /// The bracket size: the field rounded up to a power of two.
    size: usize,
    /// The rounds drawn so far; the last is the one being played (or the final, once
    /// decided).
    rounds: Vec<Vec<Table>>,
}

/// The bracket positions of the seeds (1-based) for a bracket of `size`, a power of two:
/// position `i` holds seed `order[i]`.
pub fn bracket_order(size: usize) -> Vec<usize> {
    assert!(size.is_power_of_two(), "a bracket is a power of two");
    let mut order = vec![1];
    while order.len() < size {
        let sum = order.len() * 2 + 1;
        order = order.iter().flat_map(|&s| [s, sum - s]).collect();
    }
    order
}

impl Knockout {
    /// Seeds the field (at least two players, each once) and draws the first round.
    pub fn new(entrants: &[Entrant]) -> Result<Self, EventError> {
        let seeds = seeded(entrants, 2)?;
        let size = seeds.len().next_power_of_two();
        let place = |seed: usize| seeds.get(seed - 1).map(|e| e.id);
        let order = bracket_order(size);
        let first = order
            .chunks(2)
            .enumerate()
            .map(|(t, pair)| Table {
                id: MatchId::new(1, t as u32 + 1),
                players: [place(pair[0]), place(pair[1])],
                outcome: None,
            })
            .collect();
        let mut event = Knockout {
            seeds,
            size,
            rounds: vec![first],
        };
        // A field of three: round 1 is one match and a bye; never a round of byes only,
        // since the byes go to at most half the field.
        event.advance_while_decided();
        Ok(event)
    }

    /// How many rounds the event has: `log2` of the bracket size.
    pub fn rounds_total(&self) -> u32 {
        self.size.trailing_zeros()
    }

    /// The round being played (the final's number once the event is over).
    pub fn current_round(&self) -> u32 {
        self.rounds.len() as u32
    }

    /// The tables of round `round` (from 1), if drawn.
    pub fn round(&self, round: u32) -> Option<&[Table]> {
        self.rounds
            .get((round as usize).checked_sub(1)?)
            .map(Vec::as_slice)
    }

    /// The field in seeding order (index 0 is seed 1).
    pub fn seeds(&self) -> &[Entrant] {
        &self.seeds
    }

    /// The matches of the current round still waiting for a result.
    pub fn pending(&self) -> impl Iterator<Item = &Table> {
        self.current().iter().filter(|t| !t.decided())
    }

    /// Whether the final has been decided.
    pub fn is_finished(&self) -> bool {
        self.current_round() == self.rounds_total() && self.current().iter().all(Table::decided)
    }

    /// The champion: the winner of the final, once it is decided (`None` before, and
    /// after a final that both players forfeited).
    pub fn champion(&self) -> Option<PlayerId> {
        if self.is_finished() {
            self.current()[0].advancing()
        } else {
            None
        }
    }

    /// Records the result of a match of the current round. Refused, with nothing
    /// changed: a match that does not exist or is not in the current round, a table
    /// that is not played (bye, walkover), a result already recorded, an outcome that
    /// names a player not in the match, and anything once the event is over.
    pub fn record(&mut self, id: MatchId, outcome: Outcome) -> Result<Progress, EventError> {
        if self.is_finished() {
            return Err(EventError::Finished);
        }
        if id.round == 0 || id.round > self.rounds_total() {
            return Err(EventError::NoSuchMatch(id));
        }
        let current = self.current_round();
        if id.round != current {
            return Err(EventError::NotCurrentRound { id, current });
        }
        let table = (id.table as usize)
            .checked_sub(1)
            .and_then(|t| self.rounds[current as usize - 1].get_mut(t))
            .ok_or(EventError::NoSuchMatch(id))?;
        let [Some(a), Some(b)] = table.players else {
            return Err(EventError::NotPlayed(id));
        };
        if table.outcome.is_some() {
            return Err(EventError::AlreadyRecorded(id));
        }
        if let Some(player) = outcome.named().filter(|p| *p != a && *p != b) {
            return Err(EventError::NotInMatch { player, id });
        }
        table.outcome = Some(outcome);
        if !self.current().iter().all(Table::decided) {
            return Ok(Progress::Recorded);
        }
        if self.is_finished() {
            return Ok(Progress::Finished {
                champion: self.champion(),
            });
        }
        self.advance_while_decided();
        Ok(if self.is_finished() {
            Progress::Finished {
                champion: self.champion(),
            }
        } else {
            Progress::RoundStarted(self.current_round())
        })
    }

    /// The standings: ranked by the round reached (players out in the same round share
    /// a rank), points are matches won (forfeit wins included; byes and walkovers are
    /// not matches and score nothing).
    pub fn standings(&self) -> Vec<Standing> {
        let mut reached = vec![1u32; self.seeds.len()];
        let mut wins = vec![0u32; self.seeds.len()];
        let mut played = vec![0u32; self.seeds.len()];
        let index: std::collections::HashMap<PlayerId, usize> = self
            .seeds
            .iter()
            .enumerate()
            .map(|(s, e)| (e.id, s))
            .collect();
        let seed_of = |p: PlayerId| index.get(&p).copied();
        for (r, tables) in self.rounds.iter().enumerate() {
            for table in tables {
                for p in table.players.iter().flatten() {
                    let s = seed_of(*p).expect("a bracket holds only the field");
                    reached[s] = reached[s].max(r as u32 + 1);
                    if table.is_match() && table.outcome.is_some() {
                        played[s] += 1;
                    }
                }
                if let Some(w) = table.advancing() {
                    let s = seed_of(w).expect("a bracket holds only the field");
                    reached[s] = reached[s].max(r as u32 + 2);
                    if table.is_match() {
                        wins[s] += 1;
                    }
                }
            }
        }
        // While a round is played, its undecided players count as having reached it,
        // and those already through are not yet "further": cap at the current round.
        let cap = if self.is_finished() {
            self.rounds_total() + 1
        } else {
            self.current_round()
        };
        let rows = self
            .seeds
            .iter()
            .enumerate()
            .map(|(s, e)| {
                let reached = reached[s].min(cap);
                let row = Standing {
                    rank: 0,
                    player: e.id,
                    points: wins[s],
                    played: played[s],
                    tie_breaks: TieBreaks::Knockout { reached },
                };
                (reached, s, row)
            })
            .collect();
        ranked(rows)
    }

    fn current(&self) -> &[Table] {
        self.rounds.last().expect("round 1 is drawn at creation")
    }

    /// Draws the next rounds while the current one is decided (a round of walkovers only
    /// after double forfeits is decided as soon as it is drawn).
    fn advance_while_decided(&mut self) {
        while self.current_round() < self.rounds_total()
            && self.current().iter().all(Table::decided)
        {
            let round = self.current_round() + 1;
            let next = self
                .current()
                .chunks(2)
                .enumerate()
                .map(|(t, pair)| Table {
                    id: MatchId::new(round, t as u32 + 1),
                    players: [pair[0].advancing(), pair[1].advancing()],
                    outcome: None,
                })
                .collect();
            self.rounds.push(next);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(n: u128) -> Vec<Entrant> {
        // Player i has rating 2000 - i: player 1 is seed 1.
        (1..=n)
            .map(|i| Entrant::new(PlayerId(i), 2000 - i as i32))
            .collect()
    }

    fn ids(tables: &[Table]) -> Vec<[Option<u128>; 2]> {
        tables
            .iter()
            .map(|t| t.players.map(|p| p.map(|p| p.0)))
            .collect()
    }

    #[test]
    fn bracket_order_keeps_the_top_seeds_apart() {
        assert_eq!(bracket_order(2), [1, 2]);
        assert_eq!(bracket_order(4), [1, 4, 2, 3]);
        assert_eq!(bracket_order(8), [1, 8, 4, 5, 2, 7, 3, 6]);
        for size in [16, 32, 64, 1024] {
            let order = bracket_order(size);
            let half = |s| order.iter().position(|&x| x == s).unwrap() < size / 2;
            assert_ne!(half(1), half(2), "1 and 2 in the same half of {size}");
            // Each first-round pair sums to size + 1.
            assert!(order.chunks(2).all(|p| p[0] + p[1] == size + 1));
        }
    }

    #[test]
    fn six_players_give_the_byes_to_seeds_one_and_two() {
        let k = Knockout::new(&field(6)).unwrap();
        assert_eq!(k.rounds_total(), 3);
        // Positions 1 8 4 5 2 7 3 6: seeds 7 and 8 are missing.
        assert_eq!(
            ids(k.round(1).unwrap()),
            [
                [Some(1), None],
                [Some(4), Some(5)],
                [Some(2), None],
                [Some(3), Some(6)]
            ]
        );
        assert_eq!(k.pending().count(), 2);
    }

    #[test]
    fn winners_advance_round_by_round_to_one_champion() {
        let mut k = Knockout::new(&field(6)).unwrap();
        assert_eq!(
            k.record(MatchId::new(1, 2), Outcome::Won(PlayerId(5))),
            Ok(Progress::Recorded)
        );
        assert_eq!(
            k.record(
                MatchId::new(1, 4),
                Outcome::Forfeit {
                    absent: PlayerId(6)
                }
            ),
            Ok(Progress::RoundStarted(2))
        );
        assert_eq!(
            ids(k.round(2).unwrap()),
            [[Some(1), Some(5)], [Some(2), Some(3)]]
        );
        k.record(MatchId::new(2, 1), Outcome::Won(PlayerId(5)))
            .unwrap();
        k.record(MatchId::new(2, 2), Outcome::Won(PlayerId(2)))
            .unwrap();
        assert_eq!(ids(k.round(3).unwrap()), [[Some(5), Some(2)]]);
        assert_eq!(k.champion(), None);
        assert_eq!(
            k.record(MatchId::new(3, 1), Outcome::Won(PlayerId(2))),
            Ok(Progress::Finished {
                champion: Some(PlayerId(2))
            })
        );
        assert_eq!(k.champion(), Some(PlayerId(2)));
        assert_eq!(
            k.record(MatchId::new(3, 1), Outcome::Won(PlayerId(2))),
            Err(EventError::Finished)
        );

        // Champion 1st, finalist 2nd, semi-final losers 3rd (shared), quarter-final
        // losers 5th (shared).
        let table: Vec<(u32, u128, u32, u32)> = k
            .standings()
            .iter()
            .map(|s| (s.rank, s.player.0, s.points, s.played))
            .collect();
        assert_eq!(
            table,
            [
                (1, 2, 2, 2),
                (2, 5, 2, 3),
                (3, 1, 0, 1),
                (3, 3, 1, 2),
                (5, 4, 0, 1),
                (5, 6, 0, 1)
            ]
        );
    }

    #[test]
    fn results_outside_the_current_round_or_twice_are_refused() {
        let mut k = Knockout::new(&field(4)).unwrap();
        let before = k.clone();
        assert_eq!(
            k.record(MatchId::new(2, 1), Outcome::Won(PlayerId(1))),
            Err(EventError::NotCurrentRound {
                id: MatchId::new(2, 1),
                current: 1
            })
        );
        assert_eq!(
            k.record(MatchId::new(3, 1), Outcome::Won(PlayerId(1))),
            Err(EventError::NoSuchMatch(MatchId::new(3, 1)))
        );
        assert_eq!(
            k.record(MatchId::new(1, 3), Outcome::Won(PlayerId(1))),
            Err(EventError::NoSuchMatch(MatchId::new(1, 3)))
        );
        assert_eq!(
            k.record(MatchId::new(1, 1), Outcome::Won(PlayerId(2))),
            Err(EventError::NotInMatch {
                player: PlayerId(2),
                id: MatchId::new(1, 1)
            })
        );
        assert_eq!(k, before, "a refusal changes nothing");
        k.record(MatchId::new(1, 1), Outcome::Won(PlayerId(4)))
            .unwrap();
        assert_eq!(
            k.record(MatchId::new(1, 1), Outcome::Won(PlayerId(1))),
            Err(EventError::AlreadyRecorded(MatchId::new(1, 1)))
        );
        // Round 1 done: a late result for it is refused as not current.
        k.record(MatchId::new(1, 2), Outcome::Won(PlayerId(2)))
            .unwrap();
        assert!(matches!(
            k.record(MatchId::new(1, 2), Outcome::Won(PlayerId(2))),
            Err(EventError::NotCurrentRound { current: 2, .. })
        ));
    }

    #[test]
    fn a_bye_is_not_a_match_to_record() {
        let mut k = Knockout::new(&field(3)).unwrap();
        assert_eq!(
            ids(k.round(1).unwrap()),
            [[Some(1), None], [Some(2), Some(3)]]
        );
        assert_eq!(
            k.record(MatchId::new(1, 1), Outcome::Won(PlayerId(1))),
            Err(EventError::NotPlayed(MatchId::new(1, 1)))
        );
    }

    #[test]
    fn a_double_forfeit_gives_the_next_opponent_a_walkover() {
        let mut k = Knockout::new(&field(8)).unwrap();
        k.record(MatchId::new(1, 1), Outcome::BothAbsent).unwrap();
        k.record(MatchId::new(1, 2), Outcome::Won(PlayerId(4)))
            .unwrap();
        k.record(MatchId::new(1, 3), Outcome::Won(PlayerId(2)))
            .unwrap();
        k.record(MatchId::new(1, 4), Outcome::BothAbsent).unwrap();
        // Round 2: 4 walks over the empty place, 2 likewise: both are decided at once,
        // and the final is drawn straight away.
        assert_eq!(k.current_round(), 3);
        assert_eq!(ids(k.round(2).unwrap()), [[None, Some(4)], [Some(2), None]]);
        assert_eq!(ids(k.round(3).unwrap()), [[Some(4), Some(2)]]);
        let progress = k.record(MatchId::new(3, 1), Outcome::BothAbsent).unwrap();
        assert_eq!(progress, Progress::Finished { champion: None });
        assert!(k.is_finished());
    }

    #[test]
    fn two_players_play_one_final() {
        let mut k = Knockout::new(&field(2)).unwrap();
        assert_eq!(k.rounds_total(), 1);
        assert_eq!(
            k.record(
                MatchId::new(1, 1),
                Outcome::Forfeit {
                    absent: PlayerId(1)
                }
            ),
            Ok(Progress::Finished {
                champion: Some(PlayerId(2))
            })
        );
    }
}
