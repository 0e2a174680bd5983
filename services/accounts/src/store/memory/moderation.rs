//! Moderation in the memory store ([`Moderation`]): an account's deletion, as
//! `pg/moderation.rs` does it on PostgreSQL, and the audit list.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::{Inner, MemoryStore};
use crate::deletion::{DELETED_NAME, deleted_id_hash};
use crate::error::{AccountsError, Result};
use crate::store::{AuditEntry, DeletedAccount, Moderation};

impl Inner {
    pub(super) fn delete_account(
        &mut self,
        user_id: Uuid,
        anonymous_key: Uuid,
        now: DateTime<Utc>,
    ) -> Result<DeletedAccount> {
        let user = self
            .users
            .remove(&user_id)
            .ok_or(AccountsError::UserNotFound)?;
        if let Some(username) = &user.username {
            self.username_keys.remove(&username.to_ascii_lowercase());
        }
        self.devices.retain(|_, owner| *owner != user_id);
        self.pushes.forget_user(user_id);
        self.providers.retain(|_, (owner, _)| *owner != user_id);
        self.passwords.remove(&user_id);
        self.password_dates.remove(&user_id);
        self.refresh.retain(|_, token| token.user_id != user_id);
        self.ratings.remove(&user_id);
        for season in self.season_ratings.values_mut() {
            season.remove(&user_id);
        }
        self.name_changes.remove(&user_id);
        self.forget_reports(user_id);
        // As PostgreSQL's ON DELETE CASCADE; the seats keep their client apps.
        self.clients.remove(&user_id);
        let linked = self.friends.forget(user_id);
        self.notices.forget(user_id);
        let rows = self.players.remove(&user_id).unwrap_or_default();
        for row in &rows {
            if let Some(record) = self.matches.get_mut(&row.match_id) {
                for seat in record
                    .seats
                    .iter_mut()
                    .filter(|s| s.user_id == Some(user_id))
                {
                    seat.user_id = Some(anonymous_key);
                    DELETED_NAME.clone_into(&mut seat.display_name);
                }
            }
            if let Some(changes) = self.changes.get_mut(&row.match_id) {
                for change in changes.iter_mut().filter(|c| c.user_id == user_id) {
                    change.user_id = anonymous_key;
                }
            }
        }
        let rows = rows
            .into_iter()
            .map(|mut row| {
                if let Some(change) = &mut row.change {
                    change.user_id = anonymous_key;
                }
                row
            })
            .collect::<Vec<_>>();
        let matches = rows.len() as u64;
        self.players.insert(anonymous_key, rows);
        self.deleted.insert(deleted_id_hash(user_id), now);
        Ok(DeletedAccount { linked, matches })
    }

    /// Of `ids`, those of deleted accounts.
    pub(super) fn deleted_among(&self, ids: impl Iterator<Item = Uuid>) -> Vec<Uuid> {
        ids.filter(|id| self.deleted.contains_key(&deleted_id_hash(*id)))
            .collect()
    }
}

impl Moderation for MemoryStore {
    async fn audit(&self, entry: AuditEntry) -> Result<()> {
        self.lock().audit.push(entry);
        Ok(())
    }

    async fn audit_of(&self, target: Uuid) -> Result<Vec<AuditEntry>> {
        Ok(self
            .lock()
            .audit
            .iter()
            .filter(|e| e.target_id == target)
            .cloned()
            .collect())
    }

    async fn delete_account(
        &self,
        user_id: Uuid,
        anonymous_key: Uuid,
        now: DateTime<Utc>,
    ) -> Result<DeletedAccount> {
        self.lock().delete_account(user_id, anonymous_key, now)
    }
}
