//! Push notifications for Basra online: the delivery library, used by no service yet.
//!
//! A [`Pusher`] takes one [`Push`] (platform, device token, app or bundle id, the
//! device's locale, a [`Notice`] with its parameters) and sends it through the
//! provider of that platform, Firebase Cloud Messaging or the Apple Push Notification
//! service:
//!
//! | module | what it holds |
//! |---|---|
//! | [`pusher`] | the front: [`Push`], routing to FCM or APNs, a limit on requests in flight per provider |
//! | [`texts`] | the notification texts of every [`Notice`] in English and Arabic, names isolated for bidi and capped |
//! | `apns` | the Apple Push Notification service over HTTP/2: the ES256 provider token (reused 50 minutes, replaced once on `ExpiredProviderToken`), the send, the classification of its answers |
//! | `fcm` | Firebase Cloud Messaging HTTP v1: the OAuth 2 access token from the service account's signed JWT (cached), the send, the classification of its answers |
//! | [`outcome`] | [`Outcome`], what the caller does next: forget the push, remove the token, retry later, alert an operator |
//! | [`backoff`] | the delay before a retry: exponential with jitter, never sooner than the provider's `Retry-After` |
//! | [`settings`] | [`PushSettings`]: endpoints (overridable for tests and the sandbox), the credential files (Secrets), limits |
//! | [`clock`] | the wall clock the tokens are dated by, and a manual one for tests |
//!
//! Nothing here stores anything: the outbox, the device registry and the choice of when
//! to push belong to the services (see the crate's README).

mod apns;
pub mod backoff;
pub mod clock;
mod error;
mod fcm;
mod http;
pub mod outcome;
pub mod pusher;
pub mod settings;
pub mod texts;

pub use backoff::Backoff;
pub use clock::{Clock, ManualClock, SystemClock};
pub use error::PushError;
pub use outcome::Outcome;
pub use pusher::{Platform, Push, Pusher};
pub use settings::{ApnsEnvironment, ApnsSettings, FcmSettings, PushSettings};
pub use texts::{Locale, Notice, NoticeKind, Text};
