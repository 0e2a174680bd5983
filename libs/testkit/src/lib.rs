//! What every test suite of Basra online needs besides the crate it tests, written once
//! (a dev-dependency only; nothing here runs in a service):
//!
//! - where the tests' Redis and Redis Cluster are ([`redis_url`], [`redis_cluster_url`]:
//!   the Makefile's `REDIS_URL` and `REDIS_CLUSTER_URL`, else the local defaults);
//! - a key prefix no other test uses ([`unique_prefix`]), so tests share one Redis, and
//!   one that deletes its keys when dropped ([`redis::TestPrefix`]);
//! - a condition polled until it holds ([`eventually`]);
//! - a request carrying an access token ([`authed`]);
//! - a throwaway Ed25519 signing key in PKCS#8 PEM ([`private_pem`]);
//! - an S3-compatible server on a loopback port ([`moto::Moto`]: moto's, from PyPI);
//! - hostile clients: silent sockets, hand-built HTTP/2 gRPC calls ([`hostile`]);
//! - one suite of contract cases run on every backend of a store ([`store_contract!`]);
//! - local stand-ins of FCM and APNs recording what they receive (feature `push`:
//!   `push::FcmStandIn`, `push::ApnsStandIn`);
//! - a server on a free port, stopped when dropped ([`Served`]), and each service started
//!   for a test behind a feature named after it (its tests turn it on): `matchmaking`,
//!   `accounts`, `game-session` (`spawn_app()`, its builders, clients, fixtures and
//!   fakes).
//!
//! A crate's own setup (its stores, its service) stays in its `tests/it/helpers.rs`
//! unless testkit starts it behind its feature. testkit is only ever a dev-dependency
//! (`scripts/check-layers.py`), so a service's feature may depend on the service without
//! a library depending on it.
//!
//! ```
//! let request = basra_testkit::authed("ping", "a.jwt.token");
//! assert_eq!(request.metadata().get("authorization").unwrap(), "Bearer a.jwt.token");
//! assert!(basra_testkit::unique_prefix("test:mm:").starts_with("test:mm:"));
//! ```

#[cfg(feature = "accounts")]
pub mod accounts;
mod contract;
#[cfg(feature = "game-session")]
pub mod game_session;
pub mod hostile;
#[cfg(feature = "matchmaking")]
pub mod matchmaking;
pub mod moto;
#[cfg(feature = "push")]
pub mod push;
pub mod redis;
mod served;

pub use served::Served;

use std::future::Future;
use std::time::Duration;

use ed25519_dalek::pkcs8::EncodePrivateKey;
use ed25519_dalek::pkcs8::spki::der::pem::LineEnding;

/// Where the tests' Redis is: `REDIS_URL`, else the Makefile's default
/// (`redis://127.0.0.1:6379`).
pub fn redis_url() -> String {
    std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into())
}

/// Where the tests' Redis Cluster is: `REDIS_CLUSTER_URL` (comma-separated nodes), else
/// the local cluster of `scripts/redis-cluster.sh` (127.0.0.1:7001-7003 as seeds).
pub fn redis_cluster_url() -> String {
    std::env::var("REDIS_CLUSTER_URL").unwrap_or_else(|_| {
        "redis://127.0.0.1:7001,redis://127.0.0.1:7002,redis://127.0.0.1:7003".into()
    })
}

/// `tag` followed by a fresh UUID v7 (32 hex digits): a key prefix no other test uses.
/// `tag` carries its own separator (`"test:mm:"`, `"test-social-"`).
pub fn unique_prefix(tag: &str) -> String {
    format!("{tag}{}", uuid::Uuid::now_v7().simple())
}

/// `message` as a request with `authorization: Bearer <token>`.
pub fn authed<T>(message: T, token: &str) -> tonic::Request<T> {
    let mut request = tonic::Request::new(message);
    request.metadata_mut().insert(
        "authorization",
        format!("Bearer {token}")
            .parse()
            .expect("a token is valid metadata"),
    );
    request
}

/// A fresh Ed25519 signing key as PKCS#8 PEM (what `identity.signing_key_file` holds).
pub fn private_pem() -> String {
    let key = ed25519_dalek::SigningKey::from_bytes(&rand::random());
    key.to_pkcs8_pem(LineEnding::LF)
        .expect("an Ed25519 key encodes")
        .to_string()
}

/// Polls `check` every 10 ms until it holds (true) or `timeout` passes (false).
pub async fn eventually<F, Fut>(timeout: Duration, mut check: F) -> bool
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        if check().await {
            return true;
        }
        if tokio::time::Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
