//! `[push]`: whether accounts pushes notices at all (off by default), which kinds, the
//! per-player limit, quiet hours, the outbox worker's lease and pace, and the providers
//! (`[push.fcm]`, `[push.apns]`: `basra_push`'s settings; their credential files are
//! Secrets, mounted from Kubernetes Secrets, never logged).

use std::time::Duration;

use basra_push::{ApnsSettings, Backoff, FcmSettings, NoticeKind, PushSettings};
use serde::Deserialize;

use super::plan::{QuietHours, Rules};
use crate::store::pushes::{PushLimit, kind_from_name};

/// `[push]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PushDeliverySettings {
    /// Whether notices are pushed (and the worker runs). Off: devices still register.
    #[serde(default)]
    pub enabled: bool,
    /// The kinds pushed (`friend_request`, `friend_accepted`, `room_invite`,
    /// `match_ready`, `event_starting`, `moderation`).
    #[serde(default = "default_kinds")]
    pub kinds: Vec<String>,
    /// The most notices pushed to one player per window (more stay in the inbox only).
    #[serde(default = "default_max_per_player")]
    pub max_per_player: u32,
    /// The window of `max_per_player`, in seconds.
    #[serde(default = "default_window_seconds")]
    pub window_seconds: u64,
    /// The start of the quiet hours in the device's local time (`HH:MM`): a push due
    /// within them waits for their end, and is dropped if it expires first.
    #[serde(default = "default_quiet_start")]
    pub quiet_start: String,
    /// Their end (`HH:MM`); the same as the start: no quiet hours.
    #[serde(default = "default_quiet_end")]
    pub quiet_end: String,
    /// How long a push of a notice without an expiry of its own is worth sending.
    #[serde(default = "default_ttl_seconds")]
    pub ttl_seconds: u64,
    /// How long a worker's claim on a push lasts: another replica sends it after the
    /// claim lapses (the first replica died). Longer than the providers' `timeout_ms`.
    #[serde(default = "default_lease_seconds")]
    pub lease_seconds: u64,
    /// Pushes a worker has claimed and not finished at once.
    #[serde(default = "default_in_flight")]
    pub in_flight: usize,
    /// How often an idle worker looks at the outbox, in milliseconds.
    #[serde(default = "default_poll_ms")]
    pub poll_ms: u64,
    /// The first retry's delay in milliseconds (doubling, with jitter, never sooner than
    /// the provider's `Retry-After`).
    #[serde(default = "default_retry_first_ms")]
    pub retry_first_ms: u64,
    /// The longest delay between retries, in seconds.
    #[serde(default = "default_retry_max_seconds")]
    pub retry_max_seconds: u64,
    /// Firebase Cloud Messaging (Android); absent: FCM devices get nothing.
    #[serde(default)]
    pub fcm: Option<FcmSettings>,
    /// The Apple Push Notification service (iOS); absent: APNs devices get nothing.
    #[serde(default)]
    pub apns: Option<ApnsSettings>,
}

fn default_kinds() -> Vec<String> {
    [
        "friend_request",
        "room_invite",
        "match_ready",
        "event_starting",
    ]
    .map(str::to_owned)
    .to_vec()
}
fn default_max_per_player() -> u32 {
    20
}
fn default_window_seconds() -> u64 {
    3600
}
fn default_quiet_start() -> String {
    "22:00".into()
}
fn default_quiet_end() -> String {
    "08:00".into()
}
fn default_ttl_seconds() -> u64 {
    24 * 3600
}
fn default_lease_seconds() -> u64 {
    30
}
fn default_in_flight() -> usize {
    512
}
fn default_poll_ms() -> u64 {
    100
}
fn default_retry_first_ms() -> u64 {
    1000
}
fn default_retry_max_seconds() -> u64 {
    300
}

impl PushDeliverySettings {
    /// The providers' settings, as `basra_push` takes them.
    pub fn providers(&self) -> PushSettings {
        PushSettings {
            fcm: self.fcm.clone(),
            apns: self.apns.clone(),
        }
    }

    /// The rules of what is pushed when.
    pub fn rules(&self) -> Result<Rules, String> {
        let kinds = self
            .kinds
            .iter()
            .map(|name| {
                kind_from_name(name).ok_or_else(|| {
                    let known: Vec<&str> = NoticeKind::ALL.iter().map(|k| k.as_str()).collect();
                    format!("push.kinds: {name:?} is not one of {known:?}")
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let quiet = QuietHours::new(
            parse_clock("push.quiet_start", &self.quiet_start)?,
            parse_clock("push.quiet_end", &self.quiet_end)?,
        );
        Ok(Rules {
            kinds,
            limit: PushLimit {
                max: self.max_per_player,
                window: Duration::from_secs(self.window_seconds),
            },
            quiet,
            ttl: Duration::from_secs(self.ttl_seconds),
        })
    }

    /// The worker's retry delays.
    pub fn backoff(&self) -> Backoff {
        Backoff {
            first: Duration::from_millis(self.retry_first_ms),
            max: Duration::from_secs(self.retry_max_seconds),
        }
    }

    /// `Err` naming the bad key.
    pub fn validate(&self) -> Result<(), String> {
        self.rules()?;
        self.providers().validate()?;
        if self.max_per_player == 0 || self.window_seconds == 0 {
            return Err("push.max_per_player and push.window_seconds must be at least 1".into());
        }
        if self.ttl_seconds == 0 || self.in_flight == 0 || self.poll_ms == 0 {
            return Err(
                "push.ttl_seconds, push.in_flight and push.poll_ms must be at least 1".into(),
            );
        }
        if self.retry_first_ms == 0 || self.retry_max_seconds * 1000 < self.retry_first_ms {
            return Err(
                "push.retry_first_ms must be at least 1 and at most push.retry_max_seconds".into(),
            );
        }
        // A claim must outlast a send (the providers' timeout), or a slow send's push
        // would be claimed and sent again by another replica while the first is out.
        let timeout_ms = [
            self.fcm.as_ref().map(|f| f.timeout_ms),
            self.apns.as_ref().map(|a| a.timeout_ms),
        ]
        .into_iter()
        .flatten()
        .max()
        .unwrap_or(0);
        if self.lease_seconds * 1000 < 2 * timeout_ms.max(1000) {
            return Err(format!(
                "push.lease_seconds must be at least twice the providers' timeout_ms \
                 ({timeout_ms} ms) and at least 2 s, not {}",
                self.lease_seconds
            ));
        }
        if self.enabled && self.fcm.is_none() && self.apns.is_none() {
            return Err(
                "push.enabled is true but neither [push.fcm] nor [push.apns] is set".into(),
            );
        }
        Ok(())
    }
}

/// Minutes after midnight of `HH:MM`.
fn parse_clock(key: &str, text: &str) -> Result<u32, String> {
    let bad = || format!("{key} must be a time of day HH:MM, not {text:?}");
    let (h, m) = text.split_once(':').ok_or_else(bad)?;
    let (h, m): (u32, u32) = (h.parse().map_err(|_| bad())?, m.parse().map_err(|_| bad())?);
    if h > 23 || m > 59 || text.len() != 5 {
        return Err(bad());
    }
    Ok(h * 60 + m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_of_day_are_checked() {
        assert_eq!(parse_clock("k", "22:30"), Ok(22 * 60 + 30));
        assert_eq!(parse_clock("k", "00:00"), Ok(0));
        for bad in ["24:00", "7:00", "07:60", "0700", "xx:yy"] {
            assert!(
                parse_clock("push.quiet_end", bad)
                    .unwrap_err()
                    .contains("push.quiet_end")
            );
        }
    }
}
