//! Push devices and the outbox in the memory store ([`Pushes`]), as `pg/pushes.rs` keeps
//! them on PostgreSQL.

use std::collections::HashMap;
use std::time::Duration;

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::MemoryStore;
use crate::error::{AccountsError, Result};
use crate::store::pushes::{
    ClaimedPush, Enqueued, MAX_PUSH_DEVICES, PushDevice, PushLimit, Pushes, QueuedPush,
};

/// The devices by token (with their owner), the outbox and the limits' counts.
#[derive(Debug, Default)]
pub(super) struct PushBook {
    devices: HashMap<String, (Uuid, PushDevice)>,
    outbox: HashMap<Uuid, Row>,
    /// Per player: the window's start and the notices pushed in it.
    counts: HashMap<Uuid, (DateTime<Utc>, u32)>,
}

#[derive(Debug, Clone)]
struct Row {
    user: Uuid,
    push: QueuedPush,
    attempts: u32,
    claim: Option<(Uuid, DateTime<Utc>)>,
}

impl PushBook {
    /// Drops everything of `user` (a deleted account).
    pub(super) fn forget_user(&mut self, user: Uuid) {
        self.devices.retain(|_, (owner, _)| *owner != user);
        self.outbox.retain(|_, row| row.user != user);
        self.counts.remove(&user);
    }

    fn remove_token(&mut self, token: &str) -> bool {
        self.outbox.retain(|_, row| row.push.token != token);
        self.devices.remove(token).is_some()
    }
}

fn later(now: DateTime<Utc>, by: Duration) -> DateTime<Utc> {
    now + chrono::Duration::from_std(by).unwrap_or(chrono::Duration::MAX)
}

impl Pushes for MemoryStore {
    async fn register_push_device(&self, user: Uuid, device: PushDevice) -> Result<bool> {
        let mut inner = self.lock();
        if !inner.users.contains_key(&user) {
            return Err(AccountsError::UserNotFound);
        }
        let book = &mut inner.pushes;
        let moved = book
            .devices
            .get(&device.token)
            .is_some_and(|(owner, _)| *owner != user);
        if moved {
            book.remove_token(&device.token);
        }
        book.devices.insert(device.token.clone(), (user, device));
        let mut mine: Vec<(DateTime<Utc>, String)> = book
            .devices
            .values()
            .filter(|(owner, _)| *owner == user)
            .map(|(_, d)| (d.registered_at, d.token.clone()))
            .collect();
        if mine.len() > MAX_PUSH_DEVICES {
            mine.sort();
            for (_, token) in &mine[..mine.len() - MAX_PUSH_DEVICES] {
                book.remove_token(token);
            }
        }
        Ok(moved)
    }

    async fn remove_push_device(&self, user: Uuid, token: &str) -> Result<bool> {
        let mut inner = self.lock();
        let book = &mut inner.pushes;
        if book.devices.get(token).is_some_and(|(o, _)| *o == user) {
            return Ok(book.remove_token(token));
        }
        Ok(false)
    }

    async fn remove_push_devices(&self, user: Uuid) -> Result<u64> {
        let mut inner = self.lock();
        let book = &mut inner.pushes;
        let tokens: Vec<String> = book
            .devices
            .iter()
            .filter(|(_, (owner, _))| *owner == user)
            .map(|(token, _)| token.clone())
            .collect();
        for token in &tokens {
            book.remove_token(token);
        }
        Ok(tokens.len() as u64)
    }

    async fn push_devices(&self, user: Uuid) -> Result<Vec<PushDevice>> {
        let inner = self.lock();
        let mut devices: Vec<PushDevice> = inner
            .pushes
            .devices
            .values()
            .filter(|(owner, _)| *owner == user)
            .map(|(_, d)| d.clone())
            .collect();
        devices.sort_by(|a, b| {
            b.registered_at
                .cmp(&a.registered_at)
                .then(a.token.cmp(&b.token))
        });
        Ok(devices)
    }

    async fn forget_push_token(&self, token: &str) -> Result<bool> {
        Ok(self.lock().pushes.remove_token(token))
    }

    async fn enqueue_pushes(
        &self,
        user: Uuid,
        pushes: Vec<QueuedPush>,
        limit: PushLimit,
        now: DateTime<Utc>,
    ) -> Result<Enqueued> {
        let mut inner = self.lock();
        if !inner.users.contains_key(&user) {
            return Ok(Enqueued::Queued(0));
        }
        let book = &mut inner.pushes;
        let pushes: Vec<QueuedPush> = pushes
            .into_iter()
            .filter(|p| book.devices.get(&p.token).is_some_and(|(o, _)| *o == user))
            .collect();
        if pushes.is_empty() {
            return Ok(Enqueued::Queued(0));
        }
        let count = book.counts.entry(user).or_insert((now, 0));
        if later(count.0, limit.window) <= now {
            *count = (now, 0);
        }
        if count.1 >= limit.max {
            return Ok(Enqueued::OverLimit);
        }
        count.1 += 1;
        let queued = pushes.len();
        for push in pushes {
            book.outbox.insert(
                push.id,
                Row {
                    user,
                    push,
                    attempts: 0,
                    claim: None,
                },
            );
        }
        Ok(Enqueued::Queued(queued))
    }

    async fn claim_pushes(
        &self,
        claim: Uuid,
        now: DateTime<Utc>,
        lease: Duration,
        max: usize,
    ) -> Result<Vec<ClaimedPush>> {
        let mut inner = self.lock();
        let book = &mut inner.pushes;
        let mut due: Vec<&mut Row> = book
            .outbox
            .values_mut()
            .filter(|row| row.push.due_at <= now && row.claim.is_none_or(|(_, until)| until <= now))
            .collect();
        due.sort_by_key(|row| (row.push.due_at, row.push.id));
        let until = later(now, lease);
        let mut claimed = Vec::new();
        for row in due.into_iter().take(max) {
            row.claim = Some((claim, until));
            let Some((_, device)) = book.devices.get(&row.push.token) else {
                continue;
            };
            claimed.push(ClaimedPush {
                push: row.push.clone(),
                user_id: row.user,
                platform: device.platform,
                app_id: device.app_id.clone(),
                locale: device.locale.clone(),
                attempts: row.attempts,
            });
        }
        Ok(claimed)
    }

    async fn finish_push(&self, id: Uuid, claim: Uuid) -> Result<bool> {
        let mut inner = self.lock();
        let outbox = &mut inner.pushes.outbox;
        if outbox
            .get(&id)
            .is_some_and(|row| row.claim.is_some_and(|(c, _)| c == claim))
        {
            outbox.remove(&id);
            return Ok(true);
        }
        Ok(false)
    }

    async fn retry_push(&self, id: Uuid, claim: Uuid, due_at: DateTime<Utc>) -> Result<bool> {
        let mut inner = self.lock();
        match inner.pushes.outbox.get_mut(&id) {
            Some(row) if row.claim.is_some_and(|(c, _)| c == claim) => {
                row.claim = None;
                row.attempts += 1;
                row.push.due_at = due_at;
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    async fn outbox_len(&self) -> Result<u64> {
        Ok(self.lock().pushes.outbox.len() as u64)
    }
}
