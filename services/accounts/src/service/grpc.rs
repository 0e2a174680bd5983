//! The gRPC glue: each `AccountsService` method takes the caller from the request (the
//! auth layer put it there), records the span fields and metrics, and calls the concern's
//! `do_…` method in its own module. No rule lives here.

use basra_platform::client_info::ClientInfo;
use basra_proto::basra::accounts::v1 as pb;
use basra_proto::basra::accounts::v1::accounts_service_server::AccountsService;
use tonic::{Request, Response, Status};

use super::export::ExportStream;
use super::feed::FeedStream;
use super::{AccountsApi, required_caller};
use crate::friends::Action;
use crate::store::Store;

#[tonic::async_trait]
impl<S: Store> AccountsService for AccountsApi<S> {
    #[tracing::instrument(skip_all)]
    async fn guest_login(
        &self,
        request: Request<pb::GuestLoginRequest>,
    ) -> Result<Response<pb::GuestLoginResponse>, Status> {
        let client = self.client_key(&request);
        let app = ClientInfo::from_metadata(request.metadata());
        let outcome = match self.check_signup_rate(&client) {
            Ok(()) => self.do_guest_login(request.into_inner()).await,
            Err(limited) => Err(limited),
        }
        .map_err(Status::from);
        if let Ok(response) = &outcome {
            self.note_client(app, response.tokens.as_ref()).await;
        }
        self.inner.metrics.sign_in("guest", &outcome);
        Ok(Response::new(outcome?))
    }

    #[tracing::instrument(skip_all)]
    async fn register(
        &self,
        request: Request<pb::RegisterRequest>,
    ) -> Result<Response<pb::RegisterResponse>, Status> {
        let caller = self.optional_caller(&request)?;
        let client = self.client_key(&request);
        let app = ClientInfo::from_metadata(request.metadata());
        let outcome = match self.check_signup_rate(&client) {
            Ok(()) => self.do_register(caller, request.into_inner()).await,
            Err(limited) => Err(limited),
        }
        .map_err(Status::from);
        if let Ok(response) = &outcome {
            self.note_client(app, response.tokens.as_ref()).await;
        }
        self.inner.metrics.sign_in("register", &outcome);
        Ok(Response::new(outcome?))
    }

    #[tracing::instrument(skip_all)]
    async fn login(
        &self,
        request: Request<pb::LoginRequest>,
    ) -> Result<Response<pb::LoginResponse>, Status> {
        let client = self.client_key(&request);
        let app = ClientInfo::from_metadata(request.metadata());
        let outcome = self
            .do_login(&client, request.into_inner())
            .await
            .map_err(Status::from);
        if let Ok(response) = &outcome {
            self.note_client(app, response.tokens.as_ref()).await;
        }
        self.inner.metrics.sign_in("login", &outcome);
        Ok(Response::new(outcome?))
    }

    #[tracing::instrument(skip_all)]
    async fn refresh(
        &self,
        request: Request<pb::RefreshRequest>,
    ) -> Result<Response<pb::RefreshResponse>, Status> {
        let outcome = self
            .do_refresh(request.into_inner())
            .await
            .map_err(Status::from);
        self.inner.metrics.sign_in("refresh", &outcome);
        Ok(Response::new(outcome?))
    }

    #[tracing::instrument(skip_all)]
    async fn logout(
        &self,
        request: Request<pb::LogoutRequest>,
    ) -> Result<Response<pb::LogoutResponse>, Status> {
        let caller = self.optional_caller(&request);
        Ok(Response::new(
            self.do_logout(caller, request.into_inner()).await?,
        ))
    }

    #[tracing::instrument(skip_all, fields(user_id))]
    async fn get_profile(
        &self,
        request: Request<pb::GetProfileRequest>,
    ) -> Result<Response<pb::GetProfileResponse>, Status> {
        let caller = required_caller(&request)?;
        tracing::Span::current().record("user_id", tracing::field::display(caller.user_id));
        let viewer = Some(caller.user_id);
        let answer = self.do_get_profile(caller, request.into_inner()).await?;
        Ok(Response::new(self.shown(viewer, answer).await?))
    }

