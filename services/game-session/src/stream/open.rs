//! Opening a stream: the room loaded, the viewer's seat found (or the spectator let in),
//! the seat recorded under the presence lease and connected, then the session made and
//! run inside the stream's response.

use std::sync::Arc;

use basra_platform::presence::Doing;
use basra_platform::ratelimit::RateLimiter;
use basra_proto::basra::game::v1::{self as game, PlayRequest};
use tonic::Streaming;
use tracing::Instrument as _;

use crate::error::GameError;
use crate::replica::{ChangeKind, Mutation, Replica, StreamPermit};
use crate::store::LeasedSeat;

use super::response::{SendQueue, SessionStream};
use super::{Session, Start};

impl Session {
    /// Opens a seat's (or a spectator's) event stream on `join`: Play's after its join
    /// message (`inbound` the rest of the client's messages), Watch's with none. The
    /// stream's session runs inside the returned response (see [`super::response`]).
    pub(crate) async fn open(
        replica: &Arc<Replica>,
        chat: &Arc<RateLimiter>,
        user_id: &str,
        join: game::Join,
        inbound: Option<Streaming<PlayRequest>>,
        permit: StreamPermit,
    ) -> Result<SessionStream, GameError> {
        if join.room_id.is_empty() || join.room_id.len() > 128 {
            return Err(GameError::Invalid(
                "join.room_id must be 1..128 characters".into(),
            ));
        }
        tracing::Span::current().record("room_id", join.room_id.as_str());
        // The join's Redis work waits for its turn (a storm of joins queues here) and
        // holds it until the stream's first events are sent.
        let turn = replica.join_turn().await?;
        let loaded = replica
            .store
            .load(&join.room_id)
            .await?
            .ok_or_else(|| GameError::RoomNotFound(join.room_id.clone()))?;
        let viewer = if join.spectate {
            if !loaded.room.allow_spectators {
                return Err(GameError::Denied(
                    "this room does not allow spectators".into(),
                ));
            }
            None
        } else {
            Some(loaded.room.seat_of(user_id).ok_or_else(|| {
                GameError::Denied("you have no seat in this room; ask to spectate".into())
            })?)
        };
        let watch = replica.hub.watch(&join.room_id);
        let lease_lost = replica.lease_lost();
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
            let instance = replica.lease_seat(&lease_seat).await?;
            let name = replica.config.replica.clone();
            // From the state just read: no second load.
            let connected = replica
                .mutate_from(
                    &join.room_id,
                    Some(loaded.clone()),
                    None,
                    ChangeKind::Any,
                    |room, now| {
                        room.connect(seat, &conn_id, &name, now);
                        Ok(())
                    },
                )
                .await;
            match connected {
                Ok(Mutation::Done { committed, .. }) => {
                    connect_seq = committed.room.seq;
                    connected_to = Some(committed);
                }
                other => {
                    let _ = replica.store.lease_remove(&instance, &lease_seat).await;
                    return Err(match other {
                        Err(err) => err,
                        Ok(_) => GameError::Internal("cannot connect".into()),
                    });
                }
            }
            leased = Some((instance, lease_seat));
        }
        // Friends see the player at this table while the stream lasts.
        let presence = viewer.map(|_| {
            replica.presence.start(
                user_id,
                Doing::Match {
                    room_id: join.room_id.clone(),
                    spectatable: loaded.room.allow_spectators,
                },
            )
        });
        let queue = SendQueue::default();
        let session = Session {
            replica: Arc::clone(replica),
            user: uuid::Uuid::parse_str(user_id).ok(),
            chat: Arc::clone(chat),
            room_id: join.room_id,
            viewer,
            conn_id,
            connect_seq,
            delivered: 0,
            epoch: 0,
            signals: 0,
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
}
