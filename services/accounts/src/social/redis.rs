//! Presence and notes in Redis (one node or a cluster; see `basra_platform::redis`).
//!
//! Each player's keys share the player's hash tag, so every script touches one slot:
//!
//! | key (`P` the prefix, `U` the user id, `S` a shard) | type | holds |
//! |---|---|---|
//! | `P:{pr:U}:online` | string, expires | "1" while a feed of theirs is open |
//! | `P:{pr:U}:queue` | string, expires | "1" while they search |
//! | `P:{pr:U}:match` | string, expires | the room they play in (after a `-` when it may not be watched) |
//! | `P:{nt:U}:seq` | counter | the last note's seq (never expires: seqs only rise) |
//! | `P:{nt:U}:log` | stream, ids `seq-1` | the kept notes (`n`: the encoded event) |
//! | `P:{soc:S}:changes` | shard channel | announcements ([`Change`]) of the players of shard S |
//!
//! The reports expire by themselves ([`REPORT_TTL`]); nobody is told when one lapses, so
//! feeds look at their friends' presence again from time to time (see [`super::Hub`]).

use std::time::Duration;

use basra_platform::redis::{Connection, Keys, PubSubEvent, Redis, Script, shard_of};
use redis::AsyncCommands as _;
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use super::{Activity, Change, KEEP_NOTES, NOTES_TTL, Note, Presence, REPORT_TTL, Reported};
use crate::error::{AccountsError, Result};

/// Announcement channels (part of the key layout: changing it splits the replicas).
const SHARDS: u32 = 16;

/// Presence and notes in Redis. Clones share the connection.
#[derive(Clone)]
pub struct RedisSocial {
    redis: Redis,
    keys: Keys,
    presence_set: Script,
    note_push: Script,
    changes: broadcast::Sender<Change>,
    report_ttl: Duration,
}

impl std::fmt::Debug for RedisSocial {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisSocial")
            .field("prefix", &self.keys.prefix())
            .finish_non_exhaustive()
    }
}

fn unavailable(err: impl std::fmt::Display) -> AccountsError {
    AccountsError::SocialUnavailable(err.to_string())
}

impl RedisSocial {
    /// Connects to `url` and listens for every replica's announcements until `shutdown`.
    /// Fails when Redis cannot be reached.
    pub async fn connect(
        url: &str,
        prefix: &str,
        shutdown: CancellationToken,
    ) -> Result<RedisSocial> {
        let keys = Keys::new(prefix).map_err(AccountsError::Internal)?;
        let redis = Redis::connect(url).await.map_err(unavailable)?;
        let store = RedisSocial {
            redis: redis.clone(),
            keys,
            presence_set: Script::new(include_str!("lua/presence_set.lua")),
            note_push: Script::new(include_str!("lua/note_push.lua")),
            changes: broadcast::channel(4096).0,
            report_ttl: REPORT_TTL,
        };
        let changes = store.changes.clone();
        let channels = (0..SHARDS).map(|shard| store.channel(shard)).collect();
        redis
            .subscribe(channels, shutdown, move |event| {
                let change = match event {
                    PubSubEvent::Message { payload, .. } => {
                        Change::decode(&String::from_utf8_lossy(&payload))
                    }
                    PubSubEvent::Resubscribed => Some(Change::Resync),
                };
                if let Some(change) = change {
                    let _ = changes.send(change);
                }
            })
            .await
            .map_err(unavailable)?;
        Ok(store)
    }

    /// Reports last `ttl` instead of [`REPORT_TTL`] (tests watch them lapse).
    pub fn with_report_ttl(mut self, ttl: Duration) -> RedisSocial {
        self.report_ttl = ttl;
        self
    }

    fn conn(&self) -> Connection {
        self.redis.conn()
    }

    fn channel(&self, shard: u32) -> String {
        self.keys.key(&format!("soc:{shard}"), "changes")
    }

    fn presence_keys(&self, user: Uuid) -> [String; 3] {
        let tag = format!("pr:{user}");
        [
            self.keys.key(&tag, "online"),
            self.keys.key(&tag, "queue"),
            self.keys.key(&tag, "match"),
        ]
    }

