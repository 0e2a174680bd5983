//! The bulk forms of matchmaking's calls (`GameInternalService.CreateRooms`, `GetSeats`):
//! an event's round made in a few calls, and its matches in play asked about in a few,
//! instead of one call per room. Each item means exactly what the single call would
//! (`NewRoom`, `seat_answer`); what a bulk call adds is one accounts lookup for every
//! room's players and the rooms written or read concurrently (Redis pipelines them).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use basra_platform::error::to_status;
use basra_proto::basra::game::v1::{
    CreateRoomResponse, CreateRoomsRequest, GetSeatsItem, GetSeatsRequest,
};
use tonic::{Code, Status};

use super::internal::{NewRoom, seat_answer};
use super::invalid;
use crate::accounts::known_players;
use crate::error::GameError;
use crate::replica::Replica;

/// The most rooms one CreateRooms makes (as the .proto says).
pub(crate) const MAX_ROOMS: usize = 256;

/// The most items one GetSeats answers (as the .proto says).
pub(crate) const MAX_SEATS: usize = 1000;

/// CreateRooms: every item checked first (one refused item refuses the call, nothing
/// made), the players of all of them looked up at once, then the rooms made
/// concurrently. The answers in request order; the first store failure fails the call
/// (the rooms already made stay: making them again is harmless).
pub(super) async fn create_rooms(
    replica: &Arc<Replica>,
    request: CreateRoomsRequest,
) -> Result<Vec<CreateRoomResponse>, Status> {
    let count = request.rooms.len();
    if count == 0 || count > MAX_ROOMS {
        return Err(invalid(format!(
            "rooms: {count} given, 1 to {MAX_ROOMS} allowed"
        )));
    }
    let mut rooms = Vec::with_capacity(count);
    let mut ids = HashSet::with_capacity(count);
    for (i, item) in request.rooms.iter().enumerate() {
        let room = NewRoom::check(item)
            .map_err(|err| Status::new(err.code(), format!("rooms[{i}]: {}", err.message())))?;
        if !ids.insert(room.id().to_owned()) {
            return Err(invalid(format!(
                "rooms[{i}]: room_id {:?} is given twice",
                room.id()
            )));
        }
        rooms.push(room);
    }
    let mut users: Vec<String> = rooms.iter().flat_map(NewRoom::users).collect();
    users.sort_unstable();
    users.dedup();
    let started = std::time::Instant::now();
    let known = known_players(replica.accounts.as_ref(), &users).await;
    let looked_up = started.elapsed();
    let mut made = tokio::task::JoinSet::new();
    for (i, mut room) in rooms.into_iter().enumerate() {
        room.name(&known);
        let replica = Arc::clone(replica);
        made.spawn(async move { (i, room.make(&replica).await) });
    }
    let mut answers: Vec<Option<CreateRoomResponse>> = vec![None; count];
    while let Some(done) = made.join_next().await {
        let (i, answer) =
            done.map_err(|err| GameError::Internal(format!("a room's creation failed: {err}")))?;
        answers[i] = Some(answer?);
    }
    tracing::info!(
        rooms = count,
        lookup_ms = looked_up.as_millis() as u64,
        write_ms = (started.elapsed() - looked_up).as_millis() as u64,
        "rooms created"
    );
    Ok(answers.into_iter().flatten().collect())
}

/// GetSeats: every item checked (an empty id refuses the call), each room read once
/// (one pipeline per shard), each item answered as GetSeat would, a missing or
/// unreadable room in its item only.
pub(super) async fn get_seats(
    replica: &Replica,
    request: GetSeatsRequest,
) -> Result<Vec<GetSeatsItem>, Status> {
    let count = request.seats.len();
    if count == 0 || count > MAX_SEATS {
        return Err(invalid(format!(
            "seats: {count} given, 1 to {MAX_SEATS} allowed"
        )));
    }
    let mut rooms: Vec<String> = Vec::new();
    let mut index: HashMap<&str, usize> = HashMap::new();
    for (i, item) in request.seats.iter().enumerate() {
        if item.room_id.is_empty() || item.user_id.is_empty() {
            return Err(invalid(format!(
                "seats[{i}]: room_id and user_id are required"
            )));
        }
        index.entry(item.room_id.as_str()).or_insert_with(|| {
            rooms.push(item.room_id.clone());
            rooms.len() - 1
        });
    }
    let loaded = replica.store.load_many(&rooms).await?;
    let answers = request
        .seats
        .iter()
        .map(|item| match &loaded[index[item.room_id.as_str()]] {
            Ok(Some(loaded)) => GetSeatsItem {
                code: Code::Ok as i32,
                message: String::new(),
                seat: Some(seat_answer(&loaded.room, &item.user_id)),
            },
            Ok(None) => failed(&GameError::RoomNotFound(item.room_id.clone())),
            Err(err) => failed(err),
        })
        .collect();
    Ok(answers)
}

/// An item's answer for `err`: the status code and message a whole call would answer
/// (an internal error logged, its message generic).
fn failed(err: &GameError) -> GetSeatsItem {
    let status = to_status(err);
    GetSeatsItem {
        code: status.code() as i32,
        message: status.message().to_owned(),
        seat: None,
    }
}
