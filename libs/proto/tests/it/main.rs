//! The integration tests of the API crate (`basra-proto`), in one test binary: each suite
//! is a module (as separate binaries, each re-linked the whole dependency tree).

mod decode_any_bytes;
mod descriptor;
