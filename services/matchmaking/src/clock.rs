//! Time, injectable: the rating window widens with waiting time, and tests
//! move time forward instead of sleeping.

use std::sync::{
    Arc,
    atomic::{AtomicI64, Ordering},
};

/// Milliseconds since the Unix epoch.
pub type Millis = i64;

/// A source of the current time. Every replica of one queue must agree on
/// time to within a fraction of a second (NTP), since tickets store the time
/// they were queued.
pub trait Clock: Send + Sync + 'static {
    /// Now, in milliseconds since the Unix epoch.
    fn now_ms(&self) -> Millis;
}

/// The wall clock (the running service; tests use a manual clock).
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> Millis {
        chrono_like_now()
    }
}

fn chrono_like_now() -> Millis {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as Millis)
        .unwrap_or(0)
}

/// A clock that moves only when told to (tests, benchmarks). Clones share
/// the same time.
#[derive(Debug, Clone)]
pub struct ManualClock {
    now: Arc<AtomicI64>,
}

impl ManualClock {
    /// A clock showing `start`.
    pub fn new(start: Millis) -> ManualClock {
        ManualClock {
            now: Arc::new(AtomicI64::new(start)),
        }
    }

    /// Moves the clock forward by `ms`.
    pub fn advance(&self, ms: Millis) {
        self.now.fetch_add(ms, Ordering::SeqCst);
    }

    /// Sets the clock to `ms`.
    pub fn set(&self, ms: Millis) {
        self.now.store(ms, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> Millis {
        self.now.load(Ordering::SeqCst)
    }
}
