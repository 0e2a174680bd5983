//! An in-process rate limiter for login attempts, per account and per peer
//! address. In-process is enough for these: the limits only need to slow a
//! guesser down, and each replica enforcing its own share still does that.

use std::{
    collections::HashMap,
    sync::Mutex,
    time::{Duration, Instant},
};

/// Below this many keys the map is never pruned: pruning a small map costs
/// more than it saves.
const MIN_PRUNE_LEN: usize = 1024;

/// A token bucket per key: up to `max` calls at once, refilled at `max` per
/// `per`. Thread-safe. Memory stays bounded by the keys active within one
/// `per`: idle keys (whose bucket has refilled) are pruned as the map grows.
#[derive(Debug)]
pub struct RateLimiter {
    max: f64,
    /// Tokens regained per second.
    refill_per_second: f64,
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    buckets: HashMap<String, Bucket>,
    /// Prune when the map reaches this size (doubles with the live set, so
    /// pruning costs O(1) per call amortized).
    prune_at: usize,
}

#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    updated: Instant,
}

impl RateLimiter {
    /// A limiter allowing `max` calls per key per `per` (bursts of up to
    /// `max`). `max` is at least 1 and `per` at least a millisecond.
    pub fn new(max: u32, per: Duration) -> Self {
        let max = f64::from(max.max(1));
        let per = per.max(Duration::from_millis(1));
        RateLimiter {
            max,
            refill_per_second: max / per.as_secs_f64(),
            state: Mutex::new(State {
                buckets: HashMap::new(),
                prune_at: MIN_PRUNE_LEN,
            }),
        }
    }

    /// Takes one call from `key`'s allowance: `Ok` if allowed, else `Err`
    /// with how long until the next call would be.
    pub fn check(&self, key: &str) -> Result<(), Duration> {
        self.check_at(key, Instant::now())
    }

    fn check_at(&self, key: &str, now: Instant) -> Result<(), Duration> {
        // A poisoned lock only means another thread panicked mid-update of
        // plain numbers: the state is still usable.
        let mut state = self
            .state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if state.buckets.len() >= state.prune_at {
            self.prune(&mut state, now);
        }
        let bucket = match state.buckets.get_mut(key) {
            Some(bucket) => bucket,
            None => state.buckets.entry(key.to_owned()).or_insert(Bucket {
                tokens: self.max,
                updated: now,
            }),
        };
        let elapsed = now.saturating_duration_since(bucket.updated).as_secs_f64();
        bucket.tokens = (bucket.tokens + elapsed * self.refill_per_second).min(self.max);
        bucket.updated = now;
        if bucket.tokens >= 1.0 {
            bucket.tokens -= 1.0;
            Ok(())
        } else {
            let wait = (1.0 - bucket.tokens) / self.refill_per_second;
            Err(Duration::from_secs_f64(wait))
        }
    }

    /// Forgets keys whose bucket would be full by now: they behave exactly
    /// like keys never seen, so forgetting them changes no answer.
    fn prune(&self, state: &mut State, now: Instant) {
        let (max, rate) = (self.max, self.refill_per_second);
        state.buckets.retain(|_, bucket| {
            let elapsed = now.saturating_duration_since(bucket.updated).as_secs_f64();
            bucket.tokens + elapsed * rate < max
        });
        state.prune_at = (state.buckets.len() * 2).max(MIN_PRUNE_LEN);
    }

    /// How many keys are tracked (for tests and metrics).
    pub fn tracked_keys(&self) -> usize {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .buckets
            .len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allows_a_burst_of_max_then_refuses_with_the_wait() {
        let limiter = RateLimiter::new(3, Duration::from_secs(60));
        let now = Instant::now();
        for _ in 0..3 {
            assert_eq!(limiter.check_at("alice", now), Ok(()));
        }
        let wait = limiter.check_at("alice", now).unwrap_err();
        // One token comes back every 20 s.
        assert!(
            wait > Duration::from_secs(19) && wait <= Duration::from_secs(20),
            "{wait:?}"
        );
        // Keys are independent.
        assert_eq!(limiter.check_at("bob", now), Ok(()));
    }

    #[test]
    fn refills_over_time() {
        let limiter = RateLimiter::new(2, Duration::from_secs(10));
        let start = Instant::now();
        assert!(limiter.check_at("k", start).is_ok());
        assert!(limiter.check_at("k", start).is_ok());
        assert!(limiter.check_at("k", start).is_err());
        // After 5 s one token (of 2 per 10 s) is back, not two.
        let later = start + Duration::from_secs(5);
        assert!(limiter.check_at("k", later).is_ok());
        assert!(limiter.check_at("k", later).is_err());
        // A long pause refills to max, never beyond.
        let much_later = later + Duration::from_secs(3600);
        assert!(limiter.check_at("k", much_later).is_ok());
        assert!(limiter.check_at("k", much_later).is_ok());
        assert!(limiter.check_at("k", much_later).is_err());
    }

    #[test]
    fn idle_keys_are_pruned_and_active_ones_kept() {
        let limiter = RateLimiter::new(1, Duration::from_secs(1));
        let start = Instant::now();
        for i in 0..MIN_PRUNE_LEN {
            limiter.check_at(&format!("old-{i}"), start).unwrap();
        }
        assert_eq!(limiter.tracked_keys(), MIN_PRUNE_LEN);
        // Two seconds on, every old bucket is full again: the next call
        // prunes them all, and only the new key remains.
        let later = start + Duration::from_secs(2);
        limiter.check_at("new", later).unwrap();
        assert_eq!(limiter.tracked_keys(), 1);
        // The active key is still limited.
        assert!(limiter.check_at("new", later).is_err());
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
