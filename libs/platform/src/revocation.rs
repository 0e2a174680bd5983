//! Accounts that may no longer call: banned by an operator, or deleted by their owner.
//!
//! Access tokens are verified by each service on its own (a signature, no round trip), so
//! a token issued before a ban or a deletion stays valid until it expires. Accounts
//! therefore writes every such account into one shared list, and every service refuses
//! the tokens of the accounts in it and ends their open streams:
//!
//! | key (`S` the shared prefix) | type | holds |
//! |---|---|---|
//! | `S:{rv}:users` | hash | user id → `until_ms kind reason` (kind `ban` or `deleted`) |
//! | `S:{rv}:version` | counter | raised by every change of the hash |
//!
//! `S` is `[redis] shared_prefix` ([`crate::redis::RedisSettings::shared_prefix`]), one
//! value for every service of a deployment, not each service's own `prefix`: were it the
//! service's own, a service with a prefix of its own (matchmaking's `basra:mm`) would read
//! a list nobody writes, and keep serving the players accounts refuses.
//!
//! Each service keeps the list in memory ([`Revocations`]) and re-reads it when the
//! version moves, which it looks at every [`POLL_EVERY`]: a ban reaches every replica
//! within a second, one `GET` a second per replica costs nothing, and the check of a call
//! is a lookup in memory (no Redis on the hot path). An entry lapses at its `until`: a
//! ban at its expiry, a deletion when the last access token issued before it has expired
//! (the account's id never signs in again). While Redis is unreachable each replica keeps
//! the list it last read.
//!
//! In one process (`basra dev` on memory stores) the services share one [`Revocations`]
//! and accounts writes into it directly.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use ::redis::AsyncCommands as _;
use chrono::{DateTime, Utc};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use crate::redis::{Keys, Redis};

/// How often each replica looks whether the list changed.
pub const POLL_EVERY: Duration = Duration::from_millis(500);

/// Why an account may no longer call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RevokeKind {
    /// An operator banned the player; the reason is shown to them.
    Banned {
        /// The operator's reason, as the player is told.
        reason: String,
    },
    /// The account was deleted.
    Deleted,
}

/// One account in the list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Revoked {
    /// Why.
    pub kind: RevokeKind,
    /// Until when (a ban's expiry, or when the deleted account's last token expires).
    pub until: DateTime<Utc>,
}

impl Revoked {
    /// A ban for `reason` lasting `duration` from now.
    pub fn banned_for(reason: &str, duration: Duration) -> Revoked {
        Revoked {
            kind: RevokeKind::Banned {
                reason: reason.to_owned(),
            },
            until: Utc::now() + duration,
        }
    }

    /// The status a call of this account is answered, and its open streams end with:
    /// PERMISSION_DENIED for a ban (with the reason and the expiry), UNAUTHENTICATED for
    /// a deleted account.
    pub fn status(&self) -> tonic::Status {
        match &self.kind {
            RevokeKind::Banned { reason } => tonic::Status::permission_denied(format!(
                "this account is banned until {}: {reason}",
                self.until
                    .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
            )),
            RevokeKind::Deleted => tonic::Status::unauthenticated(
                "this account was deleted: sign in with another account",
            ),
        }
    }

    fn encode(&self) -> String {
        let (kind, reason) = match &self.kind {
            RevokeKind::Banned { reason } => ("ban", reason.as_str()),
            RevokeKind::Deleted => ("deleted", ""),
        };
        format!("{} {kind} {reason}", self.until.timestamp_millis())
    }

    fn decode(raw: &str) -> Option<Revoked> {
        let mut parts = raw.splitn(3, ' ');
        let until = DateTime::from_timestamp_millis(parts.next()?.parse().ok()?)?;
        let kind = match parts.next()? {
            "ban" => RevokeKind::Banned {
                reason: parts.next().unwrap_or_default().to_owned(),
            },
            "deleted" => RevokeKind::Deleted,
            _ => return None,
        };
        Some(Revoked { kind, until })
    }
}

