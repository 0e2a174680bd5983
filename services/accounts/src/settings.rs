//! Typed settings: [`DEFAULTS`] (embedded `config/default.toml`), then the file
//! named by `BASRA_CONFIG_FILE`, then `BASRA_<SECTION>__<KEY>` environment
//! variables. [`Settings::load`] validates everything before a socket is bound.

use std::time::Duration;

use basra_platform::auth::{AuthSettings, IdentitySettings};
use basra_platform::config::{self, ConfigError, ServerSettings, TelemetrySettings, Validate};
use basra_platform::metrics::MetricsSettings;
use basra_platform::redis::RedisSettings;
use secrecy::{ExposeSecret, SecretString};
use serde::Deserialize;

/// The embedded default settings.
pub const DEFAULTS: &str = include_str!("../config/default.toml");

/// Every setting of the accounts service.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Settings {
    /// Listen address and drain time.
    pub server: ServerSettings,
    /// Logs and traces.
    pub telemetry: TelemetrySettings,
    /// Where data lives.
    pub database: DatabaseSettings,
    /// `[redis]`: where presence and notifications live (the same section in every
    /// service; `memory` keeps them in this process, for one replica).
    pub redis: RedisSettings,
    /// The tokens accepted: issuer, audience, trusted keys by kid (the same section in
    /// every service). accounts also accepts its own signing key's tokens, for every role.
    pub auth: AuthSettings,
    /// The signing key of the players' access tokens (the same section in every
    /// service); unset: a development key is generated at start.
    #[serde(default)]
    pub identity: IdentitySettings,
    /// Access and refresh token lifetimes.
    pub tokens: TokenSettings,
    /// Login rate limits.
    pub login_limits: LoginLimitSettings,
    /// Register and GuestLogin rate limits.
    pub signup_limits: SignupLimitSettings,
    /// Password hashing cost.
    pub passwords: PasswordSettings,
    /// Who is listed on the leaderboard.
    pub leaderboard: LeaderboardSettings,
    /// `[friends]`: the friend limits.
    pub friends: FriendSettings,
    /// `[display_names]`: how often a player may change their name.
    pub display_names: DisplayNameSettings,
    /// `[reports]`: reports of players (ReportPlayer) and hidden names.
    #[serde(default)]
    pub reports: ReportSettings,
    /// Where Prometheus metrics are served.
    #[serde(default)]
    pub metrics: MetricsSettings,
    /// `[providers]`: sign-in with Apple and Google (each off unless configured).
    #[serde(default)]
    pub providers: crate::oidc::ProvidersSettings,
    /// `[push]`: push notifications (off by default), their rules and providers.
    pub push: crate::push::PushDeliverySettings,
    /// `[inbox]`: how many notices a player keeps, and for how long.
    #[serde(default)]
    pub inbox: InboxSettings,
    /// `[seasons]`: the rating seasons, their soft reset and the tiers.
    #[serde(default)]
    pub seasons: crate::seasons::Calendar,
    /// `[analysis]`: the analysis of players' plays (GetReplay).
    #[serde(default)]
    pub analysis: crate::analysis::AnalysisSettings,
}

/// `[inbox]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InboxSettings {
    /// Notices kept per player (1..=10,000): past it the oldest is dropped, read or not.
    pub keep: u32,
    /// How long a notice is kept at most (60 s .. 365 days).
    pub keep_seconds: u64,
}

impl Default for InboxSettings {
    fn default() -> Self {
        let limits = crate::inbox::InboxLimits::default();
        InboxSettings {
            keep: limits.keep,
            keep_seconds: limits.keep_for.as_secs(),
        }
    }
}

impl InboxSettings {
    /// The limits the service applies.
    pub fn limits(&self) -> crate::inbox::InboxLimits {
        crate::inbox::InboxLimits {
            keep: self.keep,
            keep_for: Duration::from_secs(self.keep_seconds),
        }
    }
}

/// `[database]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DatabaseSettings {
    /// A PostgreSQL URL, or `memory`. Secret: it may hold a password.
    pub url: SecretString,
    /// Pool size.
    pub max_connections: u32,
    /// Whether to apply pending migrations at start.
    pub migrate: bool,
}

/// Where the service keeps its data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DatabaseKind {
    /// In process memory (embedded dev mode).
    Memory,
    /// PostgreSQL.
    Postgres,
}

impl DatabaseSettings {
    /// Which store the URL selects.
    pub fn kind(&self) -> DatabaseKind {
        if self.url.expose_secret() == "memory" {
            DatabaseKind::Memory
        } else {
            DatabaseKind::Postgres
        }
    }
}

/// `[tokens]`: the lifetimes of what accounts issues.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TokenSettings {
    /// Access token lifetime.
    pub access_ttl_seconds: u64,
    /// Refresh token lifetime.
    pub refresh_ttl_seconds: u64,
}

