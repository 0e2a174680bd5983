//! Typed settings: [`DEFAULTS`] (embedded `config/default.toml`), then the
//! file named by `BASRA_CONFIG_FILE`, then `BASRA_<SECTION>__<KEY>`
//! environment variables. [`Settings::load`] validates everything before a
//! socket is bound.

use std::time::Duration;

pub use basra_platform::auth::{AuthSettings, IdentitySettings};
use basra_platform::config::{self, ConfigError, ServerSettings, TelemetrySettings, Validate};
pub use basra_platform::metrics::MetricsSettings;
pub use basra_platform::redis::RedisSettings;
use serde::Deserialize;

use crate::domain::{PairingParams, WindowParams};

/// The embedded default settings.
pub const DEFAULTS: &str = include_str!("../config/default.toml");

/// Every setting of the matchmaking service.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Settings {
    /// Listen address and drain time.
    pub server: ServerSettings,
    /// Logs and traces.
    pub telemetry: TelemetrySettings,
    /// Where queue and lobby state live (the same section in every service); `memory`:
    /// in this process (`basra dev`).
    pub redis: RedisSettings,
    /// The tokens accepted: issuer, audience, trusted keys by kid (the same section in
    /// every service).
    pub auth: AuthSettings,
    /// game-session.
    pub game: UpstreamSettings,
    /// How to reach accounts (ratings, names, blocks, presence).
    pub accounts: UpstreamSettings,
    /// How the rated queue pairs players: formats, windows, waits, bots.
    pub queue: QueueSettings,
    /// Created rooms.
    pub rooms: RoomSettings,
    /// The metrics endpoint.
    #[serde(default)]
    pub metrics: MetricsSettings,
    /// matchmaking's own signing key for its service tokens to game-session.
    #[serde(default)]
    pub identity: IdentitySettings,
    /// Events (tournaments): their database and their clock.
    #[serde(default)]
    pub events: EventSettings,
}

/// `[events]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct EventSettings {
    /// Where definitions, entries and results live: a PostgreSQL URL, or `memory` (this
    /// process only: `basra dev`, `make run`). Secret: it may hold a password.
    pub database_url: secrecy::SecretString,
    /// The PostgreSQL pool's size.
    pub max_connections: u32,
    /// Whether to apply pending migrations at start.
    pub migrate: bool,
    /// How often the event clock looks at the events that are due.
    pub tick_millis: u64,
    /// How long an event's lease lasts without renewal: a replica that died is replaced
    /// as driver after this long.
    pub lease_millis: u64,
    /// How often a watched event's versions are read (by one poller per event on this
    /// replica, whatever its number of WatchEvent streams); the clock's saves on this
    /// replica make it look at once.
    pub watch_poll_millis: u64,
    /// Most WatchEvent streams one account holds open at once on this replica.
    pub max_watchers_per_account: usize,
    /// How long before the start registered players are told an event without a
    /// check-in window starts soon, in seconds (an event with one tells them when
    /// check-in opens). At most a day.
    pub starting_notice_seconds: u32,
}

impl Default for EventSettings {
    fn default() -> Self {
        EventSettings {
            database_url: "memory".into(),
            max_connections: 8,
            migrate: true,
            tick_millis: 500,
            lease_millis: 5000,
            watch_poll_millis: 250,
            max_watchers_per_account: 4,
            starting_notice_seconds: 300,
        }
    }
}

impl EventSettings {
    /// Whether events live in this process (no database).
    pub fn is_memory(&self) -> bool {
        use secrecy::ExposeSecret as _;
        self.database_url.expose_secret() == "memory"
    }

    fn validate(&self) -> Result<(), String> {
        use secrecy::ExposeSecret as _;
        let url = self.database_url.expose_secret();
        if !(self.is_memory() || url.starts_with("postgres://") || url.starts_with("postgresql://"))
        {
            return Err("events.database_url must be a postgres:// URL or \"memory\" (the value is not shown: it may hold a password)".into());
        }
        if self.max_connections == 0
            || self.tick_millis == 0
            || self.watch_poll_millis == 0
            || self.max_watchers_per_account == 0
        {
            return Err("events.max_connections, tick_millis, watch_poll_millis and max_watchers_per_account must be at least 1".into());
        }
        if self.starting_notice_seconds > crate::events::spec::MAX_CHECK_IN_SECONDS {
            return Err("events.starting_notice_seconds must be at most 86400 (a day)".into());
        }
        if self.lease_millis <= self.tick_millis * 2 {
            return Err("events.lease_millis must exceed two ticks (events.tick_millis)".into());
        }
        Ok(())
    }
}

