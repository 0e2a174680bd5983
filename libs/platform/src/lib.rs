//! What every Basra online service shares, written once.
//!
//! | module | what it gives a service |
//! |---|---|
//! | [`config`] | typed settings: embedded TOML defaults, an optional file, `BASRA_…` environment variables; validated before any socket is bound; [`config::ConfigError`], the one error every service stops with on a setting it cannot use |
//! | [`telemetry`] | tracing with an `EnvFilter`, JSON logs in production, OpenTelemetry OTLP export when an endpoint is set |
//! | [`auth`] | Ed25519 JWT access tokens: issuing, verifying, the tower [`AuthLayer`] that puts the verified [`Caller`] into each request, and the credentials a service presents to another ([`auth::ServiceCredentials`]) |
//! | [`error`] | the one mapping from service errors to gRPC status codes, with the standard rich details (RetryInfo, ErrorInfo, BadRequest); internal errors are logged, never shown |
//! | [`serve`](mod@serve) | the gRPC server: auth, RED metrics, health, reflection, graceful drain |
//! | [`shutdown`] | a [`CancellationToken`](tokio_util::sync::CancellationToken) cancelled on SIGTERM or SIGINT |
//! | [`redis`](mod@redis) | one Redis layer: a single node or a cluster by the URL setting, key prefix and hash tags, scripts, sharded pub/sub with resubscription |
//! | [`metrics`] | Prometheus metrics (`prometheus-client`) served on `GET /metrics`, with the RED metrics of every call (by method and status code) and the process's figures |
//! | [`client_addr`] | the client's address behind trusted proxies (`forwarded`, `x-forwarded-for`), for per-address limits |
//! | [`client_info`] | the client app behind a call (`basra-client: web/1.2.0`): platform and version, for analytics |
//! | [`presence`] | telling accounts which players are in a match or in the queue (their friends see it) |
//! | [`revocation`] | the banned and deleted accounts every service refuses, shared through Redis |
//! | [`search_threads`] | threads at the lowest CPU priority for searches (hard bots, match analysis) |
//! | [`stream_limit`] | per-account limits on open streams (RESOURCE_EXHAUSTED with a retry hint beyond them) |
//! | [`ratelimit`] | an in-process rate limiter keyed by string (login attempts, sign-ups), on `governor` |
//! | [`unsent`] | a call that never reached the server (refused by a connection going away) sent again: gRPC's transparent retry, which tonic lacks |
//!
//! A service's `main` is, in order: its `Settings::load()` ([`config::load`]),
//! [`telemetry::init`], its `App::build(settings)`, bind the listener, and
//! `app.run(listener, `[`shutdown::on_signal`]`())`, which ends in [`serve::serve`] with
//! the `[server]` settings. The sections every service shares are typed here:
//! [`config::ServerSettings`], [`config::TelemetrySettings`],
//! [`metrics::MetricsSettings`], [`auth::AuthSettings`], [`auth::IdentitySettings`],
//! [`redis::RedisSettings`].

pub mod auth;
pub mod client_addr;
pub mod client_info;
pub mod config;
pub mod error;
pub mod metrics;
pub mod presence;
pub mod ratelimit;
pub mod redis;
pub mod revocation;
pub mod search_threads;
pub mod serve;
pub mod shutdown;
pub mod stream_limit;
pub mod telemetry;
pub mod unsent;
mod watched_body;

pub use auth::{AuthLayer, Caller, Role, TokenIssuer, TokenVerifier};
pub use error::{ServiceError, to_status};
pub use serve::{Readiness, ServeOptions, TlsIdentity, bind, serve};
