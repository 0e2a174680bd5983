//! Swiss: a fixed number of rounds, each paired by score, with no rematches and one bye at
//! most per player, by the FIDE Dutch system (C.04.3, the 2017 text, as lichess's Swiss
//! uses through bbpPairings) less everything about colours.
//!
//! **Colours and seats do not matter in Basra**: the dealer alternates every round of a
//! match and neither seat has an edge worth balancing across an event, so the Dutch
//! rules on colour preferences, colour differences and topscorers (A.6, A.7, the colour
//! criteria of C, all of E) are left out, and so are their effects on which candidate is
//! chosen.
//!
//! # The rules implemented
//!
//! - **Order (A.2)**: players by score, then pairing number (the seeding: rating, then id).
//! - **Brackets (A.3)**: each score group, from the top, with the players moved down from
//!   the brackets above (MDPs) is a bracket; homogeneous when it has no MDPs, heterogeneous
//!   otherwise. Players left unpaired float down to the next bracket (A.4).
//! - **Byes (A.5, C.2)**: with an odd field the last player left unpaired gets the bye,
//!   worth a win's point; nobody gets a second. The bye is a vertex ranked below everyone,
//!   so it goes to the lowest-ranked player of the lowest score group who can take it
//!   while the rest still pairs.
//! - **Subgroups (B.2)**: homogeneous: S1 the top half (as many players as pairs made), S2
//!   the rest, S1's i-th against S2's i-th ("top half against bottom half"). Heterogeneous:
//!   S1 the MDPs to pair (the highest first), S2 the residents; the other MDPs (limbo) move
//!   on down; the residents left are a remainder paired as a homogeneous bracket.
//! - **Candidates (D.1, D.2)**: transpositions of S2 in lexicographic order, then exchanges
//!   between S1 and S2: one player (the smallest difference of positions, then the lowest
//!   S1 player), then two players (in halves of up to 16).
//! - **Absolute criteria**: no rematch (C.1), no second bye (C.2).
//! - **Completion (C.4)**: a bracket's choice must leave everything below pairable: its
//!   floaters with every lower group must still have a perfect matching without rematches
//!   (checked exactly: Dirac's condition, else Edmonds' blossom algorithm; see
//!   `matching.rs`).
//! - **Quality, in this order**: the most pairs in the bracket (C.5); the most MDPs paired
//!   (the highest first); the float criteria (nobody floats down two rounds running,
//!   nobody is paired up two rounds running); then the first candidate in Dutch order.
//!
//! # Left out
//!
//! Colours (above). The pairing score difference (C.6) is not computed as such: the
//! preference for more MDPs paired, highest first, and floaters taken from the bottom of
//! S2 give the usual result, but two candidates of different PSD are not compared. The
//! look-ahead to the next bracket (C.7), the collapsed last bracket (A.9: not needed,
//! since the completion check makes every bracket's choice completable), and the float
//! criteria of two rounds back and of score differences. The float criteria are met or
//! not as a whole (first a search requiring them, then one without), not minimised
//! count by count. Late entries and accelerated pairings (Baku) are not supported.
//!
//! The search of one bracket is bounded (20,000 candidate steps, 200 completion checks);
//! past the bound the bracket is paired greedily in pairing order, each player with the
//! first player below it that leaves the rest pairable. The result is still a valid
//! round (no rematch, one bye at most, everyone paired); only its Dutch order may differ.
//!
//! # How many rounds
//!
//! [`max_rounds`]: a round can always be paired without a rematch, whatever the results,
//! as long as every player still has at least half of the field (the bye counted as a
//! player when the field is odd) left to meet — then a perfect matching exists (Dirac's
//! theorem). With `m` the field rounded up to even that allows `m / 2` rounds, and the
//! bound is tight when `m / 2` is odd (two groups of `m / 2` who have each played the
//! other group entirely have nobody left to pair). Fields of 2, 3 and 4 allow a full
//! round robin (1, 3 and 3 rounds). A Swiss with more rounds is refused. Withdrawals can
//! still make a later round unpairable: [`Swiss::pair_next_round`] then says so
//! ([`EventError::Unpairable`]) and the event ends early.
//!
//! # Standings
//!
//! Points (a win or a bye 1, a loss or a forfeit 0), then Buchholz cut-1, Buchholz, and
//! Sonneborn–Berger. Buchholz sums the points of each opponent met; cut-1 drops the
//! lowest of them; Sonneborn–Berger sums the points of the opponents beaten (with no
//! draws, the win-weighted sum). A bye adds no opponent. A forfeited match counts as met
//! (so it is never repeated) and in the tie-breaks like a played one.

