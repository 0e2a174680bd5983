//! Logs and traces: `tracing` with an `EnvFilter`, human-readable or JSON log
//! lines, and OpenTelemetry trace export over OTLP/gRPC when an endpoint is
//! configured.
//!
//! One trace follows a match action across the services: W3C trace context
//! (`traceparent`) goes out on every internal gRPC call ([`TraceContext`], an
//! interceptor on the clients), is joined by the server ([`grpc_span`]), and crosses
//! the outbox as text stored with the record ([`current_traceparent`],
//! [`continue_trace`]), so the call that delivers a record continues the
//! trace of the action that wrote it.

use std::collections::HashMap;

use opentelemetry::{
    Context,
    propagation::{Extractor, Injector},
    trace::TracerProvider as _,
};
use opentelemetry_otlp::WithExportConfig as _;
use opentelemetry_sdk::{Resource, propagation::TraceContextPropagator, trace::SdkTracerProvider};
use tracing_opentelemetry::OpenTelemetrySpanExt as _;
use tracing_subscriber::{
    EnvFilter, Layer as _, filter,
    fmt::{self, writer::BoxMakeWriter},
    layer::SubscriberExt as _,
    util::SubscriberInitExt as _,
};

use crate::config::TelemetrySettings;

/// Why telemetry could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    /// The filter (from settings or `RUST_LOG`) does not parse.
    #[error("invalid log filter {filter:?}: {message}")]
    Filter {
        /// The filter text.
        filter: String,
        /// What is wrong with it.
        message: String,
    },
    /// The OTLP exporter could not be built (e.g. a malformed endpoint).
    #[error("cannot set up OTLP trace export: {0}")]
    Exporter(#[from] opentelemetry_otlp::ExporterBuildError),
    /// A global subscriber is already installed (init called twice).
    #[error("cannot install the tracing subscriber: {0}")]
    Install(#[from] tracing_subscriber::util::TryInitError),
}

/// Keeps trace export running; dropping it flushes the spans not yet sent
/// and shuts the exporter down. Hold it in `main` until the server returns.
#[must_use = "dropping the guard stops trace export"]
#[derive(Debug)]
pub struct TelemetryGuard {
    provider: Option<SdkTracerProvider>,
}

impl Drop for TelemetryGuard {
    fn drop(&mut self) {
        let Some(provider) = self.provider.take() else {
            return;
        };
        // Shutting down blocks until the exporter has sent the last batch;
        // the exporter's connection runs on the Tokio runtime, so on a
        // multi-thread runtime tell Tokio this thread is about to block.
        let shutdown = move || {
            if let Err(err) = provider.shutdown() {
                // The subscriber may already be gone: say it on stderr too.
                eprintln!("telemetry: cannot flush traces: {err}");
            }
        };
        match tokio::runtime::Handle::try_current() {
            Ok(handle) if handle.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
                tokio::task::block_in_place(shutdown)
            }
            _ => shutdown(),
        }
    }
}

/// Installs the global tracing subscriber for `service`.
///
/// - an `EnvFilter` from `settings.filter`, or from `RUST_LOG` when set;
/// - log lines on stdout, JSON when `settings.json`;
/// - the OpenTelemetry layer exporting spans over OTLP/gRPC, only when
///   `settings.otlp_endpoint` is set, with W3C trace context propagation
///   (incoming `traceparent` headers continue the caller's trace, see
///   [`grpc_span`]).
///
/// Call it once, inside the Tokio runtime (the exporter's connection runs on
/// it), before anything logs.
pub fn init(
    service: &'static str,
    settings: &TelemetrySettings,
) -> Result<TelemetryGuard, TelemetryError> {
    init_with_writer(service, settings, BoxMakeWriter::new(std::io::stdout))
}

/// [`init`] with the log lines going to `writer` instead of stdout (a benchmark's
/// replica, whose stdout is its parent's, keeps the spans and events it would have in
/// production and writes its lines to `std::io::sink`).
pub fn init_with_writer(
    service: &'static str,
    settings: &TelemetrySettings,
    writer: BoxMakeWriter,
) -> Result<TelemetryGuard, TelemetryError> {
    let filter_text = std::env::var("RUST_LOG")
        .ok()
        .filter(|value| !value.is_empty())
        .unwrap_or_else(|| settings.filter.clone());
    let filter = EnvFilter::try_new(&filter_text).map_err(|err| TelemetryError::Filter {
        filter: filter_text.clone(),
        message: err.to_string(),
    })?;

    let (json, plain) = if settings.json {
        let json = fmt::layer()
            .json()
            .flatten_event(true)
            .with_current_span(true)
            .with_writer(writer);
        (Some(json.with_span_list(false)), None)
    } else {
        (None, Some(fmt::layer().with_writer(writer)))
    };

    let provider = match settings.otlp_endpoint() {
        Some(endpoint) => {
            let exporter = opentelemetry_otlp::SpanExporter::builder()
                .with_tonic()
                .with_endpoint(endpoint)
                .build()?;
            Some(
                SdkTracerProvider::builder()
                    .with_batch_exporter(exporter)
                    .with_resource(Resource::builder().with_service_name(service).build())
                    .build(),
            )
        }
        None => None,
    };
    let otel = provider.as_ref().map(|provider| {
        tracing_opentelemetry::layer()
            .with_tracer(provider.tracer(service))
            .with_filter(filter::filter_fn(|metadata| {
                !is_export_plumbing(metadata.target())
            }))
    });

    tracing_subscriber::registry()
        .with(filter)
        .with(json)
        .with(plain)
        .with(otel)
        .try_init()?;
    if let Some(provider) = &provider {
        opentelemetry::global::set_tracer_provider(provider.clone());
        opentelemetry::global::set_text_map_propagator(TraceContextPropagator::new());
    }
    tracing::debug!(service, filter = %filter_text, otlp = settings.otlp_endpoint(), "telemetry ready");
    Ok(TelemetryGuard { provider })
}

