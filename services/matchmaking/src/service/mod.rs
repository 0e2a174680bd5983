//! The `basra.matchmaking.v1.MatchmakingService` gRPC service, one module per concern:
//!
//! - `queue`, FindMatch (a ticket in the shared queue and the stream that follows it
//!   until it is matched, cancelled or gone) and CancelFind;
//! - `lobby`, CreateRoom, JoinRoom and ListPublicRooms (private and public rooms);
//! - `invite`, InviteFriend;
//! - `grpc`, the `MatchmakingService` trait: only glue (caller, span fields).
//!
//! This module holds what they share: the service handle and the checks every way to a
//! seat makes (one seat per player, ranked play for registered players). The replica's
//! shared state is `crate::state`; the API forms are `crate::convert`.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::Arc;

use basra_platform::Caller;
use basra_proto::basra::common::v1 as common;
use basra_proto::basra::game::v1 as game;
use basra_proto::basra::matchmaking::v1::{FindMatchResponse, GetCurrentSeatResponse};
use tokio_stream::Stream;
use tonic::Status;

use crate::error::{MatchmakingError, Result};
use crate::state::{PLAYER_ROOM_TTL_MS, Shared};
use crate::store::Occupant;
use crate::upstream::is_transient;

mod grpc;
mod invite;
mod lobby;
mod queue;

/// The Matchmaking service; clone freely.
#[derive(Clone)]
pub struct MatchmakingApi {
    pub(crate) inner: Arc<Shared>,
}

/// The longest a search or a room waits to learn whether the player has an event match
/// in play (the events' store unreachable must not stop quick play).
const EVENT_CHECK: std::time::Duration = std::time::Duration::from_millis(500);

/// The FindMatch stream type.
pub type FindMatchStream = Pin<Box<dyn Stream<Item = Result<FindMatchResponse, Status>> + Send>>;

/// The most characters of a client-chosen id.
const MAX_ID_LEN: usize = 64;

pub(crate) fn check_client_id(what: &str, id: &str) -> Result<()> {
    if id.len() > MAX_ID_LEN
        || !id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    {
        return Err(MatchmakingError::InvalidArgument(format!(
            "{what} must be at most {MAX_ID_LEN} characters of A-Z, a-z, 0-9, '-' and '_'"
        )));
    }
    Ok(())
}

/// The display names of the players in `seats` (user id → name); none when
/// accounts cannot say right now (the seats then show "Player N").
pub(crate) async fn names_of<'a>(
    inner: &Shared,
    seats: impl IntoIterator<Item = &'a Occupant>,
) -> HashMap<String, String> {
    let mut users: Vec<String> = seats
        .into_iter()
        .filter_map(|o| match o {
            Occupant::Player { user_id, .. } => Some(user_id.clone()),
            _ => None,
        })
        .collect();
    users.sort_unstable();
    users.dedup();
    inner
        .deps
        .names
        .names(&users)
        .await
        .inspect_err(|err| tracing::warn!(error = %err, "players' names unavailable"))
        .unwrap_or_default()
}

fn game_error(status: Status, context: &'static str) -> MatchmakingError {
    if is_transient(&status) {
        tracing::warn!(error = %status, context, "game-session unavailable");
        MatchmakingError::Unavailable("game-session is unavailable: retry shortly".into())
    } else {
        MatchmakingError::Upstream { context, status }
    }
}

impl MatchmakingApi {
    pub(super) fn check_ranked_allowed(&self, caller: &Caller) -> Result<()> {
        if caller.guest && !self.inner.config.queue.guests_may_play_ranked {
            return Err(MatchmakingError::PermissionDenied(
                "guest accounts may not play ranked: register first".into(),
            ));
        }
        Ok(())
    }

    /// Refuses a player who is still seated in an unfinished match (a room
    /// waiting for players or being played), other than `except`.
    pub(super) async fn ensure_not_seated(&self, user: &str, except: Option<&str>) -> Result<()> {
        match self.current_seat(user).await? {
            Some(seat) if except != Some(seat.room_id.as_str()) => Err(MatchmakingError::Seated {
                room_id: seat.room_id,
            }),
            _ => Ok(()),
        }
    }

    /// The seat `user` holds in an unfinished match (a room waiting for players or
    /// being played), if any: the room remembered here, else their event match made and
    /// without a result yet (`events::seated`). Whether they still hold a seat there and
    /// whether its match is finished, game-session says.
    pub(super) async fn current_seat(&self, user: &str) -> Result<Option<GetCurrentSeatResponse>> {
        if let Some(room_id) = self.inner.deps.store.player_room(user).await?
            && let Some(seat) = self.seat_in(user, room_id).await?
        {
            return Ok(Some(seat));
        }
        // Events are not needed to play: when their store cannot say (or not within
        // EVENT_CHECK), the player is not held back (logged).
        let events = &self.inner.deps.events;
        match tokio::time::timeout(EVENT_CHECK, crate::events::seated::event_room(events, user))
            .await
        {
            Ok(Ok(Some(room_id))) => self.seat_in(user, room_id).await,
            Ok(Ok(None)) => Ok(None),
            Ok(Err(err)) => {
                tracing::warn!(error = %err, "event matches unknown: not checked");
                Ok(None)
            }
            Err(_) => {
                tracing::warn!("event matches not known in time: not checked");
                Ok(None)
            }
        }
    }

    /// The seat `user` holds in `room_id` if its match is not finished.
    async fn seat_in(&self, user: &str, room_id: String) -> Result<Option<GetCurrentSeatResponse>> {
        let inner = &self.inner;
        let answer = inner
            .deps
            .game
            .get_seat(game::GetSeatRequest {
                room_id: room_id.clone(),
                user_id: user.to_owned(),
            })
            .await;
        let seat = match answer {
            Ok(seat) => seat,
            Err(status) if status.code() == tonic::Code::NotFound => return Ok(None),
            Err(status) => return Err(game_error(status, "game-session GetSeat")),
        };
        let status = common::RoomStatus::try_from(seat.status);
        let started = match status {
            Ok(common::RoomStatus::Waiting) => false,
            Ok(common::RoomStatus::InProgress) => true,
            _ => return Ok(None),
        };
        Ok(seat.seat.map(|number| GetCurrentSeatResponse {
            room_id,
            seat: number,
            status: seat.status,
            started,
        }))
    }

    /// Remembers where a player sits, for [`ensure_not_seated`](Self::ensure_not_seated).
    pub(super) async fn remember_seat(&self, user: &str, room_id: &str) -> Result<()> {
        self.inner
            .deps
            .store
            .set_player_room(user, room_id, PLAYER_ROOM_TTL_MS)
            .await
    }

    pub(super) fn player(caller: Caller) -> Result<Caller> {
        if caller.role != basra_platform::Role::Player {
            return Err(MatchmakingError::PermissionDenied(
                "matchmaking is for players: this token is not a player's".into(),
            ));
        }
        Ok(caller)
    }
}
