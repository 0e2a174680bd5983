//! `GameAdminService`: operators list, inspect and close rooms, and drain this replica
//! and take it back.

use std::sync::Arc;

use basra_platform::auth::{self, Role};
use basra_proto::basra::game::v1::{
    CloseRoomRequest, CloseRoomResponse, DrainReplicaRequest, DrainReplicaResponse, GetRoomRequest,
    GetRoomResponse, ListRoomsRequest, ListRoomsResponse, RoomSummary, StreamInfo,
    UndrainReplicaRequest, UndrainReplicaResponse, game_admin_service_server::GameAdminService,
};
use basra_proto::convert::settings_to_pb;
use tonic::{Request, Response, Status};

use crate::error::GameError;
use crate::replica::{Mutation, Replica};
use crate::room::timing::now_ms;
use crate::room::{Occupant, Reject, Room};
use crate::stream::convert::{game_view, seat_to_pb, status_to_pb, timestamp};

/// The `GameAdminService` service over a [`Replica`].
#[derive(Debug, Clone)]
pub struct AdminService {
    replica: Arc<Replica>,
}

impl AdminService {
    /// The service.
    pub fn new(replica: Arc<Replica>) -> AdminService {
        AdminService { replica }
    }

    /// This replica's name when `asked` names it or is empty; NOT_FOUND otherwise (only
    /// the replica serving the call can be `what` through it).
    fn this_replica(&self, asked: &str, what: &str) -> Result<String, Status> {
        let me = &self.replica.config.replica;
        if asked.is_empty() || asked == me {
            Ok(me.clone())
        } else {
            Err(GameError::NotFound(format!(
                "no live replica {asked:?} here (only the replica serving this call can be {what} through it)"
            ))
            .into())
        }
    }
}

/// Who calls, refused unless an operator: their name as their token gives it, else
/// their token's subject (for the log of what they did).
fn operator<T>(request: &Request<T>) -> Result<String, Status> {
    let caller = auth::caller(request)?;
    auth::require_role(&caller, Role::Operator)?;
    Ok(auth::operator_name(request).unwrap_or_else(|| caller.user_id.to_string()))
}

/// The operator's overview of a room.
fn summary(room: &Room) -> RoomSummary {
    let seats = room.seat_snapshots();
    RoomSummary {
        room_id: room.id.clone(),
        match_id: room.match_id.clone(),
        status: status_to_pb(room.status) as i32,
        visibility: room.visibility.to_proto() as i32,
        ranked: room.ranked,
        settings: Some(settings_to_pb(&room.settings)),
        seats: seats.iter().map(|s| seat_to_pb(s, seats.len())).collect(),
        round: room.game.as_ref().map_or(0, |g| g.round().index() + 1),
        totals: room
            .game
            .as_ref()
            .map_or(vec![0, 0], |g| g.totals().to_vec()),
        last_seq: room.seq,
        streams: room
            .seats
            .iter()
            .filter(|s| s.conn_id.is_some() && s.connected)
            .count() as u32,
        created_at: Some(timestamp(room.created_at_ms)),
        last_event_at: Some(timestamp(room.last_event_ms)),
    }
}

#[tonic::async_trait]
impl GameAdminService for AdminService {
    async fn list_rooms(
        &self,
        request: Request<ListRoomsRequest>,
    ) -> Result<Response<ListRoomsResponse>, Status> {
        operator(&request)?;
        let request = request.into_inner();
        let page_size = match request.page_size {
            0 => 50,
            n => n.min(500) as usize,
        };
        let mut offset: usize = if request.page_token.is_empty() {
            0
        } else {
            request
                .page_token
                .parse()
                .map_err(|_| GameError::Invalid("bad page_token".into()))?
        };
        let mut rooms = Vec::new();
        let mut exhausted = false;
        // Filters apply after loading; scan a bounded number of rooms per page.
        let mut scanned = 0;
        while rooms.len() < page_size && scanned < page_size * 20 {
            let ids = self.replica.store.list_rooms(offset, page_size).await?;
            if ids.is_empty() {
                exhausted = true;
                break;
            }
            for id in ids {
                offset += 1;
                scanned += 1;
                let Some(loaded) = self.replica.store.load(&id).await? else {
                    continue;
                };
                let room = loaded.room;
                let status_ok =
                    request.status == 0 || request.status == status_to_pb(room.status) as i32;
                let user_ok =
                    request.user_id.is_empty() || room.seat_of(&request.user_id).is_some();
                let replica_ok = request.replica.is_empty()
                    || room
                        .seats
                        .iter()
                        .any(|s| s.replica.as_deref() == Some(request.replica.as_str()));
                if status_ok && user_ok && replica_ok {
                    rooms.push(summary(&room));
                    if rooms.len() == page_size {
                        break;
                    }
                }
            }
        }
        let next_page_token = if exhausted || rooms.len() < page_size && scanned < page_size * 20 {
            String::new()
        } else {
            offset.to_string()
        };
        Ok(Response::new(ListRoomsResponse {
            rooms,
            next_page_token,
        }))
    }

