//! Where queue and room state lives: the [`Store`] trait, with a Redis
//! implementation ([`RedisStore`], production: several replicas share one
//! queue) and an in-memory one ([`MemoryStore`], the embedded dev mode). Both
//! pass the same contract tests (`tests/it/store_contract.rs`).
//!
//! Every state change of the queue is one atomic step (one Lua script in
//! Redis, one critical section in memory), so a ticket is never in two groups
//! and never dropped, whichever replica runs the step. Time always comes from
//! the caller (the injected [`Clock`](crate::clock::Clock)), never from the
//! store, so tests control it.

mod memory;
mod redis;

use basra_engine::Settings;
use serde::{Deserialize, Serialize};
use tokio::sync::broadcast;

use crate::{
    clock::Millis,
    domain::{Format, PairingParams},
    error::Result,
};

pub use self::memory::MemoryStore;
pub use self::redis::{RedisStore, pairing_script};

/// A new search to queue.
#[derive(Debug, Clone, PartialEq)]
pub struct NewTicket {
    /// The client's ticket id.
    pub id: String,
    /// The searching account.
    pub user_id: String,
    /// Whether that account is a guest.
    pub guest: bool,
    /// The queue.
    pub format: Format,
    /// The player's rating (0 for unranked formats).
    pub rating: f64,
    /// Whether bots may fill the other seats after the bot wait.
    pub allow_bots: bool,
    /// The accounts this one blocks: pairing never puts the ticket in a group with
    /// any of them, nor with a ticket whose own `blocks` name this account. Kept from
    /// the first insert (a resume does not change them).
    pub blocks: Vec<String>,
}

/// Who sits in a seat.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Occupant {
    /// Nobody yet.
    Open,
    /// A bot of this level (a `basra.common.v1.BotLevel` value).
    Bot {
        /// The bot level.
        level: i32,
    },
    /// A player.
    Player {
        /// The account.
        user_id: String,
        /// Whether it is a guest.
        guest: bool,
        /// The rating used for matching, if any.
        #[serde(default)]
        rating: Option<f64>,
    },
}

/// What a matched ticket learns: stored with the ticket so that a resumed
/// search, on any replica, gets it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MatchRecord {
    /// The room.
    pub room_id: String,
    /// This ticket's seat.
    pub seat: u32,
    /// Whether the match counts for ratings.
    pub ranked: bool,
    /// The rules in force.
    pub settings: Settings,
    /// Every seat.
    pub seats: Vec<Occupant>,
}

/// Why a search ended without a match.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CancelCause {
    /// CancelFind.
    ByClient,
    /// Waited longer than the server allows.
    Timeout,
    /// A newer search of the same account.
    Superseded,
    /// Its group's room could not be made in `queue.room_max_attempts` attempts
    /// (game-session unreachable): the group was given up ([`Store::abandon`]).
    RoomUnavailable,
}

impl CancelCause {
    fn as_str(self) -> &'static str {
        match self {
            CancelCause::ByClient => "by_client",
            CancelCause::Timeout => "timeout",
            CancelCause::Superseded => "superseded",
            CancelCause::RoomUnavailable => "room_unavailable",
        }
    }

    fn parse(s: &str) -> CancelCause {
        match s {
            "timeout" => CancelCause::Timeout,
            "superseded" => CancelCause::Superseded,
            "room_unavailable" => CancelCause::RoomUnavailable,
            _ => CancelCause::ByClient,
        }
    }
}

/// Where a ticket is in its life.
#[derive(Debug, Clone, PartialEq)]
pub enum TicketState {
    /// Waiting (in the pool when attached).
    Queued,
    /// In a group whose room is being created.
    Pending,
    /// Matched: go and play.
    Matched(MatchRecord),
    /// Ended without a match.
    Cancelled(CancelCause),
}

/// A ticket as its stream sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct TicketView {
    /// The ticket id.
    pub id: String,
    /// Its account.
    pub user_id: String,
    /// Its queue.
    pub format: Format,
    /// The rating it is matched by.
    pub rating: f64,
    /// When it was first queued (kept across resumes).
    pub enqueued_ms: Millis,
    /// Whether bots may fill its match.
    pub allow_bots: bool,
    /// Whether a stream holds it (only attached tickets are matched).
    pub attached: bool,
    /// Its group could not get a room (game-session unavailable): the stream
    /// ends with UNAVAILABLE; a resume puts the ticket back in the pool.
    pub unavailable: bool,
    /// The state.
    pub state: TicketState,
    /// 1-based position among the waiting tickets of its format (0 when not
    /// in the pool).
    pub position: u32,
    /// Tickets waiting in its format.
    pub waiting: u32,
}

