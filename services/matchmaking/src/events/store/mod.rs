//! The durable state of events, one trait: definitions ([`EventRecord`]), entries
//! ([`EntryRecord`]) and results ([`ResultRecord`]). PostgreSQL in production
//! ([`PgEventStore`]), memory for `basra dev` and tests ([`MemoryEventStore`]); one
//! contract suite runs on both (`tests/it/event_store_contract`).
//!
//! Every method that checks a rule (registration, withdrawal, check-in, a phase
//! change) does the check and the change in one atomic step: PostgreSQL locks the
//! event's row for the transaction, the memory store holds its lock. So the cap holds
//! with any number of replicas registering at once, and a refusal changes nothing.

use crate::clock::Millis;
use crate::error::Result;

use super::model::Refusal;
pub use super::model::{EntryRecord, EntryStatus, EventRecord, Phase, ResultRecord};

mod memory;
mod pg;

pub use memory::MemoryEventStore;
pub use pg::PgEventStore;

/// A page of events, and the offset of the next one.
pub type Page<T> = (Vec<T>, Option<u64>);

/// What [`EventStore::register`] and the other rule-checking calls answer: the change
/// made, or the rule's refusal (nothing changed).
pub type Ruled<T> = Result<std::result::Result<T, Refusal>>;

/// A change of an event's phase by the clock.
#[derive(Debug, Clone, PartialEq)]
pub struct PhaseChange {
    /// The phase the event must be in (otherwise nothing changes and `false` is
    /// answered: another replica got there first).
    pub from: Phase,
    /// The new phase.
    pub to: Phase,
    /// The round now played.
    pub current_round: u32,
    /// The rounds in all.
    pub rounds_total: u32,
    /// The champion, if finished with one.
    pub champion: Option<String>,
    /// Why, if cancelled.
    pub cancel_reason: String,
    /// When it ended, if it did.
    pub ended_at_ms: Millis,
}

/// What [`EventStore::cancel`] did.
#[derive(Debug, Clone, PartialEq)]
pub struct Cancelled {
    /// The event, after.
    pub event: EventRecord,
    /// Whether it was cancelled by this call (not before; not a finished one).
    pub now: bool,
    /// Its series' other occurrences this call cancelled (made, not started), by start.
    pub series: Vec<EventRecord>,
}

/// The durable store of events.
#[tonic::async_trait]
pub trait EventStore: Send + Sync + 'static {
    /// Stores a new event; an event with the same `request_id` already stored is
    /// answered instead (and nothing is stored).
    async fn create(&self, event: EventRecord) -> Result<EventRecord>;

    /// Stores a series' next occurrence `next`, made when the occurrence `after` starts,
    /// unless `after` is no longer upcoming (cancelled: the series ended); `None` then,
    /// nothing stored. Atomic with [`cancel`](Self::cancel) of the series (both hold the
    /// series' lock: its first occurrence's row), so an occurrence is never made after its
    /// series was cancelled. One with the same `request_id` already stored is answered.
    async fn create_occurrence(
        &self,
        after: &str,
        next: EventRecord,
    ) -> Result<Option<EventRecord>>;

    /// One event.
    async fn get(&self, id: &str) -> Result<Option<EventRecord>>;

    /// One event's [`version`](EventRecord::version) alone (a watcher's cheap look:
    /// has it changed?); `None` when there is no such event.
    async fn version(&self, id: &str) -> Result<Option<u64>>;

    /// Events in `phases`, by start (soonest first when `ascending`), from `offset`.
    async fn list(
        &self,
        phases: &[Phase],
        ascending: bool,
        offset: u64,
        limit: u32,
    ) -> Result<Page<EventRecord>>;

    /// The clock's work list: events not over whose start is at or before `before` or
    /// that are running, and upcoming events whose players have not been told they start
    /// soon and whose start is within `notice_horizon_ms` after `before` (the clock sees
    /// which of these are due a notice: [`EventRecord::starting_notice_due`]).
    async fn due(&self, before: Millis, notice_horizon_ms: Millis) -> Result<Vec<EventRecord>>;

    /// Records that an upcoming event's players were told it starts soon: `false`
    /// (nothing changed) when it was already, or the event is no longer upcoming.
    async fn mark_starting_told(&self, event_id: &str) -> Result<bool>;

    /// Registers `user` with `rating` if [`admit`](super::model::admit) allows it.
    async fn register(
        &self,
        event_id: &str,
        user: &str,
        rating: i32,
        now: Millis,
    ) -> Ruled<EntryRecord>;

    /// Withdraws `user` ([`withdrawal`](super::model::withdrawal)): removes the entry
    /// before the start (answering `None`), else sets its status.
    async fn withdraw(&self, event_id: &str, user: &str) -> Ruled<Option<EntryRecord>>;

    /// Checks `user` in ([`check_in`](super::model::check_in)).
    async fn check_in(&self, event_id: &str, user: &str, now: Millis) -> Ruled<EntryRecord>;

    /// One entry.
    async fn entry(&self, event_id: &str, user: &str) -> Result<Option<EntryRecord>>;

    /// Every entry of an event, by registration time.
    async fn entries(&self, event_id: &str) -> Result<Vec<EntryRecord>>;

    /// Sets entries' status, rank and points (the start, eliminations, the end).
    async fn update_entries(&self, entries: &[EntryRecord]) -> Result<()>;

    /// The events `user` registered for, newest start first.
    async fn entries_of(&self, user: &str, offset: u64, limit: u32) -> Result<Page<EntryRecord>>;

    /// Moves an event from `change.from` to `change.to`; `false` (nothing changed) when
    /// it is not in `change.from` any more.
    async fn change_phase(&self, event_id: &str, change: &PhaseChange) -> Result<bool>;

    /// Cancels an event not over and, when its series ends
    /// ([`cancellation`](super::model::cancellation): `series`, or an occurrence not
    /// started), the series' other occurrences not started, in one atomic step holding
    /// the series' lock; or refuses (`Finished`).
    async fn cancel(
        &self,
        event_id: &str,
        reason: &str,
        now: Millis,
        series: bool,
    ) -> Ruled<Cancelled>;

    /// Records a result once: `false` when the match already has one (nothing changed).
    async fn record_result(&self, result: &ResultRecord) -> Result<bool>;

    /// An event's results, in the order recorded.
    async fn results(&self, event_id: &str) -> Result<Vec<ResultRecord>>;
}
