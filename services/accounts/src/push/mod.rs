//! Push notifications from accounts (issue 48): which notices go out as a push, to which
//! devices and when ([`plan`]), and the worker that sends them from the outbox
//! ([`worker`]) through `basra-push`.
//!
//! A notice for a player goes out as a push when its kind is one of `push.kinds`, the
//! player has no open WatchFriends stream (no live "online" report: nothing is pushed to
//! a player in the app), and the player is within `push.max_per_player` notices per
//! `push.window_seconds`; then one push per registered device goes into the outbox
//! (`store::Pushes`, PostgreSQL or memory), due at once or at the end of the device's
//! quiet hours, each carrying the notice's collapse id. The worker of every replica claims
//! due pushes by lease, sends them, and removes them, retries them with backoff
//! (never sooner than the provider's `Retry-After`) until they expire, or removes the
//! device's token when the provider says it is dead.
//!
//! | module | what it holds |
//! |---|---|
//! | [`settings`] | `[push]`: on or off, the kinds, limits, quiet hours, the worker's lease and pace, the providers' credentials (files from Secrets) |
//! | [`hook`] | the inbox's hook: each kept notice queued for the service's forwarding task, and what its push says and carries (pure) |
//! | [`plan`] | pure: a notice and a player's devices → the outbox rows (kinds, quiet hours, expiry) |
//! | [`worker`] | the outbox's delivery loop: claim, send, act on the [`basra_push::Outcome`] |

pub mod hook;
pub mod plan;
pub mod settings;
pub mod worker;

use std::collections::BTreeMap;

use basra_push::{Notice, NoticeKind};
use chrono::{DateTime, Utc};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

pub use plan::Rules;
pub use settings::PushDeliverySettings;
pub use worker::Worker;

/// A notice to push to a player's devices: what it says, what the app reads when it
/// opens from it, and how it collapses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PushNotice {
    /// What it says (the kind and the name shown).
    pub notice: Notice,
    /// What the app reads besides `kind` (ids: the inbox entry, a room, an event).
    pub data: BTreeMap<String, String>,
    /// The same for every push of this notice (the inbox notice's id): a device shows
    /// the newest push of one collapse id only (1..64 bytes).
    pub collapse_id: String,
    /// When the notice was made.
    pub at: DateTime<Utc>,
    /// After this the push is worthless (an invite's room lapses); `None`: `push.ttl_seconds`
    /// after `at`.
    pub expires_at: Option<DateTime<Utc>>,
}

/// What the service needs to push (when `[push] enabled`): the rules, the provider
/// settings the worker runs by, and the pusher holding the credentials and connections.
#[derive(Debug, Clone)]
pub struct Pushing {
    /// What is pushed when.
    pub rules: Rules,
    /// `[push]`, for the worker.
    pub settings: PushDeliverySettings,
    /// Sends through FCM and APNs.
    pub pusher: std::sync::Arc<basra_push::Pusher>,
    /// The inbox's hook (its queue's sending end).
    pub hook: std::sync::Arc<hook::PushHook>,
    /// The hook's queue, taken once by the task that forwards notices to the outbox.
    queue: std::sync::Arc<
        std::sync::Mutex<Option<tokio::sync::mpsc::Receiver<crate::inbox::KeptNotice>>>,
    >,
}

impl Pushing {
    /// From `[push]`: `None` when it is off; an error naming the setting when a credential
    /// file cannot be read or used (never quoting it).
    pub fn from_settings(settings: &PushDeliverySettings) -> crate::error::Result<Option<Pushing>> {
        if !settings.enabled {
            return Ok(None);
        }
        let bad = |e: String| crate::AccountsError::bad_setting(format!("push: {e}"));
        let rules = settings.rules().map_err(bad)?;
        let pusher =
            basra_push::Pusher::new(&settings.providers()).map_err(|e| bad(e.to_string()))?;
        let (hook, queue) = hook::PushHook::new();
        Ok(Some(Pushing {
            rules,
            settings: settings.clone(),
            pusher: std::sync::Arc::new(pusher),
            hook: std::sync::Arc::new(hook),
            queue: std::sync::Arc::new(std::sync::Mutex::new(Some(queue))),
        }))
    }

    /// The hook's queue, the first time it is asked for (the forwarding task's).
    pub fn take_queue(&self) -> Option<tokio::sync::mpsc::Receiver<crate::inbox::KeptNotice>> {
        self.queue.lock().unwrap_or_else(|p| p.into_inner()).take()
    }
}

/// The name a notice's text shows (who, or which event); empty for a kind without one.
pub fn notice_param(notice: &Notice) -> &str {
    match notice {
        Notice::FriendRequest { from } | Notice::RoomInvite { from } => from,
        Notice::FriendAccepted { by } => by,
        Notice::MatchReady { event } | Notice::EventStarting { event } => event,
        Notice::Moderation => "",
    }
}

/// The notice of `kind` showing `param` (as [`notice_param`] took it apart).
pub fn notice_of(kind: NoticeKind, param: String) -> Notice {
    match kind {
        NoticeKind::FriendRequest => Notice::FriendRequest { from: param },
        NoticeKind::FriendAccepted => Notice::FriendAccepted { by: param },
        NoticeKind::RoomInvite => Notice::RoomInvite { from: param },
        NoticeKind::MatchReady => Notice::MatchReady { event: param },
        NoticeKind::EventStarting => Notice::EventStarting { event: param },
        NoticeKind::Moderation => Notice::Moderation,
    }
}

/// The label of a push's end: `accepted`, `dead_token`, `retry_later`, `misconfigured`,
/// `rejected`, `expired`; and at enqueue `queued`, `online` (not pushed: in the app),
/// `over_limit`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, prometheus_client::encoding::EncodeLabelSet)]
pub struct PushLabel {
    /// What came of it.
    pub outcome: &'static str,
}

/// `basra_accounts_pushes_total{outcome}` and `basra_accounts_push_delivery_seconds`
/// (from the notice to the provider's acceptance).
#[derive(Debug, Clone)]
pub struct PushMetrics {
    /// Pushes (and notices at enqueue) by outcome.
    pub outcomes: Family<PushLabel, Counter>,
    /// From the notice to the provider's acceptance.
    pub delivery_seconds: Histogram,
}

impl Default for PushMetrics {
    /// Unregistered (a service built without a registry).
    fn default() -> PushMetrics {
        PushMetrics::register(&mut Registry::default())
    }
}

impl PushMetrics {
    /// The push metrics, registered in `registry`.
    pub fn register(registry: &mut Registry) -> PushMetrics {
        let metrics = PushMetrics {
            outcomes: Family::default(),
            delivery_seconds: Histogram::new([
                0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 15.0, 60.0, 300.0,
            ]),
        };
        registry.register(
            "pushes",
            "Pushes by outcome (and notices not pushed: online, over_limit)",
            metrics.outcomes.clone(),
        );
        registry.register(
            "push_delivery_seconds",
            "From a notice to the push provider's acceptance",
            metrics.delivery_seconds.clone(),
        );
        for outcome in ["accepted", "misconfigured", "dead_token"] {
            let _ = metrics.outcomes.get_or_create(&PushLabel { outcome });
        }
        metrics
    }

    /// Counts one `outcome`.
    pub fn count(&self, outcome: &'static str) {
        self.outcomes.get_or_create(&PushLabel { outcome }).inc();
    }
}
