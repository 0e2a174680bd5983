//! The calls open on each connection, and what they say about the connection's life: a
//! connection that begins no call within the handshake time, or has none open for the
//! idle time, or has lived past its lifetime, is closed ([`Calls::verdict`], read by the
//! [`Connection`](super::connection::Connection) itself). [`CallsLayer`] counts a call
//! from its request until hyper drops its response body (sent, or reset by the client).

use std::{
    pin::Pin,
    sync::{Arc, Mutex},
    task::{Context, Poll},
    time::Duration,
};

use bytes::Bytes;
use http::{Request, Response};
use http_body::Body as HttpBody;
use tokio::time::Instant;
use tonic::{
    body::Body,
    transport::server::{TcpConnectInfo, TlsConnectInfo},
};
use tower::{Layer, Service};

use super::connection::ConnectionInfo;
use crate::watched_body::{Watcher, watch};

/// How long a connection may go without a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Timeouts {
    /// From its acceptance to its first call.
    pub(super) handshake: Duration,
    /// From the end of its last call to the start of the next.
    pub(super) idle: Duration,
    /// From its acceptance to its end, calls open or not: the connection age, at which
    /// the server asks its client to go away (GOAWAY), plus the grace its calls get to
    /// finish. `None`: no limit.
    pub(super) lifetime: Option<Duration>,
}

/// What a connection should do now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Verdict {
    /// Close, for this reason.
    Close(&'static str),
    /// Ask again then.
    CheckAt(Instant),
}

/// One connection's calls.
#[derive(Debug)]
pub(super) struct Calls {
    state: Mutex<State>,
}

#[derive(Debug, Clone, Copy)]
struct State {
    open: usize,
    begun: bool,
    /// When the last call ended (or the connection was accepted).
    idle_since: Instant,
}

impl Calls {
    pub(super) fn new(accepted: Instant) -> Calls {
        Calls {
            state: Mutex::new(State {
                open: 0,
                begun: false,
                idle_since: accepted,
            }),
        }
    }

    /// Counts a call open until the guard is dropped.
    fn begin(self: &Arc<Self>) -> CallGuard {
        let mut state = self.lock();
        state.open += 1;
        state.begun = true;
        CallGuard(Arc::clone(self))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // The state stays consistent whatever panicked while holding it.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Whether a connection accepted at `accepted` should close at `now`.
    pub(super) fn verdict(&self, now: Instant, accepted: Instant, timeouts: Timeouts) -> Verdict {
        verdict(*self.lock(), now, accepted, timeouts)
    }
}

fn verdict(state: State, now: Instant, accepted: Instant, timeouts: Timeouts) -> Verdict {
    let end = timeouts.lifetime.map(|lifetime| accepted + lifetime);
    if let Some(end) = end
        && now >= end
    {
        return Verdict::Close("past the connection age and its grace");
    }
    let check_at = |at: Instant| Verdict::CheckAt(end.map_or(at, |end| at.min(end)));
    if state.open > 0 {
        // Busy: look again in an idle period at the latest (when its calls have ended).
        return check_at(now + timeouts.idle);
    }
    let (deadline, reason) = if state.begun {
        (
            state.idle_since + timeouts.idle,
            "no call for the idle timeout",
        )
    } else {
        (
            accepted + timeouts.handshake,
            "no call within the handshake timeout",
        )
    };
    if now >= deadline {
        Verdict::Close(reason)
    } else {
        check_at(deadline)
    }
}

/// An open call; dropping it ends the call. It watches the call's response body, so the
/// call stays open until hyper drops that body.
struct CallGuard(Arc<Calls>);

impl Watcher for CallGuard {}

impl Drop for CallGuard {
    fn drop(&mut self) {
        let mut state = self.0.lock();
        state.open -= 1;
        if state.open == 0 {
            state.idle_since = Instant::now();
        }
    }
}

/// The outermost layer of the server: counts every request (gRPC, gRPC-Web, a CORS
/// preflight) as a call of its connection, and puts the connection's plain
/// [`TcpConnectInfo`] where `tonic::Request::remote_addr` looks for it.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct CallsLayer;

impl<S> Layer<S> for CallsLayer {
    type Service = CallsService<S>;

