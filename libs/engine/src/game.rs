//! A whole match: rounds until a side reaches the target score (RULES.md §20), resignation,
//! and replay from the seed and the action log.

use serde::{Deserialize, Serialize};

use crate::capture::{self, Capture};
use crate::card::Card;
use crate::deck::{Deck, Seed};
use crate::error::RuleError;
use crate::event::{Action, EndReason, Event, MatchResult};
use crate::round::Round;
use crate::seat::{Seat, Side};
use crate::settings::{Settings, SettingsError};
use crate::view::View;

/// The authoritative state of a match. Every change goes through [`Game::apply`]; a refused
/// action leaves the state exactly as it was. It serializes whole (seed, deck order and all
/// hands included) for the server's store — never send it to a client; send a [`View`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Game {
    settings: Settings,
    seed: Seed,
    round: Round,
    totals: [u32; 2],
    /// Majority points carried over from tied rounds (`majority_tie: carry_over`).
    carry: u32,
    result: Option<MatchResult>,
}

/// A card the player to move may play, and what it would take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LegalPlay {
    /// The card to play (from the player's hand).
    pub card: Card,
    /// What it takes by default, and whether the player may name another set.
    pub capture: Capture,
}

impl Game {
    /// Starts a match: validates the settings, deals round 0 and returns the opening events
    /// (`MatchStarted` with the seed commitment, then the deal).
    pub fn new(settings: Settings, seed: Seed) -> Result<(Game, Vec<Event>), SettingsError> {
        let settings = settings.validate()?;
        let mut events = vec![Event::MatchStarted {
            settings,
            commitment: seed.commitment(),
        }];
        let round = Round::start(
            &settings,
            0,
            Deck::shuffled(&seed, 0),
            dealer_of(&settings, 0),
            &mut events,
        );
        let game = Game {
            settings,
            seed,
            round,
            totals: [0, 0],
            carry: 0,
            result: None,
        };
        Ok((game, events))
    }

    /// Applies an action and returns the events it caused.
    pub fn apply(&mut self, action: &Action) -> Result<Vec<Event>, RuleError> {
        let mut events = Vec::new();
        self.apply_into(action, &mut events)?;
        Ok(events)
    }

    /// Applies an action, appending the events it caused to `events` (reuse the buffer on
    /// hot paths). On error nothing changes and nothing is appended.
    pub fn apply_into(
        &mut self,
        action: &Action,
        events: &mut Vec<Event>,
    ) -> Result<(), RuleError> {
        if self.result.is_some() {
            return Err(RuleError::MatchOver);
        }
        match *action {
            Action::Play { seat, card, take } => {
                self.round.play(&self.settings, seat, card, take, events)?;
                if self.round.is_over() {
                    self.end_round(events);
                }
            }
            Action::Resign { seat } => {
                let seats = self.settings.seat_count();
                if seat.0 >= seats {
                    return Err(RuleError::NoSuchSeat { seat, seats });
                }
                self.end_match(seat.side().other(), EndReason::Resigned { seat }, events);
            }
        }
        Ok(())
    }

    fn end_round(&mut self, events: &mut Vec<Event>) {
        let score = self
            .round
            .finish(&self.settings, &mut self.carry, self.totals);
        self.totals = score.totals;
        events.push(Event::RoundEnded(score));
        if let Some(winner) = winner(self.totals, self.settings.target_score) {
            self.end_match(winner, EndReason::TargetReached, events);
            return;
        }
        let index = self.round.index() + 1;
        self.round = Round::start(
            &self.settings,
            index,
            Deck::shuffled(&self.seed, index),
            dealer_of(&self.settings, index),
            events,
        );
    }

    fn end_match(&mut self, winner: Side, reason: EndReason, events: &mut Vec<Event>) {
        let result = MatchResult {
            winner,
            reason,
            totals: self.totals,
            seed: self.seed,
        };
        self.result = Some(result);
        events.push(Event::MatchEnded(result));
    }

    /// What `viewer` may see (`None` = a spectator): see [`View`].
    pub fn view(&self, viewer: Option<Seat>) -> View {
        View::of(self, viewer)
    }

