//! When simulated players arrive, how long they stay and how long they think: the open
//! loop. Arrivals are a Poisson process (exponential gaps at a stated rate) fixed in
//! advance by the random draws alone, never by how fast the services answer, so a slow
//! system meets the same arrivals as a fast one (no coordinated omission). By Little's
//! law the mean number of players present is the rate times the mean session length.

use std::time::Duration;

/// An exponential draw of mean `mean` from `u`, uniform in (0, 1].
pub fn exponential(mean: Duration, u: f64) -> Duration {
    let u = u.clamp(f64::MIN_POSITIVE, 1.0);
    mean.mul_f64(-u.ln())
}

/// The arrival instants of a Poisson process, as offsets from the start of the run.
#[derive(Debug, Clone)]
pub struct Arrivals {
    mean_gap: Duration,
    last: Duration,
}

impl Arrivals {
    /// Arrivals at `per_second` a second on average.
    pub fn new(per_second: f64) -> Arrivals {
        Arrivals {
            mean_gap: Duration::from_secs_f64(1.0 / per_second.max(1e-9)),
            last: Duration::ZERO,
        }
    }

    /// The rate that keeps `players` present on average when each stays `session` on
    /// average (Little's law: present = rate × stay).
    pub fn for_population(players: f64, session: Duration) -> Arrivals {
        Arrivals::new(players / session.as_secs_f64().max(1e-9))
    }

    /// The next arrival's offset, from `u` uniform in (0, 1].
    pub fn next(&mut self, u: f64) -> Duration {
        self.last += exponential(self.mean_gap, u);
        self.last
    }
}

/// A range of durations drawn uniformly: a human's think time before a play.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Range {
    /// The shortest.
    pub low: Duration,
    /// The longest.
    pub high: Duration,
}

impl Range {
    /// Parses `2000-8000` (milliseconds) or `500` (always 500 ms).
    pub fn parse_ms(text: &str) -> anyhow::Result<Range> {
        let number = |s: &str| -> anyhow::Result<u64> {
            s.trim()
                .parse()
                .map_err(|_| anyhow::anyhow!("{text}: not LOW-HIGH milliseconds"))
        };
        let (low, high) = match text.split_once('-') {
            Some((low, high)) => (number(low)?, number(high)?),
            None => (number(text)?, number(text)?),
        };
        anyhow::ensure!(low <= high, "{text}: the low end is above the high end");
        Ok(Range {
            low: Duration::from_millis(low),
            high: Duration::from_millis(high),
        })
    }

    /// A draw from `u` uniform in [0, 1).
    pub fn pick(&self, u: f64) -> Duration {
        self.low + (self.high - self.low).mul_f64(u.clamp(0.0, 1.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng as _, SeedableRng as _};

    fn draws(n: usize) -> impl Iterator<Item = f64> {
        let mut rng = rand::rngs::StdRng::seed_from_u64(49);
        // (0, 1]: 1 - [0, 1).
        (0..n).map(move |_| 1.0 - rng.random::<f64>())
    }

    #[test]
    fn arrivals_come_at_the_stated_rate_and_only_ever_later() {
        let mut arrivals = Arrivals::new(50.0);
        let mut last = Duration::ZERO;
        let mut n = 0;
        for u in draws(100_000) {
            let at = arrivals.next(u);
            assert!(at >= last);
            last = at;
            n += 1;
        }
        // 100,000 arrivals at 50/s take 2,000 s, within 1 %.
        let rate = f64::from(n) / last.as_secs_f64();
        assert!((rate - 50.0).abs() < 0.5, "{rate}");
    }

    #[test]
    fn arrivals_are_poisson_not_evenly_spaced() {
        // Counts per one-second window of a Poisson process have variance equal to their
        // mean (index of dispersion 1); an evenly spaced schedule has variance 0.
        let mut arrivals = Arrivals::new(20.0);
        let mut counts = vec![0u32; 2_000];
        for u in draws(60_000) {
            let second = arrivals.next(u).as_secs() as usize;
            if second < counts.len() {
                counts[second] += 1;
            }
        }
        let mean = counts.iter().map(|&c| f64::from(c)).sum::<f64>() / counts.len() as f64;
        let variance = counts
            .iter()
            .map(|&c| (f64::from(c) - mean).powi(2))
            .sum::<f64>()
            / counts.len() as f64;
        assert!((mean - 20.0).abs() < 0.5, "{mean}");
        let dispersion = variance / mean;
        assert!((0.9..1.1).contains(&dispersion), "{dispersion}");
    }

    #[test]
    fn population_follows_littles_law() {
        // 1,000 players staying 5 minutes on average: 1,000 / 300 s arrive a second.
        let mut arrivals = Arrivals::for_population(1_000.0, Duration::from_secs(300));
        let mut last = Duration::ZERO;
        for u in draws(30_000) {
            last = arrivals.next(u);
        }
        let rate = 30_000.0 / last.as_secs_f64();
        assert!((rate - 1_000.0 / 300.0).abs() < 0.1, "{rate}");
        let stays: Vec<Duration> = draws(100_000)
            .map(|u| exponential(Duration::from_secs(300), u))
            .collect();
        let mean = stays.iter().map(Duration::as_secs_f64).sum::<f64>() / stays.len() as f64;
        assert!((mean - 300.0).abs() < 6.0, "{mean}");
        // Even the unluckiest draw is finite.
        assert!(exponential(Duration::from_secs(1), 0.0) < Duration::from_secs(1_000));
    }

    #[test]
    fn think_time_ranges() {
        let range = Range::parse_ms("2000-8000").unwrap();
        assert_eq!(range.pick(0.0), Duration::from_secs(2));
        assert_eq!(range.pick(0.5), Duration::from_secs(5));
        assert_eq!(range.pick(1.0), Duration::from_secs(8));
        assert_eq!(
            Range::parse_ms("300").unwrap().pick(0.7),
            Duration::from_millis(300)
        );
        assert!(Range::parse_ms("8-2").is_err());
        assert!(Range::parse_ms("a-2").is_err());
    }
}
