//! Typed settings, loaded once at start and validated before any socket is
//! bound, so a bad configuration stops the service with a clear message
//! instead of a half-started pod.
//!
//! Sources, later ones overriding earlier ones:
//! 1. the TOML defaults the service embeds (its `config/default.toml`);
//! 2. the TOML file named by `BASRA_CONFIG_FILE`, if set;
//! 3. environment variables `BASRA_<SECTION>__<KEY>`, e.g. `BASRA_DATABASE__URL`
//!    sets `url` in `[database]` (two underscores between section and key;
//!    single underscores belong to the key: `BASRA_SERVER__DRAIN_SECONDS`).

use std::{collections::HashMap, net::SocketAddr, path::PathBuf, time::Duration};

use config::{Config, Environment, File, FileFormat};
use serde::{Deserialize, de::DeserializeOwned};

/// The environment variable naming an optional TOML settings file.
pub const CONFIG_FILE_VAR: &str = "BASRA_CONFIG_FILE";
/// The prefix of every settings environment variable.
const ENV_PREFIX: &str = "BASRA";

/// Checks a settings value beyond what its type says (ranges, formats,
/// combinations). The error names the bad key: `server.drain_seconds must be
/// at most 3600`.
pub trait Validate {
    /// `Err` with a message naming the bad key if the settings are unusable.
    fn validate(&self) -> Result<(), String>;
}

/// Why settings could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file named by `BASRA_CONFIG_FILE` could not be read.
    #[error("cannot read the settings file {path} (from {CONFIG_FILE_VAR}): {source}")]
    File {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A source is not valid TOML, or a value has the wrong type or is
    /// missing (the message names the key).
    #[error("invalid settings: {0}")]
    Load(#[from] config::ConfigError),
    /// [`Validate`] rejected the settings.
    #[error("invalid settings: {0}")]
    Invalid(String),
}

impl ConfigError {
    /// A setting that cannot be used, `message` naming the key (what a service's
    /// `App::build` answers for a key file it cannot read, an address it cannot bind, …).
    pub fn invalid(message: impl Into<String>) -> ConfigError {
        ConfigError::Invalid(message.into())
    }
}

/// Loads `T` from `defaults_toml`, `BASRA_CONFIG_FILE` and the `BASRA_…`
/// environment variables of this process, and validates it.
pub fn load<T: DeserializeOwned + Validate>(defaults_toml: &str) -> Result<T, ConfigError> {
    // Non-UTF-8 variables cannot be BASRA settings; skip them rather than panic.
    let env = std::env::vars_os()
        .filter_map(|(key, value)| Some((key.into_string().ok()?, value.into_string().ok()?)));
    load_with_env(defaults_toml, env)
}

/// [`load`] with the given environment instead of the process's (tests, and
/// callers that assemble settings themselves).
pub fn load_with_env<T: DeserializeOwned + Validate>(
    defaults_toml: &str,
    env: impl IntoIterator<Item = (String, String)>,
) -> Result<T, ConfigError> {
    let prefix = format!("{ENV_PREFIX}_");
    let mut vars: HashMap<String, String> = env
        .into_iter()
        .filter(|(key, _)| key.starts_with(&prefix))
        .collect();
    // Not a setting itself: it names where settings are.
    let file = vars.remove(CONFIG_FILE_VAR);

    let mut builder = Config::builder().add_source(File::from_str(defaults_toml, FileFormat::Toml));
    if let Some(path) = file.filter(|path| !path.is_empty()) {
        let path = PathBuf::from(path);
        let text = std::fs::read_to_string(&path).map_err(|source| ConfigError::File {
            path: path.clone(),
            source,
        })?;
        builder = builder.add_source(File::from_str(&text, FileFormat::Toml));
    }
    let settings: T = builder
        .add_source(
            Environment::with_prefix(ENV_PREFIX)
                .prefix_separator("_")
                .separator("__")
                // No `try_parsing`: numbers and bools parse from the text
                // anyway, and it would rewrite strings that look like numbers
                // ("007" into "7").
                .source(Some(vars.into_iter().collect())),
        )
        .build()?
        .try_deserialize()?;
    settings.validate().map_err(ConfigError::Invalid)?;
    Ok(settings)
}

/// The `[server]` section every service has: where it listens, how it drains, the
/// limits of its connections (`[server.limits]`), and which proxies to believe.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerSettings {
    /// Where the gRPC server listens, e.g. `0.0.0.0:50051`.
    pub listen: SocketAddr,
    /// How long in-flight calls get to finish after SIGTERM.
    pub drain_seconds: u64,
    /// What one connection, and all of them together, may hold.
    #[serde(default)]
    pub limits: ConnectionLimits,
    /// The proxies (load balancers, ingress) whose `forwarded` / `x-forwarded-for`
    /// headers name the client, as networks (`10.0.0.0/8`, `fd00::/8`, `192.0.2.7/32`).
    /// Empty: the TCP peer is the client.
    #[serde(default)]
    pub trusted_proxies: Vec<ipnet::IpNet>,
    /// The web origins (`https://play.example.com`: scheme, host and port, no path)
    /// whose pages may call this server from a browser through gRPC-Web (CORS).
    /// `"*"` allows any origin (development only). Empty: no web page may call it
    /// from another origin. A list in TOML; a comma-separated list in the variable
    /// (`BASRA_SERVER__ALLOWED_ORIGINS=https://a.example,https://b.example`).
    #[serde(default, deserialize_with = "list_or_commas")]
    pub allowed_origins: Vec<String>,
}

