//! The transport floor (`--replica relay`): a `GameService` that keeps no rules and no
//! store, only relays. Each play comes back to both seats as `card_played` and the next
//! `turn_started`, every four plays a seat gets four more cards (`hand_dealt`), and a
//! seat that goes away is announced (`connection_changed`), so
//! the load generator's players play against it exactly as against the real replica, on
//! the same server stack (`basra_platform::serve`: HTTP/2, auth, limits). What a play
//! costs it is what delivering a play costs before any game or Redis work: the floor
//! under the replica's CPU per play on this machine.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use basra_engine::{Card, CardSet};
use basra_platform::auth;
use basra_proto::basra::game::v1::{
    self as game, CreateRoomRequest, CreateRoomResponse, PlayRequest, PlayResponse,
    game_internal_service_server::{GameInternalService, GameInternalServiceServer},
    game_service_server::{GameService, GameServiceServer},
    play_request::Kind,
    play_response::Event as E,
    seat_assignment::Occupant,
};
use basra_proto::convert::{card_from_pb, card_to_pb};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Request, Response, Status, Streaming};

/// Cards a seat gets in a deal.
const HAND: u8 = 4;

/// One relayed room.
#[derive(Default)]
struct Room {
    users: Vec<String>,
    streams: Vec<Option<mpsc::Sender<Result<PlayResponse, Status>>>>,
    hands: Vec<CardSet>,
    turn: usize,
    seq: u64,
    deals: u8,
}

impl Room {
    fn event(&mut self, event: E) -> PlayResponse {
        self.seq += 1;
        PlayResponse {
            seq: self.seq,
            server_time: Some(basra_proto::convert::timestamp(now_ms())),
            event: Some(event),
        }
    }

    /// Deals every seat four cards: the events for each seat.
    fn deal(&mut self) -> Vec<(usize, PlayResponse)> {
        let mut out = Vec::new();
        for seat in 0..self.users.len() {
            let first = self
                .deals
                .wrapping_mul(HAND * 2)
                .wrapping_add(seat as u8 * HAND);
            let cards: CardSet = (0..HAND)
                .filter_map(|i| Card::from_index(first.wrapping_add(i) % 52))
                .collect();
            self.hands[seat] = cards;
            let event = self.event(E::HandDealt(game::HandDealt {
                cards: cards.iter().map(card_to_pb).collect(),
                hand_counts: vec![u32::from(HAND); self.users.len()],
                deck_remaining: 0,
            }));
            out.push((seat, event));
        }
        self.deals = self.deals.wrapping_add(1);
        out
    }

    fn turn(&mut self) -> PlayResponse {
        let seat = self.turn as u32;
        self.event(E::TurnStarted(game::TurnStarted {
            seat,
            deadline: None,
        }))
    }

    /// The events of `seat` playing `card` (nothing if it may not).
    fn play(&mut self, seat: usize, card: Card) -> Vec<(Option<usize>, PlayResponse)> {
        if seat != self.turn || !self.hands[seat].contains(card) {
            return Vec::new();
        }
        self.hands[seat].remove(card);
        let played = self.event(E::CardPlayed(game::CardPlayed {
            seat: seat as u32,
            card: Some(card_to_pb(card)),
            ..Default::default()
        }));
        let mut out = vec![(None, played)];
        if self.hands.iter().all(|hand| hand.is_empty()) {
            out.extend(self.deal().into_iter().map(|(s, e)| (Some(s), e)));
        }
        self.turn = (self.turn + 1) % self.users.len();
        out.push((None, self.turn()));
        out
    }
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// The comparison server: it forwards each play to the other seat with no rules and no store.
#[derive(Default, Clone)]
pub(crate) struct Relay {
    rooms: Arc<Mutex<HashMap<String, Room>>>,
}

impl Relay {
    /// The relay as a route, with the real replica's message size limit.
    pub(crate) fn routes() -> tonic::service::Routes {
        let relay = Relay::default();
        tonic::service::Routes::default()
            .add_service(
                GameServiceServer::new(relay.clone())
                    .max_decoding_message_size(game_session::MAX_MESSAGE_BYTES),
            )
            .add_service(GameInternalServiceServer::new(relay))
    }

    /// Sends `events` (each to one seat, or to all) outside the rooms' lock.
    async fn send(
        &self,
        room_id: &str,
        events: Vec<(Option<usize>, PlayResponse)>,
    ) -> Result<(), Status> {
        let streams = {
            let rooms = self.rooms.lock().expect("not poisoned");
            let room = rooms
                .get(room_id)
                .ok_or_else(|| Status::not_found("no room"))?;
            room.streams.clone()
        };
        for (to, event) in events {
            for (seat, stream) in streams.iter().enumerate() {
                if let Some(stream) = stream
                    && to.is_none_or(|to| to == seat)
                {
                    let _ = stream.send(Ok(event.clone())).await;
                }
            }
        }
        Ok(())
    }
}

type Events = ReceiverStream<Result<PlayResponse, Status>>;
type WatchEvents = ReceiverStream<Result<game::WatchResponse, Status>>;

fn unimplemented<T>() -> Result<Response<T>, Status> {
    Err(Status::unimplemented(
        "the relay serves Play and CreateRoom only",
    ))
}

#[tonic::async_trait]
impl GameService for Relay {
    type PlayStream = Events;
    type WatchStream = WatchEvents;

