//! The integration tests of the rules engine (`basra-engine`), in one test binary: each
//! suite is a module (as separate binaries, each re-linked the whole dependency tree).

mod properties;
mod rules;
