//! A running event's live state ([`LiveEvent`]): the format's own state from
//! `basra-events` and the matches made for it (their rooms, deadlines and results).
//! Pure: the driver (`driver.rs`) loads it, calls these functions with what it learned
//! from game-session and the clock, and saves it under the event's lease.

use std::collections::HashMap;

use basra_events::arena::ArenaMatchId;
use basra_events::{
    Arena, Entrant, EventError, Knockout, MatchId, Outcome, PlayerId, Standing, Swiss,
};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::model::EventRecord;
use super::spec::Format;
use crate::clock::Millis;

/// The format's state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Play {
    /// Single elimination.
    Knockout(Knockout),
    /// Swiss.
    Swiss(Swiss),
    /// Arena.
    Arena(Arena),
}

/// One match made for the event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LiveMatch {
    /// `r<round>t<table>`, or `a<n>` in an arena.
    pub key: String,
    /// The round (arena: 0).
    pub round: u32,
    /// The table (arena: the match number).
    pub table: u32,
    /// The two players (user ids), the better seed first.
    pub players: [String; 2],
    /// Its game-session room (made from the key, so making it again is harmless).
    pub room_id: String,
    /// Whether game-session has made the room.
    pub created: bool,
    /// When the room was made.
    pub ready_at_ms: Millis,
    /// Join by then or forfeit.
    pub deadline_ms: Millis,
    /// The result, once known.
    pub outcome: Option<Outcome>,
    /// Whether the result is in the durable store.
    pub recorded: bool,
    /// Whether both players were told "your match is ready" (after the room was made and
    /// saved). Absent from a state saved by a release without it: read as untold, so the
    /// successor tells again (accounts keeps the notice once per player and key).
    #[serde(default)]
    pub told: bool,
    /// The match played in the room (game-session's id, the one accounts records and
    /// replays), taken with the result of a room whose match ended; empty otherwise (no
    /// result yet, a forfeit, neither joined) and in a state saved by a release without
    /// it.
    #[serde(default)]
    pub match_id: String,
}

impl LiveMatch {
    /// The winner, if the match has one.
    pub fn winner(&self) -> Option<String> {
        let players = self.players.clone();
        match self.outcome? {
            Outcome::Won(p) => Some(user_of(p)),
            Outcome::Forfeit { absent } => {
                let absent = user_of(absent);
                players.into_iter().find(|p| *p != absent)
            }
            Outcome::BothAbsent => None,
        }
    }
}

impl LiveMatch {
    /// The players who lost the match (a forfeit's absent player, both when neither
    /// joined); none before its result.
    pub fn losers(&self) -> Vec<String> {
        if self.outcome.is_none() {
            return Vec::new();
        }
        let winner = self.winner();
        self.players
            .iter()
            .filter(|p| winner.as_ref() != Some(*p))
            .cloned()
            .collect()
    }
}

/// The live state of a running event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LiveEvent {
    /// The format's state.
    pub play: Play,
    /// Every match made so far, in the order made.
    pub matches: Vec<LiveMatch>,
    /// Each player's seeding rating (for the standings' names and arena joins).
    pub ratings: HashMap<String, i32>,
}

/// A user id as the pairing crate's player id.
pub fn player_of(user: &str) -> PlayerId {
    PlayerId(Uuid::parse_str(user).map_or(0, |u| u.as_u128()))
}

/// A pairing crate's player id as a user id.
pub fn user_of(player: PlayerId) -> String {
    Uuid::from_u128(player.0).to_string()
}

/// The room of a match (game-session takes up to 128 characters).
pub fn room_id(event_id: &str, key: &str) -> String {
    format!("ev-{event_id}-{key}")
}

