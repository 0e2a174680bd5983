//! Stand-ins for what matchmaking talks to, as a test wants them: game-session over real
//! gRPC ([`FakeGame`]: records CreateRoom (and CreateRooms' rooms) and SeatPlayer, answers like the real one, or
//! UNAVAILABLE, or makes the room and loses the reply), and accounts' names, ratings,
//! blocks and invites in memory.

use std::{
    collections::{HashMap, HashSet},
    net::SocketAddr,
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
};

use basra_platform::{AuthLayer, Role, TokenIssuer, auth};
use basra_proto::basra::{
    accounts::v1::{SendInviteRequest, SendInviteResponse},
    common::v1::RoomStatus,
    game::v1::{
        CreateRoomRequest, CreateRoomResponse, CreateRoomsRequest, CreateRoomsResponse,
        GetSeatRequest, GetSeatResponse, GetSeatsItem, GetSeatsRequest, GetSeatsResponse,
        SeatPlayerRequest, SeatPlayerResponse,
        game_internal_service_server::{GameInternalService, GameInternalServiceServer},
        seat_assignment::Occupant as SeatOccupant,
    },
};
use matchmaking::{
    MatchmakingError,
    upstream::{Invites, NameSource, RatingSource, Searcher},
};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tonic::{Request, Response, Status};
use uuid::Uuid;

/// A game-session stand-in: records CreateRoom/SeatPlayer, answers like the
/// real one (idempotent), or UNAVAILABLE when told to, or makes the room and
/// loses the reply (what a caller whose deadline passed sees).
#[derive(Debug, Default)]
pub struct FakeGame {
    /// Every call answers UNAVAILABLE.
    pub unavailable: AtomicBool,
    /// CreateRoom makes the room and answers as if the deadline had passed.
    pub lose_replies: AtomicBool,
    /// CreateRooms and GetSeats answer UNIMPLEMENTED (a release before them).
    pub no_bulk: AtomicBool,
    /// CreateRooms and GetSeats calls served.
    pub bulk_served: AtomicU64,
    /// Every CreateRoom that got past the checks, in order.
    pub created: Mutex<Vec<CreateRoomRequest>>,
    /// Every SeatPlayer that got past the checks, in order.
    pub seated: Mutex<Vec<SeatPlayerRequest>>,
    rooms: Mutex<HashMap<String, CreateRoomRequest>>,
    finished: Mutex<HashSet<String>>,
    /// Rooms whose match ended with a winner: the winning seat.
    winners: Mutex<HashMap<String, u32>>,
    /// (room, user) of the players who opened a stream in a room.
    joined: Mutex<HashSet<(String, String)>>,
    /// Calls of any method that passed authorisation (UNAVAILABLE ones too).
    pub calls: AtomicU64,
}

impl FakeGame {
    /// Serves `game` (behind the auth layer of `issuer`'s tokens) on 127.0.0.1:0 until
    /// `shutdown`; its address.
    pub async fn serve(
        game: Arc<FakeGame>,
        issuer: &TokenIssuer,
        shutdown: CancellationToken,
    ) -> SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a loopback port");
        let address = listener.local_addr().expect("a bound address");
        let incoming = tokio_stream::wrappers::TcpListenerStream::new(listener);
        let auth = AuthLayer::new(issuer.verifier(), &[]);
        tokio::spawn(async move {
            tonic::transport::Server::builder()
                .layer(auth)
                .add_service(GameInternalServiceServer::new(FakeGameService(game)))
                .serve_with_incoming_shutdown(incoming, shutdown.cancelled_owned())
                .await
                .expect("the fake game-session serves");
        });
        address
    }

    /// Every call answers UNAVAILABLE (`true`) or is served again (`false`).
    pub fn set_unavailable(&self, down: bool) {
        self.unavailable.store(down, Ordering::SeqCst);
    }

    /// CreateRoom makes the room, then answers as if the caller's deadline
    /// had passed.
    pub fn set_lose_replies(&self, lose: bool) {
        self.lose_replies.store(lose, Ordering::SeqCst);
    }

    /// CreateRooms and GetSeats answer UNIMPLEMENTED (`true`), as a game-session of a
    /// release before them, or are served again (`false`).
    pub fn set_no_bulk(&self, none: bool) {
        self.no_bulk.store(none, Ordering::SeqCst);
    }

    /// Every CreateRoom so far.
    pub fn created(&self) -> Vec<CreateRoomRequest> {
        self.created.lock().unwrap().clone()
    }

    /// game-session forgets the room (as after it closed and expired).
    pub fn forget(&self, room_id: &str) {
        self.rooms.lock().unwrap().remove(room_id);
    }

    /// The room's match ended (GetSeat then answers FINISHED).
    pub fn finish(&self, room_id: &str) {
        self.finished.lock().unwrap().insert(room_id.to_owned());
    }

    /// The room's match ended with `seat` the winner (GetSeat then answers FINISHED and
    /// the winning seat).
    pub fn finish_won(&self, room_id: &str, seat: u32) {
        self.winners
            .lock()
            .unwrap()
            .insert(room_id.to_owned(), seat);
        self.finish(room_id);
    }

    /// The player opened a stream in the room (GetSeat then answers `joined`).
    pub fn join(&self, room_id: &str, user_id: &str) {
        self.joined
            .lock()
            .unwrap()
            .insert((room_id.to_owned(), user_id.to_owned()));
    }

    /// The room's seats as game-session would hold them: the seats it was
    /// made with, then each SeatPlayer.
    fn seats(&self, room_id: &str) -> Option<Vec<Option<String>>> {
        let room = self.rooms.lock().unwrap().get(room_id).cloned()?;
        let mut seats: Vec<Option<String>> = room
            .seats
            .iter()
            .map(|s| match &s.occupant {
                Some(SeatOccupant::UserId(user)) => Some(user.clone()),
                Some(SeatOccupant::Bot(_)) => Some(String::new()),
                _ => None,
            })
            .collect();
        for seated in self.seated.lock().unwrap().iter() {
            if seated.room_id == room_id {
                let seat = seated.preferred_seat.unwrap_or(0) as usize;
                if let Some(slot) = seats.get_mut(seat) {
                    *slot = Some(seated.user_id.clone());
                }
            }
        }
        Some(seats)
    }
}

