//! The `basra.matchmaking.v1.MatchmakingService` gRPC service.

use std::{collections::HashMap, pin::Pin, sync::Arc, sync::Mutex, time::Duration};

use basra_platform::presence::{Doing, PresenceGuard};
use basra_platform::{Caller, auth};
use basra_proto::{
    basra::{
        common::v1 as common,
        game::v1 as game,
        matchmaking::v1::{
            self as mm, CancelFindRequest, CancelFindResponse, CreateRoomRequest,
            CreateRoomResponse, FindMatchRequest, FindMatchResponse, InviteFriendRequest,
            InviteFriendResponse, JoinRoomRequest, JoinRoomResponse, ListPublicRoomsRequest,
            ListPublicRoomsResponse, find_match_response::Update, join_room_request::Target,
            matchmaking_service_server::MatchmakingService,
        },
    },
    convert::{bot_display_name, player_display_name, settings_from_pb, settings_to_pb},
};
use tokio::sync::mpsc;
use tokio_stream::{Stream, wrappers::ReceiverStream};
use tokio_util::sync::CancellationToken;
use tonic::{Request, Response, Status};
use uuid::Uuid;

mod invite;

use crate::{
    Config, Deps,
    clock::Millis,
    domain::{self, Format, new_join_code, normalize_join_code, sets_more_than_format},
    error::{MatchmakingError, Result},
    store::{
        CancelCause, CancelOutcome, LobbyFilter, MatchRecord, NewTicket, Occupant, RoomRecord,
        TakeSeat, TicketState, TicketView,
    },
    upstream::is_transient,
};

/// Streams of this replica, by ticket id: poked when their ticket changes.
#[derive(Debug, Default)]
pub(crate) struct Hub {
    streams: Mutex<HashMap<String, mpsc::Sender<()>>>,
}

impl Hub {
    fn register(&self, id: &str) -> mpsc::Receiver<()> {
        let (tx, rx) = mpsc::channel(1);
        self.lock().insert(id.to_owned(), tx);
        rx
    }

    fn remove(&self, id: &str) {
        self.lock().remove(id);
    }

