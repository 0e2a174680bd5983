//! Rooms people make and join: CreateRoom (private, by code, or public in the lobby),
//! JoinRoom (by code or from the lobby) and ListPublicRooms. Each seat is taken in the
//! store first and confirmed in game-session, and given back when game-session refuses.

use basra_platform::Caller;
use basra_proto::basra::common::v1 as common;
use basra_proto::basra::game::v1 as game;
use basra_proto::basra::matchmaking::v1::{
    self as mm, CreateRoomRequest, CreateRoomResponse, JoinRoomRequest, JoinRoomResponse,
    ListPublicRoomsRequest, ListPublicRoomsResponse, join_room_request::Target,
};
use basra_proto::convert::{settings_from_pb, settings_to_pb};
use uuid::Uuid;

use super::{MatchmakingApi, check_client_id, game_error, names_of};
use crate::convert::{expiry_to_pb, millis_to_pb, seat_assignment, seat_infos};
use crate::domain::{self, new_join_code, normalize_join_code, sets_more_than_format};
use crate::error::{MatchmakingError, Result};
use crate::store::{LobbyFilter, Occupant, RoomRecord, TakeSeat};

/// Lobby rooms looked at per ListPublicRooms call (bounds the work of a
/// very selective filter; the page token continues from there).
const LOBBY_SCAN_CAP: usize = 1000;

impl MatchmakingApi {
    pub(super) async fn create_room_inner(
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
        let store = &inner.deps.store;
        // The room this request made already (a retry), the queue and the seat the player
        // holds: independent reads, made at once and judged in that order.
        let made = async {
            let fresh = Uuid::now_v7().to_string();
            if request.request_id.is_empty() {
                return Ok((fresh, None));
            }
            check_client_id("request_id", &request.request_id)?;
            let room_id = store
                .claim_request(&user, &request.request_id, &fresh)
                .await?;
            let room = store.room(&room_id).await?;
            Ok::<_, MatchmakingError>((room_id, room))
        };
        let (made, queued, seated) = tokio::join!(
            made,
            store.queued_ticket(&user),
            self.ensure_not_seated(&user, None)
        );
        let (room_id, made) = made?;
        if let Some(room) = made {
            return Ok(CreateRoomResponse {
                room_id: room.id,
                join_code: room.code,
                seat: 0,
                settings: Some(settings_to_pb(&room.settings)),
                expires_at: expiry_to_pb(room.expires_ms),
            });
        }
        if queued?.is_some() {
            return Err(MatchmakingError::FailedPrecondition(
                "you are in the queue: cancel the search (CancelFind) before creating a room"
                    .into(),
            ));
        }
        seated?;
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
        // The join code and game-session's room at once: neither needs the other. A code
        // claimed for a room game-session then refuses stays taken, as it did when the two
        // were made one after the other.
        let code = async {
            for _ in 0..16 {
                let candidate = new_join_code();
                if store.claim_code(&candidate, &room_id).await? {
                    return Ok(candidate);
                }
            }
            Err(MatchmakingError::ResourceExhausted(
                "no free join code found: retry".into(),
            ))
        };
        let create = inner.deps.game.create_room(game::CreateRoomRequest {
            room_id: room_id.clone(),
            seats: seats
                .iter()
                .map(|occupant| seat_assignment(occupant, common::SeatFill::Host))
                .collect(),
            settings: Some(settings_to_pb(&settings)),
            ranked: request.ranked,
            allow_spectators: public,
            visibility: if public {
                common::RoomVisibility::Public
            } else {
                common::RoomVisibility::Private
            } as i32,
        });
        let (code, response) = tokio::join!(code, create);
        let code = code?;
        let response = response.map_err(|status| game_error(status, "game-session CreateRoom"))?;
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
        store.insert_room(&room).await?;
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

    pub(super) async fn join_room_inner(
        &self,
        caller: Caller,
        request: JoinRoomRequest,
    ) -> Result<JoinRoomResponse> {
        let inner = &self.inner;
        let store = &inner.deps.store;
        let user = caller.user_id.to_string();
        let not_found = || MatchmakingError::NotFound("no such room or join code".into());
        let by_code = matches!(request.target, Some(Target::JoinCode(_)));
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
                id
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
                // The player's wrong codes and the code's room at once; a player past the
                // limit learns nothing from the answer.
                let (wrong, found) =
                    tokio::join!(store.wrong_codes(&user, bucket), store.room_by_code(&code));
                if wrong? >= rooms.wrong_code_max {
                    return Err(MatchmakingError::ResourceExhausted(
                        "too many wrong join codes: wait a few minutes".into(),
                    ));
                }
                match found? {
                    Some(id) => id,
                    None => {
                        store.add_wrong_code(&user, bucket, window_ms * 2).await?;
                        return Err(not_found());
                    }
                }
            }
        };
        // The room and the seat the player holds elsewhere at once, judged in that order.
        let (room, seated) = tokio::join!(
            store.room(&room_id),
            self.ensure_not_seated(&user, Some(&room_id))
        );
        let room = room?.ok_or_else(not_found)?;
        if !by_code && !room.public {
            return Err(not_found());
        }
        if room.ranked {
            self.check_ranked_allowed(&caller)?;
        }
        seated?;
        // The seat, and whether the player was invited (for the match record), at once.
        let (taken, invited) = tokio::join!(
            store.take_seat(&room_id, &user, caller.guest, request.preferred_seat),
            store.invited(&user, &room_id)
        );
        let (seat, fresh) = match taken? {
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
        // How the player came: an invite (by code or from the list), else the way
        // they joined. Kept by game-session for the match record.
        let fill = if invited? {
            common::SeatFill::Invite
        } else if by_code {
            common::SeatFill::Code
        } else {
            common::SeatFill::Lobby
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
                fill: fill as i32,
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

    pub(super) async fn list_inner(
        &self,
        request: ListPublicRoomsRequest,
    ) -> Result<ListPublicRoomsResponse> {
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
