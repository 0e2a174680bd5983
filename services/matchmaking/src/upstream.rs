//! The services matchmaking calls: game-session (rooms are created and
//! players seated there) and accounts (ratings). Both behind traits, so
//! tests and the embedded dev mode can put anything behind them.

use std::{collections::HashMap, sync::Arc, time::Duration};

use basra_platform::auth::ServiceCredentials;
use basra_platform::presence::PresenceReporter;
use basra_platform::telemetry::{TracedChannel, traced};
use basra_proto::basra::{
    accounts::v1::{
        GetPlayersRequest, PlayerSummary, SendInviteRequest, SendInviteResponse,
        accounts_internal_service_client::AccountsInternalServiceClient,
    },
    game::v1::{
        CreateRoomRequest, CreateRoomResponse, CreateRoomsRequest, GetSeatRequest, GetSeatResponse,
        GetSeatsRequest, SeatPlayerRequest, SeatPlayerResponse,
        game_internal_service_client::GameInternalServiceClient,
    },
};
use tokio_util::sync::CancellationToken;
use tonic::{
    Code, Request, Status,
    metadata::MetadataValue,
    transport::{Channel, Endpoint},
};

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

    /// `Game/CreateRooms`: many rooms in one call (an event's round), answered in order.
    /// By default one [`create_room`](Self::create_room) after another (stand-ins).
    async fn create_rooms(
        &self,
        rooms: Vec<CreateRoomRequest>,
    ) -> Result<Vec<CreateRoomResponse>, Status> {
        let mut answers = Vec::with_capacity(rooms.len());
        for room in rooms {
            answers.push(self.create_room(room).await?);
        }
        Ok(answers)
    }

    /// `Game/GetSeats`: many seats in one call, answered in order, each item GetSeat's
    /// answer or its own failure (an unknown room: NOT_FOUND); `Err` when the whole call
    /// failed. By default one [`get_seat`](Self::get_seat) after another (stand-ins).
    async fn get_seats(&self, seats: Vec<GetSeatRequest>) -> Result<Vec<SeatAnswer>, Status> {
        let mut answers = Vec::with_capacity(seats.len());
        for seat in seats {
            answers.push(self.get_seat(seat).await);
        }
        Ok(answers)
    }
}

/// One item of [`GameRooms::get_seats`]: GetSeat's answer, or that item's failure.
pub type SeatAnswer = Result<GetSeatResponse, Status>;

/// How many single calls the fallback of a bulk call has in flight (a game-session of a
/// release without CreateRooms or GetSeats, during an upgrade).
const FALLBACK_PARALLEL: usize = 64;

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
    client: GameInternalServiceClient<TracedChannel>,
    credentials: ServiceCredentials,
}

impl GrpcGame {
    /// A client of game-session at `url` (connects lazily, reconnects by itself),
    /// presenting `credentials`, each call bounded by `timeout`.
    pub fn new(url: &str, credentials: ServiceCredentials, timeout: Duration) -> Result<GrpcGame> {
        let channel = endpoint(url, timeout)?.connect_lazy();
        Ok(GrpcGame {
            client: GameInternalServiceClient::new(traced(channel)),
            credentials,
        })
    }

    fn request<T>(&self, message: T) -> Result<Request<T>, Status> {
        let mut request = Request::new(message);
        request
            .metadata_mut()
            .insert("authorization", authorization(&self.credentials)?);
        Ok(request)
    }
}

