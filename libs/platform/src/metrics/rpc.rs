//! RED metrics of every gRPC call: the rate, errors and duration of each method, by
//! gRPC status code, measured by one tower layer ([`RpcLayer`]) that [`serve`](fn@crate::serve)
//! puts in front of every service (inside gRPC-Web's translation, outside auth, so
//! refused calls and browser calls count as any other).
//!
//! | metric | labels | what |
//! |---|---|---|
//! | `basra_grpc_server_started_total` | service, method, type | calls begun |
//! | `basra_grpc_server_handled_total` | service, method, type, code | calls ended, by status |
//! | `basra_grpc_server_handling_seconds` | service, method, type | unary calls: request to status |
//! | `basra_grpc_server_stream_seconds` | service, method, type | streams: opened to ended |
//! | `basra_grpc_server_streams_open` | service, method, type | streams open now |
//! | `basra_grpc_server_msg_received_total` | service, method, type | streams: messages from the client |
//! | `basra_grpc_server_msg_sent_total` | service, method, type | streams: messages to the client |
//!
//! The labels are `grpc_service` (the full name, `basra.game.v1.GameService`),
//! `grpc_method` (`Play`), `grpc_type` (`unary`, `client_stream`, `server_stream`,
//! `bidi_stream`) and `grpc_code` (the canonical name: `OK`, `NOT_FOUND`…). They are
//! bounded: a method is labelled only when the API's descriptors (Basra's, health's and
//! reflection's) name it; any other path counts as `unknown`. No caller appears in them.
//! A method's series are made at zero (its histogram, a streaming method's open streams, OK
//! and the server-error codes) when a server of its service starts
//! ([`RpcMetrics::prepare`]) or at its first call, so that `rate()` sees their first
//! increase and a dashboard shows 0, not "No data", while nobody has called it.
//!
//! Where the status is read: a gRPC status travels in the response's trailers, or in its
//! headers when the answer has no body (a "trailers-only" answer: most refusals). A call
//! whose response ends without a status counts as `UNKNOWN`; one dropped before its
//! status (the client went away, the connection was cut) as `CANCELLED`.

use std::{
    collections::HashMap,
    future::Future,
    pin::Pin,
    sync::{Arc, LazyLock},
    task::{Context, Poll},
    time::Instant,
};

use bytes::Bytes;
use http::{HeaderMap, Request, Response};
use http_body::Body as HttpBody;
use prometheus_client::{
    encoding::EncodeLabelSet,
    metrics::{counter::Counter, family::Family, gauge::Gauge, histogram::Histogram},
    registry::Registry,
};
use prost::Message as _;
use tonic::{Code, body::Body};
use tower::{Layer, Service};

use super::frames::FrameCounter;
use crate::watched_body::{Polled, Watcher, watch};

/// The kind of a method, by who streams.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Unary,
    ClientStream,
    ServerStream,
    BidiStream,
}

impl Kind {
    fn label(self) -> &'static str {
        match self {
            Kind::Unary => "unary",
            Kind::ClientStream => "client_stream",
            Kind::ServerStream => "server_stream",
            Kind::BidiStream => "bidi_stream",
        }
    }

    fn streams(self) -> bool {
        self != Kind::Unary
    }
}

/// A method the metrics may name.
#[derive(Debug)]
struct Method {
    service: String,
    method: String,
    kind: Kind,
    /// Its place in [`RpcMetrics`]' record of the methods whose series exist.
    index: usize,
}

/// What any path the descriptors do not name counts as.
static UNKNOWN: LazyLock<Method> = LazyLock::new(|| Method {
    service: "unknown".to_owned(),
    method: "unknown".to_owned(),
    kind: Kind::Unary,
    index: METHODS.len(),
});

/// The codes whose series a method gets at its first call: OK and those the error ratio
/// counts (deploy/prometheus/alerts.yaml), so that Prometheus sees their first increase.
const FIRST_CODES: [Code; 6] = [
    Code::Ok,
    Code::Unknown,
    Code::Internal,
    Code::Unavailable,
    Code::DataLoss,
    Code::DeadlineExceeded,
];

