//! The services matchmaking calls: game-session (rooms are created and
//! players seated there) and accounts (ratings). Both behind traits, so
//! tests and the embedded dev mode can put anything behind them.

use std::{collections::HashMap, sync::Arc, time::Duration};

use basra_platform::Caller;
use basra_platform::auth::ServiceIdentity;
use basra_platform::telemetry::{TracedChannel, traced};
use basra_proto::basra::{
    accounts::v1::{
        GetPlayersRequest, GetProfileRequest, accounts_service_client::AccountsServiceClient,
    },
    game::v1::{
        CreateRoomRequest, CreateRoomResponse, GetSeatRequest, GetSeatResponse, SeatPlayerRequest,
        SeatPlayerResponse, game_service_client::GameServiceClient,
    },
};
use tonic::{Code, Request, Status, metadata::MetadataValue, transport::Endpoint};

use crate::error::{MatchmakingError, Result};

/// game-session's internal room setup RPCs.
#[tonic::async_trait]
pub trait GameRooms: Send + Sync + 'static {
    /// `Game/CreateRoom` (idempotent by room id).
    async fn create_room(&self, request: CreateRoomRequest) -> Result<CreateRoomResponse, Status>;
    /// `Game/SeatPlayer` (idempotent for a seated player).
    async fn seat_player(&self, request: SeatPlayerRequest) -> Result<SeatPlayerResponse, Status>;
    /// `Game/GetSeat`: a room's status and the player's seat there.
    async fn get_seat(&self, request: GetSeatRequest) -> Result<GetSeatResponse, Status>;
}

/// Whether a game-session failure is transient (retry later) rather than a
/// refusal.
pub fn is_transient(status: &Status) -> bool {
    matches!(
        status.code(),
        Code::Unavailable
            | Code::DeadlineExceeded
            | Code::Unknown
            | Code::Cancelled
            | Code::ResourceExhausted
            | Code::Aborted
            | Code::Internal
    )
}

/// [`GameRooms`] over gRPC with a service token.
#[derive(Debug, Clone)]
pub struct GrpcGame {
    client: GameServiceClient<TracedChannel>,
    credentials: ServiceCredentials,
}

/// The service token matchmaking sends to game-session and accounts.
#[derive(Debug, Clone)]
enum ServiceCredentials {
    /// A fixed token from the settings (the older way: it expires).
    Static(MetadataValue<tonic::metadata::Ascii>),
    /// Tokens minted by matchmaking's own key, fresh before they expire.
    Identity(Arc<ServiceIdentity>),
}

impl GrpcGame {
    /// A client of game-session at `url` (connects lazily, reconnects by
    /// itself), sending `service_token`, each call bounded by `timeout`.
    pub fn new(url: &str, service_token: &str, timeout: Duration) -> Result<GrpcGame> {
        let channel = endpoint(url, timeout)?.connect_lazy();
        Ok(GrpcGame {
            client: GameServiceClient::new(traced(channel)),
            credentials: ServiceCredentials::Static(bearer(service_token)?),
        })
    }

    /// Like [`GrpcGame::new`], with tokens minted by `identity` (matchmaking's own key).
    pub fn with_identity(
        url: &str,
        identity: Arc<ServiceIdentity>,
        timeout: Duration,
    ) -> Result<GrpcGame> {
        let channel = endpoint(url, timeout)?.connect_lazy();
        Ok(GrpcGame {
            client: GameServiceClient::new(traced(channel)),
            credentials: ServiceCredentials::Identity(identity),
        })
    }

    fn request<T>(&self, message: T) -> Result<Request<T>, Status> {
        let mut request = Request::new(message);
        request
            .metadata_mut()
            .insert("authorization", self.credentials.authorization()?);
        Ok(request)
    }
}

impl ServiceCredentials {
    /// The `authorization` value for the next call.
    fn authorization(&self) -> Result<MetadataValue<tonic::metadata::Ascii>, Status> {
        match self {
            ServiceCredentials::Static(value) => Ok(value.clone()),
            ServiceCredentials::Identity(identity) => {
                let token = identity.token().map_err(|err| {
                    tracing::error!(error = %err, "cannot mint a service token");
                    Status::internal("cannot mint a service token")
                })?;
                bearer(&token).map_err(|err| Status::internal(err.to_string()))
            }
        }
    }
}

#[tonic::async_trait]
impl GameRooms for GrpcGame {
    async fn create_room(&self, request: CreateRoomRequest) -> Result<CreateRoomResponse, Status> {
        let mut client = self.client.clone();
        Ok(client
            .create_room(self.request(request)?)
            .await?
            .into_inner())
    }

    async fn seat_player(&self, request: SeatPlayerRequest) -> Result<SeatPlayerResponse, Status> {
        let mut client = self.client.clone();
        Ok(client
            .seat_player(self.request(request)?)
            .await?
            .into_inner())
    }

    async fn get_seat(&self, request: GetSeatRequest) -> Result<GetSeatResponse, Status> {
        let mut client = self.client.clone();
        Ok(client.get_seat(self.request(request)?).await?.into_inner())
    }
}

