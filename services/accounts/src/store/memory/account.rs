//! The account itself in the memory store: its password and its deletion, as
//! `pg/account.rs` does them on PostgreSQL.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::Inner;
use crate::deletion::{DELETED_NAME, deleted_id_hash};
use crate::error::{AccountsError, Result};
use crate::friends::Link;
use crate::store::{AccountRecords, DeletedAccount};

impl Inner {
    pub(super) fn change_password(
        &mut self,
        user_id: Uuid,
        password_hash: &str,
        now: DateTime<Utc>,
    ) -> Result<u64> {
        let stored = self
            .passwords
            .get_mut(&user_id)
            .ok_or(AccountsError::UserNotFound)?;
        password_hash.clone_into(stored);
        self.password_dates.insert(user_id, now);
        let mut revoked = 0;
        for token in self.refresh.values_mut() {
            if token.user_id == user_id
                && token.revoked_at.is_none()
                && token.used_at.is_none()
                && token.expires_at > now
            {
                token.revoked_at = Some(now);
                revoked += 1;
            }
        }
        Ok(revoked)
    }

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
        self.providers.retain(|_, (owner, _)| *owner != user_id);
        self.passwords.remove(&user_id);
        self.password_dates.remove(&user_id);
        self.refresh.retain(|_, token| token.user_id != user_id);
        self.ratings.remove(&user_id);
        self.name_changes.remove(&user_id);
        // As PostgreSQL's ON DELETE CASCADE; the seats keep their client apps.
        self.clients.remove(&user_id);
        let linked = self.friends.forget(user_id);
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

    pub(super) fn account_records(&self, user_id: Uuid) -> AccountRecords {
        let Some(user) = self.users.get(&user_id) else {
            return AccountRecords::default();
        };
        // A device is bound when its guest is created.
        let mut devices: Vec<(String, DateTime<Utc>)> = self
            .devices
            .iter()
            .filter(|(_, owner)| **owner == user_id)
            .map(|(device, _)| (device.clone(), user.created_at))
            .collect();
        devices.sort();
        let mut sessions: Vec<_> = self
            .refresh
            .values()
            .filter(|token| token.user_id == user_id)
            .cloned()
            .collect();
        sessions.sort_by_key(|token| (token.issued_at, token.hash));
        AccountRecords {
            devices,
            password_updated_at: self.password_dates.get(&user_id).copied(),
            sessions,
            name_changes: self.name_changes.get(&user_id).cloned().unwrap_or_default(),
        }
    }

    /// Of `ids`, those of deleted accounts.
    pub(super) fn deleted_among(&self, ids: impl Iterator<Item = Uuid>) -> Vec<Uuid> {
        ids.filter(|id| self.deleted.contains_key(&deleted_id_hash(*id)))
            .collect()
    }
}

impl super::friends::Friends {
    /// Drops every link to or from `user` and their code; answers the other players of
    /// their requests and friendships (not blocks).
    pub(super) fn forget(&mut self, user: Uuid) -> Vec<Uuid> {
        let mut linked = Vec::new();
        self.links.retain(|(from, to), (link, _)| {
            let other = if *from == user {
                *to
            } else if *to == user {
                *from
            } else {
                return true;
            };
            if *link != Link::Block && !linked.contains(&other) {
                linked.push(other);
            }
            false
        });
        if let Some(code) = self.codes.remove(&user) {
            self.code_owners.remove(&code);
        }
        self.requests_sent.retain(|(id, _), _| *id != user);
        linked
    }
}
