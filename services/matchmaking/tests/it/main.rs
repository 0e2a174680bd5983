//! The integration tests of the matchmaking service, in one test binary: each suite is a
//! module (as separate binaries, each re-linked the whole dependency tree), with the shared
//! setup in `helpers`.

mod api;
mod helpers;
mod pairing_parity;
mod replicas;
mod search_steps;
mod store_contract;
