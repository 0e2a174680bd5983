//! Scale-down removes the emptiest pods first: a replica keeps its own pod's
//! `controller.kubernetes.io/pod-deletion-cost` annotation equal to its open Play
//! streams, and the ReplicaSet controller deletes the pods of lowest cost first. Fewer
//! players are moved (they resume on another replica, but a resume is still a hiccup).
//!
//! The replica patches its pod through the Kubernetes API with its service-account
//! token (read from its file before each call: the kubelet rotates it), over TLS checked
//! against the cluster CA, at most once per `kubernetes.min_interval_ms` and only when
//! the count changed. RBAC (`deploy/k8s`) lets it patch pods, and an admission policy
//! lets it change only that annotation. Off unless `[kubernetes] pod_deletion_cost`.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use http_body_util::{BodyExt as _, Full};
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;
use rustls::pki_types::pem::PemObject as _;
use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use crate::metrics::GameMetrics;

/// The annotation the ReplicaSet controller reads.
pub const ANNOTATION: &str = "controller.kubernetes.io/pod-deletion-cost";

/// `[kubernetes]`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KubernetesSettings {
    /// Keep this pod's deletion cost equal to its open streams.
    #[serde(default)]
    pub pod_deletion_cost: bool,
    /// The API server (`https://…`; `http://` only for tests and `kubectl proxy`).
    #[serde(default = "default_api_url")]
    pub api_url: String,
    /// The service-account token file.
    #[serde(default = "default_token_file")]
    pub token_file: PathBuf,
    /// The cluster CA (PEM) the API server's certificate is checked against.
    #[serde(default = "default_ca_file")]
    pub ca_file: PathBuf,
    /// The pod's namespace (the downward API gives it).
    #[serde(default)]
    pub namespace: String,
    /// The pod's name; empty: `game.replica` (the pod name in Kubernetes).
    #[serde(default)]
    pub pod_name: String,
    /// The fewest milliseconds between two patches.
    #[serde(default = "default_min_interval_ms")]
    pub min_interval_ms: u64,
}

fn default_api_url() -> String {
    "https://kubernetes.default.svc".into()
}
fn default_token_file() -> PathBuf {
    "/var/run/secrets/kubernetes.io/serviceaccount/token".into()
}
fn default_ca_file() -> PathBuf {
    "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt".into()
}
fn default_min_interval_ms() -> u64 {
    10_000
}

impl Default for KubernetesSettings {
    fn default() -> KubernetesSettings {
        KubernetesSettings {
            pod_deletion_cost: false,
            api_url: default_api_url(),
            token_file: default_token_file(),
            ca_file: default_ca_file(),
            namespace: String::new(),
            pod_name: String::new(),
            min_interval_ms: default_min_interval_ms(),
        }
    }
}

impl KubernetesSettings {
    /// `Err` naming the bad key.
    pub fn validate(&self) -> Result<(), String> {
        if !self.pod_deletion_cost {
            return Ok(());
        }
        if !(self.api_url.starts_with("https://") || self.api_url.starts_with("http://")) {
            return Err("kubernetes.api_url must be an https:// URL".into());
        }
        if self.namespace.is_empty() {
            return Err(
                "kubernetes.namespace must be set when kubernetes.pod_deletion_cost is".into(),
            );
        }
        if self.min_interval_ms < 1000 {
            return Err("kubernetes.min_interval_ms must be at least 1000".into());
        }
        Ok(())
    }
}

/// Patches one pod's deletion cost through the API server.
#[derive(Clone)]
pub struct PodPatcher {
    host: String,
    port: u16,
    path: String,
    token_file: PathBuf,
    tls: Option<(
        tokio_rustls::TlsConnector,
        rustls::pki_types::ServerName<'static>,
    )>,
}

