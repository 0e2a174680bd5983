//! The table the suite prints (and the README shows): one row per scenario.

use std::time::Duration;

/// What one scenario saw.
#[derive(Debug, Default)]
pub struct Row {
    /// The scenario's letter and title, as the report prints it.
    pub scenario: String,
    /// Matches played.
    pub matches: usize,
    /// Logged events received and checked by the players.
    pub events: u64,
    /// Events missed (sequence gaps).
    pub lost: u64,
    /// Events received twice.
    pub duplicated: u64,
    /// Matches recorded twice or not at all, or rated other than once.
    pub records_wrong: u64,
    /// Automatic plays of players who were connected (goal: none).
    pub automatic_while_connected: u64,
    /// DISCONNECTED announced for a seat whose player had a stream open (goal: none).
    pub disconnected_while_connected: u64,
    /// Every resumed stream's time from asking to its first event.
    pub resume_latencies: Vec<Duration>,
    /// The scenario's time to recover (see its notes).
    pub recover: Option<Duration>,
    /// Figures and observations.
    pub notes: Vec<String>,
    /// For a scenario that reports a figure against a goal instead of a promise: whether
    /// the goal was met (shown in the result column; it does not fail the run).
    pub goal: Option<bool>,
    /// Broken promises: the scenario fails if any.
    pub failures: Vec<String>,
}

impl Row {
    /// An empty row.
    pub fn new(scenario: &str, matches: usize) -> Row {
        Row {
            scenario: scenario.to_owned(),
            matches,
            ..Row::default()
        }
    }

    /// Whether every promise held.
    pub fn passed(&self) -> bool {
        self.lost == 0
            && self.duplicated == 0
            && self.records_wrong == 0
            && self.disconnected_while_connected == 0
            && self.automatic_while_connected == 0
            && self.failures.is_empty()
    }

    /// The median and the longest resume (from asking for a stream to its first event).
    pub fn resume_p50_max(&self) -> Option<(Duration, Duration)> {
        let mut sorted = self.resume_latencies.clone();
        sorted.sort_unstable();
        let max = *sorted.last()?;
        Some((sorted[sorted.len() / 2], max))
    }
}

/// The Markdown table of `rows`, then each row's notes and failures.
pub fn render(rows: &[Row]) -> String {
    let mut out = String::from(
        "| scenario | matches | events checked | lost | duplicated | recorded twice / unrecorded | disconnected while connected | automatic while connected | resume p50 / max | time to recover | result |\n|---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for row in rows {
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
            row.scenario,
            row.matches,
            row.events,
            row.lost,
            row.duplicated,
            row.records_wrong,
            row.disconnected_while_connected,
            row.automatic_while_connected,
            row.resume_p50_max()
                .map(|(p50, max)| format!(
                    "{:.0} / {:.0} ms",
                    p50.as_secs_f64() * 1e3,
                    max.as_secs_f64() * 1e3
                ))
                .unwrap_or_else(|| "—".into()),
            row.recover
                .map(|d| format!("{:.1} s", d.as_secs_f64()))
                .unwrap_or_else(|| "—".into()),
            match (row.passed(), row.goal) {
                (false, _) => "FAIL",
                (true, None) => "pass",
                (true, Some(true)) => "goal met",
                (true, Some(false)) => "goal not met",
            }
        ));
    }
    for row in rows {
        out.push_str(&format!("\n{}\n", row.scenario));
        for note in &row.notes {
            out.push_str(&format!("  - {note}\n"));
        }
        for failure in row.failures.iter().take(10) {
            out.push_str(&format!("  - FAILED: {failure}\n"));
        }
        if row.failures.len() > 10 {
            out.push_str(&format!(
                "  - … and {} more failures\n",
                row.failures.len() - 10
            ));
        }
    }
    out
}
