//! A test's own keys in the shared test Redis (or Redis Cluster): a [`TestPrefix`] names
//! them and deletes them when it is dropped, also when the test panics; and what a test
//! may ask of Redis besides its own store ([`commands_mentioning`]: `MONITOR`).
//!
//! Redis must be there: nothing here skips a test when it is not (the store's connect
//! fails, and the test with it).

use std::time::Duration;

use crate::{redis_cluster_url, redis_url, unique_prefix};

/// Where a test's keys live: one Redis (`REDIS_URL`) or the cluster (`REDIS_CLUSTER_URL`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Topology {
    /// One node.
    Single,
    /// A Redis Cluster.
    Cluster,
}

impl Topology {
    /// The URL a store connects to for this topology.
    pub fn url(self) -> String {
        match self {
            Topology::Single => redis_url(),
            Topology::Cluster => redis_cluster_url(),
        }
    }
}

/// A key prefix no other test uses, whose keys go when it is dropped (best effort: a
/// Redis that is down keeps them, under a prefix nobody uses again).
#[derive(Debug)]
pub struct TestPrefix {
    prefix: String,
    topology: Topology,
}

impl TestPrefix {
    /// A fresh prefix starting with `tag` (`"test:mm:"`) on one Redis.
    pub fn new(tag: &str) -> TestPrefix {
        TestPrefix::on(Topology::Single, tag)
    }

    /// A fresh prefix starting with `tag` on the Redis Cluster.
    pub fn cluster(tag: &str) -> TestPrefix {
        TestPrefix::on(Topology::Cluster, tag)
    }

    /// A fresh prefix starting with `tag` on `topology`.
    pub fn on(topology: Topology, tag: &str) -> TestPrefix {
        TestPrefix {
            prefix: unique_prefix(tag),
            topology,
        }
    }

    /// The prefix.
    pub fn as_str(&self) -> &str {
        &self.prefix
    }

    /// The URL of the Redis (or cluster) its keys are on.
    pub fn url(&self) -> String {
        self.topology.url()
    }

    /// One Redis or the cluster.
    pub fn topology(&self) -> Topology {
        self.topology
    }
}

impl std::fmt::Display for TestPrefix {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.prefix)
    }
}

impl Drop for TestPrefix {
    fn drop(&mut self) {
        match self.topology {
            Topology::Single => forget_prefix(&self.prefix),
            Topology::Cluster => forget_cluster_prefix(&self.prefix),
        }
    }
}

/// Deletes the keys under `prefix` on the test Redis (best effort, on a plain thread:
/// `Drop` cannot await).
pub fn forget_prefix(prefix: &str) {
    let pattern = format!("{prefix}:*");
    let _ = std::thread::spawn(move || {
        let Ok(client) = ::redis::Client::open(redis_url()) else {
            return;
        };
        let Ok(mut conn) = client.get_connection() else {
            return;
        };
        let keys: Vec<String> = ::redis::cmd("KEYS")
            .arg(&pattern)
            .query(&mut conn)
            .unwrap_or_default();
        for chunk in keys.chunks(500) {
            let _: ::redis::RedisResult<()> = ::redis::cmd("UNLINK").arg(chunk).query(&mut conn);
        }
    })
    .join();
}

/// [`forget_prefix`] on the cluster: every node, one key at a time (a multi-key command
/// must stay in one slot; replicas refuse the deletes, their primaries do them).
pub fn forget_cluster_prefix(prefix: &str) {
    let pattern = format!("{prefix}:*");
    let _ = std::thread::spawn(move || {
        for node in redis_cluster_url().split(',') {
            let Ok(mut conn) = ::redis::Client::open(node.trim()).and_then(|c| c.get_connection())
            else {
                continue;
            };
            let keys: Vec<String> = ::redis::cmd("KEYS")
                .arg(&pattern)
                .query(&mut conn)
                .unwrap_or_default();
            for key in keys {
                let _: ::redis::RedisResult<()> = ::redis::cmd("UNLINK").arg(key).query(&mut conn);
            }
        }
    })
    .join();
}

/// How many commands clients send the test Redis that mention `needle` (a key or an
/// argument) within `window`, as Redis's `MONITOR` reports them (a script's own
/// commands, `[0 lua]`, are not counted: a script call is one read).
pub async fn commands_mentioning(needle: &str, window: Duration) -> usize {
    let needle = needle.to_owned();
    tokio::task::spawn_blocking(move || {
        let client = ::redis::Client::open(redis_url()).expect("REDIS_URL");
        let mut conn = client.get_connection().expect("Redis must be running");
        conn.set_read_timeout(Some(Duration::from_millis(50)))
            .expect("a read timeout");
        conn.send_packed_command(&::redis::cmd("MONITOR").get_packed_command())
            .expect("MONITOR");
        let deadline = std::time::Instant::now() + window;
        let mut seen = 0;
        while std::time::Instant::now() < deadline {
            match conn.recv_response() {
                Ok(::redis::Value::SimpleString(line))
                    if line.contains(&needle) && !line.contains(" lua]") =>
                {
                    seen += 1
                }
                Ok(_) => {}
                Err(err) if err.is_timeout() => {}
                Err(err) => panic!("MONITOR: {err}"),
            }
        }
        seen
    })
    .await
    .expect("the MONITOR thread")
}