/// A list of strings from a TOML array, or from one comma-separated string (as an
/// environment variable gives it).
fn list_or_commas<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Vec<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum ListOrCommas {
        List(Vec<String>),
        Commas(String),
    }
    Ok(match ListOrCommas::deserialize(deserializer)? {
        ListOrCommas::List(list) => list,
        ListOrCommas::Commas(text) => text
            .split(',')
            .map(str::trim)
            .filter(|item| !item.is_empty())
            .map(str::to_owned)
            .collect(),
    })
}

/// Why `origin` is not a web origin `allowed_origins` can hold, if it is not.
fn check_origin(origin: &str) -> Result<(), String> {
    if origin == "*" {
        return Ok(());
    }
    let rest = origin
        .strip_prefix("https://")
        .or_else(|| origin.strip_prefix("http://"))
        .ok_or_else(|| {
            format!("server.allowed_origins: {origin:?} must start with http:// or https://")
        })?;
    if rest.is_empty() || rest.contains(['/', '?', '#', ' ', ',']) {
        return Err(format!(
            "server.allowed_origins: {origin:?} must be scheme://host[:port], without a path or a trailing slash"
        ));
    }
    Ok(())
}

/// `[server.limits]`: what keeps one client, or a flood of them, from exhausting a
/// server. (The largest message is each service's own, set on its generated server.)
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ConnectionLimits {
    /// The largest metadata (all headers of a call, counted as HTTP/2 does: each name
    /// and value plus 32 bytes) a client may send; a call with more is answered
    /// RESOURCE_EXHAUSTED before it reaches a service, and the connection's other calls
    /// go on. HTTP/2 itself takes up to [`HTTP2_HEADER_LIST_FACTOR`] times this (what the
    /// server advertises in `SETTINGS_MAX_HEADER_LIST_SIZE`); a client that sends more
    /// than it was told has its call reset with HTTP 431, and the connection is closed
    /// (GOAWAY `ENHANCE_YOUR_CALM`) past four times that (h2's abuse limit).
    pub max_header_list_bytes: u32,
    /// Concurrent calls (streams) on one connection (HTTP/2's
    /// `SETTINGS_MAX_CONCURRENT_STREAMS`). A client past it does not get an error: its
    /// HTTP/2 layer holds the new call until one ends, unseen by the server. So it sits
    /// well above what one connection carries: a proxy or a client that multiplexes many
    /// players on one connection, and the resumes it moves onto the survivor when a
    /// replica dies (at 32, those resumes waited and their seats were swept disconnected).
    /// What bounds a replica's streams is its own admission (game-session's
    /// `game.max_streams`), not this.
    pub max_streams_per_connection: u32,
    /// Open connections; one beyond this is closed at once (the client sees
    /// UNAVAILABLE and retries, elsewhere behind a load balancer).
    pub max_connections: usize,
    /// After this long a connection is asked to go away (HTTP/2 GOAWAY: clients open a
    /// new connection for their next calls), and after the drain time more it is ended
    /// with whatever is still open on it; 0 keeps connections as long as they live.
    /// Bounds idle connections; game streams resume on their new connection.
    pub max_connection_age_seconds: u64,
    /// A new connection that has not begun its first call this long after it was
    /// accepted (TLS handshake, HTTP/1 or HTTP/2 preface, the call's headers) is closed:
    /// silent or half-open sockets do not hold connection slots and file descriptors.
    pub handshake_timeout_seconds: u64,
    /// A connection with no call open for this long is closed (gRPC's
    /// `max_connection_idle`); a client's next call opens a new one. Keepalive pings do
    /// not count as calls.
    pub idle_timeout_seconds: u64,
    /// HTTP/2 flow control: how many bytes a client may send on one stream before the
    /// server has read them (`SETTINGS_INITIAL_WINDOW_SIZE`). The server reads every
    /// message as it comes, so this is no throughput limit for messages of tens of bytes.
    /// Unread bytes hold the connection's window too: on a proxy's connection carrying a
    /// hundred players, one stream whose handler stopped reading could take the whole
    /// connection window and stall the other streams. 64 KiB (HTTP/2's own default; hyper's
    /// is 1 MiB, the whole connection window) is four of the largest game-session messages
    /// and a sixteenth of the connection window (`docs/performance.md`, "40,000 streams
    /// behind a multiplexing proxy").
    pub initial_stream_window_bytes: u32,
    /// HTTP/2 flow control for the whole connection: the bytes all its streams together
    /// may leave unread, so also what a client that sends and never reads can make a
    /// replica buffer per connection. 1 MiB (hyper's default).
    pub initial_connection_window_bytes: u32,
}

