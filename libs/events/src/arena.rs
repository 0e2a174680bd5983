//! Arena: a time window in which a player who finishes a match is paired again at once
//! with someone waiting near them in score, as lichess's arena tournaments.
//!
//! **Scoring** (the exact rule): a win is 2 points, a loss 0. A win when the player's two
//! previous results were wins ("on fire", lichess's double points) is worth 4: so the
//! third win in a row and every one after it, until a loss. A win by forfeit (the
//! opponent never joined) scores 2 and leaves the streak as it was, neither extending nor
//! breaking it; a forfeit lost, or a match neither joined, scores 0 and ends the streak,
//! and the absent player is paused until they come back ([`Arena::join`]).
//!
//! **Pairing** ([`Arena::pair`]): the waiting players in order of points, then rating,
//! then id; from the top, each is paired with the first of the next three still free who
//! was not their last opponent (no immediate rematch, unless those two are the only ones
//! waiting); a player with no such partner waits for the next call. The service calls
//! `pair` whenever a match ends (and on a short tick, so that a player left over is
//! paired as soon as someone frees up): pairing is "at once" up to that call.
//!
//! **The window**: players may join before the start (they wait) and until the end;
//! pairing happens only inside `[start, end)`. A match paired before the end counts
//! whenever its result comes in; after the end nobody is paired again.
//!
//! **Pause and withdraw**: a paused player is not paired and keeps their points, and comes
//! back with `join`; a withdrawn player never comes back, and keeps their points in the
//! standings. Either, asked during a match, takes effect when its result is in.
//!
//! **Standings**: points, then performance (the opponents' mean rating plus 400 × (wins −
//! losses) ÷ matches, rounded down; a double forfeit counts as a loss for both).

use std::cmp::Reverse;
use std::fmt;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::standings::{Standing, TieBreaks, ranked};
use crate::{Entrant, EventError, Outcome, PlayerId};

/// Points for a win.
pub const WIN: u32 = 2;
/// Points for a win on a streak (after two wins in a row).
pub const WIN_ON_FIRE: u32 = 4;
/// How many of the next free players a player may be paired with, in rank order.
const LOOK_AHEAD: usize = 3;

/// A match of an arena: its number, from 1, in the order paired.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ArenaMatchId(pub u32);

impl fmt::Display for ArenaMatchId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "arena match {}", self.0)
    }
}

/// Where a player is in the arena.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ArenaState {
    /// Free: paired at the next [`Arena::pair`].
    Waiting,
    /// In this match.
    Playing(ArenaMatchId),
    /// Not paired until they join again.
    Paused,
    /// Gone for good.
    Withdrawn,
}

/// One player of an arena.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArenaPlayer {
    /// Who, with their rating at joining.
    pub entrant: Entrant,
    /// Where they are.
    pub state: ArenaState,
    /// Points so far.
    pub points: u32,
    /// Wins in a row (forfeit wins neither count nor break it).
    pub streak: u32,
    /// Matches with a result.
    pub played: u32,
    /// Of which won (forfeit wins included).
    pub wins: u32,
    /// The sum of the opponents' ratings over those matches.
    opponent_ratings: i64,
    /// The last opponent, never met again at once.
    last_opponent: Option<PlayerId>,
    /// Asked to pause or withdraw during a match: applied at its result.
    after_match: Option<ArenaState>,
}

/// One match of an arena.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArenaMatch {
    /// Its id.
    pub id: ArenaMatchId,
    /// The players, the higher-ranked at pairing first.
    pub players: [PlayerId; 2],
    /// The result, once in.
    pub outcome: Option<Outcome>,
    /// The points each player got from it (0 until the result).
    pub points: [u32; 2],
}

/// An arena event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Arena {
    start: DateTime<Utc>,
    end: DateTime<Utc>,
    players: Vec<ArenaPlayer>,
    matches: Vec<ArenaMatch>,
}

impl Arena {
    /// An arena open from `start` until `end`; refused when `end` is not after `start`.
    pub fn new(start: DateTime<Utc>, end: DateTime<Utc>) -> Result<Self, EventError> {
        if end <= start {
            return Err(EventError::EmptyWindow);
        }
        Ok(Arena {
            start,
            end,
            players: Vec::new(),
            matches: Vec::new(),
        })
    }

    /// The players, in the order they joined.
    pub fn players(&self) -> &[ArenaPlayer] {
        &self.players
    }

    /// Every match paired so far, in order.
    pub fn matches(&self) -> &[ArenaMatch] {
        &self.matches
    }