impl TokenSettings {
    /// Access token lifetime.
    pub fn access_ttl(&self) -> Duration {
        Duration::from_secs(self.access_ttl_seconds)
    }

    /// Refresh token lifetime.
    pub fn refresh_ttl(&self) -> Duration {
        Duration::from_secs(self.refresh_ttl_seconds)
    }
}

/// `[login_limits]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoginLimitSettings {
    /// Attempts per account per window.
    pub per_account_max: u32,
    /// The per-account window.
    pub per_account_window_seconds: u64,
    /// Attempts per peer address per window.
    pub per_peer_max: u32,
    /// The per-peer window.
    pub per_peer_window_seconds: u64,
}

/// `[signup_limits]`: Register and GuestLogin, which may create an account.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SignupLimitSettings {
    /// Calls per client address per window.
    pub per_address_max: u32,
    /// The per-address window.
    pub per_address_window_seconds: u64,
    /// Calls across this replica per window.
    pub global_max: u32,
    /// The global window.
    pub global_window_seconds: u64,
}

/// `[passwords]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PasswordSettings {
    /// argon2id memory in KiB.
    pub memory_kib: u32,
    /// argon2id passes.
    pub iterations: u32,
    /// Hashes computed at once (each holds `memory_kib`); 0: one per CPU core.
    pub max_concurrent: usize,
    /// How long a call waits for a hashing slot before RESOURCE_EXHAUSTED.
    pub queue_wait_ms: u64,
}

impl PasswordSettings {
    /// [`max_concurrent`](Self::max_concurrent), with 0 resolved to the number of cores.
    pub fn concurrency(&self) -> usize {
        match self.max_concurrent {
            0 => std::thread::available_parallelism().map_or(1, usize::from),
            n => n,
        }
    }

    /// [`queue_wait_ms`](Self::queue_wait_ms) as a duration.
    pub fn queue_wait(&self) -> Duration {
        Duration::from_millis(self.queue_wait_ms)
    }
}

/// `[leaderboard]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LeaderboardSettings {
    /// Ranked matches needed to be listed.
    pub min_ranked_matches: u32,
}

/// `[friends]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FriendSettings {
    /// Most friends a player may have.
    pub max_friends: u32,
    /// Most friend requests a player may send per UTC day.
    pub requests_per_day: u32,
    /// Most WatchFriends streams one account holds open at once on this replica.
    pub max_feeds_per_account: usize,
}

/// `[display_names]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DisplayNameSettings {
    /// Changes (SetDisplayName) allowed within the window (at least 1).
    pub max_changes: u32,
    /// The rolling window.
    pub window_seconds: u64,
}

/// `[reports]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ReportSettings {
    /// Reports one player may file within the window (at least 1).
    pub max_per_window: u32,
    /// The rolling window.
    pub window_seconds: u64,
    /// Distinct players whose open offensive-name reports hide a display name (at least
    /// 1).
    pub hide_name_reporters: u32,
}

impl Default for ReportSettings {
    fn default() -> ReportSettings {
        ReportSettings {
            max_per_window: 10,
            window_seconds: 3600,
            hide_name_reporters: 3,
        }
    }
}

impl ReportSettings {
    /// The rules they set.
    pub fn rules(&self) -> crate::reports::ReportRules {
        crate::reports::ReportRules {
            max_per_window: self.max_per_window,
            window: Duration::from_secs(self.window_seconds),
            hide_name_reporters: self.hide_name_reporters,
        }
    }
}

/// The longest access token lifetime accepted: they cannot be revoked.
pub const MAX_ACCESS_TTL_SECONDS: u64 = 24 * 3600;
/// The longest refresh token lifetime accepted.
pub const MAX_REFRESH_TTL_SECONDS: u64 = 365 * 24 * 3600;

impl Settings {
    /// Loads and validates the settings of this process.
    pub fn load() -> Result<Settings, ConfigError> {
        config::load(DEFAULTS)
    }

    /// The embedded defaults with `env` applied as if they were environment
    /// variables (tests and tools).
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
        self.metrics.validate()?;
        self.redis.validate()?;

        let url = self.database.url.expose_secret();
        if self.database.kind() == DatabaseKind::Postgres
            && !(url.starts_with("postgres://") || url.starts_with("postgresql://"))
        {
            return Err(
                "database.url must be a postgres:// URL or \"memory\" (the value is not shown: it may hold a password)"
                    .into(),
            );
        }
        if self.database.max_connections == 0 {
            return Err("database.max_connections must be at least 1".into());
        }

