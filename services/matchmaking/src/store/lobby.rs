//! The lobby's role: rooms made by CreateRoom, their seats, the public listing, join
//! codes (and the wrong guesses of each account), CreateRoom's idempotency, invites, and
//! the room each player last sat in. [`LobbyStore`] is what the lobby's and invites'
//! handlers ask of a store; each backend implements it in its own file
//! (`memory/lobby.rs`, `redis/lobby.rs`), and one contract suite holds both to it
//! (`tests/it/store_contract/lobby.rs`).

use basra_engine::Settings;
use serde::{Deserialize, Serialize};

use super::Occupant;
use crate::{clock::Millis, domain::Format, error::Result};

/// A room made by CreateRoom, as the lobby knows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RoomRecord {
    /// The room id (also game-session's).
    pub id: String,
    /// Who created it (seat 0).
    pub owner: String,
    /// The rules.
    pub settings: Settings,
    /// Whether it counts for ratings.
    pub ranked: bool,
    /// Listed in the lobby.
    pub public: bool,
    /// The join code.
    pub code: String,
    /// When it was created.
    pub created_ms: Millis,
    /// When it expires if its seats are not all taken by then (`rooms.ttl_seconds`
    /// after its creation; 0: never, a room made before rooms expired). Stored with the
    /// room, so whatever else reads the room (an invite) can tell when it ends.
    #[serde(default)]
    pub expires_ms: Millis,
    /// The seats (filled by the store on reads; not part of the stored meta).
    #[serde(skip)]
    pub seats: Vec<Occupant>,
    /// The status (filled by the store on reads).
    #[serde(skip)]
    pub status: RoomStatus,
    /// Lobby order (filled by the store on reads; 0 when never listed).
    #[serde(skip)]
    pub list_seq: u64,
}

impl RoomRecord {
    /// The room's lobby mode (what the lobby's filters look at): ranked or not, seats,
    /// target score.
    pub fn format(&self) -> Format {
        Format {
            ranked: self.ranked,
            seats: self.settings.seat_count(),
            target_score: self.settings.target_score,
        }
    }
}

/// Where a lobby room is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RoomStatus {
    /// Waiting for players.
    #[default]
    Open,
    /// Every seat taken: no longer listed; the code still finds it (JoinRoom says full).
    Full,
    /// Closed (by its owner's service, or expired with seats still open): no longer
    /// listed; the code still finds it (JoinRoom says closed) until its keys go away.
    Closed,
}

impl RoomStatus {
    pub(super) fn parse(s: &str) -> RoomStatus {
        match s {
            "full" => RoomStatus::Full,
            "closed" => RoomStatus::Closed,
            _ => RoomStatus::Open,
        }
    }
}

/// What [`LobbyStore::take_seat`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TakeSeat {
    /// Seated now; `full` when that filled the room.
    Seated {
        /// The seat taken, 0-based.
        seat: u32,
        /// The room is now full.
        full: bool,
    },
    /// The player already sat here.
    Already {
        /// Their seat.
        seat: u32,
    },
    /// No free seat.
    Full,
    /// The room is closed.
    Closed,
    /// The preferred seat is taken.
    SeatTaken,
    /// The preferred seat does not exist.
    NoSuchSeat,
    /// No such room.
    NotFound,
}

/// Lobby filters; `None` matches everything.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LobbyFilter {
    /// Only rooms with this many seats (2 or 4).
    pub seats: Option<u8>,
    /// Only rooms playing to this score.
    pub target_score: Option<u32>,
    /// Ranked or not.
    pub ranked: Option<bool>,
}

impl LobbyFilter {
    pub(super) fn matches(&self, room: &RoomRecord) -> bool {
        self.covers(room.format())
    }

    /// Whether rooms of format `f` pass the filter.
    pub(super) fn covers(&self, f: Format) -> bool {
        self.seats.is_none_or(|s| s == f.seats)
            && self.target_score.is_none_or(|t| t == f.target_score)
            && self.ranked.is_none_or(|r| r == f.ranked)
    }

