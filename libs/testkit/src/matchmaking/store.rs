//! matchmaking's stores for a test: on the test Redis or the cluster under a
//! [`TestPrefix`] (which deletes the keys when dropped), or in memory; and the times and
//! formats the store suites share.

use std::sync::Arc;

use matchmaking::{
    clock::Millis,
    domain::Format,
    store::{MemoryStore, RedisStore},
};

use crate::redis::{TestPrefix, Topology};

/// The tag of every matchmaking test's key prefix.
pub const PREFIX_TAG: &str = "test:mm:";

/// A store suite's "now" (a fixed instant in 2027).
pub const T0: Millis = 1_800_000_000_000;
/// A ticket's heartbeat deadline in the store suites.
pub const TTL: Millis = 15_000;
/// How long a detached or ended ticket is kept in the store suites.
pub const GRACE: Millis = 30_000;

/// The ranked one-against-one queue to 101.
pub const RANKED2: Format = Format {
    ranked: true,
    seats: 2,
    target_score: 101,
};
/// The unranked one-against-one queue to 101.
pub const UNRANKED2: Format = Format {
    ranked: false,
    seats: 2,
    target_score: 101,
};
/// The ranked two-against-two queue to 101.
pub const RANKED4: Format = Format {
    ranked: true,
    seats: 4,
    target_score: 101,
};

/// A fresh prefix for a matchmaking test on one Redis.
pub fn test_prefix() -> TestPrefix {
    TestPrefix::new(PREFIX_TAG)
}

/// A fresh prefix for a matchmaking test on the cluster.
pub fn cluster_prefix() -> TestPrefix {
    TestPrefix::cluster(PREFIX_TAG)
}

/// A fresh in-memory store.
pub fn memory_store() -> Arc<MemoryStore> {
    Arc::new(MemoryStore::new())
}

/// A Redis store under `prefix`, on the Redis (or cluster) the prefix is on. Panics,
/// saying what must run, when it is unreachable: these tests never skip.
pub async fn redis_store(prefix: &TestPrefix) -> Arc<RedisStore> {
    let store = RedisStore::connect(&prefix.url(), prefix.as_str()).await;
    Arc::new(match (store, prefix.topology()) {
        (Ok(store), _) => store,
        (Err(err), Topology::Single) => {
            panic!("Redis must be reachable at REDIS_URL for these tests: {err}")
        }
        (Err(err), Topology::Cluster) => panic!(
            "a Redis Cluster must be reachable at REDIS_CLUSTER_URL for these tests \
             (scripts/redis-cluster.sh start): {err}"
        ),
    })
}
