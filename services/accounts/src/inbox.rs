//! The inbox: the notices a player should see even if no feed of theirs was open when
//! they happened (issue 48, item 1). Pure rules here; the notices are kept by the store's
//! [`Inbox`](crate::store::Inbox) role (PostgreSQL `notices`, or memory) and served by
//! `service/inbox.rs` (ListNotices, MarkNoticesRead, CountUnreadNotices, SendNotice).
//!
//! A notice is kept once per player and dedupe key ([`NewNotice::dedupe_key`]): a
//! repeated SendNotice, or a match recorded twice, keeps nothing new. Each kept notice
//! also goes on the player's feed as a `notice` event (a numbered note, so a resumed feed
//! sends it once: the feed's `last_seen_seq`), and is handed to the [`NoticeHook`], once.
//!
//! Bounds ([`InboxLimits`], `[inbox]` settings): at most `keep` notices per player (the
//! oldest go first, read or not) and each is dropped at its `expires_at`: `keep_for` after
//! it was made, or sooner when its body lapses ([`lapses_at`]).
//!
//! **The hook for push delivery.** [`NoticeHook::notice_kept`] is called once for every
//! notice kept (never for a duplicate), after it is committed, with the addressee, its
//! kind and its body ([`KeptNotice`]); set it with
//! [`ServiceConfig::notice_hook`](crate::ServiceConfig::notice_hook). It runs on the
//! caller's task: it must not block (hand the notice to a channel or a task). It is a
//! signal, at most once per notice (a replica that stops right after the commit does not
//! call it); what must be delivered at least once reads the inbox again.

use std::sync::Arc;
use std::time::Duration;

use basra_proto::basra::accounts::v1 as pb;
use basra_records::wire::timestamp_to_proto;
use chrono::{DateTime, Utc};
use prost::Message as _;
use uuid::Uuid;

use crate::error::{AccountsError, Result};

/// Notices kept per player unless set (`inbox.keep`).
pub const DEFAULT_KEEP: u32 = 200;
/// Days a notice is kept unless set (`inbox.keep_days`).
pub const DEFAULT_KEEP_DAYS: u32 = 30;
/// The most ids one MarkNoticesRead names, and the largest ListNotices page.
pub const MAX_IDS: usize = 100;
/// The longest dedupe key, id or name in a SendNotice, in characters.
pub const MAX_FIELD_CHARS: usize = 128;
/// How often each replica drops the expired notices of every player (keeping a notice
/// drops its player's at once; listing never shows them).
pub const SWEEP_EVERY: Duration = Duration::from_secs(3600);

/// What a notice is about (stored as its [`NoticeKind::as_str`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NoticeKind {
    /// A player asked to be friends.
    FriendRequest,
    /// A player accepted a friend request.
    FriendAdded,
    /// A friend invited the player to a room.
    Invite,
    /// A match ended while no feed of the player's was open.
    MatchResult,
    /// A report of the player's was handled.
    ReportHandled,
    /// The player's next tournament match is ready.
    EventMatchReady,
    /// A tournament of the player's starts soon.
    EventStarting,
    /// A tournament of the player's was cancelled.
    EventCancelled,
}

