//! A server a test runs on 127.0.0.1 and a free port ([`Served`]): the part of every
//! service's `spawn_app()` that is the same for all (zero-to-production's shape). The
//! service's own part builds what it serves and the handle it returns (its clients, its
//! stores, its tokens); this binds the port, spawns the server, connects to it and stops
//! it when the handle goes.

use std::future::Future;
use std::net::SocketAddr;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tonic::transport::Channel;

/// How long [`Served::stop`] waits for the server to finish its drain.
const STOP_TIMEOUT: Duration = Duration::from_secs(5);

/// A server on 127.0.0.1 and a free port, told to shut down (its token cancelled) when
/// dropped or stopped.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use basra_testkit::Served;
///
/// // A "server" that holds its port open until it is told to stop.
/// let served = Served::spawn(|listener, shutdown| async move {
///     shutdown.cancelled().await;
///     drop(listener);
/// })
/// .await;
/// let addr = served.addr();
/// assert!(addr.ip().is_loopback());
/// assert!(tokio::net::TcpStream::connect(addr).await.is_ok(), "it listens");
/// served.stop().await;
/// assert!(tokio::net::TcpStream::connect(addr).await.is_err(), "stopped, it is gone");
/// # }
/// ```
#[derive(Debug)]
pub struct Served {
    addr: SocketAddr,
    shutdown: CancellationToken,
    task: Option<JoinHandle<()>>,
}

impl Served {
    /// Binds 127.0.0.1:0 and spawns `serve(listener, shutdown)`: `serve` is the
    /// service's own `serve`, which must return once `shutdown` is cancelled. What it
    /// returns is dropped (a server that fails shows as calls that fail).
    pub async fn spawn<F, Fut>(serve: F) -> Served
    where
        F: FnOnce(TcpListener, CancellationToken) -> Fut,
        Fut: Future + Send + 'static,
    {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a free loopback port");
        let addr = listener.local_addr().expect("the listener's address");
        let shutdown = CancellationToken::new();
        let serving = serve(listener, shutdown.clone());
        let task = tokio::spawn(async move {
            serving.await;
        });
        Served {
            addr,
            shutdown,
            task: Some(task),
        }
    }

    /// Where it listens.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The token that stops it: a child of it stops what runs beside the server.
    pub fn shutdown(&self) -> &CancellationToken {
        &self.shutdown
    }

    /// A new connection to it.
    pub async fn channel(&self) -> Channel {
        Channel::from_shared(format!("http://{}", self.addr))
            .expect("a loopback URL")
            .connect()
            .await
            .expect("connect to the server under test")
    }

    /// Stops it and waits (up to 5 s) until it has finished.
    pub async fn stop(mut self) {
        self.shutdown.cancel();
        if let Some(task) = self.task.take() {
            let _ = tokio::time::timeout(STOP_TIMEOUT, task).await;
        }
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}
