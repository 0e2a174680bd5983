//! The queue's role: searches (tickets), the pools of each format, the groups formed
//! from them and the leases under which a replica makes a group's room. [`QueueStore`]
//! is what the FindMatch streams and the pairing loop ask of a store; each backend
//! implements it in its own file (`memory/queue.rs`, `redis/queue.rs`), and one
//! contract suite holds both to it (`tests/it/store_contract/queue.rs`).

use basra_engine::Settings;
use serde::{Deserialize, Serialize};
use tokio::sync::broadcast;

use super::Occupant;
use crate::{
    clock::Millis,
    domain::{Format, PairingParams},
    error::{MatchmakingError, Result},
};

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
    /// (game-session unreachable): the group was given up ([`QueueStore::abandon`]).
    RoomUnavailable,
}

impl CancelCause {
    pub(super) fn as_str(self) -> &'static str {
        match self {
            CancelCause::ByClient => "by_client",
            CancelCause::Timeout => "timeout",
            CancelCause::Superseded => "superseded",
            CancelCause::RoomUnavailable => "room_unavailable",
        }
    }

    pub(super) fn parse(s: &str) -> CancelCause {
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
    /// Where the ticket is: queued, pending a room, matched or cancelled.
    pub state: TicketState,
    /// 1-based position among the waiting tickets of its format (0 when not
    /// in the pool).
    pub position: u32,
    /// Tickets waiting in its format.
    pub waiting: u32,
}

/// What [`QueueStore::enqueue`] did.
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
    /// formed, one more at each takeover by [`QueueStore::reclaim`]). Only the
    /// current holder may [`release`](QueueStore::release) or
    /// [`defer`](QueueStore::defer) the group.
    pub lease: u64,
}

impl Group {
    /// Bots needed to fill the room.
    pub fn bots(&self) -> usize {
        usize::from(self.format.seats).saturating_sub(self.members.len())
    }
}

/// What [`QueueStore::commit`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommitOutcome {
    /// Every member is matched.
    Committed,
    /// A member was no longer in the group (cannot happen through the
    /// [`QueueStore`] API, which keeps group members there; kept as a safety
    /// net): the others are back in the queue.
    Aborted,
    /// The group was already settled (by another replica).
    Gone,
}

/// What [`QueueStore::cancel`] did.
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

/// A new search while the account's ticket `old` is in a formed group (both backends
/// refuse it with these words).
pub(super) fn in_group_error(old: &str) -> MatchmakingError {
    MatchmakingError::FailedPrecondition(format!(
        "your search {old} is being placed in a room: call FindMatch with that ticket_id"
    ))
}

/// The queue: tickets, pools, groups and their leases. See the module docs.
#[tonic::async_trait]
pub trait QueueStore: Send + Sync + 'static {
    /// Queues `ticket` at `now`, or resumes it if the id exists (same account
    /// only: else `InvalidArgument`): a detached ticket goes back into the
    /// pool with its original queue time. A new ticket supersedes the
    /// account's previous queued one (cancelled with
    /// [`CancelCause::Superseded`]); while that one is in a formed group
    /// ([`TicketState::Pending`]) a new ticket is refused
    /// (`FailedPrecondition`). An attached ticket must be refreshed
    /// ([`poll`](QueueStore::poll)) within `ttl_ms`.
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
    /// retry is due ([`defer`](QueueStore::defer)), re-leased to the caller under
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
    /// [`reclaim`](QueueStore::reclaim) hands the group out again from
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

    /// The account's latest ticket while it waits in the queue or in a
    /// forming group (not once matched or cancelled).
    async fn queued_ticket(&self, user_id: &str) -> Result<Option<String>>;
}