    /// Whether the window has closed and every match has its result.
    pub fn is_over(&self, now: DateTime<Utc>) -> bool {
        now >= self.end && self.matches.iter().all(|m| m.outcome.is_some())
    }

    /// Joins a player, or brings a paused one back (their points kept). Refused after the
    /// end, and for a player who withdrew. Joining twice changes nothing.
    pub fn join(&mut self, entrant: Entrant, now: DateTime<Utc>) -> Result<(), EventError> {
        if now >= self.end {
            return Err(EventError::Closed);
        }
        match self.players.iter_mut().find(|p| p.entrant.id == entrant.id) {
            None => self.players.push(ArenaPlayer {
                entrant,
                state: ArenaState::Waiting,
                points: 0,
                streak: 0,
                played: 0,
                wins: 0,
                opponent_ratings: 0,
                last_opponent: None,
                after_match: None,
            }),
            Some(p) => match p.state {
                ArenaState::Withdrawn => return Err(EventError::Withdrawn(entrant.id)),
                ArenaState::Paused => p.state = ArenaState::Waiting,
                ArenaState::Playing(_) => p.after_match = None,
                ArenaState::Waiting => {}
            },
        }
        Ok(())
    }

    /// Pauses a player: not paired until they join again (after their match, if playing).
    pub fn pause(&mut self, player: PlayerId) -> Result<(), EventError> {
        self.leave(player, ArenaState::Paused)
    }

    /// Withdraws a player for good (after their match, if playing).
    pub fn withdraw(&mut self, player: PlayerId) -> Result<(), EventError> {
        self.leave(player, ArenaState::Withdrawn)
    }

    fn leave(&mut self, player: PlayerId, to: ArenaState) -> Result<(), EventError> {
        let p = self
            .players
            .iter_mut()
            .find(|p| p.entrant.id == player)
            .ok_or(EventError::UnknownPlayer(player))?;
        match p.state {
            ArenaState::Withdrawn => return Err(EventError::Withdrawn(player)),
            ArenaState::Playing(_) => p.after_match = Some(to),
            ArenaState::Waiting | ArenaState::Paused => p.state = to,
        }
        Ok(())
    }

    /// Pairs the players waiting now (module docs) and answers the new matches. Refused
    /// before the start and from the end on.
    pub fn pair(&mut self, now: DateTime<Utc>) -> Result<Vec<ArenaMatch>, EventError> {
        if now < self.start {
            return Err(EventError::NotStarted);
        }
        if now >= self.end {
            return Err(EventError::Closed);
        }
        let mut waiting: Vec<usize> = (0..self.players.len())
            .filter(|&i| self.players[i].state == ArenaState::Waiting)
            .collect();
        waiting.sort_by(|&a, &b| {
            let (a, b) = (&self.players[a], &self.players[b]);
            b.points
                .cmp(&a.points)
                .then(b.entrant.rating.cmp(&a.entrant.rating))
                .then(a.entrant.id.cmp(&b.entrant.id))
        });
        let only_two = waiting.len() == 2;
        let mut taken = vec![false; waiting.len()];
        let mut new = Vec::with_capacity(waiting.len() / 2);
        for i in 0..waiting.len() {
            if taken[i] {
                continue;
            }
            let a = &self.players[waiting[i]];
            let partner = (i + 1..waiting.len())
                .filter(|&j| !taken[j])
                .take(LOOK_AHEAD)
                .find(|&j| {
                    let b = &self.players[waiting[j]];
                    only_two
                        || (a.last_opponent != Some(b.entrant.id)
                            && b.last_opponent != Some(a.entrant.id))
                });
            let Some(j) = partner else { continue };
            taken[i] = true;
            taken[j] = true;
            let id = ArenaMatchId(self.matches.len() as u32 + 1);
            let (ia, ib) = (waiting[i], waiting[j]);
            let m = ArenaMatch {
                id,
                players: [self.players[ia].entrant.id, self.players[ib].entrant.id],
                outcome: None,
                points: [0, 0],
            };
            self.players[ia].state = ArenaState::Playing(id);
            self.players[ib].state = ArenaState::Playing(id);
            self.matches.push(m);
            new.push(m);
        }
        Ok(new)
    }

