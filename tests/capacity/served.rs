//! What the servers measured of themselves over the window: every latency histogram a
//! service exports (`…_seconds_bucket`: each method's `basra_grpc_server_handling_seconds`,
//! game-session's commits, accounts' RecordMatch…; not the streams' lifetimes), read from
//! its `/metrics` when the window opens and when it closes. Set beside the simulator's
//! own rows (timed from the scheduled instant), a call's time splits into the server's
//! handling and everything before it: the client's queue, the connection, the scheduling
//! of a busy machine. The quantiles are bucket bounds (0.5 ms to 5 s): "≤ 50 ms" means
//! the call ended in the bucket up to 50 ms.

use std::collections::BTreeMap;

/// One histogram: (process, metric and method) → cumulative counts by upper bound.
type Key = (String, String);

/// Every histogram of a set of processes at one instant.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Histograms(BTreeMap<Key, Vec<(f64, f64)>>);

/// A histogram's series left out: stream lifetimes say how long a player stayed, not
/// how long a call took.
const SKIPPED: &[&str] = &["basra_grpc_server_stream_seconds"];

impl Histograms {
    /// Adds the histograms of `text` (Prometheus text format) as `process`'s.
    pub fn add(&mut self, process: &str, text: &str) {
        for line in text.lines() {
            let Some((series, value)) = line.rsplit_once(' ') else {
                continue;
            };
            let Some((name, labels)) = series.split_once('{') else {
                continue;
            };
            let Some(metric) = name.strip_suffix("_bucket") else {
                continue;
            };
            if !metric.ends_with("_seconds") || SKIPPED.contains(&metric) {
                continue;
            }
            let labels = labels.trim_end_matches('}');
            let label = |key: &str| {
                labels.split(',').find_map(|pair| {
                    let (k, v) = pair.split_once('=')?;
                    (k == key).then(|| v.trim_matches('"').to_owned())
                })
            };
            let (Some(le), Ok(count)) = (label("le"), value.parse::<f64>()) else {
                continue;
            };
            let bound = if le == "+Inf" {
                f64::INFINITY
            } else {
                match le.parse::<f64>() {
                    Ok(bound) => bound,
                    Err(_) => continue,
                }
            };
            let what = match label("grpc_method") {
                Some(method) => method,
                None => metric.strip_prefix("basra_").unwrap_or(metric).to_owned(),
            };
            let buckets = self.0.entry((process.to_owned(), what)).or_default();
            // Several label sets of one method (a method of two services) add up.
            match buckets.iter_mut().find(|(b, _)| *b == bound) {
                Some((_, c)) => *c += count,
                None => buckets.push((bound, count)),
            }
        }
        for buckets in self.0.values_mut() {
            buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
        }
    }

    /// What happened between `self` (the earlier read) and `later`: the counts'
    /// differences, histograms with no observation left out.
    pub fn since(&self, later: &Histograms) -> Histograms {
        let mut out = BTreeMap::new();
        for (key, after) in &later.0 {
            let before = self.0.get(key);
            let buckets: Vec<(f64, f64)> = after
                .iter()
                .map(|(bound, count)| {
                    let earlier = before
                        .and_then(|b| b.iter().find(|(x, _)| x == bound))
                        .map_or(0.0, |(_, c)| *c);
                    (*bound, (count - earlier).max(0.0))
                })
                .collect();
            if buckets.last().is_some_and(|(_, total)| *total > 0.0) {
                out.insert(key.clone(), buckets);
            }
        }
        Histograms(out)
    }

    /// The table: per process and histogram, observations and the bucket bounds of the
    /// median and the 99th percentile.
    pub fn table(&self, window_s: f64) -> String {
        let mut out = String::from(
            "server side (each process's own histograms over the window; bucket bounds)\n",
        );
        out.push_str(&format!(
            "{:<24} {:<28} {:>9} {:>8} {:>10} {:>10}\n",
            "process", "method or histogram", "count", "per s", "p50 ≤", "p99 ≤"
        ));
        for ((process, what), buckets) in &self.0 {
            let total = buckets.last().map_or(0.0, |(_, c)| *c);
            out.push_str(&format!(
                "{:<24} {:<28} {:>9.0} {:>8.1} {:>10} {:>10}\n",
                process,
                what,
                total,
                total / window_s.max(1e-9),
                bound_text(bucket_bound(buckets, 0.5)),
                bound_text(bucket_bound(buckets, 0.99)),
            ));
        }
        out
    }
}

