//! An event's definition as an operator sets it ([`EventSpec`]), validated once when it
//! is created: every refusal names the field. Pure: no I/O, no clock (the caller gives
//! "now").

use basra_engine::Settings;
use basra_events::{EventError, Schedule, swiss};
use basra_proto::basra::matchmaking::v1 as pb;
use serde::{Deserialize, Serialize};

use crate::clock::Millis;
use crate::error::{MatchmakingError, Result};

/// The most players an event takes.
pub const MAX_CAP: u32 = 4096;
/// The longest name.
pub const MAX_NAME_CHARS: usize = 80;
/// The longest check-in window, in seconds.
pub const MAX_CHECK_IN_SECONDS: u32 = 86_400;
/// The join deadline's bounds, in seconds.
pub const JOIN_SECONDS: std::ops::RangeInclusive<u32> = 10..=3600;
/// An arena's length bounds, in seconds.
pub const ARENA_SECONDS: std::ops::RangeInclusive<u32> = 60..=86_400;

/// How an event is played.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Format {
    /// Single elimination.
    Knockout,
    /// A fixed number of rounds paired by score.
    Swiss {
        /// How many.
        rounds: u32,
    },
    /// A time window of quick re-pairing.
    Arena {
        /// How long it runs, in seconds.
        seconds: u32,
    },
}

/// A recurring schedule as given (validated: it parses and fires).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Recurrence {
    /// Five CRON fields.
    pub cron: String,
    /// An IANA time zone.
    pub time_zone: String,
}

impl Recurrence {
    /// The schedule.
    pub fn schedule(&self) -> Result<Schedule> {
        Schedule::parse(&self.cron, &self.time_zone).map_err(schedule_error)
    }

    /// The first start strictly after `after`.
    pub fn next_after(&self, after: Millis) -> Result<Millis> {
        let instant = chrono::DateTime::from_timestamp_millis(after)
            .ok_or_else(|| MatchmakingError::InvalidArgument("a time out of range".into()))?;
        Ok(self
            .schedule()?
            .next_after(instant)
            .map_err(schedule_error)?
            .timestamp_millis())
    }
}

fn schedule_error(err: EventError) -> MatchmakingError {
    MatchmakingError::InvalidArgument(format!("definition.recurrence: {err}"))
}

/// What an operator set for an event (one occurrence of a series included).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EventSpec {
    /// Shown to players.
    pub name: String,
    /// The format and its length.
    pub format: Format,
    /// A series' schedule, if recurring.
    pub recurrence: Option<Recurrence>,
    /// Registration opens this long before the start.
    pub registration_opens_seconds_before: u32,
    /// The most players.
    pub cap: u32,
    /// The inclusive rating band, if any.
    pub rating_band: Option<(i32, i32)>,
    /// The check-in window before the start (0: none).
    pub check_in_seconds: u32,
    /// How long a player has to join a ready match.
    pub join_deadline_seconds: u32,
    /// Every match's rules (two seats).
    pub settings: Settings,
    /// Whether matches count toward ratings.
    pub rated: bool,
    /// Whether matches accept spectators.
    pub allow_spectators: bool,
}