#[derive(Clone)]
struct FakeGameService(Arc<FakeGame>);

#[tonic::async_trait]
impl GameInternalService for FakeGameService {
    async fn create_room(
        &self,
        request: Request<CreateRoomRequest>,
    ) -> Result<Response<CreateRoomResponse>, Status> {
        self.admit(&request, false)?;
        let answer = self.make(request.into_inner());
        if self.0.lose_replies.load(Ordering::SeqCst) {
            // tonic's answer when the client's timeout fires first.
            return Err(Status::cancelled("Timeout expired"));
        }
        Ok(Response::new(answer))
    }

    async fn seat_player(
        &self,
        request: Request<SeatPlayerRequest>,
    ) -> Result<Response<SeatPlayerResponse>, Status> {
        self.admit(&request, false)?;
        let request = request.into_inner();
        self.0.seated.lock().unwrap().push(request.clone());
        let rooms = self.0.rooms.lock().unwrap();
        let room = rooms
            .get(&request.room_id)
            .ok_or_else(|| Status::not_found("no such room"))?;
        Ok(Response::new(SeatPlayerResponse {
            seat: request.preferred_seat.unwrap_or(0),
            settings: room.settings,
            ranked: room.ranked,
        }))
    }

    async fn get_seat(
        &self,
        request: Request<GetSeatRequest>,
    ) -> Result<Response<GetSeatResponse>, Status> {
        self.admit(&request, false)?;
        self.get_seat_answer(request.get_ref()).map(Response::new)
    }

    async fn create_rooms(
        &self,
        request: Request<CreateRoomsRequest>,
    ) -> Result<Response<CreateRoomsResponse>, Status> {
        self.admit(&request, true)?;
        let rooms = request
            .into_inner()
            .rooms
            .into_iter()
            .map(|room| self.make(room))
            .collect();
        if self.0.lose_replies.load(Ordering::SeqCst) {
            return Err(Status::cancelled("Timeout expired"));
        }
        Ok(Response::new(CreateRoomsResponse { rooms }))
    }

    async fn get_seats(
        &self,
        request: Request<GetSeatsRequest>,
    ) -> Result<Response<GetSeatsResponse>, Status> {
        self.admit(&request, true)?;
        let seats = request
            .get_ref()
            .seats
            .iter()
            .map(|seat| match self.get_seat_answer(seat) {
                Ok(answer) => GetSeatsItem {
                    code: tonic::Code::Ok as i32,
                    message: String::new(),
                    seat: Some(answer),
                },
                Err(status) => GetSeatsItem {
                    code: status.code() as i32,
                    message: status.message().to_owned(),
                    seat: None,
                },
            })
            .collect();
        Ok(Response::new(GetSeatsResponse { seats }))
    }
}

impl FakeGameService {
    /// Records a room CreateRoom (or an item of CreateRooms) got past the checks with.
    fn make(&self, request: CreateRoomRequest) -> CreateRoomResponse {
        self.0.created.lock().unwrap().push(request.clone());
        let created = self
            .0
            .rooms
            .lock()
            .unwrap()
            .insert(request.room_id.clone(), request.clone())
            .is_none();
        CreateRoomResponse {
            room_id: request.room_id,
            settings: request.settings,
            created,
        }
    }

