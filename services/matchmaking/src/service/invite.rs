//! InviteFriend: matchmaking checks the room, accounts checks the friendship and puts the
//! invite on the friend's feed (`AccountsInternalService/SendInvite`).

use basra_platform::auth::Caller;
use basra_proto::basra::accounts::v1::SendInviteRequest;
use basra_proto::basra::matchmaking::v1::{InviteFriendRequest, InviteFriendResponse};
use basra_proto::convert::settings_to_pb;
use tonic::Code;

use super::MatchmakingApi;
use crate::clock::Millis;
use crate::error::{MatchmakingError, Result};
use crate::store::{Occupant, RoomRecord, RoomStatus};

impl MatchmakingApi {
    pub(super) async fn invite_friend_inner(
        &self,
        caller: Caller,
        request: InviteFriendRequest,
    ) -> Result<InviteFriendResponse> {
        let me = caller.user_id.to_string();
        if request.room_id.is_empty() || request.room_id.len() > 128 {
            return Err(MatchmakingError::InvalidArgument(
                "room_id must be 1..128 characters".into(),
            ));
        }
        let friend = uuid::Uuid::parse_str(&request.user_id)
            .map_err(|_| MatchmakingError::InvalidArgument("user_id is not a user id".into()))?
            .to_string();
        if friend == me {
            return Err(MatchmakingError::InvalidArgument(
                "user_id is you: invite a friend".into(),
            ));
        }
        let inner = &self.inner;
        let room = inner
            .deps
            .store
            .room(&request.room_id)
            .await?
            .ok_or_else(|| MatchmakingError::NotFound("no such room".into()))?;
        let seated = |user: &str| {
            room.seats
                .iter()
                .any(|seat| matches!(seat, Occupant::Player { user_id, .. } if user_id == user))
        };
        if !seated(&me) {
            return Err(MatchmakingError::PermissionDenied(
                "you hold no seat in this room: only its players invite".into(),
            ));
        }
        match room.status {
            RoomStatus::Open => {}
            RoomStatus::Full => {
                return Err(MatchmakingError::FailedPrecondition(
                    "the room is full: its match has started".into(),
                ));
            }
            RoomStatus::Closed => {
                return Err(MatchmakingError::FailedPrecondition(
                    "the room is closed".into(),
                ));
            }
        }
        if seated(&friend) {
            return Err(MatchmakingError::FailedPrecondition(
                "your friend is already seated in this room".into(),
            ));
        }
        let expires_at = basra_proto::convert::timestamp(lapses_at(&room));
        // Noted before the invite leaves, so a friend who joins at once is seen as
        // invited; a refused invite leaves a note nobody reads.
        let ttl_ms = (lapses_at(&room) - inner.now()).max(60_000);
        inner
            .deps
            .store
            .note_invite(&friend, &room.id, ttl_ms)
            .await?;
        inner
            .deps
            .invites
            .send_invite(SendInviteRequest {
                from_user_id: me,
                to_user_id: friend,
                room_id: room.id.clone(),
                join_code: room.code.clone(),
                settings: Some(settings_to_pb(&room.settings)),
                expires_at: Some(expires_at),
            })
            .await
            .map_err(|status| match status.code() {
                Code::NotFound => MatchmakingError::NotFound(status.message().into()),
                Code::FailedPrecondition => {
                    MatchmakingError::FailedPrecondition(status.message().into())
                }
                Code::InvalidArgument => MatchmakingError::FailedPrecondition(format!(
                    "the invite was refused: {}",
                    status.message()
                )),
                _ => MatchmakingError::Unavailable(format!(
                    "accounts could not deliver the invite: {}",
                    status.message()
                )),
            })?;
        Ok(InviteFriendResponse {
            expires_at: Some(expires_at),
        })
    }
}

/// How long a room made before rooms stored their expiry is taken to wait for its
/// players (the default of `rooms.ttl_seconds`).
const ROOM_LIFETIME_MS: Millis = 30 * 60 * 1000;

/// When `room` lapses if nobody fills it: its stored expiry (`rooms.ttl_seconds` after
/// CreateRoom; the sweep closes it then), so an invite expires with its room.
fn lapses_at(room: &RoomRecord) -> Millis {
    if room.expires_ms > 0 {
        room.expires_ms
    } else {
        room.created_ms + ROOM_LIFETIME_MS
    }
}
