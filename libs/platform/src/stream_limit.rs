//! Per-account limits on open streams: one account holds at most so many streams of one
//! kind (Play, Watch, WatchFriends, FindMatch) on one replica, so that no account can take
//! a replica's whole stream capacity from the others. A stream beyond the limit is refused
//! with RESOURCE_EXHAUSTED and a retry hint ([`RETRY_AFTER`]); the account's slot frees
//! when one of its streams ends (its [`AccountStream`] is dropped).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tonic::Code;
use uuid::Uuid;

use crate::error::ServiceError;

/// The retry hint of a refused stream: a client's stream that broke without the server
/// seeing it is usually gone by then (keepalive), and its slot with it.
pub const RETRY_AFTER: Duration = Duration::from_secs(5);

/// The open streams of one kind, per account, on this replica; clone freely (clones
/// share the counts).
#[derive(Debug, Clone)]
pub struct StreamsPerAccount {
    kind: &'static str,
    max: usize,
    open: Arc<Mutex<HashMap<Uuid, usize>>>,
}

/// An account already holds its most streams of one kind here (RESOURCE_EXHAUSTED, with
/// [`RETRY_AFTER`] as the retry hint).
#[derive(Debug, Clone, thiserror::Error)]
#[error(
    "this account already has its maximum of {max} open {kind} streams on this server: \
     close one, or retry later"
)]
pub struct TooManyStreams {
    /// The kind of stream (the method's name).
    pub kind: &'static str,
    /// The limit.
    pub max: usize,
}

impl ServiceError for TooManyStreams {
    fn code(&self) -> Code {
        Code::ResourceExhausted
    }

    fn retry_after(&self) -> Option<Duration> {
        Some(RETRY_AFTER)
    }
}

impl StreamsPerAccount {
    /// At most `max` (at least 1) open streams of `kind` per account.
    pub fn new(kind: &'static str, max: usize) -> StreamsPerAccount {
        StreamsPerAccount {
            kind,
            max: max.max(1),
            open: Arc::default(),
        }
    }

    /// The limit.
    pub fn max(&self) -> usize {
        self.max
    }

    /// Counts a new stream of `user`, or refuses it at the limit.
    pub fn open(&self, user: Uuid) -> Result<AccountStream, TooManyStreams> {
        let mut open = self.lock();
        let count = open.entry(user).or_default();
        if *count >= self.max {
            return Err(TooManyStreams {
                kind: self.kind,
                max: self.max,
            });
        }
        *count += 1;
        Ok(AccountStream {
            open: Arc::clone(&self.open),
            user,
            counted: true,
        })
    }

    /// The streams `user` holds open here now.
    pub fn open_streams(&self, user: Uuid) -> usize {
        self.lock().get(&user).copied().unwrap_or(0)
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<Uuid, usize>> {
        lock(&self.open)
    }
}

fn lock(open: &Mutex<HashMap<Uuid, usize>>) -> MutexGuard<'_, HashMap<Uuid, usize>> {
    open.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// One counted stream; dropping it (or [`close`](Self::close)) frees the account's slot.
#[derive(Debug)]
pub struct AccountStream {
    open: Arc<Mutex<HashMap<Uuid, usize>>>,
    user: Uuid,
    counted: bool,
}

impl AccountStream {
    /// Frees the slot now; answers how many streams of the kind the account still holds
    /// here (0: this was its last).
    pub fn close(mut self) -> usize {
        self.uncount()
    }

    fn uncount(&mut self) -> usize {
        if !std::mem::take(&mut self.counted) {
            return 0;
        }
        let mut open = lock(&self.open);
        match open.get_mut(&self.user) {
            Some(count) if *count > 1 => {
                *count -= 1;
                *count
            }
            _ => {
                open.remove(&self.user);
                0
            }
        }
    }
}

impl Drop for AccountStream {
    fn drop(&mut self) {
        self.uncount();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_account_holds_at_most_max_and_a_closed_stream_frees_its_slot() {
        let plays = StreamsPerAccount::new("Play", 2);
        let (a, b) = (Uuid::now_v7(), Uuid::now_v7());
        let first = plays.open(a).unwrap();
        let second = plays.open(a).unwrap();
        let refused = plays.open(a).unwrap_err();
        assert_eq!((refused.kind, refused.max), ("Play", 2));
        let status = crate::to_status(&refused);
        assert_eq!(status.code(), Code::ResourceExhausted);
        assert_eq!(crate::error::retry_after_of(&status), Some(RETRY_AFTER));
        // Another account is not affected.
        let _other = plays.open(b).unwrap();
        assert_eq!(first.close(), 1);
        let _third = plays.open(a).unwrap();
        drop(second);
        assert_eq!(plays.open_streams(a), 1);
        assert_eq!(plays.open_streams(b), 1);
    }
}