mod dutch;
mod matching;

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::player::seeded;
use crate::standings::{Standing, TieBreaks, ranked};
use crate::{Entrant, EventError, MatchId, Outcome, PlayerId};
use dutch::{Field, Float};

/// The most rounds a Swiss of `players` can always pair without a rematch (module docs).
pub fn max_rounds(players: usize) -> u32 {
    let even = players + players % 2;
    match even {
        0 => 0,
        2 => 1,
        4 => 3,
        _ => (even / 2) as u32,
    }
}

/// One match of a Swiss round.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SwissTable {
    /// The match's id.
    pub id: MatchId,
    /// The players, the higher-ranked at pairing first.
    pub players: [PlayerId; 2],
    /// The result, once recorded.
    pub outcome: Option<Outcome>,
}

/// A paired round.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SwissRound {
    /// Its number, from 1.
    pub number: u32,
    /// Its matches, by table (the top score group first).
    pub tables: Vec<SwissTable>,
    /// Who had the bye (a win's point, no match).
    pub bye: Option<PlayerId>,
}

/// A Swiss event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Swiss {
    /// The field in seeding order: index + 1 is the pairing number.
    seeds: Vec<Entrant>,
    /// Withdrawn players, by pairing number − 1: never paired again.
    withdrawn: Vec<bool>,
    rounds_total: u32,
    rounds: Vec<SwissRound>,
}

impl Swiss {
    /// A Swiss of `rounds` rounds. Refused: fewer than two players, an id twice, no
    /// rounds, or more than [`max_rounds`] for the field.
    pub fn new(entrants: &[Entrant], rounds: u32) -> Result<Self, EventError> {
        let seeds = seeded(entrants, 2)?;
        if rounds == 0 {
            return Err(EventError::NoRounds);
        }
        let max = max_rounds(seeds.len());
        if rounds > max {
            return Err(EventError::TooManyRounds {
                rounds,
                players: seeds.len(),
                max,
            });
        }
        Ok(Swiss {
            withdrawn: vec![false; seeds.len()],
            seeds,
            rounds_total: rounds,
            rounds: Vec::new(),
        })
    }

    /// The number of rounds.
    pub fn rounds_total(&self) -> u32 {
        self.rounds_total
    }

    /// The last round paired (0 before the first).
    pub fn current_round(&self) -> u32 {
        self.rounds.len() as u32
    }

    /// Round `number` (from 1), if paired.
    pub fn round(&self, number: u32) -> Option<&SwissRound> {
        self.rounds.get((number as usize).checked_sub(1)?)
    }

    /// The field in seeding order.
    pub fn seeds(&self) -> &[Entrant] {
        &self.seeds
    }

    /// Whether every round has been paired and every result is in.
    pub fn is_finished(&self) -> bool {
        self.current_round() == self.rounds_total && self.pending() == 0
    }

    /// Pairs the next round. Refused: results of the current round still missing, every
    /// round already paired, or (after withdrawals) no pairing without a rematch or a
    /// second bye is left.
    pub fn pair_next_round(&mut self) -> Result<&SwissRound, EventError> {
        if self.current_round() == self.rounds_total {
            return Err(EventError::Finished);
        }
        let pending = self.pending();
        if pending > 0 {
            return Err(EventError::RoundInProgress {
                round: self.current_round(),
                pending,
            });
        }
        let number = self.current_round() + 1;
        let field = self.field();
        let unpairable = EventError::Unpairable {
            round: number,
            players: field.active.len(),
        };
        if field.active.len() < 2 {
            return Err(unpairable);
        }
        let pairing = dutch::pair(&field).ok_or(unpairable)?;
        let id = |i: usize| self.seeds[i].id;
        let round = SwissRound {
            number,
            tables: pairing
                .pairs
                .iter()
                .enumerate()
                .map(|(t, &(a, b))| SwissTable {
                    id: MatchId::new(number, t as u32 + 1),
                    players: [id(a), id(b)],
                    outcome: None,
                })
                .collect(),
            bye: pairing.bye.map(id),
        };
        self.rounds.push(round);
        Ok(self.rounds.last().expect("just pushed"))
    }