    async fn play(
        &self,
        request: Request<Streaming<PlayRequest>>,
    ) -> Result<Response<Events>, Status> {
        let user = auth::caller(&request)?.user_id.to_string();
        let mut inbound = request.into_inner();
        let Some(Kind::Join(join)) = inbound.message().await?.and_then(|m| m.kind) else {
            return Err(Status::invalid_argument("the first message must be join"));
        };
        let (tx, rx) = mpsc::channel(64);
        let (seat, start) = {
            let mut rooms = self.rooms.lock().expect("not poisoned");
            let room = rooms
                .get_mut(&join.room_id)
                .ok_or_else(|| Status::not_found("no room"))?;
            let seat = room
                .users
                .iter()
                .position(|u| *u == user)
                .ok_or_else(|| Status::permission_denied("no seat"))?;
            room.streams[seat] = Some(tx);
            let start = if room.streams.iter().all(Option::is_some) {
                let mut events: Vec<_> =
                    room.deal().into_iter().map(|(s, e)| (Some(s), e)).collect();
                events.push((None, room.turn()));
                events
            } else {
                Vec::new()
            };
            (seat, start)
        };
        self.send(&join.room_id, start).await?;
        let relay = self.clone();
        tokio::spawn(async move {
            while let Ok(Some(message)) = inbound.message().await {
                let Some(Kind::PlayCard(play)) = message.kind else {
                    continue;
                };
                let Some(card) = play.card.as_ref().and_then(|c| card_from_pb(c).ok()) else {
                    continue;
                };
                let events = relay
                    .rooms
                    .lock()
                    .expect("not poisoned")
                    .get_mut(&join.room_id)
                    .map(|room| room.play(seat, card))
                    .unwrap_or_default();
                if relay.send(&join.room_id, events).await.is_err() {
                    break;
                }
            }
            // The client went away: the other seat hears of it (as from the replica).
            let gone = relay
                .rooms
                .lock()
                .expect("not poisoned")
                .get_mut(&join.room_id)
                .map(|room| {
                    room.streams[seat] = None;
                    room.event(E::ConnectionChanged(game::ConnectionChanged {
                        seat: seat as u32,
                        state: game::ConnectionState::Disconnected as i32,
                        grace_deadline: None,
                    }))
                });
            if let Some(gone) = gone {
                let _ = relay.send(&join.room_id, vec![(None, gone)]).await;
            }
        });
        Ok(Response::new(ReceiverStream::new(rx)))
    }

    async fn watch(
        &self,
        _request: Request<game::WatchRequest>,
    ) -> Result<Response<WatchEvents>, Status> {
        unimplemented()
    }

    async fn play_card(
        &self,
        _request: Request<game::PlayCardRequest>,
    ) -> Result<Response<game::PlayCardResponse>, Status> {
        unimplemented()
    }

    async fn resign(
        &self,
        _request: Request<game::ResignRequest>,
    ) -> Result<Response<game::ResignResponse>, Status> {
        unimplemented()
    }

    async fn quick_chat(
        &self,
        _request: Request<game::QuickChatRequest>,
    ) -> Result<Response<game::QuickChatResponse>, Status> {
        unimplemented()
    }

    async fn ask_rematch(
        &self,
        _request: Request<game::AskRematchRequest>,
    ) -> Result<Response<game::AskRematchResponse>, Status> {
        unimplemented()
    }
}

#[tonic::async_trait]
impl GameInternalService for Relay {
    async fn create_room(
        &self,
        request: Request<CreateRoomRequest>,
    ) -> Result<Response<CreateRoomResponse>, Status> {
        let request = request.into_inner();
        let users: Vec<String> = request
            .seats
            .iter()
            .filter_map(|seat| match &seat.occupant {
                Some(Occupant::UserId(user)) => Some(user.clone()),
                _ => None,
            })
            .collect();
        let seats = users.len();
        self.rooms.lock().expect("not poisoned").insert(
            request.room_id.clone(),
            Room {
                users,
                streams: vec![None; seats],
                hands: vec![CardSet::EMPTY; seats],
                ..Room::default()
            },
        );
        Ok(Response::new(CreateRoomResponse {
            room_id: request.room_id,
            ..Default::default()
        }))
    }

    async fn seat_player(
        &self,
        _request: Request<game::SeatPlayerRequest>,
    ) -> Result<Response<game::SeatPlayerResponse>, Status> {
        unimplemented()
    }

    async fn get_seat(
        &self,
        _request: Request<game::GetSeatRequest>,
    ) -> Result<Response<game::GetSeatResponse>, Status> {
        unimplemented()
    }

    async fn create_rooms(
        &self,
        _request: Request<game::CreateRoomsRequest>,
    ) -> Result<Response<game::CreateRoomsResponse>, Status> {
        unimplemented()
    }

    async fn get_seats(
        &self,
        _request: Request<game::GetSeatsRequest>,
    ) -> Result<Response<game::GetSeatsResponse>, Status> {
        unimplemented()
    }
}
