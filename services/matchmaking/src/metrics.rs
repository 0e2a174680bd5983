//! Queue length, time to match and matches per second, registered in a
//! `prometheus-client` registry (names `basra_matchmaking_…`) that
//! `basra_platform::metrics` serves on `GET /metrics` (`[metrics] listen`).
//! The recent waits per format also give searches their estimated wait
//! ([`Metrics::estimated_wait`]).

use std::{
    collections::{HashMap, VecDeque},
    sync::{Arc, Mutex, atomic::AtomicU64},
};

use prometheus_client::{
    encoding::EncodeLabelSet,
    metrics::{counter::Counter, family::Family, gauge::Gauge, histogram::Histogram},
    registry::Registry,
};

use crate::clock::Millis;

/// Waits remembered per format for the estimate (the newest).
const RECENT_WAITS: usize = 256;
/// Waits older than this (by the service clock) are not recent any more.
const RECENT_FOR_MS: Millis = 10 * 60 * 1000;
/// Fewer recent waits than this give no estimate.
const MIN_WAITS_FOR_ESTIMATE: usize = 3;

/// Upper bounds (seconds) of the time-to-match histogram buckets.
const WAIT_BUCKETS: [f64; 12] = [
    0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0, 300.0,
];

/// The `format` label: a queue (`Format::key`, e.g. `r.2.101`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct FormatLabel {
    format: String,
}

/// The matchmaker's metrics. Shared by `Arc`; every update is an atomic or a
/// short lock.
#[derive(Debug)]
pub struct Metrics {
    registry: Arc<Registry>,
    queue: Family<FormatLabel, Gauge>,
    /// Tickets waiting in every format: served from the start, as is each offered
    /// format's series ([`Metrics::offer_formats`]).
    waiting: Gauge,
    /// The formats last reported, to zero the ones that emptied.
    queue_formats: Mutex<Vec<String>>,
    matches: Counter,
    bot_matches: Counter,
    room_failures: Counter,
    tickets: Counter,
    expired: Counter,
    wait: Histogram,
    /// Recent waits per format: (matched at, waited), oldest first.
    recent: Mutex<HashMap<String, VecDeque<(Millis, Millis)>>>,
    /// f64 bits: matches per second over the last sweep interval.
    rate: Gauge<f64, AtomicU64>,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}

impl Metrics {
    /// The metrics, registered in a registry of their own ([`Metrics::registry`]).
    pub fn new() -> Metrics {
        let queue = Family::<FormatLabel, Gauge>::default();
        let (matches, bot_matches, room_failures, tickets, expired) = Default::default();
        let wait = Histogram::new(WAIT_BUCKETS);
        let rate = Gauge::<f64, AtomicU64>::default();
        let mut registry = Registry::with_prefix("basra_matchmaking");
        registry.register("queue_length", "Tickets waiting, per format", queue.clone());
        let waiting = Gauge::default();
        registry.register(
            "queue_waiting",
            "Tickets waiting, all formats",
            waiting.clone(),
        );
        registry.register(
            "matches",
            "Rooms made from the queue",
            Counter::clone(&matches),
        );
        registry.register(
            "bot_matches",
            "Rooms made with bots",
            Counter::clone(&bot_matches),
        );
        registry.register(
            "room_failures",
            "Groups whose room game-session could not create",
            Counter::clone(&room_failures),
        );
        registry.register("tickets", "Searches started", Counter::clone(&tickets));
        registry.register(
            "expired",
            "Queued tickets dropped by expiry",
            Counter::clone(&expired),
        );
        registry.register(
            "wait_seconds",
            "Time from queueing to matched",
            wait.clone(),
        );
        registry.register(
            "matches_per_second",
            "Matches per second, recent",
            rate.clone(),
        );
        Metrics {
            registry: Arc::new(registry),
            queue,
            waiting,
            queue_formats: Mutex::default(),
            matches,
            bot_matches,
            room_failures,
            tickets,
            expired,
            wait,
            recent: Mutex::default(),
            rate,
        }
    }

    /// The registry holding these metrics, to serve.
    pub fn registry(&self) -> Arc<Registry> {
        Arc::clone(&self.registry)
    }

    /// Serves each of `formats` (queue keys) at zero until a ticket of it waits: a
    /// dashboard then shows an empty queue as 0, not "No data".
    pub fn offer_formats(&self, formats: impl IntoIterator<Item = String>) {
        for format in formats {
            let _ = self.queue.get_or_create(&label(&format));
        }
    }

    /// The queue lengths per format, as last measured.
    pub fn set_queue(&self, lengths: impl IntoIterator<Item = (String, u64)>) {
        let mut formats = self.queue_formats.lock().unwrap_or_else(|p| p.into_inner());
        let lengths: Vec<(String, u64)> = lengths.into_iter().collect();
        for gone in formats.iter() {
            if !lengths.iter().any(|(format, _)| format == gone) {
                self.queue.get_or_create(&label(gone)).set(0);
            }
        }
        for (format, n) in &lengths {
            self.queue.get_or_create(&label(format)).set(*n as i64);
        }
        self.waiting
            .set(lengths.iter().map(|(_, n)| *n as i64).sum::<i64>());
        *formats = lengths.into_iter().map(|(format, _)| format).collect();
    }