    /// Records the result of a match of the current round. Refused, with nothing changed:
    /// no such match, a match of another round, a result already in, an outcome naming a
    /// player not in the match.
    pub fn record(&mut self, id: MatchId, outcome: Outcome) -> Result<(), EventError> {
        let current = self.current_round();
        if id.round == 0 || id.round > self.rounds_total {
            return Err(EventError::NoSuchMatch(id));
        }
        if id.round != current {
            return Err(EventError::NotCurrentRound { id, current });
        }
        let table = (id.table as usize)
            .checked_sub(1)
            .and_then(|t| self.rounds[current as usize - 1].tables.get_mut(t))
            .ok_or(EventError::NoSuchMatch(id))?;
        if table.outcome.is_some() {
            return Err(EventError::AlreadyRecorded(id));
        }
        if let Some(player) = outcome.named().filter(|p| !table.players.contains(p)) {
            return Err(EventError::NotInMatch { player, id });
        }
        table.outcome = Some(outcome);
        Ok(())
    }

    /// Withdraws a player: never paired again (a match of theirs still without a result
    /// is the service's to record, usually as their forfeit). Their results stay in the
    /// standings.
    pub fn withdraw(&mut self, player: PlayerId) -> Result<(), EventError> {
        let i = self
            .seeds
            .iter()
            .position(|e| e.id == player)
            .ok_or(EventError::UnknownPlayer(player))?;
        if self.withdrawn[i] {
            return Err(EventError::Withdrawn(player));
        }
        self.withdrawn[i] = true;
        Ok(())
    }

    /// The standings from the results so far (module docs).
    pub fn standings(&self) -> Vec<Standing> {
        let n = self.seeds.len();
        let index = self.index();
        let mut points = vec![0u32; n];
        let mut played = vec![0u32; n];
        // (opponent, won) per decided match.
        let mut met: Vec<Vec<(usize, bool)>> = vec![Vec::new(); n];
        for round in &self.rounds {
            if let Some(bye) = round.bye {
                points[index[&bye]] += 1;
            }
            for table in &round.tables {
                let Some(outcome) = table.outcome else {
                    continue;
                };
                let [a, b] = table.players;
                let (ia, ib) = (index[&a], index[&b]);
                let winner = outcome.winner(a, b);
                for (me, other, id) in [(ia, ib, a), (ib, ia, b)] {
                    played[me] += 1;
                    let won = winner == Some(id);
                    points[me] += u32::from(won);
                    met[me].push((other, won));
                }
            }
        }
        let rows = (0..n)
            .map(|i| {
                let opponents: Vec<u32> = met[i].iter().map(|&(o, _)| points[o]).collect();
                let buchholz: u32 = opponents.iter().sum();
                let buchholz_cut1 = buchholz - opponents.iter().min().copied().unwrap_or(0);
                let sonneborn_berger = met[i]
                    .iter()
                    .filter(|&&(_, won)| won)
                    .map(|&(o, _)| points[o])
                    .sum();
                let key = (points[i], buchholz_cut1, buchholz, sonneborn_berger);
                let row = Standing {
                    rank: 0,
                    player: self.seeds[i].id,
                    points: points[i],
                    played: played[i],
                    tie_breaks: TieBreaks::Swiss {
                        buchholz_cut1,
                        buchholz,
                        sonneborn_berger,
                    },
                };
                (key, i, row)
            })
            .collect();
        ranked(rows)
    }