/// `[game]` and `[accounts]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UpstreamSettings {
    /// gRPC URL.
    pub url: String,
    /// The service token (a JWT with the `service` role) for internal calls:
    /// game-session's room RPCs, accounts' GetPlayers (players' names).
    #[serde(default)]
    pub service_token: String,
    /// Per-call timeout.
    pub timeout_millis: u64,
}

impl UpstreamSettings {
    /// The per-call timeout.
    pub fn timeout(&self) -> Duration {
        Duration::from_millis(self.timeout_millis)
    }
}

/// `[queue]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QueueSettings {
    /// Target scores offered.
    pub target_scores: Vec<u32>,
    /// Window half-width at first.
    pub window_start: f64,
    /// How much the rating window's half-width grows per second of waiting.
    pub window_growth_per_second: f64,
    /// Widest window.
    pub window_max: f64,
    /// Bot wait.
    pub bot_fill_after_seconds: u64,
    /// Heartbeat deadline of an attached ticket.
    pub ticket_ttl_seconds: u64,
    /// How long a detached ticket (and a result) is kept.
    pub resume_grace_seconds: u64,
    /// Longest search.
    pub max_wait_seconds: u64,
    /// Whether guests may search ranked.
    pub guests_may_play_ranked: bool,
    /// Pairing round period.
    pub tick_millis: u64,
    /// Stream refresh period.
    pub heartbeat_millis: u64,
    /// Group lease.
    pub lease_millis: u64,
    /// Wait before a group whose room game-session may not have made is
    /// tried again (same room id).
    pub room_retry_millis: u64,
    /// Attempts at making a group's room (the first, then each retry or takeover:
    /// the group's lease number) before the group is given up and its players told
    /// (CANCEL_REASON_ROOM_UNAVAILABLE).
    pub room_max_attempts: u64,
    /// Groups per round.
    pub max_groups_per_round: usize,
    /// Anchors per format per round.
    pub scan_limit: usize,
    /// Most FindMatch streams one account holds open at once on this replica.
    pub max_streams_per_account: usize,
}

impl QueueSettings {
    /// The rating window.
    pub fn window(&self) -> WindowParams {
        WindowParams {
            start: self.window_start,
            growth_per_second: self.window_growth_per_second,
            max: self.window_max,
        }
    }

    /// What a pairing round needs.
    pub fn pairing(&self) -> PairingParams {
        PairingParams {
            window: self.window(),
            bot_after_ms: ms(self.bot_fill_after_seconds * 1000),
            lease_ms: ms(self.lease_millis),
            max_groups: self.max_groups_per_round,
            scan_limit: self.scan_limit,
            candidates: 16,
            min_round_interval_ms: ms(self.tick_millis),
        }
    }

    /// Heartbeat deadline in ms.
    pub fn ttl_ms(&self) -> i64 {
        ms(self.ticket_ttl_seconds * 1000)
    }

    /// Resume grace in ms.
    pub fn grace_ms(&self) -> i64 {
        ms(self.resume_grace_seconds * 1000)
    }

    /// Wait before a room is tried again, in ms.
    pub fn room_retry_ms(&self) -> i64 {
        ms(self.room_retry_millis)
    }
}

fn ms(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// `[rooms]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RoomSettings {
    /// Wrong codes per window.
    pub wrong_code_max: u32,
    /// The window.
    pub wrong_code_window_seconds: u64,
    /// A room whose seats are not all taken this long after CreateRoom expires: it
    /// leaves the lobby and JoinRoom answers it as closed.
    pub ttl_seconds: u64,
    /// How long an expired room's keys are kept (its code answers "closed" meanwhile;
    /// then NOT_FOUND).
    pub expired_retention_seconds: u64,
}

impl RoomSettings {
    /// [`ttl_seconds`](Self::ttl_seconds) in milliseconds.
    pub fn ttl_ms(&self) -> i64 {
        (self.ttl_seconds * 1000) as i64
    }

    /// [`expired_retention_seconds`](Self::expired_retention_seconds) in milliseconds.
    pub fn expired_retention_ms(&self) -> i64 {
        (self.expired_retention_seconds * 1000) as i64
    }
}

impl Settings {
    /// Loads and validates the settings of this process.
    pub fn load() -> Result<Settings, ConfigError> {
        config::load(DEFAULTS)
    }

    /// The embedded defaults with `env` applied as environment variables.
    pub fn from_env(
        env: impl IntoIterator<Item = (String, String)>,
    ) -> Result<Settings, ConfigError> {
        config::load_with_env(DEFAULTS, env)
    }
}

