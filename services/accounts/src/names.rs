//! The rate limit of display name changes: at most `max_changes` within any rolling
//! window (default 3 per 7 days). The store keeps the times of a player's recent
//! changes and applies [`decide`] in the same atomic step as the change itself, so two
//! concurrent changes of one player count each other.

use std::time::Duration;

use chrono::{DateTime, Utc};

/// How often a player may change their display name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NameChangeLimit {
    /// Changes allowed within [`window`](Self::window).
    pub max_changes: u32,
    /// The rolling window.
    pub window: Duration,
}

impl NameChangeLimit {
    /// The earliest change time still inside the window at `now`: changes at or before
    /// it no longer count.
    pub fn window_start(&self, now: DateTime<Utc>) -> DateTime<Utc> {
        now - self.window_delta()
    }

    fn window_delta(&self) -> chrono::Duration {
        chrono::Duration::from_std(self.window).unwrap_or(chrono::Duration::MAX)
    }
}

/// What a name change did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NameChange {
    /// The name is the new one (`changed`: it was different, and the change counts), or
    /// already was (nothing written, nothing counted).
    Done {
        /// The name as stored.
        display_name: String,
        /// Whether it changed.
        changed: bool,
        /// Changes still allowed in the window.
        changes_left: u32,
        /// When the next change is allowed, if not now.
        next_change_at: Option<DateTime<Utc>>,
    },
    /// Too many changes within the window: nothing written.
    Limited {
        /// When the next change is allowed.
        next_change_at: DateTime<Utc>,
    },
}

/// The rule, given the player's changes inside the window (`recent`, any order, each
/// after [`NameChangeLimit::window_start`]) and whether the requested name differs from
/// the current one. Answers the outcome; on [`NameChange::Done`] with `changed`, the
/// store records a change at `now`.
pub fn decide(
    recent: &[DateTime<Utc>],
    new_name: &str,
    differs: bool,
    limit: NameChangeLimit,
    now: DateTime<Utc>,
) -> NameChange {
    let mut times: Vec<DateTime<Utc>> = recent.to_vec();
    times.sort_unstable();
    let max = limit.max_changes as usize;
    if differs {
        if times.len() >= max {
            // The change that must leave the window before another is allowed.
            let at = times
                .get(times.len() - max)
                .map_or(now, |t| *t + limit.window_delta());
            return NameChange::Limited {
                next_change_at: at.max(now),
            };
        }
        times.push(now);
    }
    let changes_left = max.saturating_sub(times.len());
    // At the limit, the next change waits for the oldest of the last `max` to leave.
    let next_change_at = (changes_left == 0)
        .then(|| times.get(times.len().saturating_sub(max)).copied())
        .flatten()
        .map(|t| t + limit.window_delta());
    NameChange::Done {
        display_name: new_name.to_owned(),
        changed: differs,
        changes_left: changes_left as u32,
        next_change_at,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn t(hours: i64) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 11, 1, 0, 0, 0).unwrap() + chrono::Duration::hours(hours)
    }

    const WEEK: NameChangeLimit = NameChangeLimit {
        max_changes: 2,
        window: Duration::from_secs(7 * 24 * 3600),
    };

    #[test]
    fn changes_count_until_they_leave_the_window() {
        let done = |left, next| NameChange::Done {
            display_name: "Rita".into(),
            changed: true,
            changes_left: left,
            next_change_at: next,
        };
        assert_eq!(decide(&[], "Rita", true, WEEK, t(0)), done(1, None));
        assert_eq!(
            decide(&[t(0)], "Rita", true, WEEK, t(1)),
            done(0, Some(t(168)))
        );
        assert_eq!(
            decide(&[t(1), t(0)], "Rita", true, WEEK, t(2)),
            NameChange::Limited {
                next_change_at: t(168)
            }
        );
        // The same name again is no change, even at the limit.
        assert_eq!(
            decide(&[t(0), t(1)], "Rita", false, WEEK, t(2)),
            NameChange::Done {
                display_name: "Rita".into(),
                changed: false,
                changes_left: 0,
                next_change_at: Some(t(168)),
            }
        );
        // Changes older than the window no longer count (the store leaves them out).
        assert_eq!(
            decide(&[t(100)], "Rita", true, WEEK, t(200)),
            done(0, Some(t(268)))
        );
    }
}
