//! The services' front doors as a deployment's clients reach them: each service's
//! replicas behind a pool of connections, the pool's connections spread round-robin over
//! the replicas (what per-connection balancing — a Kubernetes Service, an L4 load
//! balancer — does), each player keeping the connections it picked for its session. A
//! call that never reached its server (its connection going away at the server's
//! connection age) is sent again, as gRPC's own clients do (`basra_platform::unsent`).

use std::time::Duration;

use basra_platform::unsent::Resending;
use rand::Rng as _;
use tonic::Request;
use tonic::metadata::{Ascii, MetadataValue};
use tonic::transport::{Channel, Endpoint};

/// One connection of a pool.
pub type Link = Resending<Channel>;

/// A pool of connections to one service's replicas.
#[derive(Clone)]
pub struct Pool {
    channels: Vec<Link>,
}

impl Pool {
    /// `size` lazily opened connections, connection `i` to replica `i mod replicas`.
    pub fn new(urls: &[String], size: usize) -> anyhow::Result<Pool> {
        anyhow::ensure!(!urls.is_empty(), "no replica to connect to");
        let channels = (0..size.max(urls.len()))
            .map(|i| {
                let channel = Endpoint::from_shared(urls[i % urls.len()].clone())?
                    .tcp_nodelay(true)
                    .connect_timeout(Duration::from_secs(5))
                    .http2_keep_alive_interval(Duration::from_secs(30))
                    .connect_lazy();
                Ok(Resending::new(channel))
            })
            .collect::<anyhow::Result<Vec<_>>>()?;
        Ok(Pool { channels })
    }

    /// A connection picked at random (a new client's).
    pub fn pick(&self) -> Link {
        self.channels[rand::rng().random_range(0..self.channels.len())].clone()
    }
}

/// Every service's pool.
#[derive(Clone)]
pub struct Front {
    /// accounts.
    pub accounts: Pool,
    /// matchmaking.
    pub matchmaking: Pool,
    /// game-session.
    pub games: Pool,
}

/// One client's connections, kept for its session.
#[derive(Clone)]
pub struct Links {
    /// To accounts.
    pub accounts: Link,
    /// To matchmaking.
    pub matchmaking: Link,
    /// To game-session.
    pub game: Link,
}

impl Front {
    /// A new client's connections.
    pub fn links(&self) -> Links {
        Links {
            accounts: self.accounts.pick(),
            matchmaking: self.matchmaking.pick(),
            game: self.games.pick(),
        }
    }
}

/// A signed-in player.
#[derive(Clone)]
pub struct Player {
    /// Its user id.
    pub user_id: String,
    /// `Bearer <access token>`.
    pub bearer: MetadataValue<Ascii>,
    /// To renew the access token.
    pub refresh_token: String,
    /// When the access token was issued.
    pub since: tokio::time::Instant,
}

/// `message` with the player's bearer token.
pub fn authed<T>(message: T, bearer: &MetadataValue<Ascii>) -> Request<T> {
    let mut request = Request::new(message);
    request
        .metadata_mut()
        .insert("authorization", bearer.clone());
    request
}
