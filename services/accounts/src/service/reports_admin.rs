//! The moderators' side of reports (AccountsAdminService): ListReports (open reports by
//! player), GetReports (one player's reports with the names they had, the matches named
//! and the audit; audited `reports`) and ResolveReports (dismiss, or rename and ban
//! through [`AccountsAdmin::rename`] and [`AccountsAdmin::ban`], then the reports closed,
//! the resolution audited `resolve` and each reporter told it was handled).

use std::collections::HashSet;

use basra_proto::basra::accounts::v1 as pb;
use basra_records::wire::timestamp_to_proto;
use uuid::Uuid;

use super::admin::{AccountsAdmin, Operator, check_reason};
use super::admin_lookup::{audit_record, optional_reason};
use super::reports::reason_to_pb;
use crate::domain;
use crate::error::{AccountsError, Result};
use crate::reports::Resolution;
use crate::store::{HistoryCursor, Report, Store};

/// ListReports' default and largest answers.
const LIST_DEFAULT: u32 = 50;
const LIST_MAX: u32 = 200;
/// How far back GetReports looks in the player's history for the matches reports name.
const MATCHES_LOOKED_AT: u32 = 1_000;
const MATCHES_PAGE: u32 = 100;

fn report_to_pb(r: Report) -> pb::PlayerReport {
    pb::PlayerReport {
        report_id: r.id.to_string(),
        reporter_id: r.reporter_id.to_string(),
        reason: reason_to_pb(r.reason) as i32,
        match_id: r.match_id.unwrap_or_default(),
        comment: r.comment,
        display_name: r.display_name,
        reported_at: Some(timestamp_to_proto(r.at)),
        resolved_at: r.resolved.map(|(at, _)| timestamp_to_proto(at)),
        resolution: r
            .resolved
            .map(|(_, how)| how.as_str().to_owned())
            .unwrap_or_default(),
    }
}

impl<S: Store> AccountsAdmin<S> {
    async fn name_hidden(&self, target: Uuid) -> Result<bool> {
        let api = self.api();
        let hidden = api
            .inner
            .store
            .hidden_among(&[target], api.inner.config.reports.hide_name_reporters)
            .await?;
        Ok(!hidden.is_empty())
    }

    pub(super) async fn open_reports(
        &self,
        req: pb::ListReportsRequest,
    ) -> Result<pb::ListReportsResponse> {
        let limit = match req.limit {
            0 => LIST_DEFAULT,
            n if n <= LIST_MAX => n,
            _ => {
                return Err(AccountsError::invalid(
                    "limit",
                    format!("at most {LIST_MAX}"),
                ));
            }
        };
        let api = self.api();
        let targets = api.inner.store.open_reports(limit).await?;
        let ids: Vec<Uuid> = targets.iter().map(|t| t.target_id).collect();
        let hidden = api
            .inner
            .store
            .hidden_among(&ids, api.inner.config.reports.hide_name_reporters)
            .await?;
        Ok(pb::ListReportsResponse {
            players: targets
                .into_iter()
                .map(|t| pb::ReportedPlayer {
                    user_id: t.target_id.to_string(),
                    display_name: t.display_name,
                    reporters: t.reporters,
                    reports: t.reports,
                    reasons: t
                        .reasons
                        .into_iter()
                        .map(|r| reason_to_pb(r) as i32)
                        .collect(),
                    first_reported_at: Some(timestamp_to_proto(t.first_at)),
                    last_reported_at: Some(timestamp_to_proto(t.last_at)),
                    name_hidden: hidden.contains(&t.target_id),
                })
                .collect(),
        })
    }

