//! The integration tests of the analytics crate (`basra-analytics`), in one test binary:
//! each suite is a module (as separate binaries, each re-linked the whole dependency tree),
//! with the shared setup in `helpers`.

mod erasure;
mod export;
mod helpers;
mod queries;
mod report;
mod s3;
mod views;
