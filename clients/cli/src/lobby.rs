//! Getting a seat: a quick match from the queue, a game against the computer, a private
//! room by code, or a public room from the lobby.

use basra_proto::basra::common::v1::{BotLevel, RoomVisibility, RuleSettings};
use basra_proto::basra::matchmaking::v1::{
    CreateRoomRequest, FindMatchRequest, JoinRoomRequest, ListPublicRoomsRequest, MatchPreset,
    PublicRoom, find_match_response::Update, join_room_request::Target,
};

use crate::session::Session;

/// A seat in a room, ready to play.
#[derive(Debug, Clone)]
pub struct Seated {
    /// The room.
    pub room_id: String,
    /// Our seat.
    pub seat: u32,
    /// The code friends join with (private rooms this client created).
    pub join_code: Option<String>,
}

/// How long the queue waits before the computer takes an empty seat (matchmaking's
/// default `queue.bot_fill_after_seconds`; the stream does not say).
pub const BOT_FILL_SECONDS: u64 = 20;

/// Queues for a match; `bots` lets a bot take the empty seat after a wait. The queue's
/// updates are told on stderr.
pub async fn quick_match(
    session: &Session,
    ranked: bool,
    bots: bool,
    seats: u32,
) -> anyhow::Result<Seated> {
    find_match(session, ranked, bots, seats, true).await
}

/// [`quick_match`], telling the queue's updates on stderr only when `announce`.
pub async fn find_match(
    session: &Session,
    ranked: bool,
    bots: bool,
    seats: u32,
    announce: bool,
) -> anyhow::Result<Seated> {
    let request = FindMatchRequest {
        ticket_id: uuid::Uuid::now_v7().to_string(),
        ranked,
        preset: Some(MatchPreset {
            seats: Some(seats),
            target_score: None,
        }),
        allow_bots: Some(bots),
    };
    let mut updates = session
        .with_refresh(|| {
            let (mut client, request) = (session.matchmaking(), request.clone());
            async move { client.find_match(request).await }
        })
        .await?
        .into_inner();
    let mut told_bots = false;
    while let Some(update) = updates.message().await? {
        match update.update {
            Some(Update::Queued(queued)) if announce => {
                let mut line = format!("queued: {} waiting", queued.players_waiting);
                if bots && !told_bots {
                    told_bots = true;
                    line.push_str(&format!(
                        "; if nobody comes, the computer takes the empty seat after about \
                         {BOT_FILL_SECONDS} s (--no-bots waits for a person)"
                    ));
                }
                eprintln!("{line}");
            }
            Some(Update::WindowWidened(window)) if announce => {
                eprintln!(
                    "looking for ratings {:.0}–{:.0}{}",
                    window.rating_min,
                    window.rating_max,
                    if window.bots_next {
                        " (a bot joins soon)"
                    } else {
                        ""
                    }
                );
            }
            Some(Update::Matched(matched)) => {
                return Ok(Seated {
                    room_id: matched.room_id,
                    seat: matched.seat,
                    join_code: None,
                });
            }
            Some(Update::Cancelled(cancelled)) => {
                anyhow::bail!("the search was cancelled ({:?})", cancelled.reason());
            }
            Some(Update::Queued(_) | Update::WindowWidened(_)) | None => {}
        }
    }
    anyhow::bail!("the matchmaking stream ended without a match")
}

/// Creates a room; `bot_seats` are filled by the computer at `bot_level`. Private rooms
/// get a join code.
pub async fn create_room(
    session: &Session,
    visibility: RoomVisibility,
    bot_seats: Vec<u32>,
    bot_level: BotLevel,
    settings: RuleSettings,
) -> anyhow::Result<Seated> {
    let request = CreateRoomRequest {
        request_id: uuid::Uuid::now_v7().to_string(),
        visibility: visibility as i32,
        settings: Some(settings),
        ranked: false,
        bot_seats,
        bot_level: bot_level as i32,
    };
    let created = session
        .with_refresh(|| {
            let (mut client, request) = (session.matchmaking(), request.clone());
            async move { client.create_room(request).await }
        })
        .await?
        .into_inner();
    Ok(Seated {
        room_id: created.room_id,
        seat: created.seat,
        join_code: (!created.join_code.is_empty()).then_some(created.join_code),
    })
}

/// Joins a private room by its code, or a public room by its id.
pub async fn join(session: &Session, target: Target) -> anyhow::Result<Seated> {
    let request = JoinRoomRequest {
        target: Some(target),
        preferred_seat: None,
    };
    let joined = session
        .with_refresh(|| {
            let (mut client, request) = (session.matchmaking(), request.clone());
            async move { client.join_room(request).await }
        })
        .await?
        .into_inner();
    Ok(Seated {
        room_id: joined.room_id,
        seat: joined.seat,
        join_code: None,
    })
}

/// The first page of open public rooms.
pub async fn public_rooms(session: &Session) -> anyhow::Result<Vec<PublicRoom>> {
    Ok(session
        .matchmaking()
        .list_public_rooms(ListPublicRoomsRequest {
            page_size: 20,
            ..Default::default()
        })
        .await?
        .into_inner()
        .rooms)
}

/// The room the caller is still seated in, when `error` is the refusal that says so
/// (FAILED_PRECONDITION with `google.rpc.ErrorInfo` reason `SEATED_IN_UNFINISHED_MATCH`,
/// metadata `room_id`).
pub fn seated_room(error: &anyhow::Error) -> Option<String> {
    let status = error.downcast_ref::<tonic::Status>()?;
    if status.code() != tonic::Code::FailedPrecondition
        || basra_platform::error::reason_of(status).as_deref() != Some("SEATED_IN_UNFINISHED_MATCH")
    {
        return None;
    }
    basra_platform::error::error_metadata_of(status, "room_id")
}