/// Spans and events of the exporter's own gRPC client: exporting them would
/// make every export produce more spans to export.
fn is_export_plumbing(target: &str) -> bool {
    const PLUMBING: &[&str] = &[
        "opentelemetry",
        "h2",
        "hyper",
        "hyper_util",
        "tonic::transport",
        "tower::buffer",
    ];
    PLUMBING.iter().any(|prefix| {
        target
            .strip_prefix(prefix)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with("::"))
    })
}

/// The span of one gRPC call (used by [`serve`](crate::serve::serve)): named
/// after the method, and a child of the caller's trace when the request
/// carries W3C trace context and trace export is on.
pub fn grpc_span(request: &http::Request<()>) -> tracing::Span {
    let path = request.uri().path();
    let (service, method) = path
        .trim_start_matches('/')
        .split_once('/')
        .unwrap_or((path, ""));
    let span = tracing::info_span!(
        "grpc",
        otel.name = %path.trim_start_matches('/'),
        otel.kind = "server",
        rpc.system = "grpc",
        rpc.service = %service,
        rpc.method = %method,
    );
    let parent = opentelemetry::global::get_text_map_propagator(|propagator| {
        propagator.extract(&HeaderExtractor(request.headers()))
    });
    // Fails only when no OpenTelemetry layer is installed: nothing to link.
    let _ = span.set_parent(parent);
    span
}

/// A client interceptor that writes the current span's trace context into each
/// outgoing call's metadata (`traceparent`, `tracestate`), so the server's span
/// ([`grpc_span`]) continues this trace. Wrap a channel with [`traced`].
#[derive(Debug, Clone, Copy, Default)]
pub struct TraceContext;

impl tonic::service::Interceptor for TraceContext {
    fn call(
        &mut self,
        mut request: tonic::Request<()>,
    ) -> Result<tonic::Request<()>, tonic::Status> {
        let context = tracing::Span::current().context();
        opentelemetry::global::get_text_map_propagator(|propagator| {
            propagator.inject_context(&context, &mut MetadataInjector(request.metadata_mut()));
        });
        Ok(request)
    }
}

/// A channel whose calls carry the caller's trace context, and are sent again when they
/// never reached the server ([`Resending`](crate::unsent::Resending)).
pub type TracedChannel = tonic::service::interceptor::InterceptedService<
    crate::unsent::Resending<tonic::transport::Channel>,
    TraceContext,
>;

/// `channel`, its calls carrying the caller's trace context ([`TraceContext`]) and sent
/// again when they never reached the server.
pub fn traced(channel: tonic::transport::Channel) -> TracedChannel {
    tonic::service::interceptor::InterceptedService::new(
        crate::unsent::Resending::new(channel),
        TraceContext,
    )
}

/// The current span's trace context as text (`traceparent=…`, and `tracestate=…`
/// when there is one, one per line), to store beside work
/// that another task or replica finishes later (the outbox). Empty when trace
/// export is off or no span is current.
pub fn current_traceparent() -> String {
    let context = tracing::Span::current().context();
    let mut fields = HashMap::new();
    opentelemetry::global::get_text_map_propagator(|propagator| {
        propagator.inject_context(&context, &mut fields);
    });
    let mut lines: Vec<String> = fields
        .into_iter()
        .map(|(key, value)| format!("{key}={value}"))
        .collect();
    lines.sort();
    lines.join("\n")
}

/// The trace context [`current_traceparent`] wrote (an empty or unreadable text
/// gives an empty context: the span it parents starts a new trace).
pub fn context_from_traceparent(text: &str) -> Context {
    let fields: HashMap<String, String> = text
        .lines()
        .filter_map(|line| line.split_once('='))
        .map(|(key, value)| (key.to_owned(), value.to_owned()))
        .collect();
    opentelemetry::global::get_text_map_propagator(|propagator| propagator.extract(&fields))
}

/// Makes `span` a child of the trace context [`current_traceparent`] wrote (no-op
/// when it is empty or trace export is off).
pub fn continue_trace(span: &tracing::Span, trace_context: &str) {
    if trace_context.is_empty() {
        return;
    }
    // Fails only when no OpenTelemetry layer is installed: nothing to link.
    let _ = span.set_parent(context_from_traceparent(trace_context));
}

/// Writes trace context into gRPC metadata.
struct MetadataInjector<'a>(&'a mut tonic::metadata::MetadataMap);

impl Injector for MetadataInjector<'_> {
    fn set(&mut self, key: &str, value: String) {
        if let (Ok(key), Ok(value)) = (
            tonic::metadata::MetadataKey::from_bytes(key.as_bytes()),
            tonic::metadata::MetadataValue::try_from(value.as_str()),
        ) {
            self.0.insert(key, value);
        }
    }
}

/// Reads trace context from http headers (opentelemetry-http has this too,
/// but it is one more dependency for ten lines).
struct HeaderExtractor<'a>(&'a http::HeaderMap);

impl Extractor for HeaderExtractor<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(|value| value.to_str().ok())
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(http::HeaderName::as_str).collect()
    }
}
