//! One accepted TCP connection as the server reads and writes it. tonic drains
//! connections gracefully but has no deadline, so a long gRPC stream (a game) would keep
//! its connection, and the server, alive forever; and hyper starts its keepalive only
//! after the HTTP/2 handshake, with no deadline on the handshake itself, so a socket that
//! sends nothing (or half a preface) would hold a connection slot and a file descriptor
//! for good. Here a connection fails its reads and writes, which makes hyper (or the TLS
//! handshake, or the HTTP/1-or-2 sniffing before it) drop it, when it is cut at the drain
//! deadline, when it has begun no call within the handshake time, when it has had no
//! call open for the idle time ([`Calls`] counts them), or when it has outlived its
//! connection age and grace.
//!
//! A connection the server ends gracefully (its age reached, the server draining) is not
//! closed at once: it goes on reading, and discarding, what its client still sends, for
//! at most [`LINGER`], until the client closes its side. Closing a socket with unread
//! bytes makes the kernel answer with a reset, which can overtake the final GOAWAY still
//! on its way to the client: the client then cannot tell the calls the server never
//! started (which it may send again on a new connection) from those it was serving, and
//! fails them all as a broken connection.

use std::{
    future::Future,
    io,
    pin::Pin,
    sync::Arc,
    task::{Context, Poll},
    time::Duration,
};

use tokio::{
    io::{AsyncRead, AsyncReadExt as _, AsyncWrite, ReadBuf},
    net::TcpStream,
    sync::OwnedSemaphorePermit,
    time::{Instant, Sleep},
};
use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};
use tonic::transport::server::{Connected, TcpConnectInfo};

use super::calls::{Calls, Timeouts, Verdict};

/// How long a connection the server ended gracefully goes on reading what its client
/// still sends before its socket is closed (see the module's documentation).
const LINGER: Duration = Duration::from_secs(2);

/// What the server knows of a connection, in every request's extensions (tonic puts it
/// there): its addresses and its [`Calls`]. [`CallsLayer`](super::calls::CallsLayer)
/// takes it out and leaves the plain [`TcpConnectInfo`] in its place.
#[derive(Clone)]
pub(super) struct ConnectionInfo {
    pub(super) tcp: TcpConnectInfo,
    pub(super) calls: Arc<Calls>,
}

/// A [`TcpStream`] that fails its reads and writes once `cut` is cancelled or its
/// [`Calls`] say it has been silent or idle too long. It holds one of the server's
/// connection slots until it is dropped; dropped after the server shut it down, it
/// lingers (see the module's documentation).
pub(super) struct Connection {
    /// Taken only when it is dropped, to linger.
    stream: Option<TcpStream>,
    /// The server has shut its side down (sent its FIN).
    shut_down: bool,
    /// The client has closed its side (a read found the end).
    peer_done: bool,
    cut: Pin<Box<WaitForCancellationFutureOwned>>,
    calls: Arc<Calls>,
    timeouts: Timeouts,
    accepted: Instant,
    /// When to ask [`Calls`] again.
    check_at: Pin<Box<Sleep>>,
    _slot: OwnedSemaphorePermit,
}

impl Connection {
    pub(super) fn new(
        stream: TcpStream,
        cut: CancellationToken,
        timeouts: Timeouts,
        slot: OwnedSemaphorePermit,
    ) -> Self {
        let accepted = Instant::now();
        // The first deadline: the handshake's, or the lifetime's if it is shorter.
        let first_check = match timeouts.lifetime {
            Some(lifetime) => timeouts.handshake.min(lifetime),
            None => timeouts.handshake,
        };
        Connection {
            stream: Some(stream),
            shut_down: false,
            peer_done: false,
            cut: Box::pin(cut.cancelled_owned()),
            calls: Arc::new(Calls::new(accepted)),
            timeouts,
            accepted,
            check_at: Box::pin(tokio::time::sleep_until(accepted + first_check)),
            _slot: slot,
        }
    }

    fn stream(&mut self) -> Pin<&mut TcpStream> {
        Pin::new(self.stream.as_mut().expect("taken only when dropped"))
    }

    /// `Err` once cut or timed out. Polling registers the waker with both, so a
    /// connection waiting in a read wakes up (and fails) when its time comes.
    fn check(&mut self, cx: &mut Context<'_>) -> io::Result<()> {
        if self.cut.as_mut().poll(cx).is_ready() {
            return Err(io::Error::new(
                io::ErrorKind::ConnectionAborted,
                "connection cut at the drain deadline",
            ));
        }
        while self.check_at.as_mut().poll(cx).is_ready() {
            let now = Instant::now();
            match self.calls.verdict(now, self.accepted, self.timeouts) {
                Verdict::Close(reason) => {
                    tracing::debug!(peer = ?self.stream.as_ref().and_then(|s| s.peer_addr().ok()), reason, "closing the connection");
                    return Err(io::Error::new(io::ErrorKind::TimedOut, reason));
                }
                Verdict::CheckAt(at) => self.check_at.as_mut().reset(at),
            }
        }
        Ok(())
    }
}

impl Connected for Connection {
    type ConnectInfo = ConnectionInfo;

    fn connect_info(&self) -> ConnectionInfo {
        ConnectionInfo {
            tcp: self
                .stream
                .as_ref()
                .expect("taken only when dropped")
                .connect_info(),
            calls: Arc::clone(&self.calls),
        }
    }
}

impl AsyncRead for Connection {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        this.check(cx)?;
        let before = buf.filled().len();
        let read = this.stream().poll_read(cx, buf);
        if matches!(read, Poll::Ready(Ok(())))
            && buf.filled().len() == before
            && buf.remaining() > 0
        {
            this.peer_done = true;
        }
        read
    }
}

impl AsyncWrite for Connection {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        this.check(cx)?;
        this.stream().poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        this.check(cx)?;
        this.stream().poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream
            .as_ref()
            .is_some_and(TcpStream::is_write_vectored)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        this.check(cx)?;
        this.stream().poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let shut = this.stream().poll_shutdown(cx);
        if matches!(shut, Poll::Ready(Ok(()))) {
            this.shut_down = true;
        }
        shut
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        if !self.shut_down || self.peer_done {
            return;
        }
        if let (Some(stream), Ok(runtime)) =
            (self.stream.take(), tokio::runtime::Handle::try_current())
        {
            runtime.spawn(linger(stream));
        }
    }
}

/// Reads and discards what the client of a connection shut down by the server still
/// sends, until the client closes its side or [`LINGER`] has passed; then closes it.
async fn linger(mut stream: TcpStream) {
    let mut discard = [0u8; 1024];
    let drained = async { while let Ok(1..) = stream.read(&mut discard).await {} };
    let _ = tokio::time::timeout(LINGER, drained).await;
}