/// What starting an event gave: its live state, or why it cannot start.
pub fn start(
    event: &EventRecord,
    players: &[(String, i32)],
    now: Millis,
) -> Result<LiveEvent, EventError> {
    let entrants: Vec<Entrant> = players
        .iter()
        .map(|(u, r)| Entrant::new(player_of(u), *r))
        .collect();
    let play = match event.spec.format {
        Format::Knockout => Play::Knockout(Knockout::new(&entrants)?),
        Format::Swiss { rounds } => {
            let rounds = rounds.min(basra_events::swiss::max_rounds(entrants.len()));
            let mut swiss = Swiss::new(&entrants, rounds)?;
            swiss.pair_next_round()?;
            Play::Swiss(swiss)
        }
        Format::Arena { .. } => {
            if entrants.len() < 2 {
                return Err(EventError::TooFewPlayers {
                    got: entrants.len(),
                    min: 2,
                });
            }
            let start = to_utc(event.starts_at_ms);
            let end = to_utc(event.arena_ends_at().unwrap_or(event.starts_at_ms));
            let mut arena = Arena::new(start, end)?;
            for e in &entrants {
                arena.join(*e, start)?;
            }
            Play::Arena(arena)
        }
    };
    let mut live = LiveEvent {
        play,
        matches: Vec::new(),
        ratings: players.iter().cloned().collect(),
    };
    live.open_matches(event, now)?;
    Ok(live)
}

fn to_utc(ms: Millis) -> chrono::DateTime<chrono::Utc> {
    chrono::DateTime::from_timestamp_millis(ms).unwrap_or_default()
}

impl LiveEvent {
    /// Adds a [`LiveMatch`] for every match of the format's current round (knockout,
    /// Swiss) or every new arena pairing, once each.
    pub fn open_matches(&mut self, event: &EventRecord, now: Millis) -> Result<(), EventError> {
        let mut made: Vec<(String, u32, u32, [PlayerId; 2])> = Vec::new();
        match &mut self.play {
            Play::Knockout(k) => {
                let round = k.current_round();
                for t in k.round(round).unwrap_or(&[]) {
                    if let ([Some(a), Some(b)], None) = (t.players, t.outcome) {
                        made.push((key(t.id), t.id.round, t.id.table, [a, b]));
                    }
                }
            }
            Play::Swiss(s) => {
                if let Some(round) = s.round(s.current_round()) {
                    for t in &round.tables {
                        if t.outcome.is_none() {
                            made.push((key(t.id), t.id.round, t.id.table, t.players));
                        }
                    }
                }
            }
            Play::Arena(a) => {
                if !a.is_over(to_utc(now)) {
                    match a.pair(to_utc(now)) {
                        Ok(pairs) => {
                            for m in pairs {
                                made.push((format!("a{}", m.id.0), 0, m.id.0, m.players));
                            }
                        }
                        Err(EventError::NotStarted | EventError::Closed) => {}
                        Err(err) => return Err(err),
                    }
                }
            }
        }
        for (key, round, table, [a, b]) in made {
            if self.matches.iter().any(|m| m.key == key) {
                continue;
            }
            self.matches.push(LiveMatch {
                room_id: room_id(&event.id, &key),
                key,
                round,
                table,
                players: [user_of(a), user_of(b)],
                created: false,
                ready_at_ms: now,
                deadline_ms: now + event.spec.join_ms(),
                outcome: None,
                recorded: false,
                told: false,
                match_id: String::new(),
            });
        }
        Ok(())
    }

    /// Records a match's result in the format (once: a second result of the same match
    /// is refused by the format and changes nothing) and opens what it unlocked: the next
    /// round when it completed one, the players' next arena matches. `Ok(false)` when the
    /// match already had its result.
    pub fn record(
        &mut self,
        event: &EventRecord,
        key: &str,
        outcome: Outcome,
        now: Millis,
    ) -> Result<bool, EventError> {
        let Some(index) = self.matches.iter().position(|m| m.key == key) else {
            return Ok(false);
        };
        if self.matches[index].outcome.is_some() {
            return Ok(false);
        }
        let live = &self.matches[index];
        match &mut self.play {
            Play::Knockout(k) => {
                k.record(MatchId::new(live.round, live.table), outcome)?;
            }
            Play::Swiss(s) => {
                s.record(MatchId::new(live.round, live.table), outcome)?;
                let round_done = s
                    .round(s.current_round())
                    .is_some_and(|r| r.tables.iter().all(|t| t.outcome.is_some()));
                if round_done && !s.is_finished() {
                    match s.pair_next_round() {
                        Ok(_) | Err(EventError::Unpairable { .. } | EventError::Finished) => {}
                        Err(err) => return Err(err),
                    }
                }
            }
            Play::Arena(a) => {
                a.record(ArenaMatchId(live.table), outcome)?;
            }
        }
        self.matches[index].outcome = Some(outcome);
        self.open_matches(event, now)?;
        Ok(true)
    }

