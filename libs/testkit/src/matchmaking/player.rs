//! A signed-in player of a test ([`Player`]: an account, its token and a client) with
//! one method per call it makes, the requests those calls take most often ([`find`],
//! [`join_code`], [`join_id`]), and two players searching at once ([`QueuedPair`]).

use basra_proto::basra::matchmaking::v1::{
    CancelFindRequest, CancelFindResponse, CreateRoomRequest, CreateRoomResponse, FindMatchRequest,
    FindMatchResponse, GetCurrentSeatRequest, GetCurrentSeatResponse, InviteFriendRequest,
    InviteFriendResponse, JoinRoomRequest, JoinRoomResponse, ListPublicRoomsRequest,
    ListPublicRoomsResponse, join_room_request::Target,
    matchmaking_service_client::MatchmakingServiceClient,
};
use tonic::{Code, Response, Status, Streaming, transport::Channel};
use uuid::Uuid;

use super::updates::{ended, queued};
use crate::authed;

/// A search of `ticket` in the default preset, without bots.
pub fn find(ticket: &str, ranked: bool) -> FindMatchRequest {
    FindMatchRequest {
        ticket_id: ticket.into(),
        ranked,
        preset: None,
        allow_bots: Some(false),
    }
}

/// JoinRoom by join code.
pub fn join_code(code: &str) -> JoinRoomRequest {
    JoinRoomRequest {
        target: Some(Target::JoinCode(code.into())),
        preferred_seat: None,
    }
}

/// JoinRoom by room id.
pub fn join_id(id: &str) -> JoinRoomRequest {
    JoinRoomRequest {
        target: Some(Target::RoomId(id.into())),
        preferred_seat: None,
    }
}

/// An account with a token for it and a client of the app: each call is one method,
/// answering the response's message (or the status).
#[derive(Debug, Clone)]
pub struct Player {
    /// The account.
    pub id: Uuid,
    /// Its access token (an hour long).
    pub token: String,
    client: MatchmakingServiceClient<Channel>,
}

impl Player {
    pub(super) fn new(
        id: Uuid,
        token: String,
        client: MatchmakingServiceClient<Channel>,
    ) -> Player {
        Player { id, token, client }
    }

    /// The account id as the API writes it.
    pub fn user_id(&self) -> String {
        self.id.to_string()
    }

    /// `message` with this player's token.
    pub fn request<T>(&self, message: T) -> tonic::Request<T> {
        authed(message, &self.token)
    }

    /// The client this player calls with (shares its connection).
    pub fn client(&self) -> MatchmakingServiceClient<Channel> {
        self.client.clone()
    }

    /// FindMatch of `ticket` ([`find`]); panics if the call is refused.
    pub async fn find(&self, ticket: &str, ranked: bool) -> Streaming<FindMatchResponse> {
        self.search(find(ticket, ranked))
            .await
            .unwrap_or_else(|status| panic!("FindMatch {ticket}: {status:?}"))
    }

    /// FindMatch of `ticket` ([`find`]) and its first update, which must be a position
    /// in the queue; panics otherwise.
    pub async fn find_queued(&self, ticket: &str, ranked: bool) -> Streaming<FindMatchResponse> {
        let mut stream = self.find(ticket, ranked).await;
        queued(&mut stream).await;
        stream
    }

    /// FindMatch.
    pub async fn search(
        &self,
        request: FindMatchRequest,
    ) -> Result<Streaming<FindMatchResponse>, Status> {
        self.client()
            .find_match(self.request(request))
            .await
            .map(Response::into_inner)
    }

    /// CancelFind of `ticket`.
    pub async fn cancel(&self, ticket: &str) -> Result<CancelFindResponse, Status> {
        let request = CancelFindRequest {
            ticket_id: ticket.into(),
        };
        self.client()
            .cancel_find(self.request(request))
            .await
            .map(Response::into_inner)
    }

    /// CreateRoom.
    pub async fn create_room(
        &self,
        request: CreateRoomRequest,
    ) -> Result<CreateRoomResponse, Status> {
        self.client()
            .create_room(self.request(request))
            .await
            .map(Response::into_inner)
    }

    /// CreateRoom with the defaults (a private room of two seats, seat 0 this player's);
    /// panics if refused.
    pub async fn make_room(&self) -> CreateRoomResponse {
        self.create_room(CreateRoomRequest::default())
            .await
            .unwrap_or_else(|status| panic!("CreateRoom: {status:?}"))
    }

    /// JoinRoom.
    pub async fn join(&self, request: JoinRoomRequest) -> Result<JoinRoomResponse, Status> {
        self.client()
            .join_room(self.request(request))
            .await
            .map(Response::into_inner)
    }

    /// ListPublicRooms.
    pub async fn list(
        &self,
        request: ListPublicRoomsRequest,
    ) -> Result<ListPublicRoomsResponse, Status> {
        self.client()
            .list_public_rooms(self.request(request))
            .await
            .map(Response::into_inner)
    }

    /// InviteFriend: `friend` to `room_id`.
    pub async fn invite(
        &self,
        room_id: &str,
        friend: &str,
    ) -> Result<InviteFriendResponse, Status> {
        let request = InviteFriendRequest {
            room_id: room_id.into(),
            user_id: friend.into(),
        };
        self.client()
            .invite_friend(self.request(request))
            .await
            .map(Response::into_inner)
    }

    /// GetCurrentSeat.
    pub async fn current_seat(&self) -> Result<GetCurrentSeatResponse, Status> {
        self.client()
            .get_current_seat(self.request(GetCurrentSeatRequest::default()))
            .await
            .map(Response::into_inner)
    }
}

/// Two members searching the unranked default queue, `a` first: their FindMatch streams
/// are open (nothing read yet), so a test reads their updates itself.
#[derive(Debug)]
pub struct QueuedPair {
    /// The first to search.
    pub a: Player,
    /// The second.
    pub b: Player,
    /// `a`'s stream.
    pub sa: Streaming<FindMatchResponse>,
    /// `b`'s stream.
    pub sb: Streaming<FindMatchResponse>,
}

impl QueuedPair {
    /// Both streams end UNAVAILABLE at their next change: the pair's room could not be
    /// confirmed (game-session down, or its answer lost), and the two wait for it.
    pub async fn end_unavailable(&mut self) {
        for stream in [&mut self.sa, &mut self.sb] {
            let status = ended(stream).await;
            assert_eq!(status.code(), Code::Unavailable, "{status:?}");
        }
    }
}
