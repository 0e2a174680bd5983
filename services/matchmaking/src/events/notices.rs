//! What players are told about their events, through accounts' inbox (issue 48) once
//! it is there: "your match is ready", "the event is starting", "the event was
//! cancelled". Behind a trait so that tests and `basra dev` can watch them; a notice that
//! cannot be delivered is logged and dropped (the player still sees their match with
//! GetMyMatch and WatchEvent).

use std::sync::Mutex;

use crate::clock::Millis;

/// One notice about an event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Notice {
    /// The player's match is ready: join the room by the deadline.
    MatchReady {
        /// The room.
        room_id: String,
        /// Join by then or forfeit.
        deadline_ms: Millis,
    },
    /// The event has started with the player.
    Starting,
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
    async fn notify(&self, user: &str, event_id: &str, event_name: &str, notice: Notice);
}

/// Notices logged only (no inbox to deliver them to).
#[derive(Debug, Default, Clone, Copy)]
pub struct LoggedNotices;

#[tonic::async_trait]
impl Notices for LoggedNotices {
    async fn notify(&self, user: &str, event_id: &str, _event_name: &str, notice: Notice) {
        tracing::debug!(
            user,
            event = event_id,
            ?notice,
            "event notice (no inbox configured)"
        );
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
    async fn notify(&self, user: &str, event_id: &str, _event_name: &str, notice: Notice) {
        self.sent.lock().unwrap_or_else(|p| p.into_inner()).push((
            user.to_owned(),
            event_id.to_owned(),
            notice,
        ));
    }
}
