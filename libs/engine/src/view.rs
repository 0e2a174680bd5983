//! The only projection of a game a client ever receives (DESIGN.md: `view(state, seat)`).

use serde::{Deserialize, Serialize};

use crate::card::{Card, CardSet};
use crate::event::MatchResult;
use crate::game::{Game, LegalPlay, legal_plays};
use crate::round::Round;
use crate::seat::Seat;
use crate::settings::Settings;

/// What one seat (or a spectator) may know: its own hand, the table, the pile sizes, the
/// scores, whose turn it is and how many cards are left — never another hand, the pile
/// contents or the deck order. The seed appears only in `result`, once the match is over.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct View {
    /// The seat this view is for; `None` for a spectator.
    pub viewer: Option<Seat>,
    /// The rules of the match.
    pub settings: Settings,
    /// SHA-256 of the seed, published at the start.
    #[serde(with = "crate::event::hex32")]
    pub commitment: [u8; 32],
    /// The round number, from 0.
    pub round: u32,
    /// The dealer of this round.
    pub dealer: Seat,
    /// The seat to play; `None` once the match is over.
    pub turn: Option<Seat>,
    /// The viewer's own hand (empty for a spectator).
    pub hand: CardSet,
    /// How many cards each seat holds (everyone at a table sees this).
    pub hand_sizes: Vec<u8>,
    /// The table, in laying order.
    pub table: Vec<Card>,
    /// Cards in each side's pile.
    pub pile_sizes: [u8; 2],
    /// Match totals per side.
    pub totals: [u32; 2],
    /// Cards not yet dealt.
    pub deck_left: u8,
    /// Basra points each side has made this round.
    pub round_basra_points: [u32; 2],
    /// How the match ended, with the revealed seed.
    pub result: Option<MatchResult>,
}

impl View {
    pub(crate) fn of(game: &Game, viewer: Option<Seat>) -> View {
        View {
            commitment: game.seed().commitment(),
            turn: game.turn(),
            result: game.result().copied(),
            ..View::of_round(game.settings(), game.round(), viewer, game.totals())
        }
    }

    /// What `viewer` may see of a round played under `settings`, with these match totals
    /// before it (for a round outside a match, as the rules tool plays; no commitment).
    pub fn of_round(
        settings: &Settings,
        round: &Round,
        viewer: Option<Seat>,
        totals: [u32; 2],
    ) -> View {
        let seats = settings.seat_count();
        let viewer = viewer.filter(|seat| seat.0 < seats);
        View {
            viewer,
            settings: *settings,
            commitment: [0; 32],
            round: round.index(),
            dealer: round.dealer(),
            turn: (!round.is_over()).then(|| round.turn()),
            hand: viewer.map_or(CardSet::EMPTY, |seat| round.hand(seat)),
            hand_sizes: (0..seats)
                .map(|s| round.hand(Seat(s)).len() as u8)
                .collect(),
            table: round.table().to_vec(),
            pile_sizes: round.piles().map(|pile| pile.len() as u8),
            totals,
            deck_left: round.deck().len(),
            round_basra_points: round.basra_points(),
            result: None,
        }
    }

    /// Whether it is the viewer's turn.
    pub fn my_turn(&self) -> bool {
        self.viewer.is_some() && self.viewer == self.turn
    }

    /// The viewer's plays and what each would take; empty when it is not the viewer's turn.
    pub fn legal_plays(&self) -> Vec<LegalPlay> {
        if !self.my_turn() {
            return Vec::new();
        }
        legal_plays(&self.table, self.hand, &self.settings)
    }

    /// Every card this view shows by identity: the hand and the table.
    pub fn visible_cards(&self) -> CardSet {
        self.hand.union(self.table.iter().copied().collect())
    }
}