impl NoticeKind {
    /// Every kind.
    pub const ALL: [NoticeKind; 8] = [
        NoticeKind::FriendRequest,
        NoticeKind::FriendAdded,
        NoticeKind::Invite,
        NoticeKind::MatchResult,
        NoticeKind::ReportHandled,
        NoticeKind::EventMatchReady,
        NoticeKind::EventStarting,
        NoticeKind::EventCancelled,
    ];

    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            NoticeKind::FriendRequest => "friend_request",
            NoticeKind::FriendAdded => "friend_added",
            NoticeKind::Invite => "invite",
            NoticeKind::MatchResult => "match_result",
            NoticeKind::ReportHandled => "report_handled",
            NoticeKind::EventMatchReady => "event_match_ready",
            NoticeKind::EventStarting => "event_starting",
            NoticeKind::EventCancelled => "event_cancelled",
        }
    }

    /// The kind of a stored name.
    pub fn parse(name: &str) -> Option<NoticeKind> {
        NoticeKind::ALL.into_iter().find(|k| k.as_str() == name)
    }

    /// The kind of a body.
    pub fn of(body: &pb::notice::Body) -> NoticeKind {
        use pb::notice::Body;
        match body {
            Body::FriendRequest(_) => NoticeKind::FriendRequest,
            Body::FriendAdded(_) => NoticeKind::FriendAdded,
            Body::Invite(_) => NoticeKind::Invite,
            Body::MatchResult(_) => NoticeKind::MatchResult,
            Body::ReportHandled(_) => NoticeKind::ReportHandled,
            Body::EventMatchReady(_) => NoticeKind::EventMatchReady,
            Body::EventStarting(_) => NoticeKind::EventStarting,
            Body::EventCancelled(_) => NoticeKind::EventCancelled,
        }
    }

    /// The API's value.
    pub fn to_proto(self) -> pb::NoticeKind {
        match self {
            NoticeKind::FriendRequest => pb::NoticeKind::FriendRequest,
            NoticeKind::FriendAdded => pb::NoticeKind::FriendAdded,
            NoticeKind::Invite => pb::NoticeKind::Invite,
            NoticeKind::MatchResult => pb::NoticeKind::MatchResult,
            NoticeKind::ReportHandled => pb::NoticeKind::ReportHandled,
            NoticeKind::EventMatchReady => pb::NoticeKind::EventMatchReady,
            NoticeKind::EventStarting => pb::NoticeKind::EventStarting,
            NoticeKind::EventCancelled => pb::NoticeKind::EventCancelled,
        }
    }
}

/// How much of an inbox is kept (`[inbox]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InboxLimits {
    /// Notices kept per player: a new one past it drops the oldest.
    pub keep: u32,
    /// How long a notice is kept at most.
    pub keep_for: Duration,
}

impl Default for InboxLimits {
    fn default() -> Self {
        InboxLimits {
            keep: DEFAULT_KEEP,
            keep_for: Duration::from_secs(u64::from(DEFAULT_KEEP_DAYS) * 24 * 3600),
        }
    }
}

/// A notice to keep ([`Inbox::keep_notice`](crate::store::Inbox::keep_notice)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewNotice {
    /// The addressee.
    pub user_id: Uuid,
    /// What it is about.
    pub kind: NoticeKind,
    /// The encoded body (`pb::Notice` with only its body set).
    pub payload: Vec<u8>,
    /// Keeps a second notice with the same key for this player from being kept.
    pub dedupe_key: Option<String>,
    /// The player it names (who asked, accepted, invited): the notice goes when that
    /// account is deleted, so their name is not shown after.
    pub about: Option<Uuid>,
    /// Now.
    pub created_at: DateTime<Utc>,
    /// When it is dropped.
    pub expires_at: DateTime<Utc>,
}

/// A kept notice.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredNotice {
    /// Its id, rising in the order notices are kept.
    pub id: u64,
    /// The addressee.
    pub user_id: Uuid,
    /// What it is about.
    pub kind: NoticeKind,
    /// The encoded body (`pb::Notice` with only its body set).
    pub payload: Vec<u8>,
    /// When it was kept.
    pub created_at: DateTime<Utc>,
    /// When it is dropped.
    pub expires_at: DateTime<Utc>,
    /// Whether the player marked it read.
    pub read: bool,
}

impl StoredNotice {
    /// The API's notice (a payload that does not decode gives a notice without a body).
    pub fn to_proto(&self) -> pb::Notice {
        let body = pb::Notice::decode(self.payload.as_slice())
            .map(|n| n.body)
            .unwrap_or_else(|err| {
                tracing::error!(error = %err, id = self.id, "a kept notice does not decode");
                None
            });
        pb::Notice {
            id: self.id,
            kind: self.kind.to_proto() as i32,
            created_at: Some(timestamp_to_proto(self.created_at)),
            read: self.read,
            expires_at: Some(timestamp_to_proto(self.expires_at)),
            body,
        }
    }
}

/// What [`Inbox::keep_notice`](crate::store::Inbox::keep_notice) did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kept {
    /// The notice kept now, or the one kept before under the same dedupe key.
    pub notice: StoredNotice,
    /// True when nothing was kept now (the dedupe key was known).
    pub duplicate: bool,
}

