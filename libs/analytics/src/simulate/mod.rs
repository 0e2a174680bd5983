//! `basra simulate`: a corpus of realistic match records for analysts to practise on.
//!
//! - [`corpus`]: matches played by engine bots, as `RecordMatch` records.

pub mod corpus;
