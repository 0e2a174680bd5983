//! Both of accounts' gRPC clients on one connection ([`AccountsClient`]).

use std::ops::{Deref, DerefMut};

use basra_proto::basra::accounts::v1 as pb;
use basra_proto::basra::accounts::v1::accounts_internal_service_client::AccountsInternalServiceClient;
use basra_proto::basra::accounts::v1::accounts_service_client::AccountsServiceClient;
use tonic::transport::Channel;

/// Both of accounts' gRPC clients on one connection, so a test calls a player's RPC and a
/// service's RPC on the same value: `AccountsService`'s methods through `Deref`, the
/// internal ones (`AccountsInternalService`) below.
#[derive(Debug, Clone)]
pub struct AccountsClient {
    public: AccountsServiceClient<Channel>,
    internal: AccountsInternalServiceClient<Channel>,
}

impl AccountsClient {
    /// Both clients on `channel`.
    pub fn new(channel: Channel) -> AccountsClient {
        AccountsClient {
            public: AccountsServiceClient::new(channel.clone()),
            internal: AccountsInternalServiceClient::new(channel),
        }
    }
}

impl Deref for AccountsClient {
    type Target = AccountsServiceClient<Channel>;

    fn deref(&self) -> &Self::Target {
        &self.public
    }
}

impl DerefMut for AccountsClient {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.public
    }
}

/// One `AccountsInternalService` call on [`AccountsClient`].
macro_rules! internal_call {
    ($(#[$doc:meta])* $name:ident, $request:ty, $response:ty) => {
        $(#[$doc])*
        pub async fn $name(
            &mut self,
            request: impl tonic::IntoRequest<$request>,
        ) -> Result<tonic::Response<$response>, tonic::Status> {
            self.internal.$name(request).await
        }
    };
}

impl AccountsClient {
    internal_call!(
        /// `RecordMatch`: one finished match (a service token).
        record_match,
        pb::RecordMatchRequest,
        pb::RecordMatchResponse
    );
    internal_call!(
        /// `RecordMatches`: a batch of finished matches (a service token).
        record_matches,
        pb::RecordMatchesRequest,
        pb::RecordMatchesResponse
    );
    internal_call!(
        /// `GetPlayers`: names, ratings and blocks (a service token).
        get_players,
        pb::GetPlayersRequest,
        pb::GetPlayersResponse
    );
    internal_call!(
        /// `ReportPresence`: who is online, searching or playing (a service token).
        report_presence,
        pb::ReportPresenceRequest,
        pb::ReportPresenceResponse
    );
    internal_call!(
        /// `SendInvite`: a player's invitation to a room (a service token).
        send_invite,
        pb::SendInviteRequest,
        pb::SendInviteResponse
    );
    internal_call!(
        /// `SendNotice`: a notice for a player's inbox (a service token).
        send_notice,
        pb::SendNoticeRequest,
        pb::SendNoticeResponse
    );
    internal_call!(
        /// `SendNotices`: notices for many players' inboxes at once (a service token).
        send_notices,
        pb::SendNoticesRequest,
        pb::SendNoticesResponse
    );
}