/// The `authorization` value for the next call with `credentials`.
fn authorization(
    credentials: &ServiceCredentials,
) -> Result<MetadataValue<tonic::metadata::Ascii>, Status> {
    let token = credentials
        .token()
        .ok_or_else(|| Status::internal("cannot mint a service token"))?;
    format!("Bearer {token}")
        .parse()
        .map_err(|_| Status::internal("the service token is not valid ASCII metadata"))
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

    async fn create_rooms(
        &self,
        rooms: Vec<CreateRoomRequest>,
    ) -> Result<Vec<CreateRoomResponse>, Status> {
        let mut client = self.client.clone();
        let request = CreateRoomsRequest {
            rooms: rooms.clone(),
        };
        match client.create_rooms(self.request(request)?).await {
            Ok(answer) => Ok(answer.into_inner().rooms),
            Err(status) if status.code() == Code::Unimplemented => {
                let game = self.clone();
                one_by_one(rooms, move |room| {
                    let game = game.clone();
                    async move { game.create_room(room).await }
                })
                .await
                .into_iter()
                .collect()
            }
            Err(status) => Err(status),
        }
    }

    async fn get_seats(&self, seats: Vec<GetSeatRequest>) -> Result<Vec<SeatAnswer>, Status> {
        let mut client = self.client.clone();
        let request = GetSeatsRequest {
            seats: seats.clone(),
        };
        match client.get_seats(self.request(request)?).await {
            Ok(answer) => Ok(answer
                .into_inner()
                .seats
                .into_iter()
                .map(|item| match (Code::from_i32(item.code), item.seat) {
                    (Code::Ok, Some(seat)) => Ok(seat),
                    (Code::Ok, None) => {
                        Err(Status::internal("GetSeats: an answer without its seat"))
                    }
                    (code, _) => Err(Status::new(code, item.message)),
                })
                .collect()),
            Err(status) if status.code() == Code::Unimplemented => {
                let game = self.clone();
                Ok(one_by_one(seats, move |seat| {
                    let game = game.clone();
                    async move { game.get_seat(seat).await }
                })
                .await)
            }
            Err(status) => Err(status),
        }
    }
}

/// The single calls in place of a bulk one that game-session does not serve yet (an
/// older release, UNIMPLEMENTED): [`FALLBACK_PARALLEL`] at a time, the answers in the
/// order of `items`.
async fn one_by_one<T, R, F, Fut>(items: Vec<T>, call: F) -> Vec<Result<R, Status>>
where
    T: Send + 'static,
    R: Send + 'static,
    F: Fn(T) -> Fut,
    Fut: std::future::Future<Output = Result<R, Status>> + Send + 'static,
{
    let limit = Arc::new(tokio::sync::Semaphore::new(FALLBACK_PARALLEL));
    let mut calls = tokio::task::JoinSet::new();
    let count = items.len();
    for (i, item) in items.into_iter().enumerate() {
        let (limit, answer) = (limit.clone(), call(item));
        calls.spawn(async move {
            let _permit = limit.acquire_owned().await;
            (i, answer.await)
        });
    }
    let mut answers: Vec<Option<Result<R, Status>>> = (0..count).map(|_| None).collect();
    while let Some(done) = calls.join_next().await {
        if let Ok((i, answer)) = done {
            answers[i] = Some(answer);
        }
    }
    answers
        .into_iter()
        .map(|answer| answer.unwrap_or_else(|| Err(Status::internal("a call panicked"))))
        .collect()
}

/// What the queue needs to know of a searching player.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Searcher {
    /// Their rating (0 for an unranked search).
    pub rating: f64,
    /// The players they block: never grouped with them (nor they with anyone who
    /// blocks them, which that player's own ticket says).
    pub blocks: Vec<String>,
}

/// Where ratings come from: accounts, for any player.
#[tonic::async_trait]
pub trait RatingSource: Send + Sync + 'static {
    /// The player's current rating.
    async fn rating(&self, user_id: &str) -> Result<f64>;

    /// The player as the queue sees them: the rating (for a `ranked` search) and the
    /// players they block. By default, [`rating`](Self::rating) and no blocks (a source
    /// that knows no blocks: tools, benches).
    async fn searcher(&self, user_id: &str, ranked: bool) -> Result<Searcher> {
        Ok(Searcher {
            rating: if ranked {
                self.rating(user_id).await?
            } else {
                0.0
            },
            blocks: Vec::new(),
        })
    }
}

/// Where players' display names come from (accounts), for the seats that
/// matchmaking shows (`Matched`, the public lobby).
#[tonic::async_trait]
pub trait NameSource: Send + Sync + 'static {
    /// The names of those of `user_ids` that exist (user id → name).
    async fn names(&self, user_ids: &[String]) -> Result<HashMap<String, String>>;
}

