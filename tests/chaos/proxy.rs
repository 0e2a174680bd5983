//! A small fault-injecting TCP proxy between a service and a store. Every byte passes
//! through unchanged until a fault is set: added latency on every chunk, a reset of every
//! open connection (SO_LINGER 0, so the peers see RST), or a blackhole for a while, in
//! which nothing passes either way and new connections wait (as when a network drops
//! packets; TCP would retransmit until it heals).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

/// What the proxy does to traffic right now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Everything passes.
    None,
    /// Each chunk waits this long before it is written on.
    Latency(Duration),
    /// Nothing passes; connections stay open.
    Blackhole,
}

#[derive(Debug, Clone, Copy)]
struct State {
    fault: Fault,
    /// Bumped by every reset: connections opened under an older epoch close.
    epoch: u64,
}

/// A running proxy.
pub struct Proxy {
    /// Where clients connect.
    pub addr: SocketAddr,
    state: watch::Sender<State>,
    stop: CancellationToken,
}

impl Proxy {
    /// Listens on a free local port and forwards to `upstream`.
    pub async fn start(upstream: SocketAddr) -> anyhow::Result<Proxy> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let (state, watcher) = watch::channel(State {
            fault: Fault::None,
            epoch: 0,
        });
        let stop = CancellationToken::new();
        let token = stop.clone();
        tokio::spawn(async move {
            loop {
                let accepted = tokio::select! {
                    _ = token.cancelled() => return,
                    accepted = listener.accept() => accepted,
                };
                let Ok((client, _)) = accepted else { continue };
                let watcher = watcher.clone();
                let token = token.clone();
                tokio::spawn(async move {
                    tokio::select! {
                        _ = token.cancelled() => {}
                        _ = connection(client, upstream, watcher) => {}
                    }
                });
            }
        });
        Ok(Proxy { addr, state, stop })
    }

    /// Sets the fault from now on.
    pub fn set(&self, fault: Fault) {
        self.state.send_modify(|state| state.fault = fault);
    }

    /// Resets every open connection (new ones pass as before).
    pub fn reset_all(&self) {
        self.state.send_modify(|state| state.epoch += 1);
    }

    /// Blackholes the link for `duration`, then lets traffic pass again.
    pub async fn blackhole_for(&self, duration: Duration) {
        self.set(Fault::Blackhole);
        tokio::time::sleep(duration).await;
        self.set(Fault::None);
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// Waits while the link is blackholed; false once the connection's epoch is over.
async fn pass(watcher: &mut watch::Receiver<State>, epoch: u64) -> bool {
    loop {
        let state = *watcher.borrow_and_update();
        if state.epoch != epoch {
            return false;
        }
        match state.fault {
            Fault::None => return true,
            Fault::Latency(delay) => {
                tokio::time::sleep(delay).await;
                return watcher.borrow().epoch == epoch;
            }
            Fault::Blackhole => {
                if watcher.changed().await.is_err() {
                    return false;
                }
            }
        }
    }
}

// Linger zero closes with RST at once; it never blocks (only a positive linger does).
#[allow(deprecated)]
async fn connection(client: TcpStream, upstream: SocketAddr, watcher: watch::Receiver<State>) {
    let epoch = watcher.borrow().epoch;
    let mut gate = watcher.clone();
    if !pass(&mut gate, epoch).await {
        let _ = client.set_linger(Some(Duration::ZERO));
        return;
    }
    let Ok(server) = TcpStream::connect(upstream).await else {
        let _ = client.set_linger(Some(Duration::ZERO));
        return;
    };
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    let client = Arc::new(client);
    let server = Arc::new(server);
    let mut epochs = watcher.clone();
    tokio::select! {
        _ = pump(Arc::clone(&client), Arc::clone(&server), watcher.clone(), epoch) => {}
        _ = pump(Arc::clone(&server), Arc::clone(&client), watcher.clone(), epoch) => {}
        _ = async {
            while epochs.changed().await.is_ok() {
                if epochs.borrow().epoch != epoch {
                    return;
                }
            }
        } => {}
    }
    // A reset (or either side closing): close both at once, with RST.
    let _ = client.set_linger(Some(Duration::ZERO));
    let _ = server.set_linger(Some(Duration::ZERO));
}

async fn pump(
    from: Arc<TcpStream>,
    to: Arc<TcpStream>,
    mut watcher: watch::Receiver<State>,
    epoch: u64,
) {
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        if from.readable().await.is_err() {
            return;
        }
        let n = match from.try_read(&mut buf) {
            Ok(0) => return,
            Ok(n) => n,
            Err(err) if err.kind() == std::io::ErrorKind::WouldBlock => continue,
            Err(_) => return,
        };
        if !pass(&mut watcher, epoch).await {
            return;
        }
        let mut written = 0;
        while written < n {
            if to.writable().await.is_err() {
                return;
            }
            match to.try_write(&buf[written..n]) {
                Ok(k) => written += k,
                Err(err) if err.kind() == std::io::ErrorKind::WouldBlock => continue,
                Err(_) => return,
            }
        }
    }
}

/// A Kubernetes Service in front of replicas, as far as a client can tell: each new
/// connection goes to the next replica in turn that accepts it, so a dead replica's
/// clients reconnect to a live one (its connections close with it).
pub struct Balancer {
    /// Where clients connect.
    pub addr: SocketAddr,
    stop: CancellationToken,
}

impl Balancer {
    /// Listens on a free local port and spreads connections over `upstreams`.
    pub async fn start(upstreams: Vec<SocketAddr>) -> anyhow::Result<Balancer> {
        anyhow::ensure!(!upstreams.is_empty(), "a balancer needs an upstream");
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let stop = CancellationToken::new();
        let token = stop.clone();
        tokio::spawn(async move {
            let mut next = 0usize;
            loop {
                let accepted = tokio::select! {
                    _ = token.cancelled() => return,
                    accepted = listener.accept() => accepted,
                };
                let Ok((client, _)) = accepted else { continue };
                let first = next;
                next = next.wrapping_add(1);
                let (upstreams, token) = (upstreams.clone(), token.clone());
                tokio::spawn(async move {
                    tokio::select! {
                        _ = token.cancelled() => {}
                        _ = balanced(client, &upstreams, first) => {}
                    }
                });
            }
        });
        Ok(Balancer { addr, stop })
    }
}

impl Drop for Balancer {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

// Linger zero closes with RST at once (see `connection`).
#[allow(deprecated)]
/// Forwards `client` to the first of `upstreams` (from `first` on, in turn) that accepts.
async fn balanced(mut client: TcpStream, upstreams: &[SocketAddr], first: usize) {
    for i in 0..upstreams.len() {
        let upstream = upstreams[(first + i) % upstreams.len()];
        let Ok(Ok(mut server)) =
            tokio::time::timeout(Duration::from_secs(1), TcpStream::connect(upstream)).await
        else {
            continue;
        };
        let _ = client.set_nodelay(true);
        let _ = server.set_nodelay(true);
        let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
        return;
    }
    let _ = client.set_linger(Some(Duration::ZERO));
}
