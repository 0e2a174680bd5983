//! The inbox ([`Inbox`]): each player's kept notices ([`crate::inbox`] holds the rules).

use std::future::Future;

use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::error::Result;
use crate::inbox::{Kept, Marking, NewNotice, NoticePage, StoredNotice, Unread};

/// Each player's notices: kept, listed, marked read, dropped when they expire or past
/// the bound. A notice whose `expires_at` is not after `now` is gone for every method.
pub trait Inbox: Send + Sync {
    /// Keeps `notice` in one atomic step: unless its dedupe key is known for the player
    /// (then the notice kept with it is answered, `duplicate`), it is kept with a new id
    /// larger than every id before, the player's expired notices are dropped, and then
    /// their oldest beyond `keep`. Errors: `UserNotFound`.
    fn keep_notice(
        &self,
        notice: NewNotice,
        keep: u32,
    ) -> impl Future<Output = Result<Kept>> + Send;

    /// [`keep_notice`](Self::keep_notice) for each of `notices`, in one atomic step (on
    /// PostgreSQL one transaction for the batch): the answers in the same order, each as
    /// `keep_notice` would have answered had the notices been kept one by one in that
    /// order (a later notice with a key an earlier one of the batch used for the same
    /// player is its `duplicate`; ids rise in the batch's order). A notice for a user
    /// without an account is answered `Err(UserNotFound)` and the others are kept. The
    /// error of the whole call (nothing kept) is the store's.
    fn keep_notices(
        &self,
        notices: Vec<NewNotice>,
        keep: u32,
    ) -> impl Future<Output = Result<Vec<Result<Kept>>>> + Send;

    /// `user`'s notices of `page`, newest first, none expired at `now`.
    fn notices(
        &self,
        user: Uuid,
        page: NoticePage,
        now: DateTime<Utc>,
    ) -> impl Future<Output = Result<Vec<StoredNotice>>> + Send;

    /// How many of `user`'s notices are unread, and the newest one's id (in one read),
    /// none expired at `now`.
    fn unread_notices(
        &self,
        user: Uuid,
        now: DateTime<Utc>,
    ) -> impl Future<Output = Result<Unread>> + Send;

    /// Marks `user`'s notices of `marking` read; answers how many were unread. Ids that
    /// are not all `user`'s kept notices mark nothing: `NoticeNotFound`.
    fn mark_notices_read(
        &self,
        user: Uuid,
        marking: Marking,
        now: DateTime<Utc>,
    ) -> impl Future<Output = Result<u32>> + Send;

    /// Drops every notice expired at `now`; answers how many.
    fn drop_expired_notices(&self, now: DateTime<Utc>) -> impl Future<Output = Result<u64>> + Send;
}
