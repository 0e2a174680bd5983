//! The latency accounting: every call and every awaited event is timed from the instant
//! it was *scheduled* (a player's arrival, the end of its think time), not from when the
//! simulator got round to sending it, so a stall anywhere (the services, the stores, the
//! simulator itself) shows in the figures instead of silently delaying the next call
//! (no coordinated omission). Only what was scheduled inside the measured window counts.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Instant;

/// One series: an RPC, a stream's first event, a play reaching the opponent, ...
#[derive(Debug, Default, Clone)]
pub struct Series {
    /// Latencies of the successes, in microseconds.
    pub micros: Vec<u32>,
    /// Failures by status code name (`Unavailable`, ...) or reason.
    pub errors: BTreeMap<String, u64>,
}

impl Series {
    /// Successes and failures.
    pub fn count(&self) -> u64 {
        self.micros.len() as u64 + self.errors.values().sum::<u64>()
    }

    /// Failures.
    pub fn failures(&self) -> u64 {
        self.errors.values().sum()
    }
}

/// The `q` quantile (0 to 1) of `sorted` by nearest rank; `None` when empty.
pub fn quantile(sorted: &[u32], q: f64) -> Option<u32> {
    if sorted.is_empty() {
        return None;
    }
    let rank = (q.clamp(0.0, 1.0) * sorted.len() as f64).ceil() as usize;
    Some(sorted[rank.clamp(1, sorted.len()) - 1])
}

/// The series of a run, by name, and the measured window.
#[derive(Debug)]
pub struct Recorder {
    window: Mutex<(Option<Instant>, Option<Instant>)>,
    series: Mutex<BTreeMap<String, Series>>,
}

impl Default for Recorder {
    fn default() -> Self {
        Recorder::new()
    }
}

impl Recorder {
    /// A recorder whose window is not open yet (nothing counts until [`Recorder::open`]).
    pub fn new() -> Recorder {
        Recorder {
            window: Mutex::new((None, None)),
            series: Mutex::new(BTreeMap::new()),
        }
    }

    /// Counts what is scheduled from `at` on (after the warm-up).
    pub fn open(&self, at: Instant) {
        self.window.lock().unwrap_or_else(|p| p.into_inner()).0 = Some(at);
    }

    /// Stops counting what is scheduled from `at` on.
    pub fn close(&self, at: Instant) {
        self.window.lock().unwrap_or_else(|p| p.into_inner()).1 = Some(at);
    }

    fn counts(&self, scheduled: Instant) -> bool {
        let (open, close) = *self.window.lock().unwrap_or_else(|p| p.into_inner());
        open.is_some_and(|open| scheduled >= open) && close.is_none_or(|close| scheduled < close)
    }

    /// Records in `name` what was scheduled at `scheduled` and ended at `done`: its
    /// latency if `outcome` is `Ok`, else a failure under the given reason. Returns how
    /// many failures of that reason the series now has (0 for a success or what is
    /// outside the window).
    pub fn record(
        &self,
        name: &str,
        scheduled: Instant,
        done: Instant,
        outcome: Result<(), String>,
    ) -> u64 {
        if !self.counts(scheduled) {
            return 0;
        }
        let mut series = self.series.lock().unwrap_or_else(|p| p.into_inner());
        let entry = series.entry(name.to_owned()).or_default();
        match outcome {
            Ok(()) => {
                let micros = done.saturating_duration_since(scheduled).as_micros();
                entry.micros.push(u32::try_from(micros).unwrap_or(u32::MAX));
                0
            }
            Err(reason) => {
                let count = entry.errors.entry(reason).or_insert(0);
                *count += 1;
                *count
            }
        }
    }

    /// [`Recorder::record`] of a gRPC result: a failure is named by its status code,
    /// and the first three of each are printed with their message.
    pub fn rpc<T>(&self, name: &str, scheduled: Instant, result: &Result<T, tonic::Status>) {
        let outcome = match result {
            Ok(_) => Ok(()),
            Err(status) => Err(format!("{:?}", status.code())),
        };
        if let Err(status) = result
            && (1..=3).contains(&self.record(name, scheduled, Instant::now(), outcome))
        {
            eprintln!(
                "capacity: {name}: {:?}: {}",
                status.code(),
                status.message()
            );
        } else if result.is_ok() {
            self.record(name, scheduled, Instant::now(), Ok(()));
        }
    }

    /// Every series, each with its latencies sorted.
    pub fn snapshot(&self) -> BTreeMap<String, Series> {
        let mut series = self
            .series
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        for s in series.values_mut() {
            s.micros.sort_unstable();
        }
        series
    }
}

/// `micros` as milliseconds for a table (`-` for none).
pub fn ms(micros: Option<u32>) -> String {
    match micros {
        Some(m) => format!("{:.1}", f64::from(m) / 1000.0),
        None => "-".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn latency_runs_from_the_scheduled_instant() {
        let recorder = Recorder::new();
        let start = Instant::now();
        recorder.open(start);
        // Scheduled at start + 10 ms; the simulator only sent it at + 40 ms (it was busy)
        // and the answer came at + 45 ms: the player waited 35 ms, not 5.
        let scheduled = start + Duration::from_millis(10);
        recorder.record(
            "GuestLogin",
            scheduled,
            start + Duration::from_millis(45),
            Ok(()),
        );
        let series = &recorder.snapshot()["GuestLogin"];
        assert_eq!(series.micros, vec![35_000]);
    }

    #[test]
    fn only_the_window_counts_and_failures_by_status() {
        let recorder = Recorder::new();
        let t0 = Instant::now();
        let at = |ms| t0 + Duration::from_millis(ms);
        // Before the window opens: warm-up, not counted.
        recorder.record("x", at(0), at(1), Ok(()));
        recorder.open(at(100));
        recorder.record("x", at(99), at(200), Ok(()));
        recorder.record("x", at(100), at(101), Ok(()));
        recorder.rpc::<()>("x", at(150), &Err(tonic::Status::unavailable("down")));
        recorder.rpc::<()>("x", at(160), &Err(tonic::Status::unavailable("down")));
        recorder.rpc::<()>("x", at(170), &Err(tonic::Status::internal("bug")));
        recorder.close(at(500));
        // Scheduled after the close: not counted even though it ends later.
        recorder.record("x", at(500), at(501), Ok(()));
        let series = &recorder.snapshot()["x"];
        assert_eq!(series.micros, vec![1_000]);
        assert_eq!(series.errors["Unavailable"], 2);
        assert_eq!(series.errors["Internal"], 1);
        assert_eq!(series.count(), 4);
        assert_eq!(series.failures(), 3);
    }

    #[test]
    fn quantiles_by_nearest_rank() {
        let sorted: Vec<u32> = (1..=1000).collect();
        assert_eq!(quantile(&sorted, 0.5), Some(500));
        assert_eq!(quantile(&sorted, 0.99), Some(990));
        assert_eq!(quantile(&sorted, 0.999), Some(999));
        assert_eq!(quantile(&sorted, 1.0), Some(1000));
        assert_eq!(quantile(&sorted, 0.0), Some(1));
        assert_eq!(quantile(&[], 0.5), None);
        // One slow call in a thousand is the p99.9, not hidden by the median.
        let mut spiky = vec![1_000u32; 999];
        spiky.push(2_000_000);
        spiky.sort_unstable();
        assert_eq!(quantile(&spiky, 0.99), Some(1_000));
        assert_eq!(quantile(&spiky, 1.0), Some(2_000_000));
        assert_eq!(ms(quantile(&spiky, 0.5)), "1.0");
    }
}
