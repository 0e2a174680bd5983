//! The browser shape of `Play`: `Watch`, a server stream, and one unary call per action
//! (`PlayCard`, `Resign`, `QuickChat`, `AskRematch`), for clients without client
//! streaming (gRPC-Web in a browser).
//!
//! Nothing here decides anything: `Watch` is the Play stream's `Session::open`
//! with no client messages, and each call is `actions::act`, the same
//! per-message logic the Play stream runs, with its answer turned into a response or a
//! status (with the refusal's code in the `basra-reject-code` metadata).

use std::pin::Pin;

use basra_platform::auth;
use basra_proto::basra::game::v1::{self as game, RejectCode, WatchResponse, play_request::Kind};
use tokio_stream::{Stream, StreamExt as _};
use tonic::metadata::MetadataValue;
use tonic::{Code, Request, Response, Status};

use crate::api::GameApi;
use crate::error::GameError;
use crate::replica::StreamKind;
use crate::room::actions::{self, Acted, Refusal};
use crate::stream::Session;

/// The metadata key naming a refused action's [`RejectCode`].
pub const REJECT_CODE_KEY: &str = "basra-reject-code";

/// What `Watch` answers.
pub type WatchStream = Pin<Box<dyn Stream<Item = Result<WatchResponse, Status>> + Send>>;

/// `GameService.Watch`: the Play stream of `request`'s join, without client messages.
#[tracing::instrument(skip_all, fields(user_id, room_id = %request.get_ref().room_id))]
pub(crate) async fn watch(
    service: &GameApi,
    request: Request<game::WatchRequest>,
) -> Result<Response<WatchStream>, Status> {
    let caller = auth::player(&request)?;
    let user_id = caller.user_id.to_string();
    tracing::Span::current().record("user_id", user_id.as_str());
    let permit = service.replica().admit(caller.user_id, StreamKind::Watch)?;
    let request = request.into_inner();
    let join = game::Join {
        room_id: request.room_id,
        last_seen_seq: request.last_seen_seq,
        spectate: request.spectate,
    };
    let events = Session::open(
        &service.replica,
        &service.chat,
        &user_id,
        join,
        None,
        permit,
    )
    .await?;
    let responses = events.map(|event| {
        crate::stream::response::message_of(event).map(|event| WatchResponse { event: Some(event) })
    });
    Ok(Response::new(Box::pin(responses)))
}

/// `GameService.PlayCard`: Play's `play_card`.
#[tracing::instrument(skip_all, fields(user_id, room_id = %request.get_ref().room_id))]
pub(crate) async fn play_card(
    service: &GameApi,
    request: Request<game::PlayCardRequest>,
) -> Result<Response<game::PlayCardResponse>, Status> {
    let (user_id, request) = caller_and(request)?;
    let play = game::PlayCard {
        card: request.card,
        capture_choice: request.capture_choice,
        based_on_seq: request.based_on_seq,
        client_move_id: request.client_move_id,
    };
    let response = match act(service, &user_id, &request.room_id, Kind::PlayCard(play)).await? {
        Ok(seq) => game::PlayCardResponse {
            seq,
            already_applied: false,
        },
        Err(refusal) if refusal.code == RejectCode::AlreadyApplied => game::PlayCardResponse {
            seq: refusal.applied_seq.unwrap_or_default(),
            already_applied: true,
        },
        Err(refusal) => return Err(refusal_status(&refusal)),
    };
    Ok(Response::new(response))
}

/// `GameService.Resign`: Play's `resign`.
#[tracing::instrument(skip_all, fields(user_id, room_id = %request.get_ref().room_id))]
pub(crate) async fn resign(
    service: &GameApi,
    request: Request<game::ResignRequest>,
) -> Result<Response<game::ResignResponse>, Status> {
    let (user_id, request) = caller_and(request)?;
    let seq = act(
        service,
        &user_id,
        &request.room_id,
        Kind::Resign(game::Resign {}),
    )
    .await?
    .map_err(|refusal| refusal_status(&refusal))?;
    Ok(Response::new(game::ResignResponse { seq }))
}