/// Every method of the API, health and reflection, by path (`/package.Service/Method`).
static METHODS: LazyLock<HashMap<String, Method>> = LazyLock::new(|| {
    let sets = [
        basra_proto::FILE_DESCRIPTOR_SET,
        tonic_health::pb::FILE_DESCRIPTOR_SET,
        tonic_reflection::pb::v1::FILE_DESCRIPTOR_SET,
        tonic_reflection::pb::v1alpha::FILE_DESCRIPTOR_SET,
    ];
    let mut methods = HashMap::new();
    for bytes in sets {
        // The sets are compiled in: one that does not decode is a build defect, and
        // its methods would only count as `unknown`.
        let Ok(set) = prost_types::FileDescriptorSet::decode(bytes) else {
            continue;
        };
        for file in set.file {
            let package = file.package.unwrap_or_default();
            for service in file.service {
                let full = match package.as_str() {
                    "" => service.name().to_owned(),
                    package => format!("{package}.{}", service.name()),
                };
                for method in &service.method {
                    let kind = match (method.client_streaming(), method.server_streaming()) {
                        (false, false) => Kind::Unary,
                        (true, false) => Kind::ClientStream,
                        (false, true) => Kind::ServerStream,
                        (true, true) => Kind::BidiStream,
                    };
                    let index = methods.len();
                    methods
                        .entry(format!("/{full}/{}", method.name()))
                        .or_insert_with(|| Method {
                            service: full.clone(),
                            method: method.name().to_owned(),
                            kind,
                            index,
                        });
                }
            }
        }
    }
    methods
});

fn method(path: &str) -> &'static Method {
    METHODS.get(path).unwrap_or(&UNKNOWN)
}

/// The labels of a call: which method.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct CallLabels {
    /// The gRPC service's full name.
    pub grpc_service: &'static str,
    /// The method's name.
    pub grpc_method: &'static str,
    /// `unary`, `client_stream`, `server_stream` or `bidi_stream`.
    pub grpc_type: &'static str,
}

/// The labels of an ended call: which method and its status code.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct HandledLabels {
    /// The gRPC service's full name.
    pub grpc_service: &'static str,
    /// The method's name.
    pub grpc_method: &'static str,
    /// `unary`, `client_stream`, `server_stream` or `bidi_stream`.
    pub grpc_type: &'static str,
    /// The status code's canonical name (`OK`, `UNAVAILABLE`…).
    pub grpc_code: &'static str,
}

type HistogramFamily = Family<CallLabels, Histogram, fn() -> Histogram>;

/// The upper bounds (seconds) of stream durations: 1 s to 4 h (a match lasts minutes,
/// a friends' feed as long as the app is open).
fn stream_buckets() -> impl Iterator<Item = f64> {
    [
        1.0, 5.0, 15.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1200.0, 1800.0, 3600.0, 7200.0, 14400.0,
    ]
    .into_iter()
}

/// The RED metrics of a server's calls (cheap to clone: one set, shared).
#[derive(Debug, Clone)]
pub struct RpcMetrics {
    inner: Arc<Families>,
}

#[derive(Debug)]
struct Families {
    started: Family<CallLabels, Counter>,
    handled: Family<HandledLabels, Counter>,
    handling_seconds: HistogramFamily,
    stream_seconds: HistogramFamily,
    streams_open: Family<CallLabels, Gauge>,
    msg_received: Family<CallLabels, Counter>,
    msg_sent: Family<CallLabels, Counter>,
    /// By [`Method::index`]: whether the method's series were made.
    made: Box<[std::sync::atomic::AtomicBool]>,
}