impl Default for ConnectionLimits {
    fn default() -> ConnectionLimits {
        ConnectionLimits {
            max_header_list_bytes: 16 * 1024,
            max_streams_per_connection: 1_000,
            max_connections: 50_000,
            max_connection_age_seconds: 0,
            handshake_timeout_seconds: 10,
            idle_timeout_seconds: 300,
            initial_stream_window_bytes: 64 * 1024,
            initial_connection_window_bytes: 1024 * 1024,
        }
    }
}

impl ConnectionLimits {
    /// [`max_connection_age_seconds`](Self::max_connection_age_seconds), if set.
    pub fn max_connection_age(&self) -> Option<Duration> {
        (self.max_connection_age_seconds > 0)
            .then(|| Duration::from_secs(self.max_connection_age_seconds))
    }

    /// [`handshake_timeout_seconds`](Self::handshake_timeout_seconds) as a duration.
    pub fn handshake_timeout(&self) -> Duration {
        Duration::from_secs(self.handshake_timeout_seconds)
    }

    /// [`idle_timeout_seconds`](Self::idle_timeout_seconds) as a duration.
    pub fn idle_timeout(&self) -> Duration {
        Duration::from_secs(self.idle_timeout_seconds)
    }

    /// What HTTP/2 itself takes as metadata: [`HTTP2_HEADER_LIST_FACTOR`] times
    /// [`max_header_list_bytes`](Self::max_header_list_bytes).
    pub fn http2_header_list_bytes(&self) -> u32 {
        self.max_header_list_bytes
            .saturating_mul(HTTP2_HEADER_LIST_FACTOR)
    }
}

/// How many times [`ConnectionLimits::max_header_list_bytes`] HTTP/2 accepts, so that
/// metadata over the limit reaches the server's own check (RESOURCE_EXHAUSTED, the
/// connection kept) rather than HTTP/2's (HTTP 431, which clients see as UNKNOWN, and
/// GOAWAY at four times HTTP/2's limit).
pub const HTTP2_HEADER_LIST_FACTOR: u32 = 16;

impl Validate for ConnectionLimits {
    fn validate(&self) -> Result<(), String> {
        if self.max_header_list_bytes < 1024 {
            return Err("server.limits.max_header_list_bytes must be at least 1024".into());
        }
        if self.max_header_list_bytes > MAX_HEADER_LIST_BYTES {
            return Err(format!(
                "server.limits.max_header_list_bytes must be at most {MAX_HEADER_LIST_BYTES}"
            ));
        }
        if !(1..=MAX_HANDSHAKE_SECONDS).contains(&self.handshake_timeout_seconds) {
            return Err(format!(
                "server.limits.handshake_timeout_seconds must be between 1 and {MAX_HANDSHAKE_SECONDS}, not {}",
                self.handshake_timeout_seconds
            ));
        }
        if !(1..=MAX_IDLE_SECONDS).contains(&self.idle_timeout_seconds) {
            return Err(format!(
                "server.limits.idle_timeout_seconds must be between 1 and {MAX_IDLE_SECONDS}, not {}",
                self.idle_timeout_seconds
            ));
        }
        if self.max_streams_per_connection == 0 || self.max_connections == 0 {
            return Err(
                "server.limits.max_streams_per_connection and max_connections must be at least 1"
                    .into(),
            );
        }
        // HTTP/2 allows windows up to 2^31 - 1; below one frame (16 KiB) a message would
        // wait for a window update mid-way.
        for (name, bytes) in [
            (
                "initial_stream_window_bytes",
                self.initial_stream_window_bytes,
            ),
            (
                "initial_connection_window_bytes",
                self.initial_connection_window_bytes,
            ),
        ] {
            if !(MIN_WINDOW_BYTES..=MAX_WINDOW_BYTES).contains(&bytes) {
                return Err(format!(
                    "server.limits.{name} must be between {MIN_WINDOW_BYTES} and {MAX_WINDOW_BYTES}, not {bytes}"
                ));
            }
        }
        if self.initial_connection_window_bytes < self.initial_stream_window_bytes {
            return Err(
                "server.limits.initial_connection_window_bytes must be at least initial_stream_window_bytes"
                    .into(),
            );
        }
        Ok(())
    }
}

