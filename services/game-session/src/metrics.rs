//! The replica's Prometheus metrics (`basra_game_…`), recorded by the replica's commits, the service
//! and the outbox forwarder around their store calls, and served by
//! `basra_platform::metrics` on `[metrics] listen`.
//!
//! `basra_game_open_streams` is the per-pod metric game-session's autoscaler targets
//! (deploy/k8s/overlays/prod/autoscaling.yaml through prometheus-adapter): a contract,
//! checked against a running replica by the end-to-end suite (`tests/metrics.rs`).

use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use prometheus_client::{
    encoding::EncodeLabelSet,
    metrics::{counter::Counter, family::Family, gauge::Gauge, histogram::Histogram},
    registry::Registry,
};

/// The `result` label of ended matches: how the match ended.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct EndLabel {
    /// `won`, `drawn` (no winner).
    pub result: &'static str,
}

/// The metrics of one replica. Cheap to update: atomics only.
#[derive(Debug)]
pub struct GameMetrics {
    registry: Arc<Registry>,
    /// Play streams open on this replica.
    pub open_streams: Gauge,
    /// Rooms with a Play stream on this replica (set every second).
    pub rooms_watched: Gauge,
    /// Streams refused at `game.max_streams`.
    pub streams_refused: Counter,
    /// Joins that waited for a turn at `game.join_concurrency` (a join storm).
    pub joins_queued: Counter,
    /// Cards played (by players, bots and timed-out turns).
    pub plays: Counter,
    /// Events a stream sent as the bytes another stream of the room had encoded
    /// (`crate::replica::shared_bytes`).
    pub events_shared: Counter,
    /// Rooms created here.
    pub rooms_created: Counter,
    /// Matches ended here, by result.
    pub matches_ended: Family<EndLabel, Counter>,
    /// Time of one compare-and-set commit to the room store.
    pub commit_seconds: Histogram,
    /// Commits refused because another change landed first (retried).
    pub cas_conflicts: Counter,
    /// Commits made against the room state this replica held, refused because the room
    /// had moved on (reloaded and retried at once; not contention).
    pub stale_states: Counter,
    /// Changes that read their room whole from the store: this replica held no current
    /// state for it (another replica committed the room's last change, a held state was
    /// refused as stale, or none of the room's streams is here).
    pub room_loads: Counter,
    /// Held room states brought up to another replica's plain plays as a stream delivered
    /// them (a load saved).
    pub room_refreshes: Counter,
    /// Changes given up after every retry conflicted (UNAVAILABLE to the caller).
    pub contention_failures: Counter,
    /// Deadlines (turns, bots, grace, rematch) this replica claimed and fired.
    pub timers_fired: Counter,
    /// Outbox records this replica's forwarder holds undelivered (its last round).
    pub outbox_pending: Gauge,
    /// Age of the oldest of them, in seconds (0 when none).
    pub outbox_oldest_age_seconds: Gauge,
    /// Match records delivered to accounts.
    pub outbox_delivered: Counter,
    /// Match records accounts had already recorded (a second delivery: a slow forwarder's
    /// entry was claimed by another, or an answer was lost).
    pub outbox_redelivered: Counter,
    /// 1 while the replica drains (DrainReplica or shutdown), else 0.
    pub draining: Gauge,
    /// The most streams this replica admits.
    pub max_streams: Gauge,
    /// Hard bot decisions searched on the search threads (`crate::replica::bots`).
    pub hard_bot_decisions: Counter,
    /// Hard bot turns that got no thinking slot within `bots.queue_ms` and played greedy.
    pub hard_bot_fallbacks: Counter,
    /// Hard bot turns whose search, started with the turn, had not answered by the end of
    /// the think delay and `bots.hard_max_ms`: played greedy (`crate::replica::timers`).
    pub hard_bot_late_answers: Counter,
    /// Wall time of one hard bot search.
    pub hard_bot_think_seconds: Histogram,
    /// CPU time the hard bot searches used (the thread's own CPU time, Linux).
    pub hard_bot_cpu_seconds: Counter<f64, AtomicU64>,
}

