//! Players' display names for the standings, kept a while ([`NAME_TTL`]): a name
//! rarely changes, and the standings of a big event name up to thousands of players
//! (1,024 names are 11 `GetPlayers` calls to accounts) each time they are shown.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::upstream::NameSource;

/// How long a name (or that a player has none: an account gone) is kept.
pub(crate) const NAME_TTL: Duration = Duration::from_secs(60);

/// The most names kept; past it the expired ones go, and all of them if that is not
/// enough (a cache, not a copy of accounts).
const MAX_NAMES: usize = 65_536;

/// Names asked of accounts once per lifetime ([`NAME_TTL`]).
#[derive(Debug)]
pub(crate) struct NameCache {
    ttl: Duration,
    kept: Mutex<HashMap<String, (Option<String>, Instant)>>,
}

impl Default for NameCache {
    fn default() -> Self {
        NameCache::new(NAME_TTL)
    }
}

impl NameCache {
    /// Names kept `ttl`.
    pub(crate) fn new(ttl: Duration) -> NameCache {
        NameCache {
            ttl,
            kept: Mutex::default(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, (Option<String>, Instant)>> {
        self.kept.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The names of those of `users` that have one (user id → name): the kept ones,
    /// and the others asked of `source` in one call. When that fails they are shown
    /// without a name (and asked again next time), as without the cache.
    pub(crate) async fn names(
        &self,
        source: &dyn NameSource,
        users: impl Iterator<Item = String>,
    ) -> HashMap<String, String> {
        let now = Instant::now();
        let mut out = HashMap::new();
        let mut ask = Vec::new();
        {
            let kept = self.lock();
            for user in users {
                match kept.get(&user) {
                    Some((name, at)) if now.duration_since(*at) < self.ttl => {
                        if let Some(name) = name {
                            out.insert(user, name.clone());
                        }
                    }
                    _ => ask.push(user),
                }
            }
        }
        if ask.is_empty() {
            return out;
        }
        ask.sort_unstable();
        ask.dedup();
        let found = match source.names(&ask).await {
            Ok(found) => found,
            Err(err) => {
                tracing::warn!(error = %err, players = ask.len(), "names not known: shown without");
                return out;
            }
        };
        let mut kept = self.lock();
        if kept.len() + ask.len() > MAX_NAMES {
            kept.retain(|_, (_, at)| now.duration_since(*at) < self.ttl);
            if kept.len() + ask.len() > MAX_NAMES {
                kept.clear();
            }
        }
        for user in ask {
            let name = found.get(&user).cloned();
            if let Some(name) = &name {
                out.insert(user.clone(), name.clone());
            }
            kept.insert(user, (name, now));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;
    use crate::error::{MatchmakingError, Result};

    /// Names `name-<id>` for every id but `gone`, counting the ids asked; fails while
    /// `down`.
    #[derive(Default)]
    struct Accounts {
        asked: AtomicUsize,
        down: std::sync::atomic::AtomicBool,
    }

    #[tonic::async_trait]
    impl NameSource for Accounts {
        async fn names(&self, ids: &[String]) -> Result<HashMap<String, String>> {
            if self.down.load(Ordering::SeqCst) {
                return Err(MatchmakingError::Unavailable("accounts".into()));
            }
            self.asked.fetch_add(ids.len(), Ordering::SeqCst);
            Ok(ids
                .iter()
                .filter(|id| *id != "gone")
                .map(|id| (id.clone(), format!("name-{id}")))
                .collect())
        }
    }

    fn ids(list: &[&str]) -> impl Iterator<Item = String> {
        list.iter()
            .map(|s| (*s).to_owned())
            .collect::<Vec<_>>()
            .into_iter()
    }

    const TTL: Duration = Duration::from_millis(300);

    #[tokio::test]
    async fn names_are_asked_once_per_lifetime() {
        let (cache, accounts) = (NameCache::new(TTL), Accounts::default());
        let first = cache.names(&accounts, ids(&["a", "b", "gone"])).await;
        assert_eq!(first.len(), 2);
        assert_eq!(first["a"], "name-a");
        assert_eq!(accounts.asked.load(Ordering::SeqCst), 3);
        // Again within the lifetime: nothing asked (not even the one without a name).
        let again = cache.names(&accounts, ids(&["a", "b", "gone"])).await;
        assert_eq!(again, first);
        assert_eq!(accounts.asked.load(Ordering::SeqCst), 3);
        // A new player: only that one is asked.
        let more = cache.names(&accounts, ids(&["a", "c"])).await;
        assert_eq!(more["c"], "name-c");
        assert_eq!(accounts.asked.load(Ordering::SeqCst), 4);
        // Past the lifetime: asked again (a changed name shows).
        tokio::time::sleep(TTL).await;
        cache.names(&accounts, ids(&["a"])).await;
        assert_eq!(accounts.asked.load(Ordering::SeqCst), 5);
    }

    #[tokio::test]
    async fn a_failed_call_is_not_kept() {
        let (cache, accounts) = (NameCache::default(), Accounts::default());
        accounts.down.store(true, Ordering::SeqCst);
        assert!(cache.names(&accounts, ids(&["a"])).await.is_empty());
        accounts.down.store(false, Ordering::SeqCst);
        assert_eq!(cache.names(&accounts, ids(&["a"])).await["a"], "name-a");
    }
}
