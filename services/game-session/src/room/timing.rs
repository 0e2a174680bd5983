//! The per-room timings (turn, grace, bot delay, rematch window, turn slack): a room
//! carries its own, copied from the settings of the replica that created it, so every
//! replica applies the same ones to it. Apart from the settings so that the room, which
//! holds them, does not depend on the settings (which depend on the store, which holds
//! rooms).

use serde::{Deserialize, Serialize};

/// The per-room timings, copied into each room when it is created so that every replica
/// applies the same ones to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Timing {
    /// Milliseconds per turn.
    pub turn_ms: u64,
    /// Milliseconds of disconnect grace.
    pub grace_ms: u64,
    /// Milliseconds a bot waits.
    pub bot_delay_ms: u64,
    /// Milliseconds of rematch window.
    pub rematch_ms: u64,
    /// Milliseconds the server waits past a turn's deadline before playing for the
    /// player: a play that reached the server in time, but is still queued or retrying
    /// its commit under load, is never beaten by the timer.
    #[serde(default)]
    pub turn_slack_ms: u64,
}

/// Now, in Unix milliseconds (the clock of every deadline and event time).
pub fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

#[cfg(test)]
impl Timing {
    /// For unit tests that play whole matches by hand: deadlines far off, no bot delay,
    /// no slack.
    pub(crate) fn for_tests() -> Timing {
        Timing {
            turn_ms: 20_000,
            grace_ms: 60_000,
            bot_delay_ms: 0,
            rematch_ms: 60_000,
            turn_slack_ms: 0,
        }
    }
}
