//! `basra simulate`: fill a deployment's match records with simulated matches, for
//! analysts to practise on and for the analytics bench. It is a writer of the API (it signs
//! guests in and records matches through accounts), so it lives with the other API clients
//! here, not in the analytics crate, which only reads what accounts stored.
//!
//! - [`services`]: the default mode, bots playing as guests through matchmaking and
//!   game-session, so every record takes the whole record path.
//! - [`fast`]: `--fast`, the engine plays the matches here ([`basra_records::corpus`]) and
//!   the records go to accounts in `RecordMatches` batches.

pub mod fast;
pub mod services;

pub use fast::{SimulateOptions, SimulateSummary, simulate};
pub use services::{ServicesOptions, ServicesSummary, simulate_services};
