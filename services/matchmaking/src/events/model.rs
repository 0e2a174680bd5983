//! What is stored of an event: its record ([`EventRecord`]), each player's entry
//! ([`EntryRecord`]) and each match's result ([`ResultRecord`]), and the rules of
//! registration, withdrawal and check-in as pure functions the stores call inside their
//! atomic step (so a refusal changes nothing, and the cap holds under concurrency).

use serde::{Deserialize, Serialize};
use tonic::Code;

use super::spec::{EventSpec, Format};
use crate::clock::Millis;
use crate::error::MatchmakingError;

/// Where an event is in its life, as stored. "Scheduled" and "registration open" are
/// both [`Phase::Upcoming`]: which one is a matter of the time ([`EventRecord::status`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Phase {
    /// Not started.
    Upcoming,
    /// Started.
    Running,
    /// Over, standings final.
    Finished,
    /// Cancelled.
    Cancelled,
}

impl Phase {
    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Upcoming => "upcoming",
            Phase::Running => "running",
            Phase::Finished => "finished",
            Phase::Cancelled => "cancelled",
        }
    }

    /// From the stored name.
    pub fn parse(s: &str) -> Option<Phase> {
        Some(match s {
            "upcoming" => Phase::Upcoming,
            "running" => Phase::Running,
            "finished" => Phase::Finished,
            "cancelled" => Phase::Cancelled,
            _ => return None,
        })
    }

    /// Whether the event is over (finished or cancelled).
    pub fn is_over(self) -> bool {
        matches!(self, Phase::Finished | Phase::Cancelled)
    }
}

/// An event as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EventRecord {
    /// Its id (a UUID).
    pub id: String,
    /// The series it is an occurrence of (the first occurrence's id), if recurring.
    pub series_id: Option<String>,
    /// The operator's idempotency key, if given.
    pub request_id: Option<String>,
    /// The definition.
    pub spec: EventSpec,
    /// The start.
    pub starts_at_ms: Millis,
    /// Where it is.
    pub phase: Phase,
    /// Why it was cancelled.
    pub cancel_reason: String,
    /// The winner once finished, if any.
    pub champion: Option<String>,
    /// The round being played (0 before the start).
    pub current_round: u32,
    /// Rounds in all (known at the start for a knockout).
    pub rounds_total: u32,
    /// When it ended (finished or cancelled), 0 before.
    pub ended_at_ms: Millis,
    /// Rises with every stored change.
    pub version: u64,
    /// Players registered now.
    pub registered: u32,
    /// Whether its registered players were told it starts soon (the clock's
    /// compare-and-set: told once, whichever replica drives it).
    #[serde(default)]
    pub starting_told: bool,
}

/// The API's status of an event, from its phase and the time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// Registration not open.
    Scheduled,
    /// Registration open, not started.
    Registration,
    /// Started.
    Running,
    /// Over.
    Finished,
    /// Cancelled.
    Cancelled,
}

impl EventRecord {
    /// The status at `now`.
    pub fn status(&self, now: Millis) -> Status {
        match self.phase {
            Phase::Upcoming
                if self
                    .spec
                    .registration_opens_at(self.starts_at_ms)
                    .is_some_and(|opens| now < opens) =>
            {
                Status::Scheduled
            }
            Phase::Upcoming => Status::Registration,
            Phase::Running => Status::Running,
            Phase::Finished => Status::Finished,
            Phase::Cancelled => Status::Cancelled,
        }
    }

    /// Whether it is an arena.
    pub fn is_arena(&self) -> bool {
        matches!(self.spec.format, Format::Arena { .. })
    }

    /// Whether its players are to be told now that it starts soon: upcoming, not told
    /// yet, its notice time ([`EventSpec::starting_notice_at`]) come and its start not.
    pub fn starting_notice_due(&self, now: Millis, lead_seconds: u32) -> bool {
        !self.starting_told && self.starting_soon(now, lead_seconds)
    }

    /// Whether it is upcoming, its notice time come and its start not: a player who
    /// registers now is told at once that it starts soon.
    pub fn starting_soon(&self, now: Millis, lead_seconds: u32) -> bool {
        self.phase == Phase::Upcoming
            && now
                >= self
                    .spec
                    .starting_notice_at(self.starts_at_ms, lead_seconds)
            && now < self.starts_at_ms
    }

    /// An arena's end.
    pub fn arena_ends_at(&self) -> Option<Millis> {
        match self.spec.format {
            Format::Arena { seconds } => Some(self.starts_at_ms + i64::from(seconds) * 1000),
            _ => None,
        }
    }
}

/// A player's place in an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum EntryStatus {
    /// Registered, not checked in.
    Registered,
    /// Checked in.
    CheckedIn,
    /// In the running event.
    Playing,
    /// Knocked out.
    Eliminated,
    /// Withdrew during the event.
    Withdrawn,
    /// Arena: paused.
    Paused,
    /// Did not check in before the start.
    NotCheckedIn,
    /// Played to the end of a finished event (see [`EntryRecord::finish`]).
    Finished,
}

