//! `basra admin`: the operator's tool over game-session's `GameAdminService` — list rooms
//! (filters), inspect one, close one, drain a replica — and the operator token it needs,
//! minted offline from the operator's signing key (`basra admin token --key-file …`).

use std::time::Duration;

use anyhow::Context as _;
use basra_platform::auth::{
    Caller, MAX_OPERATOR_NAME_CHARS, Role, SigningKey, TokenIssuer, valid_operator_name,
};
use basra_proto::basra::common::v1::RoomStatus;
use basra_proto::basra::game::v1::game_admin_service_client::GameAdminServiceClient;
use basra_proto::basra::game::v1::{
    CloseRoomRequest, CloseRoomResponse, DrainReplicaRequest, DrainReplicaResponse, GetRoomRequest,
    GetRoomResponse, ListRoomsRequest, RoomSummary, UndrainReplicaRequest, UndrainReplicaResponse,
};
use tonic::metadata::MetadataValue;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::Channel;

/// The longest operator token this tool mints: operator tokens are for a task, not a day.
pub const MAX_TOKEN_TTL: Duration = Duration::from_secs(3600);

/// An operator token (role `operator`) for the operator `operator` (their name, which the
/// audit shows), signed with the PKCS#8 PEM key in `private_pem` under `kid`, valid for
/// `ttl` (at most [`MAX_TOKEN_TTL`]).
pub fn operator_token(
    private_pem: &str,
    kid: &str,
    issuer: &str,
    audience: &str,
    operator: &str,
    ttl: Duration,
) -> anyhow::Result<String> {
    anyhow::ensure!(
        !ttl.is_zero() && ttl <= MAX_TOKEN_TTL,
        "the token lifetime must be between 1 s and {} s",
        MAX_TOKEN_TTL.as_secs()
    );
    anyhow::ensure!(
        valid_operator_name(operator),
        "--operator: say who you are in 1..{MAX_OPERATOR_NAME_CHARS} printable characters \
         (the audit shows it)"
    );
    let key = SigningKey::from_pem(kid, private_pem)?;
    let caller = Caller {
        user_id: uuid::Uuid::now_v7(),
        role: Role::Operator,
        guest: false,
    };
    Ok(TokenIssuer::new(key, issuer, audience)
        .issue_named(&caller, Some(operator), ttl)?
        .token)
}

/// A `RoomStatus` from its short name (`waiting`, `in-progress`, `finished`, `closed`).
pub fn parse_status(name: &str) -> anyhow::Result<RoomStatus> {
    match name.replace('-', "_").to_ascii_lowercase().as_str() {
        "waiting" => Ok(RoomStatus::Waiting),
        "in_progress" => Ok(RoomStatus::InProgress),
        "finished" => Ok(RoomStatus::Finished),
        "closed" => Ok(RoomStatus::Closed),
        other => {
            anyhow::bail!("unknown room status {other:?}: waiting, in-progress, finished, closed")
        }
    }
}

/// Adds the operator token to every call.
#[derive(Clone)]
pub struct OperatorToken(MetadataValue<tonic::metadata::Ascii>);

impl OperatorToken {
    /// Sends `value` (`Bearer <token>`) as the `authorization` metadata.
    pub fn new(value: MetadataValue<tonic::metadata::Ascii>) -> OperatorToken {
        OperatorToken(value)
    }
}

impl tonic::service::Interceptor for OperatorToken {
    fn call(
        &mut self,
        mut request: tonic::Request<()>,
    ) -> Result<tonic::Request<()>, tonic::Status> {
        request
            .metadata_mut()
            .insert("authorization", self.0.clone());
        Ok(request)
    }
}

/// A GameAdmin client of the replica at `server`, calling with `token`.
pub struct Admin {
    client: GameAdminServiceClient<InterceptedService<Channel, OperatorToken>>,
}

