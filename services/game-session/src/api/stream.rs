//! Opening a stream: Play's (after its join message) and Watch's (no client messages).
//! The stream's session ([`crate::stream`]) then runs inside the response.

use std::sync::Arc;

use basra_platform::auth;
use basra_platform::presence::Doing;
use basra_proto::basra::game::v1::{self as game, PlayRequest, play_request::Kind};
use tonic::{Request, Status, Streaming};
use tracing::Instrument as _;

use super::{GameApi, invalid};
use crate::error::GameError;
use crate::replica::{Mutation, StreamKind, StreamPermit};
use crate::store::LeasedSeat;
use crate::stream::response::{SendQueue, SessionStream};
use crate::stream::{Connected, Session, Start, inbound_status};

impl GameApi {
    /// Opens a seat's (or a spectator's) event stream on `join`: Play's after its join
    /// message (`inbound` the rest of the client's messages), Watch's with none. The
    /// stream's session runs inside the returned response (see [`crate::stream::response`]).
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
        let turn = self.replica.join_turn().await?;
        let loaded = self
            .replica
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
        let watch = self.replica.hub.watch(&join.room_id);
        let lease_lost = self.replica.lease_lost();
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
            let instance = self.replica.lease_seat(&lease_seat).await?;
            let replica = self.replica.config.replica.clone();
            // From the state just read: no second load.
            let connected = self
                .replica
                .mutate_from(
                    &join.room_id,
                    Some(loaded.clone()),
                    None,
                    false,
                    |room, now| {
                        room.connect(seat, &conn_id, &replica, now);
                        Ok(())
                    },
                )
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
                    let _ = self
                        .replica
                        .store
                        .lease_remove(&instance, &lease_seat)
                        .await;
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
            self.replica.presence.start(
                user_id,
                Doing::Match {
                    room_id: join.room_id.clone(),
                    spectatable: loaded.room.allow_spectators,
                },
            )
        });
        let queue = SendQueue::default();
        let session = Session {
            replica: Arc::clone(&self.replica),
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

    /// A Play stream: its join first, then its session (see [`crate::api::play_route`], which
    /// serves it).
    #[tracing::instrument(skip_all, fields(user_id, room_id))]
    pub(crate) async fn play_stream(
        &self,
        request: Request<Streaming<PlayRequest>>,
    ) -> Result<SessionStream, Status> {
        let caller = auth::player(&request)?;
        let user_id = caller.user_id.to_string();
        tracing::Span::current().record("user_id", user_id.as_str());
        let permit = self.replica.admit(caller.user_id, StreamKind::Play)?;
        let mut inbound = request.into_inner();
        let first = tokio::time::timeout(self.replica.config.join_timeout, inbound.message())
            .await
            .map_err(|_| invalid("no join message within the join timeout"))?
            .map_err(inbound_status)?
            .ok_or_else(|| invalid("the stream ended before its join message"))?;
        let Some(Kind::Join(join)) = first.kind else {
            return Err(invalid("the first message must be join"));
        };
        self.open(&user_id, join, Some(inbound), permit).await
    }
}