impl EntryStatus {
    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            EntryStatus::Registered => "registered",
            EntryStatus::CheckedIn => "checked_in",
            EntryStatus::Playing => "playing",
            EntryStatus::Eliminated => "eliminated",
            EntryStatus::Withdrawn => "withdrawn",
            EntryStatus::Paused => "paused",
            EntryStatus::NotCheckedIn => "not_checked_in",
            EntryStatus::Finished => "finished",
        }
    }

    /// From the stored name.
    pub fn parse(s: &str) -> Option<EntryStatus> {
        Some(match s {
            "registered" => EntryStatus::Registered,
            "checked_in" => EntryStatus::CheckedIn,
            "playing" => EntryStatus::Playing,
            "eliminated" => EntryStatus::Eliminated,
            "withdrawn" => EntryStatus::Withdrawn,
            "paused" => EntryStatus::Paused,
            "not_checked_in" => EntryStatus::NotCheckedIn,
            "finished" => EntryStatus::Finished,
            _ => return None,
        })
    }
}

/// A player's entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EntryRecord {
    /// The event.
    pub event_id: String,
    /// The player.
    pub user_id: String,
    /// Their rating when they registered (seeds them).
    pub rating: i32,
    /// Their place.
    pub status: EntryStatus,
    /// When they registered.
    pub registered_at_ms: Millis,
    /// Their final rank (0 until the event finished, or if they did not play).
    pub rank: u32,
    /// Their points (final once the event finished).
    pub points: u32,
}

impl EntryRecord {
    /// The entry once its event has finished, given the player's row of the final
    /// standings (`place`: rank and points), if they have one. A player still in
    /// (playing, or an arena player paused) has finished, in their place; a knockout
    /// player still "playing" below first place lost their last match (the clock
    /// eliminates losers as their results come, so this is only a safety net);
    /// eliminated and withdrawn players keep their status and get their place; whoever
    /// did not play keeps theirs, without a place.
    pub fn finish(&self, place: Option<(u32, u32)>, knockout: bool) -> EntryRecord {
        let mut entry = self.clone();
        let Some((rank, points)) = place else {
            return entry;
        };
        entry.rank = rank;
        entry.points = points;
        entry.status = match self.status {
            EntryStatus::Playing if knockout && rank > 1 => EntryStatus::Eliminated,
            EntryStatus::Playing | EntryStatus::Paused => EntryStatus::Finished,
            other => other,
        };
        entry
    }
}

/// One match's result, recorded once.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResultRecord {
    /// The event.
    pub event_id: String,
    /// The match within the event (`r2t3`, or `a17` for an arena match).
    pub match_key: String,
    /// Its room.
    pub room_id: String,
    /// The two players.
    pub players: [String; 2],
    /// The winner, if any.
    pub winner: Option<String>,
    /// `won`, `forfeit` or `both_absent`.
    pub outcome: String,
    /// When it was recorded.
    pub recorded_at_ms: Millis,
    /// The match played in the room, as accounts records it (`LiveMatch::match_id`);
    /// empty for a match not played to its end, and for a result recorded by a release
    /// without it.
    #[serde(default)]
    pub match_id: String,
}

/// Why a player's call about an event is refused: the gRPC code and the
/// `google.rpc.ErrorInfo` reason the .proto documents.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// Registered already.
    AlreadyRegistered,
    /// Before registration opens.
    RegistrationNotOpen,
    /// The cap is reached.
    Full,
    /// The rating is outside the band.
    RatingBand,
    /// Started (knockout, Swiss) or over.
    Started,
    /// Cancelled.
    Cancelled,
    /// Finished.
    Finished,
    /// Outside the check-in window.
    CheckInClosed,
    /// The player withdrew.
    Withdrawn,
    /// Not registered.
    NotRegistered,
}

impl Refusal {
    /// The `google.rpc.ErrorInfo` reason.
    pub fn reason(self) -> &'static str {
        match self {
            Refusal::AlreadyRegistered => "EVENT_ALREADY_REGISTERED",
            Refusal::RegistrationNotOpen => "EVENT_REGISTRATION_NOT_OPEN",
            Refusal::Full => "EVENT_FULL",
            Refusal::RatingBand => "EVENT_RATING_BAND",
            Refusal::Started => "EVENT_STARTED",
            Refusal::Cancelled => "EVENT_CANCELLED",
            Refusal::Finished => "EVENT_FINISHED",
            Refusal::CheckInClosed => "EVENT_CHECK_IN_CLOSED",
            Refusal::Withdrawn => "EVENT_WITHDRAWN",
            Refusal::NotRegistered => "EVENT_NOT_REGISTERED",
        }
    }

    fn code(self) -> Code {
        match self {
            Refusal::AlreadyRegistered => Code::AlreadyExists,
            Refusal::NotRegistered => Code::NotFound,
            _ => Code::FailedPrecondition,
        }
    }

    fn message(self) -> &'static str {
        match self {
            Refusal::AlreadyRegistered => "you are registered for this event already",
            Refusal::RegistrationNotOpen => "registration for this event is not open yet",
            Refusal::Full => "this event is full",
            Refusal::RatingBand => "your rating is outside this event's rating band",
            Refusal::Started => "this event has started",
            Refusal::Cancelled => "this event was cancelled",
            Refusal::Finished => "this event has finished",
            Refusal::CheckInClosed => "check-in for this event is not open",
            Refusal::Withdrawn => "you withdrew from this event",
            Refusal::NotRegistered => "you are not registered for this event",
        }
    }
}

