//! The integration tests of the accounts service, in one test binary: each suite is a
//! module (as separate binaries, each re-linked the whole dependency tree), with the shared
//! setup in `helpers`.

mod account;
mod admin;
mod export;
mod feed;
mod grpc;
mod helpers;
mod social_contract;
mod store_contract;