/// Players' public facts from accounts' internal `GetPlayers`, called with
/// matchmaking's service credentials: their display names ([`NameSource`]) and
/// ratings ([`RatingSource`]).
#[derive(Debug, Clone)]
pub struct GrpcPlayers {
    channel: Channel,
    client: AccountsInternalServiceClient<TracedChannel>,
    credentials: ServiceCredentials,
}

impl GrpcPlayers {
    /// A client of accounts at `url` (connects lazily), presenting `credentials`, each
    /// call bounded by `timeout`.
    pub fn new(
        url: &str,
        credentials: ServiceCredentials,
        timeout: Duration,
    ) -> Result<GrpcPlayers> {
        let channel = endpoint(url, timeout)?.connect_lazy();
        Ok(GrpcPlayers {
            client: AccountsInternalServiceClient::new(traced(channel.clone())),
            channel,
            credentials,
        })
    }

    /// Reports who is searching to accounts over the same channel, until `shutdown`.
    pub fn presence_reporter(&self, shutdown: CancellationToken) -> PresenceReporter {
        let credentials = self.credentials.clone();
        PresenceReporter::spawn(
            self.channel.clone(),
            Arc::new(move || credentials.token()),
            shutdown,
        )
    }

    /// Those of `user_ids` that exist (with whom each blocks, when `include_blocks`).
    /// accounts answers at most [`GET_PLAYERS_MAX_IDS`] ids a call: a longer list (the
    /// standings of a big event) is asked in calls of that many, a few at once
    /// ([`GET_PLAYERS_IN_FLIGHT`]), and the answers merged; any call failing fails all.
    async fn players(
        &self,
        user_ids: &[String],
        include_blocks: bool,
    ) -> Result<Vec<PlayerSummary>> {
        let mut ids = user_ids.to_vec();
        ids.sort_unstable();
        ids.dedup();
        if ids.len() <= GET_PLAYERS_MAX_IDS {
            return self.players_call(ids, include_blocks).await;
        }
        let mut chunks = ids.chunks(GET_PLAYERS_MAX_IDS).map(<[String]>::to_vec);
        let mut calls = tokio::task::JoinSet::new();
        let mut found = Vec::with_capacity(ids.len());
        loop {
            while calls.len() < GET_PLAYERS_IN_FLIGHT {
                let Some(chunk) = chunks.next() else { break };
                let this = self.clone();
                calls.spawn(async move { this.players_call(chunk, include_blocks).await });
            }
            match calls.join_next().await {
                Some(answer) => found.extend(answer.map_err(|err| {
                    MatchmakingError::Unavailable(format!(
                        "accounts is unavailable (players): a call was lost ({err})"
                    ))
                })??),
                None => return Ok(found),
            }
        }
    }

    /// One GetPlayers call (at most [`GET_PLAYERS_MAX_IDS`] ids).
    async fn players_call(
        &self,
        user_ids: Vec<String>,
        include_blocks: bool,
    ) -> Result<Vec<PlayerSummary>> {
        let upstream = |status: Status| {
            if is_transient(&status) {
                MatchmakingError::Unavailable(format!(
                    "accounts is unavailable (players): retry shortly ({})",
                    status.message()
                ))
            } else {
                MatchmakingError::Upstream {
                    context: "accounts GetPlayers",
                    status,
                }
            }
        };
        let mut request = Request::new(GetPlayersRequest {
            user_ids,
            include_blocks,
        });
        request.metadata_mut().insert(
            "authorization",
            authorization(&self.credentials).map_err(upstream)?,
        );
        Ok(self
            .client
            .clone()
            .get_players(request)
            .await
            .map_err(upstream)?
            .into_inner()
            .players)
    }
}

/// The most user ids accounts' `GetPlayers` takes in one call (its .proto: 1 to 100).
pub const GET_PLAYERS_MAX_IDS: usize = 100;

/// How many `GetPlayers` calls of one long list are in flight at once.
const GET_PLAYERS_IN_FLIGHT: usize = 4;

impl GrpcPlayers {
    /// The player's summary; FAILED_PRECONDITION when accounts does not know them.
    async fn player(&self, user_id: &str, include_blocks: bool) -> Result<PlayerSummary> {
        self.players(&[user_id.to_owned()], include_blocks)
            .await?
            .into_iter()
            .find(|p| p.user_id == user_id)
            .ok_or_else(|| {
                MatchmakingError::FailedPrecondition(format!(
                    "accounts has no player {user_id}: sign in again"
                ))
            })
    }
}