impl Families {
    /// Makes a method's series at its first call, each at zero: its histogram (and a
    /// streaming method's open streams and messages), and its count of each of
    /// [`FIRST_CODES`]. A series born at its first increase would have
    /// that increase missed by `rate()` (no earlier sample to compare with).
    fn make(&self, method: &'static Method) {
        use std::sync::atomic::Ordering;
        let Some(made) = self.made.get(method.index) else {
            return;
        };
        if made.load(Ordering::Relaxed) || made.swap(true, Ordering::Relaxed) {
            return;
        }
        let labels = labels(method);
        if method.kind.streams() {
            let _ = self.stream_seconds.get_or_create(&labels);
            let _ = self.streams_open.get_or_create(&labels);
            let _ = self.msg_received.get_or_create(&labels);
            let _ = self.msg_sent.get_or_create(&labels);
        } else {
            let _ = self.handling_seconds.get_or_create(&labels);
        }
        for code in FIRST_CODES {
            let _ = self.handled.get_or_create(&HandledLabels {
                grpc_service: labels.grpc_service,
                grpc_method: labels.grpc_method,
                grpc_type: labels.grpc_type,
                grpc_code: code_name(code),
            });
        }
    }
}

impl RpcMetrics {
    /// A set of its own (tests; a server measured apart).
    pub fn new() -> RpcMetrics {
        RpcMetrics {
            inner: Arc::new(Families {
                started: Family::default(),
                handled: Family::default(),
                handling_seconds: Family::new_with_constructor(|| {
                    Histogram::new(super::latency_buckets())
                }),
                stream_seconds: Family::new_with_constructor(|| Histogram::new(stream_buckets())),
                streams_open: Family::default(),
                msg_received: Family::default(),
                msg_sent: Family::default(),
                made: (0..=METHODS.len())
                    .map(|_| std::sync::atomic::AtomicBool::new(false))
                    .collect(),
            }),
        }
    }

    /// The set every server of this process counts into, served beside each service's
    /// own metrics (see [`render`](super::render)). In production a process runs one
    /// service; under `basra dev` and in tests the services of one process share it,
    /// told apart by `grpc_service`.
    pub fn shared() -> &'static RpcMetrics {
        static SHARED: LazyLock<RpcMetrics> = LazyLock::new(RpcMetrics::new);
        &SHARED
    }

    /// Makes the series of every method of `services` (full names) at zero, as a server
    /// starts: a method's first calls then count in `rate()` even if they all fall
    /// between two scrapes.
    pub fn prepare(&self, services: &[&str]) {
        for method in METHODS.values() {
            if services.contains(&method.service.as_str()) {
                self.inner.make(method);
            }
        }
    }

    /// Registers the metrics in `registry` under the names of the [module](self) table
    /// (best in a registry without a prefix).
    pub fn register(&self, registry: &mut Registry) {
        let f = &self.inner;
        registry.register(
            "basra_grpc_server_started",
            "gRPC calls begun, by method",
            f.started.clone(),
        );
        registry.register(
            "basra_grpc_server_handled",
            "gRPC calls ended, by method and status code",
            f.handled.clone(),
        );
        registry.register(
            "basra_grpc_server_handling_seconds",
            "Unary gRPC calls: seconds from the request to the status, by method",
            f.handling_seconds.clone(),
        );
        registry.register(
            "basra_grpc_server_stream_seconds",
            "gRPC streams: seconds from opened to ended, by method",
            f.stream_seconds.clone(),
        );
        registry.register(
            "basra_grpc_server_streams_open",
            "gRPC streams open now, by method",
            f.streams_open.clone(),
        );
        registry.register(
            "basra_grpc_server_msg_received",
            "gRPC streams: messages received from clients, by method",
            f.msg_received.clone(),
        );
        registry.register(
            "basra_grpc_server_msg_sent",
            "gRPC streams: messages sent to clients, by method",
            f.msg_sent.clone(),
        );
    }
}

impl Default for RpcMetrics {
    fn default() -> Self {
        RpcMetrics::new()
    }
}

