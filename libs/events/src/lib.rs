//! Tournaments as pure logic: the formats of issue 47's events, their pairings and
//! standings, with no I/O, no clock and no async. The services keep the state (this
//! crate's types are `serde`), drive the clock and hold the leases; this crate answers
//! "who plays whom next" and "who leads", and refuses what the rules refuse.
//!
//! - [`Knockout`]: single elimination seeded by rating, byes to the top seeds, forfeits,
//!   rounds advanced as their last result comes in.
//! - [`Swiss`]: a fixed number of rounds paired by score groups, no rematches, one bye at
//!   most per player, by the FIDE Dutch system less its colour rules ([`swiss`] says which
//!   rules exactly); Buchholz, Buchholz cut-1 and Sonneborn–Berger.
//! - [`Arena`]: a time window; a player who finishes is paired again at once with someone
//!   waiting near in score; 2 points a win, 4 after two wins in a row; pause, withdraw.
//! - [`Schedule`]: a recurring event's next start from a CRON expression in an IANA time
//!   zone, daylight saving included; an expression that never fires is refused.
//! - [`standings`]: the table every format answers ([`Standing`]: rank, points,
//!   tie-breaks, matches played).
//!
//! Players are [`PlayerId`]s (an account id's 128 bits) entered as [`Entrant`]s with the
//! rating that seeds them; results are [`Outcome`]s (Basra has no draws: a win, a
//! forfeit, or neither player came); every refusal is an [`EventError`] and leaves the
//! event as it was.
//!
//! ```
//! use basra_events::{Entrant, Knockout, MatchId, Outcome, PlayerId};
//!
//! let field: Vec<Entrant> = (1..=3).map(|i| Entrant::new(PlayerId(i), 2000 - i as i32)).collect();
//! let mut event = Knockout::new(&field).unwrap();
//! // Seed 1 has a bye; seeds 2 and 3 play table 2 of round 1.
//! event.record(MatchId::new(1, 2), Outcome::Won(PlayerId(3))).unwrap();
//! event.record(MatchId::new(2, 1), Outcome::Won(PlayerId(1))).unwrap();
//! assert_eq!(event.champion(), Some(PlayerId(1)));
//! ```

pub mod arena;
pub mod error;
pub mod knockout;
pub mod outcome;
pub mod player;
pub mod schedule;
pub mod standings;
pub mod swiss;

pub use arena::Arena;
pub use error::EventError;
pub use knockout::Knockout;
pub use outcome::{MatchId, Outcome};
pub use player::{Entrant, PlayerId};
pub use schedule::Schedule;
pub use standings::{Standing, TieBreaks};
pub use swiss::Swiss;
