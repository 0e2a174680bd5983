//! Telemetry installs a global subscriber, so it gets its own test binary
//! and a single test.

use std::time::{Duration, Instant};

use basra_platform::{
    config::TelemetrySettings,
    telemetry::{self, TelemetryError},
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn init_with_otlp_export_then_flush_on_drop() {
    // Nothing listens on port 1: export fails, but neither init nor the
    // flush on drop may hang or panic because of it.
    let settings = TelemetrySettings {
        filter: "debug".into(),
        json: true,
        otlp_endpoint: Some("http://127.0.0.1:1".into()),
    };
    let guard = telemetry::init("platform-test", &settings).expect("telemetry starts");
    tracing::info_span!("work", room = "r1").in_scope(|| tracing::info!("a traced event"));

    // A second init is refused rather than silently ignored.
    let again = telemetry::init("platform-test", &TelemetrySettings::default());
    assert!(
        matches!(again, Err(TelemetryError::Install(_))),
        "{again:?}"
    );

    let flushing = Instant::now();
    drop(guard);
    assert!(
        flushing.elapsed() < Duration::from_secs(10),
        "{:?}",
        flushing.elapsed()
    );
}
