//! The gRPC server every service runs: its routes behind the [`AuthLayer`],
//! plus gRPC health and reflection, and a graceful, bounded shutdown. Every call is
//! measured (rate, errors, duration by method and status code) by the
//! [`RpcLayer`](crate::metrics::RpcLayer) into the process's shared
//! [`RpcMetrics`](crate::metrics::RpcMetrics). Browsers reach
//! the same routes through gRPC-Web (HTTP/1.1 or HTTP/2, `tonic-web`), from the web
//! origins the settings allow (CORS, `tower-http`).

mod calls;
mod connection;
mod refusals;

use std::{pin::pin, sync::Arc, time::Duration};

use http::{HeaderName, HeaderValue, Method};
use tokio::{net::TcpListener, sync::Semaphore};
use tokio_stream::StreamExt as _;
use tokio_util::sync::CancellationToken;
use tonic::{
    service::Routes,
    transport::{Identity, Server, ServerTlsConfig, server::TcpIncoming},
};
use tonic_health::{ServingStatus, server::HealthReporter};
use tower_http::cors::{AllowHeaders, AllowOrigin, CorsLayer};

use crate::auth::AuthLayer;
use crate::config::ConnectionLimits;
use calls::{CallsLayer, Timeouts};
use connection::Connection;
use refusals::RefusalsLayer;

/// The health service's name, as listed by reflection.
const HEALTH_SERVICE: &str = "grpc.health.v1.Health";
const REFLECTION_V1: &str = "grpc.reflection.v1.ServerReflection";
const REFLECTION_V1ALPHA: &str = "grpc.reflection.v1alpha.ServerReflection";

/// How long connections get to close after the drain deadline has cut them.
const CUT_GRACE: Duration = Duration::from_secs(1);

/// How [`serve`] drains and limits its connections.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// How long in-flight calls get to finish after shutdown.
    pub drain: Duration,
    /// What connections may hold.
    pub limits: ConnectionLimits,
    /// The web origins whose pages may call through gRPC-Web (`"*"`: any); see
    /// [`ServerSettings::allowed_origins`](crate::config::ServerSettings::allowed_origins).
    pub allowed_origins: Vec<String>,
    /// Serve TLS with this certificate (`basra dev --tls-cert`); `None`: cleartext, as
    /// behind the gateway that terminates TLS in production.
    pub tls: Option<TlsIdentity>,
    /// Services whose health follows their own readiness (a drained game-session
    /// replica), beside the server's.
    pub readiness: Vec<Readiness>,
}

/// Services that stop taking new work while the process runs on (a game-session replica
/// an operator drains): while `ready` holds false, health reports each of `services`
/// NOT_SERVING. The overall status (`""`, what liveness asks) is the server's alone.
#[derive(Debug, Clone)]
pub struct Readiness {
    /// The fully qualified service names.
    pub services: Vec<&'static str>,
    /// Whether they take new work.
    pub ready: tokio::sync::watch::Receiver<bool>,
}

/// A server's certificate chain and private key, PEM.
#[derive(Clone, PartialEq, Eq)]
pub struct TlsIdentity {
    /// The certificate, then any intermediates.
    pub cert_pem: Vec<u8>,
    /// Its private key (PKCS#8, PKCS#1 or SEC1).
    pub key_pem: Vec<u8>,
}

impl std::fmt::Debug for TlsIdentity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TlsIdentity { .. }")
    }
}

impl ServeOptions {
    /// Draining for `drain`, with the default limits (tests and tools).
    pub fn with_drain(drain: Duration) -> ServeOptions {
        ServeOptions {
            drain,
            limits: ConnectionLimits::default(),
            allowed_origins: Vec::new(),
            tls: None,
            readiness: Vec::new(),
        }
    }
}

impl From<Duration> for ServeOptions {
    fn from(drain: Duration) -> ServeOptions {
        ServeOptions::with_drain(drain)
    }
}

impl From<&crate::config::ServerSettings> for ServeOptions {
    fn from(settings: &crate::config::ServerSettings) -> ServeOptions {
        ServeOptions {
            drain: settings.drain(),
            limits: settings.limits.clone(),
            allowed_origins: settings.allowed_origins.clone(),
            tls: None,
            readiness: Vec::new(),
        }
    }
}

/// The listen backlog [`bind`] asks for (the kernel caps it at `net.core.somaxconn`).
pub const LISTEN_BACKLOG: u32 = 8192;

/// Binds a listener for [`serve`] with a deep accept queue. `TcpListener::bind` asks
/// for 1,024: when a replica dies and thousands of its players reconnect to another at
/// once, the connections beyond the queue have their SYN dropped, and the clients wait
/// a second or more (the SYN retransmission) before they try again, or give up.
pub async fn bind(addr: std::net::SocketAddr) -> std::io::Result<TcpListener> {
    let socket = if addr.is_ipv4() {
        tokio::net::TcpSocket::new_v4()?
    } else {
        tokio::net::TcpSocket::new_v6()?
    };
    // As `TcpListener::bind` does: a restarted server binds at once.
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(LISTEN_BACKLOG)
}

