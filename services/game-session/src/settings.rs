//! Typed settings: `config/default.toml`, then `BASRA_CONFIG_FILE`, then
//! `BASRA_<SECTION>__<KEY>` environment variables (see `basra_platform::config`).

use std::time::Duration;

pub use basra_platform::auth::{AuthSettings, IdentitySettings};
use basra_platform::config::{self, ConfigError, ServerSettings, TelemetrySettings, Validate};
use basra_platform::metrics::MetricsSettings;
pub use basra_platform::redis::RedisSettings;
use serde::Deserialize;

use crate::room::timing::Timing;

/// The embedded defaults.
pub const DEFAULTS: &str = include_str!("../config/default.toml");

/// Every setting of the service.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Settings {
    /// Listen address and drain.
    pub server: ServerSettings,
    /// Logs and traces.
    pub telemetry: TelemetrySettings,
    /// Where room state lives (the same section in every service); `memory`: in this
    /// process (`basra dev`).
    pub redis: RedisSettings,
    /// Timers, limits and bots.
    pub game: GameSettings,
    /// The hard bot's budget and thinking slots.
    pub bots: crate::replica::bots::BotSettings,
    /// The match-record outbox's destination.
    pub accounts: AccountsSettings,
    /// The tokens accepted: issuer, audience, trusted keys by kid (the same section in
    /// every service).
    pub auth: AuthSettings,
    /// Where Prometheus metrics are served.
    #[serde(default)]
    pub metrics: MetricsSettings,
    /// game-session's own signing key for its service tokens to accounts.
    #[serde(default)]
    pub identity: IdentitySettings,
    /// Its own pod's deletion cost, kept current through the Kubernetes API.
    #[serde(default)]
    pub kubernetes: crate::pod_cost::KubernetesSettings,
}

/// The `[game]` section.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GameSettings {
    /// This replica's name; empty: a random one.
    pub replica: String,
    /// Seconds per turn before the server plays for the player.
    pub turn_seconds: u64,
    /// Seconds a disconnected player keeps the seat during a match.
    pub grace_seconds: u64,
    /// Milliseconds a bot waits before it plays.
    pub bot_delay_ms: u64,
    /// Seconds the rematch offer stays open.
    pub rematch_seconds: u64,
    /// Milliseconds past a turn's deadline before the server plays for the player.
    pub turn_slack_ms: u64,
    /// Most Play streams open at once on this replica.
    pub max_streams: usize,
    /// Most Play streams one account holds open at once on this replica.
    pub max_play_streams_per_account: usize,
    /// Most Watch streams one account holds open at once on this replica.
    pub max_watch_streams_per_account: usize,
    /// Most joins doing their Redis work at once on this replica; more wait their turn.
    pub join_concurrency: usize,
    /// Seconds a new stream may take to send its Join.
    pub join_timeout_seconds: u64,
    /// Milliseconds between two looks for due deadlines.
    pub timer_poll_ms: u64,
    /// Milliseconds between two re-checks of the last seq of every room with streams here.
    pub resync_ms: u64,
    /// Milliseconds a replica's presence lease lasts without a refresh (refreshed every
    /// third of it); a replica that dies leaves its players connected this long at most.
    pub lease_ms: u64,
    /// Seconds a closed room stays in Redis.
    pub closed_room_ttl_seconds: u64,
    /// The form this replica writes room states in (`binary`, or `json` while replicas
    /// that read only JSON still run); both are always read.
    #[serde(default)]
    pub room_state_format: crate::store::RoomFormat,
}

/// The `[accounts]` section.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AccountsSettings {
    /// The accounts service's URL; empty: no forwarder on this replica.
    pub url: String,
    /// The service token for RecordMatch.
    pub service_token: String,
    /// First retry delay of the forwarder.
    pub retry_min_ms: u64,
    /// Longest retry delay of the forwarder.
    pub retry_max_ms: u64,
}

