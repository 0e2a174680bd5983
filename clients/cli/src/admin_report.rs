//! `basra admin report …`: reports of players over accounts' `AccountsAdminService`
//! (ListReports, GetReports, ResolveReports), with an operator token. Showing a player's
//! reports and resolving them are audited; a resolution by rename or ban goes through
//! the same paths as `basra admin player rename|ban`.

use basra_proto::basra::accounts::v1::{
    GetReportsRequest, GetReportsResponse, ListReportsRequest, ReportAction, ReportReason,
    ReportedPlayer, ResolveReportsRequest, ResolveReportsResponse,
};

use crate::admin_output::iso;
use crate::admin_player::PlayerAdmin;

/// What a moderator decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Decision {
    /// Nothing to act on (a hidden name is shown again).
    Dismiss,
    /// Replace the display name (`--name`, or a neutral generated one).
    Rename,
    /// Ban the player (`--hours`, or for good).
    Ban,
}

impl Decision {
    fn to_pb(self) -> ReportAction {
        match self {
            Decision::Dismiss => ReportAction::Dismiss,
            Decision::Rename => ReportAction::Rename,
            Decision::Ban => ReportAction::Ban,
        }
    }
}

/// A reason's short name (`offensive-name`).
pub fn reason_name(reason: i32) -> String {
    ReportReason::try_from(reason)
        .map(|r| {
            r.as_str_name()
                .trim_start_matches("REPORT_REASON_")
                .to_ascii_lowercase()
                .replace('_', "-")
        })
        .unwrap_or_else(|_| reason.to_string())
}

impl PlayerAdmin {
    /// The players with open reports, most reporters first.
    pub async fn reports(&self, limit: u32) -> anyhow::Result<Vec<ReportedPlayer>> {
        Ok(self
            .client()
            .list_reports(ListReportsRequest { limit })
            .await?
            .into_inner()
            .players)
    }

    /// One player's reports and their context (audited as `reports`).
    pub async fn player_reports(
        &self,
        user_id: &str,
        reason: &str,
    ) -> anyhow::Result<GetReportsResponse> {
        Ok(self
            .client()
            .get_reports(GetReportsRequest {
                user_id: user_id.to_owned(),
                reason: reason.to_owned(),
            })
            .await?
            .into_inner())
    }

    /// Resolves every open report about `user_id`.
    pub async fn resolve(
        &self,
        user_id: &str,
        decision: Decision,
        reason: &str,
        name: Option<&str>,
        hours: Option<u64>,
    ) -> anyhow::Result<ResolveReportsResponse> {
        let ban_expires_at = hours.map(|h| prost_types::Timestamp {
            seconds: chrono::Utc::now()
                .timestamp()
                .saturating_add(i64::try_from(h.saturating_mul(3600)).unwrap_or(i64::MAX)),
            nanos: 0,
        });
        Ok(self
            .client()
            .resolve_reports(ResolveReportsRequest {
                user_id: user_id.to_owned(),
                action: decision.to_pb() as i32,
                reason: reason.to_owned(),
                display_name: name.unwrap_or_default().to_owned(),
                ban_expires_at,
            })
            .await?
            .into_inner())
    }
}

/// `list`'s answer, a line per player.
pub fn list(players: &[ReportedPlayer]) -> String {
    if players.is_empty() {
        return "no open reports\n".to_owned();
    }
    let mut text = String::new();
    for p in players {
        let reasons: Vec<String> = p.reasons.iter().map(|r| reason_name(*r)).collect();
        text.push_str(&format!(
            "{} {:?}{} reporters {} reports {} [{}] first {} last {}\n",
            p.user_id,
            p.display_name,
            if p.name_hidden { " (name hidden)" } else { "" },
            p.reporters,
            p.reports,
            reasons.join(", "),
            iso(p.first_reported_at.as_ref()).unwrap_or_default(),
            iso(p.last_reported_at.as_ref()).unwrap_or_default(),
        ));
    }
    text
}

/// `show`'s answer as lines of text.
pub fn describe(user_id: &str, context: &GetReportsResponse) -> String {
    let mut text = format!(
        "{user_id} {:?}{}\n",
        context.display_name,
        if context.name_hidden {
            " (name hidden from other players)"
        } else {
            ""
        }
    );
    for r in &context.reports {
        let state = if r.resolution.is_empty() {
            "open".to_owned()
        } else {
            format!(
                "{} {}",
                r.resolution,
                iso(r.resolved_at.as_ref()).unwrap_or_default()
            )
        };
        text.push_str(&format!(
            "  report {} {} by {} as {:?}: {}{} [{state}]\n",
            iso(r.reported_at.as_ref()).unwrap_or_default(),
            reason_name(r.reason),
            r.reporter_id,
            r.display_name,
            if r.match_id.is_empty() {
                String::new()
            } else {
                format!("match {} ", r.match_id)
            },
            if r.comment.is_empty() {
                "-"
            } else {
                &r.comment
            },
        ));
    }
    for m in &context.matches {
        let seats: Vec<String> = m
            .seats
            .iter()
            .map(|s| format!("{:?}", s.display_name))
            .collect();
        text.push_str(&format!(
            "  match {} ended {} seats [{}] totals {:?}\n",
            m.match_id,
            iso(m.ended_at.as_ref()).unwrap_or_default(),
            seats.join(", "),
            m.final_totals
        ));
    }
    for a in &context.audit {
        text.push_str(&format!(
            "  audit {} {} by {}: {} {}\n",
            iso(a.at.as_ref()).unwrap_or_default(),
            a.action,
            if a.operator_name.is_empty() {
                a.operator_id.as_str()
            } else {
                a.operator_name.as_str()
            },
            a.reason,
            a.detail
        ));
    }
    text
}

/// `resolve`'s answer.
pub fn resolved(user_id: &str, decision: Decision, answer: &ResolveReportsResponse) -> String {
    let done = match decision {
        Decision::Dismiss => "dismissed".to_owned(),
        Decision::Rename => format!("renamed to {:?}", answer.display_name),
        Decision::Ban => format!(
            "banned until {}",
            iso(answer.ban_until.as_ref()).unwrap_or_default()
        ),
    };
    format!(
        "{user_id}: {done}; {} reports closed, {} reporters notified",
        answer.resolved, answer.reporters_notified
    )
}
