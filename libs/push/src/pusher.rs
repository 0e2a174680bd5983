//! The front: a [`Push`] in, an [`Outcome`] out, through the provider of the device's
//! platform (FCM or APNs), with at most `max_in_flight` requests in flight per provider (a send beyond
//! it waits for a slot, then checks the push's expiry again).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use tokio::sync::Semaphore;

use crate::apns::{ApnsMessage, ApnsSender};
use crate::clock::{Clock, SystemClock};
use crate::error::PushError;
use crate::fcm::{FcmMessage, FcmSender};
use crate::outcome::Outcome;
use crate::settings::PushSettings;
use crate::texts::{Locale, Notice};

/// The longest collapse id, in bytes (APNs's limit for `apns-collapse-id`; FCM's
/// `collapse_key` is held to the same so both platforms dedupe alike).
pub const MAX_COLLAPSE_ID: usize = 64;

/// Data keys a [`Push`] may not carry (in any case): `kind` is ours; FCM reserves `from`,
/// `notification`, `message_type`; APNs reserves `aps`.
pub const RESERVED_DATA_KEYS: [&str; 5] = ["kind", "from", "notification", "message_type", "aps"];
/// Prefixes of data keys a [`Push`] may not carry (in any case), reserved by FCM.
pub const RESERVED_DATA_PREFIXES: [&str; 2] = ["google", "gcm"];

/// Which provider reaches a device.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Platform {
    /// Firebase Cloud Messaging (Android).
    Fcm,
    /// The Apple Push Notification service (iOS).
    Apns,
}

/// One notification for one device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Push {
    /// Which provider.
    pub platform: Platform,
    /// The device's token, as the app registered it (FCM's registration token, APNs's
    /// hexadecimal device token).
    pub device_token: String,
    /// The app it is for: the Android package name (FCM's `restricted_package_name`;
    /// empty: any app of the project) or the iOS bundle id (APNs's `apns-topic`).
    pub app_id: String,
    /// The device's locale tag (`ar-EG`, `en_US`); picks the language of the text.
    pub locale: String,
    /// What it says.
    pub notice: Notice,
    /// What the app reads when it opens from the push (ids: a room, an event, the inbox
    /// entry), beside `kind`, which is added. The keys of [`RESERVED_DATA_KEYS`] and
    /// [`RESERVED_DATA_PREFIXES`] are refused.
    pub data: BTreeMap<String, String>,
    /// Pushes with the same collapse id replace one another, both at the provider (an
    /// undelivered one is dropped) and on the device; at most [`MAX_COLLAPSE_ID`] bytes.
    pub collapse_id: Option<String>,
    /// After this the push is worthless: not sent (`Expired`), and the providers stop
    /// trying to deliver it. `None`: the providers' default (FCM: 4 weeks).
    pub expires_at: Option<SystemTime>,
}

/// A sender and its slots.
#[derive(Debug)]
struct Limited<S> {
    sender: S,
    slots: Semaphore,
}

impl<S> Limited<S> {
    fn new(sender: S, max_in_flight: usize) -> Limited<S> {
        Limited {
            sender,
            slots: Semaphore::new(max_in_flight),
        }
    }
}

/// Sends pushes through FCM and APNs. Share it (`Arc`): it holds the connections, the
/// cached tokens and the limits.
#[derive(Debug)]
pub struct Pusher {
    fcm: Option<Limited<FcmSender>>,
    apns: Option<Limited<ApnsSender>>,
    clock: Arc<dyn Clock>,
}

impl Pusher {
    /// A pusher for `settings`, reading the credential files now (a file that cannot be
    /// read or a key that cannot be used is an error here, not at the first push).
    pub fn new(settings: &PushSettings) -> Result<Pusher, PushError> {
        Pusher::with_clock(settings, Arc::new(SystemClock))
    }

    /// [`Pusher::new`] with a clock of the caller's (tests move time).
    pub fn with_clock(settings: &PushSettings, clock: Arc<dyn Clock>) -> Result<Pusher, PushError> {
        settings.validate().map_err(PushError::Invalid)?;
        let fcm = match &settings.fcm {
            Some(fcm) => Some(Limited::new(
                FcmSender::new(fcm, Arc::clone(&clock))?,
                fcm.max_in_flight,
            )),
            None => None,
        };
        let apns = match &settings.apns {
            Some(apns) => Some(Limited::new(
                ApnsSender::new(apns, Arc::clone(&clock))?,
                apns.max_in_flight,
            )),
            None => None,
        };
        Ok(Pusher { fcm, apns, clock })
    }

    /// Whether pushes to `platform` can be sent (its settings are present).
    pub fn supports(&self, platform: Platform) -> bool {
        match platform {
            Platform::Fcm => self.fcm.is_some(),
            Platform::Apns => self.apns.is_some(),
        }
    }

