//! ReportPlayer: a player reports another to the moderators ([`crate::reports`] holds
//! the rules; the store files the report under the per-reporter limit in one step).

use basra_platform::auth::{Caller, Role};
use basra_proto::basra::accounts::v1 as pb;
use basra_records::wire::timestamp_to_proto;
use uuid::Uuid;

use super::AccountsApi;
use crate::domain;
use crate::error::{AccountsError, Result};
use crate::reports::{MAX_COMMENT_CHARS, MAX_MATCH_ID_CHARS, ReportReason};
use crate::store::{ClosedReport, Filing, NewReport, Store};

/// The reason a request names.
pub(super) fn reason_from_pb(raw: i32) -> Result<ReportReason> {
    match pb::ReportReason::try_from(raw) {
        Ok(pb::ReportReason::OffensiveName) => Ok(ReportReason::OffensiveName),
        Ok(pb::ReportReason::Cheating) => Ok(ReportReason::Cheating),
        Ok(pb::ReportReason::ChatAbuse) => Ok(ReportReason::ChatAbuse),
        Ok(pb::ReportReason::Other) => Ok(ReportReason::Other),
        _ => Err(AccountsError::invalid(
            "reason",
            "choose one: REPORT_REASON_OFFENSIVE_NAME, _CHEATING, _CHAT_ABUSE or _OTHER",
        )),
    }
}

/// The reason as the API names it.
pub(super) fn reason_to_pb(reason: ReportReason) -> pb::ReportReason {
    match reason {
        ReportReason::OffensiveName => pb::ReportReason::OffensiveName,
        ReportReason::Cheating => pb::ReportReason::Cheating,
        ReportReason::ChatAbuse => pb::ReportReason::ChatAbuse,
        ReportReason::Other => pb::ReportReason::Other,
    }
}

impl<S: Store> AccountsApi<S> {
    pub(super) async fn do_report_player(
        &self,
        caller: Caller,
        req: pb::ReportPlayerRequest,
    ) -> Result<pb::ReportPlayerResponse> {
        if caller.role != Role::Player {
            return Err(AccountsError::PermissionDenied(
                "only a player reports a player: sign in as one",
            ));
        }
        let target = Uuid::parse_str(&req.user_id)
            .map_err(|_| AccountsError::invalid("user_id", "is not a user id"))?;
        if target == caller.user_id {
            return Err(AccountsError::invalid(
                "user_id",
                "is your own: a player cannot report themselves",
            ));
        }
        let reason = reason_from_pb(req.reason)?;
        let match_id = req.match_id.trim();
        if match_id.chars().count() > MAX_MATCH_ID_CHARS {
            return Err(AccountsError::invalid(
                "match_id",
                format!("at most {MAX_MATCH_ID_CHARS} characters"),
            ));
        }
        let comment = req.comment.trim();
        let chars = comment.chars().count();
        if chars > MAX_COMMENT_CHARS {
            return Err(AccountsError::invalid(
                "comment",
                format!("at most {MAX_COMMENT_CHARS} characters, not {chars}"),
            ));
        }
        let report = NewReport {
            id: Uuid::now_v7(),
            reporter_id: caller.user_id,
            target_id: target,
            reason,
            match_id: (!match_id.is_empty()).then(|| match_id.to_owned()),
            comment: comment.to_owned(),
            at: domain::now(),
        };
        match self
            .inner
            .store
            .file_report(&report, self.inner.config.reports)
            .await?
        {
            Filing::Filed { .. } => {
                tracing::info!(reporter = %caller.user_id, %target, reason = reason.as_str(), "player reported");
                Ok(pb::ReportPlayerResponse {
                    report_id: report.id.to_string(),
                })
            }
            Filing::UnknownTarget => Err(AccountsError::UserNotFound),
            Filing::NotInMatch => Err(AccountsError::Precondition(
                "match_id names no recorded match in which both you and this player held a seat",
            )),
            Filing::Limited { next_at } => Err(AccountsError::ReportsLimited { next_at }),
        }
    }
}

impl<S: Store> AccountsApi<S> {
    /// Tells each reporter of `closed` (reports about `target`) that their report was
    /// handled (never what was done); answers how many were told. A notice that cannot
    /// be stored is logged, not retried: the resolution stands.
    /// The notice is the inbox's `report_handled` (their newest report about `target`
    /// that the resolution closed), kept once per report.
    pub(super) async fn tell_reporters(&self, target: Uuid, closed: &[ClosedReport]) -> u32 {
        let mut told = 0;
        for report in closed {
            let body = pb::notice::Body::ReportHandled(pb::ReportHandledNotice {
                report_id: report.report_id.to_string(),
                target_user_id: target.to_string(),
                reported_at: Some(timestamp_to_proto(report.at)),
            });
            let dedupe_key = format!("report-handled:{}", report.report_id);
            match self
                .keep_notice(report.reporter_id, body, Some(dedupe_key), Some(target))
                .await
            {
                Ok(_) => told += 1,
                Err(err) => {
                    tracing::warn!(error = %err, reporter = %report.reporter_id, "a reporter was not told their report was handled");
                }
            }
        }
        told
    }
}