impl std::fmt::Debug for PodPatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PodPatcher")
            .field("host", &self.host)
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl PodPatcher {
    /// A patcher of `pod` as `settings` say (the CA read now: a bad file stops start-up).
    pub fn new(settings: &KubernetesSettings, pod: &str) -> Result<PodPatcher, String> {
        let uri: hyper::Uri = settings
            .api_url
            .parse()
            .map_err(|err| format!("kubernetes.api_url: {err}"))?;
        let https = uri.scheme_str() == Some("https");
        let host = uri
            .host()
            .ok_or("kubernetes.api_url has no host")?
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_owned();
        let port = uri.port_u16().unwrap_or(if https { 443 } else { 80 });
        let tls = if https {
            let pem = std::fs::read(&settings.ca_file).map_err(|err| {
                format!("kubernetes.ca_file {}: {err}", settings.ca_file.display())
            })?;
            let mut roots = rustls::RootCertStore::empty();
            for cert in rustls::pki_types::CertificateDer::pem_slice_iter(&pem) {
                let cert = cert.map_err(|err| format!("kubernetes.ca_file: {err}"))?;
                roots
                    .add(cert)
                    .map_err(|err| format!("kubernetes.ca_file: {err}"))?;
            }
            let config = rustls::ClientConfig::builder_with_provider(Arc::new(
                rustls::crypto::ring::default_provider(),
            ))
            .with_safe_default_protocol_versions()
            .map_err(|err| err.to_string())?
            .with_root_certificates(roots)
            .with_no_client_auth();
            let name = rustls::pki_types::ServerName::try_from(host.clone())
                .map_err(|err| format!("kubernetes.api_url host: {err}"))?;
            Some((tokio_rustls::TlsConnector::from(Arc::new(config)), name))
        } else {
            None
        };
        Ok(PodPatcher {
            host,
            port,
            path: format!("/api/v1/namespaces/{}/pods/{pod}", settings.namespace),
            token_file: settings.token_file.clone(),
            tls,
        })
    }

    /// Sets the pod's deletion cost to `cost` (one merge patch of its annotations).
    pub async fn patch(&self, cost: i64) -> Result<(), String> {
        let token = std::fs::read_to_string(&self.token_file)
            .map_err(|err| format!("{}: {err}", self.token_file.display()))?;
        let body = serde_json::json!({"metadata": {"annotations": {ANNOTATION: cost.to_string()}}});
        let request = hyper::Request::patch(self.path.as_str())
            .header(hyper::header::HOST, self.host.as_str())
            .header(
                hyper::header::AUTHORIZATION,
                format!("Bearer {}", token.trim()),
            )
            .header(hyper::header::CONTENT_TYPE, "application/merge-patch+json")
            .header(hyper::header::ACCEPT, "application/json")
            .body(Full::new(Bytes::from(body.to_string())))
            .map_err(|err| err.to_string())?;
        let tcp = tokio::net::TcpStream::connect((self.host.as_str(), self.port))
            .await
            .map_err(|err| format!("connect {}:{}: {err}", self.host, self.port))?;
        match &self.tls {
            Some((connector, name)) => {
                let stream = connector
                    .connect(name.clone(), tcp)
                    .await
                    .map_err(|err| format!("tls: {err}"))?;
                send(TokioIo::new(stream), request).await
            }
            None => send(TokioIo::new(tcp), request).await,
        }
    }
}

async fn send<IO>(io: IO, request: hyper::Request<Full<Bytes>>) -> Result<(), String>
where
    IO: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
{
    let (mut sender, connection) = hyper::client::conn::http1::handshake(io)
        .await
        .map_err(|err| err.to_string())?;
    tokio::spawn(async move {
        let _ = connection.await;
    });
    let response = sender
        .send_request(request)
        .await
        .map_err(|err| err.to_string())?;
    let status = response.status();
    if status.is_success() {
        return Ok(());
    }
    let body = response
        .into_body()
        .collect()
        .await
        .map(|body| String::from_utf8_lossy(&body.to_bytes()).into_owned())
        .unwrap_or_default();
    Err(format!(
        "{status}: {}",
        body.chars().take(300).collect::<String>()
    ))
}

/// Keeps the pod's deletion cost equal to the open streams until `shutdown`: a patch
/// when the count changed, at most once per `interval`.
pub async fn run(
    patcher: PodPatcher,
    metrics: Arc<GameMetrics>,
    interval: Duration,
    shutdown: CancellationToken,
) {
    let mut tick = tokio::time::interval(interval);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut patched = None;
    loop {
        tokio::select! {
            () = shutdown.cancelled() => return,
            _ = tick.tick() => {}
        }
        let cost = metrics.open_streams.get();
        if patched == Some(cost) {
            continue;
        }
        match patcher.patch(cost).await {
            Ok(()) => patched = Some(cost),
            Err(err) => tracing::warn!(error = %err, "cannot set the pod deletion cost"),
        }
    }
}
