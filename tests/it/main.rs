//! The end-to-end suites, in one test binary: each suite is a module (as separate binaries,
//! each re-linked the whole dependency tree); the backends they start are the crate's
//! library (`harness.rs`).

mod admin;
mod backup;
mod deletion;
mod deploy_config;
mod deployed;
mod e2e;
mod events;
mod hostile;
mod identity;
mod key_roles;
mod metrics;
mod prometheus;
mod push;
mod reports;
mod revocation;
mod simulate;
mod stream_limits;
mod traces;
mod web;
mod web_client;
mod web_events;
mod web_inbox;
mod web_seasons;
