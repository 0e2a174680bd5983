//! The integration tests of the matchmaking service, in one test binary: each suite is a
//! module (as separate binaries, each re-linked the whole dependency tree). The shared
//! setup is `basra_testkit::matchmaking`: `spawn_app()` and its builders, the fakes of
//! game-session and accounts, the stores and their fixtures.

mod api;
mod event_store_contract;
mod events;
mod pairing_parity;
mod replicas;
mod search_steps;
mod store_contract;
