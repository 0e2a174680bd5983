//! The `GameService` gRPC service: opening a Play (or Watch) stream, whose session
//! ([`crate::session`]) then runs inside its response, and the internal CreateRoom /
//! SeatPlayer / GetSeat.

use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use basra_platform::auth::{self, Role};
use basra_platform::presence::Doing;
use basra_platform::ratelimit::RateLimiter;
use basra_proto::basra::common::v1 as pb;
use basra_proto::basra::game::v1::{
    self as game, CreateRoomRequest, CreateRoomResponse, GetSeatRequest, GetSeatResponse,
    PlayRequest, PlayResponse, RejectCode, SeatPlayerRequest, SeatPlayerResponse,
    game_service_server::GameService, play_request::Kind, seat_assignment::Occupant as PbOccupant,
};
use basra_proto::convert::{settings_from_pb, settings_to_pb};
use tokio_stream::{Stream, StreamExt as _};
use tonic::{Request, Response, Status, Streaming};
use tracing::Instrument as _;

use crate::convert::status_to_pb;
use crate::core::{Core, Mutation, StreamPermit, fresh_id, fresh_seed, now_ms};
use crate::error::GameError;
use crate::names::display_names;
use crate::response::{SendQueue, SessionStream, message_of};
use crate::room::{Occupant, Reject, Room, SeatOrigin};
use crate::session::{Connected, Session, Start, inbound_status};
use crate::store::LeasedSeat;
use crate::web;

/// The `GameService` service over a [`Core`].
#[derive(Debug, Clone)]
pub struct GameApi {
    core: Arc<Core>,
    chat: Arc<RateLimiter>,
}

impl GameApi {
    /// The service.
    pub fn new(core: Arc<Core>) -> GameApi {
        GameApi {
            core,
            chat: Arc::new(RateLimiter::new(5, Duration::from_secs(10))),
        }
    }
}

type EventStream = Pin<Box<dyn Stream<Item = Result<PlayResponse, Status>> + Send>>;

fn invalid(message: impl Into<String>) -> Status {
    GameError::Invalid(message.into()).into()
}

impl GameApi {
    /// Opens a seat's (or a spectator's) event stream on `join`: Play's after its join
    /// message (`inbound` the rest of the client's messages), Watch's with none. The
    /// stream's session runs inside the returned response (see [`crate::response`]).
    pub(crate) async fn open(
        &self,
        user_id: &str,
        join: game::Join,
        inbound: Option<Streaming<PlayRequest>>,
        permit: StreamPermit,
    ) -> Result<SessionStream, Status> {
        if join.room_id.is_empty() || join.room_id.len() > 128 {
            return Err(invalid("join.room_id must be 1..128 characters"));
        }
        tracing::Span::current().record("room_id", join.room_id.as_str());
        // The join's Redis work waits for its turn (a storm of joins queues here) and
        // holds it until the stream's first events are sent.
        let turn = self.core.join_turn().await?;
        let loaded = self
            .core
            .store
            .load(&join.room_id)
            .await?
            .ok_or_else(|| GameError::RoomNotFound(join.room_id.clone()))?;
        let viewer = if join.spectate {
            if !loaded.room.allow_spectators {
                return Err(GameError::Denied("this room does not allow spectators".into()).into());
            }
            None
        } else {
            Some(loaded.room.seat_of(user_id).ok_or_else(|| {
                GameError::Denied("you have no seat in this room; ask to spectate".into())
            })?)
        };
        let watch = self.core.hub.watch(&join.room_id);
        let lease_lost = self.core.lease_lost();
        let conn_id = uuid::Uuid::now_v7().to_string();
        let mut connect_seq = 0;
        let mut leased = None;
        let mut connected_to = None;
        if let Some(seat) = viewer {
            // Under the presence lease first: should this replica die before the stream
            // ends, another one disconnects the seat.
            let lease_seat = LeasedSeat {
                room_id: join.room_id.clone(),
                seat,
                conn_id: conn_id.clone(),
            };
            let instance = self.core.lease_seat(&lease_seat).await?;
            let replica = self.core.config.replica.clone();
            // From the state just read: no second load.
            let connected = self
                .core
                .mutate_from(&join.room_id, Some(loaded.clone()), None, |room, now| {
                    room.connect(seat, &conn_id, &replica, now);
                    Ok(())
                })
                .await;
            match connected {
                Ok(Mutation::Done {
                    room,
                    events,
                    shared,
                    ..
                }) => {
                    connect_seq = room.seq;
                    connected_to = Some(Connected {
                        room,
                        events,
                        shared,
                    });
                }
                other => {
                    let _ = self.core.store.lease_remove(&instance, &lease_seat).await;
                    return Err(match other {
                        Err(err) => err,
                        Ok(_) => GameError::Internal("cannot connect".into()),
                    }
                    .into());
                }
            }
            leased = Some((instance, lease_seat));
        }
        // Friends see the player at this table while the stream lasts.
        let presence = viewer.map(|_| {
            self.core.presence.start(
                user_id,
                Doing::Match {
                    room_id: join.room_id.clone(),
                    spectatable: loaded.room.allow_spectators,
                },
            )
        });
        let queue = SendQueue::default();
        let session = Session {
            core: Arc::clone(&self.core),
            user: uuid::Uuid::parse_str(user_id).ok(),
            chat: Arc::clone(&self.chat),
            room_id: join.room_id,
            viewer,
            conn_id,
            connect_seq,
            delivered: 0,
            epoch: 0,
            seats: loaded.room.seats.len(),
            settings: loaded.room.settings,
            // A Play stream's messages go out as they are; Watch wraps each one.
            shares: inbound.is_some(),
            queue: queue.clone(),
            leased,
            _presence: presence,
            _permit: permit,
        };
        let run = session
            .run(
                inbound,
                watch,
                lease_lost,
                Start {
                    last_seen: join.last_seen_seq,
                    connected: connected_to,
                    turn,
                },
            )
            .instrument(tracing::Span::current());
        Ok(SessionStream::new(Box::pin(run), queue))
    }