/// `GameService.QuickChat`: Play's `quick_chat`.
#[tracing::instrument(skip_all, fields(user_id, room_id = %request.get_ref().room_id))]
pub(crate) async fn quick_chat(
    service: &GameApi,
    request: Request<game::QuickChatRequest>,
) -> Result<Response<game::QuickChatResponse>, Status> {
    let (user_id, request) = caller_and(request)?;
    let chat = game::QuickChat {
        phrase: request.phrase,
    };
    let seq = act(service, &user_id, &request.room_id, Kind::QuickChat(chat))
        .await?
        .map_err(|refusal| refusal_status(&refusal))?;
    Ok(Response::new(game::QuickChatResponse { seq }))
}

/// `GameService.AskRematch`: Play's `rematch`.
#[tracing::instrument(skip_all, fields(user_id, room_id = %request.get_ref().room_id))]
pub(crate) async fn ask_rematch(
    service: &GameApi,
    request: Request<game::AskRematchRequest>,
) -> Result<Response<game::AskRematchResponse>, Status> {
    let (user_id, request) = caller_and(request)?;
    let kind = Kind::Rematch(game::RematchRequest {});
    let seq = act(service, &user_id, &request.room_id, kind)
        .await?
        .map_err(|refusal| refusal_status(&refusal))?;
    Ok(Response::new(game::AskRematchResponse { seq }))
}

/// The caller's user id, recorded on the span, and the request.
fn caller_and<T>(request: Request<T>) -> Result<(String, T), Status> {
    let user_id = auth::player(&request)?.user_id.to_string();
    tracing::Span::current().record("user_id", user_id.as_str());
    Ok((user_id, request.into_inner()))
}

/// The caller's action in `room_id` from their seat: the seq of its first event, or
/// why it was refused. A status when it could not be tried at all (no such room, no
/// seat, the store failing).
async fn act(
    service: &GameApi,
    user_id: &str,
    room_id: &str,
    kind: Kind,
) -> Result<Result<u64, Refusal>, Status> {
    if room_id.is_empty() || room_id.len() > 128 {
        return Err(GameError::Invalid("room_id must be 1..128 characters".into()).into());
    }
    let replica = service.replica();
    let loaded = replica
        .store
        .load(room_id)
        .await?
        .ok_or_else(|| GameError::RoomNotFound(room_id.to_owned()))?;
    let seat = loaded
        .room
        .seat_of(user_id)
        .ok_or_else(|| GameError::Denied("you have no seat in this room".into()))?;
    Ok(
        match actions::act(replica, service.chat(), room_id, seat, kind).await? {
            Acted::Done(committed) => {
                Ok(actions::first_seq(&committed.room, &committed.batch.events))
            }
            Acted::Refused(refusal) => Err(refusal),
        },
    )
}

/// The status a refused action answers: the code Play's `RejectCode` documents, the
/// refusal's message, and its code by name as `google.rpc.ErrorInfo.reason` (domain
/// `basra.online`) and, for one more release, in the `basra-reject-code` metadata.
fn refusal_status(refusal: &Refusal) -> Status {
    let code = match refusal.code {
        RejectCode::Malformed => Code::InvalidArgument,
        RejectCode::NotSeated => Code::PermissionDenied,
        RejectCode::RateLimited => Code::ResourceExhausted,
        RejectCode::NotYourTurn
        | RejectCode::CardNotInHand
        | RejectCode::IllegalCapture
        | RejectCode::Stale
        | RejectCode::NotInProgress
        | RejectCode::AlreadyApplied
        | RejectCode::Unspecified => Code::FailedPrecondition,
    };
    let mut status = basra_platform::error::status_with_reason(
        code,
        refusal.message.clone(),
        refusal.code.as_str_name(),
    );
    status.metadata_mut().insert(
        REJECT_CODE_KEY,
        MetadataValue::from_static(refusal.code.as_str_name()),
    );
    status
}