    #[tracing::instrument(skip_all, fields(user_id))]
    async fn set_display_name(
        &self,
        request: Request<pb::SetDisplayNameRequest>,
    ) -> Result<Response<pb::SetDisplayNameResponse>, Status> {
        let caller = required_caller(&request)?;
        tracing::Span::current().record("user_id", tracing::field::display(caller.user_id));
        Ok(Response::new(
            self.do_set_display_name(caller, request.into_inner())
                .await?,
        ))
    }

    #[tracing::instrument(skip_all, fields(user_id))]
    async fn leaderboard(
        &self,
        request: Request<pb::LeaderboardRequest>,
    ) -> Result<Response<pb::LeaderboardResponse>, Status> {
        let caller = required_caller(&request)?;
        tracing::Span::current().record("user_id", tracing::field::display(caller.user_id));
        let viewer = Some(caller.user_id);
        let answer = self.do_leaderboard(caller, request.into_inner()).await?;
        Ok(Response::new(self.shown(viewer, answer).await?))
    }

    #[tracing::instrument(skip_all, fields(user_id))]
    async fn match_history(
        &self,
        request: Request<pb::MatchHistoryRequest>,
    ) -> Result<Response<pb::MatchHistoryResponse>, Status> {
        let caller = required_caller(&request)?;
        tracing::Span::current().record("user_id", tracing::field::display(caller.user_id));
        let viewer = Some(caller.user_id);
        let answer = self.do_match_history(caller, request.into_inner()).await?;
        Ok(Response::new(self.shown(viewer, answer).await?))
    }

    #[tracing::instrument(skip_all, fields(user_id))]
    async fn add_friend(
        &self,
        request: Request<pb::AddFriendRequest>,
    ) -> Result<Response<pb::AddFriendResponse>, Status> {
        let caller = self.friend_caller(&request)?;
        let viewer = Some(caller.user_id);
        let answer = self.do_add_friend(caller, request.into_inner()).await?;
        Ok(Response::new(self.shown(viewer, answer).await?))
    }

    #[tracing::instrument(skip_all, fields(user_id))]
    async fn accept_friend(
        &self,
        request: Request<pb::AcceptFriendRequest>,
    ) -> Result<Response<pb::AcceptFriendResponse>, Status> {
        let caller = self.friend_caller(&request)?;
        self.do_friend_action(&caller, &request.get_ref().user_id, Action::Accept)
            .await?;
        Ok(Response::new(pb::AcceptFriendResponse {}))
    }

    #[tracing::instrument(skip_all, fields(user_id))]
    async fn decline_friend(
        &self,
        request: Request<pb::DeclineFriendRequest>,
    ) -> Result<Response<pb::DeclineFriendResponse>, Status> {
        let caller = self.friend_caller(&request)?;
        self.do_friend_action(&caller, &request.get_ref().user_id, Action::Decline)
            .await?;
        Ok(Response::new(pb::DeclineFriendResponse {}))
    }

    #[tracing::instrument(skip_all, fields(user_id))]
    async fn cancel_friend(
        &self,
        request: Request<pb::CancelFriendRequest>,
    ) -> Result<Response<pb::CancelFriendResponse>, Status> {
        let caller = self.friend_caller(&request)?;
        self.do_friend_action(&caller, &request.get_ref().user_id, Action::Cancel)
            .await?;
        Ok(Response::new(pb::CancelFriendResponse {}))
    }

    #[tracing::instrument(skip_all, fields(user_id))]
    async fn remove_friend(
        &self,
        request: Request<pb::RemoveFriendRequest>,
    ) -> Result<Response<pb::RemoveFriendResponse>, Status> {
        let caller = self.friend_caller(&request)?;
        self.do_friend_action(&caller, &request.get_ref().user_id, Action::Remove)
            .await?;
        Ok(Response::new(pb::RemoveFriendResponse {}))
    }

    #[tracing::instrument(skip_all, fields(user_id))]
    async fn block_player(
        &self,
        request: Request<pb::BlockPlayerRequest>,
    ) -> Result<Response<pb::BlockPlayerResponse>, Status> {
        let caller = self.friend_caller(&request)?;
        self.do_friend_action(&caller, &request.get_ref().user_id, Action::Block)
            .await?;
        Ok(Response::new(pb::BlockPlayerResponse {}))
    }

