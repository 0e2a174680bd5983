//! Presence and the notification feed: what friends see of each other live.
//!
//! Friendships live in PostgreSQL ([`crate::store`]); what players are doing right now and
//! the notifications waiting for them live here, in Redis ([`RedisSocial`]) or in memory
//! for `basra dev` ([`MemorySocial`]), behind one [`SocialStore`].
//!
//! - **Presence** is made of up to three reports per player, one per [`Activity`] kind
//!   (online: a WatchFriends stream; in the queue; in a match), each lasting
//!   [`REPORT_TTL`] unless repeated. A player's [`Presence`] is the busiest one. Reports
//!   come from this service's own feed streams and from game-session and matchmaking
//!   (`ReportPresence`); a replica that dies stops repeating them, so its players go
//!   offline by themselves.
//! - **Notes** (friend requests, acceptances, invites) are numbered per player and kept
//!   ([`KEEP_NOTES`], [`NOTES_TTL`]) so a feed that reconnects gets what it missed.
//! - Every change that a feed may care about is announced as a [`Change`] to every
//!   accounts replica; [`Hub`] hands it to the feeds of this replica that care.

mod hub;
pub mod memory;
pub mod redis;

use std::time::Duration;

use tokio::sync::broadcast;
use uuid::Uuid;

use crate::error::Result;

pub use hub::{FeedTap, Hub};
pub use memory::MemorySocial;
pub use redis::RedisSocial;

/// How long a presence report lasts unless repeated.
pub const REPORT_TTL: Duration = Duration::from_secs(60);
/// How many notes a player's feed keeps.
pub const KEEP_NOTES: usize = 100;
/// How long a player's notes are kept after the last one.
pub const NOTES_TTL: Duration = Duration::from_secs(7 * 24 * 3600);

/// One kind of thing a player can be doing.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Activity {
    /// A feed (WatchFriends) is open.
    Online,
    /// Searching for a match.
    Queue,
    /// In a match.
    Match {
        /// The room.
        room_id: String,
        /// Whether friends may watch it (and so see which room it is).
        spectatable: bool,
    },
}

impl Activity {
    /// Which of a player's three reports this is (1-based, as the script has them).
    fn slot(&self) -> usize {
        match self {
            Activity::Online => 1,
            Activity::Queue => 2,
            Activity::Match { .. } => 3,
        }
    }

    /// The stored value: "1", or a match's room (after a `-` when it may not be watched).
    fn value(&self) -> String {
        match self {
            Activity::Online | Activity::Queue => "1".into(),
            Activity::Match {
                room_id,
                spectatable: true,
            } => room_id.clone(),
            Activity::Match {
                room_id,
                spectatable: false,
            } => format!("-{room_id}"),
        }
    }

    /// On an end, the value the report must still hold to be removed: a match's own
    /// (the player may be in the next room already); anything for the others.
    fn ending_value(&self) -> String {
        match self {
            Activity::Match { .. } => self.value(),
            _ => String::new(),
        }
    }
}

/// A player's presence as read, and how long until the soonest of their reports lapses
/// unless repeated: a feed looks again then, since nobody announces a lapse.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Reported {
    /// What the player's friends see now.
    pub presence: Presence,
    /// Until one of the player's reports lapses; `None` when nothing is reported.
    pub lapses_in: Option<Duration>,
    /// Whether the "online" report is live: a WatchFriends stream of the player's is
    /// open (the app is open; nothing is pushed to them).
    pub online: bool,
}

/// What a player's friends see.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Presence {
    /// Nothing reported.
    #[default]
    Offline,
    /// A feed is open.
    Online,
    /// Searching.
    InQueue,
    /// Playing: the room when it may be watched.
    InMatch(Option<String>),
}

impl Presence {
    /// The busiest of a player's reports: online, in the queue, in a match (the stored
    /// match value: the room, or `-` and the room when it may not be watched).
    fn from_reports(online: bool, queue: bool, matched: Option<&str>) -> Presence {
        match matched {
            Some(hidden) if hidden.starts_with('-') => Presence::InMatch(None),
            Some(room) => Presence::InMatch(Some(room.to_owned())),
            None if queue => Presence::InQueue,
            None if online => Presence::Online,
            None => Presence::Offline,
        }
    }
}

/// A notification kept on a player's feed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Note {
    /// Its number on the player's feed, from 1.
    pub seq: u64,
    /// The encoded feed event (`WatchFriendsResponse` without its seq).
    pub payload: Vec<u8>,
}

/// Something a feed may care about, announced to every replica.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// The player's presence changed.
    Presence(Uuid),
    /// The player has a new note.
    Note(Uuid),
    /// The player's friend list changed (a friendship began or ended).
    Friends(Uuid),
    /// Changes may have been missed (a lost subscription): look again at everything.
    Resync,
}

impl Change {
    /// The announcement's wire form.
    fn encode(self) -> String {
        match self {
            Change::Presence(user) => format!("p {user}"),
            Change::Note(user) => format!("n {user}"),
            Change::Friends(user) => format!("f {user}"),
            Change::Resync => "*".into(),
        }
    }

