//! The one error type of the crate: every refusal names what was wrong, and a refused
//! call leaves the event exactly as it was.

use crate::arena::ArenaMatchId;
use crate::{MatchId, PlayerId};

/// Why an event refused a call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EventError {
    /// An event needs at least `min` players.
    #[error("{got} players: an event needs at least {min}")]
    TooFewPlayers {
        /// Players given.
        got: usize,
        /// The least the format takes.
        min: usize,
    },
    /// The same player was entered twice.
    #[error("player {0} is entered twice")]
    DuplicatePlayer(PlayerId),
    /// A Swiss of no rounds.
    #[error("a Swiss needs at least one round")]
    NoRounds,
    /// More Swiss rounds than a field of this size can always be paired without a rematch.
    #[error(
        "{rounds} rounds is too many for {players} players: at most {max} rounds can always be paired without a rematch"
    )]
    TooManyRounds {
        /// Rounds asked for.
        rounds: u32,
        /// Players in the field.
        players: usize,
        /// [`swiss::max_rounds`](crate::swiss::max_rounds) for the field.
        max: u32,
    },
    /// No match has this id.
    #[error("no match {0}")]
    NoSuchMatch(MatchId),
    /// A result for a match of another round than the one being played.
    #[error("match {id} is not in the current round {current}")]
    NotCurrentRound {
        /// The match named.
        id: MatchId,
        /// The round being played.
        current: u32,
    },
    /// The match's result is already recorded.
    #[error("match {0} already has its result")]
    AlreadyRecorded(MatchId),
    /// The match has no two players (a bye or an empty table): nothing to record.
    #[error("match {0} is not played (a bye or a walkover)")]
    NotPlayed(MatchId),
    /// A result names a player who is not in the match.
    #[error("player {player} is not in match {id}")]
    NotInMatch {
        /// The player named.
        player: PlayerId,
        /// The match.
        id: MatchId,
    },
    /// The next round cannot be paired before every result of this one is in.
    #[error("round {round} still has {pending} matches without a result")]
    RoundInProgress {
        /// The round being played.
        round: u32,
        /// Its matches still without a result.
        pending: usize,
    },
    /// The event has ended: no more rounds or results.
    #[error("the event is over")]
    Finished,
    /// The players left (after withdrawals) cannot be paired without a rematch.
    #[error("round {round} cannot be paired: the {players} players left have all met")]
    Unpairable {
        /// The round that could not be paired.
        round: u32,
        /// Players still in.
        players: usize,
    },
    /// The player is not in this event.
    #[error("player {0} is not in this event")]
    UnknownPlayer(PlayerId),
    /// The player has withdrawn and cannot come back.
    #[error("player {0} has withdrawn")]
    Withdrawn(PlayerId),
    /// No arena match has this id.
    #[error("no {0}")]
    UnknownArenaMatch(ArenaMatchId),
    /// The arena match's result is already recorded.
    #[error("{0} already has its result")]
    ArenaMatchRecorded(ArenaMatchId),
    /// A result names a player who is not in the arena match.
    #[error("player {player} is not in {id}")]
    NotInArenaMatch {
        /// The player named.
        player: PlayerId,
        /// The match.
        id: ArenaMatchId,
    },
    /// An arena's end is not after its start.
    #[error("an arena must end after it starts")]
    EmptyWindow,
    /// The arena has not started yet.
    #[error("the arena has not started")]
    NotStarted,
    /// The arena's window has closed: no new pairings or players.
    #[error("the arena has ended")]
    Closed,
    /// The CRON expression does not parse (five fields: minute hour day-of-month month
    /// day-of-week).
    #[error("bad CRON expression {expr:?}: {reason}")]
    BadCron {
        /// The expression given.
        expr: String,
        /// What the parser said.
        reason: String,
    },
    /// The CRON expression parses but matches no time at all (30 February).
    #[error("the CRON expression {0:?} never fires")]
    NeverFires(String),
    /// Not an IANA time zone name (such as `Africa/Cairo`).
    #[error("unknown time zone {0:?}")]
    UnknownTimeZone(String),
}