    #[tracing::instrument(skip_all, fields(user_id))]
    async fn unblock_player(
        &self,
        request: Request<pb::UnblockPlayerRequest>,
    ) -> Result<Response<pb::UnblockPlayerResponse>, Status> {
        let caller = self.friend_caller(&request)?;
        self.do_friend_action(&caller, &request.get_ref().user_id, Action::Unblock)
            .await?;
        Ok(Response::new(pb::UnblockPlayerResponse {}))
    }

    #[tracing::instrument(skip_all, fields(user_id))]
    async fn list_friends(
        &self,
        request: Request<pb::ListFriendsRequest>,
    ) -> Result<Response<pb::ListFriendsResponse>, Status> {
        let caller = self.friend_caller(&request)?;
        let viewer = Some(caller.user_id);
        let answer = self.do_list_friends(caller).await?;
        Ok(Response::new(self.shown(viewer, answer).await?))
    }

    type WatchFriendsStream = FeedStream;

    #[tracing::instrument(skip_all, fields(user_id))]
    async fn watch_friends(
        &self,
        request: Request<pb::WatchFriendsRequest>,
    ) -> Result<Response<Self::WatchFriendsStream>, Status> {
        let caller = self.friend_caller(&request)?;
        Ok(Response::new(
            self.do_watch_friends(caller, request.into_inner()).await?,
        ))
    }

    #[tracing::instrument(skip_all, fields(user_id))]
    async fn change_password(
        &self,
        request: Request<pb::ChangePasswordRequest>,
    ) -> Result<Response<pb::ChangePasswordResponse>, Status> {
        let caller = required_caller(&request)?;
        tracing::Span::current().record("user_id", tracing::field::display(caller.user_id));
        let client = self.client_key(&request);
        Ok(Response::new(
            self.do_change_password(caller, &client, request.into_inner())
                .await?,
        ))
    }

    #[tracing::instrument(skip_all, fields(user_id))]
    async fn delete_account(
        &self,
        request: Request<pb::DeleteAccountRequest>,
    ) -> Result<Response<pb::DeleteAccountResponse>, Status> {
        let caller = required_caller(&request)?;
        tracing::Span::current().record("user_id", tracing::field::display(caller.user_id));
        let client = self.client_key(&request);
        Ok(Response::new(
            self.do_delete_account(caller, &client, request.into_inner())
                .await?,
        ))
    }

    type ExportMyDataStream = ExportStream;

    #[tracing::instrument(skip_all, fields(user_id))]
    async fn export_my_data(
        &self,
        request: Request<pb::ExportMyDataRequest>,
    ) -> Result<Response<Self::ExportMyDataStream>, Status> {
        let caller = required_caller(&request)?;
        tracing::Span::current().record("user_id", tracing::field::display(caller.user_id));
        Ok(Response::new(
            self.do_export_my_data(caller, request.into_inner()).await?,
        ))
    }

    #[tracing::instrument(skip_all)]
    async fn sign_in_with_provider(
        &self,
        request: Request<pb::SignInWithProviderRequest>,
    ) -> Result<Response<pb::SignInWithProviderResponse>, Status> {
        let client = self.client_key(&request);
        let app = ClientInfo::from_metadata(request.metadata());
        let outcome = match self.check_signup_rate(&client) {
            Ok(()) => self.do_sign_in_with_provider(request.into_inner()).await,
            Err(limited) => Err(limited),
        }
        .map_err(Status::from);
        if let Ok(response) = &outcome {
            self.note_client(app, response.tokens.as_ref()).await;
        }
        self.inner.metrics.sign_in("provider", &outcome);
        Ok(Response::new(outcome?))
    }

    #[tracing::instrument(skip_all, fields(user_id))]
    async fn link_password(
        &self,
        request: Request<pb::LinkPasswordRequest>,
    ) -> Result<Response<pb::LinkPasswordResponse>, Status> {
        let caller = required_caller(&request)?;
        tracing::Span::current().record("user_id", tracing::field::display(caller.user_id));
        Ok(Response::new(
            self.do_link_password(caller, request.into_inner()).await?,
        ))
    }

