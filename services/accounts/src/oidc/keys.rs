//! One provider's signing keys (its JWKS), cached. A token's key is looked up by its
//! `kid`; the set is fetched when it is missing or older than its maximum age, and again
//! when a token names a key id the set lacks (the provider rotated its keys), but at most
//! once per `refetch_min` (a flood of tokens with made-up key ids costs the provider one
//! fetch per interval). One fetch runs at a time; sign-ins with a known key never wait
//! for one. When a fetch fails, the keys fetched before stay in use.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use jsonwebtoken::DecodingKey;
use jsonwebtoken::jwk::{AlgorithmParameters, JwkSet, KeyAlgorithm};

use super::fetch::Fetcher;
use crate::error::{AccountsError, Result};

/// The keys of one fetch, by key id.
#[derive(Default)]
struct Keys {
    by_kid: HashMap<String, DecodingKey>,
    fetched_at: Option<Instant>,
}

/// A provider's cached key set.
pub struct KeyCache {
    url: String,
    fetcher: Fetcher,
    refetch_min: Duration,
    max_age: Duration,
    keys: RwLock<Arc<Keys>>,
    /// Held while fetching: one fetch at a time.
    fetching: tokio::sync::Mutex<()>,
    fetches: AtomicU64,
}

impl std::fmt::Debug for KeyCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyCache")
            .field("url", &self.url)
            .field("fetches", &self.fetches)
            .finish_non_exhaustive()
    }
}

/// The RSA keys of a JWKS document usable for RS256, by key id; others are skipped.
pub fn parse_jwks(body: &[u8]) -> Result<HashMap<String, DecodingKey>, String> {
    let set: JwkSet =
        serde_json::from_slice(body).map_err(|e| format!("the key set is not a JWKS: {e}"))?;
    let mut keys = HashMap::new();
    for jwk in &set.keys {
        let (Some(kid), AlgorithmParameters::RSA(_)) = (&jwk.common.key_id, &jwk.algorithm) else {
            continue;
        };
        if jwk
            .common
            .key_algorithm
            .is_some_and(|alg| alg != KeyAlgorithm::RS256)
        {
            continue;
        }
        match DecodingKey::from_jwk(jwk) {
            Ok(key) => {
                keys.insert(kid.clone(), key);
            }
            Err(e) => tracing::warn!(kid, error = %e, "a provider key is unusable: skipped"),
        }
    }
    Ok(keys)
}

impl KeyCache {
    /// An empty cache of the key set at `url`.
    pub fn new(url: String, fetcher: Fetcher, refetch_min: Duration, max_age: Duration) -> Self {
        KeyCache {
            url,
            fetcher,
            refetch_min,
            max_age,
            keys: RwLock::default(),
            fetching: tokio::sync::Mutex::new(()),
            fetches: AtomicU64::new(0),
        }
    }

    /// How many fetches were made (successful or not).
    pub fn fetches(&self) -> u64 {
        self.fetches.load(Ordering::Relaxed)
    }

    fn current(&self) -> Arc<Keys> {
        Arc::clone(&self.keys.read().unwrap_or_else(|p| p.into_inner()))
    }

    fn fresh(&self, keys: &Keys, now: Instant) -> bool {
        keys.fetched_at
            .is_some_and(|at| now.duration_since(at) < self.max_age)
    }

    /// The key with id `kid`. Errors: UNAUTHENTICATED (the provider publishes no such
    /// key), UNAVAILABLE (the key set cannot be fetched and none is cached).
    pub async fn key(&self, kid: &str) -> Result<DecodingKey> {
        let keys = self.current();
        if self.fresh(&keys, Instant::now())
            && let Some(key) = keys.by_kid.get(kid)
        {
            return Ok(key.clone());
        }
        let _fetching = self.fetching.lock().await;
        // Another call may have fetched while this one waited.
        let keys = self.current();
        let now = Instant::now();
        let fresh = self.fresh(&keys, now);
        if fresh && let Some(key) = keys.by_kid.get(kid) {
            return Ok(key.clone());
        }
        let may_fetch = !fresh
            || keys
                .fetched_at
                .is_none_or(|at| now.duration_since(at) >= self.refetch_min);
        let keys = if may_fetch {
            self.fetches.fetch_add(1, Ordering::Relaxed);
            let fetched = self
                .fetcher
                .get(&self.url)
                .await
                .and_then(|body| parse_jwks(&body));
            match fetched {
                Ok(by_kid) => {
                    tracing::info!(url = %self.url, keys = by_kid.len(), "provider keys fetched");
                    let keys = Arc::new(Keys {
                        by_kid,
                        fetched_at: Some(Instant::now()),
                    });
                    *self.keys.write().unwrap_or_else(|p| p.into_inner()) = Arc::clone(&keys);
                    keys
                }
                Err(error) if keys.fetched_at.is_some() => {
                    tracing::warn!(url = %self.url, %error, "provider keys not fetched: the cached ones stay");
                    keys
                }
                Err(error) => {
                    tracing::error!(url = %self.url, %error, "provider keys not fetched");
                    return Err(AccountsError::ProviderUnavailable(
                        "the identity provider's keys cannot be fetched: retry later".into(),
                    ));
                }
            }
        } else {
            keys
        };
        keys.by_kid.get(kid).cloned().ok_or_else(|| {
            AccountsError::Unauthenticated(format!(
                "the ID token is refused: {}",
                super::verify::Rejection::UnknownKey
            ))
        })
    }
}
