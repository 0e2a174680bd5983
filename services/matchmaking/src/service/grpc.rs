//! The gRPC glue: each `MatchmakingService` method takes the caller the auth layer put
//! into the request, records it on the span, and calls its concern's `…_inner` method.
//! No rule lives here.

use basra_platform::auth;
use basra_proto::basra::matchmaking::v1::{
    CancelFindRequest, CancelFindResponse, CreateRoomRequest, CreateRoomResponse, FindMatchRequest,
    GetCurrentSeatRequest, GetCurrentSeatResponse, InviteFriendRequest, InviteFriendResponse,
    JoinRoomRequest, JoinRoomResponse, ListPublicRoomsRequest, ListPublicRoomsResponse,
    matchmaking_service_server::MatchmakingService,
};
use tonic::{Request, Response, Status};

use super::{FindMatchStream, MatchmakingApi};
use crate::error::MatchmakingError;

#[tonic::async_trait]
impl MatchmakingService for MatchmakingApi {
    type FindMatchStream = FindMatchStream;

    #[tracing::instrument(skip_all, fields(user))]
    async fn find_match(
        &self,
        request: Request<FindMatchRequest>,
    ) -> Result<Response<Self::FindMatchStream>, Status> {
        let caller = auth::player(&request)?;
        let caller = Self::player(caller)?;
        tracing::Span::current().record("user", tracing::field::display(caller.user_id));
        let stream = self.find_match_inner(caller, request.into_inner()).await?;
        Ok(Response::new(stream))
    }

    #[tracing::instrument(skip_all, fields(user))]
    async fn cancel_find(
        &self,
        request: Request<CancelFindRequest>,
    ) -> Result<Response<CancelFindResponse>, Status> {
        let caller = auth::player(&request)?;
        tracing::Span::current().record("user", tracing::field::display(caller.user_id));
        Ok(Response::new(
            self.cancel_find_inner(caller, request.into_inner()).await?,
        ))
    }

    #[tracing::instrument(skip_all, fields(user))]
    async fn create_room(
        &self,
        request: Request<CreateRoomRequest>,
    ) -> Result<Response<CreateRoomResponse>, Status> {
        let caller = auth::player(&request)?;
        let caller = Self::player(caller)?;
        tracing::Span::current().record("user", tracing::field::display(caller.user_id));
        Ok(Response::new(
            self.create_room_inner(caller, request.into_inner()).await?,
        ))
    }

    #[tracing::instrument(skip_all)]
    async fn list_public_rooms(
        &self,
        request: Request<ListPublicRoomsRequest>,
    ) -> Result<Response<ListPublicRoomsResponse>, Status> {
        auth::player(&request)?;
        Ok(Response::new(self.list_inner(request.into_inner()).await?))
    }

    #[tracing::instrument(skip_all, fields(user))]
    async fn join_room(
        &self,
        request: Request<JoinRoomRequest>,
    ) -> Result<Response<JoinRoomResponse>, Status> {
        let caller = auth::player(&request)?;
        let caller = Self::player(caller)?;
        tracing::Span::current().record("user", tracing::field::display(caller.user_id));
        Ok(Response::new(
            self.join_room_inner(caller, request.into_inner()).await?,
        ))
    }

    #[tracing::instrument(skip_all, fields(user))]
    async fn invite_friend(
        &self,
        request: Request<InviteFriendRequest>,
    ) -> Result<Response<InviteFriendResponse>, Status> {
        let caller = auth::player(&request)?;
        let caller = Self::player(caller)?;
        tracing::Span::current().record("user", tracing::field::display(caller.user_id));
        Ok(Response::new(
            self.invite_friend_inner(caller, request.into_inner())
                .await?,
        ))
    }

    #[tracing::instrument(skip_all, fields(user))]
    async fn get_current_seat(
        &self,
        request: Request<GetCurrentSeatRequest>,
    ) -> Result<Response<GetCurrentSeatResponse>, Status> {
        let caller = auth::caller(&request)?;
        let caller = Self::player(caller)?;
        tracing::Span::current().record("user", tracing::field::display(caller.user_id));
        match self.current_seat(&caller.user_id.to_string()).await? {
            Some(seat) => Ok(Response::new(seat)),
            None => Err(MatchmakingError::NotFound(
                "you hold no seat in an unfinished match".into(),
            )
            .into()),
        }
    }
}