impl EventSpec {
    /// Validates a definition and answers it with its first start: `start_at`, or the
    /// recurrence's first firing after `now`. Every refusal is INVALID_ARGUMENT naming
    /// the field.
    pub fn from_pb(def: &pb::EventDefinition, now: Millis) -> Result<(EventSpec, Millis)> {
        let bad = |m: &str| MatchmakingError::InvalidArgument(format!("definition.{m}"));
        let name = def.name.trim().to_owned();
        if name.is_empty() || name.chars().count() > MAX_NAME_CHARS {
            return Err(bad("name must be 1-80 characters"));
        }
        if !(2..=MAX_CAP).contains(&def.cap) {
            return Err(bad("cap must be 2-4096"));
        }
        let format = match pb::EventFormat::try_from(def.format) {
            Ok(pb::EventFormat::Knockout) => Format::Knockout,
            Ok(pb::EventFormat::Swiss) => {
                if def.swiss_rounds == 0 {
                    return Err(bad("swiss_rounds: a Swiss needs at least one round"));
                }
                let max = swiss::max_rounds(def.cap as usize);
                if def.swiss_rounds > max {
                    return Err(bad(&format!(
                        "swiss_rounds: {} rounds is too many for a cap of {}: at most {max} can always be paired without a rematch",
                        def.swiss_rounds, def.cap
                    )));
                }
                Format::Swiss {
                    rounds: def.swiss_rounds,
                }
            }
            Ok(pb::EventFormat::Arena) => {
                if !ARENA_SECONDS.contains(&def.arena_seconds) {
                    return Err(bad("arena_seconds must be 60-86400"));
                }
                Format::Arena {
                    seconds: def.arena_seconds,
                }
            }
            _ => return Err(bad("format must be knockout, Swiss or arena")),
        };
        let rating_band = match &def.rating_band {
            Some(band) if band.min > band.max => {
                return Err(bad("rating_band: min is above max"));
            }
            Some(band) => Some((band.min, band.max)),
            None => None,
        };
        if def.check_in_seconds > MAX_CHECK_IN_SECONDS {
            return Err(bad("check_in_seconds must be 0-86400"));
        }
        if !JOIN_SECONDS.contains(&def.join_deadline_seconds) {
            return Err(bad("join_deadline_seconds must be 10-3600"));
        }
        let settings = basra_proto::convert::settings_from_pb(def.settings.as_ref())
            .map_err(|err| bad(&format!("settings: {}", err.0)))?;
        if settings.seats != basra_engine::Seats::Two {
            return Err(bad("settings.seats: event matches have two seats"));
        }
        let (recurrence, start) = match (&def.start_at, &def.recurrence) {
            (Some(_), Some(_)) | (None, None) => {
                return Err(bad("set exactly one of start_at and recurrence"));
            }
            (Some(at), None) => {
                let start = at.seconds.saturating_mul(1000) + i64::from(at.nanos) / 1_000_000;
                if start <= now {
                    return Err(bad("start_at is in the past"));
                }
                (None, start)
            }
            (None, Some(r)) => {
                let recurrence = Recurrence {
                    cron: r.cron.trim().to_owned(),
                    time_zone: r.time_zone.trim().to_owned(),
                };
                let start = recurrence.next_after(now)?;
                (Some(recurrence), start)
            }
        };
        let spec = EventSpec {
            name,
            format,
            recurrence,
            registration_opens_seconds_before: def.registration_opens_seconds_before,
            cap: def.cap,
            rating_band,
            check_in_seconds: def.check_in_seconds,
            join_deadline_seconds: def.join_deadline_seconds,
            settings,
            rated: def.rated,
            allow_spectators: def.allow_spectators,
        };
        Ok((spec, start))
    }

    /// When registration opens for an occurrence starting at `start`: `None` when it is
    /// open from the event's creation (`registration_opens_seconds_before` 0).
    pub fn registration_opens_at(&self, start: Millis) -> Option<Millis> {
        (self.registration_opens_seconds_before > 0)
            .then(|| start - i64::from(self.registration_opens_seconds_before) * 1000)
    }

    /// When check-in opens (the start itself when there is no check-in).
    pub fn check_in_opens_at(&self, start: Millis) -> Millis {
        start - i64::from(self.check_in_seconds) * 1000
    }

    /// When the registered players of an occurrence starting at `start` are told it
    /// starts soon: when check-in opens, or `lead_seconds` before the start when there
    /// is no check-in window (`events.starting_notice_seconds`).
    pub fn starting_notice_at(&self, start: Millis, lead_seconds: u32) -> Millis {
        if self.check_in_seconds > 0 {
            self.check_in_opens_at(start)
        } else {
            start - i64::from(lead_seconds) * 1000
        }
    }

    /// The join deadline in milliseconds.
    pub fn join_ms(&self) -> Millis {
        i64::from(self.join_deadline_seconds) * 1000
    }

    /// The definition as the API shows it, for an occurrence starting at `start`.
    pub fn to_pb(&self, start: Millis) -> pb::EventDefinition {
        let (format, swiss_rounds, arena_seconds) = match self.format {
            Format::Knockout => (pb::EventFormat::Knockout, 0, 0),
            Format::Swiss { rounds } => (pb::EventFormat::Swiss, rounds, 0),
            Format::Arena { seconds } => (pb::EventFormat::Arena, 0, seconds),
        };
        pb::EventDefinition {
            name: self.name.clone(),
            format: format as i32,
            start_at: Some(basra_proto::convert::timestamp(start)),
            recurrence: self.recurrence.as_ref().map(|r| pb::Recurrence {
                cron: r.cron.clone(),
                time_zone: r.time_zone.clone(),
            }),
            registration_opens_seconds_before: self.registration_opens_seconds_before,
            cap: self.cap,
            rating_band: self
                .rating_band
                .map(|(min, max)| pb::RatingBand { min, max }),
            check_in_seconds: self.check_in_seconds,
            join_deadline_seconds: self.join_deadline_seconds,
            settings: Some(basra_proto::convert::settings_to_pb(&self.settings)),
            rated: self.rated,
            allow_spectators: self.allow_spectators,
            swiss_rounds,
            arena_seconds,
        }
    }
}
