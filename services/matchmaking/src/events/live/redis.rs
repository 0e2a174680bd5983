//! [`LiveStore`] on Redis or Redis Cluster. Keys (`P` the `[redis] prefix`):
//!
//! | key | what |
//! |---|---|
//! | `P:{ev:<id>}:lease` | string: the driving replica's name, expiring with the lease (`PX`) |
//! | `P:{ev:<id>}:state` | hash: `v` the version, `s` the state (JSON); kept 7 days after the last save |
//!
//! Both keys of an event share its slot, so each call is one script in one slot.

use basra_platform::redis::{Connection, Keys, Redis};
use redis::Script;

use super::{LiveStore, Stored};
use crate::clock::Millis;
use crate::error::{MatchmakingError, Result};

/// How long a state outlives its last save.
const STATE_TTL_MS: i64 = 7 * 24 * 3_600_000;

/// Live state on Redis.
#[derive(Debug, Clone)]
pub struct RedisLiveStore {
    conn: Connection,
    keys: Keys,
    acquire: Script,
    release: Script,
    save: Script,
}

const ACQUIRE: &str = r#"
local lease = KEYS[1] .. ':lease'
local cur = redis.call('GET', lease)
if cur and cur ~= ARGV[1] then return 0 end
redis.call('SET', lease, ARGV[1], 'PX', ARGV[2])
return 1
"#;

const RELEASE: &str = r#"
local lease = KEYS[1] .. ':lease'
if redis.call('GET', lease) == ARGV[1] then redis.call('DEL', lease) end
return 1
"#;

const SAVE: &str = r#"
local lease = KEYS[1] .. ':lease'
local state = KEYS[1] .. ':state'
if redis.call('GET', lease) ~= ARGV[1] then return 0 end
local v = tonumber(redis.call('HGET', state, 'v') or '0')
if v ~= tonumber(ARGV[2]) then return 0 end
redis.call('HSET', state, 'v', v + 1, 's', ARGV[3])
redis.call('PEXPIRE', state, ARGV[4])
return 1
"#;

impl RedisLiveStore {
    /// Connects to `url` (one node or a cluster's nodes), keys under `prefix`.
    pub async fn connect(url: &str, prefix: &str) -> Result<RedisLiveStore> {
        let keys = Keys::new(prefix)
            .map_err(|msg| MatchmakingError::bad_setting(format!("redis.prefix: {msg}")))?;
        let redis = Redis::connect(url).await?;
        Ok(RedisLiveStore {
            conn: redis.conn(),
            keys,
            acquire: Script::new(ACQUIRE),
            release: Script::new(RELEASE),
            save: Script::new(SAVE),
        })
    }

    fn slot(&self, event_id: &str) -> String {
        self.keys.slot(&format!("ev:{event_id}"))
    }
}

#[tonic::async_trait]
impl LiveStore for RedisLiveStore {
    async fn acquire(
        &self,
        event_id: &str,
        holder: &str,
        _now: Millis,
        ttl_ms: Millis,
    ) -> Result<bool> {
        let won: i64 = self
            .acquire
            .key(self.slot(event_id))
            .arg(holder)
            .arg(ttl_ms.max(1))
            .invoke_async(&mut self.conn.clone())
            .await?;
        Ok(won == 1)
    }

    async fn release(&self, event_id: &str, holder: &str) -> Result<()> {
        let _: i64 = self
            .release
            .key(self.slot(event_id))
            .arg(holder)
            .invoke_async(&mut self.conn.clone())
            .await?;
        Ok(())
    }

    async fn load(&self, event_id: &str) -> Result<Option<Stored>> {
        let key = format!("{}:state", self.slot(event_id));
        let (v, s): (Option<u64>, Option<String>) = redis::cmd("HMGET")
            .arg(&key)
            .arg("v")
            .arg("s")
            .query_async(&mut self.conn.clone())
            .await?;
        Ok(match (v, s) {
            (Some(version), Some(json)) => Some(Stored { version, json }),
            _ => None,
        })
    }

    async fn version(&self, event_id: &str) -> Result<Option<u64>> {
        let key = format!("{}:state", self.slot(event_id));
        let v: Option<u64> = redis::cmd("HGET")
            .arg(&key)
            .arg("v")
            .query_async(&mut self.conn.clone())
            .await?;
        Ok(v)
    }

    async fn save(&self, event_id: &str, holder: &str, expected: u64, json: &str) -> Result<bool> {
        let saved: i64 = self
            .save
            .key(self.slot(event_id))
            .arg(holder)
            .arg(expected)
            .arg(json)
            .arg(STATE_TTL_MS)
            .invoke_async(&mut self.conn.clone())
            .await?;
        Ok(saved == 1)
    }
}