    /// What every call of the fake checks first: a service token, counted, refused while
    /// "down", and (`bulk`) refused as UNIMPLEMENTED while acting as a game-session
    /// before the bulk calls (counted as served otherwise).
    fn admit<T>(&self, request: &Request<T>, bulk: bool) -> Result<(), Status> {
        auth::require_role(&auth::caller(request)?, Role::Service)?;
        self.0.calls.fetch_add(1, Ordering::SeqCst);
        if self.0.unavailable.load(Ordering::SeqCst) {
            return Err(Status::unavailable("fake game-session is down"));
        }
        if bulk {
            if self.0.no_bulk.load(Ordering::SeqCst) {
                return Err(Status::unimplemented(
                    "a game-session before the bulk calls",
                ));
            }
            self.0.bulk_served.fetch_add(1, Ordering::SeqCst);
        }
        Ok(())
    }

    fn get_seat_answer(&self, request: &GetSeatRequest) -> Result<GetSeatResponse, Status> {
        let seats = self
            .0
            .seats(&request.room_id)
            .ok_or_else(|| Status::not_found("no such room"))?;
        let status = if self.0.finished.lock().unwrap().contains(&request.room_id) {
            RoomStatus::Finished
        } else if seats.iter().all(Option::is_some) {
            RoomStatus::InProgress
        } else {
            RoomStatus::Waiting
        };
        Ok(GetSeatResponse {
            status: status as i32,
            seat: seats
                .iter()
                .position(|s| s.as_deref() == Some(request.user_id.as_str()))
                .map(|seat| seat as u32),
            winner_seat: self
                .0
                .winners
                .lock()
                .unwrap()
                .get(&request.room_id)
                .copied(),
            joined: self
                .0
                .joined
                .lock()
                .unwrap()
                .contains(&(request.room_id.clone(), request.user_id.clone())),
            // A room's match is named after it (a finished event match's replay).
            match_id: format!("match-{}", request.room_id),
        })
    }
}

/// Names made from user ids, as [`name_of`] says.
#[derive(Debug)]
pub struct NamesFromIds;

/// The display name [`NamesFromIds`] gives a user.
pub fn name_of(user_id: &str) -> String {
    format!("name-{}", &user_id[user_id.len().saturating_sub(6)..])
}

#[tonic::async_trait]
impl NameSource for NamesFromIds {
    async fn names(
        &self,
        user_ids: &[String],
    ) -> Result<HashMap<String, String>, MatchmakingError> {
        Ok(user_ids
            .iter()
            .map(|id| (id.clone(), name_of(id)))
            .collect())
    }
}

/// Ratings by user id (1500 when unknown), and who blocks whom (as accounts'
/// GetPlayers tells matchmaking).
#[derive(Debug, Default)]
pub struct MapRatings {
    ratings: Mutex<HashMap<Uuid, f64>>,
    blocks: Mutex<HashMap<Uuid, Vec<String>>>,
}

impl MapRatings {
    /// `user`'s rating from now on.
    pub fn set(&self, user: Uuid, rating: f64) {
        self.ratings.lock().unwrap().insert(user, rating);
    }

    /// `blocker` blocks `blocked`.
    pub fn block(&self, blocker: Uuid, blocked: Uuid) {
        self.blocks
            .lock()
            .unwrap()
            .entry(blocker)
            .or_default()
            .push(blocked.to_string());
    }
}

#[tonic::async_trait]
impl RatingSource for MapRatings {
    async fn rating(&self, user_id: &str) -> Result<f64, MatchmakingError> {
        let user: Uuid = user_id.parse().expect("a user id");
        Ok(*self.ratings.lock().unwrap().get(&user).unwrap_or(&1500.0))
    }

    async fn searcher(&self, user_id: &str, ranked: bool) -> Result<Searcher, MatchmakingError> {
        let user: Uuid = user_id.parse().expect("a user id");
        Ok(Searcher {
            rating: if ranked {
                self.rating(user_id).await?
            } else {
                0.0
            },
            blocks: self
                .blocks
                .lock()
                .unwrap()
                .get(&user)
                .cloned()
                .unwrap_or_default(),
        })
    }
}

/// Invites as accounts would take them: recorded, or refused with the status set.
#[derive(Debug, Default)]
pub struct FakeInvites {
    /// The invites taken, in order.
    pub sent: Mutex<Vec<SendInviteRequest>>,
    /// While set, every invite is refused with this status.
    pub refuse_with: Mutex<Option<Status>>,
}

#[tonic::async_trait]
impl Invites for FakeInvites {
    async fn send_invite(&self, request: SendInviteRequest) -> Result<SendInviteResponse, Status> {
        if let Some(status) = self.refuse_with.lock().unwrap().clone() {
            return Err(status);
        }
        let mut sent = self.sent.lock().unwrap();
        sent.push(request);
        Ok(SendInviteResponse {
            seq: sent.len() as u64,
        })
    }
}