impl GameMetrics {
    /// The metrics, registered in a registry of their own ([`GameMetrics::registry`]).
    pub fn new() -> GameMetrics {
        let metrics = GameMetrics {
            registry: Arc::default(),
            open_streams: Gauge::default(),
            rooms_watched: Gauge::default(),
            streams_refused: Counter::default(),
            joins_queued: Counter::default(),
            plays: Counter::default(),
            events_shared: Counter::default(),
            rooms_created: Counter::default(),
            matches_ended: Family::default(),
            commit_seconds: Histogram::new(basra_platform::metrics::latency_buckets()),
            cas_conflicts: Counter::default(),
            stale_states: Counter::default(),
            room_loads: Counter::default(),
            room_refreshes: Counter::default(),
            contention_failures: Counter::default(),
            timers_fired: Counter::default(),
            outbox_pending: Gauge::default(),
            outbox_oldest_age_seconds: Gauge::default(),
            outbox_delivered: Counter::default(),
            outbox_redelivered: Counter::default(),
            draining: Gauge::default(),
            max_streams: Gauge::default(),
            hard_bot_decisions: Counter::default(),
            hard_bot_fallbacks: Counter::default(),
            hard_bot_late_answers: Counter::default(),
            hard_bot_think_seconds: Histogram::new(basra_platform::metrics::latency_buckets()),
            hard_bot_cpu_seconds: Counter::default(),
        };
        let mut registry = Registry::with_prefix("basra_game");
        let m = &metrics;
        registry.register(
            "open_streams",
            "Play streams open on this replica",
            m.open_streams.clone(),
        );
        registry.register(
            "rooms_watched",
            "Rooms with a Play stream on this replica",
            m.rooms_watched.clone(),
        );
        registry.register(
            "max_streams",
            "The most Play streams this replica admits",
            m.max_streams.clone(),
        );
        registry.register(
            "streams_refused",
            "Play streams refused at max_streams",
            m.streams_refused.clone(),
        );
        registry.register(
            "joins_queued",
            "Joins that waited for a turn at join_concurrency",
            m.joins_queued.clone(),
        );
        registry.register(
            "plays",
            "Cards played (players, bots, timed-out turns)",
            m.plays.clone(),
        );
        registry.register(
            "events_shared",
            "Events sent as the bytes another stream of the room encoded",
            m.events_shared.clone(),
        );
        registry.register("rooms_created", "Rooms created", m.rooms_created.clone());
        registry.register(
            "matches_ended",
            "Matches ended, by result",
            m.matches_ended.clone(),
        );
        registry.register(
            "commit_seconds",
            "Time of one compare-and-set commit to the room store",
            m.commit_seconds.clone(),
        );
        registry.register(
            "cas_conflicts",
            "Commits refused by the version check (retried)",
            m.cas_conflicts.clone(),
        );
        registry.register(
            "stale_states",
            "Commits against a held room state that had moved on (reloaded, retried at once)",
            m.stale_states.clone(),
        );
        registry.register(
            "room_loads",
            "Changes that read their room whole from the store (no current state held here)",
            m.room_loads.clone(),
        );
        registry.register(
            "room_refreshes",
            "Held room states brought up to another replica's plain plays (a load saved)",
            m.room_refreshes.clone(),
        );
        registry.register(
            "contention_failures",
            "Changes given up after every retry conflicted",
            m.contention_failures.clone(),
        );
        registry.register(
            "timers_fired",
            "Deadlines claimed and fired by this replica",
            m.timers_fired.clone(),
        );
        registry.register(
            "outbox_pending",
            "Match records this replica's forwarder holds undelivered",
            m.outbox_pending.clone(),
        );
        registry.register(
            "outbox_oldest_age_seconds",
            "Age of the oldest undelivered match record held here",
            m.outbox_oldest_age_seconds.clone(),
        );
        registry.register(
            "outbox_delivered",
            "Match records delivered to accounts",
            m.outbox_delivered.clone(),
        );
        registry.register(
            "outbox_redelivered",
            "Match records delivered again that accounts had already recorded",
            m.outbox_redelivered.clone(),
        );
        registry.register(
            "draining",
            "1 while this replica drains",
            m.draining.clone(),
        );
        registry.register(
            "hard_bot_decisions",
            "Hard bot decisions searched on the search threads",
            m.hard_bot_decisions.clone(),
        );
        registry.register(
            "hard_bot_fallbacks",
            "Hard bot turns that found no thinking slot in time and played greedy",
            m.hard_bot_fallbacks.clone(),
        );
        registry.register(
            "hard_bot_late_answers",
            "Hard bot turns whose search had not answered by the end of the think delay and one search's time, played greedy",
            m.hard_bot_late_answers.clone(),
        );
        registry.register(
            "hard_bot_think_seconds",
            "Wall time of one hard bot search",
            m.hard_bot_think_seconds.clone(),
        );
        registry.register(
            "hard_bot_cpu_seconds",
            "CPU time the hard bot searches used",
            m.hard_bot_cpu_seconds.clone(),
        );
        for result in ["won", "drawn"] {
            let _ = metrics.matches_ended.get_or_create(&EndLabel { result });
        }
        GameMetrics {
            registry: Arc::new(registry),
            ..metrics
        }
    }

    /// The registry holding these metrics, to serve.
    pub fn registry(&self) -> Arc<Registry> {
        Arc::clone(&self.registry)
    }
}

impl Default for GameMetrics {
    fn default() -> Self {
        GameMetrics::new()
    }
}
