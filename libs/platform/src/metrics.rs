//! Prometheus metrics: every service registers its metrics (the `prometheus-client`
//! crate, re-exported as [`prometheus_client`]) in one [`Registry`] at start, and
//! [`serve_metrics`] answers `GET /metrics` with the OpenMetrics text on the port of the
//! `[metrics]` settings section ([`MetricsSettings`]), apart from the gRPC port so that
//! only the monitoring namespace reaches it (deploy/k8s NetworkPolicies).
//!
//! Names start with `basra_<service>_`; counters end in `_total` (the crate adds it).
//! The names the autoscaler and the alert rules in `deploy/` use are a contract, checked
//! against the running services by `tests/it/metrics.rs` of the end-to-end suite.
//!
//! Beside a service's own metrics, every `/metrics` answer carries what the platform
//! measures alike for all: the RED metrics of every gRPC call ([`rpc`], by method and
//! status code, counted by the [`RpcLayer`] that [`serve`](fn@crate::serve) installs) and
//! the process's figures ([`process`]: CPU, memory, file descriptors, threads).

mod frames;
pub mod process;
pub mod rpc;

use std::{
    net::SocketAddr,
    sync::{Arc, LazyLock},
};

use axum::{Router, extract::State, http::header, response::IntoResponse, routing::get};
use prometheus_client::registry::Registry;
use serde::Deserialize;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

pub use prometheus_client;
pub use rpc::{RpcLayer, RpcMetrics};

use crate::config::Validate;

/// The content type of the OpenMetrics text exposition.
const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The `[metrics]` section every service has.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MetricsSettings {
    /// Where to serve `GET /metrics` (e.g. `0.0.0.0:9100`); empty: not served.
    #[serde(default)]
    pub listen: String,
}

impl MetricsSettings {
    /// The address to serve on, if any.
    pub fn listen(&self) -> Option<SocketAddr> {
        self.listen.parse().ok()
    }
}

impl Validate for MetricsSettings {
    fn validate(&self) -> Result<(), String> {
        if !self.listen.is_empty() && self.listen.parse::<SocketAddr>().is_err() {
            return Err(format!(
                "metrics.listen {:?} must be empty or an address such as 0.0.0.0:9100",
                self.listen
            ));
        }
        Ok(())
    }
}

/// The metrics every service of this process serves alike: the shared
/// [`RpcMetrics`] and the [`process::ProcessCollector`].
pub fn platform_registry() -> &'static Registry {
    static PLATFORM: LazyLock<Registry> = LazyLock::new(|| {
        let mut registry = Registry::default();
        RpcMetrics::shared().register(&mut registry);
        registry.register_collector(Box::new(process::ProcessCollector));
        registry
    });
    &PLATFORM
}

/// The registry's metrics followed by the [`platform_registry`]'s, in the OpenMetrics
/// text format.
pub fn render(registry: &Registry) -> String {
    use prometheus_client::encoding::text::{encode_eof, encode_registry};
    let mut text = String::new();
    // Writing into a String cannot fail.
    let _ = encode_registry(&mut text, registry);
    let _ = encode_registry(&mut text, platform_registry());
    let _ = encode_eof(&mut text);
    text
}

/// Serves `GET /metrics` (the registry's text) on `listener` until `shutdown` is
/// cancelled. Other paths answer 404.
pub async fn serve_metrics(
    listener: TcpListener,
    registry: Arc<Registry>,
    shutdown: CancellationToken,
) -> std::io::Result<()> {
    let app = Router::new()
        .route("/metrics", get(metrics))
        .with_state(registry);
    axum::serve(listener, app)
        .with_graceful_shutdown(shutdown.cancelled_owned())
        .await
}

async fn metrics(State(registry): State<Arc<Registry>>) -> impl IntoResponse {
    ([(header::CONTENT_TYPE, OPENMETRICS)], render(&registry))
}

/// Binds `settings.listen` (when set) and serves the registry there in the background
/// until `shutdown`; answers the bound address (port 0 gives a free one).
pub async fn spawn(
    settings: &MetricsSettings,
    registry: Arc<Registry>,
    shutdown: CancellationToken,
) -> std::io::Result<Option<SocketAddr>> {
    let Some(addr) = settings.listen() else {
        return Ok(None);
    };
    let listener = TcpListener::bind(addr).await?;
    let local = listener.local_addr()?;
    tokio::spawn(async move {
        if let Err(err) = serve_metrics(listener, registry, shutdown).await {
            tracing::warn!(error = %err, "metrics server stopped");
        }
    });
    tracing::info!(addr = %local, "serving metrics on /metrics");
    Ok(Some(local))
}

/// The upper bounds (seconds) of latency histograms of calls that take milliseconds:
/// 0.5 ms to 5 s.
pub fn latency_buckets() -> impl Iterator<Item = f64> {
    [
        0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0,
    ]
    .into_iter()
}
