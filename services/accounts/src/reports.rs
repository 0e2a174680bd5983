//! Reports of players (ReportPlayer) as rules, without I/O: the reasons, the bounds of a
//! report, the per-reporter rolling limit ([`ReportRules::decide`]), when a reported name
//! is hidden and the placeholder shown instead ([`hidden_placeholder`]), and what a
//! moderator decides ([`Resolution`]). The store applies the limit in the same atomic
//! step as the filing (`store::Reports`); the service applies the hiding to every
//! answer that names other players (`service/shown_names.rs`).

use std::time::Duration;

use chrono::{DateTime, Utc};
use uuid::Uuid;

/// The longest comment accepted, in characters.
pub const MAX_COMMENT_CHARS: usize = 500;
/// The longest match id accepted.
pub const MAX_MATCH_ID_CHARS: usize = 128;

/// Why a player is reported (`ReportReason` in the API).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ReportReason {
    /// Their display name is offensive: the only reason that counts towards hiding it.
    OffensiveName,
    /// They cheat.
    Cheating,
    /// They are abusive in chat.
    ChatAbuse,
    /// Anything else.
    Other,
}

impl ReportReason {
    /// Every reason, in the API's order.
    pub const ALL: [ReportReason; 4] = [
        ReportReason::OffensiveName,
        ReportReason::Cheating,
        ReportReason::ChatAbuse,
        ReportReason::Other,
    ];

    /// Its name as stored.
    pub fn as_str(self) -> &'static str {
        match self {
            ReportReason::OffensiveName => "offensive_name",
            ReportReason::Cheating => "cheating",
            ReportReason::ChatAbuse => "chat_abuse",
            ReportReason::Other => "other",
        }
    }

    /// The reason stored as `raw`.
    pub fn parse(raw: &str) -> Option<ReportReason> {
        ReportReason::ALL.into_iter().find(|r| r.as_str() == raw)
    }
}

/// What a moderator decides about a player's open reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resolution {
    /// Nothing to act on.
    Dismiss,
    /// The display name is replaced.
    Rename,
    /// The player is banned.
    Ban,
}

impl Resolution {
    /// Its name as stored (and in the audit's detail).
    pub fn as_str(self) -> &'static str {
        match self {
            Resolution::Dismiss => "dismiss",
            Resolution::Rename => "rename",
            Resolution::Ban => "ban",
        }
    }
}

/// The `[reports]` rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReportRules {
    /// Reports one player may file within [`window`](Self::window).
    pub max_per_window: u32,
    /// The rolling window of the limit.
    pub window: Duration,
    /// Distinct players whose open offensive-name reports hide a name.
    pub hide_name_reporters: u32,
}

impl ReportRules {
    /// The earliest filing time still inside the window at `now`.
    pub fn window_start(&self, now: DateTime<Utc>) -> DateTime<Utc> {
        now - self.window_delta()
    }

    fn window_delta(&self) -> chrono::Duration {
        chrono::Duration::from_std(self.window).unwrap_or(chrono::Duration::MAX)
    }

    /// Given the reporter's filings inside the window (any order), `None` when one more
    /// is allowed at `now`, else when the next one is.
    pub fn decide(&self, recent: &[DateTime<Utc>], now: DateTime<Utc>) -> Option<DateTime<Utc>> {
        let max = self.max_per_window as usize;
        if recent.len() < max {
            return None;
        }
        let mut times = recent.to_vec();
        times.sort_unstable();
        // The filing that must leave the window before another is allowed.
        let at = times[times.len() - max] + self.window_delta();
        Some(at.max(now))
    }
}

/// The name shown to other players instead of a hidden one: "Player " and four digits
/// taken from the user id (the same for one player everywhere). A name of this shape is
/// reserved (`is_reserved_name`), so no player can choose one that passes for it.
pub fn hidden_placeholder(user_id: Uuid) -> String {
    let digits = u16::from_be_bytes([user_id.as_bytes()[14], user_id.as_bytes()[15]]) % 10_000;
    format!("Player {digits:04}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn t(minutes: i64) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 12, 1, 0, 0, 0).unwrap() + chrono::Duration::minutes(minutes)
    }

    const RULES: ReportRules = ReportRules {
        max_per_window: 2,
        window: Duration::from_secs(3600),
        hide_name_reporters: 3,
    };

    #[test]
    fn the_limit_counts_filings_inside_the_window() {
        assert_eq!(RULES.decide(&[], t(0)), None);
        assert_eq!(RULES.decide(&[t(0)], t(1)), None);
        assert_eq!(RULES.decide(&[t(5), t(0)], t(10)), Some(t(60)));
        assert_eq!(RULES.decide(&[t(0), t(5), t(30)], t(40)), Some(t(65)));
    }

    #[test]
    fn reasons_round_trip_and_the_placeholder_is_reserved() {
        for r in ReportReason::ALL {
            assert_eq!(ReportReason::parse(r.as_str()), Some(r));
        }
        assert_eq!(ReportReason::parse("spam"), None);
        let id = Uuid::now_v7();
        let shown = hidden_placeholder(id);
        assert_eq!(shown, hidden_placeholder(id));
        assert!(basra_proto::convert::is_reserved_name(&shown), "{shown}");
    }
}
