//! What players are told about their events, through accounts' inbox (issue 48,
//! `SendNotice`): "your match is ready", "the event is starting", "the event was
//! cancelled". Behind a trait so that tests and `basra dev` can watch them; a notice that
//! cannot be delivered is logged; the clock tells "your match is ready" again next tick
//! when accounts could not be reached (a transient status), and drops the rest (the
//! player still sees their match with GetMyMatch and WatchEvent).

use std::sync::Mutex;

use crate::clock::Millis;

/// One notice about an event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Notice {
    /// The player's match is ready: join the room by the deadline.
    MatchReady {
        /// The round (arena: 0).
        round: u32,
        /// The room.
        room_id: String,
        /// The opponent (a user id).
        opponent: String,
        /// Join by then or forfeit.
        deadline_ms: Millis,
    },
    /// The event starts at `starts_at_ms` with the player (accounts keeps only a notice
    /// about a start still to come).
    Starting {
        /// The start.
        starts_at_ms: Millis,
    },
    /// The event was cancelled.
    Cancelled {
        /// Why.
        reason: String,
    },
}

/// Delivers notices to players.
#[tonic::async_trait]
pub trait Notices: Send + Sync + 'static {
    /// Tells `user` about `event_id` (named `event_name`); never fails the caller.
    /// Whether it is done: delivered, or refused for good (`false`: try again later,
    /// accounts could not be reached).
    async fn notify(&self, user: &str, event_id: &str, event_name: &str, notice: Notice) -> bool;
}

/// Notices logged only (no inbox to deliver them to).
#[derive(Debug, Default, Clone, Copy)]
pub struct LoggedNotices;

#[tonic::async_trait]
impl Notices for LoggedNotices {
    async fn notify(&self, user: &str, event_id: &str, _event_name: &str, notice: Notice) -> bool {
        tracing::debug!(
            user,
            event = event_id,
            ?notice,
            "event notice (no inbox configured)"
        );
        true
    }
}

/// Notices kept in memory, for tests to look at.
#[derive(Debug, Default)]
pub struct RecordedNotices {
    /// Every notice: user, event, notice.
    pub sent: Mutex<Vec<(String, String, Notice)>>,
}

#[tonic::async_trait]
impl Notices for RecordedNotices {
    async fn notify(&self, user: &str, event_id: &str, _event_name: &str, notice: Notice) -> bool {
        self.sent.lock().unwrap_or_else(|p| p.into_inner()).push((
            user.to_owned(),
            event_id.to_owned(),
            notice,
        ));
        true
    }
}

/// Notices kept in the players' inboxes by accounts (`AccountsInternalService/SendNotice`,
/// with matchmaking's service credentials). Each has a key (`event:ID:…`) that accounts
/// keeps it once by, so a step repeated after a takeover tells nobody twice.
#[tonic::async_trait]
impl Notices for crate::upstream::GrpcPlayers {
    async fn notify(&self, user: &str, event_id: &str, event_name: &str, notice: Notice) -> bool {
        use basra_proto::basra::accounts::v1 as acc;
        use basra_proto::basra::accounts::v1::send_notice_request::Body;
        use basra_proto::convert::timestamp;
        let (key, body) = match notice {
            Notice::MatchReady {
                round,
                room_id,
                opponent,
                deadline_ms,
            } => {
                let opponent_name =
                    crate::upstream::NameSource::names(self, std::slice::from_ref(&opponent))
                        .await
                        .ok()
                        .and_then(|mut names| names.remove(&opponent))
                        .unwrap_or_default();
                (
                    format!("event:{event_id}:{room_id}:ready"),
                    Body::EventMatchReady(acc::EventMatchReadyNotice {
                        event_id: event_id.to_owned(),
                        event_name: event_name.to_owned(),
                        round,
                        room_id,
                        opponent_name,
                        join_deadline: Some(timestamp(deadline_ms)),
                    }),
                )
            }
            Notice::Starting { starts_at_ms } => (
                format!("event:{event_id}:starting"),
                Body::EventStarting(acc::EventStartingNotice {
                    event_id: event_id.to_owned(),
                    event_name: event_name.to_owned(),
                    starts_at: Some(timestamp(starts_at_ms)),
                }),
            ),
            Notice::Cancelled { .. } => (
                format!("event:{event_id}:cancelled"),
                Body::EventCancelled(acc::EventCancelledNotice {
                    event_id: event_id.to_owned(),
                    event_name: event_name.to_owned(),
                }),
            ),
        };
        let request = acc::SendNoticeRequest {
            to_user_id: user.to_owned(),
            dedupe_key: key,
            body: Some(body),
        };
        match self.send_notice(request).await {
            Ok(_) => true,
            Err(status) => {
                tracing::warn!(user, event = event_id, error = %status, "event notice not delivered");
                !crate::upstream::is_transient(&status)
            }
        }
    }
}
