//! game-session's integration tests, one binary (each extra binary re-links tonic, redis
//! and the service on every build): real replicas on port 0 over real Redis (a unique key
//! prefix per test; Redis and the local cluster must be up: these tests fail, never
//! skip, without them), real tonic clients, set up by `basra_testkit::game_session` (`spawn_app()`, its builder,
//! a started two-player room, players, a fake accounts). `tests/failover.rs` stays a binary of its
//! own: it moves the shared cluster's primaries, which no other test may use meanwhile.

mod bulk;
mod game;
mod held_state;
mod hostile;
mod lease;
mod pod_cost;
mod session;
mod startup;
mod store_contract;
mod web;
