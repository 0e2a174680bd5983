//! [`LiveStore`] in this process (one replica: `basra dev`, tests).

use std::collections::HashMap;
use std::sync::Mutex;

use super::{LiveStore, Stored};
use crate::clock::Millis;
use crate::error::Result;

/// Live state in memory.
#[derive(Debug, Default)]
pub struct MemoryLiveStore {
    inner: Mutex<HashMap<String, Slot>>,
}

#[derive(Debug, Default)]
struct Slot {
    lease: Option<(String, Millis)>,
    state: Option<Stored>,
}

impl MemoryLiveStore {
    /// An empty store.
    pub fn new() -> MemoryLiveStore {
        MemoryLiveStore::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Slot>> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Whether `holder` holds `slot`'s lease at `now` (the memory store also checks time:
/// a lease past its deadline is nobody's).
fn holds(slot: &Slot, holder: &str) -> bool {
    slot.lease.as_ref().is_some_and(|(h, _)| h == holder)
}

#[tonic::async_trait]
impl LiveStore for MemoryLiveStore {
    async fn acquire(
        &self,
        event_id: &str,
        holder: &str,
        now: Millis,
        ttl_ms: Millis,
    ) -> Result<bool> {
        let mut inner = self.lock();
        let slot = inner.entry(event_id.to_owned()).or_default();
        match &slot.lease {
            Some((other, until)) if other != holder && *until > now => Ok(false),
            _ => {
                slot.lease = Some((holder.to_owned(), now + ttl_ms));
                Ok(true)
            }
        }
    }

    async fn release(&self, event_id: &str, holder: &str) -> Result<()> {
        if let Some(slot) = self.lock().get_mut(event_id)
            && holds(slot, holder)
        {
            slot.lease = None;
        }
        Ok(())
    }

    async fn load(&self, event_id: &str) -> Result<Option<Stored>> {
        Ok(self.lock().get(event_id).and_then(|s| s.state.clone()))
    }

    async fn version(&self, event_id: &str) -> Result<Option<u64>> {
        Ok(self
            .lock()
            .get(event_id)
            .and_then(|s| s.state.as_ref().map(|s| s.version)))
    }

    async fn save(&self, event_id: &str, holder: &str, expected: u64, json: &str) -> Result<bool> {
        let mut inner = self.lock();
        let slot = inner.entry(event_id.to_owned()).or_default();
        let version = slot.state.as_ref().map_or(0, |s| s.version);
        if !holds(slot, holder) || version != expected {
            return Ok(false);
        }
        slot.state = Some(Stored {
            version: version + 1,
            json: json.to_owned(),
        });
        Ok(true)
    }
}
