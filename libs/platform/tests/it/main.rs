//! The integration tests of the platform crate (`basra-platform`), in one test binary: each
//! suite is a module (as separate binaries, each re-linked the whole dependency tree).

mod any_token;
mod config;
mod error;
mod hostile;
mod identity;
mod revocation;
mod rpc_metrics;
mod scripts;
mod serve;
mod telemetry;
mod tokens;
