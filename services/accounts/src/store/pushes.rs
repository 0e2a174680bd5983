//! Push notifications: the devices that registered a push token, and the outbox of
//! pushes waiting for a worker ([`crate::push`]). One token belongs to one account at a
//! time; a device's removal takes its waiting pushes with it.
//!
//! The outbox is claimed by lease: [`Pushes::claim_pushes`] marks due rows as held by one
//! claim until `now + lease`, so no other worker takes them meanwhile; a claim that is
//! neither finished nor retried (its replica died) lapses and the rows are due again. A
//! worker's [`Pushes::finish_push`] and [`Pushes::retry_push`] count only while the row
//! is still under its own claim.

use std::collections::BTreeMap;
use std::future::Future;
use std::time::Duration;

use basra_push::{NoticeKind, Platform};
use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::error::Result;

/// The most devices an account keeps: registering one more removes the oldest.
pub const MAX_PUSH_DEVICES: usize = 10;

/// A device that registered its push token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PushDevice {
    /// The platform's token (FCM registration token, APNs device token in hex).
    pub token: String,
    /// FCM or APNs.
    pub platform: Platform,
    /// The Android package name or the iOS bundle id.
    pub app_id: String,
    /// The device's language tag.
    pub locale: String,
    /// The app's version.
    pub app_version: String,
    /// The device's offset from UTC, in minutes (its quiet hours are local).
    pub utc_offset_minutes: i32,
    /// When it was last registered.
    pub registered_at: DateTime<Utc>,
}

/// One push to put in the outbox: a notice for one device of its player.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueuedPush {
    /// Its id.
    pub id: Uuid,
    /// The device's token (the push is dropped if the token is not the player's).
    pub token: String,
    /// What it is about.
    pub kind: NoticeKind,
    /// The name its text shows (empty for a kind without one).
    pub param: String,
    /// What the app reads besides `kind`.
    pub data: BTreeMap<String, String>,
    /// The same for every push of one notice: the device shows the newest only.
    pub collapse_id: String,
    /// When the notice was made (delivery latency is measured from it).
    pub noticed_at: DateTime<Utc>,
    /// After this it is dropped unsent.
    pub expires_at: DateTime<Utc>,
    /// Not sent before this (the end of the device's quiet hours, or now).
    pub due_at: DateTime<Utc>,
}

/// A push a worker claimed: the queued push, its device as registered now, and how many
/// times it was tried.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimedPush {
    /// The push.
    pub push: QueuedPush,
    /// Its player.
    pub user_id: Uuid,
    /// Its device's platform.
    pub platform: Platform,
    /// Its device's app.
    pub app_id: String,
    /// Its device's locale.
    pub locale: String,
    /// Tries so far (0 the first time).
    pub attempts: u32,
}

/// A per-player limit on notices pushed: at most `max` per `window` (a fixed window
/// from a player's first push in it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PushLimit {
    /// Notices per window.
    pub max: u32,
    /// The window.
    pub window: Duration,
}

/// What [`Pushes::enqueue_pushes`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Enqueued {
    /// This many pushes went in (fewer than given when a device went meanwhile).
    Queued(usize),
    /// The player reached their limit: nothing went in.
    OverLimit,
}

/// Devices and the outbox.
pub trait Pushes: Send + Sync {
    /// Registers `device` for `user` (again: updates it), keeping the user's
    /// [`MAX_PUSH_DEVICES`] newest; answers whether the token was another account's (it
    /// moved, and its waiting pushes were dropped). Errors: `UserNotFound`.
    fn register_push_device(
        &self,
        user: Uuid,
        device: PushDevice,
    ) -> impl Future<Output = Result<bool>> + Send;

    /// Removes `token` if it is `user`'s; answers whether it was.
    fn remove_push_device(
        &self,
        user: Uuid,
        token: &str,
    ) -> impl Future<Output = Result<bool>> + Send;

    /// Removes every device of `user`; answers how many.
    fn remove_push_devices(&self, user: Uuid) -> impl Future<Output = Result<u64>> + Send;

    /// `user`'s devices, newest first.
    fn push_devices(&self, user: Uuid) -> impl Future<Output = Result<Vec<PushDevice>>> + Send;

    /// Removes `token` whoever registered it (the provider said it is dead); answers
    /// whether it was there.
    fn forget_push_token(&self, token: &str) -> impl Future<Output = Result<bool>> + Send;

    /// Puts one notice's `pushes` for `user` in the outbox, and counts the notice against
    /// `limit` (nothing goes in past it), in one step. A push whose token is not
    /// `user`'s (any more) is left out.
    fn enqueue_pushes(
        &self,
        user: Uuid,
        pushes: Vec<QueuedPush>,
        limit: PushLimit,
        now: DateTime<Utc>,
    ) -> impl Future<Output = Result<Enqueued>> + Send;

    /// Claims at most `max` pushes due at `now` and not under another live claim, for
    /// `claim` until `now + lease`, soonest due first.
    fn claim_pushes(
        &self,
        claim: Uuid,
        now: DateTime<Utc>,
        lease: Duration,
        max: usize,
    ) -> impl Future<Output = Result<Vec<ClaimedPush>>> + Send;

    /// Removes push `id` if `claim` still holds it (sent, or dropped); answers whether.
    fn finish_push(&self, id: Uuid, claim: Uuid) -> impl Future<Output = Result<bool>> + Send;

    /// Releases push `id`, held by `claim`, to be due again at `due_at` with one more
    /// attempt counted; answers whether `claim` still held it.
    fn retry_push(
        &self,
        id: Uuid,
        claim: Uuid,
        due_at: DateTime<Utc>,
    ) -> impl Future<Output = Result<bool>> + Send;

    /// How many pushes wait in the outbox (claimed or not).
    fn outbox_len(&self) -> impl Future<Output = Result<u64>> + Send;
}

/// The stored name of a platform.
pub fn platform_name(platform: Platform) -> &'static str {
    match platform {
        Platform::Fcm => "fcm",
        Platform::Apns => "apns",
    }
}

/// A platform from its stored name.
pub fn platform_from_name(name: &str) -> Option<Platform> {
    match name {
        "fcm" => Some(Platform::Fcm),
        "apns" => Some(Platform::Apns),
        _ => None,
    }
}

/// A kind from its name ([`NoticeKind::as_str`]).
pub fn kind_from_name(name: &str) -> Option<NoticeKind> {
    NoticeKind::ALL.into_iter().find(|k| k.as_str() == name)
}
