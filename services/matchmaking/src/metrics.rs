//! In-process metrics — queue length, time to match, matches per second —
//! rendered as Prometheus text and served on `GET /metrics` by
//! [`serve_metrics`] (plain HTTP/1.1 on its own port, `[metrics] listen`).
//! The recent waits per format also give searches their estimated wait
//! ([`Metrics::estimated_wait`]).

use std::{
    collections::{BTreeMap, HashMap, VecDeque},
    fmt::Write as _,
    sync::{
        Mutex,
        atomic::{AtomicU64, Ordering},
    },
};

use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::TcpListener,
};
use tokio_util::sync::CancellationToken;

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

/// The registry. Shared by `Arc`; every update is a relaxed atomic or a
/// short lock.
#[derive(Debug, Default)]
pub struct Metrics {
    queue: Mutex<BTreeMap<String, u64>>,
    matches: AtomicU64,
    bot_matches: AtomicU64,
    room_failures: AtomicU64,
    tickets: AtomicU64,
    expired: AtomicU64,
    wait_buckets: [AtomicU64; WAIT_BUCKETS.len()],
    wait_count: AtomicU64,
    wait_sum_ms: AtomicU64,
    /// Recent waits per format: (matched at, waited), oldest first.
    recent: Mutex<HashMap<String, VecDeque<(Millis, Millis)>>>,
    /// f64 bits: matches per second over the last sweep interval.
    rate_bits: AtomicU64,
}

impl Metrics {
    /// An empty registry.
    pub fn new() -> Metrics {
        Metrics::default()
    }

    /// The queue lengths per format, as last measured.
    pub fn set_queue(&self, lengths: impl IntoIterator<Item = (String, u64)>) {
        *self.queue.lock().unwrap_or_else(|p| p.into_inner()) = lengths.into_iter().collect();
    }

    /// Tickets waiting, all formats.
    pub fn queue_length(&self) -> u64 {
        self.queue
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .values()
            .sum()
    }

    /// A room was made for a group (`with_bots`: bots filled seats).
    pub fn matched(&self, with_bots: bool) {
        self.matches.fetch_add(1, Ordering::Relaxed);
        if with_bots {
            self.bot_matches.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Matches so far.
    pub fn matches(&self) -> u64 {
        self.matches.load(Ordering::Relaxed)
    }

    /// game-session could not create a group's room.
    pub fn room_failed(&self) {
        self.room_failures.fetch_add(1, Ordering::Relaxed);
    }

    /// A search started.
    pub fn ticket(&self) {
        self.tickets.fetch_add(1, Ordering::Relaxed);
    }

    /// Queued tickets dropped by expiry.
    pub fn expired(&self, n: u64) {
        self.expired.fetch_add(n, Ordering::Relaxed);
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
        let ms = waited_ms.max(0) as u64;
        let seconds = ms as f64 / 1000.0;
        for (bucket, bound) in self.wait_buckets.iter().zip(WAIT_BUCKETS) {
            if seconds <= bound {
                bucket.fetch_add(1, Ordering::Relaxed);
            }
        }
        self.wait_count.fetch_add(1, Ordering::Relaxed);
        self.wait_sum_ms.fetch_add(ms, Ordering::Relaxed);
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
        self.rate_bits
            .store(per_second.to_bits(), Ordering::Relaxed);
    }

    /// The Prometheus text exposition.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let queue = self.queue.lock().unwrap_or_else(|p| p.into_inner()).clone();
        out.push_str("# HELP matchmaking_queue_length Tickets waiting, per format.\n");
        out.push_str("# TYPE matchmaking_queue_length gauge\n");
        for (format, n) in &queue {
            let _ = writeln!(out, "matchmaking_queue_length{{format=\"{format}\"}} {n}");
        }
        let counters = [
            (
                "matchmaking_matches_total",
                "Rooms made from the queue.",
                &self.matches,
            ),
            (
                "matchmaking_bot_matches_total",
                "Rooms made with bots.",
                &self.bot_matches,
            ),
            (
                "matchmaking_room_failures_total",
                "Groups whose room game-session could not create.",
                &self.room_failures,
            ),
            (
                "matchmaking_tickets_total",
                "Searches started.",
                &self.tickets,
            ),
            (
                "matchmaking_expired_total",
                "Queued tickets dropped by expiry.",
                &self.expired,
            ),
        ];
        for (name, help, value) in counters {
            let _ = writeln!(
                out,
                "# HELP {name} {help}\n# TYPE {name} counter\n{name} {}",
                value.load(Ordering::Relaxed)
            );
        }
        let rate = f64::from_bits(self.rate_bits.load(Ordering::Relaxed));
        let _ = writeln!(
            out,
            "# HELP matchmaking_matches_per_second Matches per second, recent.\n# TYPE matchmaking_matches_per_second gauge\nmatchmaking_matches_per_second {rate}"
        );
        out.push_str("# HELP matchmaking_wait_seconds Time from queueing to matched.\n");
        out.push_str("# TYPE matchmaking_wait_seconds histogram\n");
        for (bucket, bound) in self.wait_buckets.iter().zip(WAIT_BUCKETS) {
            let _ = writeln!(
                out,
                "matchmaking_wait_seconds_bucket{{le=\"{bound}\"}} {}",
                bucket.load(Ordering::Relaxed)
            );
        }
        let count = self.wait_count.load(Ordering::Relaxed);
        let _ = writeln!(
            out,
            "matchmaking_wait_seconds_bucket{{le=\"+Inf\"}} {count}"
        );
        let _ = writeln!(
            out,
            "matchmaking_wait_seconds_sum {}",
            self.wait_sum_ms.load(Ordering::Relaxed) as f64 / 1000.0
        );
        let _ = writeln!(out, "matchmaking_wait_seconds_count {count}");
        out
    }
}

/// Serves `metrics.render()` to every HTTP request on `listener` until
/// `shutdown`. Deliberately tiny: one request per connection, no routing.
pub async fn serve_metrics(
    listener: TcpListener,
    metrics: std::sync::Arc<Metrics>,
    shutdown: CancellationToken,
) {
    loop {
        let accepted = tokio::select! {
            () = shutdown.cancelled() => return,
            accepted = listener.accept() => accepted,
        };
        let Ok((mut socket, _)) = accepted else {
            continue;
        };
        let metrics = metrics.clone();
        tokio::spawn(async move {
            let mut buf = [0u8; 1024];
            // The request itself does not matter; read what came.
            let _ = socket.read(&mut buf).await;
            let body = metrics.render();
            let response = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: text/plain; version=0.0.4\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = socket.write_all(response.as_bytes()).await;
            let _ = socket.shutdown().await;
        });
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
        assert!(m.render().contains("matchmaking_wait_seconds_count 385"));
    }
}
