//! When a recurring event starts next: a CRON expression read in an IANA time zone,
//! daylight saving included ("0 20 * * *" in `Africa/Cairo` is 20:00 Cairo time all
//! year, 18:00 UTC in winter and 17:00 UTC in summer).
//!
//! The expression has the five standard fields (minute, hour, day of month, month, day
//! of week; names such as `MON` and `JAN`, ranges, lists, steps, and croner's `L`, `W`
//! and `#`); seconds and years are refused, so an expression repeats every 400 years.
//! As in Vixie cron, when both day fields are restricted a day matching either fires.
//! Parsing and the search are the `croner` crate's, the time zones `chrono-tz`'s (the
//! IANA database compiled in: no file is read).
//!
//! **Daylight saving**: a time that a clock change skips (02:30 on the night the clocks
//! go forward) fires at the first instant after the gap; a time the clock passes twice
//! (01:30 on the night they go back) fires once, the first time.
//!
//! **Never**: an expression that matches no date (`0 0 30 2 *`, the 30th of February) is
//! refused when parsed ([`EventError::NeverFires`]): the search for its first firing after
//! a fixed instant fails, and since the pattern repeats every 400 years there is none
//! after any other instant either.

use std::str::FromStr;

use chrono::{DateTime, TimeZone, Utc};
use chrono_tz::Tz;
use croner::Cron;
use croner::parser::{CronParser, Seconds, Year};

use crate::EventError;

/// A recurring event's start times.
#[derive(Debug, Clone)]
pub struct Schedule {
    expr: String,
    cron: Cron,
    zone: Tz,
}

impl Schedule {
    /// Reads `expr` in the time zone named `zone` (IANA: `Africa/Cairo`, `UTC`). Refused:
    /// an expression that does not parse, a zone that is not known, an expression that
    /// never fires.
    pub fn parse(expr: &str, zone: &str) -> Result<Self, EventError> {
        let cron = CronParser::builder()
            .seconds(Seconds::Disallowed)
            .year(Year::Disallowed)
            .build()
            .parse(expr)
            .map_err(|e| EventError::BadCron {
                expr: expr.to_owned(),
                reason: e.to_string(),
            })?;
        let zone = Tz::from_str(zone).map_err(|_| EventError::UnknownTimeZone(zone.to_owned()))?;
        let schedule = Schedule {
            expr: expr.to_owned(),
            cron,
            zone,
        };
        let reference = Utc.with_ymd_and_hms(2000, 1, 1, 0, 0, 0).unwrap();
        schedule.next_after(reference)?;
        Ok(schedule)
    }

    /// The expression, as given.
    pub fn expr(&self) -> &str {
        &self.expr
    }

    /// The time zone.
    pub fn zone(&self) -> Tz {
        self.zone
    }

    /// The first start strictly after `after`.
    pub fn next_after(&self, after: DateTime<Utc>) -> Result<DateTime<Utc>, EventError> {
        self.cron
            .find_next_occurrence(&after.with_timezone(&self.zone), false)
            .map(|t| t.with_timezone(&Utc))
            .map_err(|_| EventError::NeverFires(self.expr.clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn utc(y: i32, mo: u32, d: u32, h: u32, mi: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(y, mo, d, h, mi, 0).unwrap()
    }

    #[test]
    fn cairo_at_eight_follows_daylight_saving() {
        let s = Schedule::parse("0 20 * * *", "Africa/Cairo").unwrap();
        // Winter: UTC+2.
        assert_eq!(
            s.next_after(utc(2024, 1, 15, 12, 0)).unwrap(),
            utc(2024, 1, 15, 18, 0)
        );
        // Summer (Egypt's daylight saving since 2023): UTC+3.
        assert_eq!(
            s.next_after(utc(2024, 7, 1, 12, 0)).unwrap(),
            utc(2024, 7, 1, 17, 0)
        );
        // Strictly after: at the start itself, the next day's.
        assert_eq!(
            s.next_after(utc(2024, 7, 1, 17, 0)).unwrap(),
            utc(2024, 7, 2, 17, 0)
        );
    }

    #[test]
    fn a_skipped_time_fires_after_the_gap_and_a_repeated_one_once() {
        // New York, 10 March 2024: 02:00 EST jumps to 03:00 EDT; 02:30 does not exist.
        let s = Schedule::parse("30 2 * * *", "America/New_York").unwrap();
        let next = s.next_after(utc(2024, 3, 10, 5, 0)).unwrap();
        assert_eq!(
            next,
            utc(2024, 3, 10, 7, 0),
            "03:00 EDT, right after the gap"
        );
        assert_eq!(s.next_after(next).unwrap(), utc(2024, 3, 11, 6, 30));
        // 3 November 2024: 01:00–02:00 is lived twice (EDT, then EST). Once, the first.
        let s = Schedule::parse("30 1 * * *", "America/New_York").unwrap();
        let first = s.next_after(utc(2024, 11, 3, 4, 0)).unwrap();
        assert_eq!(first, utc(2024, 11, 3, 5, 30), "01:30 EDT");
        assert_eq!(
            s.next_after(first).unwrap(),
            utc(2024, 11, 4, 6, 30),
            "not 01:30 EST too"
        );
    }

    #[test]
    fn weekly_and_monthly_expressions() {
        let s = Schedule::parse("0 21 * * FRI", "UTC").unwrap();
        // 6 December 2026 is a Sunday: the next Friday is the 11th.
        assert_eq!(
            s.next_after(utc(2026, 12, 6, 0, 0)).unwrap(),
            utc(2026, 12, 11, 21, 0)
        );
        let s = Schedule::parse("0 0 29 2 *", "UTC").unwrap();
        assert_eq!(
            s.next_after(utc(2025, 3, 1, 0, 0)).unwrap(),
            utc(2028, 2, 29, 0, 0)
        );
    }

    #[test]
    fn bad_expressions_zones_and_never_are_refused() {
        assert!(matches!(
            Schedule::parse("0 20 * *", "UTC"),
            Err(EventError::BadCron { .. })
        ));
        assert!(
            matches!(
                Schedule::parse("0 0 20 * * *", "UTC"),
                Err(EventError::BadCron { .. })
            ),
            "no seconds field"
        );
        assert!(matches!(
            Schedule::parse("0 25 * * *", "UTC"),
            Err(EventError::BadCron { .. })
        ));
        assert_eq!(
            Schedule::parse("0 20 * * *", "Africa/Atlantis").unwrap_err(),
            EventError::UnknownTimeZone("Africa/Atlantis".into())
        );
        assert_eq!(
            Schedule::parse("0 0 30 2 *", "Africa/Cairo").unwrap_err(),
            EventError::NeverFires("0 0 30 2 *".into())
        );
        assert_eq!(
            Schedule::parse("0 0 31 4,6,9,11 *", "UTC").unwrap_err(),
            EventError::NeverFires("0 0 31 4,6,9,11 *".into())
        );
    }
}