    fn pending(&self) -> usize {
        self.rounds.last().map_or(0, |r| {
            r.tables.iter().filter(|t| t.outcome.is_none()).count()
        })
    }

    fn index(&self) -> HashMap<PlayerId, usize> {
        self.seeds
            .iter()
            .enumerate()
            .map(|(i, e)| (e.id, i))
            .collect()
    }

    /// What the pairing needs: scores, opponents, byes and last round's floats, by
    /// pairing number.
    fn field(&self) -> Field {
        let n = self.seeds.len();
        let index = self.index();
        let mut f = Field {
            score: vec![0; n],
            opponents: vec![Vec::new(); n],
            had_bye: vec![false; n],
            last_float: vec![Float::None; n],
            active: (0..n).filter(|&i| !self.withdrawn[i]).collect(),
        };
        for (r, round) in self.rounds.iter().enumerate() {
            let last = r + 1 == self.rounds.len();
            // Floats are judged on the scores the round was paired on.
            let before = f.score.clone();
            if let Some(bye) = round.bye {
                let i = index[&bye];
                f.had_bye[i] = true;
                f.score[i] += 1;
                if last {
                    f.last_float[i] = Float::Down;
                }
            }
            for table in &round.tables {
                let [a, b] = table.players;
                let (ia, ib) = (index[&a], index[&b]);
                f.opponents[ia].push(ib);
                f.opponents[ib].push(ia);
                if let Some(w) = table.outcome.and_then(|o| o.winner(a, b)) {
                    f.score[index[&w]] += 1;
                }
                if last && before[ia] != before[ib] {
                    let (hi, lo) = if before[ia] > before[ib] {
                        (ia, ib)
                    } else {
                        (ib, ia)
                    };
                    f.last_float[hi] = Float::Down;
                    f.last_float[lo] = Float::Up;
                }
            }
        }
        f
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(n: u128) -> Vec<Entrant> {
        (1..=n)
            .map(|i| Entrant::new(PlayerId(i), 2000 - i as i32))
            .collect()
    }

    #[test]
    fn max_rounds_by_field_size() {
        let got: Vec<u32> = (2..=12).map(max_rounds).collect();
        assert_eq!(got, [1, 3, 3, 3, 3, 4, 4, 5, 5, 6, 6]);
        assert_eq!(max_rounds(1024), 512);
    }

    #[test]
    fn too_many_rounds_is_refused_with_the_bound() {
        assert_eq!(
            Swiss::new(&field(6), 4),
            Err(EventError::TooManyRounds {
                rounds: 4,
                players: 6,
                max: 3
            })
        );
        assert_eq!(Swiss::new(&field(6), 0), Err(EventError::NoRounds));
        assert!(Swiss::new(&field(6), 3).is_ok());
    }

    #[test]
    fn the_next_round_waits_for_every_result() {
        let mut s = Swiss::new(&field(4), 2).unwrap();
        s.pair_next_round().unwrap();
        s.record(MatchId::new(1, 1), Outcome::Won(PlayerId(1)))
            .unwrap();
        assert_eq!(
            s.pair_next_round().unwrap_err(),
            EventError::RoundInProgress {
                round: 1,
                pending: 1
            }
        );
        assert_eq!(
            s.record(MatchId::new(1, 1), Outcome::Won(PlayerId(1))),
            Err(EventError::AlreadyRecorded(MatchId::new(1, 1)))
        );
        assert_eq!(
            s.record(MatchId::new(1, 2), Outcome::Won(PlayerId(1))),
            Err(EventError::NotInMatch {
                player: PlayerId(1),
                id: MatchId::new(1, 2)
            })
        );
        assert_eq!(
            s.record(MatchId::new(2, 1), Outcome::Won(PlayerId(1))),
            Err(EventError::NotCurrentRound {
                id: MatchId::new(2, 1),
                current: 1
            })
        );
        s.record(MatchId::new(1, 2), Outcome::BothAbsent).unwrap();
        // 1 leads alone and floats down to 2 (1 has met 3); 3–4 below.
        let r2 = s.pair_next_round().unwrap().tables.clone();
        assert_eq!(r2[0].players, [PlayerId(1), PlayerId(2)]);
        assert_eq!(r2[1].players, [PlayerId(3), PlayerId(4)]);
        s.record(MatchId::new(2, 1), Outcome::Won(PlayerId(1)))
            .unwrap();
        s.record(MatchId::new(2, 2), Outcome::Won(PlayerId(3)))
            .unwrap();
        assert!(s.is_finished());
        assert_eq!(s.pair_next_round().unwrap_err(), EventError::Finished);
    }

    #[test]
    fn withdrawn_players_are_not_paired_and_a_spent_field_is_unpairable() {
        let mut s = Swiss::new(&field(4), 3).unwrap();
        s.withdraw(PlayerId(4)).unwrap();
        assert_eq!(
            s.withdraw(PlayerId(4)),
            Err(EventError::Withdrawn(PlayerId(4)))
        );
        assert_eq!(
            s.withdraw(PlayerId(9)),
            Err(EventError::UnknownPlayer(PlayerId(9)))
        );
        // Three left: 1–2 and a bye for 3, then 1–3 with a bye for 2, then 2–3 and a
        // bye for 1 … each has had a bye and met both others: a fourth round could not
        // be paired, but three rounds can.
        for _ in 0..3 {
            let round = s.pair_next_round().unwrap().clone();
            assert!(round.bye.is_some());
            assert!(
                !round
                    .tables
                    .iter()
                    .any(|t| t.players.contains(&PlayerId(4)))
            );
            for t in &round.tables {
                s.record(t.id, Outcome::Won(t.players[0])).unwrap();
            }
        }
        assert!(s.is_finished());
        s.withdraw(PlayerId(3)).unwrap();
    }

    #[test]
    fn standings_tie_breaks_by_hand() {
        // Four players, two rounds: 1 beats 3, 2 beats 4; then 1 beats 2, 3 beats 4 …
        let mut s = Swiss::new(&field(4), 2).unwrap();
        let r1 = s.pair_next_round().unwrap().clone();
        let ids = |r: &SwissRound| -> Vec<[u128; 2]> {
            r.tables.iter().map(|t| t.players.map(|p| p.0)).collect()
        };
        assert_eq!(ids(&r1), [[1, 3], [2, 4]]);
        s.record(MatchId::new(1, 1), Outcome::Won(PlayerId(1)))
            .unwrap();
        s.record(MatchId::new(1, 2), Outcome::Won(PlayerId(2)))
            .unwrap();
        let r2 = s.pair_next_round().unwrap().clone();
        assert_eq!(ids(&r2), [[1, 2], [3, 4]]);
        s.record(MatchId::new(2, 1), Outcome::Won(PlayerId(1)))
            .unwrap();
        s.record(
            MatchId::new(2, 2),
            Outcome::Forfeit {
                absent: PlayerId(4),
            },
        )
        .unwrap();
        // Points: 1: 2, 2: 1, 3: 1, 4: 0.
        // Buchholz: 1 met 3 (1) and 2 (1) = 2; 2 met 4 (0) and 1 (2) = 2;
        //           3 met 1 (2) and 4 (0) = 2; 4 met 2 (1) and 3 (1) = 2.
        // Cut-1:    1: 2 - 1 = 1; 2: 2 - 0 = 2; 3: 2 - 0 = 2; 4: 2 - 1 = 1.
        // SB:       1 beat 3 and 2: 2; 2 beat 4: 0; 3 beat 4: 0; 4: 0.
        let table: Vec<(u32, u128, u32, TieBreaks)> = s
            .standings()
            .iter()
            .map(|r| (r.rank, r.player.0, r.points, r.tie_breaks))
            .collect();
        let tb = |c, b, sb| TieBreaks::Swiss {
            buchholz_cut1: c,
            buchholz: b,
            sonneborn_berger: sb,
        };
        assert_eq!(
            table,
            [
                (1, 1, 2, tb(1, 2, 2)),
                (2, 2, 1, tb(2, 2, 0)),
                (2, 3, 1, tb(2, 2, 0)),
                (4, 4, 0, tb(1, 2, 0)),
            ]
        );
    }
}
