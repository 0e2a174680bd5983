//! The inbox in the memory store ([`Inbox`]), as `pg/inbox.rs` keeps it on PostgreSQL.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::{Inner, MemoryStore};
use crate::error::{AccountsError, Result};
use crate::inbox::{Kept, Marking, NewNotice, NoticeKind, NoticePage, StoredNotice, Unread};
use crate::store::Inbox;

/// A kept notice, its dedupe key and the player it names.
type Entry = (StoredNotice, Option<String>, Option<Uuid>);

/// Every player's notices, oldest first.
#[derive(Debug, Default)]
pub(super) struct Notices {
    last_id: u64,
    by_user: HashMap<Uuid, Vec<Entry>>,
}

impl Notices {
    /// Drops `user`'s notices and those naming them (a deleted account), as PostgreSQL's
    /// ON DELETE CASCADE does.
    /// Other players' match result notices name the player in their seats: they go too.
    pub(super) fn forget(&mut self, user: Uuid) {
        self.by_user.remove(&user);
        let named = user.to_string().into_bytes();
        for list in self.by_user.values_mut() {
            list.retain(|(notice, _, about)| {
                *about != Some(user)
                    && !(notice.kind == NoticeKind::MatchResult
                        && notice.payload.windows(named.len()).any(|w| w == named))
            });
        }
    }

    fn live(&self, user: Uuid, now: DateTime<Utc>) -> impl Iterator<Item = &StoredNotice> {
        self.by_user
            .get(&user)
            .into_iter()
            .flatten()
            .map(|(notice, _, _)| notice)
            .filter(move |notice| notice.expires_at > now)
    }
}

/// Keeps one notice in `inner` (the lock held), as [`Inbox::keep_notice`] says.
fn keep_one(inner: &mut Inner, notice: NewNotice, keep: u32) -> Result<Kept> {
    if !inner.users.contains_key(&notice.user_id) {
        return Err(AccountsError::UserNotFound);
    }
    let now = notice.created_at;
    let inbox = &mut inner.notices;
    let list = inbox.by_user.entry(notice.user_id).or_default();
    list.retain(|(kept, _, _)| kept.expires_at > now);
    if let Some(key) = &notice.dedupe_key
        && let Some((kept, _, _)) = list.iter().find(|(_, k, _)| k.as_ref() == Some(key))
    {
        return Ok(Kept {
            notice: kept.clone(),
            duplicate: true,
        });
    }
    inbox.last_id += 1;
    let stored = StoredNotice {
        id: inbox.last_id,
        user_id: notice.user_id,
        kind: notice.kind,
        payload: notice.payload,
        created_at: notice.created_at,
        expires_at: notice.expires_at,
        read: false,
    };
    let list = inbox.by_user.entry(notice.user_id).or_default();
    list.push((stored.clone(), notice.dedupe_key, notice.about));
    let over = list.len().saturating_sub(keep as usize);
    list.drain(..over);
    Ok(Kept {
        notice: stored,
        duplicate: false,
    })
}

impl Inbox for MemoryStore {
    async fn keep_notice(&self, notice: NewNotice, keep: u32) -> Result<Kept> {
        keep_one(&mut self.lock(), notice, keep)
    }

    async fn keep_notices(&self, notices: Vec<NewNotice>, keep: u32) -> Result<Vec<Result<Kept>>> {
        // One lock for the batch: nothing is seen half kept.
        let mut inner = self.lock();
        Ok(notices
            .into_iter()
            .map(|notice| keep_one(&mut inner, notice, keep))
            .collect())
    }

    async fn notices(
        &self,
        user: Uuid,
        page: NoticePage,
        now: DateTime<Utc>,
    ) -> Result<Vec<StoredNotice>> {
        let inner = self.lock();
        let mut notices: Vec<StoredNotice> = inner
            .notices
            .live(user, now)
            .filter(|n| page.before.is_none_or(|before| n.id < before))
            .filter(|n| !page.unread_only || !n.read)
            .cloned()
            .collect();
        notices.reverse();
        notices.truncate(page.limit as usize);
        Ok(notices)
    }

    async fn unread_notices(&self, user: Uuid, now: DateTime<Utc>) -> Result<Unread> {
        let inner = self.lock();
        Ok(Unread {
            count: inner.notices.live(user, now).filter(|n| !n.read).count() as u32,
            newest_id: inner
                .notices
                .live(user, now)
                .map(|n| n.id)
                .max()
                .unwrap_or(0),
        })
    }

    async fn mark_notices_read(
        &self,
        user: Uuid,
        marking: Marking,
        now: DateTime<Utc>,
    ) -> Result<u32> {
        let mut inner = self.lock();
        let list = inner.notices.by_user.entry(user).or_default();
        let chosen = |notice: &StoredNotice| match &marking {
            Marking::Ids(ids) => ids.contains(&notice.id),
            Marking::UpTo(last) => notice.id <= *last,
        };
        if let Marking::Ids(ids) = &marking {
            let found = list
                .iter()
                .filter(|(n, _, _)| n.expires_at > now && ids.contains(&n.id))
                .count();
            let mut distinct = ids.clone();
            distinct.sort_unstable();
            distinct.dedup();
            if found != distinct.len() {
                return Err(AccountsError::NoticeNotFound);
            }
        }
        let mut marked = 0;
        for (notice, _, _) in list.iter_mut() {
            if notice.expires_at > now && !notice.read && chosen(notice) {
                notice.read = true;
                marked += 1;
            }
        }
        Ok(marked)
    }

    async fn drop_expired_notices(&self, now: DateTime<Utc>) -> Result<u64> {
        let mut inner = self.lock();
        let mut dropped = 0;
        for list in inner.notices.by_user.values_mut() {
            let before = list.len();
            list.retain(|(n, _, _)| n.expires_at > now);
            dropped += (before - list.len()) as u64;
        }
        inner.notices.by_user.retain(|_, list| !list.is_empty());
        Ok(dropped)
    }
}