    async fn get_room(
        &self,
        request: Request<GetRoomRequest>,
    ) -> Result<Response<GetRoomResponse>, Status> {
        operator(&request)?;
        let room_id = request.into_inner().room_id;
        let room = self
            .replica
            .store
            .load(&room_id)
            .await?
            .ok_or_else(|| GameError::RoomNotFound(room_id.clone()))?
            .room;
        let streams = room
            .seats
            .iter()
            .enumerate()
            .filter(|(_, s)| s.connected && s.conn_id.is_some())
            .map(|(index, s)| StreamInfo {
                seat: Some(index as u32),
                user_id: match &s.occupant {
                    Occupant::Player { user_id, .. } => user_id.clone(),
                    _ => String::new(),
                },
                replica: s.replica.clone().unwrap_or_default(),
                connected_at: Some(timestamp(s.connected_at_ms)),
                delivered_seq: 0,
            })
            .collect();
        Ok(Response::new(GetRoomResponse {
            summary: Some(summary(&room)),
            public_view: Some(game_view(&room, None)),
            streams,
        }))
    }

    async fn close_room(
        &self,
        request: Request<CloseRoomRequest>,
    ) -> Result<Response<CloseRoomResponse>, Status> {
        let by = operator(&request)?;
        let request = request.into_inner();
        if request.room_id.is_empty() || request.reason.trim().is_empty() {
            return Err(GameError::Invalid("room_id and reason are required".into()).into());
        }
        let outcome = self
            .replica
            .mutate(&request.room_id, None, |room, now| {
                Ok::<_, Reject>(room.close(request.reason.trim(), now))
            })
            .await?;
        let (match_ended, closed_now) = match outcome {
            Mutation::Done { value, .. } => value,
            Mutation::Rejected(reject) => {
                return Err(GameError::Internal(format!("close refused: {reject:?}")).into());
            }
            Mutation::AlreadyApplied(_) => (false, false),
        };
        tracing::info!(
            operator = by,
            room_id = request.room_id,
            reason = request.reason,
            match_ended,
            closed_now,
            "room closed by an operator"
        );
        Ok(Response::new(CloseRoomResponse {
            match_ended,
            closed_now,
        }))
    }

    async fn drain_replica(
        &self,
        request: Request<DrainReplicaRequest>,
    ) -> Result<Response<DrainReplicaResponse>, Status> {
        let by = operator(&request)?;
        let request = request.into_inner();
        let me = self.this_replica(&request.replica, "drained")?;
        let deadline_ms = request.deadline.map_or(30_000, |d| {
            d.seconds.max(0) * 1000 + i64::from(d.nanos.max(0)) / 1_000_000
        });
        let streams = self.replica.open_streams() as u32;
        let at = self.replica.drain.start(now_ms() + deadline_ms);
        tracing::info!(operator = by, streams, deadline_ms, "draining");
        Ok(Response::new(DrainReplicaResponse {
            replica: me,
            streams,
            drain_deadline: Some(timestamp(at)),
        }))
    }

    async fn undrain_replica(
        &self,
        request: Request<UndrainReplicaRequest>,
    ) -> Result<Response<UndrainReplicaResponse>, Status> {
        let by = operator(&request)?;
        let me = self.this_replica(&request.get_ref().replica, "taken back")?;
        let was_draining = self.replica.drain.end().map_err(|_| {
            Status::failed_precondition("this replica is stopping: its drain does not end")
        })?;
        tracing::info!(operator = by, was_draining, "drain ended by an operator");
        Ok(Response::new(UndrainReplicaResponse {
            replica: me,
            was_draining,
        }))
    }
}