    /// Records a match's result (also after the end, for a match paired before it) and
    /// frees its players for the next pairing. Refused: no such match, a result already
    /// in, an outcome naming a player not in the match.
    pub fn record(&mut self, id: ArenaMatchId, outcome: Outcome) -> Result<[u32; 2], EventError> {
        let m = (id.0 as usize)
            .checked_sub(1)
            .and_then(|i| self.matches.get(i))
            .copied()
            .ok_or(EventError::UnknownArenaMatch(id))?;
        if m.outcome.is_some() {
            return Err(EventError::ArenaMatchRecorded(id));
        }
        let [a, b] = m.players;
        if let Some(player) = outcome.named().filter(|p| *p != a && *p != b) {
            return Err(EventError::NotInArenaMatch { player, id });
        }
        let winner = outcome.winner(a, b);
        let index = |p: PlayerId| {
            self.players
                .iter()
                .position(|x| x.entrant.id == p)
                .expect("a match's players are in the arena")
        };
        let (ia, ib) = (index(a), index(b));
        let ratings = [
            self.players[ib].entrant.rating,
            self.players[ia].entrant.rating,
        ];
        let mut points = [0; 2];
        for (k, (me, other)) in [(ia, b), (ib, a)].into_iter().enumerate() {
            let p = &mut self.players[me];
            let id_me = p.entrant.id;
            p.played += 1;
            p.opponent_ratings += i64::from(ratings[k]);
            p.last_opponent = Some(other);
            let absent = match outcome {
                Outcome::Forfeit { absent } => absent == id_me,
                Outcome::BothAbsent => true,
                Outcome::Won(_) => false,
            };
            if winner == Some(id_me) {
                p.wins += 1;
                if matches!(outcome, Outcome::Forfeit { .. }) {
                    points[k] = WIN;
                } else {
                    points[k] = if p.streak >= 2 { WIN_ON_FIRE } else { WIN };
                    p.streak += 1;
                }
            } else {
                p.streak = 0;
            }
            p.points += points[k];
            p.state = match p.after_match.take() {
                Some(ArenaState::Withdrawn) => ArenaState::Withdrawn,
                _ if absent => ArenaState::Paused,
                Some(state) => state,
                None => ArenaState::Waiting,
            };
        }
        let stored = &mut self.matches[id.0 as usize - 1];
        stored.outcome = Some(outcome);
        stored.points = points;
        Ok(points)
    }

    /// The standings (module docs).
    pub fn standings(&self) -> Vec<Standing> {
        // Within a tie, rows are listed as seeds would be: rating, then id.
        let mut by_rating: Vec<usize> = (0..self.players.len()).collect();
        by_rating.sort_by_key(|&i| {
            (
                Reverse(self.players[i].entrant.rating),
                self.players[i].entrant.id,
            )
        });
        let rows = by_rating
            .into_iter()
            .enumerate()
            .map(|(seed, i)| {
                let p = &self.players[i];
                let performance = if p.played == 0 {
                    0
                } else {
                    let losses = i64::from(p.played - p.wins);
                    let total = p.opponent_ratings + 400 * (i64::from(p.wins) - losses);
                    total.div_euclid(i64::from(p.played)) as i32
                };
                let row = Standing {
                    rank: 0,
                    player: p.entrant.id,
                    points: p.points,
                    played: p.played,
                    tie_breaks: TieBreaks::Arena { performance },
                };
                ((p.points, performance), seed, row)
            })
            .collect();
        ranked(rows)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn t(minute: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 1, 1, 20, minute, 0).unwrap()
    }

    fn e(id: u128, rating: i32) -> Entrant {
        Entrant::new(PlayerId(id), rating)
    }

    fn arena(n: u128) -> Arena {
        let mut a = Arena::new(t(0), t(30)).unwrap();
        for i in 1..=n {
            a.join(e(i, 2000 - i as i32), t(0)).unwrap();
        }
        a
    }

    fn pairs(ms: &[ArenaMatch]) -> Vec<[u128; 2]> {
        ms.iter().map(|m| m.players.map(|p| p.0)).collect()
    }

    #[test]
    fn the_window_is_kept() {
        assert_eq!(Arena::new(t(5), t(5)), Err(EventError::EmptyWindow));
        let mut a = Arena::new(t(1), t(30)).unwrap();
        a.join(e(1, 1500), t(0)).unwrap();
        a.join(e(2, 1500), t(0)).unwrap();
        assert_eq!(a.pair(t(0)), Err(EventError::NotStarted));
        assert_eq!(a.pair(t(1)).unwrap().len(), 1);
        assert_eq!(a.pair(t(30)), Err(EventError::Closed));
        assert_eq!(a.join(e(3, 1500), t(30)), Err(EventError::Closed));
        assert!(!a.is_over(t(30)), "a match still running");
        a.record(ArenaMatchId(1), Outcome::Won(PlayerId(1)))
            .unwrap();
        assert!(a.is_over(t(30)));
    }

