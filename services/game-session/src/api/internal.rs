//! `GameInternalService`: matchmaking's room set-up (CreateRoom, SeatPlayer, GetSeat, and
//! their bulk forms CreateRooms and GetSeats, in `bulk`), with a service token only.

use basra_engine::Settings;
use basra_platform::auth::{self, Role};
use basra_proto::basra::common::v1 as pb;
use basra_proto::basra::game::v1::{
    CreateRoomRequest, CreateRoomResponse, CreateRoomsRequest, CreateRoomsResponse, GetSeatRequest,
    GetSeatResponse, GetSeatsRequest, GetSeatsResponse, RejectCode, SeatPlayerRequest,
    SeatPlayerResponse, game_internal_service_server::GameInternalService,
    seat_assignment::Occupant as PbOccupant,
};
use basra_proto::convert::{settings_from_pb, settings_to_pb};
use basra_records::SeatFill;
use std::collections::HashMap;
use std::sync::Arc;
use tonic::{Request, Response, Status};

use super::{GameApi, bulk, invalid};
use crate::accounts::{KnownPlayer, known_players};
use crate::error::GameError;
use crate::replica::{Mutation, Replica};
use crate::room::timing::now_ms;
use crate::room::{BotLevel, Occupant, Reject, Room, SeatOrigin, Visibility};
use crate::room::{fresh_id, fresh_seed};
use crate::stream::convert::status_to_pb;

#[tonic::async_trait]
impl GameInternalService for GameApi {
    #[tracing::instrument(skip_all, fields(room_id = %request.get_ref().room_id))]
    async fn create_room(
        &self,
        request: Request<CreateRoomRequest>,
    ) -> Result<Response<CreateRoomResponse>, Status> {
        auth::require_role(&auth::caller(&request)?, Role::Service)?;
        refuse_when_draining(&self.replica)?;
        let mut room = NewRoom::check(&request.into_inner())?;
        let known = known_players(self.replica.accounts.as_ref(), &room.users()).await;
        room.name(&known);
        let answer = room.make(&self.replica).await?;
        tracing::info!(created = answer.created, "room created");
        Ok(Response::new(answer))
    }

    #[tracing::instrument(skip_all, fields(room_id = %request.get_ref().room_id))]
    async fn seat_player(
        &self,
        request: Request<SeatPlayerRequest>,
    ) -> Result<Response<SeatPlayerResponse>, Status> {
        auth::require_role(&auth::caller(&request)?, Role::Service)?;
        let request = request.into_inner();
        if request.user_id.is_empty() {
            return Err(invalid("user_id is required"));
        }
        let mut origin = seat_origin(0, request.fill, 0)?;
        let player = known_players(
            self.replica.accounts.as_ref(),
            std::slice::from_ref(&request.user_id),
        )
        .await
        .remove(&request.user_id)
        .unwrap_or_default();
        origin.guest = player.guest;
        let name = player.name;
        let outcome = self
            .replica
            .mutate(&request.room_id, None, |room, now| {
                room.seat_arriving_player(
                    &request.user_id,
                    &name,
                    request.preferred_seat,
                    origin,
                    fresh_seed(),
                    fresh_id(),
                    now,
                )
                .map_err(|message| Reject::new(RejectCode::NotInProgress, message))
            })
            .await?;
        match outcome {
            Mutation::Done { value, committed } => Ok(Response::new(SeatPlayerResponse {
                seat: u32::from(value),
                settings: Some(settings_to_pb(&committed.room.settings)),
                ranked: committed.room.ranked,
            })),
            Mutation::Rejected(reject) => Err(GameError::Precondition(reject.message).into()),
            Mutation::AlreadyApplied(_) => {
                Err(GameError::Internal("unexpected answer".into()).into())
            }
        }
    }