    pub(super) async fn show_reports(
        &self,
        operator: Operator,
        req: pb::GetReportsRequest,
    ) -> Result<pb::GetReportsResponse> {
        let reason = optional_reason(&req.reason)?;
        let target = self.target(&req.user_id).await?;
        let store = &self.api().inner.store;
        let user = store
            .user(target)
            .await?
            .ok_or(AccountsError::UserNotFound)?;
        let reports = store.reports_of(target).await?;
        // The matches the reports name, as the player's history shows them.
        let mut wanted: HashSet<&str> = reports
            .iter()
            .filter_map(|r| r.match_id.as_deref())
            .collect();
        let mut matches = Vec::new();
        let mut after: Option<HistoryCursor> = None;
        let mut looked = 0;
        while !wanted.is_empty() && looked < MATCHES_LOOKED_AT {
            let page = store
                .match_history(target, after.clone(), MATCHES_PAGE)
                .await?;
            looked += MATCHES_PAGE;
            after = page.last().map(|e| e.cursor());
            let done = page.len() < MATCHES_PAGE as usize;
            for entry in page {
                if wanted.remove(entry.match_id.as_str()) {
                    matches.push(super::profile::match_summary(entry));
                }
            }
            if done {
                break;
            }
        }
        let name_hidden = self.name_hidden(target).await?;
        self.record(&operator, "reports", target, reason, String::new())
            .await?;
        let audit = store
            .audit_of(target)
            .await?
            .into_iter()
            .map(audit_record)
            .collect();
        Ok(pb::GetReportsResponse {
            display_name: user.display_name,
            name_hidden,
            reports: reports.into_iter().map(report_to_pb).collect(),
            matches,
            audit,
        })
    }

    pub(super) async fn resolve(
        &self,
        operator: Operator,
        req: pb::ResolveReportsRequest,
    ) -> Result<pb::ResolveReportsResponse> {
        let reason = check_reason(&req.reason)?.to_owned();
        let resolution = match pb::ReportAction::try_from(req.action) {
            Ok(pb::ReportAction::Dismiss) => Resolution::Dismiss,
            Ok(pb::ReportAction::Rename) => Resolution::Rename,
            Ok(pb::ReportAction::Ban) => Resolution::Ban,
            _ => {
                return Err(AccountsError::invalid(
                    "action",
                    "choose one: REPORT_ACTION_DISMISS, _RENAME or _BAN",
                ));
            }
        };
        let target = self.target(&req.user_id).await?;
        let store = &self.api().inner.store;
        let open = store
            .reports_of(target)
            .await?
            .iter()
            .filter(|r| r.resolved.is_none())
            .count();
        if open == 0 {
            return Err(AccountsError::Precondition(
                "the player has no open report to resolve",
            ));
        }
        let mut answer = pb::ResolveReportsResponse::default();
        // The action first, through the same paths as RenamePlayer and BanPlayer (each
        // audited as itself); the reports are closed only once it took effect.
        match resolution {
            Resolution::Dismiss => {}
            Resolution::Rename => {
                let display_name = if req.display_name.trim().is_empty() {
                    super::provider::random_member_name().as_str().to_owned()
                } else {
                    req.display_name
                };
                let renamed = self
                    .rename(
                        operator.clone(),
                        pb::RenamePlayerRequest {
                            user_id: req.user_id.clone(),
                            display_name,
                            reason: reason.clone(),
                        },
                    )
                    .await?;
                answer.display_name = renamed.display_name;
            }
            Resolution::Ban => {
                let banned = self
                    .ban(
                        operator.clone(),
                        pb::BanPlayerRequest {
                            user_id: req.user_id.clone(),
                            reason: reason.clone(),
                            expires_at: req.ban_expires_at,
                        },
                    )
                    .await?;
                answer.ban_until = banned.until;
            }
        }
        let closed = store
            .resolve_reports(target, resolution, domain::now())
            .await?;
        answer.resolved = closed.reports;
        self.record(
            &operator,
            "resolve",
            target,
            &reason,
            format!("{}: {} reports", resolution.as_str(), closed.reports),
        )
        .await?;
        answer.reporters_notified = self.api().tell_reporters(target, &closed.reporters).await;
        Ok(answer)
    }
}