/// The list as this process knows it; clones share it. Cheap to check on every call.
#[derive(Clone)]
pub struct Revocations {
    inner: Arc<Inner>,
}

struct Inner {
    users: RwLock<HashMap<Uuid, Revoked>>,
    /// Raised whenever the list changes: open streams watch it.
    changed: watch::Sender<u64>,
    /// Where the list is kept when it is shared between processes.
    redis: Option<(Redis, Keys)>,
}

impl std::fmt::Debug for Revocations {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Revocations")
            .field("users", &self.inner.users.read().map(|u| u.len()).ok())
            .field("shared", &self.inner.redis.is_some())
            .finish()
    }
}

impl Default for Revocations {
    fn default() -> Self {
        Revocations::in_memory()
    }
}

impl Revocations {
    /// A list in this process only (one process serves every service, or tests).
    pub fn in_memory() -> Revocations {
        Revocations::with(None)
    }

    fn with(redis: Option<(Redis, Keys)>) -> Revocations {
        Revocations {
            inner: Arc::new(Inner {
                users: RwLock::default(),
                changed: watch::channel(0).0,
                redis,
            }),
        }
    }

    /// The list kept in Redis at `redis` under `shared_prefix` (the deployment's
    /// `[redis] shared_prefix`), read now and again whenever it changes (looked at every
    /// [`POLL_EVERY`]) until `shutdown`. Fails when Redis cannot be reached or the prefix
    /// is not valid.
    pub async fn shared(
        redis: Redis,
        shared_prefix: &str,
        shutdown: CancellationToken,
    ) -> Result<Revocations, String> {
        let keys = Keys::new(shared_prefix)?;
        let list = Revocations::with(Some((redis, keys)));
        let version = list.reload().await.map_err(|e| e.to_string())?;
        let poller = list.clone();
        tokio::spawn(async move { poller.poll(version, shutdown).await });
        Ok(list)
    }

    /// The list in Redis at `url` (see [`Revocations::shared`]), or, when `url` is
    /// `memory`, the one list of this process (every service of `basra dev` on memory
    /// stores shares it, as they would share Redis).
    pub async fn connect(
        url: &str,
        shared_prefix: &str,
        shutdown: CancellationToken,
    ) -> Result<Revocations, String> {
        if url == "memory" {
            static PROCESS: std::sync::OnceLock<Revocations> = std::sync::OnceLock::new();
            return Ok(PROCESS.get_or_init(Revocations::in_memory).clone());
        }
        let redis = Redis::connect(url).await.map_err(|e| e.to_string())?;
        Revocations::shared(redis, shared_prefix, shutdown).await
    }

    /// Why `user` may not call, if they may not.
    pub fn check(&self, user: Uuid) -> Option<Revoked> {
        let users = self.inner.users.read().unwrap_or_else(|e| e.into_inner());
        users.get(&user).filter(|r| r.until > Utc::now()).cloned()
    }