    #[tracing::instrument(skip_all, fields(room_id = %request.get_ref().room_id))]
    async fn get_seat(
        &self,
        request: Request<GetSeatRequest>,
    ) -> Result<Response<GetSeatResponse>, Status> {
        auth::require_role(&auth::caller(&request)?, Role::Service)?;
        let request = request.into_inner();
        if request.room_id.is_empty() || request.user_id.is_empty() {
            return Err(invalid("room_id and user_id are required"));
        }
        let loaded = self
            .replica
            .store
            .load(&request.room_id)
            .await?
            .ok_or_else(|| GameError::RoomNotFound(request.room_id.clone()))?;
        Ok(Response::new(seat_answer(&loaded.room, &request.user_id)))
    }

    #[tracing::instrument(skip_all, fields(rooms = request.get_ref().rooms.len()))]
    async fn create_rooms(
        &self,
        request: Request<CreateRoomsRequest>,
    ) -> Result<Response<CreateRoomsResponse>, Status> {
        auth::require_role(&auth::caller(&request)?, Role::Service)?;
        refuse_when_draining(&self.replica)?;
        let rooms = bulk::create_rooms(&self.replica, request.into_inner()).await?;
        Ok(Response::new(CreateRoomsResponse { rooms }))
    }

    #[tracing::instrument(skip_all, fields(seats = request.get_ref().seats.len()))]
    async fn get_seats(
        &self,
        request: Request<GetSeatsRequest>,
    ) -> Result<Response<GetSeatsResponse>, Status> {
        auth::require_role(&auth::caller(&request)?, Role::Service)?;
        let seats = bulk::get_seats(&self.replica, request.into_inner()).await?;
        Ok(Response::new(GetSeatsResponse { seats }))
    }
}

/// UNAVAILABLE while the replica drains: a room made here would have nobody to serve
/// its streams.
fn refuse_when_draining(replica: &Replica) -> Result<(), Status> {
    if replica.drain.is_draining() {
        return Err(Status::unavailable(
            "this replica is draining: create the room on another replica",
        ));
    }
    Ok(())
}

/// GetSeat's answer for `user_id` in `room` (GetSeats answers each item with it too).
pub(super) fn seat_answer(room: &Room, user_id: &str) -> GetSeatResponse {
    let seat = room.seat_of(user_id);
    GetSeatResponse {
        status: status_to_pb(room.status) as i32,
        seat: seat.map(u32::from),
        winner_seat: room
            .game
            .as_ref()
            .and_then(|g| g.result())
            .map(|r| u32::from(r.winner.0)),
        joined: seat
            .and_then(|s| room.seats.get(usize::from(s)))
            .is_some_and(|s| s.connected || s.connected_at_ms > 0),
        match_id: room.match_id.clone(),
    }
}

/// A CreateRoom request checked, its players' names still to fill ([`NewRoom::name`]).
pub(super) struct NewRoom {
    room_id: String,
    settings: Settings,
    occupants: Vec<Occupant>,
    origins: Vec<SeatOrigin>,
    ranked: bool,
    allow_spectators: bool,
    visibility: Visibility,
}

