//! game-session started for a test, the way zero-to-production's `spawn_app()` starts
//! its app (feature `game-session`): [`spawn_app`] serves a replica on 127.0.0.1 and a
//! free port over Redis at a fresh key prefix and answers a [`TestApp`]: the address,
//! channels, the store, the metrics and the tokens its clients sign with; dropping it
//! stops the replica. [`TestApp::builder`] changes the store (memory, the cluster, one
//! shared with other replicas), the settings or the link to accounts, and shares one
//! [`Tokens`] between replicas. [`TestApp::room`] makes a two-player room
//! ([`RoomBuilder`]: created, or started with both players joined); a [`Player`] is a
//! Play stream with a model of what its seat may know; [`FakeAccounts`] stands in for
//! accounts.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! use basra_testkit::game_session::{TestApp, Tokens, low_target};
//!
//! let app = TestApp::builder(&Tokens::new()).memory().spawn().await;
//! let (_room, a, b) = app.room().settings(low_target()).join().await;
//! // The match started when the room was made: each player was dealt four cards.
//! assert_eq!((a.hand.len(), b.hand.len()), (4, 4));
//! assert!(a.hand.iter().all(|card| !b.hand.contains(card)), "no card in both hands");
//! app.stop().await;
//! # }
//! ```

mod app;
mod fakes;
mod player;

use std::sync::Arc;
use std::time::Duration;

use basra_platform::auth::{Caller, Role, ServiceCredentials, SigningKey, TokenIssuer};
use game_session::room::timing::Timing;
use game_session::{RedisStore, RoomStore, ServiceConfig};
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

pub use app::{
    RoomBuilder, TestApp, TestAppBuilder, bot_seat, channel, create_room, low_target, player_seat,
    spawn_app,
};
pub use fakes::{FakeAccounts, ServedAccounts, fake_name, serve_accounts};
pub use player::{
    Player, card, join_message, logged, open, play_card, spectate_message, stream_end,
};

/// How long a test waits for an event (or a stream's end) before it fails.
pub const WAIT: Duration = Duration::from_secs(20);

/// A key prefix no other test uses (`test-gs-…`).
pub fn test_prefix() -> String {
    crate::unique_prefix("test-gs-")
}

/// A Redis store at a test's `prefix` on the tests' Redis; the test fails when Redis is
/// unreachable.
pub async fn redis_store(prefix: &str) -> Arc<dyn RoomStore> {
    redis_store_at(&crate::redis_url(), prefix).await
}

/// A Redis store at `prefix` on the test cluster; the test fails when it is unreachable.
pub async fn cluster_store(prefix: &str) -> Arc<dyn RoomStore> {
    redis_store_at(&crate::redis_cluster_url(), prefix).await
}

/// A Redis store at `url` (one node or a cluster); the test fails when it is unreachable.
pub async fn redis_store_at(url: &str, prefix: &str) -> Arc<dyn RoomStore> {
    let store = RedisStore::connect(url, prefix, 600, CancellationToken::new())
        .await
        .unwrap_or_else(|err| {
            panic!("Redis at {url} is required (a cluster: scripts/redis-cluster.sh start): {err}")
        });
    Arc::new(store)
}

/// Timings for tests: a minute per turn, grace and rematch window, no bot delay, no slack.
pub fn test_timing() -> Timing {
    Timing {
        turn_ms: 60_000,
        grace_ms: 60_000,
        bot_delay_ms: 0,
        rematch_ms: 60_000,
        turn_slack_ms: 0,
    }
}

/// A replica named `replica` with `timing`: 100 streams, 16 joins at once, timers every
/// 20 ms, a resync every 500 ms, a 600 ms presence lease, the shipped bots.
pub fn test_config(replica: &str, timing: Timing) -> ServiceConfig {
    ServiceConfig {
        replica: replica.into(),
        timing,
        max_streams: 100,
        streams_per_account: Default::default(),
        join_concurrency: 16,
        join_timeout: Duration::from_secs(5),
        timer_poll: Duration::from_millis(20),
        resync: Duration::from_millis(500),
        lease: Duration::from_millis(600),
        bots: Default::default(),
        revocations: Default::default(),
    }
}

/// The tokens a test's clients and replicas share: one issuer (accounts' role), whose
/// key every replica of the test trusts. Clones share the issuer.
#[derive(Clone)]
pub struct Tokens {
    /// Signs every token of the test (players, services, operators).
    pub issuer: Arc<TokenIssuer>,
}

impl std::fmt::Debug for Tokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tokens").finish_non_exhaustive()
    }
}

impl Default for Tokens {
    fn default() -> Tokens {
        Tokens::new()
    }
}

impl Tokens {
    /// A fresh issuer; also turns on the test's logs (`TEST_LOG`, an env filter).
    pub fn new() -> Tokens {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_env("TEST_LOG"))
            .with_test_writer()
            .try_init();
        Tokens {
            issuer: Arc::new(TokenIssuer::new(
                SigningKey::generate(),
                "basra-accounts",
                "basra",
            )),
        }
    }

    /// A token of `role` for `user_id`, valid ten minutes.
    pub fn token(&self, user_id: Uuid, role: Role) -> String {
        self.issuer
            .issue(
                &Caller {
                    user_id,
                    role,
                    guest: false,
                },
                Duration::from_secs(600),
            )
            .expect("a token")
            .token
    }

    /// A service token (matchmaking's role).
    pub fn service(&self) -> String {
        self.token(Uuid::now_v7(), Role::Service)
    }

    /// Service credentials from this issuer (a replica's link to accounts signs with them).
    pub fn service_credentials(&self) -> ServiceCredentials {
        ServiceCredentials::Issuer(
            Arc::clone(&self.issuer),
            Caller {
                user_id: Uuid::now_v7(),
                role: Role::Service,
                guest: false,
            },
        )
    }
}
