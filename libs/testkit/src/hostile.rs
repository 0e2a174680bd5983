//! Hostile clients, for the tests of the server's connection limits: sockets that say
//! nothing or half an HTTP/2 preface, and gRPC calls built by hand on HTTP/2 (any
//! metadata, any length prefix, any bytes), which no well-behaved client sends.
//!
//! ```no_run
//! # async fn probe(addr: std::net::SocketAddr) {
//! use basra_testkit::hostile::{self, RawGrpc};
//! let opened = std::time::Instant::now();
//! let silent = hostile::connections(addr, 10, hostile::HALF_PREFACE).await;
//! let mut raw = RawGrpc::connect(addr).await;
//! // A message that claims 2 GiB and sends none of it.
//! let answer = raw
//!     .call("/grpc.health.v1.Health/Check", &[], hostile::length_prefix(1 << 31))
//!     .await;
//! println!("{answer:?}; {:?}", hostile::closed(silent, opened, std::time::Duration::from_secs(20)).await);
//! # }
//! ```

use std::net::SocketAddr;
use std::time::{Duration, Instant};

pub use bytes::Bytes;
use tokio::io::AsyncReadExt as _;
use tokio::net::TcpStream;
use tokio::task::JoinHandle;

/// The first half of the HTTP/2 client preface (`PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n`).
pub const HALF_PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n";

/// `n` connections to `addr`, each having sent `first` and nothing after.
pub async fn connections(addr: SocketAddr, n: usize, first: &[u8]) -> Vec<TcpStream> {
    let mut all = Vec::with_capacity(n);
    for _ in 0..n {
        let mut stream = TcpStream::connect(addr).await.expect("connects");
        if !first.is_empty() {
            tokio::io::AsyncWriteExt::write_all(&mut stream, first)
                .await
                .expect("writes");
        }
        all.push(stream);
    }
    all
}

/// How long after `start` each of `connections` was closed by the server (it reads the
/// end of the stream or an error); `None` for those still open `within` after `start`.
/// The connections are dropped.
pub async fn closed(
    connections: Vec<TcpStream>,
    start: Instant,
    within: Duration,
) -> Vec<Option<Duration>> {
    let waits = connections.into_iter().map(|mut stream| {
        tokio::spawn(async move {
            let mut buf = [0u8; 4096];
            let deadline = tokio::time::Instant::from_std(start + within);
            loop {
                match tokio::time::timeout_at(deadline, stream.read(&mut buf)).await {
                    Err(_) => return None,
                    Ok(Ok(0) | Err(_)) => return Some(start.elapsed()),
                    // What the server sends first (its SETTINGS): keep reading.
                    Ok(Ok(_)) => {}
                }
            }
        })
    });
    let mut times = Vec::new();
    for wait in waits.collect::<Vec<_>>() {
        times.push(wait.await.expect("the reader runs"));
    }
    times
}

/// The file descriptors process `pid` holds (Linux: `/proc/PID/fd`).
pub fn open_fds(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .expect("/proc/PID/fd is readable")
        .count()
}

/// A gRPC message frame: the uncompressed flag, the length, the bytes.
pub fn message(bytes: &[u8]) -> Bytes {
    let mut frame = Vec::with_capacity(5 + bytes.len());
    frame.push(0);
    frame.extend_from_slice(&(bytes.len() as u32).to_be_bytes());
    frame.extend_from_slice(bytes);
    frame.into()
}

/// A message frame's header claiming `len` bytes, without the bytes.
pub fn length_prefix(len: u32) -> Bytes {
    let mut frame = vec![0];
    frame.extend_from_slice(&len.to_be_bytes());
    frame.into()
}

/// What the server answered a hand-built call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// A gRPC status (from the headers of a trailers-only answer, or the trailers).
    Grpc {
        /// `grpc-status`.
        code: i32,
        /// `grpc-message`, as sent (percent-encoded).
        message: String,
    },
    /// An HTTP answer without a gRPC status (e.g. 431 from HTTP/2 itself).
    Http(u16),
    /// HTTP/2 reset the stream, or the connection, with this error.
    Reset(String),
}

/// One HTTP/2 connection for hand-built gRPC calls.
pub struct RawGrpc {
    addr: SocketAddr,
    send: h2::client::SendRequest<Bytes>,
    connection: JoinHandle<Result<(), h2::Error>>,
}

impl RawGrpc {
    /// Connects and completes the HTTP/2 handshake.
    pub async fn connect(addr: SocketAddr) -> RawGrpc {
        let tcp = TcpStream::connect(addr).await.expect("connects");
        let (send, connection) = h2::client::handshake(tcp).await.expect("HTTP/2 handshake");
        RawGrpc {
            addr,
            send,
            connection: tokio::spawn(connection),
        }
    }

    /// Calls `path` with `metadata` and the request body `body` (message frames, or
    /// anything), ending the request stream, and reads the answer's status.
    pub async fn call(&mut self, path: &str, metadata: &[(&str, String)], body: Bytes) -> Answer {
        let mut request = http::Request::builder()
            .method("POST")
            .uri(format!("http://{}{path}", self.addr))
            .header("content-type", "application/grpc")
            .header("te", "trailers");
        for (name, value) in metadata {
            request = request.header(*name, value);
        }
        let request = request.body(()).expect("a request");
        let send = match self.send.clone().ready().await {
            Ok(send) => send,
            Err(err) => return Answer::Reset(err.to_string()),
        };
        let mut send = send;
        let (response, mut stream) = match send.send_request(request, false) {
            Ok(sent) => sent,
            Err(err) => return Answer::Reset(err.to_string()),
        };
        if let Err(err) = stream.send_data(body, true) {
            return Answer::Reset(err.to_string());
        }
        let response = match response.await {
            Ok(response) => response,
            Err(err) => return Answer::Reset(err.to_string()),
        };
        if let Some(answer) = grpc_status(response.headers()) {
            return answer;
        }
        let status = response.status().as_u16();
        let mut body = response.into_body();
        while let Some(chunk) = body.data().await {
            match chunk {
                Ok(chunk) => {
                    let _ = body.flow_control().release_capacity(chunk.len());
                }
                Err(err) => return Answer::Reset(err.to_string()),
            }
        }
        match body.trailers().await {
            Ok(Some(trailers)) => grpc_status(&trailers).unwrap_or(Answer::Http(status)),
            Ok(None) => Answer::Http(status),
            Err(err) => Answer::Reset(err.to_string()),
        }
    }

    /// Whether the server has closed this connection.
    pub fn is_closed(&self) -> bool {
        self.connection.is_finished()
    }

    /// Waits (at most `within`) for the server to close this connection; how long it took.
    pub async fn closed(self, within: Duration) -> Option<Duration> {
        let start = Instant::now();
        // Held: with no handle left, the client would close the connection itself.
        let _send = self.send;
        tokio::time::timeout(within, self.connection)
            .await
            .ok()
            .map(|_| start.elapsed())
    }
}

fn grpc_status(headers: &http::HeaderMap) -> Option<Answer> {
    let code = headers.get("grpc-status")?.to_str().ok()?.parse().ok()?;
    let message = headers
        .get("grpc-message")
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    Some(Answer::Grpc { code, message })
}
