//! The `GameService` gRPC service: the Play stream, and the internal CreateRoom / SeatPlayer.

use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use basra_platform::auth::{self, Role};
use basra_platform::presence::{Doing, PresenceGuard};
use basra_platform::ratelimit::RateLimiter;
use basra_proto::basra::common::v1 as pb;
use basra_proto::basra::game::v1::{
    self as game, CreateRoomRequest, CreateRoomResponse, GetSeatRequest, GetSeatResponse,
    PlayRequest, PlayResponse, RejectCode, SeatPlayerRequest, SeatPlayerResponse,
    game_service_server::GameService, play_request::Kind, play_response::Event as E,
    seat_assignment::Occupant as PbOccupant,
};
use basra_proto::convert::{settings_from_pb, settings_to_pb};
use rand::Rng as _;
use tokio::sync::watch;
use tokio_stream::{Stream, StreamExt as _};
use tonic::{Request, Response, Status, Streaming};
use tracing::Instrument as _;

use crate::actions::{self, Acted};
use crate::convert::{project, seen_in_common, server_event, snapshot, status_to_pb};
use crate::core::{Core, Mutation, StreamPermit, fresh_id, fresh_seed, now_ms};
use crate::error::GameError;
use crate::events::{LogEvent, StoredEvent};
use crate::hub::Wake;
use crate::names::display_names;
use crate::response::{SendQueue, SessionStream, message_of};
use crate::room::{Occupant, Reject, Room, Status as RoomStatus};
use crate::shared_bytes::{Shared, SharedBytes};
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

