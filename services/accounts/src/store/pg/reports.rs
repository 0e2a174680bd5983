//! Reports on PostgreSQL ([`Reports`]): the `player_reports` table.

use chrono::{DateTime, Utc};
use sqlx::Row;
use sqlx::postgres::PgRow;
use uuid::Uuid;

use super::PgStore;
use crate::error::{AccountsError, Result};
use crate::reports::{ReportReason, ReportRules, Resolution};
use crate::store::{ClosedReport, Filing, NewReport, Report, ReportedTarget, Reports, Resolved};

fn reason(raw: &str) -> Result<ReportReason> {
    ReportReason::parse(raw)
        .ok_or_else(|| AccountsError::Internal(format!("a stored report reason {raw:?}")))
}

fn resolution(raw: &str) -> Result<Resolution> {
    [Resolution::Dismiss, Resolution::Rename, Resolution::Ban]
        .into_iter()
        .find(|r| r.as_str() == raw)
        .ok_or_else(|| AccountsError::Internal(format!("a stored resolution {raw:?}")))
}

fn report_from_row(row: &PgRow) -> Result<Report> {
    let resolved_at: Option<DateTime<Utc>> = row.try_get("resolved_at")?;
    let how: Option<String> = row.try_get("resolution")?;
    let resolved = match (resolved_at, how) {
        (Some(at), Some(how)) => Some((at, resolution(&how)?)),
        _ => None,
    };
    Ok(Report {
        id: row.try_get("id")?,
        reporter_id: row.try_get("reporter_id")?,
        target_id: row.try_get("target_id")?,
        reason: reason(row.try_get("reason")?)?,
        match_id: row.try_get("match_id")?,
        comment: row.try_get("comment")?,
        display_name: row.try_get("display_name")?,
        at: row.try_get("at")?,
        resolved,
    })
}

impl Reports for PgStore {
    async fn file_report(&self, report: &NewReport, rules: ReportRules) -> Result<Filing> {
        let mut tx = self.pool.begin().await?;
        // The reporter's row serializes their filings: two at once count each other.
        let reporter = sqlx::query("SELECT 1 FROM users WHERE id = $1 FOR UPDATE")
            .bind(report.reporter_id)
            .fetch_optional(&mut *tx)
            .await?;
        if reporter.is_none() {
            return Err(AccountsError::UserNotFound);
        }
        let Some(display_name) =
            sqlx::query_scalar::<_, String>("SELECT display_name FROM users WHERE id = $1")
                .bind(report.target_id)
                .fetch_optional(&mut *tx)
                .await?
        else {
            return Ok(Filing::UnknownTarget);
        };
        if let Some(match_id) = &report.match_id {
            let seated: i64 = sqlx::query_scalar(
                "SELECT count(DISTINCT user_id) FROM match_players
                  WHERE match_id = $1 AND user_id IN ($2, $3)",
            )
            .bind(match_id)
            .bind(report.reporter_id)
            .bind(report.target_id)
            .fetch_one(&mut *tx)
            .await?;
            if seated < 2 {
                return Ok(Filing::NotInMatch);
            }
        }
        let recent: Vec<DateTime<Utc>> =
            sqlx::query_scalar("SELECT at FROM player_reports WHERE reporter_id = $1 AND at > $2")
                .bind(report.reporter_id)
                .bind(rules.window_start(report.at))
                .fetch_all(&mut *tx)
                .await?;
        if let Some(next_at) = rules.decide(&recent, report.at) {
            return Ok(Filing::Limited { next_at });
        }
        sqlx::query(
            "INSERT INTO player_reports
                 (id, at, reporter_id, target_id, reason, match_id, comment, display_name)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
        )
        .bind(report.id)
        .bind(report.at)
        .bind(report.reporter_id)
        .bind(report.target_id)
        .bind(report.reason.as_str())
        .bind(&report.match_id)
        .bind(&report.comment)
        .bind(&display_name)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(Filing::Filed { display_name })
    }

    async fn open_reports(&self, limit: u32) -> Result<Vec<ReportedTarget>> {
        let rows = sqlx::query(
            "SELECT r.target_id, u.display_name,
                    count(DISTINCT r.reporter_id) AS reporters, count(*) AS reports,
                    array_agg(DISTINCT r.reason) AS reasons,
                    min(r.at) AS first_at, max(r.at) AS last_at
               FROM player_reports r JOIN users u ON u.id = r.target_id
              WHERE r.resolved_at IS NULL
              GROUP BY r.target_id, u.display_name
              ORDER BY reporters DESC, first_at, r.target_id
              LIMIT $1",
        )
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|row| {
                let raw: Vec<String> = row.try_get("reasons")?;
                let mut reasons = raw.iter().map(|r| reason(r)).collect::<Result<Vec<_>>>()?;
                reasons.sort_unstable();
                Ok(ReportedTarget {
                    target_id: row.try_get("target_id")?,
                    display_name: row.try_get("display_name")?,
                    reporters: u32::try_from(row.try_get::<i64, _>("reporters")?).unwrap_or(0),
                    reports: u32::try_from(row.try_get::<i64, _>("reports")?).unwrap_or(0),
                    reasons,
                    first_at: row.try_get("first_at")?,
                    last_at: row.try_get("last_at")?,
                })
            })
            .collect()
    }

    async fn reports_of(&self, target: Uuid) -> Result<Vec<Report>> {
        sqlx::query(
            "SELECT id, reporter_id, target_id, reason, match_id, comment, display_name, at,
                    resolved_at, resolution
               FROM player_reports WHERE target_id = $1 ORDER BY at DESC, id DESC",
        )
        .bind(target)
        .fetch_all(&self.pool)
        .await?
        .iter()
        .map(report_from_row)
        .collect()
    }

    async fn reports_by(&self, reporter: Uuid) -> Result<Vec<Report>> {
        sqlx::query(
            "SELECT id, reporter_id, target_id, reason, match_id, comment, display_name, at,
                    resolved_at, resolution
               FROM player_reports WHERE reporter_id = $1 ORDER BY at DESC, id DESC",
        )
        .bind(reporter)
        .fetch_all(&self.pool)
        .await?
        .iter()
        .map(report_from_row)
        .collect()
    }

    async fn resolve_reports(
        &self,
        target: Uuid,
        resolution: Resolution,
        at: DateTime<Utc>,
    ) -> Result<Resolved> {
        let rows = sqlx::query(
            "UPDATE player_reports SET resolved_at = $2, resolution = $3
              WHERE target_id = $1 AND resolved_at IS NULL
              RETURNING reporter_id, id, at",
        )
        .bind(target)
        .bind(at)
        .bind(resolution.as_str())
        .fetch_all(&self.pool)
        .await?;
        let closed = rows
            .iter()
            .map(|row| {
                Ok(ClosedReport {
                    reporter_id: row.try_get("reporter_id")?,
                    report_id: row.try_get("id")?,
                    at: row.try_get("at")?,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Resolved::of(closed))
    }

    async fn hidden_among(&self, ids: &[Uuid], reporters: u32) -> Result<Vec<Uuid>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        Ok(sqlx::query_scalar(
            "SELECT target_id FROM player_reports
              WHERE target_id = ANY($1) AND resolved_at IS NULL AND reason = $2
              GROUP BY target_id HAVING count(DISTINCT reporter_id) >= $3
              ORDER BY target_id",
        )
        .bind(ids)
        .bind(ReportReason::OffensiveName.as_str())
        .bind(i64::from(reporters))
        .fetch_all(&self.pool)
        .await?)
    }
}
