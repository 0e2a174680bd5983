//! One way to watch an HTTP body go by: [`watch`] wraps a body so that a [`Watcher`] sees
//! the outcome of every poll (each data or trailers frame, an error, the end) before it
//! is handed on unchanged, and lives exactly as long as the body (hyper drops a response
//! body once it is sent or the client reset the call). The server's layers build on it:
//! a call stays open while its response body lives ([`serve`](mod@crate::serve)), and the RPC
//! metrics count messages and read the status in the trailers
//! ([`RpcLayer`](crate::metrics::RpcLayer)).

use std::{
    pin::Pin,
    task::{Context, Poll},
};

use bytes::Bytes;
use http_body::{Body as HttpBody, Frame, SizeHint};
use tonic::{Status, body::Body};

/// What one poll of a watched body gave.
pub(crate) type Polled = Poll<Option<Result<Frame<Bytes>, Status>>>;

/// What watches a body: told of every poll; dropped with the body.
pub(crate) trait Watcher: Send + Unpin + 'static {
    /// Sees what a poll of the body gave, before the body's reader does.
    fn polled(&mut self, _polled: &Polled) {}
}

/// `inner`, with `watcher` told of every poll of it.
pub(crate) fn watch(inner: Body, watcher: impl Watcher) -> Body {
    Body::new(Watched { inner, watcher })
}

/// A body and what watches it.
struct Watched<W> {
    inner: Body,
    watcher: W,
}

impl<W: Watcher> HttpBody for Watched<W> {
    type Data = Bytes;
    type Error = Status;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Polled {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.inner).poll_frame(cx);
        this.watcher.polled(&polled);
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
