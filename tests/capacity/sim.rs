//! The simulation's shared state: the latency recorder, the front doors, the settings,
//! the population gauge, and what players leave for each other (the last play sent in
//! each room, rooms a friend may watch, devices and accounts to come back with).

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::front::{Front, Player};
use crate::latency::Recorder;
use crate::mix::{Activity, Shares, SignIn};
use crate::schedule::Range;

/// How players behave.
#[derive(Debug, Clone)]
pub struct Behaviour {
    /// Think time before each play.
    pub think: Range,
    /// Pause between two activities of a session.
    pub between: Range,
    /// How long a spectator stays at most.
    pub watch_for: Range,
    /// The target score of queue and room matches (one the queue offers).
    pub target_score: u32,
    /// Share of seats that drop their stream once in a match and resume 1–3 s later.
    pub drop_share: f64,
    /// Share of seats that let one turn time out (the turn timer plays for them).
    pub timeout_share: f64,
    /// Share of finished matches after which the player reads its history.
    pub history_share: f64,
    /// Share of finished matches after which the player reads the leaderboard.
    pub leaderboard_share: f64,
    /// Renew the access token when it is older than this.
    pub refresh_after: Duration,
}

/// A room being played that a friend may watch.
#[derive(Clone)]
pub struct Watchable {
    /// The room.
    pub room_id: String,
    /// Its host, who accepts the watcher's friend request.
    pub host: Player,
}

/// Counters of the whole population.
#[derive(Debug, Default)]
pub struct Counters {
    /// Players present now.
    pub present: AtomicI64,
    /// Most present at once.
    pub peak: AtomicI64,
    /// Sessions begun.
    pub sessions: AtomicU64,
    /// Matches whose start a player saw.
    pub matches_started: AtomicU64,
    /// Plays sent.
    pub plays: AtomicU64,
    /// Stream drops done on purpose and resumed.
    pub resumes: AtomicU64,
    /// Turns let time out on purpose.
    pub timeouts: AtomicU64,
    /// Watch activities that found nothing to watch (played the computer instead).
    pub nothing_to_watch: AtomicU64,
}

impl Counters {
    /// One more player present.
    pub fn arrive(&self) {
        let now = self.present.fetch_add(1, Ordering::Relaxed) + 1;
        self.peak.fetch_max(now, Ordering::Relaxed);
    }

    /// One player fewer.
    pub fn leave(&self) {
        self.present.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Everything the players share.
pub struct Sim {
    /// The latencies.
    pub rec: Recorder,
    /// The services.
    pub front: Front,
    /// How players behave.
    pub behaviour: Behaviour,
    /// What they do.
    pub activities: Shares<Activity>,
    /// How they sign in.
    pub sign_ins: Shares<SignIn>,
    /// The population.
    pub counters: Counters,
    /// The run's tag (device ids, usernames).
    pub tag: String,
    /// Room → (seat, scheduled instant) of the last play a simulated player sent there:
    /// the opponent measures its `card_played` from that instant.
    pub last_play: Mutex<HashMap<String, (u32, Instant)>>,
    /// Match id → human seats, of every match whose end a player saw, with when.
    pub ended: Mutex<HashMap<String, (u32, Instant)>>,
    /// Rooms a friend may watch.
    pub watchable: Mutex<Vec<Watchable>>,
    /// Devices of guests who left (a returning guest signs in with one).
    pub devices: Mutex<Vec<String>>,
    /// Username and password of accounts registered in the run.
    pub accounts: Mutex<Vec<(String, String)>>,
}

/// Locks, ignoring poisoning (a panicked player does not stop the run).
pub fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

/// Sleeps until `at` (a scheduled instant).
pub async fn sleep_until(at: Instant) {
    tokio::time::sleep_until(tokio::time::Instant::from_std(at)).await;
}