/// The canonical name of a status code, as the gRPC specification spells it.
pub fn code_name(code: Code) -> &'static str {
    match code {
        Code::Ok => "OK",
        Code::Cancelled => "CANCELLED",
        Code::Unknown => "UNKNOWN",
        Code::InvalidArgument => "INVALID_ARGUMENT",
        Code::DeadlineExceeded => "DEADLINE_EXCEEDED",
        Code::NotFound => "NOT_FOUND",
        Code::AlreadyExists => "ALREADY_EXISTS",
        Code::PermissionDenied => "PERMISSION_DENIED",
        Code::ResourceExhausted => "RESOURCE_EXHAUSTED",
        Code::FailedPrecondition => "FAILED_PRECONDITION",
        Code::Aborted => "ABORTED",
        Code::OutOfRange => "OUT_OF_RANGE",
        Code::Unimplemented => "UNIMPLEMENTED",
        Code::Internal => "INTERNAL",
        Code::Unavailable => "UNAVAILABLE",
        Code::DataLoss => "DATA_LOSS",
        Code::Unauthenticated => "UNAUTHENTICATED",
    }
}

/// The `grpc-status` of a header or trailer map, if it has one.
fn status_of(headers: &HeaderMap) -> Option<Code> {
    let value = headers.get("grpc-status")?.to_str().ok()?;
    value.trim().parse::<i32>().ok().map(Code::from_i32)
}

/// One call being measured: counted as begun when made, as ended exactly once (by
/// [`Call::end`], or as `CANCELLED` when dropped first).
#[derive(Debug)]
struct Call {
    metrics: RpcMetrics,
    method: &'static Method,
    started: Instant,
    ended: bool,
}

impl Call {
    fn begin(metrics: RpcMetrics, method: &'static Method) -> Call {
        metrics.inner.make(method);
        let labels = labels(method);
        metrics.inner.started.get_or_create(&labels).inc();
        if method.kind.streams() {
            metrics.inner.streams_open.get_or_create(&labels).inc();
        }
        Call {
            metrics,
            method,
            started: Instant::now(),
            ended: false,
        }
    }

    /// The counter of this stream's messages in one direction (`None` for unary calls).
    fn messages(&self, family: fn(&Families) -> &Family<CallLabels, Counter>) -> Option<Counter> {
        self.method
            .kind
            .streams()
            .then(|| family(&self.metrics.inner).get_or_create_owned(&labels(self.method)))
    }

    fn end(&mut self, code: Code) {
        if std::mem::replace(&mut self.ended, true) {
            return;
        }
        let f = &self.metrics.inner;
        let labels = labels(self.method);
        let seconds = self.started.elapsed().as_secs_f64();
        f.handled
            .get_or_create(&HandledLabels {
                grpc_service: labels.grpc_service,
                grpc_method: labels.grpc_method,
                grpc_type: labels.grpc_type,
                grpc_code: code_name(code),
            })
            .inc();
        if self.method.kind.streams() {
            f.stream_seconds.get_or_create(&labels).observe(seconds);
            f.streams_open.get_or_create(&labels).dec();
        } else {
            f.handling_seconds.get_or_create(&labels).observe(seconds);
        }
    }
}

impl Drop for Call {
    fn drop(&mut self) {
        self.end(Code::Cancelled);
    }
}

fn labels(method: &'static Method) -> CallLabels {
    CallLabels {
        grpc_service: &method.service,
        grpc_method: &method.method,
        grpc_type: method.kind.label(),
    }
}

/// The tower [`Layer`] that measures every call into `metrics`.
#[derive(Debug, Clone)]
pub struct RpcLayer {
    metrics: RpcMetrics,
}

impl RpcLayer {
    /// A layer counting into `metrics`.
    pub fn new(metrics: RpcMetrics) -> RpcLayer {
        RpcLayer { metrics }
    }
}

impl<S> Layer<S> for RpcLayer {
    type Service = RpcService<S>;

    fn layer(&self, inner: S) -> RpcService<S> {
        RpcService {
            inner,
            metrics: self.metrics.clone(),
        }
    }
}

/// The service made by [`RpcLayer`].
#[derive(Debug, Clone)]
pub struct RpcService<S> {
    inner: S,
    metrics: RpcMetrics,
}

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

