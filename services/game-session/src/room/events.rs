//! The room's event log as stored server-side: full events (every dealt hand included),
//! each projected per viewer when it is sent (see [`crate::stream::convert::project`]).

use basra_engine::{Card, Event, RoundScore, Seat};
use serde::{Deserialize, Serialize};

use crate::room::seats::SeatSnapshot;

/// One event of a room's log. Its sequence number is its position in the log, from 1.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredEvent {
    /// When it happened (Unix milliseconds).
    pub at_ms: i64,
    /// What happened.
    pub event: LogEvent,
}

/// What happened in a room.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum LogEvent {
    /// A seat changed occupant while the room waits.
    SeatChanged {
        /// The seat as it is now.
        seat: SeatSnapshot,
    },
    /// A match started.
    MatchStarted {
        /// The new match's id (a UUID; the match record's key).
        match_id: String,
        /// Whether it is ranked.
        ranked: bool,
        /// Every seat.
        seats: Vec<SeatSnapshot>,
        /// SHA-256 of the seed.
        commitment: [u8; 32],
    },
    /// A round started (round from 0, as the engine counts).
    RoundStarted {
        /// The round, from 0.
        round: u32,
        /// Who deals this round (the seat after them plays first).
        dealer: Seat,
    },
    /// The starting table.
    TableDealt {
        /// The four cards.
        cards: Vec<Card>,
    },
    /// One deal: the engine's `HandDealt` events, one per seat, with every hand (secret;
    /// each viewer gets its own through `Event::for_viewer`).
    HandDealt {
        /// The engine events, one per seat.
        deals: Vec<Event>,
        /// Cards in each hand after the deal.
        hand_counts: Vec<u32>,
        /// Cards left in the deck once the deal is done, a round's starting table included.
        deck_remaining: u32,
    },
    /// A card was played (the engine's `CardPlayed`).
    CardPlayed {
        /// The engine event.
        played: Event,
        /// Points of the Basra, if any.
        basra_points: u32,
        /// The server played it because the turn timed out.
        automatic: bool,
        /// The client's move id (shown to the playing seat only).
        client_move_id: String,
    },
    /// A turn started.
    TurnStarted {
        /// Whose turn.
        seat: Seat,
        /// When it times out (Unix milliseconds).
        deadline_ms: i64,
    },
    /// A round ended.
    RoundEnded {
        /// The engine's scoring.
        score: RoundScore,
        /// Majority points carried to the next round.
        carried: u32,
    },
    /// The match ended; the seed is revealed.
    MatchEnded {
        /// The match.
        match_id: String,
        /// The winning side, if any.
        winner_side: Option<u8>,
        /// `basra.common.v1.MatchEndReason` as a number.
        reason: i32,
        /// The seat that resigned or abandoned.
        forfeit_seat: Option<u8>,
        /// Final totals per side.
        totals: [u32; 2],
        /// The shuffle seed, revealed: it hashes to the match's commitment.
        seed: [u8; 32],
        /// Why an operator closed the room (reason closed; empty otherwise).
        #[serde(default, skip_serializing_if = "String::is_empty")]
        close_reason: String,
    },
    /// A player's stream connected or went away.
    ConnectionChanged {
        /// The seat whose stream changed.
        seat: u8,
        /// Connected now.
        connected: bool,
        /// When disconnected during a match: the end of the grace period.
        grace_deadline_ms: Option<i64>,
        /// The stream that connected (server-side only: a stream that sees another
        /// stream of its own seat connect knows it was replaced).
        conn_id: String,
    },
    /// A quick-chat phrase.
    Chat {
        /// The sender.
        seat: u8,
        /// `QuickChatPhrase` as a number.
        phrase: i32,
    },
    /// A rematch was asked for.
    RematchOffered {
        /// Who asked.
        seat: u8,
        /// Everyone who has asked.
        accepted: Vec<u8>,
        /// When the offer lapses.
        deadline_ms: i64,
    },
}

impl LogEvent {
    /// Whether the event changes the game state a play is based on (what makes a play
    /// with an older `based_on_seq` stale). Chat and connection changes do not.
    pub fn changes_game(&self) -> bool {
        !matches!(
            self,
            LogEvent::ConnectionChanged { .. }
                | LogEvent::Chat { .. }
                | LogEvent::RematchOffered { .. }
                | LogEvent::SeatChanged { .. }
        )
    }
}
