//! The match record of Basra online, in one place: every crate that writes, stores or
//! reads a finished match uses these types, so the record has one shape.
//!
//! - [`build`]: the `RecordMatch` record of a match played on the engine (game-session
//!   when a room's match ends, `basra simulate`, the [`corpus`]).
//! - [`wire`]: that record parsed and checked ([`MatchRecord::from_proto`]), the way
//!   accounts accepts it.
//! - [`record`]: the checked record, whose serde forms are the JSON columns accounts
//!   stores.
//! - [`action_log`]: the compact binary form of the action log that accounts stores
//!   instead of JSON since migration `20261201000003_action_log`.
//! - [`spectator`]: what a viewer sees of a match (game-session's streams), and the
//!   replay of a record: the events a spectator saw, rebuilt from its seed and log.
//! - [`stored`]: a record as read back from storage (the analyst view), with the action
//!   log of either form.
//! - [`corpus`]: realistic records made by engine bots, for analysts' practice corpora
//!   and tests.
//!
//! It depends on the engine and the API's messages only: no database, no server. Every
//! stored form written so far (the JSON rows and each binary log version) is checked to
//! still decode in `tests/compatibility.rs`.
//!
//! ```
//! use basra_records::corpus::{Corpus, CorpusOptions, Player, policy_of};
//! use basra_records::{MatchRecord, action_log};
//!
//! let players = (0..4)
//!     .map(|i| Player { user_id: uuid::Uuid::now_v7(), policy: policy_of(i) })
//!     .collect();
//! let options = CorpusOptions { seed: 7, days: 1, until: chrono::Utc::now() };
//! let record = MatchRecord::from_proto(Corpus::new(players, options).next_record())?;
//! let log = action_log::encode(&record.actions);
//! assert_eq!(action_log::decode(&log)?, record.actions);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod action_log;
pub mod build;
pub mod corpus;
pub mod record;
pub mod spectator;
pub mod stored;
pub mod wire;

pub use record::{
    ActionKind, ActionRecord, BasraCounts, EndReason, MatchRecord, RoundRecord, SeatFill,
    SeatRecord, SideScore, side_of,
};
pub use wire::InvalidRecord;
