//! The run's report: one row per RPC and stream kind (rate, failures by status,
//! p50/p99/p99.9/max from the scheduled instant), one row per process group (CPU, CPU
//! seconds per player-hour, memory, sockets), and the headline.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::latency::{Series, ms, quantile};
use crate::procs::Usage;

/// A process group's figures over the measured window.
#[derive(Debug, Clone)]
pub struct GroupRow {
    /// accounts-0, game-0, …, redis, postgres, simulator.
    pub name: String,
    /// At the window's start.
    pub start: Usage,
    /// At its end.
    pub end: Usage,
    /// Resident memory over the window's first, middle and last tenth ([`rss_levels`]).
    pub rss_levels: [u64; 3],
    /// The most resident memory seen.
    pub peak_rss: u64,
    /// The most sockets seen.
    pub peak_sockets: u64,
    /// Periods throttled by its pod quota, if it has one.
    pub throttled: Option<u64>,
}

/// The table of series.
pub fn series_table(series: &BTreeMap<String, Series>, seconds: f64) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "| call or stream (latency from the scheduled instant) | count | per s | failed (by status) | p50 ms | p99 ms | p99.9 ms | max ms |"
    );
    let _ = writeln!(out, "|---|---:|---:|---|---:|---:|---:|---:|");
    for (name, s) in series {
        let failed = if s.errors.is_empty() {
            "0".to_owned()
        } else {
            s.errors
                .iter()
                .map(|(code, n)| format!("{n} {code}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let _ = writeln!(
            out,
            "| {name} | {} | {:.1} | {failed} | {} | {} | {} | {} |",
            s.count(),
            s.count() as f64 / seconds.max(1e-9),
            ms(quantile(&s.micros, 0.5)),
            ms(quantile(&s.micros, 0.99)),
            ms(quantile(&s.micros, 0.999)),
            ms(s.micros.last().copied()),
        );
    }
    out
}

/// The table of process groups; `player_hours` spent in the window.
pub fn groups_table(groups: &[GroupRow], seconds: f64, player_hours: f64) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "| process | CPU s | cores (mean) | CPU s per player-hour | RSS first → middle → last tenth, median MiB (peak) | sockets end (peak) | throttled periods (whole run) |"
    );
    let _ = writeln!(out, "|---|---:|---:|---:|---|---|---:|");
    let mib = |b: u64| b as f64 / (1024.0 * 1024.0);
    for g in groups {
        let cpu = (g.end.cpu_seconds - g.start.cpu_seconds).max(0.0);
        let _ = writeln!(
            out,
            "| {} | {cpu:.1} | {:.2} | {:.2} | {:.0} → {:.0} → {:.0} ({:.0}) | {} ({}) | {} |",
            g.name,
            cpu / seconds.max(1e-9),
            cpu / player_hours.max(1e-9),
            mib(g.rss_levels[0]),
            mib(g.rss_levels[1]),
            mib(g.rss_levels[2]),
            mib(g.peak_rss),
            g.end.sockets,
            g.peak_sockets,
            g.throttled.map_or("-".into(), |t| t.to_string()),
        );
    }
    out
}

/// The median resident memory over the first, the middle and the last tenth of `rss`
/// (one read a second over the window; at least one read each). Medians, not single
/// reads: a process's memory swings by what it holds for a moment (accounts: 19 MiB a
/// password hash in flight), and a leak shows as a level that keeps rising from one
/// tenth to the next where a level being reached rises only at first.
pub fn rss_levels(rss: &[u64]) -> [u64; 3] {
    if rss.is_empty() {
        return [0; 3];
    }
    let tenth = (rss.len() / 10).max(1);
    let middle = (rss.len() - tenth) / 2;
    let median = |part: &[u64]| {
        let mut part = part.to_vec();
        part.sort_unstable();
        part[(part.len() - 1) / 2]
    };
    [
        median(&rss[..tenth]),
        median(&rss[middle..middle + tenth]),
        median(&rss[rss.len() - tenth..]),
    ]
}

/// The worst p99 among unary calls (names without `:` or `→`, which mark streams and
/// waits), with its name.
pub fn worst_unary_p99(series: &BTreeMap<String, Series>) -> Option<(String, u32)> {
    series
        .iter()
        .filter(|(name, _)| {
            !name.contains(':') && !name.contains('→') && !name.starts_with("session")
        })
        .filter_map(|(name, s)| Some((name.clone(), quantile(&s.micros, 0.99)?)))
        .max_by_key(|(_, p99)| *p99)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rss_levels_are_medians_of_the_first_middle_and_last_tenth() {
        // A level with spikes of a hash in flight: no growth.
        let spiky: Vec<u64> = (0..100)
            .map(|i| if i % 3 == 0 { 120 } else { 100 })
            .collect();
        assert_eq!(rss_levels(&spiky), [100, 100, 100]);
        // A leak: the level rises through the window.
        let leak: Vec<u64> = (0..100).map(|i| 100 + i).collect();
        assert_eq!(rss_levels(&leak), [104, 149, 194]);
        // A level being reached: growth in the first half only.
        let settling: Vec<u64> = (0..100).map(|i| 100 + i.min(40)).collect();
        assert_eq!(rss_levels(&settling), [104, 140, 140]);
        assert_eq!(rss_levels(&[7]), [7, 7, 7]);
        assert_eq!(rss_levels(&[]), [0, 0, 0]);
    }

    #[test]
    fn tables_and_the_worst_unary_call() {
        let mut series = BTreeMap::new();
        series.insert(
            "GuestLogin (new)".to_owned(),
            Series {
                micros: vec![1_000, 2_000, 30_000],
                errors: BTreeMap::new(),
            },
        );
        series.insert(
            "MatchHistory".to_owned(),
            Series {
                micros: vec![5_000],
                errors: [("Unavailable".to_owned(), 2)].into(),
            },
        );
        // A wait, not a call: left out of the unary worst.
        series.insert(
            "FindMatch quick: queue → matched".to_owned(),
            Series {
                micros: vec![20_000_000],
                errors: BTreeMap::new(),
            },
        );
        assert_eq!(
            worst_unary_p99(&series),
            Some(("GuestLogin (new)".to_owned(), 30_000))
        );
        let table = series_table(&series, 10.0);
        assert!(
            table.contains("| MatchHistory | 3 | 0.3 | 2 Unavailable | 5.0 | 5.0 | 5.0 | 5.0 |"),
            "{table}"
        );
        let group = GroupRow {
            name: "game-0".into(),
            start: Usage {
                cpu_seconds: 10.0,
                rss_bytes: 10 << 20,
                sockets: 5,
                processes: 1,
            },
            end: Usage {
                cpu_seconds: 40.0,
                rss_bytes: 12 << 20,
                sockets: 9,
                processes: 1,
            },
            rss_levels: [10 << 20, 11 << 20, 12 << 20],
            peak_rss: 13 << 20,
            peak_sockets: 11,
            throttled: None,
        };
        // 30 CPU s in 60 s (0.5 cores) for 2 player-hours: 15 CPU s per player-hour.
        let table = groups_table(&[group], 60.0, 2.0);
        assert!(
            table.contains("| game-0 | 30.0 | 0.50 | 15.00 | 10 → 11 → 12 (13) | 9 (11) | - |"),
            "{table}"
        );
    }
}