/// A player's unread count, with the newest kept notice's id, read together.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Unread {
    /// Kept notices not read.
    pub count: u32,
    /// The newest kept notice's id, read or not (0: none).
    pub newest_id: u64,
}

/// Which notices MarkNoticesRead marks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Marking {
    /// These (each the player's, kept: else nothing is marked).
    Ids(Vec<u64>),
    /// Every one of the player's up to this id.
    UpTo(u64),
}

/// A page of ListNotices: newest first, before `before` (an id) when set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NoticePage {
    /// Only notices with a smaller id.
    pub before: Option<u64>,
    /// Only unread ones.
    pub unread_only: bool,
    /// At most this many.
    pub limit: u32,
}

/// Told of each notice kept; see the module docs.
pub trait NoticeHook: std::fmt::Debug + Send + Sync + 'static {
    /// `notice` was kept (once per notice; not called for a duplicate). Must not block.
    fn notice_kept(&self, notice: &KeptNotice);
}

/// The hook in [`ServiceConfig`](crate::ServiceConfig): none, or one.
pub type SharedNoticeHook = Option<Arc<dyn NoticeHook>>;

/// What [`NoticeHook::notice_kept`] is told.
#[derive(Debug, Clone, PartialEq)]
pub struct KeptNotice {
    /// The addressee.
    pub user_id: Uuid,
    /// What it is about.
    pub kind: NoticeKind,
    /// The notice as the API shows it (id, times, body).
    pub notice: pb::Notice,
}

/// When a notice of `body` made at `now` is dropped: `keep_for` later, or when its body
/// lapses if that is sooner (an invite's room, a join deadline, a start).
pub fn expires_at(
    body: &pb::notice::Body,
    now: DateTime<Utc>,
    keep_for: Duration,
) -> DateTime<Utc> {
    let most = now + chrono::Duration::from_std(keep_for).unwrap_or(chrono::Duration::days(30));
    lapses_at(body).map_or(most, |at| at.min(most))
}

/// When the body itself lapses, if it does.
pub fn lapses_at(body: &pb::notice::Body) -> Option<DateTime<Utc>> {
    use pb::notice::Body;
    let at = match body {
        Body::Invite(invite) => invite.expires_at.as_ref(),
        Body::EventMatchReady(ready) => ready.join_deadline.as_ref(),
        Body::EventStarting(starting) => starting.starts_at.as_ref(),
        _ => None,
    }?;
    DateTime::from_timestamp(at.seconds, at.nanos.clamp(0, 999_999_999) as u32)
}

/// The payload of a body.
pub fn encode_body(body: pb::notice::Body) -> Vec<u8> {
    pb::Notice {
        body: Some(body),
        ..Default::default()
    }
    .encode_to_vec()
}

/// Checks a SendNotice body: ids and names set and short, times set and in the future.
pub fn check_sent_body(body: &pb::notice::Body, now: DateTime<Utc>) -> Result<()> {
    use pb::notice::Body;
    let text = |field: &'static str, value: &str, required: bool| -> Result<()> {
        if required && value.is_empty() {
            return Err(AccountsError::invalid(field, "is empty"));
        }
        if value.chars().count() > MAX_FIELD_CHARS {
            return Err(AccountsError::invalid(
                field,
                "is longer than 128 characters",
            ));
        }
        Ok(())
    };
    let future = |field: &'static str, at: Option<&prost_types::Timestamp>| -> Result<()> {
        let at = at
            .and_then(|t| DateTime::from_timestamp(t.seconds, t.nanos.clamp(0, 999_999_999) as u32))
            .ok_or_else(|| AccountsError::invalid(field, "is missing or out of range"))?;
        if at <= now {
            return Err(AccountsError::invalid(field, "is in the past"));
        }
        Ok(())
    };
    match body {
        Body::EventMatchReady(ready) => {
            text("event_match_ready.event_id", &ready.event_id, true)?;
            text("event_match_ready.event_name", &ready.event_name, true)?;
            text("event_match_ready.room_id", &ready.room_id, true)?;
            text(
                "event_match_ready.opponent_name",
                &ready.opponent_name,
                false,
            )?;
            future(
                "event_match_ready.join_deadline",
                ready.join_deadline.as_ref(),
            )
        }
        Body::EventStarting(starting) => {
            text("event_starting.event_id", &starting.event_id, true)?;
            text("event_starting.event_name", &starting.event_name, true)?;
            future("event_starting.starts_at", starting.starts_at.as_ref())
        }
        Body::EventCancelled(cancelled) => {
            text("event_cancelled.event_id", &cancelled.event_id, true)?;
            text("event_cancelled.event_name", &cancelled.event_name, true)
        }
        _ => Err(AccountsError::invalid(
            "body",
            "SendNotice sends the event notices only",
        )),
    }
}

