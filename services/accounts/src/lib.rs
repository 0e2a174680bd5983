//! The Basra online accounts service: guest and password sign-in, rotating
//! refresh tokens, Ed25519 access tokens, profiles, Glicko-2 ratings, the
//! leaderboard, match history and the internal, idempotent `RecordMatch`.
//!
//! - [`domain`]: validated request values (usernames, passwords, names, ids).
//! - [`store`]: a trait per role ([`Store`]: all of them), each on [`PgStore`]
//!   (PostgreSQL, migrations in `migrations/`) and [`MemoryStore`] (embedded dev mode).
//! - [`service`]: the gRPC service over any store.
//! - [`friends`]: the rules of friend requests, friendships and blocks;
//!   [`social`]: presence and the friends' feed (WatchFriends), in Redis;
//!   [`inbox`]: the notices kept for each player (ListNotices, SendNotice), and the hook
//!   that hears of each one.
//! - [`analysis`]: players' plays compared with the search bot's, off the runtime.
//! - [`deletion`]: what deleting an account leaves behind (anonymous keys, placeholders).
//! - [`names`]: the rate limit of display name changes.
//! - [`push`]: push notifications: which notices are pushed to which devices, and the
//!   outbox worker sending them through `basra-push`.
//! - [`names`]: the rate limit of display name changes; [`reports`]: the rules of
//!   reports of players (reasons, the per-reporter limit, hidden names).
//! - [`oidc`]: sign-in with Apple and Google (OpenID Connect ID tokens, the providers'
//!   keys cached).
//! - [`rating`]: Glicko-2 changes of a match; match records are `basra-records`'s
//!   (checked there, stored here with the action log in [`action_log`]'s binary form);
//!   [`seasons`]: the rating seasons, their soft reset and the tiers; [`refresh`]: refresh tokens; [`password`]: argon2id.
//! - [`settings`]: typed settings; [`App`] (in `startup.rs`, the assembly): the service as
//!   they describe it.
//!
//! Every service starts the same way: `Settings::load()` → [`App::build`] →
//! [`App::run`] (or [`App::mount`] beside other services, as `basra dev` does).
//!
//! ```no_run
//! # async fn demo() -> Result<(), accounts::AccountsError> {
//! let settings = accounts::Settings::load().expect("valid settings");
//! let listener = tokio::net::TcpListener::bind(settings.server.listen).await.expect("bind");
//! let app = accounts::App::build(settings).await?;
//! app.run(listener, tokio_util::sync::CancellationToken::new()).await
//! # }
//! ```

pub mod analysis;
pub mod deletion;
pub mod domain;
pub mod error;
pub mod friends;
pub mod inbox;
pub mod metrics;
pub mod names;
pub mod oidc;
pub mod password;
pub mod push;
pub mod rating;
pub mod refresh;
pub mod reports;
pub mod seasons;
pub mod service;
pub mod settings;
pub mod social;
mod startup;
pub mod store;

/// The binary form of the action log accounts stores (`basra-records`; named here too for
/// the readers of accounts' database, such as the fault suite).
pub use basra_records::action_log;
pub use error::AccountsError;
pub use metrics::AccountsMetrics;
pub use service::{
    AccountsApi, PUBLIC_METHODS, SERVICE_NAME, SERVICE_NAMES, ServiceConfig, issue_service_token,
};
pub use settings::Settings;
pub use startup::{App, migrate, serve, service_config, signing_key};
pub use store::{LeaderboardRules, MemoryStore, PgStore, Store};
