//! A signed-in connection to the backend: one gRPC channel to the single client endpoint
//! (`basra dev`, or the ingress in production), a guest sign-in remembered per device (or a username and
//! password), and
//! the access token attached to every call, refreshed a third of its lifetime (at most a
//! minute) before it expires and once when a call answers UNAUTHENTICATED.

use std::path::PathBuf;
use std::sync::{Arc, RwLock};
use std::time::{Duration, SystemTime};

use basra_proto::basra::accounts::v1::{
    AuthTokens, GuestLoginRequest, LoginRequest, RefreshRequest,
    accounts_service_client::AccountsServiceClient,
};
use basra_proto::basra::game::v1::game_service_client::GameServiceClient;
use basra_proto::basra::matchmaking::v1::event_service_client::EventServiceClient;
use basra_proto::basra::matchmaking::v1::matchmaking_service_client::MatchmakingServiceClient;
use tonic::Request;
use tonic::metadata::MetadataValue;
use tonic::service::Interceptor;
use tonic::service::interceptor::InterceptedService;

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

/// Adds `authorization: Bearer <token>` (the token current then) and `basra-client` to
/// every call.
#[derive(Clone)]
pub struct Bearer(Arc<Tokens>);

impl Interceptor for Bearer {
    fn call(&mut self, request: Request<()>) -> Result<Request<()>, tonic::Status> {
        let mut request = ClientHeader.call(request)?;
        request
            .metadata_mut()
            .insert("authorization", self.0.header());
        Ok(request)
    }
}

/// The tokens of a sign-in, as they are now.
struct Held {
    header: MetadataValue<tonic::metadata::Ascii>,
    refresh_token: String,
    expires_at: SystemTime,
    lifetime: Duration,
}

impl Held {
    fn new(tokens: AuthTokens) -> anyhow::Result<Held> {
        let expires_at = tokens
            .access_token_expires_at
            .and_then(|at| SystemTime::try_from(at).ok())
            .ok_or_else(|| anyhow::anyhow!("the server's tokens have no expiry"))?;
        Ok(Held {
            header: format!("Bearer {}", tokens.access_token).parse()?,
            refresh_token: tokens.refresh_token,
            lifetime: expires_at
                .duration_since(SystemTime::now())
                .unwrap_or_default(),
            expires_at,
        })
    }

    /// How long until the refresh falls due: a third of the lifetime (at most a minute)
    /// before expiry.
    fn refresh_due(&self) -> Duration {
        let ahead = (self.lifetime / 3).min(Duration::from_secs(60));
        self.expires_at
            .checked_sub(ahead)
            .and_then(|at| at.duration_since(SystemTime::now()).ok())
            .unwrap_or_default()
    }
}

/// A connection to a service: a call that never reached the server (its connection
/// going away at the server's connection age, or the server restarting) is sent again.
pub type Channel = basra_platform::unsent::Resending<tonic::transport::Channel>;

/// The tokens shared by a session's clones and its refresher. Refresh tokens work once
/// (a second use revokes the sign-in), so refreshes take turns.
pub struct Tokens {
    held: RwLock<Held>,
    refreshing: tokio::sync::Mutex<()>,
    accounts: Channel,
}

impl Tokens {
    fn header(&self) -> MetadataValue<tonic::metadata::Ascii> {
        self.held.read().expect("tokens lock").header.clone()
    }

    /// Refreshes, unless the access token is no longer `seen` (refreshed meanwhile).
    async fn refresh_from(
        &self,
        seen: &MetadataValue<tonic::metadata::Ascii>,
    ) -> Result<(), tonic::Status> {
        let _turn = self.refreshing.lock().await;
        if self.header() != *seen {
            return Ok(());
        }
        let refresh_token = self.held.read().expect("tokens lock").refresh_token.clone();
        let tokens = AccountsServiceClient::with_interceptor(self.accounts.clone(), ClientHeader)
            .refresh(RefreshRequest { refresh_token })
            .await?
            .into_inner()
            .tokens
            .ok_or_else(|| tonic::Status::internal("Refresh answered no tokens"))?;
        let held = Held::new(tokens).map_err(|e| tonic::Status::internal(e.to_string()))?;
        *self.held.write().expect("tokens lock") = held;
        Ok(())
    }