    /// The plays open to the seat whose turn it is (empty once the match is over).
    pub fn legal_plays(&self) -> Vec<LegalPlay> {
        if self.result.is_some() {
            return Vec::new();
        }
        legal_plays(
            self.round.table(),
            self.round.hand(self.round.turn()),
            &self.settings,
        )
    }

    /// The rules of this match.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// The seed. Secret until the match ends; only the server holds it.
    pub fn seed(&self) -> &Seed {
        &self.seed
    }

    /// The current round.
    pub fn round(&self) -> &Round {
        &self.round
    }

    /// The seat to play, or `None` once the match is over.
    pub fn turn(&self) -> Option<Seat> {
        self.result.is_none().then(|| self.round.turn())
    }

    /// The current round, to change in tests.
    #[cfg(test)]
    pub(crate) fn round_mut(&mut self) -> &mut Round {
        &mut self.round
    }

    /// Match totals per side.
    pub fn totals(&self) -> [u32; 2] {
        self.totals
    }

    /// How the match ended, once it has.
    pub fn result(&self) -> Option<&MatchResult> {
        self.result.as_ref()
    }

    /// Whether the match is over.
    pub fn is_over(&self) -> bool {
        self.result.is_some()
    }
}

/// The side that has won after a round with these totals (RULES.md §20): it reached the
/// target with a total higher than the other's. Equal totals at or above it play on.
pub(crate) fn winner(totals: [u32; 2], target: u32) -> Option<Side> {
    let [a, b] = totals;
    match a.cmp(&b) {
        std::cmp::Ordering::Greater if a >= target => Some(Side(0)),
        std::cmp::Ordering::Less if b >= target => Some(Side(1)),
        _ => None,
    }
}

/// The dealer of round `round`: round 0 is dealt by the last seat, so seat 0 plays first;
/// the deal then passes to the next seat each round (RULES.md §5).
fn dealer_of(settings: &Settings, round: u32) -> Seat {
    let seats = u32::from(settings.seat_count());
    Seat(((seats - 1 + round % seats) % seats) as u8)
}

/// Every card of `hand` with what it would take from `table` (canonical capture).
pub fn legal_plays(
    table: &[Card],
    hand: crate::card::CardSet,
    settings: &Settings,
) -> Vec<LegalPlay> {
    hand.iter()
        .map(|card| LegalPlay {
            card,
            capture: capture::capture(table, card, settings),
        })
        .collect()
}

/// A refused action in a replayed log: which one and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReplayError {
    /// The settings are invalid.
    #[error(transparent)]
    Settings(#[from] SettingsError),
    /// An action of the log was refused.
    #[error("action {index} was refused: {error}")]
    Action {
        /// Its position in the log.
        index: usize,
        /// Why.
        error: RuleError,
    },
}

/// Replays a match from its settings, seed and action log: every event, in order, exactly
/// as the match produced them.
pub fn replay(
    settings: Settings,
    seed: Seed,
    actions: &[Action],
) -> Result<(Game, Vec<Event>), ReplayError> {
    let (mut game, mut events) = Game::new(settings, seed)?;
    for (index, action) in actions.iter().enumerate() {
        game.apply_into(action, &mut events)
            .map_err(|error| ReplayError::Action { index, error })?;
    }
    Ok((game, events))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_match_ends_when_a_side_reaches_the_target_alone_in_the_lead() {
        assert_eq!(winner([101, 40], 101), Some(Side(0)));
        assert_eq!(winner([100, 40], 101), None);
        assert_eq!(winner([120, 130], 101), Some(Side(1)));
        assert_eq!(
            winner([110, 110], 101),
            None,
            "equal totals play another round"
        );
        assert_eq!(winner([90, 90], 101), None);
        assert_eq!(winner([0, 1], 1), Some(Side(1)));
    }

    #[test]
    fn dealing_passes_to_the_next_seat_each_round() {
        let two = Settings::default();
        assert_eq!(
            (0..4).map(|r| dealer_of(&two, r).0).collect::<Vec<_>>(),
            [1, 0, 1, 0]
        );
        let four = Settings {
            seats: crate::Seats::Four,
            ..two
        };
        assert_eq!(
            (0..5).map(|r| dealer_of(&four, r).0).collect::<Vec<_>>(),
            [3, 0, 1, 2, 3]
        );
    }
}
