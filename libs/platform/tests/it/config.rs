//! Settings: embedded defaults, a file, environment variables, validation.

use std::{net::SocketAddr, time::Duration};

use basra_platform::config::{
    ConfigError, ServerSettings, TelemetrySettings, Validate, load_with_env,
};
use serde::Deserialize;

/// Settings the way a service defines them.
#[derive(Debug, Deserialize)]
struct Settings {
    server: ServerSettings,
    telemetry: TelemetrySettings,
    database: Database,
}

#[derive(Debug, Deserialize)]
struct Database {
    url: String,
    max_connections: u32,
}

impl Validate for Settings {
    fn validate(&self) -> Result<(), String> {
        self.server.validate()?;
        self.telemetry.validate()?;
        if self.database.max_connections == 0 {
            return Err("database.max_connections must be at least 1".into());
        }
        Ok(())
    }
}

const DEFAULTS: &str = r#"
[server]
listen = "0.0.0.0:50051"
drain_seconds = 20

[telemetry]
filter = "info"

[database]
url = "postgres://localhost/basra"
max_connections = 10
"#;

fn env(vars: &[(&str, &str)]) -> Vec<(String, String)> {
    vars.iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn load(vars: &[(&str, &str)]) -> Result<Settings, ConfigError> {
    load_with_env(DEFAULTS, env(vars))
}

fn error_message(vars: &[(&str, &str)]) -> String {
    load(vars)
        .expect_err("the settings should be refused")
        .to_string()
}

#[test]
fn defaults_alone() {
    let settings = load(&[("PATH", "/usr/bin"), ("HOME", "/root")]).unwrap();
    assert_eq!(
        settings.server.listen,
        "0.0.0.0:50051".parse::<SocketAddr>().unwrap()
    );
    assert_eq!(settings.server.drain(), Duration::from_secs(20));
    assert_eq!(settings.telemetry, TelemetrySettings::default());
    assert_eq!(settings.database.url, "postgres://localhost/basra");
}

#[test]
fn environment_variables_override_the_defaults() {
    let settings = load(&[
        ("BASRA_DATABASE__URL", "postgres://db:5432/prod"),
        ("BASRA_DATABASE__MAX_CONNECTIONS", "32"),
        ("BASRA_SERVER__DRAIN_SECONDS", "5"),
        ("BASRA_SERVER__LISTEN", "127.0.0.1:7000"),
        ("BASRA_TELEMETRY__JSON", "true"),
        ("BASRA_TELEMETRY__OTLP_ENDPOINT", "http://collector:4317"),
        // A string setting that looks like a number stays usable.
        ("BASRA_TELEMETRY__FILTER", "warn"),
    ])
    .unwrap();
    assert_eq!(settings.database.url, "postgres://db:5432/prod");
    assert_eq!(settings.database.max_connections, 32);
    assert_eq!(settings.server.drain_seconds, 5);
    assert_eq!(settings.server.listen.port(), 7000);
    assert!(settings.telemetry.json);
    assert_eq!(
        settings.telemetry.otlp_endpoint(),
        Some("http://collector:4317")
    );
    assert_eq!(settings.telemetry.filter, "warn");
}

#[test]
fn string_values_stay_exactly_as_written() {
    // Text that looks like a number must not be reformatted on its way to a
    // string setting (a password "007" is not "7").
    for text in ["007", "1e5", "0.10", "true"] {
        let settings = load(&[("BASRA_DATABASE__URL", text)]).unwrap();
        assert_eq!(settings.database.url, text);
    }
}

#[test]
fn an_empty_otlp_endpoint_means_no_export() {
    let settings = load(&[("BASRA_TELEMETRY__OTLP_ENDPOINT", "")]).unwrap();
    assert_eq!(settings.telemetry.otlp_endpoint(), None);
}

#[test]
fn a_settings_file_sits_between_defaults_and_environment() {
    let path = std::env::temp_dir().join(format!("basra-config-{}.toml", uuid::Uuid::now_v7()));
    std::fs::write(
        &path,
        "[database]\nurl = \"postgres://file/db\"\nmax_connections = 3\n",
    )
    .unwrap();
    let file = path.to_str().unwrap();

    let settings = load(&[("BASRA_CONFIG_FILE", file)]).unwrap();
    assert_eq!(settings.database.url, "postgres://file/db");
    assert_eq!(settings.database.max_connections, 3);
    assert_eq!(
        settings.server.drain_seconds, 20,
        "untouched keys keep their defaults"
    );

    let settings = load(&[
        ("BASRA_CONFIG_FILE", file),
        ("BASRA_DATABASE__MAX_CONNECTIONS", "7"),
    ])
    .unwrap();
    assert_eq!(settings.database.url, "postgres://file/db");
    assert_eq!(settings.database.max_connections, 7);
    std::fs::remove_file(&path).unwrap();

    let missing = error_message(&[("BASRA_CONFIG_FILE", file)]);
    assert!(
        missing.contains(file) && missing.contains("BASRA_CONFIG_FILE"),
        "{missing}"
    );
}

#[test]
fn validation_failures_name_the_key() {
    let message = error_message(&[("BASRA_DATABASE__MAX_CONNECTIONS", "0")]);
    assert_eq!(
        message,
        "invalid settings: database.max_connections must be at least 1"
    );

    let message = error_message(&[("BASRA_SERVER__DRAIN_SECONDS", "86400")]);
    assert!(
        message.contains("server.drain_seconds must be at most 3600"),
        "{message}"
    );

    let message = error_message(&[("BASRA_TELEMETRY__FILTER", "info,[[[")]);
    assert!(message.contains("telemetry.filter"), "{message}");

    let message = error_message(&[("BASRA_TELEMETRY__OTLP_ENDPOINT", "collector:4317")]);
    assert!(message.contains("telemetry.otlp_endpoint"), "{message}");
}

#[test]
fn http2_windows_are_settings_within_what_http2_allows() {
    let settings = load(&[]).unwrap();
    assert_eq!(
        settings.server.limits.initial_stream_window_bytes,
        64 * 1024
    );
    assert_eq!(
        settings.server.limits.initial_connection_window_bytes,
        1024 * 1024
    );
    let settings = load(&[
        ("BASRA_SERVER__LIMITS__INITIAL_STREAM_WINDOW_BYTES", "32768"),
        (
            "BASRA_SERVER__LIMITS__INITIAL_CONNECTION_WINDOW_BYTES",
            "4194304",
        ),
    ])
    .unwrap();
    assert_eq!(settings.server.limits.initial_stream_window_bytes, 32_768);
    assert_eq!(
        settings.server.limits.initial_connection_window_bytes,
        4_194_304
    );

    let message = error_message(&[("BASRA_SERVER__LIMITS__INITIAL_STREAM_WINDOW_BYTES", "1000")]);
    assert!(
        message.contains("server.limits.initial_stream_window_bytes must be between 16384"),
        "{message}"
    );
    let message = error_message(&[(
        "BASRA_SERVER__LIMITS__INITIAL_CONNECTION_WINDOW_BYTES",
        "4294967295",
    )]);
    assert!(
        message.contains("server.limits.initial_connection_window_bytes must be between"),
        "{message}"
    );
    let message = error_message(&[
        (
            "BASRA_SERVER__LIMITS__INITIAL_STREAM_WINDOW_BYTES",
            "2097152",
        ),
        (
            "BASRA_SERVER__LIMITS__INITIAL_CONNECTION_WINDOW_BYTES",
            "1048576",
        ),
    ]);
    assert!(
        message.contains(
            "initial_connection_window_bytes must be at least initial_stream_window_bytes"
        ),
        "{message}"
    );
}

#[test]
fn connection_timeouts_are_settings_with_bounds() {
    let limits = load(&[]).unwrap().server.limits;
    assert_eq!(
        (
            limits.handshake_timeout_seconds,
            limits.idle_timeout_seconds
        ),
        (10, 300)
    );
    let limits = load(&[
        ("BASRA_SERVER__LIMITS__HANDSHAKE_TIMEOUT_SECONDS", "3"),
        ("BASRA_SERVER__LIMITS__IDLE_TIMEOUT_SECONDS", "60"),
    ])
    .unwrap()
    .server
    .limits;
    assert_eq!(
        (limits.handshake_timeout(), limits.idle_timeout()),
        (Duration::from_secs(3), Duration::from_secs(60))
    );
    for (var, value, expected) in [
        (
            "BASRA_SERVER__LIMITS__HANDSHAKE_TIMEOUT_SECONDS",
            "0",
            "server.limits.handshake_timeout_seconds must be between 1 and 300, not 0",
        ),
        (
            "BASRA_SERVER__LIMITS__HANDSHAKE_TIMEOUT_SECONDS",
            "301",
            "server.limits.handshake_timeout_seconds must be between 1 and 300",
        ),
        (
            "BASRA_SERVER__LIMITS__IDLE_TIMEOUT_SECONDS",
            "0",
            "server.limits.idle_timeout_seconds must be between 1 and 86400, not 0",
        ),
        (
            "BASRA_SERVER__LIMITS__MAX_HEADER_LIST_BYTES",
            "1048576",
            "server.limits.max_header_list_bytes must be at most 65536",
        ),
    ] {
        let message = error_message(&[(var, value)]);
        assert!(message.contains(expected), "{message}");
    }
}

#[test]
fn type_errors_name_the_key() {
    let message = error_message(&[("BASRA_SERVER__DRAIN_SECONDS", "soon")]);
    assert!(message.contains("server.drain_seconds"), "{message}");

    let message = error_message(&[("BASRA_SERVER__LISTEN", "not-an-address")]);
    assert!(message.contains("server.listen"), "{message}");
}

#[test]
fn unknown_keys_in_shared_sections_are_refused() {
    // A typo must not silently leave the default in place.
    let message = error_message(&[("BASRA_SERVER__DRAIN_SECOND", "5")]);
    assert!(message.contains("drain_second"), "{message}");
}

#[test]
fn missing_keys_are_named() {
    let defaults = DEFAULTS.replace("url = \"postgres://localhost/basra\"", "");
    let message = load_with_env::<Settings>(&defaults, env(&[]))
        .expect_err("url is missing")
        .to_string();
    assert!(message.contains("url"), "{message}");
}

#[test]
fn broken_defaults_are_reported() {
    let message = load_with_env::<Settings>("[server", env(&[]))
        .unwrap_err()
        .to_string();
    assert!(message.starts_with("invalid settings:"), "{message}");
}

#[test]
fn allowed_origins_come_as_a_list_or_commas_and_must_be_bare_origins() {
    assert!(load(&[]).unwrap().server.allowed_origins.is_empty());
    let settings = load(&[(
        "BASRA_SERVER__ALLOWED_ORIGINS",
        "https://play.example.com, http://127.0.0.1:7400",
    )])
    .unwrap();
    assert_eq!(
        settings.server.allowed_origins,
        ["https://play.example.com", "http://127.0.0.1:7400"]
    );
    let from_toml: Settings = load_with_env(
        &DEFAULTS.replace(
            "drain_seconds = 20",
            "drain_seconds = 20\nallowed_origins = [\"*\"]",
        ),
        env(&[]),
    )
    .unwrap();
    assert_eq!(from_toml.server.allowed_origins, ["*"]);
    for bad in [
        "play.example.com",
        "https://play.example.com/",
        "https://a.example/app",
    ] {
        let message = error_message(&[("BASRA_SERVER__ALLOWED_ORIGINS", bad)]);
        assert!(
            message.contains("server.allowed_origins"),
            "{bad}: {message}"
        );
    }
}