    #[test]
    fn pairs_neighbours_in_score_and_no_immediate_rematch() {
        let mut a = arena(4);
        assert_eq!(pairs(&a.pair(t(1)).unwrap()), [[1, 2], [3, 4]]);
        a.record(ArenaMatchId(1), Outcome::Won(PlayerId(2)))
            .unwrap();
        a.record(ArenaMatchId(2), Outcome::Won(PlayerId(4)))
            .unwrap();
        // Order: 2 and 4 on 2 points, then 1 and 3. 2–4, then 1–3.
        assert_eq!(pairs(&a.pair(t(2)).unwrap()), [[2, 4], [1, 3]]);
        a.record(ArenaMatchId(3), Outcome::Won(PlayerId(2)))
            .unwrap();
        // 2 and 4 free again with 1 and 3 still playing: 2 would meet 4 again, and they
        // are the only two waiting, so they play.
        assert_eq!(pairs(&a.pair(t(3)).unwrap()), [[2, 4]]);
    }

    #[test]
    fn a_third_win_in_a_row_scores_double() {
        let mut a = arena(2);
        let mut got = Vec::new();
        for (minute, outcome) in [
            (1, Outcome::Won(PlayerId(1))),
            (2, Outcome::Won(PlayerId(1))),
            (3, Outcome::Won(PlayerId(1))),
            (
                4,
                Outcome::Forfeit {
                    absent: PlayerId(2),
                },
            ),
            (5, Outcome::Won(PlayerId(1))),
            (6, Outcome::Won(PlayerId(2))),
            (7, Outcome::Won(PlayerId(1))),
        ] {
            let m = a.pair(t(minute)).unwrap()[0];
            got.push(a.record(m.id, outcome).unwrap());
            if matches!(outcome, Outcome::Forfeit { .. }) {
                a.join(e(2, 1998), t(minute)).unwrap(); // back from the pause
            }
        }
        // 2, 2, 4 (third in a row), forfeit 2 (streak kept), 4 (still on fire), loss,
        // then 2 (streak broken).
        let first: Vec<u32> = got.iter().map(|p| p[0]).collect();
        assert_eq!(first, [2, 2, 4, 2, 4, 0, 2]);
        let rows = a.standings();
        assert_eq!(rows[0].player, PlayerId(1));
        assert_eq!(rows[0].points, 16);
        assert_eq!(rows[1].points, 2);
        assert_eq!(
            rows.iter().map(|r| r.points).sum::<u32>(),
            got.iter().flatten().sum::<u32>()
        );
    }

    #[test]
    fn pause_and_withdraw_take_effect_after_the_match() {
        let mut a = arena(3);
        let m = a.pair(t(1)).unwrap()[0];
        a.pause(PlayerId(1)).unwrap();
        a.withdraw(PlayerId(2)).unwrap();
        assert_eq!(a.players()[0].state, ArenaState::Playing(m.id));
        a.record(m.id, Outcome::Won(PlayerId(1))).unwrap();
        assert_eq!(a.players()[0].state, ArenaState::Paused);
        assert_eq!(a.players()[1].state, ArenaState::Withdrawn);
        assert!(a.pair(t(2)).unwrap().is_empty(), "only 3 is waiting");
        assert_eq!(
            a.join(e(2, 1998), t(2)),
            Err(EventError::Withdrawn(PlayerId(2)))
        );
        a.join(e(1, 1999), t(2)).unwrap();
        assert_eq!(pairs(&a.pair(t(2)).unwrap()), [[1, 3]]);
        // The withdrawn player keeps their place in the standings.
        assert_eq!(a.standings().len(), 3);
    }

    #[test]
    fn an_absent_player_is_paused() {
        let mut a = arena(2);
        let m = a.pair(t(1)).unwrap()[0];
        assert_eq!(
            a.record(m.id, Outcome::Won(PlayerId(9))),
            Err(EventError::NotInArenaMatch {
                player: PlayerId(9),
                id: m.id
            })
        );
        a.record(
            m.id,
            Outcome::Forfeit {
                absent: PlayerId(2),
            },
        )
        .unwrap();
        assert_eq!(
            a.record(m.id, Outcome::BothAbsent),
            Err(EventError::ArenaMatchRecorded(m.id))
        );
        assert_eq!(a.players()[1].state, ArenaState::Paused);
        assert_eq!(a.players()[0].state, ArenaState::Waiting);
    }
}
