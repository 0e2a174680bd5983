//! The integration tests of the rules tool (`basra-rules`), in one test binary: each suite
//! is a module (as separate binaries, each re-linked the whole dependency tree).

mod any_line;
mod tool;