impl From<Refusal> for MatchmakingError {
    fn from(refusal: Refusal) -> Self {
        MatchmakingError::Refused {
            code: refusal.code(),
            reason: refusal.reason(),
            message: refusal.message().to_owned(),
        }
    }
}

/// Whether `rating` may register for `event` at `now`, with `existing` the player's
/// entry if any (an arena's paused player comes back).
pub fn admit(
    event: &EventRecord,
    existing: Option<&EntryRecord>,
    rating: i32,
    now: Millis,
) -> Result<(), Refusal> {
    match event.phase {
        Phase::Cancelled => return Err(Refusal::Cancelled),
        Phase::Finished => return Err(Refusal::Started),
        Phase::Running if !event.is_arena() => return Err(Refusal::Started),
        Phase::Running if event.arena_ends_at().is_some_and(|end| now >= end) => {
            return Err(Refusal::Started);
        }
        _ => {}
    }
    if let Some(entry) = existing {
        return match entry.status {
            EntryStatus::Paused => Ok(()),
            _ => Err(Refusal::AlreadyRegistered),
        };
    }
    if event.phase == Phase::Upcoming
        && event
            .spec
            .registration_opens_at(event.starts_at_ms)
            .is_some_and(|opens| now < opens)
    {
        return Err(Refusal::RegistrationNotOpen);
    }
    if event.phase == Phase::Upcoming && now >= event.starts_at_ms {
        // Its start second has passed; the clock is about to start it.
        return Err(Refusal::Started);
    }
    if let Some((min, max)) = event.spec.rating_band
        && !(min..=max).contains(&rating)
    {
        return Err(Refusal::RatingBand);
    }
    if event.registered >= event.spec.cap {
        return Err(Refusal::Full);
    }
    Ok(())
}

/// The entry a registration makes (an arena entered while running plays at once).
pub fn registered_status(event: &EventRecord) -> EntryStatus {
    if event.phase == Phase::Running {
        EntryStatus::Playing
    } else if event.spec.check_in_seconds == 0 {
        EntryStatus::CheckedIn
    } else {
        EntryStatus::Registered
    }
}

/// What a withdrawal does to an entry: `None` removes it (before the start).
pub fn withdrawal(
    event: &EventRecord,
    entry: &EntryRecord,
) -> Result<Option<EntryStatus>, Refusal> {
    match event.phase {
        Phase::Cancelled => Err(Refusal::Cancelled),
        Phase::Finished => Err(Refusal::Finished),
        Phase::Upcoming => Ok(None),
        Phase::Running => Ok(Some(match (event.is_arena(), entry.status) {
            (_, EntryStatus::NotCheckedIn) => EntryStatus::NotCheckedIn,
            (_, EntryStatus::Eliminated) => EntryStatus::Eliminated,
            (true, _) => EntryStatus::Paused,
            (false, _) => EntryStatus::Withdrawn,
        })),
    }
}

/// What cancelling `event` does (`series`: the operator ends its series too): whether
/// the event itself is cancelled now (not when it is already, or finished), and whether
/// its series ends (a recurring event's, asked for or cancelled before its start: its
/// occurrences made and not started are cancelled with it). A finished event is refused
/// unless its series ends.
pub fn cancellation(event: &EventRecord, series: bool) -> Result<(bool, bool), Refusal> {
    let ends_series = event.series_id.is_some() && (series || event.phase == Phase::Upcoming);
    match event.phase {
        Phase::Finished if !ends_series => Err(Refusal::Finished),
        Phase::Finished | Phase::Cancelled => Ok((false, ends_series)),
        Phase::Upcoming | Phase::Running => Ok((true, ends_series)),
    }
}

impl EventRecord {
    /// Cancels it (the store's change, once [`cancellation`] allows it).
    pub fn cancel(&mut self, reason: &str, now: Millis) {
        self.phase = Phase::Cancelled;
        self.cancel_reason = reason.to_owned();
        self.ended_at_ms = now;
        self.version += 1;
    }
}

/// Whether the entry may check in at `now`.
pub fn check_in(event: &EventRecord, entry: &EntryRecord, now: Millis) -> Result<(), Refusal> {
    match event.phase {
        Phase::Cancelled => return Err(Refusal::Cancelled),
        Phase::Finished | Phase::Running => return Err(Refusal::Started),
        Phase::Upcoming => {}
    }
    if now >= event.starts_at_ms {
        return Err(Refusal::Started);
    }
    if matches!(entry.status, EntryStatus::Withdrawn) {
        return Err(Refusal::Withdrawn);
    }
    if event.spec.check_in_seconds == 0 || now < event.spec.check_in_opens_at(event.starts_at_ms) {
        return Err(Refusal::CheckInClosed);
    }
    Ok(())
}
