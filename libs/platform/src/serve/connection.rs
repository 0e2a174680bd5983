//! One accepted TCP connection as the server reads and writes it. tonic drains
//! connections gracefully but has no deadline, so a long gRPC stream (a game) would keep
//! its connection, and the server, alive forever; and hyper starts its keepalive only
//! after the HTTP/2 handshake, with no deadline on the handshake itself, so a socket that
//! sends nothing (or half a preface) would hold a connection slot and a file descriptor
//! for good. Here a connection fails its reads and writes, which makes hyper (or the TLS
//! handshake, or the HTTP/1-or-2 sniffing before it) drop it, when it is cut at the drain
//! deadline, when it has begun no call within the handshake time, or when it has had no
//! call open for the idle time ([`Calls`] counts them).

use std::{
    future::Future,
    io,
    pin::Pin,
    sync::Arc,
    task::{Context, Poll},
};

use tokio::{
    io::{AsyncRead, AsyncWrite, ReadBuf},
    net::TcpStream,
    sync::OwnedSemaphorePermit,
    time::{Instant, Sleep},
};
use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};
use tonic::transport::server::{Connected, TcpConnectInfo};

use super::calls::{Calls, Timeouts, Verdict};

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
/// connection slots until it is dropped.
pub(super) struct Connection {
    stream: TcpStream,
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
        Connection {
            stream,
            cut: Box::pin(cut.cancelled_owned()),
            calls: Arc::new(Calls::new(accepted)),
            timeouts,
            accepted,
            check_at: Box::pin(tokio::time::sleep_until(accepted + timeouts.handshake)),
            _slot: slot,
        }
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
                    tracing::debug!(peer = ?self.stream.peer_addr().ok(), reason, "closing the connection");
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
            tcp: self.stream.connect_info(),
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
        Pin::new(&mut this.stream).poll_read(cx, buf)
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
        Pin::new(&mut this.stream).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        this.check(cx)?;
        Pin::new(&mut this.stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        this.check(cx)?;
        Pin::new(&mut this.stream).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_shutdown(cx)
    }
}