impl Validate for Settings {
    fn validate(&self) -> Result<(), String> {
        self.server.validate()?;
        self.telemetry.validate()?;
        self.redis.validate()?;
        if self.redis.wait_replicas != 0 {
            return Err(
                "redis.wait_replicas must be 0 in matchmaking: a resuming client re-creates \
                 its ticket, so its writes do not wait for replicas"
                    .into(),
            );
        }
        self.auth.validate()?;
        self.identity.validate()?;
        let q = &self.queue;
        if q.target_scores.is_empty() || q.target_scores.contains(&0) {
            return Err("queue.target_scores must list at least one positive score".into());
        }
        let window_ok = q.window_start >= 0.0
            && q.window_growth_per_second >= 0.0
            && q.window_max >= q.window_start;
        if !window_ok {
            return Err(
                "queue.window_start and window_growth_per_second must be >= 0, and window_max >= window_start"
                    .into(),
            );
        }
        if q.tick_millis == 0
            || q.heartbeat_millis == 0
            || q.room_retry_millis == 0
            || q.room_max_attempts == 0
        {
            return Err(
                "queue.tick_millis, heartbeat_millis, room_retry_millis and room_max_attempts \
                 must be at least 1"
                    .into(),
            );
        }
        if q.max_streams_per_account == 0 {
            return Err("queue.max_streams_per_account must be at least 1".into());
        }
        if q.ticket_ttl_seconds * 1000 <= q.heartbeat_millis * 2 {
            return Err("queue.ticket_ttl_seconds must exceed two heartbeats".into());
        }
        if q.lease_millis <= self.game.timeout_millis {
            return Err("queue.lease_millis must exceed game.timeout_millis".into());
        }
        if q.max_groups_per_round == 0 || q.scan_limit == 0 {
            return Err("queue.max_groups_per_round and scan_limit must be at least 1".into());
        }
        // A week at most: the ms values stay far from overflowing.
        const WEEK: u64 = 7 * 24 * 3600;
        if !(1..=WEEK).contains(&self.rooms.ttl_seconds)
            || !(1..=WEEK).contains(&self.rooms.expired_retention_seconds)
        {
            return Err(format!(
                "rooms.ttl_seconds and rooms.expired_retention_seconds must be between 1 and {WEEK}"
            ));
        }
        if self.rooms.wrong_code_max == 0 || self.rooms.wrong_code_window_seconds == 0 {
            return Err(
                "rooms.wrong_code_max and wrong_code_window_seconds must be at least 1".into(),
            );
        }
        self.metrics.validate()?;
        self.events.validate()?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn the_defaults_load_and_validate() {
        let s = Settings::from_env(env(&[])).unwrap();
        assert_eq!(s.redis.url, "memory");
        assert_eq!(s.queue.target_scores, vec![51, 101, 151]);
        assert!(s.metrics.listen().is_none());
        let p = s.queue.pairing();
        assert_eq!(p.window.width(0), 50.0);
        assert_eq!(p.min_round_interval_ms, 100);
    }

    #[test]
    fn bad_settings_name_the_key() {
        for (key, value, named) in [
            ("BASRA_REDIS__URL", "postgres://x", "redis.url"),
            ("BASRA_REDIS__PREFIX", "a{b}", "redis.prefix"),
            ("BASRA_QUEUE__WINDOW_MAX", "10", "window_max"),
            ("BASRA_QUEUE__TICK_MILLIS", "0", "tick_millis"),
            ("BASRA_QUEUE__ROOM_RETRY_MILLIS", "0", "room_retry_millis"),
            ("BASRA_QUEUE__LEASE_MILLIS", "100", "lease_millis"),
            ("BASRA_ROOMS__WRONG_CODE_MAX", "0", "wrong_code_max"),
            ("BASRA_METRICS__LISTEN", "nowhere", "metrics.listen"),
            ("BASRA_REDIS__WAIT_REPLICAS", "1", "redis.wait_replicas"),
            (
                "BASRA_EVENTS__DATABASE_URL",
                "mysql://x",
                "events.database_url",
            ),
            ("BASRA_EVENTS__LEASE_MILLIS", "100", "events.lease_millis"),
        ] {
            let err = Settings::from_env(env(&[(key, value)])).unwrap_err();
            assert!(err.to_string().contains(named), "{key}: {err}");
        }
        let ok = Settings::from_env(env(&[("BASRA_REDIS__URL", "redis://127.0.0.1:6379")]));
        assert!(ok.is_ok());
        let cluster = Settings::from_env(env(&[(
            "BASRA_REDIS__URL",
            "redis://127.0.0.1:7001,redis://127.0.0.1:7002",
        )]));
        assert!(cluster.is_ok());
    }
}
