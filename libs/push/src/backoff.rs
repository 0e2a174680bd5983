//! The delay before retrying a push answered [`Outcome::RetryLater`](crate::Outcome):
//! exponential with jitter (`backon`), and never sooner than the provider asked.

use std::time::Duration;

use backon::{BackoffBuilder, ExponentialBuilder};

/// Exponential backoff: `first` after the first failure, doubling up to `max`, each delay
/// stretched by a random factor in [1, 2) so that pushes failed together do not return
/// together.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    /// The delay before the first retry (before jitter).
    pub first: Duration,
    /// The longest delay (before jitter).
    pub max: Duration,
}

impl Default for Backoff {
    /// 1 s, doubling up to 5 minutes.
    fn default() -> Backoff {
        Backoff {
            first: Duration::from_secs(1),
            max: Duration::from_secs(300),
        }
    }
}

impl Backoff {
    /// The delay before retry number `attempt + 1` (`attempt` 0: after the first failure),
    /// at least `retry_after` (the provider's `Retry-After`, from
    /// [`Outcome::RetryLater`](crate::Outcome)).
    pub fn delay(&self, attempt: u32, retry_after: Option<Duration>) -> Duration {
        // Past 32 doublings every delay is `max` anyway.
        let steps = attempt.min(32) as usize;
        let computed = ExponentialBuilder::new()
            .with_min_delay(self.first)
            .with_max_delay(self.max)
            .with_factor(2.0)
            .with_jitter()
            .without_max_times()
            .build()
            .nth(steps)
            .unwrap_or(self.max);
        computed.max(retry_after.unwrap_or_default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_with_jitter_up_to_the_cap() {
        let backoff = Backoff {
            first: Duration::from_secs(1),
            max: Duration::from_secs(8),
        };
        for _ in 0..50 {
            for (attempt, base) in [(0, 1), (1, 2), (2, 4), (3, 8), (4, 8), (40, 8)] {
                let delay = backoff.delay(attempt, None);
                let base = Duration::from_secs(base);
                assert!(
                    delay >= base && delay < base * 2,
                    "attempt {attempt}: {delay:?} not in [{base:?}, 2×)"
                );
            }
        }
    }

    #[test]
    fn never_sooner_than_retry_after() {
        let backoff = Backoff::default();
        let asked = Duration::from_secs(120);
        assert_eq!(backoff.delay(0, Some(asked)), asked);
        assert!(backoff.delay(0, Some(Duration::from_millis(1))) >= Duration::from_secs(1));
    }
}