    fn layer(&self, inner: S) -> CallsService<S> {
        CallsService { inner }
    }
}

/// The service made by [`CallsLayer`].
#[derive(Debug, Clone)]
pub(super) struct CallsService<S> {
    inner: S,
}

impl<S, ReqBody, ResBody> Service<Request<ReqBody>> for CallsService<S>
where
    S: Service<Request<ReqBody>, Response = Response<ResBody>>,
    S::Future: Send + 'static,
    ResBody: HttpBody<Data = Bytes> + Send + 'static,
    ResBody::Error: Into<tonic::codegen::StdError>,
{
    type Response = Response<Body>;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Response<Body>, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: Request<ReqBody>) -> Self::Future {
        let extensions = request.extensions_mut();
        let info = extensions.remove::<ConnectionInfo>().or_else(|| {
            extensions
                .remove::<TlsConnectInfo<ConnectionInfo>>()
                .map(|tls| tls.get_ref().clone())
        });
        let guard = info.map(|info| {
            extensions.insert::<TcpConnectInfo>(info.tcp);
            info.calls.begin()
        });
        let future = self.inner.call(request);
        Box::pin(async move {
            let response = future.await?;
            Ok(response.map(|body| match guard {
                Some(guard) => watch(Body::new(body), guard),
                None => Body::new(body),
            }))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TIMEOUTS: Timeouts = Timeouts {
        handshake: Duration::from_secs(10),
        idle: Duration::from_secs(300),
        lifetime: None,
    };

    fn state(open: usize, begun: bool, idle_since: Instant) -> State {
        State {
            open,
            begun,
            idle_since,
        }
    }

    #[test]
    fn a_connection_without_a_call_closes_at_the_handshake_timeout() {
        let accepted = Instant::now();
        let fresh = state(0, false, accepted);
        assert_eq!(
            verdict(fresh, accepted, accepted, TIMEOUTS),
            Verdict::CheckAt(accepted + TIMEOUTS.handshake)
        );
        assert!(matches!(
            verdict(fresh, accepted + TIMEOUTS.handshake, accepted, TIMEOUTS),
            Verdict::Close(_)
        ));
    }

    #[test]
    fn an_open_call_keeps_the_connection_and_its_end_starts_the_idle_time() {
        let accepted = Instant::now();
        let late = accepted + Duration::from_secs(3600);
        // A call open for an hour: never closed, looked at again an idle period later.
        assert_eq!(
            verdict(state(1, true, accepted), late, accepted, TIMEOUTS),
            Verdict::CheckAt(late + TIMEOUTS.idle)
        );
        // It ended at `late`: closed an idle period after, not before.
        let ended = state(0, true, late);
        assert_eq!(
            verdict(ended, late + Duration::from_secs(1), accepted, TIMEOUTS),
            Verdict::CheckAt(late + TIMEOUTS.idle)
        );
        assert!(matches!(
            verdict(ended, late + TIMEOUTS.idle, accepted, TIMEOUTS),
            Verdict::Close(_)
        ));
    }

    #[test]
    fn a_connection_ends_at_its_lifetime_calls_open_or_not() {
        let accepted = Instant::now();
        let lifetime = Duration::from_secs(1800 + 30);
        let timeouts = Timeouts {
            lifetime: Some(lifetime),
            ..TIMEOUTS
        };
        let end = accepted + lifetime;
        // Busy near its end: looked at again at its end, not an idle period later.
        let near = end - Duration::from_secs(60);
        assert_eq!(
            verdict(state(3, true, accepted), near, accepted, timeouts),
            Verdict::CheckAt(end)
        );
        // Idle, with its idle deadline after its end: the end comes first.
        assert_eq!(
            verdict(state(0, true, near), near, accepted, timeouts),
            Verdict::CheckAt(end)
        );
        // Early on, the other deadlines still apply.
        assert_eq!(
            verdict(state(0, false, accepted), accepted, accepted, timeouts),
            Verdict::CheckAt(accepted + TIMEOUTS.handshake)
        );
        // At its end it closes, with calls open too.
        assert_eq!(
            verdict(state(3, true, accepted), end, accepted, timeouts),
            Verdict::Close("past the connection age and its grace")
        );
    }

    #[test]
    fn the_guard_counts_calls_open_until_dropped() {
        let accepted = Instant::now();
        let calls = Arc::new(Calls::new(accepted));
        let (a, b) = (calls.begin(), calls.begin());
        assert_eq!(calls.lock().open, 2);
        drop(a);
        assert_eq!(calls.lock().open, 1);
        drop(b);
        let state = *calls.lock();
        assert!(state.open == 0 && state.begun && state.idle_since >= accepted);
    }
}