/// The upper bound of the bucket in which the `q` quantile falls (cumulative buckets,
/// ascending); infinite when it is past the last finite bound; `None` when empty.
pub fn bucket_bound(buckets: &[(f64, f64)], q: f64) -> Option<f64> {
    let total = buckets.last()?.1;
    if total <= 0.0 {
        return None;
    }
    let rank = (q * total).ceil().max(1.0);
    buckets
        .iter()
        .find(|(_, count)| *count >= rank)
        .map(|(bound, _)| *bound)
}

fn bound_text(bound: Option<f64>) -> String {
    match bound {
        None => "-".into(),
        Some(b) if b.is_infinite() => "> 5 s".into(),
        Some(b) if b < 1.0 => format!("{} ms", b * 1000.0),
        Some(b) => format!("{b} s"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(create_room: [u64; 4], commit: [u64; 4]) -> String {
        let bounds = ["0.01", "0.05", "0.25", "+Inf"];
        let mut out = String::from(
            "# HELP basra_grpc_server_handling_seconds Unary calls.\n\
             # TYPE basra_grpc_server_handling_seconds histogram\n",
        );
        for (le, n) in bounds.iter().zip(create_room) {
            out.push_str(&format!(
                "basra_grpc_server_handling_seconds_bucket{{grpc_service=\"basra.matchmaking.v1.MatchmakingService\",grpc_method=\"CreateRoom\",grpc_type=\"unary\",le=\"{le}\"}} {n}\n"
            ));
        }
        for (le, n) in bounds.iter().zip(commit) {
            out.push_str(&format!(
                "basra_game_commit_seconds_bucket{{le=\"{le}\"}} {n}\n"
            ));
        }
        out.push_str(
            "basra_grpc_server_stream_seconds_bucket{grpc_method=\"Play\",le=\"+Inf\"} 9\n\
             basra_grpc_server_handling_seconds_sum{grpc_method=\"CreateRoom\"} 1.5\n",
        );
        out
    }

    #[test]
    fn the_window_is_the_difference_of_two_reads() {
        let mut open = Histograms::default();
        open.add("matchmaking-0", &text([5, 8, 10, 10], [100, 100, 100, 100]));
        let mut close = Histograms::default();
        close.add(
            "matchmaking-0",
            &text([55, 88, 109, 110], [100, 100, 100, 100]),
        );
        let window = open.since(&close);
        let create = &window.0[&("matchmaking-0".into(), "CreateRoom".into())];
        assert_eq!(
            create,
            &vec![
                (0.01, 50.0),
                (0.05, 80.0),
                (0.25, 99.0),
                (f64::INFINITY, 100.0)
            ]
        );
        assert_eq!(bucket_bound(create, 0.5), Some(0.01));
        assert_eq!(bucket_bound(create, 0.99), Some(0.25));
        assert_eq!(bucket_bound(create, 0.999), Some(f64::INFINITY));
        // Nothing committed in the window, streams' lifetimes never read.
        assert_eq!(window.0.len(), 1, "{window:?}");
        let table = window.table(10.0);
        assert!(table.contains("CreateRoom"), "{table}");
        assert!(
            table.contains("10 ms") && table.contains("250 ms"),
            "{table}"
        );
    }

    #[test]
    fn a_histogram_without_a_method_is_named_by_its_metric() {
        let mut open = Histograms::default();
        open.add("game-0", &text([0; 4], [0; 4]));
        let mut close = Histograms::default();
        close.add("game-0", &text([0; 4], [7, 9, 9, 10]));
        let window = open.since(&close);
        let commit = &window.0[&("game-0".into(), "game_commit_seconds".into())];
        assert_eq!(bucket_bound(commit, 0.5), Some(0.01));
        assert_eq!(bucket_bound(commit, 0.99), Some(f64::INFINITY));
        assert_eq!(bucket_bound(&[], 0.5), None);
        assert_eq!(
            bucket_bound(&[(0.01, 0.0), (f64::INFINITY, 0.0)], 0.5),
            None
        );
    }
}