#[tonic::async_trait]
impl RatingSource for GrpcPlayers {
    async fn rating(&self, user_id: &str) -> Result<f64> {
        Ok(self.player(user_id, false).await?.rating)
    }

    /// One GetPlayers call for both the rating and the blocks.
    async fn searcher(&self, user_id: &str, ranked: bool) -> Result<Searcher> {
        let player = self.player(user_id, true).await?;
        Ok(Searcher {
            rating: if ranked { player.rating } else { 0.0 },
            blocks: player.blocked_user_ids,
        })
    }
}

#[tonic::async_trait]
impl NameSource for GrpcPlayers {
    async fn names(&self, user_ids: &[String]) -> Result<HashMap<String, String>> {
        if user_ids.is_empty() {
            return Ok(HashMap::new());
        }
        Ok(self
            .players(user_ids, false)
            .await?
            .into_iter()
            .map(|p| (p.user_id, p.display_name))
            .collect())
    }
}

/// Where invites go: accounts' internal `SendInvite`, which checks the friendship and
/// puts the invite on the friend's feed.
#[tonic::async_trait]
pub trait Invites: Send + Sync + 'static {
    /// `AccountsInternalService/SendInvite`; its status is the answer.
    async fn send_invite(&self, request: SendInviteRequest) -> Result<SendInviteResponse, Status>;
}

impl GrpcPlayers {
    /// `AccountsInternalService/SendNotice` (a notice in a player's inbox).
    pub async fn send_notice(
        &self,
        request: basra_proto::basra::accounts::v1::SendNoticeRequest,
    ) -> Result<basra_proto::basra::accounts::v1::SendNoticeResponse, Status> {
        let mut request = Request::new(request);
        request
            .metadata_mut()
            .insert("authorization", authorization(&self.credentials)?);
        Ok(self.client.clone().send_notice(request).await?.into_inner())
    }
}

impl GrpcPlayers {
    /// `AccountsInternalService/SendNotices` (notices in many players' inboxes).
    pub async fn send_notices(
        &self,
        request: basra_proto::basra::accounts::v1::SendNoticesRequest,
    ) -> Result<basra_proto::basra::accounts::v1::SendNoticesResponse, Status> {
        let mut request = Request::new(request);
        request
            .metadata_mut()
            .insert("authorization", authorization(&self.credentials)?);
        Ok(self
            .client
            .clone()
            .send_notices(request)
            .await?
            .into_inner())
    }
}

#[tonic::async_trait]
impl Invites for GrpcPlayers {
    async fn send_invite(&self, request: SendInviteRequest) -> Result<SendInviteResponse, Status> {
        let mut request = Request::new(request);
        request
            .metadata_mut()
            .insert("authorization", authorization(&self.credentials)?);
        Ok(self.client.clone().send_invite(request).await?.into_inner())
    }
}

/// No accounts to deliver invites to (tools, benchmarks): every invite is UNAVAILABLE.
#[derive(Debug, Clone, Copy)]
pub struct NoInvites;

#[tonic::async_trait]
impl Invites for NoInvites {
    async fn send_invite(&self, _request: SendInviteRequest) -> Result<SendInviteResponse, Status> {
        Err(Status::unavailable(
            "no accounts service to deliver invites",
        ))
    }
}

/// Every player has the same rating (unranked-only setups, tools).
#[derive(Debug, Clone, Copy)]
pub struct FixedRating(pub f64);

#[tonic::async_trait]
impl RatingSource for FixedRating {
    async fn rating(&self, _user_id: &str) -> Result<f64> {
        Ok(self.0)
    }
}

fn endpoint(url: &str, timeout: Duration) -> Result<Endpoint> {
    Ok(Endpoint::from_shared(url.to_owned())
        .map_err(|err| MatchmakingError::bad_setting(format!("bad upstream URL {url:?}: {err}")))?
        .timeout(timeout)
        .connect_timeout(timeout))
}
