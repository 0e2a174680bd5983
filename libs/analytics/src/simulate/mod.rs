//! `basra simulate`: a corpus of realistic match records for analysts to practise on.
//!
//! - [`corpus`]: matches played by engine bots, as `RecordMatch` records.
//! - [`recorder`]: simulated players signed in as guests, and the records sent to
//!   `AccountsService.RecordMatch` with a service token, many at a time.

pub mod corpus;
pub mod recorder;

pub use recorder::{SimulateOptions, SimulateSummary, simulate};
