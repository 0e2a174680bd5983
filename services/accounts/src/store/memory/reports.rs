//! Reports in the memory store ([`Reports`]), as `pg/reports.rs` keeps them on
//! PostgreSQL.

use std::collections::{BTreeSet, HashMap, HashSet};

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::{Inner, MemoryStore};
use crate::error::{AccountsError, Result};
use crate::reports::{ReportReason, ReportRules, Resolution};
use crate::store::{ClosedReport, Filing, NewReport, Report, ReportedTarget, Reports, Resolved};

impl Inner {
    fn played(&self, user: Uuid, match_id: &str) -> bool {
        self.players
            .get(&user)
            .is_some_and(|rows| rows.iter().any(|r| r.match_id == match_id))
    }

    /// An account's deletion takes the reports it filed and those about it.
    pub(super) fn forget_reports(&mut self, user: Uuid) {
        self.reports
            .retain(|r| r.reporter_id != user && r.target_id != user);
    }

    /// The reports that `keep` takes, newest first (then by id).
    fn reports_where(&self, keep: impl Fn(&Report) -> bool) -> Vec<Report> {
        let mut out: Vec<Report> = self.reports.iter().filter(|r| keep(r)).cloned().collect();
        out.sort_by(|a, b| b.at.cmp(&a.at).then(b.id.cmp(&a.id)));
        out
    }
}

impl Reports for MemoryStore {
    async fn file_report(&self, report: &NewReport, rules: ReportRules) -> Result<Filing> {
        let mut inner = self.lock();
        if !inner.users.contains_key(&report.reporter_id) {
            return Err(AccountsError::UserNotFound);
        }
        let Some(target) = inner.users.get(&report.target_id) else {
            return Ok(Filing::UnknownTarget);
        };
        let display_name = target.display_name.clone();
        if let Some(match_id) = &report.match_id
            && !(inner.played(report.reporter_id, match_id)
                && inner.played(report.target_id, match_id))
        {
            return Ok(Filing::NotInMatch);
        }
        let start = rules.window_start(report.at);
        let recent: Vec<DateTime<Utc>> = inner
            .reports
            .iter()
            .filter(|r| r.reporter_id == report.reporter_id && r.at > start)
            .map(|r| r.at)
            .collect();
        if let Some(next_at) = rules.decide(&recent, report.at) {
            return Ok(Filing::Limited { next_at });
        }
        inner.reports.push(Report {
            id: report.id,
            reporter_id: report.reporter_id,
            target_id: report.target_id,
            reason: report.reason,
            match_id: report.match_id.clone(),
            comment: report.comment.clone(),
            display_name: display_name.clone(),
            at: report.at,
            resolved: None,
        });
        Ok(Filing::Filed { display_name })
    }

    async fn open_reports(&self, limit: u32) -> Result<Vec<ReportedTarget>> {
        let inner = self.lock();
        let mut groups: HashMap<Uuid, Vec<&Report>> = HashMap::new();
        for r in inner.reports.iter().filter(|r| r.resolved.is_none()) {
            groups.entry(r.target_id).or_default().push(r);
        }
        let mut out: Vec<ReportedTarget> = groups
            .into_iter()
            .filter_map(|(target, reports)| {
                let user = inner.users.get(&target)?;
                let reporters: HashSet<Uuid> = reports.iter().map(|r| r.reporter_id).collect();
                let reasons: BTreeSet<ReportReason> = reports.iter().map(|r| r.reason).collect();
                Some(ReportedTarget {
                    target_id: target,
                    display_name: user.display_name.clone(),
                    reporters: reporters.len() as u32,
                    reports: reports.len() as u32,
                    reasons: reasons.into_iter().collect(),
                    first_at: reports.iter().map(|r| r.at).min()?,
                    last_at: reports.iter().map(|r| r.at).max()?,
                })
            })
            .collect();
        out.sort_by(|a, b| {
            b.reporters
                .cmp(&a.reporters)
                .then(a.first_at.cmp(&b.first_at))
                .then(a.target_id.cmp(&b.target_id))
        });
        out.truncate(limit as usize);
        Ok(out)
    }

    async fn reports_of(&self, target: Uuid) -> Result<Vec<Report>> {
        Ok(self.lock().reports_where(|r| r.target_id == target))
    }

    async fn reports_by(&self, reporter: Uuid) -> Result<Vec<Report>> {
        Ok(self.lock().reports_where(|r| r.reporter_id == reporter))
    }

    async fn resolve_reports(
        &self,
        target: Uuid,
        resolution: Resolution,
        at: DateTime<Utc>,
    ) -> Result<Resolved> {
        let mut closed = Vec::new();
        for r in self
            .lock()
            .reports
            .iter_mut()
            .filter(|r| r.target_id == target && r.resolved.is_none())
        {
            r.resolved = Some((at, resolution));
            closed.push(ClosedReport {
                reporter_id: r.reporter_id,
                report_id: r.id,
                at: r.at,
            });
        }
        Ok(Resolved::of(closed))
    }

    async fn hidden_among(&self, ids: &[Uuid], reporters: u32) -> Result<Vec<Uuid>> {
        let inner = self.lock();
        let mut by_target: HashMap<Uuid, HashSet<Uuid>> = HashMap::new();
        for r in inner.reports.iter().filter(|r| {
            r.resolved.is_none()
                && r.reason == ReportReason::OffensiveName
                && ids.contains(&r.target_id)
        }) {
            by_target
                .entry(r.target_id)
                .or_default()
                .insert(r.reporter_id);
        }
        Ok(ids
            .iter()
            .filter(|id| {
                by_target
                    .get(*id)
                    .is_some_and(|s| s.len() >= reporters as usize)
            })
            .copied()
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect())
    }
}
