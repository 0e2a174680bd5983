//! A recording HTTP server for the tests: every request is kept (method, path, headers,
//! body, HTTP version) and answered by the test's handler, after the handler's delay.
//! It also counts connections and requests in flight, to check the client's limits, and
//! keeps the requests it finished answering apart ([`StandIn::answered`]): a request
//! whose client went away while it waited (a replica killed mid-delivery) is received
//! but never answered.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, Method, Request, Response, StatusCode, Version};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::net::TcpListener;

/// A request as the stand-in received it.
#[derive(Debug, Clone)]
pub struct Recorded {
    /// The method.
    pub method: Method,
    /// The path (no query).
    pub path: String,
    /// Every header.
    pub headers: HeaderMap,
    /// The whole body.
    pub body: Bytes,
    /// HTTP/1.1 or HTTP/2.
    pub version: Version,
    /// When the stand-in had read it whole.
    pub received: std::time::SystemTime,
}

impl Recorded {
    /// The header `name`, as text.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).map(|v| v.to_str().unwrap())
    }

    /// The body as JSON.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap()
    }
}

/// The answer to a request.
#[derive(Debug, Clone)]
pub struct Reply {
    /// The status.
    pub status: u16,
    /// Headers to send.
    pub headers: Vec<(&'static str, String)>,
    /// The body.
    pub body: String,
    /// How long the stand-in waits before answering.
    pub delay: Duration,
}

impl Reply {
    /// `status` with `body`, at once.
    pub fn new(status: u16, body: impl Into<String>) -> Reply {
        Reply {
            status,
            headers: Vec::new(),
            body: body.into(),
            delay: Duration::ZERO,
        }
    }

    /// With the header `name`.
    pub fn header(mut self, name: &'static str, value: impl Into<String>) -> Reply {
        self.headers.push((name, value.into()));
        self
    }

    /// Answered after `delay`.
    pub fn after(mut self, delay: Duration) -> Reply {
        self.delay = delay;
        self
    }
}

/// What answers each request.
pub type Handler = Arc<dyn Fn(&Recorded) -> Reply + Send + Sync>;

#[derive(Default)]
struct Log {
    requests: Mutex<Vec<Recorded>>,
    answered: Mutex<Vec<(Recorded, u16)>>,
    in_flight: AtomicUsize,
    most_in_flight: AtomicUsize,
    connections: AtomicUsize,
}

/// A running stand-in; it stops with the test's runtime.
pub struct StandIn {
    /// Where it listens.
    pub addr: SocketAddr,
    log: Arc<Log>,
}

impl StandIn {
    /// Plain HTTP/1.1.
    pub async fn http1(handler: Handler) -> StandIn {
        StandIn::start(handler, None).await
    }

    /// HTTP/2 over TLS (ALPN `h2` only), with the certificate and key in PEM.
    pub async fn h2_tls(handler: Handler, cert_pem: &str, key_pem: &str) -> StandIn {
        use rustls::pki_types::pem::PemObject as _;
        use rustls::pki_types::{CertificateDer, PrivateKeyDer};
        let certs = CertificateDer::pem_slice_iter(cert_pem.as_bytes())
            .map(Result::unwrap)
            .collect();
        let key = PrivateKeyDer::from_pem_slice(key_pem.as_bytes()).unwrap();
        let mut config = rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .unwrap();
        config.alpn_protocols = vec![b"h2".to_vec()];
        StandIn::start(
            handler,
            Some(tokio_rustls::TlsAcceptor::from(Arc::new(config))),
        )
        .await
    }

    async fn start(handler: Handler, tls: Option<tokio_rustls::TlsAcceptor>) -> StandIn {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let log = Arc::new(Log::default());
        let shared = Arc::clone(&log);
        tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                shared.connections.fetch_add(1, Ordering::SeqCst);
                let (handler, log, tls) = (Arc::clone(&handler), Arc::clone(&shared), tls.clone());
                tokio::spawn(async move {
                    let service = service_fn(move |request| {
                        answer(Arc::clone(&handler), Arc::clone(&log), request)
                    });
                    match tls {
                        Some(acceptor) => {
                            let Ok(stream) = acceptor.accept(tcp).await else {
                                return;
                            };
                            let _ = hyper::server::conn::http2::Builder::new(TokioExecutor::new())
                                .serve_connection(TokioIo::new(stream), service)
                                .await;
                        }
                        None => {
                            let _ = hyper::server::conn::http1::Builder::new()
                                .serve_connection(TokioIo::new(tcp), service)
                                .await;
                        }
                    }
                });
            }
        });
        StandIn { addr, log }
    }

    /// `http://127.0.0.1:port` (or `https://…` for a TLS stand-in: the caller knows which).
    pub fn url(&self, scheme: &str) -> String {
        format!("{scheme}://{}", self.addr)
    }

    /// Every request so far, in arrival order.
    pub fn requests(&self) -> Vec<Recorded> {
        self.log.requests.lock().unwrap().clone()
    }

    /// The requests whose path is `path`.
    pub fn requests_to(&self, path: &str) -> Vec<Recorded> {
        self.requests()
            .into_iter()
            .filter(|r| r.path == path)
            .collect()
    }

    /// The requests answered (the reply written after its delay, the client still there),
    /// with their status, in the order they were answered.
    pub fn answered(&self) -> Vec<(Recorded, u16)> {
        self.log.answered.lock().unwrap().clone()
    }

    /// How many connections were accepted.
    pub fn connections(&self) -> usize {
        self.log.connections.load(Ordering::SeqCst)
    }

    /// The most requests that were being answered at once.
    pub fn most_in_flight(&self) -> usize {
        self.log.most_in_flight.load(Ordering::SeqCst)
    }
}

/// Counts a request out of flight however its answer ends.
struct InFlight<'a>(&'a Log);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}

async fn answer(
    handler: Handler,
    log: Arc<Log>,
    request: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let now = log.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
    log.most_in_flight.fetch_max(now, Ordering::SeqCst);
    let (parts, body) = request.into_parts();
    let body = body
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let recorded = Recorded {
        method: parts.method,
        path: parts.uri.path().to_owned(),
        headers: parts.headers,
        body,
        version: parts.version,
        received: std::time::SystemTime::now(),
    };
    log.requests.lock().unwrap().push(recorded.clone());
    let reply = handler(&recorded);
    // Dropped here when the client goes away meanwhile: not answered.
    let in_flight = InFlight(&log);
    tokio::time::sleep(reply.delay).await;
    drop(in_flight);
    log.answered.lock().unwrap().push((recorded, reply.status));
    let mut response = Response::new(Full::new(Bytes::from(reply.body)));
    *response.status_mut() = StatusCode::from_u16(reply.status).unwrap();
    for (name, value) in reply.headers {
        response.headers_mut().insert(name, value.parse().unwrap());
    }
    Ok(response)
}