    /// Tickets waiting, all formats.
    pub fn queue_length(&self) -> u64 {
        let formats = self.queue_formats.lock().unwrap_or_else(|p| p.into_inner());
        formats
            .iter()
            .map(|format| self.queue.get_or_create(&label(format)).get().max(0) as u64)
            .sum()
    }

    /// A room was made for a group (`with_bots`: bots filled seats).
    pub fn matched(&self, with_bots: bool) {
        self.matches.inc();
        if with_bots {
            self.bot_matches.inc();
        }
    }

    /// Matches so far.
    pub fn matches(&self) -> u64 {
        self.matches.get()
    }

    /// game-session could not create a group's room.
    pub fn room_failed(&self) {
        self.room_failures.inc();
    }

    /// A search started.
    pub fn ticket(&self) {
        self.tickets.inc();
    }

    /// Queued tickets dropped by expiry.
    pub fn expired(&self, n: u64) {
        self.expired.inc_by(n);
    }

    /// A player of queue `format` (a `Format::key`) was matched at `now_ms`
    /// after waiting `waited_ms`.
    pub fn observe_wait(&self, format: &str, now_ms: Millis, waited_ms: Millis) {
        {
            let mut recent = self.recent.lock().unwrap_or_else(|p| p.into_inner());
            let waits = recent.entry(format.to_owned()).or_default();
            if waits.len() >= RECENT_WAITS {
                waits.pop_front();
            }
            waits.push_back((now_ms, waited_ms.max(0)));
        }
        self.wait.observe(waited_ms.max(0) as f64 / 1000.0);
    }

    /// How much longer a search of queue `format` that has waited
    /// `waited_ms` is likely to wait, from the waits of the recent matches of
    /// that format (the last 256 within 10 minutes of `now_ms`): the median of those at least as long as `waited_ms`, minus
    /// `waited_ms`. `None` while too few recent matches waited that long.
    pub fn estimated_wait(
        &self,
        format: &str,
        now_ms: Millis,
        waited_ms: Millis,
    ) -> Option<Millis> {
        let waited_ms = waited_ms.max(0);
        let mut recent = self.recent.lock().unwrap_or_else(|p| p.into_inner());
        let waits = recent.get_mut(format)?;
        while waits
            .front()
            .is_some_and(|(at, _)| *at < now_ms - RECENT_FOR_MS)
        {
            waits.pop_front();
        }
        let mut longer: Vec<Millis> = waits
            .iter()
            .map(|(_, w)| *w)
            .filter(|w| *w >= waited_ms)
            .collect();
        if longer.len() < MIN_WAITS_FOR_ESTIMATE {
            return None;
        }
        longer.sort_unstable();
        Some(longer[longer.len() / 2] - waited_ms)
    }

    /// Sets the recent match rate.
    pub fn set_rate(&self, per_second: f64) {
        self.rate.set(per_second);
    }

    /// The OpenMetrics text of these metrics (what `GET /metrics` answers).
    pub fn render(&self) -> String {
        basra_platform::metrics::render(&self.registry)
    }
}

fn label(format: &str) -> FormatLabel {
    FormatLabel {
        format: format.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_estimate_is_the_median_recent_wait_still_to_come() {
        let m = Metrics::new();
        assert_eq!(m.estimated_wait("r.2.101", 0, 0), None);
        for waited in [1_000, 2_000, 3_000, 4_000, 100_000] {
            m.observe_wait("r.2.101", 50_000, waited);
        }
        m.observe_wait("u.2.101", 50_000, 60_000);
        // A new search: the median of all five.
        assert_eq!(m.estimated_wait("r.2.101", 50_000, 0), Some(3_000));
        // After 2.5 s, only 3, 4 and 100 s are still possible: 4 s - 2.5 s.
        assert_eq!(m.estimated_wait("r.2.101", 50_000, 2_500), Some(1_500));
        // Longer than all but one: too little to go on.
        assert_eq!(m.estimated_wait("r.2.101", 50_000, 5_000), None);
        // Formats are apart; old waits are forgotten.
        assert_eq!(m.estimated_wait("u.2.101", 50_000, 0), None);
        assert_eq!(
            m.estimated_wait("r.2.101", 50_000 + RECENT_FOR_MS + 1, 0),
            None
        );
    }

    #[test]
    fn only_the_newest_waits_count() {
        let m = Metrics::new();
        for _ in 0..RECENT_WAITS {
            m.observe_wait("u.4.51", 0, 90_000);
        }
        for _ in 0..RECENT_WAITS / 2 + 1 {
            m.observe_wait("u.4.51", 0, 10_000);
        }
        assert_eq!(m.estimated_wait("u.4.51", 0, 0), Some(10_000));
        assert!(
            m.render()
                .contains("basra_matchmaking_wait_seconds_count 385")
        );
    }
}