/// The largest metadata limit [`ConnectionLimits`] accepts (64 KiB): HTTP/2 decodes up to
/// [`HTTP2_HEADER_LIST_FACTOR`] times it (1 MiB) for a call.
const MAX_HEADER_LIST_BYTES: u32 = 64 * 1024;
/// The longest handshake time [`ConnectionLimits`] accepts: a silent socket holds a slot
/// this long.
const MAX_HANDSHAKE_SECONDS: u64 = 300;
/// The longest idle time [`ConnectionLimits`] accepts (a day).
const MAX_IDLE_SECONDS: u64 = 24 * 3600;

/// The smallest HTTP/2 window [`ConnectionLimits`] accepts: one frame of the default size.
const MIN_WINDOW_BYTES: u32 = 16 * 1024;
/// The largest window HTTP/2 allows (2^31 - 1).
const MAX_WINDOW_BYTES: u32 = i32::MAX as u32;

impl ServerSettings {
    /// The longest drain we accept: Kubernetes' grace period must cover it.
    pub const MAX_DRAIN_SECONDS: u64 = 3600;

    /// [`drain_seconds`](Self::drain_seconds) as a duration.
    pub fn drain(&self) -> Duration {
        Duration::from_secs(self.drain_seconds)
    }
}

impl Validate for ServerSettings {
    fn validate(&self) -> Result<(), String> {
        if self.drain_seconds > Self::MAX_DRAIN_SECONDS {
            return Err(format!(
                "server.drain_seconds must be at most {}, not {}",
                Self::MAX_DRAIN_SECONDS,
                self.drain_seconds
            ));
        }
        for origin in &self.allowed_origins {
            check_origin(origin)?;
        }
        self.limits.validate()
    }
}

/// The `[telemetry]` section every service has.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TelemetrySettings {
    /// A tracing filter such as `info,accounts=debug`; `RUST_LOG` overrides it.
    pub filter: String,
    /// JSON log lines (production) instead of human-readable ones.
    #[serde(default)]
    pub json: bool,
    /// Where to send OpenTelemetry traces over OTLP/gRPC, e.g.
    /// `http://otel-collector:4317`; unset or empty means no trace export.
    #[serde(default)]
    pub otlp_endpoint: Option<String>,
}

impl TelemetrySettings {
    /// The OTLP endpoint, if one is set (an empty string counts as unset, so
    /// `BASRA_TELEMETRY__OTLP_ENDPOINT=` turns export off).
    pub fn otlp_endpoint(&self) -> Option<&str> {
        self.otlp_endpoint
            .as_deref()
            .filter(|endpoint| !endpoint.is_empty())
    }
}

impl Default for TelemetrySettings {
    /// `info`, human-readable, no export: for tools and tests.
    fn default() -> Self {
        TelemetrySettings {
            filter: "info".into(),
            json: false,
            otlp_endpoint: None,
        }
    }
}

impl Validate for TelemetrySettings {
    fn validate(&self) -> Result<(), String> {
        tracing_subscriber::EnvFilter::try_new(&self.filter).map_err(|err| {
            format!(
                "telemetry.filter {:?} is not a valid tracing filter: {err}",
                self.filter
            )
        })?;
        if let Some(endpoint) = self.otlp_endpoint()
            && !(endpoint.starts_with("http://") || endpoint.starts_with("https://"))
        {
            return Err(format!(
                "telemetry.otlp_endpoint {endpoint:?} must be an http:// or https:// URL"
            ));
        }
        Ok(())
    }
}