    /// A receiver that sees every change of the list (open streams select on it and
    /// then [`check`](Self::check) their player).
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.inner.changed.subscribe()
    }

    /// Adds `user` to the list (replacing an earlier entry), for every replica. The
    /// `until` is kept to the millisecond, as every replica reads it.
    pub async fn revoke(&self, user: Uuid, revoked: Revoked) -> Result<(), ::redis::RedisError> {
        let until = DateTime::from_timestamp_millis(revoked.until.timestamp_millis())
            .unwrap_or(revoked.until);
        let revoked = Revoked { until, ..revoked };
        if let Some((redis, keys)) = &self.inner.redis {
            let mut conn = redis.conn();
            let _: u64 = conn
                .hset(users_key(keys), user.to_string(), revoked.encode())
                .await?;
            let _: u64 = conn.incr(version_key(keys), 1).await?;
        }
        self.set(|users| {
            users.insert(user, revoked);
        });
        Ok(())
    }

    /// Removes `user` from the list (an unban), for every replica.
    pub async fn restore(&self, user: Uuid) -> Result<(), ::redis::RedisError> {
        if let Some((redis, keys)) = &self.inner.redis {
            let mut conn = redis.conn();
            let _: u64 = conn.hdel(users_key(keys), user.to_string()).await?;
            let _: u64 = conn.incr(version_key(keys), 1).await?;
        }
        self.set(|users| {
            users.remove(&user);
        });
        Ok(())
    }

    fn set(&self, change: impl FnOnce(&mut HashMap<Uuid, Revoked>)) {
        {
            let mut users = self.inner.users.write().unwrap_or_else(|e| e.into_inner());
            change(&mut users);
        }
        self.inner.changed.send_modify(|v| *v += 1);
    }

    /// Reads the whole list from Redis (dropping lapsed entries there) and answers the
    /// version it read.
    async fn reload(&self) -> Result<u64, ::redis::RedisError> {
        let Some((redis, keys)) = &self.inner.redis else {
            return Ok(0);
        };
        let mut conn = redis.conn();
        let version: Option<u64> = conn.get(version_key(keys)).await?;
        let raw: HashMap<String, String> = conn.hgetall(users_key(keys)).await?;
        let now = Utc::now();
        let mut users = HashMap::with_capacity(raw.len());
        let mut lapsed = Vec::new();
        for (id, value) in raw {
            match (Uuid::parse_str(&id), Revoked::decode(&value)) {
                (Ok(user), Some(revoked)) if revoked.until > now => {
                    users.insert(user, revoked);
                }
                _ => lapsed.push(id),
            }
        }
        if !lapsed.is_empty() {
            // Not a change anyone needs to hear of: lapsed entries refuse nothing.
            let _: u64 = conn.hdel(users_key(keys), lapsed).await?;
        }
        self.set(|list| *list = users);
        Ok(version.unwrap_or(0))
    }

    async fn poll(self, mut seen: u64, shutdown: CancellationToken) {
        let Some((redis, keys)) = self.inner.redis.clone() else {
            return;
        };
        let mut tick = tokio::time::interval(POLL_EVERY);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                () = shutdown.cancelled() => return,
                _ = tick.tick() => {}
            }
            let version: Result<Option<u64>, _> = redis.conn().get(version_key(&keys)).await;
            match version {
                Ok(version) if version.unwrap_or(0) != seen => match self.reload().await {
                    Ok(read) => seen = read,
                    Err(err) => tracing::warn!(error = %err, "cannot read the revoked accounts"),
                },
                Ok(_) => {}
                Err(err) => tracing::warn!(error = %err, "cannot read the revoked accounts"),
            }
        }
    }
}

fn users_key(keys: &Keys) -> String {
    keys.key("rv", "users")
}

fn version_key(keys: &Keys) -> String {
    keys.key("rv", "version")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_read_back() {
        let until = DateTime::from_timestamp_millis(1_900_000_000_123).unwrap();
        for kind in [
            RevokeKind::Deleted,
            RevokeKind::Banned {
                reason: "abuse in chat: see the rules".into(),
            },
            RevokeKind::Banned { reason: "".into() },
        ] {
            let revoked = Revoked { kind, until };
            assert_eq!(Revoked::decode(&revoked.encode()), Some(revoked));
        }
        assert_eq!(Revoked::decode("x ban y"), None);
        assert_eq!(Revoked::decode("12 nope"), None);
    }

    #[test]
    fn a_lapsed_entry_refuses_nothing() {
        let list = Revocations::in_memory();
        let user = Uuid::now_v7();
        list.set(|u| {
            u.insert(
                user,
                Revoked {
                    kind: RevokeKind::Deleted,
                    until: Utc::now() - chrono::Duration::seconds(1),
                },
            );
        });
        assert_eq!(list.check(user), None);
    }
}
