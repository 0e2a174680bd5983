//! [`EventStore`] in this process: `basra dev`, `make run` and tests. One lock over
//! everything makes every call atomic.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;

use super::{Cancelled, EventStore, Page, PhaseChange, Ruled};
use crate::clock::Millis;
use crate::error::Result;
use crate::events::model::{
    self, EntryRecord, EntryStatus, EventRecord, Phase, Refusal, ResultRecord,
};

/// Events in memory.
#[derive(Debug, Default)]
pub struct MemoryEventStore {
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    events: HashMap<String, EventRecord>,
    /// By event, by user.
    entries: HashMap<String, BTreeMap<String, EntryRecord>>,
    results: HashMap<String, Vec<ResultRecord>>,
}

impl Inner {
    /// Stores `event`, or answers the one stored with its request id.
    fn insert(&mut self, event: EventRecord) -> EventRecord {
        if let Some(key) = &event.request_id
            && let Some(existing) = self
                .events
                .values()
                .find(|e| e.request_id.as_ref() == Some(key))
        {
            return existing.clone();
        }
        self.events.insert(event.id.clone(), event.clone());
        event
    }
}

impl MemoryEventStore {
    /// An empty store.
    pub fn new() -> MemoryEventStore {
        MemoryEventStore::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }
}

fn page<T: Clone>(rows: Vec<T>, offset: u64, limit: u32) -> Page<T> {
    let total = rows.len() as u64;
    let rows: Vec<T> = rows
        .into_iter()
        .skip(offset as usize)
        .take(limit as usize)
        .collect();
    let next = offset + rows.len() as u64;
    (rows, (next < total).then_some(next))
}

#[tonic::async_trait]
impl EventStore for MemoryEventStore {
    async fn create(&self, event: EventRecord) -> Result<EventRecord> {
        Ok(self.lock().insert(event))
    }

    async fn create_occurrence(
        &self,
        after: &str,
        next: EventRecord,
    ) -> Result<Option<EventRecord>> {
        let mut inner = self.lock();
        if inner
            .events
            .get(after)
            .is_none_or(|e| e.phase != Phase::Upcoming)
        {
            return Ok(None);
        }
        Ok(Some(inner.insert(next)))
    }

    async fn get(&self, id: &str) -> Result<Option<EventRecord>> {
        Ok(self.lock().events.get(id).cloned())
    }

    async fn version(&self, id: &str) -> Result<Option<u64>> {
        Ok(self.lock().events.get(id).map(|e| e.version))
    }

    async fn list(
        &self,
        phases: &[Phase],
        ascending: bool,
        offset: u64,
        limit: u32,
    ) -> Result<Page<EventRecord>> {
        let inner = self.lock();
        let mut rows: Vec<EventRecord> = inner
            .events
            .values()
            .filter(|e| phases.contains(&e.phase))
            .cloned()
            .collect();
        rows.sort_by(|a, b| a.starts_at_ms.cmp(&b.starts_at_ms).then(a.id.cmp(&b.id)));
        if !ascending {
            rows.reverse();
        }
        Ok(page(rows, offset, limit))
    }

    async fn due(&self, before: Millis, notice_horizon_ms: Millis) -> Result<Vec<EventRecord>> {
        let inner = self.lock();
        let mut rows: Vec<EventRecord> = inner
            .events
            .values()
            .filter(|e| {
                e.phase == Phase::Running
                    || (e.phase == Phase::Upcoming
                        && (e.starts_at_ms <= before
                            || (!e.starting_told && e.starts_at_ms <= before + notice_horizon_ms)))
            })
            .cloned()
            .collect();
        rows.sort_by_key(|e| e.starts_at_ms);
        Ok(rows)
    }

    async fn mark_starting_told(&self, event_id: &str) -> Result<bool> {
        let mut inner = self.lock();
        Ok(match inner.events.get_mut(event_id) {
            Some(event) if event.phase == Phase::Upcoming && !event.starting_told => {
                event.starting_told = true;
                true
            }
            _ => false,
        })
    }

    async fn register(
        &self,
        event_id: &str,
        user: &str,
        rating: i32,
        now: Millis,
    ) -> Ruled<EntryRecord> {
        let mut inner = self.lock();
        let Inner {
            events, entries, ..
        } = &mut *inner;
        let Some(event) = events.get_mut(event_id) else {
            return Ok(Err(Refusal::NotRegistered));
        };
        let entries = entries.entry(event_id.to_owned()).or_default();
        if let Err(refusal) = model::admit(event, entries.get(user), rating, now) {
            return Ok(Err(refusal));
        }
        let status = model::registered_status(event);
        let entry = match entries.get_mut(user) {
            Some(paused) => {
                paused.status = status;
                paused.clone()
            }
            None => {
                let entry = EntryRecord {
                    event_id: event_id.to_owned(),
                    user_id: user.to_owned(),
                    rating,
                    status,
                    registered_at_ms: now,
                    rank: 0,
                    points: 0,
                };
                entries.insert(user.to_owned(), entry.clone());
                event.registered += 1;
                entry
            }
        };
        event.version += 1;
        Ok(Ok(entry))
    }