/// Where ratings come from.
///
/// Accounts offers no service RPC giving another player's rating, so the
/// rating is the caller's own: [`GrpcRatings`] calls `Accounts/GetProfile`
/// (empty user id = the caller) with the caller's own access token.
#[tonic::async_trait]
pub trait RatingSource: Send + Sync + 'static {
    /// The caller's current rating; `bearer` is the caller's access token.
    async fn rating(&self, caller: &Caller, bearer: &str) -> Result<f64>;
}

/// [`RatingSource`] asking accounts over gRPC.
#[derive(Debug, Clone)]
pub struct GrpcRatings {
    client: AccountsServiceClient<TracedChannel>,
}

impl GrpcRatings {
    /// A client of accounts at `url`.
    pub fn new(url: &str, timeout: Duration) -> Result<GrpcRatings> {
        Ok(GrpcRatings {
            client: AccountsServiceClient::new(traced(endpoint(url, timeout)?.connect_lazy())),
        })
    }
}

#[tonic::async_trait]
impl RatingSource for GrpcRatings {
    async fn rating(&self, _caller: &Caller, bearer_token: &str) -> Result<f64> {
        let mut request = Request::new(GetProfileRequest {
            user_id: String::new(),
        });
        request
            .metadata_mut()
            .insert("authorization", bearer(bearer_token)?);
        let profile = self
            .client
            .clone()
            .get_profile(request)
            .await
            .map_err(|status| {
                if is_transient(&status) {
                    MatchmakingError::Unavailable(
                        "accounts is unavailable (ratings): retry shortly".into(),
                    )
                } else {
                    MatchmakingError::Upstream {
                        context: "accounts GetProfile",
                        status,
                    }
                }
            })?
            .into_inner()
            .profile
            .ok_or_else(|| MatchmakingError::Corrupt("accounts sent no profile".into()))?;
        Ok(profile.rating)
    }
}

/// Where players' display names come from (accounts), for the seats that
/// matchmaking shows (`Matched`, the public lobby).
#[tonic::async_trait]
pub trait NameSource: Send + Sync + 'static {
    /// The names of those of `user_ids` that exist (user id → name).
    async fn names(&self, user_ids: &[String]) -> Result<HashMap<String, String>>;
}

/// [`NameSource`] asking accounts' `GetPlayers` with a service token.
#[derive(Debug, Clone)]
pub struct GrpcNames {
    client: AccountsServiceClient<TracedChannel>,
    credentials: ServiceCredentials,
}

impl GrpcNames {
    /// A client of accounts at `url`, sending `service_token`.
    pub fn new(url: &str, service_token: &str, timeout: Duration) -> Result<GrpcNames> {
        Ok(GrpcNames {
            client: AccountsServiceClient::new(traced(endpoint(url, timeout)?.connect_lazy())),
            credentials: ServiceCredentials::Static(bearer(service_token)?),
        })
    }

    /// Like [`GrpcNames::new`], with tokens minted by `identity` (matchmaking's own key).
    pub fn with_identity(
        url: &str,
        identity: Arc<ServiceIdentity>,
        timeout: Duration,
    ) -> Result<GrpcNames> {
        Ok(GrpcNames {
            client: AccountsServiceClient::new(traced(endpoint(url, timeout)?.connect_lazy())),
            credentials: ServiceCredentials::Identity(identity),
        })
    }
}

#[tonic::async_trait]
impl NameSource for GrpcNames {
    async fn names(&self, user_ids: &[String]) -> Result<HashMap<String, String>> {
        if user_ids.is_empty() {
            return Ok(HashMap::new());
        }
        let mut request = Request::new(GetPlayersRequest {
            user_ids: user_ids.to_vec(),
        });
        let authorization =
            self.credentials
                .authorization()
                .map_err(|status| MatchmakingError::Upstream {
                    context: "accounts GetPlayers",
                    status,
                })?;
        request
            .metadata_mut()
            .insert("authorization", authorization);
        let players = self
            .client
            .clone()
            .get_players(request)
            .await
            .map_err(|status| MatchmakingError::Upstream {
                context: "accounts GetPlayers",
                status,
            })?
            .into_inner()
            .players;
        Ok(players
            .into_iter()
            .map(|p| (p.user_id, p.display_name))
            .collect())
    }
}

/// Every player has the same rating (unranked-only setups, tools).
#[derive(Debug, Clone, Copy)]
pub struct FixedRating(pub f64);

#[tonic::async_trait]
impl RatingSource for FixedRating {
    async fn rating(&self, _caller: &Caller, _bearer: &str) -> Result<f64> {
        Ok(self.0)
    }
}

fn endpoint(url: &str, timeout: Duration) -> Result<Endpoint> {
    Ok(Endpoint::from_shared(url.to_owned())
        .map_err(|err| MatchmakingError::Config(format!("bad upstream URL {url:?}: {err}")))?
        .timeout(timeout)
        .connect_timeout(timeout))
}

fn bearer(token: &str) -> Result<MetadataValue<tonic::metadata::Ascii>> {
    format!("Bearer {token}")
        .parse()
        .map_err(|_| MatchmakingError::Config("a token is not valid ASCII metadata".into()))
}