/// What [`Store::enqueue`] did.
#[derive(Debug, Clone, PartialEq)]
pub struct Enqueued {
    /// The ticket now.
    pub view: TicketView,
    /// The ticket existed: this was a resume.
    pub resumed: bool,
}

/// One member of a group.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GroupMember {
    /// The ticket.
    pub ticket_id: String,
    /// Its account.
    pub user_id: String,
    /// Whether a guest.
    pub guest: bool,
    /// Its rating.
    pub rating: f64,
    /// When it was queued.
    pub enqueued_ms: Millis,
}

/// Tickets taken out of the pool together, waiting for their room.
///
/// A group is final: once formed, its members are matched into its room id
/// and no other (whoever creates the room, however often it is retried),
/// because a CreateRoom whose answer was lost may have made the room. A
/// member can no longer leave it (CancelFind answers
/// [`CancelOutcome::InGroup`], a dropped stream only detaches, a new search
/// of the account is refused); only a refusal from game-session (the room was
/// not made) puts its members back in the queue.
#[derive(Debug, Clone, PartialEq)]
pub struct Group {
    /// The room id chosen for them (stable across retries and takeovers).
    pub room_id: String,
    /// Their queue.
    pub format: Format,
    /// The players, in seat order; bots take the remaining seats.
    pub members: Vec<GroupMember>,
    /// When the group formed.
    pub formed_ms: Millis,
    /// The lease this copy was handed out under (a fencing token: 1 when
    /// formed, one more at each takeover by [`Store::reclaim`]). Only the
    /// current holder may [`release`](Store::release) or
    /// [`defer`](Store::defer) the group.
    pub lease: u64,
}

impl Group {
    /// Bots needed to fill the room.
    pub fn bots(&self) -> usize {
        usize::from(self.format.seats).saturating_sub(self.members.len())
    }
}

/// What [`Store::commit`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommitOutcome {
    /// Every member is matched.
    Committed,
    /// A member was no longer in the group (cannot happen through the
    /// [`Store`] API, which keeps group members there; kept as a safety
    /// net): the others are back in the queue.
    Aborted,
    /// The group was already settled (by another replica).
    Gone,
}

/// What [`Store::cancel`] did.
#[derive(Debug, Clone, PartialEq)]
pub enum CancelOutcome {
    /// The search is (now) cancelled.
    Cancelled,
    /// It had matched first.
    AlreadyMatched(MatchRecord),
    /// It is in a formed group whose room is being made (or retried): it
    /// stays there and will be matched into that room.
    InGroup,
    /// No such ticket of this account.
    NotFound,
}

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
    fn parse(s: &str) -> RoomStatus {
        match s {
            "full" => RoomStatus::Full,
            "closed" => RoomStatus::Closed,
            _ => RoomStatus::Open,
        }
    }
}

/// What [`Store::take_seat`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TakeSeat {
    /// Seated now; `full` when that filled the room.
    Seated {
        /// The seat.
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
    /// Seats.
    pub seats: Option<u8>,
    /// Target score.
    pub target_score: Option<u32>,
    /// Ranked or not.
    pub ranked: Option<bool>,
}

impl LobbyFilter {
    fn matches(&self, room: &RoomRecord) -> bool {
        self.covers(room.format())
    }

    /// Whether rooms of format `f` pass the filter.
    fn covers(&self, f: Format) -> bool {
        self.seats.is_none_or(|s| s == f.seats)
            && self.target_score.is_none_or(|t| t == f.target_score)
            && self.ranked.is_none_or(|r| r == f.ranked)
    }