    /// The one format the filter allows, when it names all three fields.
    pub(super) fn format(&self) -> Option<Format> {
        Some(Format {
            ranked: self.ranked?,
            seats: self.seats?,
            target_score: self.target_score?,
        })
    }
}

/// One page of the lobby.
#[derive(Debug, Clone, PartialEq)]
pub struct LobbyPage {
    /// Matching open public rooms, oldest first.
    pub rooms: Vec<RoomRecord>,
    /// Where the next page starts (a lobby sequence number), if there may be
    /// more.
    pub next: Option<u64>,
}

/// Rooms, seats, join codes and invites. See the module docs.
#[tonic::async_trait]
pub trait LobbyStore: Send + Sync + 'static {
    /// The room id for `user_id`'s CreateRoom `request_id`: `room_id` if the
    /// request is new, else the one recorded first.
    async fn claim_request(&self, user_id: &str, request_id: &str, room_id: &str)
    -> Result<String>;

    /// Reserves a join code for a room; false if the code is in use.
    async fn claim_code(&self, code: &str, room_id: &str) -> Result<bool>;

    /// Stores a new room (listing it if public and not full).
    async fn insert_room(&self, room: &RoomRecord) -> Result<()>;

    /// A room, if it exists.
    async fn room(&self, id: &str) -> Result<Option<RoomRecord>>;

    /// The room of a join code (a code keeps finding its room for as long as the room is kept).
    async fn room_by_code(&self, code: &str) -> Result<Option<String>>;

    /// Seats a player (atomically; idempotent for a player already seated).
    /// A room that becomes full leaves the lobby.
    async fn take_seat(
        &self,
        room_id: &str,
        user_id: &str,
        guest: bool,
        preferred: Option<u32>,
    ) -> Result<TakeSeat>;

    /// Undoes [`take_seat`](LobbyStore::take_seat) (game-session refused it).
    async fn free_seat(&self, room_id: &str, seat: u32, user_id: &str) -> Result<()>;

    /// Closes a room: unlisted; seats can no longer be taken.
    async fn close_room(&self, room_id: &str) -> Result<()>;

    /// Closes up to `max` rooms whose [`RoomRecord::expires_ms`] is at or before `now`
    /// while a seat is still open (a full room is left alone: its match is on), as
    /// [`close_room`](LobbyStore::close_room) does; each one's keys (the room, its locator and
    /// its code) go away `retention_ms` later, until when the code still finds it
    /// (closed). Returns the ids of the rooms it closed.
    async fn expire_rooms(
        &self,
        now: Millis,
        retention_ms: Millis,
        max: usize,
    ) -> Result<Vec<String>>;

    /// Remembers the room a player was last seated in (by any path: queue,
    /// CreateRoom, JoinRoom), for `ttl_ms`.
    async fn set_player_room(&self, user_id: &str, room_id: &str, ttl_ms: Millis) -> Result<()>;

    /// The room a player was last seated in, if remembered.
    async fn player_room(&self, user_id: &str) -> Result<Option<String>>;

    /// Open public rooms matching `filter`, oldest first, after lobby
    /// position `after`; looks at no more than `scan_cap` rooms per call.
    async fn list_public(
        &self,
        filter: LobbyFilter,
        after: u64,
        limit: usize,
        scan_cap: usize,
    ) -> Result<LobbyPage>;

    /// Wrong join codes of `user_id` in time bucket `bucket`.
    async fn wrong_codes(&self, user_id: &str, bucket: i64) -> Result<u32>;

    /// Counts one more wrong code (the count lives `ttl_ms`).
    async fn add_wrong_code(&self, user_id: &str, bucket: i64, ttl_ms: Millis) -> Result<u32>;

    /// Remembers that `user_id` was invited to `room_id` (for `ttl_ms`, the room's
    /// lifetime), so their seat is recorded as filled by an invite.
    async fn note_invite(&self, user_id: &str, room_id: &str, ttl_ms: Millis) -> Result<()>;

    /// Whether `user_id` was invited to `room_id` (and the note has not lapsed).
    async fn invited(&self, user_id: &str, room_id: &str) -> Result<bool>;
}