    /// Refreshes each time the refresh falls due, until the session is dropped.
    async fn keep_fresh(self: Arc<Tokens>) {
        loop {
            let due = self.held.read().expect("tokens lock").refresh_due();
            tokio::time::sleep(due).await;
            let seen = self.header();
            match self.refresh_from(&seen).await {
                Ok(()) => {}
                // The sign-in is over (revoked, expired): calls will say so.
                Err(status) if status.code() == tonic::Code::Unauthenticated => return,
                // Offline or a server restarting: try again shortly.
                Err(_) => tokio::time::sleep(Duration::from_secs(1)).await,
            }
        }
    }
}

/// Stops the refresher when the last clone of a session is dropped.
struct Refresher(tokio::task::JoinHandle<()>);

impl Drop for Refresher {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Where the services answer: one endpoint for all (`basra dev`, an ingress), or one each.
#[derive(Debug, Clone)]
pub struct Endpoints {
    /// Where AccountsService answers.
    pub accounts: String,
    /// game-session.
    pub game: String,
    /// Where MatchmakingService answers.
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
    _refresher: Arc<Refresher>,
    /// The account's id.
    pub user_id: String,
    /// The name others see.
    pub display_name: String,
}

async fn connect(url: &str) -> anyhow::Result<Channel> {
    let channel = crate::tls::endpoint(url)?
        .tcp_nodelay(true)
        .connect()
        .await
        .map_err(|error| anyhow::anyhow!("cannot reach {url}: {error}"))?;
    Ok(Channel::new(channel))
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

    /// Connects to `server` (every service behind it) and signs in with a username and
    /// password (an account made with Register or LinkPassword).
    pub async fn login(server: &str, username: &str, password: &str) -> anyhow::Result<Session> {
        let endpoints = Endpoints::single(server);
        Session::sign_in(&endpoints, |mut accounts| async move {
            let response = accounts
                .login(LoginRequest {
                    username: username.to_owned(),
                    password: password.to_owned(),
                })
                .await
                .map_err(|status| match status.code() {
                    tonic::Code::Unauthenticated => {
                        anyhow::anyhow!("wrong username or password")
                    }
                    _ => anyhow::anyhow!("{}", status.message()),
                })?;
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
        let (user_id, display_name) = (tokens.user_id.clone(), tokens.display_name.clone());
        let tokens = Arc::new(Tokens {
            held: RwLock::new(Held::new(tokens)?),
            refreshing: tokio::sync::Mutex::new(()),
            accounts: accounts.clone(),
        });
        let refresher = Refresher(tokio::spawn(Arc::clone(&tokens).keep_fresh()));
        Ok(Session {
            accounts,
            game,
            matchmaking,
            bearer: Bearer(tokens),
            _refresher: Arc::new(refresher),
            user_id,
            display_name,
        })
    }

    /// Refreshes the tokens now (once, however many callers ask at the same time).
    pub async fn refresh(&self) -> Result<(), tonic::Status> {
        let seen = self.bearer.0.header();
        self.bearer.0.refresh_from(&seen).await
    }

    /// Runs `call`; when it answers UNAUTHENTICATED, refreshes the tokens once and runs it
    /// again. (A refresh that fails answers its own status: then sign in again.)
    pub async fn with_refresh<T, F, Fut>(&self, mut call: F) -> Result<T, tonic::Status>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Result<T, tonic::Status>>,
    {
        let seen = self.bearer.0.header();
        match call().await {
            Err(status) if status.code() == tonic::Code::Unauthenticated => {
                self.bearer.0.refresh_from(&seen).await?;
                call().await
            }
            answer => answer,
        }
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

    /// The events (tournaments) service, signed in (served by matchmaking).
    pub fn events(&self) -> EventServiceClient<InterceptedService<Channel, Bearer>> {
        EventServiceClient::with_interceptor(self.matchmaking.clone(), self.bearer.clone())
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