/// Why [`serve`] failed.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The reflection service could not read the descriptor sets.
    #[error("cannot build the reflection service: {0}")]
    Reflection(#[from] tonic_reflection::server::Error),
    /// The server itself failed.
    #[error("grpc server: {0}")]
    Transport(#[from] tonic::transport::Error),
}

/// Serves `routes` on `listener` until `shutdown` is cancelled.
///
/// Every call goes through `auth`. The server also answers gRPC health (the
/// overall status `""` and each name in `service_names` SERVING) and gRPC
/// reflection v1 and v1alpha (from [`basra_proto::FILE_DESCRIPTOR_SET`],
/// listing `service_names`, health and reflection).
///
/// `options.limits` apply to every connection: metadata size (RESOURCE_EXHAUSTED over
/// it), calls per connection, open connections (one over the cap is closed at once),
/// the time to the first call and without one (the connection is closed), connection
/// age, the HTTP/2 stream and connection windows. The
/// largest message is each service's own (`max_decoding_message_size` on its
/// generated server, where its routes are built).
///
/// When `shutdown` is cancelled: every service goes NOT_SERVING, the listener
/// closes, and in-flight calls get up to `options.drain` to finish (open
/// connections are told to go away, so clients reconnect elsewhere). Connections
/// still open after the drain (long streams) are cut, then `serve` returns.
pub async fn serve(
    listener: TcpListener,
    routes: Routes,
    service_names: &[&str],
    auth: AuthLayer,
    shutdown: CancellationToken,
    options: impl Into<ServeOptions>,
) -> Result<(), ServeError> {
    let ServeOptions {
        drain,
        limits,
        allowed_origins,
        tls,
        readiness,
    } = options.into();
    let local_addr = listener.local_addr().ok();
    let rpc_metrics = crate::metrics::RpcMetrics::shared();
    rpc_metrics.prepare(service_names);
    rpc_metrics.prepare(&[HEALTH_SERVICE]);
    let (reporter, health) = tonic_health::server::health_reporter();
    set_status(&reporter, service_names, ServingStatus::Serving).await;
    // Until shutdown, which reports every service NOT_SERVING for good.
    let frozen = Frozen::default();
    for readiness in readiness {
        tokio::spawn(follow(reporter.clone(), readiness, frozen.clone()));
    }
    let routes = routes
        .add_service(health)
        .add_service(reflection(service_names).build_v1()?)
        .add_service(reflection(service_names).build_v1alpha()?);

    // `stop` ends accepting, `cut` ends connections still open after the
    // drain deadline: tonic alone would wait for them forever.
    let stop = CancellationToken::new();
    let cut = CancellationToken::new();
    let slots = Arc::new(Semaphore::new(limits.max_connections));
    let timeouts = Timeouts {
        handshake: limits.handshake_timeout(),
        idle: limits.idle_timeout(),
        // The connection age's grace, ended here rather than by tonic: given a grace,
        // tonic 0.14 only cuts the connection at age + grace, without ever asking the
        // client to go away first, so every call in flight then failed as a broken
        // connection. Without one it sends GOAWAY at the age (its clients move their new
        // calls to a new connection), and `Connection` ends what is still open after
        // the grace (a long stream, resumed by its client).
        lifetime: limits.max_connection_age().map(|age| age + drain),
    };
    let incoming = TcpIncoming::from(listener)
        // Game events are small and latency-sensitive: no Nagle delay.
        .with_nodelay(Some(true))
        .filter_map({
            let cut = cut.clone();
            move |conn| match conn {
                Ok(stream) => match Arc::clone(&slots).try_acquire_owned() {
                    Ok(slot) => Some(Ok(Connection::new(stream, cut.clone(), timeouts, slot))),
                    Err(_) => {
                        // Dropping the stream closes it: the client retries.
                        tracing::warn!(peer = ?stream.peer_addr().ok(), "connection refused: at server.max_connections");
                        None
                    }
                },
                Err(err) => Some(Err(err)),
            }
        });
    let mut builder = Server::builder()
        // Finds vanished clients (a phone losing its network) holding
        // streams open, so their seats can time out.
        .http2_keepalive_interval(Some(Duration::from_secs(30)))
        .http2_keepalive_timeout(Some(Duration::from_secs(10)))
        // Room above the documented limit, so that RefusalsLayer answers it.
        .http2_max_header_list_size(limits.http2_header_list_bytes())
        .max_concurrent_streams(limits.max_streams_per_connection)
        .initial_stream_window_size(limits.initial_stream_window_bytes)
        .initial_connection_window_size(limits.initial_connection_window_bytes);
    if let Some(tls) = tls {
        builder = builder.tls_config(
            ServerTlsConfig::new().identity(Identity::from_pem(tls.cert_pem, tls.key_pem)),
        )?;
    }
    if let Some(age) = limits.max_connection_age() {
        // GOAWAY at the age; the grace is `timeouts.lifetime`'s.
        builder = builder.max_connection_age(age);
    }
    let server = builder
        .trace_fn(crate::telemetry::grpc_span)
        // gRPC-Web arrives over HTTP/1.1 as well; HTTP/2 clients are unaffected.
        .accept_http1(true)
        // Outermost first: every request counts as a call of its connection (which is
        // closed after the handshake or idle timeout without one); CORS answers a browser's preflight before auth, and adds
        // its headers to every answer (auth's refusals too, so a page can read them);
        // gRPC-Web is translated to gRPC before the RED metrics and auth, and the
        // services see it.
        .layer(CallsLayer)
        .layer(cors(&allowed_origins))
        .layer(tonic_web::GrpcWebLayer::new())
        // Inside gRPC-Web (it sees plain gRPC: the status in trailers), outside auth
        // (refusals count).
        .layer(crate::metrics::RpcLayer::new(rpc_metrics.clone()))
        // Clients' faults answered with the documented codes, as the metrics count them.
        .layer(RefusalsLayer::new(limits.max_header_list_bytes))
        .layer(auth)
        .add_routes(routes)
        .serve_with_incoming_shutdown(incoming, stop.clone().cancelled_owned());
    let mut server = pin!(server);
    tracing::info!(addr = ?local_addr, services = ?service_names, "serving");

    tokio::select! {
        result = &mut server => return result.map_err(ServeError::from),
        () = shutdown.cancelled() => {}
    }

    tracing::info!(
        drain_seconds = drain.as_secs_f64(),
        "shutting down: not serving, draining"
    );
    frozen.freeze().await;
    set_status(&reporter, service_names, ServingStatus::NotServing).await;
    stop.cancel();
    match tokio::time::timeout(drain, &mut server).await {
        Ok(result) => result?,
        Err(_elapsed) => {
            tracing::warn!("drain deadline passed: cutting the remaining connections");
            cut.cancel();
            if tokio::time::timeout(CUT_GRACE, &mut server).await.is_err() {
                tracing::warn!("connections still open after being cut; returning anyway");
            }
        }
    }
    tracing::info!("server stopped");
    Ok(())
}

/// The response headers a browser page may read: the gRPC status (trailers-only
/// answers carry it in the headers) and the game's refusal code.
const EXPOSED_HEADERS: [&str; 4] = [
    "grpc-status",
    "grpc-message",
    "grpc-status-details-bin",
    "basra-reject-code",
];

/// CORS for gRPC-Web calls from `origins` (`"*"`: any): POST with whatever headers
/// the call sends (its token among them; no cookies are used, so none are allowed).
fn cors(origins: &[String]) -> CorsLayer {
    let allow = if origins.iter().any(|origin| origin == "*") {
        AllowOrigin::any()
    } else {
        AllowOrigin::list(
            origins
                .iter()
                .filter_map(|origin| HeaderValue::from_str(origin).ok()),
        )
    };
    CorsLayer::new()
        .allow_origin(allow)
        .allow_methods([Method::POST])
        .allow_headers(AllowHeaders::mirror_request())
        .expose_headers(EXPOSED_HEADERS.map(HeaderName::from_static))
        .max_age(Duration::from_secs(24 * 3600))
}

/// Sets the overall status (`""`) and each service's.
async fn set_status(reporter: &HealthReporter, service_names: &[&str], status: ServingStatus) {
    reporter.set_service_status("", status).await;
    for name in service_names {
        reporter.set_service_status(name, status).await;
    }
}

/// Set at shutdown: from then on only the shutdown writes health statuses.
#[derive(Clone, Default)]
struct Frozen {
    flag: Arc<tokio::sync::Mutex<bool>>,
    token: CancellationToken,
}

impl Frozen {
    async fn freeze(&self) {
        *self.flag.lock().await = true;
        self.token.cancel();
    }
}

/// Reports `readiness.services` SERVING or NOT_SERVING as `readiness.ready` says, until
/// the statuses are `frozen`.
async fn follow(reporter: HealthReporter, mut readiness: Readiness, frozen: Frozen) {
    loop {
        let status = if *readiness.ready.borrow_and_update() {
            ServingStatus::Serving
        } else {
            ServingStatus::NotServing
        };
        {
            let flag = frozen.flag.lock().await;
            if *flag {
                return;
            }
            for name in &readiness.services {
                reporter.set_service_status(name, status).await;
            }
        }
        tokio::select! {
            changed = readiness.ready.changed() => if changed.is_err() { return },
            () = frozen.token.cancelled() => return,
        }
    }
}

/// A reflection builder knowing every Basra type and health, advertising only
/// the services this server runs (not every service in the descriptor set).
fn reflection<'b>(service_names: &[&str]) -> tonic_reflection::server::Builder<'b> {
    let builder = tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(basra_proto::FILE_DESCRIPTOR_SET)
        .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
        .with_service_name(HEALTH_SERVICE)
        .with_service_name(REFLECTION_V1)
        .with_service_name(REFLECTION_V1ALPHA);
    service_names
        .iter()
        .fold(builder, |builder, name| builder.with_service_name(*name))
}