    /// The one format the filter allows, when it names all three fields.
    fn format(&self) -> Option<Format> {
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

/// The state of the queue and of the lobby. See the module docs.
#[tonic::async_trait]
pub trait Store: Send + Sync + 'static {
    // ----- the queue -----

    /// Queues `ticket` at `now`, or resumes it if the id exists (same account
    /// only: else `InvalidArgument`): a detached ticket goes back into the
    /// pool with its original queue time. A new ticket supersedes the
    /// account's previous queued one (cancelled with
    /// [`CancelCause::Superseded`]); while that one is in a formed group
    /// ([`TicketState::Pending`]) a new ticket is refused
    /// (`FailedPrecondition`). An attached ticket must be refreshed
    /// ([`poll`](Store::poll)) within `ttl_ms`.
    async fn enqueue(
        &self,
        ticket: NewTicket,
        now: Millis,
        ttl_ms: Millis,
        grace_ms: Millis,
    ) -> Result<Enqueued>;

    /// The ticket, refreshing its heartbeat (deadline `now + ttl_ms`) if it is
    /// queued and attached. `None` if it does not exist (any more).
    async fn poll(&self, id: &str, now: Millis, ttl_ms: Millis) -> Result<Option<TicketView>>;

    /// Its stream is gone: out of the pool, kept `grace_ms` for a resume.
    async fn detach(&self, id: &str, now: Millis, grace_ms: Millis) -> Result<()>;

    /// Ends `user_id`'s search `id` with `cause`, unless it matched first or
    /// is in a formed group ([`CancelOutcome::InGroup`]: left as it is).
    async fn cancel(
        &self,
        user_id: &str,
        id: &str,
        cause: CancelCause,
        now: Millis,
        grace_ms: Millis,
    ) -> Result<CancelOutcome>;

    /// One pairing round at `now`: forms up to `room_ids.len()` (and
    /// `params.max_groups`) groups, taking their members out of the pool, and
    /// leases them to the caller until `now + params.lease_ms`.
    async fn form_groups(
        &self,
        now: Millis,
        params: &PairingParams,
        room_ids: &[String],
    ) -> Result<Vec<Group>>;

    /// Groups whose lease ran out (their replica died or hung) or whose
    /// retry is due ([`defer`](Store::defer)), re-leased to the caller under
    /// a new [`Group::lease`]: it creates their room (idempotent by room id)
    /// and commits.
    async fn reclaim(&self, now: Millis, lease_ms: Millis, max: usize) -> Result<Vec<Group>>;

    /// The group's room exists: match its members (`records` by ticket id).
    /// Any holder may commit, even one whose lease was taken over: the room
    /// it made is the group's one room. `format` is the group's
    /// ([`Group::format`]): a group lives with its format's queue.
    async fn commit(
        &self,
        room_id: &str,
        format: Format,
        records: &[(String, MatchRecord)],
        now: Millis,
        grace_ms: Millis,
    ) -> Result<CommitOutcome>;

    /// game-session refused the group's room (it was not made): its members
    /// go back to queued (detached, flagged unavailable), keeping their queue
    /// time. Does nothing (false) unless `lease` is the group's current one.
    /// `format` is the group's.
    async fn release(
        &self,
        room_id: &str,
        format: Format,
        lease: u64,
        now: Millis,
        grace_ms: Millis,
    ) -> Result<bool>;

    /// Whether the group's room was made is unknown (game-session
    /// unreachable, or its answer lost): the group stays as it is, room id
    /// included; its members are detached and flagged unavailable (their
    /// streams end UNAVAILABLE; a resume waits for this same room) and
    /// [`reclaim`](Store::reclaim) hands the group out again from
    /// `retry_at`. Does nothing (false) unless `lease` is the group's current
    /// one. `format` is the group's.
    async fn defer(
        &self,
        room_id: &str,
        format: Format,
        lease: u64,
        retry_at: Millis,
    ) -> Result<bool>;

    /// The group's room could not be made in the attempts allowed: the group is given
    /// up, its members' searches end ([`CancelCause::RoomUnavailable`], kept `grace_ms`
    /// for their streams to hear it, also on a resume). Does nothing (false) unless
    /// `lease` is the group's current one. `format` is the group's.
    async fn abandon(
        &self,
        room_id: &str,
        format: Format,
        lease: u64,
        now: Millis,
        grace_ms: Millis,
    ) -> Result<bool>;

    /// Drops tickets past their deadline (dead streams, resume grace over,
    /// old results). Returns how many queued tickets were dropped.
    async fn expire(&self, now: Millis, max: usize) -> Result<u64>;

    /// Tickets in the pool, per format.
    async fn queue_lengths(&self) -> Result<Vec<(Format, u64)>>;

    /// Ids of tickets whose state changed (on any replica).
    fn subscribe(&self) -> broadcast::Receiver<String>;

    // ----- rooms -----

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

    /// Undoes [`take_seat`](Store::take_seat) (game-session refused it).
    async fn free_seat(&self, room_id: &str, seat: u32, user_id: &str) -> Result<()>;

    /// Closes a room: unlisted; seats can no longer be taken.
    async fn close_room(&self, room_id: &str) -> Result<()>;

    /// Closes up to `max` rooms whose [`RoomRecord::expires_ms`] is at or before `now`
    /// while a seat is still open (a full room is left alone: its match is on), as
    /// [`close_room`](Store::close_room) does; each one's keys (the room, its locator and
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

    /// The account's latest ticket while it waits in the queue or in a
    /// forming group (not once matched or cancelled).
    async fn queued_ticket(&self, user_id: &str) -> Result<Option<String>>;

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
