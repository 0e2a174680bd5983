//! Reports of players (ReportPlayer) and their resolution by moderators: filed under the
//! per-reporter limit in one atomic step, listed by target, resolved all at once, and
//! counted for hiding a reported display name ([`crate::reports`]).

use std::future::Future;

use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::error::Result;
use crate::reports::{ReportReason, ReportRules, Resolution};

/// A report to file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewReport {
    /// Its id.
    pub id: Uuid,
    /// Who reports.
    pub reporter_id: Uuid,
    /// Whom.
    pub target_id: Uuid,
    /// Why.
    pub reason: ReportReason,
    /// The match it happened in.
    pub match_id: Option<String>,
    /// The reporter's words (bounded by the service).
    pub comment: String,
    /// When.
    pub at: DateTime<Utc>,
}

/// What [`Reports::file_report`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Filing {
    /// Stored, with the target's display name at this moment.
    Filed {
        /// The name kept with the report.
        display_name: String,
    },
    /// No account is the target: nothing stored.
    UnknownTarget,
    /// The match is not a recorded match of both the reporter and the target: nothing
    /// stored.
    NotInMatch,
    /// The reporter filed their most within the window: nothing stored.
    Limited {
        /// When the next report is accepted.
        next_at: DateTime<Utc>,
    },
}

/// A stored report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    /// Its id.
    pub id: Uuid,
    /// Who reported.
    pub reporter_id: Uuid,
    /// Whom.
    pub target_id: Uuid,
    /// Why.
    pub reason: ReportReason,
    /// The match named.
    pub match_id: Option<String>,
    /// The reporter's words.
    pub comment: String,
    /// The target's display name when reported.
    pub display_name: String,
    /// When.
    pub at: DateTime<Utc>,
    /// When and how it was resolved; `None` while open.
    pub resolved: Option<(DateTime<Utc>, Resolution)>,
}

/// A player with open reports ([`Reports::open_reports`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReportedTarget {
    /// The player.
    pub target_id: Uuid,
    /// Their display name now.
    pub display_name: String,
    /// Distinct reporters of the open reports.
    pub reporters: u32,
    /// Open reports.
    pub reports: u32,
    /// The reasons given, each once, in [`ReportReason::ALL`] order.
    pub reasons: Vec<ReportReason>,
    /// The oldest open report.
    pub first_at: DateTime<Utc>,
    /// The newest.
    pub last_at: DateTime<Utc>,
}

/// What [`Reports::resolve_reports`] closed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Resolved {
    /// Open reports closed.
    pub reports: u32,
    /// Each distinct reporter's newest report of those, ordered by reporter.
    pub reporters: Vec<ClosedReport>,
}

/// A reporter's report closed by a resolution (the one their notice names).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClosedReport {
    /// Who reported.
    pub reporter_id: Uuid,
    /// The report.
    pub report_id: Uuid,
    /// When it was filed.
    pub at: DateTime<Utc>,
}

impl Resolved {
    /// What closing `closed` (reporter, report, filed at; any order) did.
    pub fn of(closed: impl IntoIterator<Item = ClosedReport>) -> Resolved {
        let mut reports = 0;
        let mut newest: std::collections::BTreeMap<Uuid, ClosedReport> = Default::default();
        for report in closed {
            reports += 1;
            let kept = newest.entry(report.reporter_id).or_insert(report);
            if (report.at, report.report_id) > (kept.at, kept.report_id) {
                *kept = report;
            }
        }
        Resolved {
            reports,
            reporters: newest.into_values().collect(),
        }
    }
}

/// Reports of players and their resolution.
pub trait Reports: Send + Sync {
    /// Files `report` in one atomic step that serializes the reporter's filings: refused
    /// ([`Filing::Limited`]) when the reporter filed `rules.max_per_window` since
    /// [`ReportRules::window_start`]; [`Filing::UnknownTarget`] when the target has no
    /// account; [`Filing::NotInMatch`] when `match_id` is set and is not a recorded match
    /// in which both held a seat. Errors: `UserNotFound` (the reporter has no account).
    fn file_report(
        &self,
        report: &NewReport,
        rules: ReportRules,
    ) -> impl Future<Output = Result<Filing>> + Send;

    /// Up to `limit` players with open reports: most distinct reporters first, then the
    /// oldest open report first, then by id.
    fn open_reports(&self, limit: u32) -> impl Future<Output = Result<Vec<ReportedTarget>>> + Send;

    /// Every report about `target`, newest first (then by id).
    fn reports_of(&self, target: Uuid) -> impl Future<Output = Result<Vec<Report>>> + Send;

    /// Every report `reporter` filed, newest first (then by id): ExportMyData's.
    fn reports_by(&self, reporter: Uuid) -> impl Future<Output = Result<Vec<Report>>> + Send;

    /// Resolves every open report about `target` as `resolution` at `at`; answers how
    /// many it closed and their reporters (none: there were none open).
    fn resolve_reports(
        &self,
        target: Uuid,
        resolution: Resolution,
        at: DateTime<Utc>,
    ) -> impl Future<Output = Result<Resolved>> + Send;

    /// Of `ids`, those whose open offensive-name reports come from at least `reporters`
    /// distinct players (their names are hidden).
    fn hidden_among(
        &self,
        ids: &[Uuid],
        reporters: u32,
    ) -> impl Future<Output = Result<Vec<Uuid>>> + Send;
}