        if !(1..=10_000).contains(&self.inbox.keep) {
            return Err(format!(
                "inbox.keep must be between 1 and 10000, not {}",
                self.inbox.keep
            ));
        }
        if !(60..=365 * 24 * 3600).contains(&self.inbox.keep_seconds) {
            return Err(format!(
                "inbox.keep_seconds must be between 60 and 31536000 (365 days), not {}",
                self.inbox.keep_seconds
            ));
        }
        self.auth.validate()?;
        self.identity.validate()?;
        self.providers.validate()?;
        self.push.validate()?;
        self.seasons.validate()?;
        self.analysis.validate()?;
        let tokens = &self.tokens;
        if !(1..=MAX_ACCESS_TTL_SECONDS).contains(&tokens.access_ttl_seconds) {
            return Err(format!(
                "tokens.access_ttl_seconds must be between 1 and {MAX_ACCESS_TTL_SECONDS}, not {}",
                tokens.access_ttl_seconds
            ));
        }
        if !(tokens.access_ttl_seconds..=MAX_REFRESH_TTL_SECONDS)
            .contains(&tokens.refresh_ttl_seconds)
        {
            return Err(format!(
                "tokens.refresh_ttl_seconds must be between access_ttl_seconds and {MAX_REFRESH_TTL_SECONDS}, not {}",
                tokens.refresh_ttl_seconds
            ));
        }

        if self.friends.max_friends == 0
            || self.friends.requests_per_day == 0
            || self.friends.max_feeds_per_account == 0
        {
            return Err(
                "friends.max_friends, requests_per_day and max_feeds_per_account must be at \
                 least 1"
                    .into(),
            );
        }

        if self.display_names.max_changes == 0 {
            return Err("display_names.max_changes must be at least 1".into());
        }
        if self.display_names.window_seconds == 0
            || self.display_names.window_seconds > MAX_REFRESH_TTL_SECONDS
        {
            return Err(format!(
                "display_names.window_seconds must be between 1 and {MAX_REFRESH_TTL_SECONDS}, not {}",
                self.display_names.window_seconds
            ));
        }

        let reports = &self.reports;
        if reports.max_per_window == 0
            || reports.hide_name_reporters == 0
            || !(1..=MAX_REFRESH_TTL_SECONDS).contains(&reports.window_seconds)
        {
            return Err(format!(
                "reports.max_per_window and hide_name_reporters must be at least 1, and \
                 reports.window_seconds between 1 and {MAX_REFRESH_TTL_SECONDS}"
            ));
        }

        let limits = &self.login_limits;
        if limits.per_account_max == 0 || limits.per_peer_max == 0 {
            return Err("login_limits.per_account_max and per_peer_max must be at least 1".into());
        }
        if limits.per_account_window_seconds == 0 || limits.per_peer_window_seconds == 0 {
            return Err("login_limits windows must be at least 1 second".into());
        }

        let signup = &self.signup_limits;
        if signup.per_address_max == 0 || signup.global_max == 0 {
            return Err("signup_limits.per_address_max and global_max must be at least 1".into());
        }
        if signup.per_address_window_seconds == 0 || signup.global_window_seconds == 0 {
            return Err("signup_limits windows must be at least 1 second".into());
        }

        if self.passwords.memory_kib < 8 || self.passwords.iterations == 0 {
            return Err(
                "passwords.memory_kib must be at least 8 and passwords.iterations at least 1"
                    .into(),
            );
        }
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
    fn defaults_load_and_validate() {
        let s = Settings::from_env(Vec::new()).unwrap();
        assert_eq!(s.database.kind(), DatabaseKind::Memory);
        assert_eq!(s.tokens.access_ttl(), Duration::from_secs(900));
        assert!(s.identity.signing_key_file().is_none());
    }

    #[test]
    fn environment_overrides_and_bad_values_are_named() {
        let s = Settings::from_env(env(&[
            ("BASRA_DATABASE__URL", "postgres://u@h/db"),
            ("BASRA_TOKENS__ACCESS_TTL_SECONDS", "60"),
        ]))
        .unwrap();
        assert_eq!(s.database.kind(), DatabaseKind::Postgres);
        assert_eq!(s.tokens.access_ttl_seconds, 60);

        let err = Settings::from_env(env(&[("BASRA_DATABASE__URL", "mysql://x")])).unwrap_err();
        assert!(err.to_string().contains("database.url"), "{err}");
        let err =
            Settings::from_env(env(&[("BASRA_IDENTITY__SIGNING_KEY_FILE", "/k.pem")])).unwrap_err();
        assert!(err.to_string().contains("identity.key_id"), "{err}");
        let err =
            Settings::from_env(env(&[("BASRA_TOKENS__ACCESS_TTL_SECONDS", "0")])).unwrap_err();
        assert!(err.to_string().contains("access_ttl_seconds"), "{err}");
    }
}
