//! The replica's gRPC services, side by side, over one [`GameApi`] handle on the
//! [`Replica`]:
//!
//! - `game`: `GameService`, what players call. Its Play stream goes through
//!   [`play_route`] (shared bytes); `stream` admits a Play stream and reads its join
//!   before the stream's session opens (`crate::stream`); [`web`] holds the browser
//!   shape (`Watch` and one unary call per action).
//! - `internal`: `GameInternalService`, matchmaking's room set-up (service token); `bulk`
//!   its calls for many rooms at once (an event's round).
//! - [`admin`]: `GameAdminService`, the operators' calls.
//!
//! Each file turns requests into calls of the [`Replica`], the streams and the room's
//! actions, and their answers into responses; no game rule lives here.

use std::sync::Arc;
use std::time::Duration;

use basra_platform::ratelimit::RateLimiter;
use tonic::Status;

use crate::error::GameError;
use crate::replica::Replica;

pub mod admin;
mod bulk;
mod game;
mod internal;
pub mod play_route;
mod stream;
pub mod web;

/// The services' handle on a [`Replica`], with the chat limiter the Play stream and the
/// unary chat call share.
#[derive(Debug, Clone)]
pub struct GameApi {
    replica: Arc<Replica>,
    chat: Arc<RateLimiter>,
}

impl GameApi {
    /// The service.
    pub fn new(replica: Arc<Replica>) -> GameApi {
        GameApi {
            replica,
            chat: Arc::new(RateLimiter::new(5, Duration::from_secs(10))),
        }
    }
}

impl GameApi {
    /// The `GameService` calls' shared handle on the chat limiter (the action calls use it).
    pub(crate) fn chat(&self) -> &RateLimiter {
        &self.chat
    }

    /// The replica's shared state.
    pub(crate) fn replica(&self) -> &Arc<Replica> {
        &self.replica
    }
}

/// An INVALID_ARGUMENT status with `message`.
fn invalid(message: impl Into<String>) -> Status {
    GameError::Invalid(message.into()).into()
}
