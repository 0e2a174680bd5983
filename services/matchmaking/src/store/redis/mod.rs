//! The Redis store: the queue and the lobby as Redis data, every state
//! change one Lua script, so any number of replicas share them safely.
//!
//! Key layout (`P` is the configured prefix, `F` a format's key such as `r.2.101`):
//!
//! | key | slot | what |
//! |---|---|---|
//! | `P:{q:F}:t:<ticket>` | format | hash: one ticket (account, format, rating, queue time, state, result; `tomb` while it is a tombstone) |
//! | `P:{q:F}:w` | format | zset: the format's pool by queue time (positions, oldest first) |
//! | `P:{q:F}:r` | format | zset: the same pool by rating (window search) |
//! | `P:{q:F}:alive` | format | zset: ticket deadlines (heartbeat, resume grace, result retention) |
//! | `P:{q:F}:g:<room>` | format | string: a formed group (JSON, with its lease number) waiting for its room |
//! | `P:{q:F}:pending` | format | zset: groups by lease deadline or retry time (takeover, retry) |
//! | `P:{q:F}:round` | format | string: the format's round throttle (expires) |
//! | `P:{q:F}:events` | format | shard channel (`SPUBLISH`): ids of the format's tickets whose state changed |
//! | `P:{t:<ticket>}` | the ticket | string `"F owner"`: the ticket's locator, claimed once (`SET NX`) |
//! | `P:{pl:<account>}:search` | the account | hash: `cur`, the account's live search |
//! | `P:{pl:<account>}:old` | the account | set: superseded tickets whose cancel is not confirmed yet |
//! | `P:{q}:fmts` | registry | set: every format ever used (rounds, reclaim, expiry, lengths walk it) |
//! | `P:{lb:F}:room:<id>` | the room's mode | hash: a room (meta JSON, seats JSON, status, public, lobby sequence) |
//! | `P:{lb:F}:public` | the mode | zset: the mode's open public rooms by lobby sequence (oldest first) |
//! | `P:{lb:F}:expiry` | the mode | zset: the mode's rooms waiting for players, by expiry time (`rooms.ttl_seconds`); an expired one is closed and its keys kept `rooms.expired_retention_seconds` more |
//! | `P:{rm:<id>}:mode` | the room | string: the room's mode `F` (its locator) |
//! | `P:{code:<code>}:room` | the code | string: join code → room, for as long as the room is kept |
//! | `P:{lb}:seq` | lobby registry | counter: the lobby sequence, one order over every mode's public rooms |
//! | `P:{lb}:modes` | lobby registry | set: every mode a room was made in (listings walk it) |
//! | `P:{pl:<account>}:req:<request>` | the account | string: CreateRoom idempotency → room |
//! | `P:{pl:<account>}:guess:<bucket>` | the account | counter: wrong join codes in a time bucket |
//! | `P:{pl:<account>}:inv:<room>` | the account | string: the account was invited to the room (expires with the room), so its seat is recorded as filled by an invite |
//! | `P:{pl:<account>}:at` | the account | string: the room the account was last seated in (expires) |
//!
//! Every script touches one slot, so this works on Redis Cluster. A script is called
//! with its slot's key (`P:{q:F}`, `P:{pl:A}` or `P:{lb:F}`), which routes it, and
//! derives every key name from it: the tickets a pairing round reads are found in the
//! pools during the round, so they cannot be named in advance, but they are all in
//! that format's slot. Each format's queue is its own slot (so formats spread over the
//! primaries of a cluster); a pairing round, reclaim, expiry, commit, release and
//! defer each run in one format's slot, and the pool is never read across slots.
//!
//! A new search (ticket N of account A in format F) is four steps, each atomic in its
//! slot, ordered so that an account is in at most one pool at every instant:
//! 1. **claim** N's locator (`SET NX GET`; another owner: refused; the same owner: a
//!    resume, in the stored format);
//! 2. **swap** in `{pl:A}`: N becomes `cur`, the ticket it replaces goes into `old`;
//! 3. **cancel** every ticket in `old` in its own format's slot (a ticket not inserted
//!    yet gets a **tombstone**, a cancelled record); confirmed ones leave `old`. If one
//!    is in a formed group the search is refused and the swap undone (after handling
//!    them all);
//! 4. **insert** N in `{q:F}`, refused (N's cancelled view) if a tombstone is there.
//!
//! Crash cases between the steps: the repo's `ARCHITECTURE.md`. The lobby is split the
//! same way, one slot per mode (`{lb:F}`, F as for the queue): taking, freeing a seat,
//! closing and inserting each touch one mode; see [`lobby`].
//!
//! [`queue`] implements the queue's role on [`RedisStore`], [`lobby`] the lobby's; the
//! `.lua` files are next to them, in `queue/` and `lobby/`.

mod lobby;
mod queue;
mod remembered;

use std::collections::HashSet;

use basra_platform::redis::{Connection, Keys, Redis};
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use crate::error::{MatchmakingError, Result};

pub use self::queue::pairing_script;

/// The Redis store: both roles on one connection and one key prefix, [`QueueStore`]
/// in `queue.rs` and [`LobbyStore`] in `lobby.rs`. Cheap to share (`Arc`); one
/// multiplexed connection per node that reconnects by itself, plus one subscription
/// for ticket events.
///
/// [`QueueStore`]: crate::store::QueueStore
/// [`LobbyStore`]: crate::store::LobbyStore
#[derive(Debug)]
pub struct RedisStore {
    /// Subscriptions (the queue's event channels).
    redis: Redis,
    conn: Connection,
    keys: Keys,
    queue_scripts: queue::Scripts,
    lobby_scripts: lobby::Scripts,
    /// Where ticket events go (every format's channel feeds it).
    events: broadcast::Sender<String>,
    /// Ends the subscriptions when the store is dropped.
    listening: CancellationToken,
    /// Formats this process has registered and whose channel it listens on.
    known: tokio::sync::Mutex<HashSet<String>>,
    /// Ticket → format, for the tickets this process has looked up.
    formats: remembered::Remembered,
    /// Room → mode, for the rooms this process made or looked up.
    room_modes: remembered::Remembered,
}

impl Drop for RedisStore {
    fn drop(&mut self) {
        self.listening.cancel();
    }
}

impl RedisStore {
    /// Connects to `url` (one node, or a comma-separated list of cluster nodes; fails
    /// if Redis is unreachable), keys under `prefix` (no `{` or `}`: hash tags are the
    /// store's business).
    pub async fn connect(url: &str, prefix: &str) -> Result<RedisStore> {
        let keys = Keys::new(prefix)
            .map_err(|msg| MatchmakingError::bad_setting(format!("redis.prefix: {msg}")))?;
        let redis = Redis::connect(url).await?;
        // Each format's event channel is subscribed when this process first queues a
        // ticket in it (before the ticket enters), so none of its events is missed.
        // Events lost while a subscription is down are covered by the streams' own
        // polling.
        Ok(RedisStore {
            conn: redis.conn(),
            redis,
            keys,
            queue_scripts: queue::Scripts::new(),
            lobby_scripts: lobby::Scripts::new(),
            events: broadcast::channel(16 * 1024).0,
            listening: CancellationToken::new(),
            known: tokio::sync::Mutex::new(HashSet::new()),
            formats: remembered::Remembered::default(),
            room_modes: remembered::Remembered::default(),
        })
    }

    fn conn(&self) -> Connection {
        self.conn.clone()
    }
}

fn corrupt(what: &str) -> MatchmakingError {
    MatchmakingError::Corrupt(what.to_owned())
}

fn b(v: bool) -> &'static str {
    if v { "1" } else { "0" }
}
