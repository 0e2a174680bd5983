//! The integration tests of the terminal client and tools (`basra`), in one test binary:
//! each suite is a module (as separate binaries, each re-linked the whole dependency tree).

mod account;
mod analytics_export;
mod dev;
mod dev_process;
mod hostile;
mod jvm_client;
mod refresh;
mod sdk;
mod seasons;
mod simulate_fast;
mod table;
mod terminal;
mod tls;
mod tournament;
