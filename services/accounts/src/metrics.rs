//! The accounts service's Prometheus metrics (`basra_accounts_…`): sign-ins by kind and
//! result, RecordMatch latency and result, the database pool, the friends' feeds open and
//! the presence reports received. Served by
//! `basra_platform::metrics` on `[metrics] listen`.

use std::sync::Arc;

use prometheus_client::{
    encoding::EncodeLabelSet,
    metrics::{counter::Counter, family::Family, gauge::Gauge, histogram::Histogram},
    registry::Registry,
};

/// The labels of a sign-in: how (`guest`, `register`, `login`, `refresh`) and what came
/// of it (`ok`, or the gRPC code in snake case: `unauthenticated`, `resource_exhausted`…).
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct SignInLabels {
    /// How.
    pub kind: &'static str,
    /// What came of it.
    pub result: String,
}

/// The label of a RecordMatch: `recorded`, `duplicate` (already recorded), or the gRPC
/// code in snake case.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct ResultLabel {
    /// What came of it.
    pub result: String,
}

/// The label of the pool gauge: `idle` or `in_use`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct PoolLabel {
    /// Connection state.
    pub state: &'static str,
}

/// The service's metrics.
#[derive(Debug)]
pub struct AccountsMetrics {
    registry: Arc<Registry>,
    /// Sign-ins by kind and result.
    pub sign_ins: Family<SignInLabels, Counter>,
    /// RecordMatch calls by result.
    pub record_match: Family<ResultLabel, Counter>,
    /// RecordMatch latency.
    pub record_match_seconds: Histogram,
    /// Database connections by state.
    pub db_connections: Family<PoolLabel, Gauge>,
    /// The pool's most connections.
    pub db_max_connections: Gauge,
    /// WatchFriends streams open on this replica.
    pub feeds_open: Gauge,
    /// Presence reports received from game-session and matchmaking.
    pub presence_reports: Counter,
    /// Pushes by what became of them (`crate::push`).
    pub pushes: crate::push::PushMetrics,
}

impl AccountsMetrics {
    /// The metrics, registered in a registry of their own ([`AccountsMetrics::registry`]).
    pub fn new() -> AccountsMetrics {
        let sign_ins = Family::<SignInLabels, Counter>::default();
        let record_match = Family::<ResultLabel, Counter>::default();
        let record_match_seconds = Histogram::new(basra_platform::metrics::latency_buckets());
        let db_connections = Family::<PoolLabel, Gauge>::default();
        let db_max_connections = Gauge::default();
        let feeds_open = Gauge::default();
        let presence_reports = Counter::default();
        let mut registry = Registry::with_prefix("basra_accounts");
        registry.register("sign_ins", "Sign-ins by kind and result", sign_ins.clone());
        registry.register(
            "record_match",
            "RecordMatch calls by result",
            record_match.clone(),
        );
        registry.register(
            "record_match_seconds",
            "RecordMatch latency",
            record_match_seconds.clone(),
        );
        registry.register(
            "db_connections",
            "Database pool connections by state",
            db_connections.clone(),
        );
        registry.register(
            "feeds_open",
            "WatchFriends streams open on this replica",
            feeds_open.clone(),
        );
        registry.register(
            "presence_reports",
            "Presence reports received (ReportPresence)",
            presence_reports.clone(),
        );
        registry.register(
            "db_max_connections",
            "The database pool's most connections",
            db_max_connections.clone(),
        );
        // Every series the alert rules read exists from the start (a rate over a series
        // that appears later misses its first increase).
        for kind in ["guest", "register", "login", "refresh", "provider"] {
            for result in ["ok", "internal", "unavailable"] {
                let _ = sign_ins.get_or_create(&SignInLabels {
                    kind,
                    result: result.to_owned(),
                });
            }
        }
        for result in ["recorded", "duplicate", "internal", "unavailable"] {
            let _ = record_match.get_or_create(&ResultLabel {
                result: result.to_owned(),
            });
        }
        let pushes = crate::push::PushMetrics::register(&mut registry);
        AccountsMetrics {
            registry: Arc::new(registry),
            pushes,
            sign_ins,
            record_match,
            record_match_seconds,
            db_connections,
            db_max_connections,
            feeds_open,
            presence_reports,
        }
    }

    /// The registry holding these metrics, to serve.
    pub fn registry(&self) -> Arc<Registry> {
        Arc::clone(&self.registry)
    }

    /// Counts a sign-in of `kind` that ended with `outcome`.
    pub fn sign_in<T>(&self, kind: &'static str, outcome: &Result<T, tonic::Status>) {
        self.sign_ins
            .get_or_create(&SignInLabels {
                kind,
                result: outcome_label(outcome),
            })
            .inc();
    }

    /// Sets the pool gauges.
    pub fn set_pool(&self, size: u32, idle: usize, max: u32) {
        let idle = i64::try_from(idle).unwrap_or(i64::MAX);
        self.db_connections
            .get_or_create(&PoolLabel { state: "idle" })
            .set(idle);
        self.db_connections
            .get_or_create(&PoolLabel { state: "in_use" })
            .set(i64::from(size) - idle);
        self.db_max_connections.set(i64::from(max));
    }
}

impl Default for AccountsMetrics {
    fn default() -> Self {
        AccountsMetrics::new()
    }
}

/// `ok`, or the status code in snake case.
pub fn outcome_label<T>(outcome: &Result<T, tonic::Status>) -> String {
    match outcome {
        Ok(_) => "ok".to_owned(),
        Err(status) => code_label(status.code()),
    }
}

/// A gRPC code in snake case (`resource_exhausted`).
pub fn code_label(code: tonic::Code) -> String {
    let name = format!("{code:?}");
    let mut label = String::with_capacity(name.len() + 4);
    for (i, c) in name.chars().enumerate() {
        if c.is_uppercase() && i > 0 {
            label.push('_');
        }
        label.push(c.to_ascii_lowercase());
    }
    label
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_snake_case() {
        assert_eq!(
            code_label(tonic::Code::ResourceExhausted),
            "resource_exhausted"
        );
        assert_eq!(code_label(tonic::Code::Unauthenticated), "unauthenticated");
        assert_eq!(outcome_label::<()>(&Ok(())), "ok");
    }
}
