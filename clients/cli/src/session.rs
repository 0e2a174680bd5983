//! A signed-in connection to the backend: one gRPC channel to the single client endpoint
//! (`basra dev`, or the ingress in production), a guest sign-in remembered per device, and
//! the access token attached to every call.

use std::path::PathBuf;

use basra_proto::basra::accounts::v1::{
    AuthTokens, GuestLoginRequest, accounts_service_client::AccountsServiceClient,
};
use basra_proto::basra::game::v1::game_service_client::GameServiceClient;
use basra_proto::basra::matchmaking::v1::matchmaking_service_client::MatchmakingServiceClient;
use tonic::Request;
use tonic::metadata::MetadataValue;
use tonic::service::Interceptor;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::{Channel, Endpoint};

/// What this client calls itself in the `basra-client` metadata of every call
/// (`cli/<version>`): the services keep it with the session and the seat, for analytics.
pub const CLIENT: &str = concat!("cli/", env!("CARGO_PKG_VERSION"));

/// Adds `basra-client: cli/<version>` to every call (sign-in included).
#[derive(Clone, Copy, Debug, Default)]
pub struct ClientHeader;

impl Interceptor for ClientHeader {
    fn call(&mut self, mut request: Request<()>) -> Result<Request<()>, tonic::Status> {
        request
            .metadata_mut()
            .insert("basra-client", MetadataValue::from_static(CLIENT));
        Ok(request)
    }
}

/// Adds `authorization: Bearer <token>` (and `basra-client`) to every call.
#[derive(Clone)]
pub struct Bearer(MetadataValue<tonic::metadata::Ascii>);

impl Interceptor for Bearer {
    fn call(&mut self, request: Request<()>) -> Result<Request<()>, tonic::Status> {
        let mut request = ClientHeader.call(request)?;
        request
            .metadata_mut()
            .insert("authorization", self.0.clone());
        Ok(request)
    }
}

/// Where the services answer: one endpoint for all (`basra dev`, an ingress), or one each.
#[derive(Debug, Clone)]
pub struct Endpoints {
    /// accounts.
    pub accounts: String,
    /// game-session.
    pub game: String,
    /// matchmaking.
    pub matchmaking: String,
}

impl Endpoints {
    /// Every service behind one address.
    pub fn single(server: &str) -> Endpoints {
        Endpoints {
            accounts: server.to_owned(),
            game: server.to_owned(),
            matchmaking: server.to_owned(),
        }
    }
}

/// A signed-in player.
#[derive(Clone)]
pub struct Session {
    accounts: Channel,
    game: Channel,
    matchmaking: Channel,
    bearer: Bearer,
    /// The account's id.
    pub user_id: String,
    /// The name others see.
    pub display_name: String,
}

async fn connect(url: &str) -> anyhow::Result<Channel> {
    Endpoint::from_shared(url.to_owned())?
        .tcp_nodelay(true)
        .connect()
        .await
        .map_err(|error| anyhow::anyhow!("cannot reach {url}: {error}"))
}

impl Session {
    /// Connects to `server` (every service behind it) and signs in as the guest of
    /// `device_id`.
    pub async fn guest(server: &str, device_id: &str, name: &str) -> anyhow::Result<Session> {
        let endpoints = Endpoints::single(server);
        Session::sign_in(&endpoints, |mut accounts| async move {
            let response = accounts
                .guest_login(GuestLoginRequest {
                    device_id: device_id.to_owned(),
                    display_name: name.to_owned(),
                })
                .await?;
            Ok(response.into_inner().tokens)
        })
        .await
    }

    /// Connects to `endpoints` and signs in with `sign_in`, which calls accounts and returns
    /// the tokens (guest, register or log in).
    pub async fn sign_in<F, Fut>(endpoints: &Endpoints, sign_in: F) -> anyhow::Result<Session>
    where
        F: FnOnce(AccountsServiceClient<InterceptedService<Channel, ClientHeader>>) -> Fut,
        Fut: std::future::Future<Output = anyhow::Result<Option<AuthTokens>>>,
    {
        let accounts = connect(&endpoints.accounts).await?;
        let tokens = sign_in(AccountsServiceClient::with_interceptor(
            accounts.clone(),
            ClientHeader,
        ))
        .await?
        .ok_or_else(|| anyhow::anyhow!("the server answered a sign-in without tokens"))?;
        let game = if endpoints.game == endpoints.accounts {
            accounts.clone()
        } else {
            connect(&endpoints.game).await?
        };
        let matchmaking = if endpoints.matchmaking == endpoints.accounts {
            accounts.clone()
        } else {
            connect(&endpoints.matchmaking).await?
        };
        let header = format!("Bearer {}", tokens.access_token).parse()?;
        Ok(Session {
            accounts,
            game,
            matchmaking,
            bearer: Bearer(header),
            user_id: tokens.user_id,
            display_name: tokens.display_name,
        })
    }

    /// The accounts service, signed in.
    pub fn accounts(&self) -> AccountsServiceClient<InterceptedService<Channel, Bearer>> {
        AccountsServiceClient::with_interceptor(self.accounts.clone(), self.bearer.clone())
    }

    /// The game service, signed in.
    pub fn game(&self) -> GameServiceClient<InterceptedService<Channel, Bearer>> {
        GameServiceClient::with_interceptor(self.game.clone(), self.bearer.clone())
    }

    /// The matchmaking service, signed in.
    pub fn matchmaking(&self) -> MatchmakingServiceClient<InterceptedService<Channel, Bearer>> {
        MatchmakingServiceClient::with_interceptor(self.matchmaking.clone(), self.bearer.clone())
    }
}

/// This machine's device id for guest sign-in, made once and kept in the user's config
/// directory so the same guest comes back.
pub fn device_id() -> anyhow::Result<String> {
    let dir = config_dir();
    let path = dir.join("device-id");
    if let Ok(id) = std::fs::read_to_string(&path) {
        let id = id.trim();
        if !id.is_empty() {
            return Ok(id.to_owned());
        }
    }
    let id = format!("cli-{}", uuid::Uuid::now_v7());
    std::fs::create_dir_all(&dir)?;
    std::fs::write(&path, &id)?;
    Ok(id)
}

fn config_dir() -> PathBuf {
    std::env::var_os("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".config")))
        .unwrap_or_else(|| PathBuf::from("."))
        .join("basra")
}
