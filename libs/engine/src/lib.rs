//! The rules of Egyptian Basra as `docs/rules.md` states them: pure and deterministic,
//! with no I/O, no clock and no async. `RULES.md §N` in this crate's comments is rule N of
//! `docs/rules.md`.
//!
//! - [`Game`] holds a match; [`Game::apply`] takes an [`Action`] and answers with the
//!   [`Event`]s it caused, or a [`RuleError`] that leaves the game exactly as it was.
//! - The shuffle is a function of a 32-byte [`Seed`]; [`replay`] rebuilds every event of a
//!   match from its settings, seed and action log.
//! - [`Game::view`] is the only client-facing projection; [`Event::for_viewer`] hides other
//!   seats' cards in the event stream.
//! - [`capture::largest_cover`] is the exact largest-capture search (docs/rules.md §6).
//! - [`bot`] holds the bot policies, [`search`] the search bot behind the "hard" level,
//!   [`analysis`] a finished match's plays compared with the search bot's;
//!   [`round::Round`] a single round, used by the rules tool.
//!
//! ```
//! use basra_engine::{Action, Game, Seed, Settings};
//!
//! let (mut game, _opening) = Game::new(Settings::default(), Seed([7; 32])).unwrap();
//! let seat = game.turn().unwrap();
//! let play = game.legal_plays()[0];
//! let events = game.apply(&Action::Play { seat, card: play.card, take: None }).unwrap();
//! assert!(!events.is_empty());
//! ```

pub mod analysis;
pub mod bot;
pub mod capture;
pub mod card;
pub mod card_list;
pub mod deck;
pub mod error;
pub mod event;
pub mod game;
pub mod round;
pub mod search;
pub mod seat;
pub mod settings;
pub mod view;

pub use capture::{BasraKind, Capture};
pub use card::{Card, CardSet, Rank, Suit};
pub use card_list::CardList;
pub use deck::{Deck, Seed};
pub use error::RuleError;
pub use event::{Action, EndReason, Event, MatchResult, RoundScore};
pub use game::{Game, LegalPlay, ReplayError, legal_plays, replay};
pub use seat::{Seat, Side};
pub use settings::{KomiBasra, MajorityTie, Seats, Settings, SettingsError};
pub use view::View;