/// The status answering a failed read of the client's stream. tonic's decoder refuses a
/// message above [`MAX_MESSAGE_BYTES`](crate::MAX_MESSAGE_BYTES) with RESOURCE_EXHAUSTED; the
/// API answers capacity limits with RESOURCE_EXHAUSTED (as other gRPC stacks do for an
/// oversized message).
fn inbound_status(status: Status) -> Status {
    if status.code() == tonic::Code::OutOfRange {
        return GameError::Exhausted(format!(
            "a client message is larger than {} bytes",
            crate::MAX_MESSAGE_BYTES
        ))
        .into();
    }
    status
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
        for (index, seat) in request.seats.iter().enumerate() {
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
                room.seat_player(
                    &request.user_id,
                    &name,
                    request.preferred_seat,
                    fresh_seed(),
                    fresh_id(),
                    now,
                )
                .map_err(|message| Reject::new(RejectCode::NotInProgress, message))
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

/// The room as this stream's own connect commit left it, and the events it stored (the
/// last with seq `room.seq`): the stream's first events are sent from them, without
/// reading the room again.
struct Connected {
    room: Arc<Room>,
    events: Arc<[StoredEvent]>,
    shared: Arc<SharedBytes>,
}

/// How a stream starts: after `last_seen` (a resume) or with a snapshot, from its connect
/// commit when it made one, holding its join's turn until the first events are sent.
struct Start {
    last_seen: Option<u64>,
    connected: Option<Connected>,
    turn: tokio::sync::OwnedSemaphorePermit,
}

/// Why a stream ends.
enum End {
    /// The client went away (or left).
    Gone,
    /// End with this status (already decided: replaced, draining, closed room).
    Status(Status),
    /// The room closed: end OK.
    Closed,
}

/// One Play stream.
struct Session {
    core: Arc<Core>,
    chat: Arc<RateLimiter>,
    room_id: String,
    viewer: Option<u8>,
    conn_id: String,
    /// The seq of this stream's own connect event.
    connect_seq: u64,
    /// The last seq sent on this stream.
    delivered: u64,
    /// The room watch's epoch when this stream last looked (see [`Wake`]).
    epoch: u64,
    seats: usize,
    settings: basra_engine::Settings,
    /// Whether the stream sends the shared bytes of this replica's commits' events it sees
    /// in common with the room's other viewers (see [`crate::shared_bytes`]).
    shares: bool,
    /// Where the stream's messages go (its response hands them out).
    queue: SendQueue,
    /// The seat as recorded under the presence lease, and the instance holding it.
    leased: Option<(Arc<str>, LeasedSeat)>,
    /// The seat's "in a match" report to accounts, ended with the stream.
    _presence: Option<PresenceGuard>,
    _permit: StreamPermit,
}

/// A stream's departure, recorded when its session is dropped (at its end, or with its
/// response when the client went away): the seat disconnected, its presence lease
/// entry removed, the room's watch released.
impl Drop for Session {
    fn drop(&mut self) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let core = Arc::clone(&self.core);
        let room_id = std::mem::take(&mut self.room_id);
        let viewer = self.viewer;
        let conn_id = std::mem::take(&mut self.conn_id);
        let leased = self.leased.take();
        let delivered = self.delivered;
        let departure = async move {
            if let Some(seat) = viewer {
                let result = core
                    .mutate(&room_id, None, |room, now| {
                        if room.disconnect(seat, &conn_id, now) {
                            Ok(())
                        } else {
                            Err(Reject::new(RejectCode::Unspecified, "not connected"))
                        }
                    })
                    .await;
                if let Err(err) = result {
                    tracing::warn!(error = %err, "cannot record the disconnect");
                }
            }
            if let Some((instance, seat)) = &leased
                && let Err(err) = core.store.lease_remove(instance, seat).await
            {
                tracing::warn!(error = %err, "cannot forget the leased seat");
            }
            // The stream's watch is gone by now: a session is dropped after the other
            // arguments of `run`, its watch among them.
            core.hub.release(&room_id);
            tracing::debug!(delivered, "stream ended");
        };
        runtime.spawn(departure.instrument(tracing::Span::current()));
    }
}

impl Session {
    async fn run(
        mut self,
        mut inbound: Option<Streaming<PlayRequest>>,
        mut watch: watch::Receiver<Wake>,
        mut lease_lost: watch::Receiver<u64>,
        start: Start,
    ) {
        let started = self.start(start.last_seen, start.connected).await;
        drop(start.turn);
        let end = match started {
            Ok(None) => self.serve(&mut inbound, &mut watch, &mut lease_lost).await,
            Ok(Some(end)) => end,
            Err(err) => End::Status(err.into()),
        };
        match end {
            End::Gone => tracing::debug!("client went away"),
            End::Status(status) => {
                tracing::debug!(code = ?status.code(), message = status.message(), "ending the stream");
                self.queue.send(Err(status)).await;
            }
            End::Closed => {}
        }
        // Dropping the session (here, or with its response) records its departure.
    }

    /// The first events: the missed ones after `last_seen`, or a snapshot. A seat's
    /// stream starts from the room as its connect commit left it (`connected`: the
    /// stream's watch was taken before that commit, so anything later wakes it), and
    /// reads the log only for events older than that commit's; a spectator's reads the
    /// room now.
    async fn start(
        &mut self,
        last_seen: Option<u64>,
        connected: Option<Connected>,
    ) -> Result<Option<End>, GameError> {
        let room = match connected {
            Some(Connected {
                room,
                events,
                shared,
            }) => {
                let first = room.seq + 1 - events.len() as u64;
                match last_seen {
                    // Everything after `seen` is in the connect commit's events.
                    Some(seen) if seen + 1 >= first && seen <= room.seq => {
                        self.delivered = seen;
                        let skip = (seen + 1 - first) as usize;
                        let closed = room.status == RoomStatus::Closed;
                        return self
                            .deliver(&events[skip..], Some((&shared, skip)), closed)
                            .await;
                    }
                    _ => room,
                }
            }
            None => self
                .core
                .store
                .load(&self.room_id)
                .await?
                .ok_or_else(|| GameError::RoomNotFound(self.room_id.clone()))?
                .room
                .into(),
        };
        match last_seen {
            Some(seen) if seen <= room.seq => self.delivered = seen,
            _ => {
                let event = snapshot(&room, self.viewer, room.seq, now_ms());
                self.delivered = room.seq;
                self.queue.send(Ok(event)).await;
                if room.status == RoomStatus::Closed {
                    return Ok(Some(End::Closed));
                }
                return Ok(None);
            }
        }
        self.catch_up().await
    }

    /// Sends every event after `delivered`. `Some` when the stream must end.
    async fn catch_up(&mut self) -> Result<Option<End>, GameError> {
        let after = self
            .core
            .store
            .events_after(&self.room_id, self.delivered)
            .await?;
        if !after.exists {
            return Ok(Some(End::Status(
                GameError::RoomNotFound(self.room_id.clone()).into(),
            )));
        }
        self.deliver(&after.events, None, after.closed).await
    }

    /// Sends `events`, the first with seq `delivered + 1`. `Some` when the stream must
    /// end (`closed`: the room is closed after them). Events of a commit made here come
    /// with its shared encodings and the index of the first of them in the commit.
    async fn deliver(
        &mut self,
        events: &[StoredEvent],
        shared: Option<(&SharedBytes, usize)>,
        closed: bool,
    ) -> Result<Option<End>, GameError> {
        let now = now_ms();
        for (i, stored) in events.iter().enumerate() {
            let seq = self.delivered + 1;
            if let (
                Some(me),
                LogEvent::ConnectionChanged {
                    seat,
                    connected: true,
                    conn_id,
                    ..
                },
            ) = (self.viewer, &stored.event)
                && *seat == me
                && *conn_id != self.conn_id
                && seq > self.connect_seq
            {
                // Another stream took this seat after ours: it gets the seat.
                return Ok(Some(End::Status(Status::failed_precondition(
                    "a newer stream for this seat replaced this one",
                ))));
            }
            let event = || project(stored, seq, self.viewer, self.seats, &self.settings, now);
            match shared {
                Some((shared, first))
                    if self.shares && seen_in_common(&stored.event, self.viewer) =>
                {
                    let bytes = match shared.get_or_encode(first + i, now, || {
                        prost::Message::encode_to_vec(&event()).into()
                    }) {
                        Shared::Reused(bytes) => {
                            self.core.metrics.events_shared.inc();
                            bytes
                        }
                        Shared::Made(bytes) => bytes,
                    };
                    self.queue.send_shared(bytes).await;
                }
                _ => self.queue.send(Ok(event())).await,
            }
            self.delivered = seq;
        }
        if closed {
            return Ok(Some(End::Closed));
        }
        Ok(None)
    }

    async fn serve(
        &mut self,
        inbound: &mut Option<Streaming<PlayRequest>>,
        watch: &mut watch::Receiver<Wake>,
        lease_lost: &mut watch::Receiver<u64>,
    ) -> End {
        // Made once, not on every turn of the loop: a fresh `cancelled()` registers with
        // the token and unregisters when dropped, twice per event otherwise. One token:
        // stopping cancels the drain too, and each poll of a token takes its lock.
        let leave = self.core.drain.clone().cancelled_owned();
        tokio::pin!(leave);
        loop {
            let step = tokio::select! {
                biased;
                () = &mut leave => {
                    if self.core.shutdown.is_cancelled() {
                        return End::Status(Status::unavailable("the replica is stopping; resume elsewhere with last_seen_seq"));
                    }
                    self.drain_delay().await;
                    return End::Status(Status::unavailable("the replica is draining; resume elsewhere with last_seen_seq"));
                }
                _ = lease_lost.changed(), if self.leased.is_some() => {
                    return End::Status(Status::unavailable("this replica lost its presence lease; resume with last_seen_seq"));
                }
                message = next_message(inbound) => match message {
                    // A commit of ours moved the room's watch: look at it now rather
                    // than on another turn of the loop (usually nothing is new).
                    Ok(Some(message)) => match self.handle(message).await {
                        Ok(None) => self.on_wake(watch).await,
                        other => other,
                    },
                    Ok(None) => return End::Gone,
                    Err(status) => {
                        tracing::debug!(code = ?status.code(), message = status.message(), "inbound stream failed");
                        if status.code() == tonic::Code::OutOfRange {
                            return End::Status(inbound_status(status));
                        }
                        return End::Gone;
                    }
                },
                changed = watch.changed() => {
                    if changed.is_err() {
                        return End::Status(Status::unavailable("the replica is stopping"));
                    }
                    self.on_wake(watch).await
                }
            };
            match step {
                Ok(None) => {}
                Ok(Some(end)) => return end,
                Err(err) => return End::Status(err.into()),
            }
        }
    }

    /// The room's watch changed: delivers what this replica committed from the watch,
    /// and reads the stored log for the rest (other replicas' commits, gaps, an epoch
    /// bump). `Some` when the stream must end.
    async fn on_wake(
        &mut self,
        watch: &mut watch::Receiver<Wake>,
    ) -> Result<Option<End>, GameError> {
        let (announced, local) = {
            let wake = watch.borrow_and_update();
            if !wake.news_for(self.delivered, self.epoch) {
                return Ok(None);
            }
            if wake.epoch == self.epoch {
                (wake.seq, Some(wake.local_after(self.delivered)))
            } else {
                // Something changed without new events, or notices were lost: look.
                self.epoch = wake.epoch;
                (wake.seq, None)
            }
        };
        let Some(local) = local else {
            return self.catch_up().await;
        };
        for (batch, skip) in local {
            // `deliver` numbers from `delivered + 1`: the batch from there on.
            debug_assert_eq!(batch.first_seq + skip as u64, self.delivered + 1);
            let events = &batch.events[skip..];
            if let Some(end) = self
                .deliver(events, Some((&batch.shared, skip)), batch.closed)
                .await?
            {
                return Ok(Some(end));
            }
        }
        if self.delivered < announced {
            return self.catch_up().await;
        }
        Ok(None)
    }

    /// A random share of the drain deadline, so streams leave spread out.
    async fn drain_delay(&self) {
        let deadline = self
            .core
            .drain_deadline_ms
            .load(std::sync::atomic::Ordering::SeqCst);
        let left = (deadline - now_ms()).max(0) as u64;
        if left > 0 {
            let wait = rand::rng().random_range(0..=left);
            tokio::time::sleep(Duration::from_millis(wait)).await;
        }
    }

    async fn send_local(&self, event: E) -> Result<Option<End>, GameError> {
        let event = server_event(self.delivered, now_ms(), event);
        self.queue.send(Ok(event)).await;
        Ok(None)
    }

    async fn reject(
        &self,
        code: RejectCode,
        message: impl Into<String>,
        client_move_id: &str,
        applied_seq: Option<u64>,
    ) -> Result<Option<End>, GameError> {
        self.send_local(E::Rejected(game::Rejected {
            code: code as i32,
            message: message.into(),
            client_move_id: client_move_id.to_owned(),
            applied_seq,
        }))
        .await
    }

    async fn handle(&mut self, message: PlayRequest) -> Result<Option<End>, GameError> {
        let Some(kind) = message.kind else {
            return self
                .reject(RejectCode::Malformed, "empty message", "", None)
                .await;
        };
        if let Kind::Ping(ping) = kind {
            return self
                .send_local(E::Pong(game::Pong { nonce: ping.nonce }))
                .await;
        }
        if let Kind::Join(_) = kind {
            return self
                .reject(RejectCode::Malformed, "join is sent once, first", "", None)
                .await;
        }
        let Some(seat) = self.viewer else {
            return self
                .reject(RejectCode::NotSeated, "spectators cannot act", "", None)
                .await;
        };
        let leaving = matches!(kind, Kind::Leave(_));
        match actions::act(&self.core, &self.chat, &self.room_id, seat, kind).await? {
            Acted::Done {
                room,
                events,
                shared,
            } => {
                // Our own change reaches us at once, without waiting for the notice, and
                // without reading it back when nothing came before it unseen.
                let before = room.seq - events.len() as u64;
                let end = if before == self.delivered {
                    let closed = room.status == RoomStatus::Closed;
                    self.deliver(&events, Some((&shared, 0)), closed).await?
                } else {
                    self.catch_up().await?
                };
                if let Some(end) = end {
                    return Ok(Some(end));
                }
                if leaving {
                    if room.status == RoomStatus::Waiting {
                        // The seat is free now: this stream has nothing more to watch.
                        self.viewer = None;
                    }
                    return Ok(Some(End::Closed));
                }
                Ok(None)
            }
            Acted::Refused(refusal) => self.send_local(E::Rejected(refusal.to_pb())).await,
        }
    }
}

/// The client's next message on a Play stream. A Watch stream has no client messages: it
/// ends when the client drops the response, which drops its session (so a vanished
/// browser is disconnected at once rather than at the next event).
async fn next_message(
    inbound: &mut Option<Streaming<PlayRequest>>,
) -> Result<Option<PlayRequest>, Status> {
    match inbound {
        Some(inbound) => inbound.message().await,
        None => std::future::pending().await,
    }
}

/// The API's bot level for a stored occupant (used by admin views).
pub fn occupant_bot_level(occupant: &Occupant) -> i32 {
    match occupant {
        Occupant::Bot { level } => *level,
        _ => pb::BotLevel::Unspecified as i32,
    }
}
