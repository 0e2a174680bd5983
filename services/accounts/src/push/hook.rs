//! The inbox's hook into the push outbox: [`PushHook`] is the inbox's
//! [`NoticeHook`]; it hands each kept notice of a pushable kind,
//! without blocking, to a queue that a task of the service drains
//! (`AccountsApi::forward_notices`: presence, devices, the outbox). [`push_notice`] says,
//! as pure logic, what a notice's pushes say and carry.
//!
//! | notice | push (`kind`) | data besides `kind` |
//! |---|---|---|
//! | friend request | `friend_request`, who asked | `notice`, `user_id` |
//! | friend added | `friend_accepted`, who accepted | `notice`, `user_id` |
//! | invite | `room_invite`, who invited | `notice`, `room_id`, `user_id` |
//! | event match ready | `match_ready`, the event | `notice`, `event_id`, `room_id` |
//! | event starting | `event_starting`, the event | `notice`, `event_id` |
//! | report handled | `moderation` | `notice` |
//! | match result, event cancelled | — (never pushed) | |
//!
//! Each push's collapse id is `notice-<id>`; it expires with the notice (an invite's room,
//! a join deadline, an event's start). Which of these kinds are pushed is `push.kinds`.

use std::collections::BTreeMap;

use basra_proto::basra::accounts::v1 as pb;
use basra_push::Notice;
use chrono::{DateTime, Utc};
use tokio::sync::mpsc;

use super::PushNotice;
use crate::inbox::{KeptNotice, NoticeHook};

/// Notices waiting for the forwarding task; more are not pushed (logged).
pub const QUEUE: usize = 10_000;

/// The inbox's hook: kept notices to the forwarding task's queue.
#[derive(Debug)]
pub struct PushHook {
    queue: mpsc::Sender<KeptNotice>,
}

impl PushHook {
    /// A hook and the queue it fills.
    pub fn new() -> (PushHook, mpsc::Receiver<KeptNotice>) {
        let (queue, rx) = mpsc::channel(QUEUE);
        (PushHook { queue }, rx)
    }
}

impl NoticeHook for PushHook {
    fn notice_kept(&self, notice: &KeptNotice) {
        if push_notice(&notice.notice).is_none() {
            return;
        }
        if self.queue.try_send(notice.clone()).is_err() {
            tracing::warn!(user_id = %notice.user_id, "the push queue is full (or closed): a notice is not pushed");
        }
    }
}

fn time(at: Option<&prost_types::Timestamp>) -> Option<DateTime<Utc>> {
    let at = at?;
    DateTime::from_timestamp(at.seconds, at.nanos.clamp(0, 999_999_999) as u32)
}

/// The push of `notice`, or `None` for a kind never pushed.
pub fn push_notice(notice: &pb::Notice) -> Option<PushNotice> {
    use pb::notice::Body;
    let mut data = BTreeMap::from([("notice".to_owned(), notice.id.to_string())]);
    let mut put = |key: &str, value: &str| {
        if !value.is_empty() {
            data.insert(key.to_owned(), value.to_owned());
        }
    };
    let said = match notice.body.as_ref()? {
        Body::FriendRequest(friend) => {
            put("user_id", &friend.user_id);
            Notice::FriendRequest {
                from: friend.display_name.clone(),
            }
        }
        Body::FriendAdded(friend) => {
            put("user_id", &friend.user_id);
            Notice::FriendAccepted {
                by: friend.display_name.clone(),
            }
        }
        Body::Invite(invite) => {
            let from = invite.from.clone().unwrap_or_default();
            put("room_id", &invite.room_id);
            put("user_id", &from.user_id);
            Notice::RoomInvite {
                from: from.display_name,
            }
        }
        Body::EventMatchReady(ready) => {
            put("event_id", &ready.event_id);
            put("room_id", &ready.room_id);
            Notice::MatchReady {
                event: ready.event_name.clone(),
            }
        }
        Body::EventStarting(starting) => {
            put("event_id", &starting.event_id);
            Notice::EventStarting {
                event: starting.event_name.clone(),
            }
        }
        Body::ReportHandled(_) => Notice::Moderation,
        Body::MatchResult(_) | Body::EventCancelled(_) => return None,
    };
    Some(PushNotice {
        notice: said,
        data,
        collapse_id: format!("notice-{}", notice.id),
        at: time(notice.created_at.as_ref()).unwrap_or_else(Utc::now),
        expires_at: time(notice.expires_at.as_ref()),
    })
}

#[cfg(test)]
mod tests {
    use basra_records::wire::timestamp_to_proto;

    use super::*;

    #[test]
    fn each_pushed_kind_says_and_carries_what_the_app_opens() {
        let at: DateTime<Utc> = "2026-12-06T12:00:00Z".parse().unwrap();
        let until: DateTime<Utc> = "2026-12-06T12:10:00Z".parse().unwrap();
        let notice = |body| pb::Notice {
            id: 42,
            created_at: Some(timestamp_to_proto(at)),
            expires_at: Some(timestamp_to_proto(until)),
            body: Some(body),
            ..Default::default()
        };
        let layla = pb::Friend {
            user_id: "u-1".into(),
            display_name: "Layla".into(),
            ..Default::default()
        };
        let invite = push_notice(&notice(pb::notice::Body::Invite(pb::Invite {
            from: Some(layla.clone()),
            room_id: "R7".into(),
            join_code: "SECRET".into(),
            ..Default::default()
        })))
        .unwrap();
        assert_eq!(
            invite.notice,
            Notice::RoomInvite {
                from: "Layla".into()
            }
        );
        assert_eq!(
            invite.data,
            BTreeMap::from([
                ("notice".to_owned(), "42".to_owned()),
                ("room_id".to_owned(), "R7".to_owned()),
                ("user_id".to_owned(), "u-1".to_owned()),
            ]),
            "never the join code: the app reads it from the inbox"
        );
        assert_eq!(invite.collapse_id, "notice-42");
        assert_eq!((invite.at, invite.expires_at), (at, Some(until)));

        let request = push_notice(&notice(pb::notice::Body::FriendRequest(layla))).unwrap();
        assert_eq!(
            request.notice,
            Notice::FriendRequest {
                from: "Layla".into()
            }
        );
        assert_eq!(request.data["user_id"], "u-1");
        let ready = push_notice(&notice(pb::notice::Body::EventMatchReady(
            pb::EventMatchReadyNotice {
                event_id: "e1".into(),
                event_name: "Cairo Cup".into(),
                room_id: "R9".into(),
                ..Default::default()
            },
        )))
        .unwrap();
        assert_eq!(
            ready.notice,
            Notice::MatchReady {
                event: "Cairo Cup".into()
            }
        );
        assert_eq!(
            (
                ready.data["event_id"].as_str(),
                ready.data["room_id"].as_str()
            ),
            ("e1", "R9")
        );
        let result = notice(pb::notice::Body::MatchResult(Default::default()));
        assert_eq!(push_notice(&result), None, "a match result is never pushed");
    }
}
