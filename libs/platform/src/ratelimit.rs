//! An in-process rate limiter keyed by string (an account, a client address), on
//! `governor`'s GCRA (a token bucket without a timer). In-process is enough for these
//! limits: they only need to slow a guesser or a flood down, and each replica enforcing
//! its own share still does that.

use std::num::NonZeroU32;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use governor::Quota;
use governor::clock::{Clock, DefaultClock};
use governor::middleware::NoOpMiddleware;
use governor::state::keyed::DefaultKeyedStateStore;

/// Below this many keys the map is never pruned: pruning a small map costs more than
/// it saves.
const MIN_PRUNE_LEN: usize = 1024;

type Keyed<C> = governor::RateLimiter<
    String,
    DefaultKeyedStateStore<String>,
    C,
    NoOpMiddleware<<C as Clock>::Instant>,
>;

/// Up to `max` calls per key at once, refilled at `max` per `per`. Thread-safe.
/// Memory stays bounded by the keys active within one `per`: keys whose bucket has
/// refilled are pruned as the map grows.
pub struct RateLimiter<C: Clock = DefaultClock> {
    limiter: Keyed<C>,
    clock: C,
    /// Prune when the map reaches this size (doubles with the live set, so pruning
    /// costs O(1) per call amortized).
    prune_at: AtomicUsize,
}

impl<C: Clock + Clone> std::fmt::Debug for RateLimiter<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RateLimiter")
            .field("tracked_keys", &self.tracked_keys())
            .finish_non_exhaustive()
    }
}

impl RateLimiter {
    /// A limiter allowing `max` calls per key per `per` (bursts of up to `max`). `max`
    /// is at least 1 and `per` at least a millisecond.
    pub fn new(max: u32, per: Duration) -> RateLimiter {
        RateLimiter::with_clock(max, per, DefaultClock::default())
    }
}

impl<C: Clock + Clone> RateLimiter<C> {
    /// [`RateLimiter::new`] on `clock` (tests use a fake one).
    pub fn with_clock(max: u32, per: Duration, clock: C) -> RateLimiter<C> {
        let burst = NonZeroU32::new(max.max(1)).unwrap_or(NonZeroU32::MIN);
        let per = per.max(Duration::from_millis(1));
        let quota = Quota::with_period(per / burst.get())
            .unwrap_or_else(|| Quota::per_second(burst))
            .allow_burst(burst);
        RateLimiter {
            limiter: governor::RateLimiter::new(
                quota,
                DefaultKeyedStateStore::default(),
                clock.clone(),
            ),
            clock,
            prune_at: AtomicUsize::new(MIN_PRUNE_LEN),
        }
    }

    /// Takes one call from `key`'s allowance: `Ok` if allowed, else `Err` with how long
    /// until the next call would be.
    pub fn check(&self, key: &str) -> Result<(), Duration> {
        self.prune_if_large();
        self.limiter
            .check_key(&key.to_owned())
            .map_err(|not_until| not_until.wait_time_from(self.clock.now()))
    }

    /// Forgets keys whose bucket is full again: they behave exactly like keys never
    /// seen, so forgetting them changes no answer.
    fn prune_if_large(&self) {
        let len = self.limiter.len();
        if len >= self.prune_at.load(Ordering::Relaxed) {
            self.limiter.retain_recent();
            let live = self.limiter.len();
            self.prune_at
                .store((live * 2).max(MIN_PRUNE_LEN), Ordering::Relaxed);
        }
    }

    /// How many keys are tracked (for tests and metrics).
    pub fn tracked_keys(&self) -> usize {
        self.limiter.len()
    }
}

#[cfg(test)]
mod tests {
    use governor::clock::FakeRelativeClock;

    use super::*;

    fn fake(max: u32, per: Duration) -> (RateLimiter<FakeRelativeClock>, FakeRelativeClock) {
        let clock = FakeRelativeClock::default();
        (RateLimiter::with_clock(max, per, clock.clone()), clock)
    }

    #[test]
    fn allows_a_burst_of_max_then_refuses_with_the_wait() {
        let (limiter, _clock) = fake(3, Duration::from_secs(60));
        for _ in 0..3 {
            assert_eq!(limiter.check("alice"), Ok(()));
        }
        let wait = limiter.check("alice").unwrap_err();
        // One call comes back every 20 s.
        assert!(
            wait > Duration::from_secs(19) && wait <= Duration::from_secs(20),
            "{wait:?}"
        );
        // Keys are independent.
        assert_eq!(limiter.check("bob"), Ok(()));
    }

    #[test]
    fn refills_over_time() {
        let (limiter, clock) = fake(2, Duration::from_secs(10));
        assert!(limiter.check("k").is_ok());
        assert!(limiter.check("k").is_ok());
        assert!(limiter.check("k").is_err());
        // After 5 s one call (of 2 per 10 s) is back, not two.
        clock.advance(Duration::from_secs(5));
        assert!(limiter.check("k").is_ok());
        assert!(limiter.check("k").is_err());
        // A long pause refills to max, never beyond.
        clock.advance(Duration::from_secs(3600));
        assert!(limiter.check("k").is_ok());
        assert!(limiter.check("k").is_ok());
        assert!(limiter.check("k").is_err());
    }

    #[test]
    fn idle_keys_are_pruned_and_active_ones_kept() {
        let (limiter, clock) = fake(1, Duration::from_secs(1));
        for i in 0..MIN_PRUNE_LEN {
            limiter.check(&format!("old-{i}")).unwrap();
        }
        assert_eq!(limiter.tracked_keys(), MIN_PRUNE_LEN);
        // Two seconds on, every old bucket is full again: the next call prunes them
        // all, and only the new key remains.
        clock.advance(Duration::from_secs(2));
        limiter.check("new").unwrap();
        assert_eq!(limiter.tracked_keys(), 1);
        // The active key is still limited.
        assert!(limiter.check("new").is_err());
    }

    #[test]
    fn is_shared_across_threads() {
        let limiter = std::sync::Arc::new(RateLimiter::new(100, Duration::from_secs(3600)));
        let allowed: usize = (0..4)
            .map(|_| {
                let limiter = limiter.clone();
                std::thread::spawn(move || (0..50).filter(|_| limiter.check("ip").is_ok()).count())
            })
            .collect::<Vec<_>>()
            .into_iter()
            .map(|handle| handle.join().unwrap())
            .sum();
        assert_eq!(allowed, 100);
    }
}