    #[tracing::instrument(skip_all, fields(user_id))]
    async fn link_provider(
        &self,
        request: Request<pb::LinkProviderRequest>,
    ) -> Result<Response<pb::LinkProviderResponse>, Status> {
        let caller = required_caller(&request)?;
        tracing::Span::current().record("user_id", tracing::field::display(caller.user_id));
        Ok(Response::new(
            self.do_link_provider(caller, request.into_inner()).await?,
        ))
    }

    #[tracing::instrument(skip_all, fields(user_id))]
    async fn register_push_token(
        &self,
        request: Request<pb::RegisterPushTokenRequest>,
    ) -> Result<Response<pb::RegisterPushTokenResponse>, Status> {
        let caller = required_caller(&request)?;
        tracing::Span::current().record("user_id", tracing::field::display(caller.user_id));
        Ok(Response::new(
            self.do_register_push_token(caller, request.into_inner())
                .await?,
        ))
    }

    #[tracing::instrument(skip_all, fields(user_id))]
    async fn remove_push_token(
        &self,
        request: Request<pb::RemovePushTokenRequest>,
    ) -> Result<Response<pb::RemovePushTokenResponse>, Status> {
        let caller = required_caller(&request)?;
        tracing::Span::current().record("user_id", tracing::field::display(caller.user_id));
        Ok(Response::new(
            self.do_remove_push_token(caller, request.into_inner())
                .await?,
        ))
    }

    #[tracing::instrument(skip_all, fields(user_id))]
    async fn report_player(
        &self,
        request: Request<pb::ReportPlayerRequest>,
    ) -> Result<Response<pb::ReportPlayerResponse>, Status> {
        let caller = required_caller(&request)?;
        tracing::Span::current().record("user_id", tracing::field::display(caller.user_id));
        Ok(Response::new(
            self.do_report_player(caller, request.into_inner()).await?,
        ))
    }

    #[tracing::instrument(skip_all, fields(user_id))]
    async fn list_notices(
        &self,
        request: Request<pb::ListNoticesRequest>,
    ) -> Result<Response<pb::ListNoticesResponse>, Status> {
        let caller = required_caller(&request)?;
        tracing::Span::current().record("user_id", tracing::field::display(caller.user_id));
        let viewer = Some(caller.user_id);
        let answer = self.do_list_notices(caller, request.into_inner()).await?;
        Ok(Response::new(self.shown(viewer, answer).await?))
    }

    #[tracing::instrument(skip_all, fields(user_id))]
    async fn mark_notices_read(
        &self,
        request: Request<pb::MarkNoticesReadRequest>,
    ) -> Result<Response<pb::MarkNoticesReadResponse>, Status> {
        let caller = required_caller(&request)?;
        tracing::Span::current().record("user_id", tracing::field::display(caller.user_id));
        Ok(Response::new(
            self.do_mark_notices_read(caller, request.into_inner())
                .await?,
        ))
    }

    #[tracing::instrument(skip_all, fields(user_id))]
    async fn count_unread_notices(
        &self,
        request: Request<pb::CountUnreadNoticesRequest>,
    ) -> Result<Response<pb::CountUnreadNoticesResponse>, Status> {
        let caller = required_caller(&request)?;
        tracing::Span::current().record("user_id", tracing::field::display(caller.user_id));
        Ok(Response::new(self.do_count_unread_notices(caller).await?))
    }

    #[tracing::instrument(skip_all, fields(user_id))]
    async fn list_seasons(
        &self,
        request: Request<pb::ListSeasonsRequest>,
    ) -> Result<Response<pb::ListSeasonsResponse>, Status> {
        let caller = required_caller(&request)?;
        tracing::Span::current().record("user_id", tracing::field::display(caller.user_id));
        Ok(Response::new(
            self.do_list_seasons(caller, request.into_inner()).await?,
        ))
    }

    #[tracing::instrument(skip_all, fields(user_id))]
    async fn get_replay(
        &self,
        request: Request<pb::GetReplayRequest>,
    ) -> Result<Response<pb::GetReplayResponse>, Status> {
        let caller = required_caller(&request)?;
        tracing::Span::current().record("user_id", tracing::field::display(caller.user_id));
        Ok(Response::new(
            self.do_get_replay(caller, request.into_inner()).await?,
        ))
    }
}
