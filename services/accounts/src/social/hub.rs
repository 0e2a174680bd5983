//! Hands each announced [`Change`] to the feeds of this replica that care about it.
//!
//! Every replica hears every change (a few per player per match); a feed cares about its
//! own player (notes, friend list) and their friends (presence). Each feed registers the
//! players it cares about ([`FeedTap::watch`]) and the hub keeps an index from player to
//! feeds, so a change costs one lookup, not one look per open feed.
//!
//! A feed whose queue is full misses the change; a lost subscription or a lagging hub
//! sends every feed [`Change::Resync`]. Feeds also look again at everything from time
//! to time, so a missed change is late, never lost for good.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::{broadcast, mpsc};
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use super::{Change, SocialStore};

/// Changes queued per feed before it misses some.
const FEED_QUEUE: usize = 256;

/// The feeds of this replica by the players they care about. Cheap to clone.
#[derive(Debug, Clone, Default)]
pub struct Hub {
    inner: Arc<Mutex<Index>>,
}

#[derive(Debug, Default)]
struct Index {
    next_id: u64,
    /// Player → the feeds caring about them.
    by_player: HashMap<Uuid, Vec<(u64, mpsc::Sender<Change>)>>,
    /// Feed → the players it cares about, and its queue.
    feeds: HashMap<u64, (Vec<Uuid>, mpsc::Sender<Change>)>,
}

impl Index {
    fn forget(&mut self, id: u64) -> Option<mpsc::Sender<Change>> {
        let (players, tx) = self.feeds.remove(&id)?;
        for player in players {
            if let Some(feeds) = self.by_player.get_mut(&player) {
                feeds.retain(|(feed, _)| *feed != id);
                if feeds.is_empty() {
                    self.by_player.remove(&player);
                }
            }
        }
        Some(tx)
    }

    fn register(&mut self, id: u64, players: Vec<Uuid>, tx: mpsc::Sender<Change>) {
        for &player in &players {
            self.by_player
                .entry(player)
                .or_default()
                .push((id, tx.clone()));
        }
        self.feeds.insert(id, (players, tx));
    }
}

impl Hub {
    /// A hub handing out `store`'s changes until `shutdown`.
    pub fn start(store: &SocialStore, shutdown: CancellationToken) -> Hub {
        let hub = Hub::default();
        tokio::spawn(dispatch(hub.clone(), store.changes(), shutdown));
        hub
    }

    /// A new feed, caring about `players`.
    pub fn tap(&self, players: Vec<Uuid>) -> FeedTap {
        let (tx, rx) = mpsc::channel(FEED_QUEUE);
        let mut index = self.lock();
        index.next_id += 1;
        let id = index.next_id;
        index.register(id, players, tx);
        FeedTap {
            hub: self.clone(),
            id,
            rx,
        }
    }

    /// How many feeds are open on this replica.
    pub fn feeds(&self) -> usize {
        self.lock().feeds.len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Index> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn deliver(&self, change: Change) {
        let index = self.lock();
        match change {
            Change::Presence(player) | Change::Note(player) | Change::Friends(player) => {
                for (_, tx) in index.by_player.get(&player).into_iter().flatten() {
                    let _ = tx.try_send(change);
                }
            }
            Change::Resync => {
                for (_, tx) in index.feeds.values() {
                    let _ = tx.try_send(change);
                }
            }
        }
    }
}

async fn dispatch(hub: Hub, mut changes: broadcast::Receiver<Change>, shutdown: CancellationToken) {
    loop {
        let change = tokio::select! {
            () = shutdown.cancelled() => return,
            change = changes.recv() => change,
        };
        match change {
            Ok(change) => hub.deliver(change),
            Err(broadcast::error::RecvError::Lagged(_)) => hub.deliver(Change::Resync),
            Err(broadcast::error::RecvError::Closed) => return,
        }
    }
}

/// One feed's share of the hub: the changes about the players it cares about. Leaves
/// the hub when dropped.
#[derive(Debug)]
pub struct FeedTap {
    hub: Hub,
    id: u64,
    rx: mpsc::Receiver<Change>,
}

impl FeedTap {
    /// Cares about `players` from now on, instead of those before.
    pub fn watch(&mut self, players: Vec<Uuid>) {
        let mut index = self.hub.lock();
        if let Some(tx) = index.forget(self.id) {
            index.register(self.id, players, tx);
        }
    }

    /// The next change (never `None` while the tap lives: the hub holds its sender).
    pub async fn recv(&mut self) -> Option<Change> {
        self.rx.recv().await
    }
}

impl Drop for FeedTap {
    fn drop(&mut self) {
        self.hub.lock().forget(self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_change_reaches_the_feeds_caring_about_its_player_only() {
        let hub = Hub::default();
        let (a, b, c) = (Uuid::now_v7(), Uuid::now_v7(), Uuid::now_v7());
        let mut of_a = hub.tap(vec![a, b]);
        let mut of_c = hub.tap(vec![c]);
        hub.deliver(Change::Presence(b));
        assert_eq!(of_a.recv().await, Some(Change::Presence(b)));
        assert!(of_c.rx.try_recv().is_err(), "c does not care about b");

        of_c.watch(vec![c, b]);
        hub.deliver(Change::Note(b));
        assert_eq!(of_a.recv().await, Some(Change::Note(b)));
        assert_eq!(of_c.recv().await, Some(Change::Note(b)));

        hub.deliver(Change::Resync);
        assert_eq!(of_a.recv().await, Some(Change::Resync));
        assert_eq!(of_c.recv().await, Some(Change::Resync));

        drop(of_a);
        assert_eq!(hub.feeds(), 1);
        assert!(
            !hub.lock().by_player.contains_key(&a),
            "a's entry left with its feed"
        );
    }
}