    /// A Play stream: its join first, then its session (see [`crate::play_route`], which
    /// serves it).
    #[tracing::instrument(skip_all, fields(user_id, room_id))]
    pub(crate) async fn play_stream(
        &self,
        request: Request<Streaming<PlayRequest>>,
    ) -> Result<SessionStream, Status> {
        let caller = auth::caller(&request)?;
        let user_id = caller.user_id.to_string();
        tracing::Span::current().record("user_id", user_id.as_str());
        let permit = self.core.admit()?;
        let mut inbound = request.into_inner();
        let first = tokio::time::timeout(self.core.config.join_timeout, inbound.message())
            .await
            .map_err(|_| invalid("no join message within the join timeout"))?
            .map_err(inbound_status)?
            .ok_or_else(|| invalid("the stream ended before its join message"))?;
        let Some(Kind::Join(join)) = first.kind else {
            return Err(invalid("the first message must be join"));
        };
        self.open(&user_id, join, Some(inbound), permit).await
    }

    /// The `GameService` calls' shared handle on the chat limiter (the action calls use it).
    pub(crate) fn chat(&self) -> &RateLimiter {
        &self.chat
    }

    /// The replica's core.
    pub(crate) fn core(&self) -> &Arc<Core> {
        &self.core
    }
}

#[tonic::async_trait]
impl GameService for GameApi {
    type PlayStream = EventStream;

    /// Play as tonic's generated server would serve it, every message a `PlayResponse`.
    /// The replica's routes serve Play through [`crate::play_route`] instead, which sends
    /// shared bytes as they are; this is for a server mounted without it.
    async fn play(
        &self,
        request: Request<Streaming<PlayRequest>>,
    ) -> Result<Response<EventStream>, Status> {
        let events = self.play_stream(request).await?;
        Ok(Response::new(Box::pin(events.map(message_of))))
    }

    type WatchStream = web::WatchStream;

    async fn watch(
        &self,
        request: Request<game::WatchRequest>,
    ) -> Result<Response<web::WatchStream>, Status> {
        web::watch(self, request).await
    }

    async fn play_card(
        &self,
        request: Request<game::PlayCardRequest>,
    ) -> Result<Response<game::PlayCardResponse>, Status> {
        web::play_card(self, request).await
    }

    async fn resign(
        &self,
        request: Request<game::ResignRequest>,
    ) -> Result<Response<game::ResignResponse>, Status> {
        web::resign(self, request).await
    }

    async fn quick_chat(
        &self,
        request: Request<game::QuickChatRequest>,
    ) -> Result<Response<game::QuickChatResponse>, Status> {
        web::quick_chat(self, request).await
    }

    async fn ask_rematch(
        &self,
        request: Request<game::AskRematchRequest>,
    ) -> Result<Response<game::AskRematchResponse>, Status> {
        web::ask_rematch(self, request).await
    }