    /// Reads an announcement; `None` when it is not one of ours.
    fn decode(raw: &str) -> Option<Change> {
        if raw == "*" {
            return Some(Change::Resync);
        }
        let (kind, user) = raw.split_once(' ')?;
        let user = Uuid::parse_str(user).ok()?;
        match kind {
            "p" => Some(Change::Presence(user)),
            "n" => Some(Change::Note(user)),
            "f" => Some(Change::Friends(user)),
            _ => None,
        }
    }
}

/// Presence and notes, in Redis or in memory.
#[derive(Debug, Clone)]
pub enum SocialStore {
    /// In this process (`basra dev`, tests).
    Memory(MemorySocial),
    /// In Redis (one node or a cluster).
    Redis(RedisSocial),
}

impl SocialStore {
    /// The store `[redis]` names: Redis (listening for every replica's changes until
    /// `shutdown`), or this process's memory for `url = "memory"`.
    pub async fn connect(
        settings: &basra_platform::redis::RedisSettings,
        shutdown: tokio_util::sync::CancellationToken,
    ) -> Result<SocialStore> {
        if settings.is_memory() {
            tracing::warn!(
                "redis.url is \"memory\": presence and notifications live in this process only \
                 (one accounts replica)"
            );
            return Ok(SocialStore::Memory(MemorySocial::new()));
        }
        Ok(SocialStore::Redis(
            RedisSocial::connect(&settings.url, &settings.prefix, shutdown).await?,
        ))
    }

    /// `user` is doing `activity` for the next [`REPORT_TTL`] (announced when their
    /// presence changed).
    pub async fn begin(&self, user: Uuid, activity: &Activity) -> Result<()> {
        match self {
            SocialStore::Memory(store) => {
                store.set(user, activity, true);
                Ok(())
            }
            SocialStore::Redis(store) => store.set(user, activity, true).await,
        }
    }

    /// `user` stopped doing `activity` (a match ends only if it is still that room).
    pub async fn end(&self, user: Uuid, activity: &Activity) -> Result<()> {
        match self {
            SocialStore::Memory(store) => {
                store.set(user, activity, false);
                Ok(())
            }
            SocialStore::Redis(store) => store.set(user, activity, false).await,
        }
    }

    /// The presence of each of `users`, in their order, with when it may lapse.
    pub async fn presence(&self, users: &[Uuid]) -> Result<Vec<Reported>> {
        match self {
            SocialStore::Memory(store) => Ok(store.presence(users)),
            SocialStore::Redis(store) => store.presence(users).await,
        }
    }

    /// Adds a note to `user`'s feed and announces it; returns its seq.
    pub async fn push_note(&self, user: Uuid, payload: &[u8]) -> Result<u64> {
        match self {
            SocialStore::Memory(store) => Ok(store.push_note(user, payload)),
            SocialStore::Redis(store) => store.push_note(user, payload).await,
        }
    }

    /// `user`'s kept notes after `after`, oldest first.
    pub async fn notes_after(&self, user: Uuid, after: u64) -> Result<Vec<Note>> {
        match self {
            SocialStore::Memory(store) => Ok(store.notes_after(user, after)),
            SocialStore::Redis(store) => store.notes_after(user, after).await,
        }
    }

    /// Drops `user`'s presence and kept notes (a deleted account), and tells their
    /// friends' feeds that they went.
    pub async fn forget(&self, user: Uuid) -> Result<()> {
        match self {
            SocialStore::Memory(store) => store.forget(user),
            SocialStore::Redis(store) => store.forget(user).await?,
        }
        self.announce(Change::Presence(user)).await
    }

    /// Announces that `user`'s friend list changed.
    pub async fn friends_changed(&self, user: Uuid) -> Result<()> {
        self.announce(Change::Friends(user)).await
    }

    async fn announce(&self, change: Change) -> Result<()> {
        match self {
            SocialStore::Memory(store) => {
                store.announce(change);
                Ok(())
            }
            SocialStore::Redis(store) => store.announce(change).await,
        }
    }

    /// Every change announced from now on, by any replica.
    pub fn changes(&self) -> broadcast::Receiver<Change> {
        match self {
            SocialStore::Memory(store) => store.changes(),
            SocialStore::Redis(store) => store.changes(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_busiest_activity_is_what_friends_see() {
        assert_eq!(
            Presence::from_reports(false, false, None),
            Presence::Offline
        );
        assert_eq!(Presence::from_reports(true, false, None), Presence::Online);
        assert_eq!(Presence::from_reports(true, true, None), Presence::InQueue);
        assert_eq!(
            Presence::from_reports(true, true, Some("r1")),
            Presence::InMatch(Some("r1".into()))
        );
        assert_eq!(
            Presence::from_reports(false, false, Some("-r2")),
            Presence::InMatch(None)
        );
    }

    #[test]
    fn announcements_read_back() {
        let user = Uuid::now_v7();
        for change in [
            Change::Presence(user),
            Change::Note(user),
            Change::Friends(user),
            Change::Resync,
        ] {
            assert_eq!(Change::decode(&change.encode()), Some(change));
        }
        assert_eq!(Change::decode("x 1"), None);
        assert_eq!(Change::decode("p not-a-uuid"), None);
    }
}