    /// Sends `push` and says what became of it (see [`Outcome`] for what to do next).
    pub async fn push(&self, push: &Push) -> Outcome {
        let outcome = self.send(push).await;
        tracing::debug!(
            platform = ?push.platform,
            kind = push.notice.kind().as_str(),
            outcome = outcome.name(),
            "push sent"
        );
        outcome
    }

    async fn send(&self, push: &Push) -> Outcome {
        if let Err(outcome) = check(push) {
            return outcome;
        }
        let text = push.notice.text(Locale::from_tag(&push.locale));
        let kind = push.notice.kind();
        let mut data = push.data.clone();
        data.insert("kind".to_owned(), kind.as_str().to_owned());
        match push.platform {
            Platform::Fcm => {
                let Some(fcm) = &self.fcm else {
                    return not_configured("FCM", "fcm");
                };
                let Ok(_slot) = fcm.slots.acquire().await else {
                    return Outcome::retry("FCM: shutting down");
                };
                let ttl = match self.time_left(push) {
                    Ok(ttl) => ttl,
                    Err(expired) => return expired,
                };
                let message = FcmMessage {
                    token: &push.device_token,
                    text: &text,
                    data: &data,
                    urgent: kind.urgent(),
                    collapse_id: push.collapse_id.as_deref(),
                    ttl,
                    package_name: &push.app_id,
                };
                fcm.sender.send(&message).await
            }
            Platform::Apns => {
                let Some(apns) = &self.apns else {
                    return not_configured("APNs", "apns");
                };
                let Ok(_slot) = apns.slots.acquire().await else {
                    return Outcome::retry("APNs: shutting down");
                };
                if let Err(expired) = self.time_left(push) {
                    return expired;
                }
                let message = ApnsMessage {
                    token: &push.device_token,
                    topic: &push.app_id,
                    text: &text,
                    kind: kind.as_str(),
                    data: &data,
                    urgent: kind.urgent(),
                    collapse_id: push.collapse_id.as_deref(),
                    expires_at: push.expires_at,
                };
                apns.sender.send(&message).await
            }
        }
    }

    /// The time left before the push expires (`None`: no expiry), checked once a slot is
    /// held (the wait may have been long); `Expired` when none is left.
    fn time_left(&self, push: &Push) -> Result<Option<Duration>, Outcome> {
        match push.expires_at {
            Some(at) => match at.duration_since(self.clock.now()) {
                Ok(left) if !left.is_zero() => Ok(Some(left)),
                _ => Err(Outcome::Expired),
            },
            None => Ok(None),
        }
    }
}

fn not_configured(provider: &str, section: &str) -> Outcome {
    Outcome::Misconfigured {
        reason: format!("{provider} is not configured (no [push.{section}] settings)"),
    }
}

/// The checks made before anything is sent: a push that fails one is never sent.
fn check(push: &Push) -> Result<(), Outcome> {
    if push.device_token.is_empty() {
        return Err(Outcome::DeadToken {
            reason: "the device token is empty".into(),
        });
    }
    if let Some(key) = push.data.keys().find(|key| {
        let lower = key.to_ascii_lowercase();
        RESERVED_DATA_KEYS.contains(&lower.as_str())
            || RESERVED_DATA_PREFIXES.iter().any(|p| lower.starts_with(p))
    }) {
        return Err(Outcome::Rejected {
            reason: format!("the data key {key:?} is reserved"),
        });
    }
    if let Some(collapse) = &push.collapse_id
        && (collapse.is_empty() || collapse.len() > MAX_COLLAPSE_ID)
    {
        return Err(Outcome::Rejected {
            reason: format!("a collapse id is 1 to {MAX_COLLAPSE_ID} bytes"),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn push() -> Push {
        Push {
            platform: Platform::Fcm,
            device_token: "t".into(),
            app_id: String::new(),
            locale: "en".into(),
            notice: Notice::Moderation,
            data: BTreeMap::new(),
            collapse_id: None,
            expires_at: None,
        }
    }

    #[test]
    fn reserved_keys_and_long_collapse_ids_are_refused() {
        assert_eq!(check(&push()), Ok(()));
        for key in ["kind", "aps", "from", "Google.x", "gcm.n.e", "message_type"] {
            let mut p = push();
            p.data.insert(key.into(), "v".into());
            assert!(matches!(check(&p), Err(Outcome::Rejected { .. })), "{key}");
        }
        let mut p = push();
        p.collapse_id = Some("c".repeat(MAX_COLLAPSE_ID));
        assert_eq!(check(&p), Ok(()));
        p.collapse_id = Some("c".repeat(MAX_COLLAPSE_ID + 1));
        assert!(matches!(check(&p), Err(Outcome::Rejected { .. })));
        let mut p = push();
        p.device_token.clear();
        assert!(matches!(check(&p), Err(Outcome::DeadToken { .. })));
    }
}
