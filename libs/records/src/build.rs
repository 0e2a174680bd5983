//! The `RecordMatch` record of a match played on the engine, built in one place, so that
//! game-session (when a room's match ends), `basra simulate` and the [`crate::corpus`]
//! record exactly the same shape, and the analytics export's replay checks them all the
//! same way.
//!
//! The builder is written in `basra_proto::record`, because game-session calls it there
//! today; this module is its name for every other crate. When game-session reads its
//! records from this crate, the code moves here.

pub use basra_proto::record::{LoggedAction, MatchFacts, match_record, side_scores, timestamp};
