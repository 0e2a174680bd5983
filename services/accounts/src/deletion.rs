//! What deleting an account leaves behind (DeleteAccount; the whole account is in
//! `README.md`, "Deleting an account"): the pure part, shared by both stores.
//!
//! The matches a deleted player played stay, because they are the other players'
//! history and the source of their ratings. The deleted player's seats in them are
//! re-keyed to an **anonymous key**: a random (version 4) UUID drawn once per deletion
//! from a cryptographically secure generator (`rand`'s, seeded by the system) and written only into those seats. Nothing
//! stores it beside the old id, and it is not computed from the old id, so no one, the
//! operators included, can get from the key back to the account or from the account to
//! the key: it only tells that the same (deleted) player sat in those matches. The
//! seats are named [`DELETED_NAME`].
//!
//! A match still being played when its player deleted the account is recorded later,
//! naming the old id: [`deleted_id_hash`] (SHA-256 of the id, the one thing kept about
//! a deleted account) lets the store recognise it and record that seat by
//! [`placeholder_seats`]: no key at all, no rating.

use basra_records::MatchRecord;
use sha2::{Digest, Sha256};
use uuid::Uuid;

/// The name a deleted player's seats carry: it identifies nobody.
pub const DELETED_NAME: &str = "Deleted player";

/// The anonymous key of a deleted account's past seats: random, derived from nothing.
pub fn anonymous_key() -> Uuid {
    uuid::Builder::from_random_bytes(rand::random()).into_uuid()
}

/// What the store keeps of a deleted account's id: its SHA-256, to recognise the id in a
/// match recorded after the deletion.
pub fn deleted_id_hash(user_id: Uuid) -> [u8; 32] {
    Sha256::digest(user_id.as_bytes()).into()
}

/// `record` with every seat of a user in `deleted` made a [`DELETED_NAME`] seat without
/// an account (so it is neither rated nor listed in anyone's history); `None` when no
/// seat names one of them.
pub fn placeholder_seats(record: &MatchRecord, deleted: &[Uuid]) -> Option<MatchRecord> {
    if !record.players().any(|(_, id)| deleted.contains(&id)) {
        return None;
    }
    let mut record = record.clone();
    for seat in &mut record.seats {
        if seat.user_id.is_some_and(|id| deleted.contains(&id)) {
            seat.user_id = None;
            seat.display_name = DELETED_NAME.to_owned();
        }
    }
    Some(record)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_random_and_hashes_fixed() {
        let id = Uuid::now_v7();
        assert_ne!(anonymous_key(), anonymous_key());
        assert_eq!(deleted_id_hash(id), deleted_id_hash(id));
        assert_ne!(deleted_id_hash(id), deleted_id_hash(Uuid::now_v7()));
    }
}