    /// Keeps the id of the match played in the room of the match `key` (its result just
    /// taken from game-session).
    pub fn set_match_id(&mut self, key: &str, match_id: String) {
        if let Some(m) = self.matches.iter_mut().find(|m| m.key == key) {
            m.match_id = match_id;
        }
    }

    /// Whether the event is over: the format has ended and (arena) no match is left
    /// without a result.
    pub fn is_finished(&self, now: Millis) -> bool {
        match &self.play {
            Play::Knockout(k) => k.is_finished(),
            Play::Swiss(s) => {
                s.is_finished()
                    || self.matches.iter().all(|m| m.outcome.is_some())
                        && s.round(s.current_round())
                            .is_none_or(|r| r.tables.iter().all(|t| t.outcome.is_some()))
            }
            Play::Arena(a) => {
                a.is_over(to_utc(now)) && self.matches.iter().all(|m| m.outcome.is_some())
            }
        }
    }

    /// The round being played (arena: 0) and the rounds in all.
    pub fn rounds(&self) -> (u32, u32) {
        match &self.play {
            Play::Knockout(k) => (k.current_round(), k.rounds_total()),
            Play::Swiss(s) => (s.current_round(), s.rounds_total()),
            Play::Arena(_) => (0, 0),
        }
    }

    /// The standings as they stand.
    pub fn standings(&self) -> Vec<Standing> {
        match &self.play {
            Play::Knockout(k) => k.standings(),
            Play::Swiss(s) => s.standings(),
            Play::Arena(a) => a.standings(),
        }
    }

    /// The champion, once finished.
    pub fn champion(&self) -> Option<String> {
        match &self.play {
            Play::Knockout(k) => k.champion().map(user_of),
            _ => self
                .standings()
                .first()
                .filter(|s| s.rank == 1 && s.points > 0)
                .map(|s| user_of(s.player)),
        }
    }

    /// A knockout's players out of it so far: every loser of a match with a result
    /// (none in the other formats, where nobody is knocked out).
    pub fn knocked_out(&self) -> std::collections::HashSet<String> {
        match self.play {
            Play::Knockout(_) => self.matches.iter().flat_map(LiveMatch::losers).collect(),
            _ => Default::default(),
        }
    }

    /// The player's match waiting or being played, if any.
    pub fn match_of(&self, user: &str) -> Option<&LiveMatch> {
        self.matches
            .iter()
            .rev()
            .find(|m| m.outcome.is_none() && m.players.iter().any(|p| p == user))
    }

    /// Pauses (arena) or withdraws (Swiss) a player in the format; a knockout player
    /// simply forfeits their next match (the driver sees the withdrawal).
    /// Whether it changed anything (a second withdrawal does not).
    pub fn withdraw(&mut self, user: &str, arena_pause: bool) -> bool {
        let player = player_of(user);
        match &mut self.play {
            Play::Knockout(_) => false,
            Play::Swiss(s) => s.withdraw(player).is_ok(),
            Play::Arena(a) if arena_pause => a.pause(player).is_ok(),
            Play::Arena(a) => a.withdraw(player).is_ok(),
        }
    }

    /// Brings a paused arena player back (or a new one in), at `now`.
    pub fn join_arena(&mut self, user: &str, rating: i32, now: Millis) -> Result<(), EventError> {
        if let Play::Arena(a) = &mut self.play {
            a.join(Entrant::new(player_of(user), rating), to_utc(now))?;
            self.ratings.insert(user.to_owned(), rating);
        }
        Ok(())
    }
}

fn key(id: MatchId) -> String {
    format!("r{}t{}", id.round, id.table)
}
