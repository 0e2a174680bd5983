//! A commit's events encoded once for all the viewers who see them alike.
//!
//! Every stream of a room delivers each event of a commit made on this replica. All its
//! viewers but the seat an event is about (whose own deal or own played card it is) see
//! it alike ([`crate::stream::convert::seen_in_common`]) and get the same bytes, so the first
//! stream to send an event encodes it and leaves the bytes here; the others send them as
//! they are ([`basra_proto::codec::PreEncoded`]). In a two-seat room that spares one
//! encoding of four in a play (the turn that follows it); in a room with spectators, all
//! of theirs but one.
//!
//! Shared bytes carry the server time of the stream that made them, so they are shared
//! only while fresh ([`FRESH_MS`]): a stream that comes later makes its own, and its
//! countdowns do not start from an old clock. Only the latest commit of a room keeps its
//! encodings ([`SharedBytes::clear`]): a stream still reading an older one is late
//! anyway.

use std::sync::{Mutex, MutexGuard};

use prost::bytes::Bytes;

/// How long shared bytes are sent as they are (ms after their server time; the API
/// promises at most this much: `PlayResponse.server_time`).
pub const FRESH_MS: i64 = 100;

/// The encodings of one commit's events (as seen in common), by event.
#[derive(Debug, Default)]
pub struct SharedBytes(Mutex<Vec<Encoding>>);

/// An event's shared bytes.
#[derive(Debug, Clone, PartialEq)]
pub enum Shared {
    /// Made by another stream.
    Reused(Bytes),
    /// Made now, for this stream and those that come next.
    Made(Bytes),
}

#[derive(Debug)]
struct Encoding {
    index: usize,
    made_ms: i64,
    bytes: Bytes,
}

impl SharedBytes {
    fn lock(&self) -> MutexGuard<'_, Vec<Encoding>> {
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The bytes of the commit's event `index` at `now`: those another stream made
    /// within [`FRESH_MS`] (`Shared::Reused`), or else `encode()`'s (made for `now`),
    /// which are kept for the streams that come next.
    pub fn get_or_encode(&self, index: usize, now: i64, encode: impl FnOnce() -> Bytes) -> Shared {
        let fresh = |made_ms: i64| (0..=FRESH_MS).contains(&(now - made_ms));
        if let Some(found) = self
            .lock()
            .iter()
            .find(|e| e.index == index && fresh(e.made_ms))
        {
            return Shared::Reused(found.bytes.clone());
        }
        // Encoded outside the lock: another stream of the room may be sending meanwhile
        // (two streams that race both encode, and one of their bytes is kept).
        let bytes = encode();
        let mut encodings = self.lock();
        match encodings.iter_mut().find(|e| e.index == index) {
            Some(old) if !fresh(old.made_ms) => {
                old.made_ms = now;
                old.bytes = bytes.clone();
            }
            Some(_) => {}
            None => encodings.push(Encoding {
                index,
                made_ms: now,
                bytes: bytes.clone(),
            }),
        }
        Shared::Made(bytes)
    }

    /// Lets the encodings go (a newer commit of the room came).
    pub fn clear(&self) {
        *self.lock() = Vec::new();
    }

    /// How many encodings are kept.
    pub fn kept(&self) -> usize {
        self.lock().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_encoding_per_event_while_fresh() {
        let shared = SharedBytes::default();
        let mut made = 0;
        let mut get = |index, now| match shared.get_or_encode(index, now, || {
            made += 1;
            Bytes::from(format!("{index}@{now}"))
        }) {
            Shared::Reused(bytes) | Shared::Made(bytes) => bytes,
        };
        assert_eq!(get(0, 1_000), "0@1000");
        assert_eq!(get(0, 1_000 + FRESH_MS), "0@1000");
        assert_eq!(get(1, 1_010), "1@1010");
        assert_eq!(get(1, 1_020), "1@1010");
        // Stale: made again, and the new bytes are the shared ones from then on.
        assert_eq!(get(0, 1_001 + FRESH_MS), format!("0@{}", 1_001 + FRESH_MS));
        assert_eq!(get(0, 1_002 + FRESH_MS), format!("0@{}", 1_001 + FRESH_MS));
        // A clock that went back is not "fresh" either.
        assert_eq!(get(1, 900), "1@900");
        assert_eq!(made, 4);
        assert_eq!(
            shared.get_or_encode(1, 910, || Bytes::from("again")),
            Shared::Reused(Bytes::from("1@900"))
        );
        assert_eq!(shared.kept(), 2);
        shared.clear();
        assert_eq!(shared.kept(), 0);
    }
}