    /// Wakes the stream of `id`, if it is here.
    pub(crate) fn poke(&self, id: &str) {
        if let Some(tx) = self.lock().get(id) {
            // Full means a wake-up is already pending: enough.
            let _ = tx.try_send(());
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, mpsc::Sender<()>>> {
        self.streams.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// What every handler and background task shares.
pub(crate) struct Inner {
    pub(crate) config: Config,
    pub(crate) deps: Deps,
    pub(crate) hub: Hub,
    pub(crate) shutdown: CancellationToken,
}

impl Inner {
    pub(crate) fn now(&self) -> Millis {
        self.deps.clock.now_ms()
    }
}

/// The Matchmaking service; clone freely.
#[derive(Clone)]
pub struct MatchmakingApi {
    pub(crate) inner: Arc<Inner>,
}

/// The most characters of a client-chosen id.
const MAX_ID_LEN: usize = 64;
/// Lobby rooms looked at per ListPublicRooms call (bounds the work of a
/// very selective filter; the page token continues from there).
const LOBBY_SCAN_CAP: usize = 1000;

fn check_client_id(what: &str, id: &str) -> Result<()> {
    if id.len() > MAX_ID_LEN
        || !id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    {
        return Err(MatchmakingError::InvalidArgument(format!(
            "{what} must be at most {MAX_ID_LEN} characters of A-Z, a-z, 0-9, '-' and '_'"
        )));
    }
    Ok(())
}

/// The display names of the players in `seats` (user id → name); none when
/// accounts cannot say right now (the seats then show "Player N").
pub(crate) async fn names_of<'a>(
    inner: &Inner,
    seats: impl IntoIterator<Item = &'a Occupant>,
) -> HashMap<String, String> {
    let mut users: Vec<String> = seats
        .into_iter()
        .filter_map(|o| match o {
            Occupant::Player { user_id, .. } => Some(user_id.clone()),
            _ => None,
        })
        .collect();
    users.sort_unstable();
    users.dedup();
    inner
        .deps
        .names
        .names(&users)
        .await
        .inspect_err(|err| tracing::warn!(error = %err, "players' names unavailable"))
        .unwrap_or_default()
}

fn seat_infos(
    seats: &[Occupant],
    seat_count: usize,
    names: &HashMap<String, String>,
) -> Vec<common::SeatInfo> {
    seats
        .iter()
        .enumerate()
        .map(|(i, o)| {
            let seat = i as u32;
            let side = if seat_count == 4 { seat % 2 } else { seat };
            let mut info = common::SeatInfo {
                seat,
                side,
                ..Default::default()
            };
            match o {
                Occupant::Open => info.occupant = common::SeatOccupant::Open as i32,
                Occupant::Bot { level } => {
                    info.occupant = common::SeatOccupant::Bot as i32;
                    info.bot_level = *level;
                    info.display_name = bot_display_name(*level);
                    info.connected = true;
                }
                Occupant::Player {
                    user_id,
                    guest,
                    rating,
                } => {
                    info.occupant = common::SeatOccupant::Player as i32;
                    info.user_id = user_id.clone();
                    info.display_name =
                        player_display_name(names.get(user_id).map_or("", String::as_str), i);
                    info.is_guest = *guest;
                    info.rating = *rating;
                }
            }
            info
        })
        .collect()
}

/// The API form of a match record.
pub(crate) fn matched_proto(record: &MatchRecord, names: &HashMap<String, String>) -> mm::Matched {
    mm::Matched {
        room_id: record.room_id.clone(),
        seat: record.seat,
        ranked: record.ranked,
        settings: Some(settings_to_pb(&record.settings)),
        seats: seat_infos(&record.seats, record.seats.len(), names),
    }
}

fn proto_duration(ms: Millis) -> prost_types::Duration {
    prost_types::Duration {
        seconds: ms.div_euclid(1000),
        nanos: (ms.rem_euclid(1000) * 1_000_000) as i32,
    }
}

fn update(ticket_id: &str, update: Update) -> FindMatchResponse {
    FindMatchResponse {
        ticket_id: ticket_id.to_owned(),
        update: Some(update),
    }
}

fn cancelled(reason: mm::CancelReason) -> Update {
    Update::Cancelled(mm::Cancelled {
        reason: reason as i32,
    })
}

fn game_error(status: Status, context: &'static str) -> MatchmakingError {
    if is_transient(&status) {
        tracing::warn!(error = %status, context, "game-session unavailable");
        MatchmakingError::Unavailable("game-session is unavailable: retry shortly".into())
    } else {
        MatchmakingError::Upstream { context, status }
    }
}

/// How long matchmaking remembers the room a player sits in: longer than any
/// match lasts (turn timers end an abandoned one).
pub(crate) const PLAYER_ROOM_TTL_MS: Millis = 24 * 3_600_000;

/// The FindMatch stream type.
pub type FindMatchStream = Pin<Box<dyn Stream<Item = Result<FindMatchResponse, Status>> + Send>>;

impl MatchmakingApi {
    fn format_of(&self, request: &FindMatchRequest) -> Result<Format> {
        let preset = request.preset.unwrap_or_default();
        let seats = preset.seats.unwrap_or(2);
        if seats != 2 && seats != 4 {
            return Err(MatchmakingError::InvalidArgument(format!(
                "preset.seats must be 2 or 4, not {seats}"
            )));
        }
        let target = preset.target_score.unwrap_or(101);
        let offered = &self.inner.config.queue.target_scores;
        if !offered.contains(&target) {
            return Err(MatchmakingError::InvalidArgument(format!(
                "preset.target_score {target} is not offered; the queue offers {offered:?}"
            )));
        }
        Ok(Format {
            ranked: request.ranked,
            seats: seats as u8,
            target_score: target,
        })
    }

    fn check_ranked_allowed(&self, caller: &Caller) -> Result<()> {
        if caller.guest && !self.inner.config.queue.guests_may_play_ranked {
            return Err(MatchmakingError::PermissionDenied(
                "guest accounts may not play ranked: register first".into(),
            ));
        }
        Ok(())
    }

    /// Refuses a player who is still seated in an unfinished match (a room
    /// waiting for players or being played), other than `except`. Which room
    /// a player sits in is remembered here; whether its match is finished,
    /// game-session says.
    async fn ensure_not_seated(&self, user: &str, except: Option<&str>) -> Result<()> {
        let inner = &self.inner;
        let Some(room_id) = inner.deps.store.player_room(user).await? else {
            return Ok(());
        };
        if except == Some(room_id.as_str()) {
            return Ok(());
        }
        let answer = inner
            .deps
            .game
            .get_seat(game::GetSeatRequest {
                room_id: room_id.clone(),
                user_id: user.to_owned(),
            })
            .await;
        let seat = match answer {
            Ok(seat) => seat,
            Err(status) if status.code() == tonic::Code::NotFound => return Ok(()),
            Err(status) => return Err(game_error(status, "game-session GetSeat")),
        };
        let unfinished = matches!(
            common::RoomStatus::try_from(seat.status),
            Ok(common::RoomStatus::Waiting | common::RoomStatus::InProgress)
        );
        if unfinished && seat.seat.is_some() {
            return Err(MatchmakingError::FailedPrecondition(format!(
                "you are seated in room {room_id}, whose match is not finished: \
                 play it out or resign (or leave it, before it starts) first"
            )));
        }
        Ok(())
    }

    /// Remembers where a player sits, for [`ensure_not_seated`](Self::ensure_not_seated).
    async fn remember_seat(&self, user: &str, room_id: &str) -> Result<()> {
        self.inner
            .deps
            .store
            .set_player_room(user, room_id, PLAYER_ROOM_TTL_MS)
            .await
    }

    fn player(caller: Caller) -> Result<Caller> {
        if caller.role != basra_platform::Role::Player {
            return Err(MatchmakingError::PermissionDenied(
                "matchmaking is for players: this token is not a player's".into(),
            ));
        }
        Ok(caller)
    }

    async fn find_match_inner(
        &self,
        caller: Caller,
        request: FindMatchRequest,
    ) -> Result<FindMatchStream> {
        let inner = &self.inner;
        let format = self.format_of(&request)?;
        if format.ranked {
            self.check_ranked_allowed(&caller)?;
        }
        let ticket_id = if request.ticket_id.is_empty() {
            Uuid::now_v7().to_string()
        } else {
            check_client_id("ticket_id", &request.ticket_id)?;
            request.ticket_id.clone()
        };
        // Resuming one's own live search is always allowed (it may have
        // matched meanwhile, and then the player sits in that match).
        let resuming = !request.ticket_id.is_empty()
            && inner
                .deps
                .store
                .poll(&ticket_id, inner.now(), inner.config.queue.ttl_ms())
                .await?
                .is_some_and(|t| {
                    t.user_id == caller.user_id.to_string()
                        && !matches!(t.state, TicketState::Cancelled(_))
                });
        if !resuming {
            self.ensure_not_seated(&caller.user_id.to_string(), None)
                .await?;
        }
        // The rating (ranked) and whom the player blocks (every queue: players who
        // block each other are never grouped).
        let searcher = inner
            .deps
            .ratings
            .searcher(&caller.user_id.to_string(), format.ranked)
            .await?;
        let allow_bots = request.allow_bots.unwrap_or(!format.ranked);
        let wake = inner.hub.register(&ticket_id);
        let q = &inner.config.queue;
        let enqueued = inner
            .deps
            .store
            .enqueue(
                NewTicket {
                    id: ticket_id.clone(),
                    user_id: caller.user_id.to_string(),
                    guest: caller.guest,
                    format,
                    rating: searcher.rating,
                    allow_bots,
                    blocks: searcher.blocks,
                },
                inner.now(),
                q.ttl_ms(),
                q.grace_ms(),
            )
            .await
            .inspect_err(|_| inner.hub.remove(&ticket_id))?;
        if !enqueued.resumed {
            inner.deps.metrics.ticket();
        }
        tracing::debug!(ticket = %ticket_id, resumed = enqueued.resumed, format = %format.key(), "queued");
        let (tx, rx) = mpsc::channel(8);
        // Friends see the player searching while the stream lasts.
        let presence = inner
            .deps
            .presence
            .start(&caller.user_id.to_string(), Doing::Queue);
        tokio::spawn(run_stream(
            self.inner.clone(),
            ticket_id,
            enqueued.view,
            wake,
            tx,
            presence,
        ));
        Ok(Box::pin(ReceiverStream::new(rx)))
    }

    async fn create_room_inner(
        &self,
        caller: Caller,
        request: CreateRoomRequest,
    ) -> Result<CreateRoomResponse> {
        let inner = &self.inner;
        let settings = settings_from_pb(request.settings.as_ref())?;
        let seat_count = u32::from(settings.seat_count());
        if request.ranked {
            if sets_more_than_format(request.settings.as_ref()) {
                return Err(MatchmakingError::InvalidArgument(
                    "ranked rooms accept only seats and target_score among the settings".into(),
                ));
            }
            if !request.bot_seats.is_empty() {
                return Err(MatchmakingError::InvalidArgument(
                    "ranked rooms cannot have bot seats".into(),
                ));
            }
            self.check_ranked_allowed(&caller)?;
        }
        let mut bots = request.bot_seats.clone();
        bots.sort_unstable();
        bots.dedup();
        if bots.len() != request.bot_seats.len() || bots.iter().any(|s| *s == 0 || *s >= seat_count)
        {
            return Err(MatchmakingError::InvalidArgument(format!(
                "bot_seats must be distinct seats between 1 and {}",
                seat_count - 1
            )));
        }
        let bot_level = common::BotLevel::try_from(request.bot_level).map_err(|_| {
            MatchmakingError::InvalidArgument("bot_level is not a known value".into())
        })?;
        let public = match common::RoomVisibility::try_from(request.visibility) {
            Ok(common::RoomVisibility::Public) => true,
            Ok(_) => false,
            Err(_) => {
                return Err(MatchmakingError::InvalidArgument(
                    "visibility is not a known value".into(),
                ));
            }
        };
        let user = caller.user_id.to_string();
        let mut room_id = Uuid::now_v7().to_string();
        if !request.request_id.is_empty() {
            check_client_id("request_id", &request.request_id)?;
            room_id = inner
                .deps
                .store
                .claim_request(&user, &request.request_id, &room_id)
                .await?;
            if let Some(room) = inner.deps.store.room(&room_id).await? {
                return Ok(CreateRoomResponse {
                    room_id: room.id,
                    join_code: room.code,
                    seat: 0,
                    settings: Some(settings_to_pb(&room.settings)),
                    expires_at: expiry_to_pb(room.expires_ms),
                });
            }
        }
        if inner.deps.store.queued_ticket(&user).await?.is_some() {
            return Err(MatchmakingError::FailedPrecondition(
                "you are in the queue: cancel the search (CancelFind) before creating a room"
                    .into(),
            ));
        }
        self.ensure_not_seated(&user, None).await?;
        let mut code = None;
        for _ in 0..16 {
            let candidate = new_join_code();
            if inner.deps.store.claim_code(&candidate, &room_id).await? {
                code = Some(candidate);
                break;
            }
        }
        let code = code.ok_or_else(|| {
            MatchmakingError::ResourceExhausted("no free join code found: retry".into())
        })?;
        let seats: Vec<Occupant> = (0..seat_count)
            .map(|seat| {
                if seat == 0 {
                    Occupant::Player {
                        user_id: user.clone(),
                        guest: caller.guest,
                        rating: None,
                    }
                } else if bots.contains(&seat) {
                    Occupant::Bot {
                        level: bot_level as i32,
                    }
                } else {
                    Occupant::Open
                }
            })
            .collect();
        let response = inner
            .deps
            .game
            .create_room(game::CreateRoomRequest {
                room_id: room_id.clone(),
                seats: seats.iter().map(seat_assignment).collect(),
                settings: Some(settings_to_pb(&settings)),
                ranked: request.ranked,
                allow_spectators: public,
                visibility: if public {
                    common::RoomVisibility::Public
                } else {
                    common::RoomVisibility::Private
                } as i32,
            })
            .await
            .map_err(|status| game_error(status, "game-session CreateRoom"))?;
        let settings = response
            .settings
            .as_ref()
            .and_then(|s| settings_from_pb(Some(s)).ok())
            .unwrap_or(settings);
        let now = inner.now();
        let room = RoomRecord {
            id: room_id.clone(),
            owner: user,
            settings,
            ranked: request.ranked,
            public,
            code: code.clone(),
            created_ms: now,
            expires_ms: now + inner.config.rooms.ttl_ms(),
            seats,
            status: Default::default(),
            list_seq: 0,
        };
        inner.deps.store.insert_room(&room).await?;
        self.remember_seat(&room.owner, &room_id).await?;
        tracing::info!(room = %room_id, public, ranked = request.ranked, "room created");
        Ok(CreateRoomResponse {
            room_id,
            join_code: code,
            seat: 0,
            settings: Some(settings_to_pb(&settings)),
            expires_at: expiry_to_pb(room.expires_ms),
        })
    }

    async fn join_room_inner(
        &self,
        caller: Caller,
        request: JoinRoomRequest,
    ) -> Result<JoinRoomResponse> {
        let inner = &self.inner;
        let store = &inner.deps.store;
        let user = caller.user_id.to_string();
        let not_found = || MatchmakingError::NotFound("no such room or join code".into());
        let room_id = match request.target {
            None => {
                return Err(MatchmakingError::InvalidArgument(
                    "give a room_id or a join_code".into(),
                ));
            }
            Some(Target::RoomId(id)) => {
                if id.is_empty() {
                    return Err(MatchmakingError::InvalidArgument(
                        "give a room_id or a join_code".into(),
                    ));
                }
                match store.room(&id).await? {
                    Some(room) if room.public => id,
                    _ => return Err(not_found()),
                }
            }
            Some(Target::JoinCode(code)) => {
                let code = normalize_join_code(&code).ok_or_else(|| {
                    MatchmakingError::InvalidArgument(format!(
                        "a join code is {} characters of A-Z and 2-9",
                        domain::CODE_LENGTH
                    ))
                })?;
                let rooms = &inner.config.rooms;
                let window_ms = (rooms.wrong_code_window_seconds * 1000) as i64;
                let bucket = inner.now() / window_ms;
                if store.wrong_codes(&user, bucket).await? >= rooms.wrong_code_max {
                    return Err(MatchmakingError::ResourceExhausted(
                        "too many wrong join codes: wait a few minutes".into(),
                    ));
                }
                match store.room_by_code(&code).await? {
                    Some(id) => id,
                    None => {
                        store.add_wrong_code(&user, bucket, window_ms * 2).await?;
                        return Err(not_found());
                    }
                }
            }
        };
        let room = store.room(&room_id).await?.ok_or_else(not_found)?;
        if room.ranked {
            self.check_ranked_allowed(&caller)?;
        }
        self.ensure_not_seated(&user, Some(&room_id)).await?;
        let (seat, fresh) = match store
            .take_seat(&room_id, &user, caller.guest, request.preferred_seat)
            .await?
        {
            TakeSeat::Seated { seat, .. } => (seat, true),
            TakeSeat::Already { seat } => (seat, false),
            TakeSeat::NotFound => return Err(not_found()),
            TakeSeat::Full => {
                return Err(MatchmakingError::FailedPrecondition(
                    "the room is full: its match has started".into(),
                ));
            }
            TakeSeat::Closed => {
                return Err(MatchmakingError::FailedPrecondition(
                    "the room is closed".into(),
                ));
            }
            TakeSeat::SeatTaken => {
                return Err(MatchmakingError::FailedPrecondition(
                    "the preferred seat is taken".into(),
                ));
            }
            TakeSeat::NoSuchSeat => {
                return Err(MatchmakingError::InvalidArgument(format!(
                    "preferred_seat must be below {}",
                    room.settings.seat_count()
                )));
            }
        };
        // Seat in game-session too (idempotent there, so a retry after a
        // crash between the two steps completes the join).
        let seated = inner
            .deps
            .game
            .seat_player(game::SeatPlayerRequest {
                room_id: room_id.clone(),
                user_id: user.clone(),
                preferred_seat: Some(seat),
            })
            .await;
        if let Err(status) = seated {
            if status.code() == tonic::Code::NotFound {
                store.close_room(&room_id).await?;
                return Err(MatchmakingError::FailedPrecondition(
                    "the room is closed".into(),
                ));
            }
            if fresh {
                store.free_seat(&room_id, seat, &user).await?;
            }
            if status.code() == tonic::Code::FailedPrecondition {
                return Err(MatchmakingError::FailedPrecondition(format!(
                    "game-session refused the seat: {}",
                    status.message()
                )));
            }
            return Err(game_error(status, "game-session SeatPlayer"));
        }
        self.remember_seat(&user, &room_id).await?;
        Ok(JoinRoomResponse {
            room_id,
            seat,
            settings: Some(settings_to_pb(&room.settings)),
            ranked: room.ranked,
        })
    }

    async fn list_inner(&self, request: ListPublicRoomsRequest) -> Result<ListPublicRoomsResponse> {
        let seats = match request.seats {
            None => None,
            Some(s @ (2 | 4)) => Some(s as u8),
            Some(s) => {
                return Err(MatchmakingError::InvalidArgument(format!(
                    "the seats filter must be 2 or 4, not {s}"
                )));
            }
        };
        if request.target_score == Some(0) {
            return Err(MatchmakingError::InvalidArgument(
                "the target_score filter must be positive".into(),
            ));
        }
        let after = if request.page_token.is_empty() {
            0
        } else {
            request.page_token.parse::<u64>().map_err(|_| {
                MatchmakingError::InvalidArgument(
                    "page_token is not one this server gave out".into(),
                )
            })?
        };
        let size = match request.page_size {
            0 => 20,
            n => n.min(100) as usize,
        };
        let page = self
            .inner
            .deps
            .store
            .list_public(
                LobbyFilter {
                    seats,
                    target_score: request.target_score,
                    ranked: request.ranked,
                },
                after,
                size,
                LOBBY_SCAN_CAP,
            )
            .await?;
        let names = names_of(&self.inner, page.rooms.iter().flat_map(|r| &r.seats)).await;
        Ok(ListPublicRoomsResponse {
            rooms: page
                .rooms
                .iter()
                .map(|room| mm::PublicRoom {
                    room_id: room.id.clone(),
                    settings: Some(settings_to_pb(&room.settings)),
                    ranked: room.ranked,
                    seats: seat_infos(&room.seats, room.seats.len(), &names),
                    created_at: Some(millis_to_pb(room.created_ms)),
                    expires_at: expiry_to_pb(room.expires_ms),
                })
                .collect(),
            next_page_token: page.next.map(|n| n.to_string()).unwrap_or_default(),
        })
    }
}

/// A time in milliseconds since the epoch, as the API's timestamp.
fn millis_to_pb(ms: Millis) -> prost_types::Timestamp {
    prost_types::Timestamp {
        seconds: ms.div_euclid(1000),
        nanos: (ms.rem_euclid(1000) * 1_000_000) as i32,
    }
}

/// A room's expiry as the API says it (absent for a room that never expires).
fn expiry_to_pb(expires_ms: Millis) -> Option<prost_types::Timestamp> {
    (expires_ms > 0).then(|| millis_to_pb(expires_ms))
}

/// game-session's form of a seat.
pub(crate) fn seat_assignment(o: &Occupant) -> game::SeatAssignment {
    use game::seat_assignment::Occupant as G;
    game::SeatAssignment {
        occupant: Some(match o {
            Occupant::Open => G::Open(game::OpenSeat {}),
            Occupant::Bot { level } => G::Bot(game::BotSeat { level: *level }),
            Occupant::Player { user_id, .. } => G::UserId(user_id.clone()),
        }),
    }
}

/// One FindMatch stream: sends updates until matched, cancelled, gone or
/// shut down; detaches the ticket when the client goes away.
async fn run_stream(
    inner: Arc<Inner>,
    id: String,
    first: TicketView,
    mut wake: mpsc::Receiver<()>,
    tx: mpsc::Sender<Result<FindMatchResponse, Status>>,
    _presence: PresenceGuard,
) {
    let q = &inner.config.queue;
    let window = q.window();
    let heartbeat = Duration::from_millis(q.heartbeat_millis);
    let mut last_position = None;
    let mut last_width: Option<f64> = None;
    let mut view = Some(first);
    loop {
        let now = inner.now();
        // What to send, and whether the stream ends with it.
        let (message, done): (Option<Result<FindMatchResponse, Status>>, bool) = match &view {
            None => (
                Some(Ok(update(&id, cancelled(mm::CancelReason::Timeout)))),
                true,
            ),
            Some(v) => match &v.state {
                TicketState::Matched(record) => {
                    inner
                        .deps
                        .metrics
                        .observe_wait(&v.format.key(), now, now - v.enqueued_ms);
                    let names = names_of(&inner, &record.seats).await;
                    (
                        Some(Ok(update(
                            &id,
                            Update::Matched(matched_proto(record, &names)),
                        ))),
                        true,
                    )
                }
                TicketState::Cancelled(cause) => {
                    let reason = match cause {
                        CancelCause::ByClient => mm::CancelReason::ByClient,
                        CancelCause::Timeout => mm::CancelReason::Timeout,
                        CancelCause::Superseded => mm::CancelReason::Superseded,
                        CancelCause::RoomUnavailable => mm::CancelReason::RoomUnavailable,
                    };
                    (Some(Ok(update(&id, cancelled(reason)))), true)
                }
                TicketState::Queued if v.unavailable => (
                    Some(Err(Status::unavailable(
                        "game-session is unavailable: call FindMatch again with the same \
                         ticket_id to keep your place",
                    ))),
                    true,
                ),
                TicketState::Queued => {
                    if !v.attached {
                        // Another stream of this ticket (an older connection
                        // the server only now saw die) detached it: this
                        // stream is the live one, so take it back.
                        let resume = NewTicket {
                            id: id.clone(),
                            user_id: v.user_id.clone(),
                            guest: false,
                            format: v.format,
                            rating: v.rating,
                            allow_bots: v.allow_bots,
                            // A resume keeps the blocks the ticket was queued with.
                            blocks: Vec::new(),
                        };
                        let _ = inner
                            .deps
                            .store
                            .enqueue(resume, now, q.ttl_ms(), q.grace_ms())
                            .await;
                    }
                    if now - v.enqueued_ms > (q.max_wait_seconds * 1000) as i64 {
                        let _ = inner
                            .deps
                            .store
                            .cancel(&v.user_id, &id, CancelCause::Timeout, now, q.grace_ms())
                            .await;
                    }
                    let position = (v.position, v.waiting);
                    if last_position != Some(position) {
                        last_position = Some(position);
                        (
                            Some(Ok(update(
                                &id,
                                Update::Queued(mm::Queued {
                                    position: v.position,
                                    players_waiting: v.waiting,
                                    estimated_wait: inner
                                        .deps
                                        .metrics
                                        .estimated_wait(&v.format.key(), now, now - v.enqueued_ms)
                                        .map(proto_duration),
                                }),
                            ))),
                            false,
                        )
                    } else if v.format.ranked {
                        let waited = now - v.enqueued_ms;
                        let width = window.width(waited);
                        let grew = last_width.is_some_and(|w| width > w + 0.5);
                        if last_width.is_none() {
                            last_width = Some(width);
                        }
                        if grew {
                            last_width = Some(width);
                            let bots_next = v.allow_bots
                                && waited + heartbeat.as_millis() as i64
                                    >= q.bot_fill_after_seconds as i64 * 1000;
                            (
                                Some(Ok(update(
                                    &id,
                                    Update::WindowWidened(mm::WindowWidened {
                                        rating_min: v.rating - width,
                                        rating_max: v.rating + width,
                                        bots_next,
                                    }),
                                ))),
                                false,
                            )
                        } else {
                            (None, false)
                        }
                    } else {
                        (None, false)
                    }
                }
                // Its room could not be confirmed: the group keeps it and
                // tries again; a resumed stream waits for it.
                TicketState::Pending if v.unavailable => (
                    Some(Err(Status::unavailable(
                        "game-session is unavailable: call FindMatch again with the same \
                         ticket_id to get the room being made for you",
                    ))),
                    true,
                ),
                TicketState::Pending => (None, false),
            },
        };
        if let Some(message) = message
            && tx.send(message).await.is_err()
        {
            // The client left while we were sending.
            let _ = inner
                .deps
                .store
                .detach(&id, inner.now(), q.grace_ms())
                .await;
            break;
        }
        if done {
            break;
        }
        tokio::select! {
            () = tx.closed() => {
                if let Err(err) = inner.deps.store.detach(&id, inner.now(), q.grace_ms()).await {
                    tracing::warn!(ticket = %id, error = %err, "cannot detach ticket");
                }
                tracing::debug!(ticket = %id, "stream closed: ticket detached");
                break;
            }
            () = inner.shutdown.cancelled() => {
                let _ = inner.deps.store.detach(&id, inner.now(), q.grace_ms()).await;
                let _ = tx.send(Err(Status::unavailable(
                    "server shutting down: call FindMatch again with the same ticket_id",
                ))).await;
                break;
            }
            _ = wake.recv() => {}
            () = tokio::time::sleep(heartbeat) => {}
        }
        view = match inner.deps.store.poll(&id, inner.now(), q.ttl_ms()).await {
            Ok(v) => v,
            Err(err) => {
                tracing::warn!(ticket = %id, error = %err, "cannot read ticket");
                let _ = tx.send(Err(Status::from(err))).await;
                break;
            }
        };
    }
    inner.hub.remove(&id);
}

#[tonic::async_trait]
impl MatchmakingService for MatchmakingApi {
    type FindMatchStream = FindMatchStream;

    #[tracing::instrument(skip_all, fields(user))]
    async fn find_match(
        &self,
        request: Request<FindMatchRequest>,
    ) -> Result<Response<Self::FindMatchStream>, Status> {
        let caller = auth::caller(&request)?;
        let caller = Self::player(caller)?;
        tracing::Span::current().record("user", tracing::field::display(caller.user_id));
        let stream = self.find_match_inner(caller, request.into_inner()).await?;
        Ok(Response::new(stream))
    }

    #[tracing::instrument(skip_all, fields(user))]
    async fn cancel_find(
        &self,
        request: Request<CancelFindRequest>,
    ) -> Result<Response<CancelFindResponse>, Status> {
        let caller = auth::caller(&request)?;
        tracing::Span::current().record("user", tracing::field::display(caller.user_id));
        let id = request.into_inner().ticket_id;
        if id.is_empty() {
            return Err(MatchmakingError::InvalidArgument("ticket_id is empty".into()).into());
        }
        let q = &self.inner.config.queue;
        let outcome = self
            .inner
            .deps
            .store
            .cancel(
                &caller.user_id.to_string(),
                &id,
                CancelCause::ByClient,
                self.inner.now(),
                q.grace_ms(),
            )
            .await?;
        match outcome {
            CancelOutcome::Cancelled => Ok(Response::new(CancelFindResponse {
                cancelled: true,
                matched: None,
            })),
            // Its group is final (its room may exist already): the search
            // goes on to that room; the stream (or a resume) gets `matched`.
            CancelOutcome::InGroup => Ok(Response::new(CancelFindResponse {
                cancelled: false,
                matched: None,
            })),
            CancelOutcome::AlreadyMatched(record) => {
                let names = names_of(&self.inner, &record.seats).await;
                Ok(Response::new(CancelFindResponse {
                    cancelled: false,
                    matched: Some(matched_proto(&record, &names)),
                }))
            }
            CancelOutcome::NotFound => Err(MatchmakingError::NotFound(
                "no such search of yours (it may have expired)".into(),
            )
            .into()),
        }
    }

    #[tracing::instrument(skip_all, fields(user))]
    async fn create_room(
        &self,
        request: Request<CreateRoomRequest>,
    ) -> Result<Response<CreateRoomResponse>, Status> {
        let caller = auth::caller(&request)?;
        let caller = Self::player(caller)?;
        tracing::Span::current().record("user", tracing::field::display(caller.user_id));
        Ok(Response::new(
            self.create_room_inner(caller, request.into_inner()).await?,
        ))
    }

    #[tracing::instrument(skip_all)]
    async fn list_public_rooms(
        &self,
        request: Request<ListPublicRoomsRequest>,
    ) -> Result<Response<ListPublicRoomsResponse>, Status> {
        auth::caller(&request)?;
        Ok(Response::new(self.list_inner(request.into_inner()).await?))
    }

    #[tracing::instrument(skip_all, fields(user))]
    async fn join_room(
        &self,
        request: Request<JoinRoomRequest>,
    ) -> Result<Response<JoinRoomResponse>, Status> {
        let caller = auth::caller(&request)?;
        let caller = Self::player(caller)?;
        tracing::Span::current().record("user", tracing::field::display(caller.user_id));
        Ok(Response::new(
            self.join_room_inner(caller, request.into_inner()).await?,
        ))
    }

    #[tracing::instrument(skip_all, fields(user))]
    async fn invite_friend(
        &self,
        request: Request<InviteFriendRequest>,
    ) -> Result<Response<InviteFriendResponse>, Status> {
        let caller = auth::caller(&request)?;
        let caller = Self::player(caller)?;
        tracing::Span::current().record("user", tracing::field::display(caller.user_id));
        Ok(Response::new(
            self.invite_friend_inner(caller, request.into_inner())
                .await?,
        ))
    }
}