impl<S, ReqBody, ResBody> Service<Request<ReqBody>> for RpcService<S>
where
    S: Service<Request<Body>, Response = Response<ResBody>>,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
    ReqBody: HttpBody<Data = Bytes> + Send + 'static,
    ReqBody::Error: Into<tonic::codegen::StdError>,
    ResBody: HttpBody<Data = Bytes> + Send + 'static,
    ResBody::Error: Into<tonic::codegen::StdError>,
{
    type Response = Response<Body>;
    type Error = S::Error;
    type Future = BoxFuture<Result<Self::Response, Self::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<ReqBody>) -> Self::Future {
        let call = Call::begin(self.metrics.clone(), method(request.uri().path()));
        let received = call.messages(|f| &f.msg_received);
        let request = request.map(|body| match received {
            Some(counter) => watch(Body::new(body), Counted::new(counter)),
            None => Body::new(body),
        });
        let future = self.inner.call(request);
        Box::pin(async move {
            let mut call = call;
            let response = match future.await {
                Ok(response) => response,
                Err(err) => {
                    call.end(Code::Unknown);
                    return Err(err);
                }
            };
            let (parts, body) = response.into_parts();
            let body = Body::new(body);
            if let Some(code) = status_of(&parts.headers) {
                // Trailers-only: the status is all there is.
                call.end(code);
                return Ok(Response::from_parts(parts, body));
            }
            if body.is_end_stream() {
                call.end(Code::Unknown);
                return Ok(Response::from_parts(parts, body));
            }
            let sent = call.messages(|f| &f.msg_sent);
            let observed = Observed {
                call,
                frames: FrameCounter::default(),
                sent,
            };
            Ok(Response::from_parts(parts, watch(body, observed)))
        })
    }
}

/// What watches a request body: its messages, counted as they arrive.
struct Counted {
    frames: FrameCounter,
    counter: Counter,
}

impl Counted {
    fn new(counter: Counter) -> Counted {
        Counted {
            frames: FrameCounter::default(),
            counter,
        }
    }
}

impl Watcher for Counted {
    fn polled(&mut self, polled: &Polled) {
        if let Poll::Ready(Some(Ok(frame))) = polled
            && let Some(data) = frame.data_ref()
        {
            self.counter.inc_by(self.frames.feed(data));
        }
    }
}

/// What watches a response body: its status (in the trailers) ends the call and, for
/// streams, its messages are counted.
struct Observed {
    call: Call,
    frames: FrameCounter,
    sent: Option<Counter>,
}

impl Watcher for Observed {
    fn polled(&mut self, polled: &Polled) {
        match polled {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(data) = frame.data_ref() {
                    if let Some(sent) = &self.sent {
                        sent.inc_by(self.frames.feed(data));
                    }
                } else if let Some(trailers) = frame.trailers_ref() {
                    self.call.end(status_of(trailers).unwrap_or(Code::Unknown));
                }
            }
            Poll::Ready(Some(Err(status))) => self.call.end(status.code()),
            Poll::Ready(None) => self.call.end(Code::Unknown),
            Poll::Pending => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_api_health_and_reflection_are_known_and_typed() {
        let play = method("/basra.game.v1.GameService/Play");
        assert_eq!(
            (play.service.as_str(), play.method.as_str(), play.kind),
            ("basra.game.v1.GameService", "Play", Kind::BidiStream)
        );
        assert_eq!(
            method("/basra.accounts.v1.AccountsService/GuestLogin").kind,
            Kind::Unary
        );
        assert_eq!(
            method("/grpc.health.v1.Health/Watch").kind,
            Kind::ServerStream
        );
        assert_eq!(
            method("/grpc.reflection.v1.ServerReflection/ServerReflectionInfo").kind,
            Kind::BidiStream
        );
        // Anything else is one bounded label, not the path.
        assert_eq!(method("/basra.game.v1.GameService/Nope").service, "unknown");
        assert_eq!(method("/x.Y/Z").method, "unknown");
    }

    #[test]
    fn codes_have_their_canonical_names() {
        assert_eq!(code_name(Code::ResourceExhausted), "RESOURCE_EXHAUSTED");
        assert_eq!(code_name(Code::Ok), "OK");
        let mut headers = HeaderMap::new();
        headers.insert("grpc-status", "5".parse().unwrap());
        assert_eq!(status_of(&headers), Some(Code::NotFound));
    }
}
