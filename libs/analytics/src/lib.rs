//! Analytics over Basra match records.
//!
//! - [`export`]: PostgreSQL (`analyst.match_records`) to Parquet, partitioned by day, with
//!   a per-play table derived by replaying every record through the engine.
//!
//! The SQL views and the read-only `basra_analyst` role are a migration of the accounts
//! service (`services/accounts/migrations/*_analyst.sql`); the Parquet schema is
//! documented in this crate's README and is a public contract. The records themselves,
//! their stored forms and the corpus the tests fill a store with are `basra-records`'s;
//! `basra simulate`, which records a corpus through the API, is the CLI's
//! (`clients/cli/src/simulate/`).

pub mod dataset;
pub mod export;
pub mod progress;
pub mod report;