    async fn withdraw(&self, event_id: &str, user: &str) -> Ruled<Option<EntryRecord>> {
        let mut inner = self.lock();
        let Inner {
            events, entries, ..
        } = &mut *inner;
        let (Some(event), Some(entries)) = (events.get_mut(event_id), entries.get_mut(event_id))
        else {
            return Ok(Err(Refusal::NotRegistered));
        };
        let Some(entry) = entries.get_mut(user) else {
            return Ok(Err(Refusal::NotRegistered));
        };
        match model::withdrawal(event, entry) {
            Err(refusal) => Ok(Err(refusal)),
            Ok(None) => {
                entries.remove(user);
                event.registered -= 1;
                event.version += 1;
                Ok(Ok(None))
            }
            Ok(Some(status)) => {
                if entry.status != status {
                    entry.status = status;
                    event.version += 1;
                }
                Ok(Ok(Some(entry.clone())))
            }
        }
    }

    async fn check_in(&self, event_id: &str, user: &str, now: Millis) -> Ruled<EntryRecord> {
        let mut inner = self.lock();
        let Inner {
            events, entries, ..
        } = &mut *inner;
        let (Some(event), Some(entries)) = (events.get_mut(event_id), entries.get_mut(event_id))
        else {
            return Ok(Err(Refusal::NotRegistered));
        };
        let Some(entry) = entries.get_mut(user) else {
            return Ok(Err(Refusal::NotRegistered));
        };
        if let Err(refusal) = model::check_in(event, entry, now) {
            return Ok(Err(refusal));
        }
        if entry.status != EntryStatus::CheckedIn {
            entry.status = EntryStatus::CheckedIn;
            event.version += 1;
        }
        Ok(Ok(entry.clone()))
    }

    async fn entry(&self, event_id: &str, user: &str) -> Result<Option<EntryRecord>> {
        Ok(self
            .lock()
            .entries
            .get(event_id)
            .and_then(|e| e.get(user))
            .cloned())
    }

    async fn entries(&self, event_id: &str) -> Result<Vec<EntryRecord>> {
        let inner = self.lock();
        let mut rows: Vec<EntryRecord> = inner
            .entries
            .get(event_id)
            .map(|e| e.values().cloned().collect())
            .unwrap_or_default();
        rows.sort_by(|a, b| {
            a.registered_at_ms
                .cmp(&b.registered_at_ms)
                .then(a.user_id.cmp(&b.user_id))
        });
        Ok(rows)
    }

    async fn update_entries(&self, updated: &[EntryRecord]) -> Result<()> {
        let mut inner = self.lock();
        let Inner {
            events, entries, ..
        } = &mut *inner;
        for entry in updated {
            if let Some(stored) = entries
                .get_mut(&entry.event_id)
                .and_then(|e| e.get_mut(&entry.user_id))
            {
                stored.status = entry.status;
                stored.rank = entry.rank;
                stored.points = entry.points;
                if let Some(event) = events.get_mut(&entry.event_id) {
                    event.version += 1;
                }
            }
        }
        Ok(())
    }

    async fn entries_of(&self, user: &str, offset: u64, limit: u32) -> Result<Page<EntryRecord>> {
        let inner = self.lock();
        let mut rows: Vec<(Millis, EntryRecord)> = inner
            .entries
            .iter()
            .filter_map(|(event, entries)| {
                let entry = entries.get(user)?;
                let start = inner.events.get(event)?.starts_at_ms;
                Some((start, entry.clone()))
            })
            .collect();
        rows.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.event_id.cmp(&b.1.event_id)));
        Ok(page(
            rows.into_iter().map(|(_, e)| e).collect(),
            offset,
            limit,
        ))
    }

    async fn change_phase(&self, event_id: &str, change: &PhaseChange) -> Result<bool> {
        let mut inner = self.lock();
        let Some(event) = inner.events.get_mut(event_id) else {
            return Ok(false);
        };
        if event.phase != change.from {
            return Ok(false);
        }
        event.phase = change.to;
        event.current_round = change.current_round;
        event.rounds_total = change.rounds_total;
        event.champion = change.champion.clone();
        event.cancel_reason = change.cancel_reason.clone();
        event.ended_at_ms = change.ended_at_ms;
        event.version += 1;
        Ok(true)
    }

    async fn cancel(
        &self,
        event_id: &str,
        reason: &str,
        now: Millis,
        series: bool,
    ) -> Ruled<Cancelled> {
        let mut inner = self.lock();
        let Some(event) = inner.events.get_mut(event_id) else {
            return Ok(Err(Refusal::NotRegistered));
        };
        let (cancel_it, ends_series) = match model::cancellation(event, series) {
            Ok(decided) => decided,
            Err(refusal) => return Ok(Err(refusal)),
        };
        if cancel_it {
            event.cancel(reason, now);
        }
        let event = event.clone();
        let mut others: Vec<EventRecord> = Vec::new();
        if ends_series {
            for other in inner.events.values_mut().filter(|e| {
                e.id != event.id && e.series_id == event.series_id && e.phase == Phase::Upcoming
            }) {
                other.cancel(reason, now);
                others.push(other.clone());
            }
        }
        others.sort_by_key(|e| e.starts_at_ms);
        Ok(Ok(Cancelled {
            event,
            now: cancel_it,
            series: others,
        }))
    }

    async fn record_result(&self, result: &ResultRecord) -> Result<bool> {
        let mut inner = self.lock();
        let results = inner.results.entry(result.event_id.clone()).or_default();
        if results.iter().any(|r| r.match_key == result.match_key) {
            return Ok(false);
        }
        results.push(result.clone());
        if let Some(event) = inner.events.get_mut(&result.event_id) {
            event.version += 1;
        }
        Ok(true)
    }

    async fn results(&self, event_id: &str) -> Result<Vec<ResultRecord>> {
        Ok(self
            .lock()
            .results
            .get(event_id)
            .cloned()
            .unwrap_or_default())
    }
}
