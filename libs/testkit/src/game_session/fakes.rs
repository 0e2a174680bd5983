//! A fake accounts for game-session's tests ([`FakeAccounts`]): names players, records
//! matches and presence reports, over real gRPC with the tests' tokens.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use basra_platform::auth::Role;
use basra_proto::basra::accounts::v1 as acc;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tonic::{Request, Status};

use game_session::AccountsLink;

use super::Tokens;
use crate::Served;

/// The display name [`FakeAccounts`] gives a user.
pub fn fake_name(user_id: &str) -> String {
    format!("name-{}", &user_id[user_id.len().saturating_sub(6)..])
}

/// A fake accounts server: records RecordMatch calls by match id, names players
/// ([`fake_name`], 1 to 100 a GetPlayers as accounts does) and keeps the presence reports.
#[derive(Debug, Default, Clone)]
pub struct FakeAccounts {
    /// Each match recorded, by match id, with how many times it was.
    pub recorded: Arc<Mutex<HashMap<String, (acc::MatchRecord, u32)>>>,
    /// RecordMatch calls received.
    pub calls: Arc<Mutex<u32>>,
    /// Every presence report received, in order.
    pub presence: Arc<Mutex<Vec<acc::PresenceReport>>>,
    /// How many user ids each GetPlayers asked for, in order.
    pub lookups: Arc<Mutex<Vec<usize>>>,
}

#[tonic::async_trait]
impl acc::accounts_internal_service_server::AccountsInternalService for FakeAccounts {
    async fn get_players(
        &self,
        request: Request<acc::GetPlayersRequest>,
    ) -> Result<tonic::Response<acc::GetPlayersResponse>, Status> {
        let caller = basra_platform::auth::caller(&request)?;
        basra_platform::auth::require_role(&caller, Role::Service)?;
        let user_ids = request.into_inner().user_ids;
        self.lookups.lock().unwrap().push(user_ids.len());
        if user_ids.is_empty() || user_ids.len() > 100 {
            // As accounts: 1 to 100 ids a call.
            return Err(Status::invalid_argument("1 to 100 user ids"));
        }
        let players = user_ids
            .into_iter()
            .map(|user_id| acc::PlayerSummary {
                display_name: fake_name(&user_id),
                user_id,
                ..Default::default()
            })
            .collect();
        Ok(tonic::Response::new(acc::GetPlayersResponse { players }))
    }
    async fn record_match(
        &self,
        request: Request<acc::RecordMatchRequest>,
    ) -> Result<tonic::Response<acc::RecordMatchResponse>, Status> {
        let caller = basra_platform::auth::caller(&request)?;
        basra_platform::auth::require_role(&caller, Role::Service)?;
        *self.calls.lock().unwrap() += 1;
        let record = request.into_inner().record.unwrap();
        let mut recorded = self.recorded.lock().unwrap();
        let already = recorded.contains_key(&record.match_id);
        recorded
            .entry(record.match_id.clone())
            .or_insert((record, 0))
            .1 += 1;
        Ok(tonic::Response::new(acc::RecordMatchResponse {
            rating_changes: Vec::new(),
            already_recorded: already,
        }))
    }
    async fn record_matches(
        &self,
        _: Request<acc::RecordMatchesRequest>,
    ) -> Result<tonic::Response<acc::RecordMatchesResponse>, Status> {
        Err(Status::unimplemented("fake"))
    }
    async fn report_presence(
        &self,
        request: Request<acc::ReportPresenceRequest>,
    ) -> Result<tonic::Response<acc::ReportPresenceResponse>, Status> {
        self.presence
            .lock()
            .unwrap()
            .extend(request.into_inner().reports);
        Ok(tonic::Response::new(acc::ReportPresenceResponse {}))
    }
    async fn send_invite(
        &self,
        _: Request<acc::SendInviteRequest>,
    ) -> Result<tonic::Response<acc::SendInviteResponse>, Status> {
        Err(Status::unimplemented("fake"))
    }
    async fn send_notice(
        &self,
        _: Request<acc::SendNoticeRequest>,
    ) -> Result<tonic::Response<acc::SendNoticeResponse>, Status> {
        Err(Status::unimplemented("fake"))
    }
    async fn send_notices(
        &self,
        _: Request<acc::SendNoticesRequest>,
    ) -> Result<tonic::Response<acc::SendNoticesResponse>, Status> {
        Err(Status::unimplemented("fake"))
    }
}

impl FakeAccounts {
    /// Serves a fresh fake on 127.0.0.1 and a free port, trusting `tokens`, until the
    /// answer is dropped or stopped.
    pub async fn spawn(tokens: &Tokens) -> ServedAccounts {
        let fake = FakeAccounts::default();
        let server = Served::spawn(|listener, shutdown| {
            serve_accounts(listener, fake.clone(), tokens, shutdown)
        })
        .await;
        ServedAccounts { fake, server }
    }
}

/// A [`FakeAccounts`] being served ([`FakeAccounts::spawn`]).
#[derive(Debug)]
pub struct ServedAccounts {
    /// What it has been told (clones share it).
    pub fake: FakeAccounts,
    server: Served,
}

impl ServedAccounts {
    /// A replica's link to it, signed by `tokens`' issuer (the default delays).
    pub fn link(&self, tokens: &Tokens) -> AccountsLink {
        AccountsLink::new(
            &format!("http://{}", self.server.addr()),
            tokens.service_credentials(),
        )
        .expect("a loopback URL")
    }

    /// Stops it and waits (up to 5 s) until it has finished.
    pub async fn stop(self) {
        self.server.stop().await;
    }
}

/// Serves the fake accounts on `listener` until `shutdown`.
pub fn serve_accounts(
    listener: TcpListener,
    fake: FakeAccounts,
    tokens: &Tokens,
    shutdown: CancellationToken,
) -> JoinHandle<()> {
    let auth = basra_platform::AuthLayer::new(tokens.issuer.verifier(), &[]);
    let routes = tonic::service::Routes::new(
        acc::accounts_internal_service_server::AccountsInternalServiceServer::new(fake),
    );
    tokio::spawn(async move {
        basra_platform::serve(
            listener,
            routes,
            &["basra.accounts.v1.AccountsInternalService"],
            auth,
            shutdown,
            Duration::from_millis(100),
        )
        .await
        .unwrap();
    })
}