impl Settings {
    /// Loads and validates the settings of this process.
    pub fn load() -> Result<Settings, ConfigError> {
        config::load(DEFAULTS)
    }

    /// How the service behaves under these settings: [`GameSettings::service_config`] with
    /// the `[bots]` section.
    pub fn service_config(&self) -> crate::ServiceConfig {
        crate::ServiceConfig {
            bots: crate::replica::bots::Bots::new(&self.bots),
            ..self.game.service_config()
        }
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
        self.game.validate()?;
        self.bots.validate()?;
        self.metrics.validate()?;
        self.redis.validate()?;
        self.auth.validate()?;
        self.identity.validate()?;
        self.kubernetes.validate()?;
        if self.accounts.retry_min_ms == 0
            || self.accounts.retry_min_ms > self.accounts.retry_max_ms
        {
            return Err("accounts.retry_min_ms must be in 1..=accounts.retry_max_ms".into());
        }
        Ok(())
    }
}

impl Validate for GameSettings {
    fn validate(&self) -> Result<(), String> {
        if !(1..=3600).contains(&self.turn_seconds) {
            return Err(format!(
                "game.turn_seconds must be 1..=3600, not {}",
                self.turn_seconds
            ));
        }
        if self.turn_slack_ms > 10_000 {
            return Err(format!(
                "game.turn_slack_ms must be at most 10000, not {}",
                self.turn_slack_ms
            ));
        }
        if self.max_streams == 0 {
            return Err("game.max_streams must be at least 1".into());
        }
        if self.max_play_streams_per_account == 0 || self.max_watch_streams_per_account == 0 {
            return Err(
                "game.max_play_streams_per_account and max_watch_streams_per_account must be \
                 at least 1"
                    .into(),
            );
        }
        if !(1..=10_000).contains(&self.join_concurrency) {
            return Err(format!(
                "game.join_concurrency must be 1..=10000, not {}",
                self.join_concurrency
            ));
        }
        if self.timer_poll_ms == 0 || self.resync_ms == 0 {
            return Err("game.timer_poll_ms and game.resync_ms must be at least 1".into());
        }
        if self.lease_ms < 3 * self.timer_poll_ms {
            return Err(format!(
                "game.lease_ms must be at least three game.timer_poll_ms ({}), not {}",
                3 * self.timer_poll_ms,
                self.lease_ms
            ));
        }
        Ok(())
    }
}

impl GameSettings {
    /// The room timings these settings give.
    pub fn timing(&self) -> Timing {
        Timing {
            turn_ms: self.turn_seconds * 1000,
            grace_ms: self.grace_seconds * 1000,
            bot_delay_ms: self.bot_delay_ms,
            rematch_ms: self.rematch_seconds * 1000,
            turn_slack_ms: self.turn_slack_ms,
        }
    }

    /// How the service behaves under these settings, with the default `[bots]` (see
    /// [`Settings::service_config`]); a replica without a configured name gets a fresh one.
    pub fn service_config(&self) -> crate::ServiceConfig {
        let replica = if self.replica.is_empty() {
            format!("game-session-{}", uuid::Uuid::now_v7().simple())
        } else {
            self.replica.clone()
        };
        crate::ServiceConfig {
            replica,
            timing: self.timing(),
            max_streams: self.max_streams,
            streams_per_account: crate::StreamsPerAccount::new(
                self.max_play_streams_per_account,
                self.max_watch_streams_per_account,
            ),
            join_concurrency: self.join_concurrency,
            join_timeout: self.join_timeout(),
            timer_poll: Duration::from_millis(self.timer_poll_ms),
            resync: Duration::from_millis(self.resync_ms),
            lease: Duration::from_millis(self.lease_ms),
            bots: crate::replica::bots::Bots::default(),
            revocations: basra_platform::revocation::Revocations::in_memory(),
        }
    }

    /// [`Self::join_timeout_seconds`] as a duration.
    pub fn join_timeout(&self) -> Duration {
        Duration::from_secs(self.join_timeout_seconds)
    }
}
