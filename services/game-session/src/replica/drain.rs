//! Draining a replica, and taking it back: `GameAdminService.DrainReplica` asks the open
//! streams to resume elsewhere by a deadline and refuses new streams and rooms;
//! `UndrainReplica` ends that, for the streams and rooms that come next. While draining,
//! gRPC health reports the game's services NOT_SERVING (a Kubernetes readiness probe
//! then takes the pod out of its Service); the replica's liveness (`""`) stays SERVING.
//! Stopping the replica drains it for good.

use std::sync::Mutex;

use prometheus_client::metrics::gauge::Gauge;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

/// The replica's drain state.
#[derive(Debug)]
pub struct Drain {
    /// The token streams wait on, cancelled while draining (a child of `shutdown`, replaced
    /// by a fresh one when the drain ends), and the drain's deadline (Unix ms) once an
    /// operator set one. One lock: the two change together.
    state: Mutex<(CancellationToken, Option<i64>)>,
    /// Whether new streams and rooms are welcome (health's SERVING).
    ready: watch::Sender<bool>,
    /// The replica's own stop.
    shutdown: CancellationToken,
    /// 1 while draining (`basra_game_draining`).
    gauge: Gauge,
}

impl Drain {
    /// Not draining; stopping (`shutdown`) drains.
    pub fn new(shutdown: CancellationToken, gauge: Gauge) -> Drain {
        Drain {
            state: Mutex::new((shutdown.child_token(), None)),
            ready: watch::channel(true).0,
            shutdown,
            gauge,
        }
    }

    /// The token a stream waits on: cancelled when a drain starts or the replica stops.
    /// A stream takes it once, when it starts.
    pub fn token(&self) -> CancellationToken {
        self.state.lock().expect("drain lock").0.clone()
    }

    /// Whether the replica is draining (or stopping).
    pub fn is_draining(&self) -> bool {
        self.state.lock().expect("drain lock").0.is_cancelled()
    }

    /// Starts draining with `deadline_ms` (Unix ms), or keeps the drain already under way.
    /// Returns the deadline that holds.
    pub fn start(&self, deadline_ms: i64) -> i64 {
        let mut state = self.state.lock().expect("drain lock");
        let (token, deadline) = &mut *state;
        let at = match *deadline {
            Some(at) if token.is_cancelled() => at,
            _ => {
                *deadline = Some(deadline_ms);
                token.cancel();
                deadline_ms
            }
        };
        self.gauge.set(1);
        self.ready.send_replace(false);
        at
    }

    /// The drain's deadline (Unix ms; 0 when not draining).
    pub fn deadline_ms(&self) -> i64 {
        self.state.lock().expect("drain lock").1.unwrap_or(0)
    }

    /// Ends a drain: new streams and rooms are welcome again. Streams already told to
    /// leave still leave (they resume here or elsewhere). Returns whether the replica
    /// was draining; `Err` when it is stopping (that drain does not end).
    pub fn end(&self) -> Result<bool, Stopping> {
        if self.shutdown.is_cancelled() {
            return Err(Stopping);
        }
        let mut state = self.state.lock().expect("drain lock");
        let was_draining = state.0.is_cancelled();
        if was_draining {
            *state = (self.shutdown.child_token(), None);
        }
        self.gauge.set(0);
        self.ready.send_replace(true);
        Ok(was_draining)
    }

    /// Follows whether new streams and rooms are welcome (false while draining), for
    /// the health service.
    pub fn readiness(&self) -> watch::Receiver<bool> {
        self.ready.subscribe()
    }
}

/// The replica is stopping: its drain cannot end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stopping;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_drain_starts_once_and_ends_for_what_comes_next() {
        let shutdown = CancellationToken::new();
        let drain = Drain::new(shutdown.clone(), Gauge::default());
        let ready = drain.readiness();
        let before = drain.token();
        assert!(!drain.is_draining() && *ready.borrow());

        assert_eq!(drain.start(1_000), 1_000);
        assert_eq!(
            drain.start(9_000),
            1_000,
            "a second drain keeps the first deadline"
        );
        assert!(drain.is_draining() && before.is_cancelled() && !*ready.borrow());
        assert_eq!(drain.deadline_ms(), 1_000);

        assert_eq!(drain.end(), Ok(true));
        assert!(!drain.is_draining() && *ready.borrow());
        assert!(!drain.token().is_cancelled(), "streams that come next stay");
        assert!(before.is_cancelled(), "streams told to leave still leave");
        assert_eq!(drain.deadline_ms(), 0);
        assert_eq!(drain.end(), Ok(false));

        // Stopping drains, for good.
        shutdown.cancel();
        assert!(drain.is_draining());
        assert_eq!(drain.end(), Err(Stopping));
    }
}