/// Checks a dedupe key: 1..128 characters.
pub fn check_dedupe_key(key: &str) -> Result<()> {
    if key.is_empty() || key.chars().count() > MAX_FIELD_CHARS {
        return Err(AccountsError::invalid(
            "dedupe_key",
            "must be 1..128 characters",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_read_back_and_match_their_bodies() {
        for kind in NoticeKind::ALL {
            assert_eq!(NoticeKind::parse(kind.as_str()), Some(kind));
        }
        assert_eq!(NoticeKind::parse("nope"), None);
        let body = pb::notice::Body::EventCancelled(pb::EventCancelledNotice::default());
        assert_eq!(NoticeKind::of(&body), NoticeKind::EventCancelled);
    }

    #[test]
    fn a_notice_lapses_with_its_body_or_after_keep_for() {
        let now = DateTime::from_timestamp(1_000_000, 0).unwrap();
        let keep = Duration::from_secs(3600);
        let cancelled = pb::notice::Body::EventCancelled(pb::EventCancelledNotice::default());
        assert_eq!(
            expires_at(&cancelled, now, keep),
            now + chrono::Duration::hours(1)
        );
        let soon = now + chrono::Duration::minutes(5);
        let ready = pb::notice::Body::EventMatchReady(pb::EventMatchReadyNotice {
            join_deadline: Some(timestamp_to_proto(soon)),
            ..Default::default()
        });
        assert_eq!(expires_at(&ready, now, keep), soon);
        let late = pb::notice::Body::EventStarting(pb::EventStartingNotice {
            starts_at: Some(timestamp_to_proto(now + chrono::Duration::days(3))),
            ..Default::default()
        });
        assert_eq!(
            expires_at(&late, now, keep),
            now + chrono::Duration::hours(1)
        );
    }

    #[test]
    fn sent_bodies_are_checked() {
        let now = DateTime::from_timestamp(1_000_000, 0).unwrap();
        let ready = |deadline: DateTime<Utc>, round: u32| {
            pb::notice::Body::EventMatchReady(pb::EventMatchReadyNotice {
                event_id: "e1".into(),
                event_name: "Friday cup".into(),
                round,
                room_id: "r1".into(),
                opponent_name: "Mona".into(),
                join_deadline: Some(timestamp_to_proto(deadline)),
            })
        };
        let later = now + chrono::Duration::minutes(3);
        assert!(check_sent_body(&ready(later, 1), now).is_ok());
        assert!(
            check_sent_body(&ready(now, 1), now).is_err(),
            "deadline now"
        );
        // Found by the fault suite's arena (scenario k): every arena notice was refused.
        assert!(
            check_sent_body(&ready(later, 0), now).is_ok(),
            "round 0: an arena match"
        );
        let long = pb::notice::Body::EventCancelled(pb::EventCancelledNotice {
            event_id: "e".repeat(129),
            event_name: "x".into(),
        });
        assert!(check_sent_body(&long, now).is_err());
        let friend = pb::notice::Body::FriendAdded(pb::Friend::default());
        assert!(
            check_sent_body(&friend, now).is_err(),
            "not an event notice"
        );
        assert!(check_dedupe_key("").is_err());
        assert!(check_dedupe_key(&"k".repeat(129)).is_err());
        assert!(check_dedupe_key("event:e1:ready").is_ok());
    }
}