    #[tracing::instrument(skip_all, fields(room_id = %request.get_ref().room_id))]
    async fn create_room(
        &self,
        request: Request<CreateRoomRequest>,
    ) -> Result<Response<CreateRoomResponse>, Status> {
        auth::require_role(&auth::caller(&request)?, Role::Service)?;
        let request = request.into_inner();
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
                Some(PbOccupant::Bot(bot)) => Occupant::Bot { level: bot.level },
                Some(PbOccupant::Open(_)) => Occupant::Open,
                _ => return Err(invalid(format!("seat {index} has no occupant"))),
            };
            occupants.push(occupant);
        }
        if request.ranked && occupants.iter().any(|o| matches!(o, Occupant::Bot { .. })) {
            return Err(invalid("a room with a bot cannot be ranked"));
        }
        let users: Vec<String> = occupants
            .iter()
            .filter_map(|o| match o {
                Occupant::Player { user_id, .. } => Some(user_id.clone()),
                _ => None,
            })
            .collect();
        let mut names = display_names(self.core.accounts.as_ref(), &users).await;
        for occupant in &mut occupants {
            if let Occupant::Player { user_id, name } = occupant {
                *name = names.remove(user_id.as_str()).unwrap_or_default();
            }
        }
        let now = now_ms();
        let mut room = Room::new(
            request.room_id.clone(),
            settings,
            occupants,
            request.ranked,
            request.allow_spectators,
            request.visibility,
            self.core.config.timing,
            now,
        );
        for (index, origin) in origins.into_iter().enumerate() {
            room.set_seat_origin(index, origin);
        }
        room.start_if_full(fresh_seed(), fresh_id(), now);
        let created = self.core.create(&mut room).await?;
        let settings = if created {
            room.settings
        } else {
            self.core
                .store
                .load(&request.room_id)
                .await?
                .map_or(room.settings, |loaded| loaded.room.settings)
        };
        tracing::info!(created, "room created");
        Ok(Response::new(CreateRoomResponse {
            room_id: request.room_id,
            settings: Some(settings_to_pb(&settings)),
            created,
        }))
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
        let origin = seat_origin(0, request.fill, 0)?;
        let name = display_names(
            self.core.accounts.as_ref(),
            std::slice::from_ref(&request.user_id),
        )
        .await
        .remove(&request.user_id)
        .unwrap_or_default();
        let outcome = self
            .core
            .mutate(&request.room_id, None, |room, now| {
                let fresh = room.seat_of(&request.user_id).is_none();
                // The origin goes in before the seat is taken: a full room starts its
                // match at once, and the match's record reads it from there.
                let open = match request.preferred_seat {
                    Some(seat) => usize::try_from(seat).ok(),
                    None => room.seats.iter().position(|s| s.occupant == Occupant::Open),
                };
                let before = open.map(|seat| (seat, room.seat_origin(seat)));
                if let (true, Some((seat, _))) = (fresh, before) {
                    room.set_seat_origin(seat, origin);
                }
                room.seat_player(
                    &request.user_id,
                    &name,
                    request.preferred_seat,
                    fresh_seed(),
                    fresh_id(),
                    now,
                )
                .map_err(|message| {
                    if let (true, Some((seat, previous))) = (fresh, before) {
                        room.set_seat_origin(seat, previous);
                    }
                    Reject::new(RejectCode::NotInProgress, message)
                })
            })
            .await?;
        match outcome {
            Mutation::Done { value, room, .. } => Ok(Response::new(SeatPlayerResponse {
                seat: u32::from(value),
                settings: Some(settings_to_pb(&room.settings)),
                ranked: room.ranked,
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
            .core
            .store
            .load(&request.room_id)
            .await?
            .ok_or_else(|| GameError::RoomNotFound(request.room_id.clone()))?;
        let room = &loaded.room;
        Ok(Response::new(GetSeatResponse {
            status: status_to_pb(room.status) as i32,
            seat: room.seat_of(&request.user_id).map(u32::from),
        }))
    }
}

/// A seat's origin as CreateRoom or SeatPlayer gives it: a known `SeatFill`, the queue
/// wait kept for a queue seat only.
fn seat_origin(index: usize, fill: i32, queue_wait_ms: u32) -> Result<SeatOrigin, Status> {
    let fill = pb::SeatFill::try_from(fill)
        .map_err(|_| invalid(format!("seat {index}: fill {fill} is not a known SeatFill")))?;
    Ok(SeatOrigin {
        fill: fill as i32,
        queue_wait_ms: (fill == pb::SeatFill::Queue).then_some(queue_wait_ms),
    })
}

/// The API's bot level for a stored occupant (used by admin views).
pub fn occupant_bot_level(occupant: &Occupant) -> i32 {
    match occupant {
        Occupant::Bot { level } => *level,
        _ => pb::BotLevel::Unspecified as i32,
    }
}
