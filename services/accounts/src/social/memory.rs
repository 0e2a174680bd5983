//! Presence and notes in this process, for `basra dev` and tests: the same rules as
//! [`super::RedisSocial`], with expiry checked on read.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::broadcast;
use uuid::Uuid;

use super::{Activity, Change, KEEP_NOTES, NOTES_TTL, Note, Presence, REPORT_TTL, Reported};

/// Presence and notes in memory. Clones share them.
#[derive(Debug, Clone)]
pub struct MemorySocial {
    inner: Arc<Mutex<Inner>>,
    changes: broadcast::Sender<Change>,
    report_ttl: Duration,
}

#[derive(Debug, Default)]
struct Inner {
    /// Per player, the three reports (online, queue, match) with their value and end.
    reports: HashMap<Uuid, [Option<(String, Instant)>; 3]>,
    /// Per player, the last seq given and the kept notes with when they lapse.
    notes: HashMap<Uuid, (u64, VecDeque<(Note, Instant)>)>,
}

impl Default for MemorySocial {
    fn default() -> Self {
        MemorySocial {
            inner: Arc::default(),
            changes: broadcast::channel(4096).0,
            report_ttl: REPORT_TTL,
        }
    }
}

impl Inner {
    /// The player's presence, and how long until the soonest of their live reports lapses.
    fn reported(&self, user: Uuid, now: Instant) -> Reported {
        let lapses_in = self.reports.get(&user).and_then(|reports| {
            reports
                .iter()
                .flatten()
                .filter(|(_, until)| *until > now)
                .map(|(_, until)| *until - now)
                .min()
        });
        let online = self
            .reports
            .get(&user)
            .is_some_and(|reports| reports[0].as_ref().is_some_and(|(_, until)| *until > now));
        Reported {
            presence: self.presence(user, now),
            lapses_in,
            online,
        }
    }

    fn presence(&self, user: Uuid, now: Instant) -> Presence {
        let Some(reports) = self.reports.get(&user) else {
            return Presence::Offline;
        };
        let live = |i: usize| {
            reports[i]
                .as_ref()
                .filter(|(_, until)| *until > now)
                .map(|(value, _)| value.as_str())
        };
        Presence::from_reports(live(0).is_some(), live(1).is_some(), live(2))
    }
}

impl MemorySocial {
    /// An empty store.
    pub fn new() -> MemorySocial {
        MemorySocial::default()
    }

    /// Reports last `ttl` instead of [`REPORT_TTL`] (tests watch them lapse).
    pub fn with_report_ttl(mut self, ttl: Duration) -> MemorySocial {
        self.report_ttl = ttl;
        self
    }

    pub(super) fn set(&self, user: Uuid, activity: &Activity, begin: bool) {
        let now = Instant::now();
        let changed = {
            let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
            let before = inner.presence(user, now);
            let slot = &mut inner.reports.entry(user).or_default()[activity.slot() - 1];
            if begin {
                *slot = Some((activity.value(), now + self.report_ttl));
            } else if activity.ending_value().is_empty()
                || slot
                    .as_ref()
                    .is_some_and(|(value, _)| *value == activity.ending_value())
            {
                *slot = None;
            }
            inner.presence(user, now) != before
        };
        if changed {
            self.announce(Change::Presence(user));
        }
    }

    pub(super) fn presence(&self, users: &[Uuid]) -> Vec<Reported> {
        let now = Instant::now();
        let inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        users
            .iter()
            .map(|&user| inner.reported(user, now))
            .collect()
    }

    pub(super) fn push_note(&self, user: Uuid, payload: &[u8]) -> u64 {
        let now = Instant::now();
        let seq = {
            let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
            let (last, kept) = inner.notes.entry(user).or_default();
            *last += 1;
            let seq = *last;
            kept.push_back((
                Note {
                    seq,
                    payload: payload.to_vec(),
                },
                now + NOTES_TTL,
            ));
            while kept.len() > KEEP_NOTES {
                kept.pop_front();
            }
            // The whole log lapses a week after its last note, as the Redis key does.
            for (_, until) in kept.iter_mut() {
                *until = now + NOTES_TTL;
            }
            seq
        };
        self.announce(Change::Note(user));
        seq
    }

    /// Drops everything kept about `user`: their presence reports and their notes.
    pub(super) fn forget(&self, user: Uuid) {
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        inner.reports.remove(&user);
        inner.notes.remove(&user);
    }

    pub(super) fn notes_after(&self, user: Uuid, after: u64) -> Vec<Note> {
        let now = Instant::now();
        let inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        inner
            .notes
            .get(&user)
            .map(|(_, kept)| {
                kept.iter()
                    .filter(|(note, until)| note.seq > after && *until > now)
                    .map(|(note, _)| note.clone())
                    .collect()
            })
            .unwrap_or_default()
    }

    pub(super) fn announce(&self, change: Change) {
        let _ = self.changes.send(change);
    }

    pub(super) fn changes(&self) -> broadcast::Receiver<Change> {
        self.changes.subscribe()
    }
}