    pub(super) async fn set(&self, user: Uuid, activity: &Activity, begin: bool) -> Result<()> {
        let mut invocation = self.presence_set.prepare_invoke();
        for key in self.presence_keys(user) {
            invocation.key(key);
        }
        invocation
            .arg(activity.slot())
            .arg(if begin {
                activity.value()
            } else {
                String::new()
            })
            .arg(self.report_ttl.as_millis() as u64)
            .arg(activity.ending_value());
        let changed: i64 = invocation
            .invoke_async(&mut self.conn())
            .await
            .map_err(unavailable)?;
        if changed == 1 {
            self.announce(Change::Presence(user)).await?;
        }
        Ok(())
    }

    pub(super) async fn presence(&self, users: &[Uuid]) -> Result<Vec<Reported>> {
        // One pipeline per player (their keys share a slot): the three reports and their
        // times to live; all in flight at once.
        let mut reads = tokio::task::JoinSet::new();
        for (i, &user) in users.iter().enumerate() {
            let keys = self.presence_keys(user);
            let mut conn = self.conn();
            reads.spawn(async move {
                let mut pipe = redis::pipe();
                pipe.cmd("MGET").arg(&keys);
                for key in &keys {
                    pipe.cmd("PTTL").arg(key);
                }
                let (values, online, queue, matched): (Vec<Option<String>>, i64, i64, i64) =
                    pipe.query_async(&mut conn).await?;
                Ok::<_, redis::RedisError>((i, values, [online, queue, matched]))
            });
        }
        let mut presence = vec![Reported::default(); users.len()];
        while let Some(read) = reads.join_next().await {
            let (i, values, ttls) = read.map_err(unavailable)?.map_err(unavailable)?;
            presence[i] = Reported {
                presence: Presence::from_reports(
                    values[0].is_some(),
                    values[1].is_some(),
                    values[2].as_deref(),
                ),
                // PTTL: -2 for a missing key (and -1 for one without expiry: none here).
                lapses_in: ttls
                    .iter()
                    .filter(|ms| **ms >= 0)
                    .min()
                    .map(|ms| Duration::from_millis(*ms as u64)),
                online: values[0].is_some(),
            };
        }
        Ok(presence)
    }

    pub(super) async fn push_note(&self, user: Uuid, payload: &[u8]) -> Result<u64> {
        let tag = format!("nt:{user}");
        let seq: u64 = self
            .note_push
            .key(self.keys.key(&tag, "seq"))
            .key(self.keys.key(&tag, "log"))
            .arg(payload)
            .arg(KEEP_NOTES)
            .arg(NOTES_TTL.as_millis() as u64)
            .invoke_async(&mut self.conn())
            .await
            .map_err(unavailable)?;
        self.announce(Change::Note(user)).await?;
        Ok(seq)
    }

    /// Drops everything kept about `user`: their presence reports and their notes.
    pub(super) async fn forget(&self, user: Uuid) -> Result<()> {
        let mut conn = self.conn();
        let presence: Vec<String> = self.presence_keys(user).into();
        let _: u64 = conn.del(presence).await.map_err(unavailable)?;
        let tag = format!("nt:{user}");
        let notes = vec![self.keys.key(&tag, "seq"), self.keys.key(&tag, "log")];
        let _: u64 = conn.del(notes).await.map_err(unavailable)?;
        Ok(())
    }

    pub(super) async fn notes_after(&self, user: Uuid, after: u64) -> Result<Vec<Note>> {
        let log = self.keys.key(&format!("nt:{user}"), "log");
        let reply: redis::streams::StreamRangeReply = self
            .conn()
            .xrange_count(log, format!("({after}-1"), "+", KEEP_NOTES)
            .await
            .map_err(unavailable)?;
        Ok(reply
            .ids
            .into_iter()
            .filter_map(|entry| {
                let seq = entry.id.split_once('-')?.0.parse().ok()?;
                let payload = match entry.map.get("n")? {
                    redis::Value::BulkString(bytes) => bytes.clone(),
                    _ => return None,
                };
                Some(Note { seq, payload })
            })
            .collect())
    }

    pub(super) async fn announce(&self, change: Change) -> Result<()> {
        let shard = match change {
            Change::Presence(user) | Change::Note(user) | Change::Friends(user) => {
                shard_of(&user.to_string(), SHARDS)
            }
            Change::Resync => 0,
        };
        redis::cmd("SPUBLISH")
            .arg(self.channel(shard))
            .arg(change.encode())
            .query_async::<i64>(&mut self.conn())
            .await
            .map_err(unavailable)?;
        Ok(())
    }

    pub(super) fn changes(&self) -> broadcast::Receiver<Change> {
        self.changes.subscribe()
    }
}