impl Admin {
    /// Connects to `server` (a game-session replica: drains act on the one answering).
    pub async fn connect(server: &str, token: &str) -> anyhow::Result<Admin> {
        let channel = crate::tls::endpoint(server)?
            .connect_timeout(Duration::from_secs(5))
            .connect()
            .await
            .with_context(|| format!("cannot reach {server}"))?;
        let token = format!("Bearer {token}")
            .parse()
            .context("the token is not valid ASCII")?;
        Ok(Admin {
            client: GameAdminServiceClient::with_interceptor(channel, OperatorToken(token)),
        })
    }

    /// Every room matching the filters (all pages).
    pub async fn rooms(
        &self,
        status: Option<RoomStatus>,
        replica: &str,
        user_id: &str,
    ) -> anyhow::Result<Vec<RoomSummary>> {
        let mut rooms = Vec::new();
        let mut page_token = String::new();
        loop {
            let page = self
                .client
                .clone()
                .list_rooms(ListRoomsRequest {
                    status: status.map_or(0, |s| s as i32),
                    replica: replica.to_owned(),
                    user_id: user_id.to_owned(),
                    page_size: 100,
                    page_token,
                })
                .await?
                .into_inner();
            rooms.extend(page.rooms);
            if page.next_page_token.is_empty() {
                return Ok(rooms);
            }
            page_token = page.next_page_token;
        }
    }

    /// One room, its public view and its streams.
    pub async fn room(&self, room_id: &str) -> anyhow::Result<GetRoomResponse> {
        Ok(self
            .client
            .clone()
            .get_room(GetRoomRequest {
                room_id: room_id.to_owned(),
            })
            .await?
            .into_inner())
    }

    /// Closes a room (a running match ends with no winner).
    pub async fn close(&self, room_id: &str, reason: &str) -> anyhow::Result<CloseRoomResponse> {
        Ok(self
            .client
            .clone()
            .close_room(CloseRoomRequest {
                room_id: room_id.to_owned(),
                reason: reason.to_owned(),
            })
            .await?
            .into_inner())
    }

    /// Drains the replica answering (or the one named, which must be it).
    pub async fn drain(
        &self,
        replica: &str,
        deadline: Duration,
    ) -> anyhow::Result<DrainReplicaResponse> {
        Ok(self
            .client
            .clone()
            .drain_replica(DrainReplicaRequest {
                replica: replica.to_owned(),
                deadline: Some(prost_types::Duration {
                    seconds: deadline.as_secs() as i64,
                    nanos: 0,
                }),
            })
            .await?
            .into_inner())
    }

    /// Ends a drain of the replica answering (or the one named, which must be it).
    pub async fn undrain(&self, replica: &str) -> anyhow::Result<UndrainReplicaResponse> {
        Ok(self
            .client
            .clone()
            .undrain_replica(UndrainReplicaRequest {
                replica: replica.to_owned(),
            })
            .await?
            .into_inner())
    }
}

/// One line per room, under a header: what an operator scans.
pub fn rooms_table(rooms: &[RoomSummary]) -> String {
    let mut out = format!(
        "{:<38} {:<12} {:<8} {:>6} {:>9} {:>8} {:>8}\n",
        "ROOM", "STATUS", "RANKED", "ROUND", "TOTALS", "STREAMS", "SEQ"
    );
    for room in rooms {
        let status = RoomStatus::try_from(room.status)
            .map(|s| {
                s.as_str_name()
                    .trim_start_matches("ROOM_STATUS_")
                    .to_ascii_lowercase()
            })
            .unwrap_or_else(|_| room.status.to_string());
        let totals = room
            .totals
            .iter()
            .map(u32::to_string)
            .collect::<Vec<_>>()
            .join("-");
        out.push_str(&format!(
            "{:<38} {:<12} {:<8} {:>6} {:>9} {:>8} {:>8}\n",
            room.room_id,
            status,
            if room.ranked { "yes" } else { "no" },
            room.round,
            totals,
            room.streams,
            room.last_seq
        ));
    }
    out.push_str(&format!("{} rooms\n", rooms.len()));
    out
}