impl NewRoom {
    /// Checks `request` as CreateRoom does (INVALID_ARGUMENT naming what is wrong).
    pub(super) fn check(request: &CreateRoomRequest) -> Result<NewRoom, Status> {
        if request.room_id.is_empty() || request.room_id.len() > 128 {
            return Err(invalid("room_id must be 1..128 characters"));
        }
        if request.room_id.contains(['{', '}']) {
            return Err(invalid("room_id must not contain braces"));
        }
        let settings = settings_from_pb(request.settings.as_ref()).map_err(|err| invalid(err.0))?;
        if request.seats.len() != usize::from(settings.seat_count()) {
            return Err(invalid(format!(
                "{} seats given for a {}-seat game",
                request.seats.len(),
                settings.seat_count()
            )));
        }
        let mut occupants = Vec::new();
        let mut origins = Vec::new();
        for (index, seat) in request.seats.iter().enumerate() {
            origins.push(seat_origin(index, seat.fill, seat.queue_wait_ms)?);
            let occupant = match &seat.occupant {
                Some(PbOccupant::UserId(user_id)) if !user_id.is_empty() => {
                    if occupants
                        .iter()
                        .any(|o| matches!(o, Occupant::Player { user_id: id, .. } if id == user_id))
                    {
                        return Err(invalid(format!("user {user_id} is seated twice")));
                    }
                    Occupant::Player {
                        user_id: user_id.clone(),
                        name: String::new(),
                    }
                }
                Some(PbOccupant::Bot(bot)) => Occupant::Bot {
                    level: BotLevel::from_proto(bot.level).ok_or_else(|| {
                        invalid(format!(
                            "seat {index}: bot level {} is not a known BotLevel",
                            bot.level
                        ))
                    })?,
                },
                Some(PbOccupant::Open(_)) => Occupant::Open,
                _ => return Err(invalid(format!("seat {index} has no occupant"))),
            };
            occupants.push(occupant);
        }
        if request.ranked && occupants.iter().any(|o| matches!(o, Occupant::Bot { .. })) {
            return Err(invalid("a room with a bot cannot be ranked"));
        }
        let visibility = Visibility::from_proto(request.visibility).ok_or_else(|| {
            invalid(format!(
                "visibility {} is not a known RoomVisibility",
                request.visibility
            ))
        })?;
        Ok(NewRoom {
            room_id: request.room_id.clone(),
            settings,
            occupants,
            origins,
            ranked: request.ranked,
            allow_spectators: request.allow_spectators,
            visibility,
        })
    }

    /// The room's id.
    pub(super) fn id(&self) -> &str {
        &self.room_id
    }

    /// The players seated (user ids), for accounts' lookup.
    pub(super) fn users(&self) -> Vec<String> {
        self.occupants
            .iter()
            .filter_map(|o| match o {
                Occupant::Player { user_id, .. } => Some(user_id.clone()),
                _ => None,
            })
            .collect()
    }

    /// Gives each seated player the name and guest flag accounts knows (none when it
    /// does not: the seat shows "Player N").
    pub(super) fn name(&mut self, known: &HashMap<String, KnownPlayer>) {
        for (occupant, origin) in self.occupants.iter_mut().zip(&mut self.origins) {
            if let Occupant::Player { user_id, name } = occupant {
                let player = known.get(user_id.as_str()).cloned().unwrap_or_default();
                *name = player.name;
                origin.guest = player.guest;
            }
        }
    }

    /// Makes the room (its match started when no seat is open); an existing room of
    /// that id is left as it is and answered with its settings (`created` false).
    pub(super) async fn make(
        self,
        replica: &Arc<Replica>,
    ) -> Result<CreateRoomResponse, GameError> {
        let now = now_ms();
        let mut room = Room::new(
            self.room_id.clone(),
            self.settings,
            self.occupants,
            self.ranked,
            self.allow_spectators,
            self.visibility,
            replica.config.timing,
            now,
        );
        for (index, origin) in self.origins.into_iter().enumerate() {
            room.set_seat_origin(index, origin);
        }
        room.start_if_full(fresh_seed(), fresh_id(), now);
        let created = replica.create(&mut room).await?;
        let settings = if created {
            room.settings
        } else {
            replica
                .store
                .load(&self.room_id)
                .await?
                .map_or(room.settings, |loaded| loaded.room.settings)
        };
        Ok(CreateRoomResponse {
            room_id: self.room_id,
            settings: Some(settings_to_pb(&settings)),
            created,
        })
    }
}

/// A seat's origin as CreateRoom or SeatPlayer gives it: a known `SeatFill`, the queue
/// wait kept for a queue seat only.
fn seat_origin(index: usize, fill: i32, queue_wait_ms: u32) -> Result<SeatOrigin, Status> {
    let fill = pb::SeatFill::try_from(fill)
        .map_err(|_| invalid(format!("seat {index}: fill {fill} is not a known SeatFill")))?;
    let fill = SeatFill::from_proto(fill);
    Ok(SeatOrigin {
        fill,
        queue_wait_ms: (fill == Some(SeatFill::Queue)).then_some(queue_wait_ms),
        guest: false,
    })
}
