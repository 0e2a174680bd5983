//! What a notice becomes in the outbox, as pure logic: nothing for a kind that is not
//! pushed or a notice already expired; else one push per device, due now or at the end
//! of the device's quiet hours (its local night), left out when it would expire first.

use std::time::Duration;

use basra_push::NoticeKind;
use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::{PushNotice, notice_param};
use crate::store::pushes::{PushDevice, PushLimit, QueuedPush};

/// The longest UTC offset a device may state, in minutes (UTC+14:00).
pub const MAX_UTC_OFFSET_MINUTES: i32 = 14 * 60;

const DAY_SECS: i64 = 24 * 3600;

/// The rules `[push]` sets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rules {
    /// The kinds pushed.
    pub kinds: Vec<NoticeKind>,
    /// The per-player limit.
    pub limit: PushLimit,
    /// The quiet hours, if any.
    pub quiet: Option<QuietHours>,
    /// The life of a push whose notice has no expiry.
    pub ttl: Duration,
}

/// A daily span of local time when nothing is pushed (it may wrap midnight).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QuietHours {
    /// Minutes after midnight it starts.
    start: u32,
    /// Minutes after midnight it ends.
    end: u32,
}

impl QuietHours {
    /// From `start` to `end` (minutes after midnight); `None` when they are equal.
    pub fn new(start: u32, end: u32) -> Option<QuietHours> {
        (start != end).then_some(QuietHours { start, end })
    }

    /// When the quiet hours that hold at `now` on a device `offset_minutes` from UTC end;
    /// `None` when they do not hold.
    pub fn until(&self, offset_minutes: i32, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
        let local = (now.timestamp() + i64::from(offset_minutes) * 60).rem_euclid(DAY_SECS);
        let (start, end) = (i64::from(self.start) * 60, i64::from(self.end) * 60);
        let quiet = if start < end {
            (start..end).contains(&local)
        } else {
            local >= start || local < end
        };
        if !quiet {
            return None;
        }
        let wait = (end - local).rem_euclid(DAY_SECS);
        let base = now - chrono::Duration::nanoseconds(i64::from(now.timestamp_subsec_nanos()));
        Some(base + chrono::Duration::seconds(wait))
    }
}

/// The outbox rows of `notice` for `devices` at `now` (empty when nothing is pushed).
pub fn plan(
    rules: &Rules,
    notice: &PushNotice,
    devices: &[PushDevice],
    now: DateTime<Utc>,
) -> Vec<QueuedPush> {
    let kind = notice.notice.kind();
    if !rules.kinds.contains(&kind) {
        return Vec::new();
    }
    let ttl = chrono::Duration::from_std(rules.ttl).unwrap_or(chrono::Duration::MAX);
    let expires_at = notice.expires_at.unwrap_or(notice.at + ttl);
    devices
        .iter()
        .filter_map(|device| {
            let due_at = rules
                .quiet
                .and_then(|quiet| quiet.until(device.utc_offset_minutes, now))
                .unwrap_or(now);
            (due_at < expires_at).then(|| QueuedPush {
                id: Uuid::now_v7(),
                token: device.token.clone(),
                kind,
                param: notice_param(&notice.notice).to_owned(),
                data: notice.data.clone(),
                collapse_id: notice.collapse_id.clone(),
                noticed_at: notice.at,
                expires_at,
                due_at,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use basra_push::{Notice, Platform};

    use super::*;

    fn at(text: &str) -> DateTime<Utc> {
        text.parse().unwrap()
    }

    fn device(token: &str, offset: i32) -> PushDevice {
        PushDevice {
            token: token.into(),
            platform: Platform::Fcm,
            app_id: "online.basra.app".into(),
            locale: "en".into(),
            app_version: "1.0".into(),
            utc_offset_minutes: offset,
            registered_at: at("2026-12-01T00:00:00Z"),
        }
    }

    fn rules() -> Rules {
        Rules {
            kinds: vec![NoticeKind::FriendRequest, NoticeKind::RoomInvite],
            limit: PushLimit {
                max: 10,
                window: Duration::from_secs(3600),
            },
            quiet: QuietHours::new(22 * 60, 8 * 60),
            ttl: Duration::from_secs(24 * 3600),
        }
    }

    fn notice(notice: Notice, at: DateTime<Utc>, expires_at: Option<DateTime<Utc>>) -> PushNotice {
        PushNotice {
            notice,
            data: BTreeMap::from([("notice".to_owned(), "n1".to_owned())]),
            collapse_id: "n1".into(),
            at,
            expires_at,
        }
    }

    #[test]
    fn quiet_hours_wrap_midnight_in_local_time() {
        let quiet = QuietHours::new(22 * 60, 8 * 60).unwrap();
        // 21:00 UTC is 23:00 in Cairo (UTC+2): quiet until 08:00 local, 06:00 UTC.
        let now = at("2026-12-06T21:00:30Z");
        assert_eq!(quiet.until(120, now), Some(at("2026-12-07T06:00:00Z")));
        // 21:00 UTC is 21:00 in London: not quiet.
        assert_eq!(quiet.until(0, now), None);
        // 07:59 local is still quiet, 08:00 is not.
        assert_eq!(
            quiet.until(0, at("2026-12-06T07:59:00Z")),
            Some(at("2026-12-06T08:00:00Z"))
        );
        assert_eq!(quiet.until(0, at("2026-12-06T08:00:00Z")), None);
        // A span within a day.
        let nap = QuietHours::new(13 * 60, 15 * 60).unwrap();
        assert_eq!(
            nap.until(-300, at("2026-12-06T18:30:00Z")),
            Some(at("2026-12-06T20:00:00Z"))
        );
        assert_eq!(QuietHours::new(480, 480), None);
    }

    #[test]
    fn one_push_per_device_of_a_pushed_kind() {
        let now = at("2026-12-06T12:00:00Z");
        let devices = [device("a", 0), device("b", 120)];
        let request = notice(
            Notice::FriendRequest {
                from: "Layla".into(),
            },
            now,
            None,
        );
        let rows = plan(&rules(), &request, &devices, now);
        assert_eq!(rows.len(), 2);
        assert!(
            rows.iter()
                .all(|r| r.due_at == now && r.collapse_id == "n1")
        );
        assert_eq!(rows[0].param, "Layla");
        assert_eq!(rows[0].expires_at, at("2026-12-07T12:00:00Z"));
        // A kind not in push.kinds: nothing.
        let ready = notice(
            Notice::MatchReady {
                event: "Cup".into(),
            },
            now,
            None,
        );
        assert!(plan(&rules(), &ready, &devices, now).is_empty());
    }

    #[test]
    fn quiet_hours_delay_a_push_or_drop_one_that_expires_first() {
        let now = at("2026-12-06T23:00:00Z");
        let devices = [device("london", 0), device("new-york", -300)];
        let request = notice(
            Notice::FriendRequest {
                from: "Layla".into(),
            },
            now,
            None,
        );
        let rows = plan(&rules(), &request, &devices, now);
        assert_eq!(rows[0].due_at, at("2026-12-07T08:00:00Z"));
        assert_eq!(rows[1].due_at, now, "18:00 in New York");
        // An invite for 10 minutes reaches the device awake only.
        let invite = notice(
            Notice::RoomInvite {
                from: "Omar".into(),
            },
            now,
            Some(now + chrono::Duration::minutes(10)),
        );
        let rows = plan(&rules(), &invite, &devices, now);
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].token, "new-york");
    }
}
