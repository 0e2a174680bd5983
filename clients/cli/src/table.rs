//! What a client knows of its game, rebuilt from the server's events: its own hand, the
//! table, pile sizes, scores, whose turn it is. The server sends nothing more, and this
//! model never pretends to know more.

use basra_engine::search::Memory;
use basra_engine::{Card, CardSet, LegalPlay, Seat, Settings, View, legal_plays};
use basra_proto::basra::common::v1 as common;
use basra_proto::basra::game::v1::play_response::Event;
use basra_proto::basra::game::v1::{self as game, PlayResponse};
use basra_proto::convert::{ConvertError, card_from_pb, settings_from_pb};

/// The client's model of one room.
#[derive(Debug, Clone, Default)]
pub struct Table {
    /// The last event sequence seen (to resume from).
    pub last_seq: Option<u64>,
    /// The rules of the match.
    pub settings: Settings,
    /// This client's seat, if it plays.
    pub seat: Option<u32>,
    /// Own hand.
    pub hand: CardSet,
    /// Cards held by each seat.
    pub hand_counts: Vec<u32>,
    /// The table, in laying order.
    pub table: Vec<Card>,
    /// Cards in each side's pile.
    pub piles: [u32; 2],
    /// Match totals per side.
    pub totals: [u32; 2],
    /// Cards left in the deck.
    pub deck_remaining: u32,
    /// The round number.
    pub round: u32,
    /// The seat to play.
    pub turn: Option<u32>,
    /// When the turn times out (Unix seconds).
    pub turn_deadline: Option<i64>,
    /// Display names by seat.
    pub names: Vec<String>,
    /// The players' user ids by seat (empty: a bot or an open seat), to report one.
    pub players: Vec<String>,
    /// The end of the match, once it came.
    pub ended: Option<game::MatchEnded>,
    /// The seats whose player has been seen leaving (a later connection is a return).
    pub left_seats: Vec<u32>,
    /// What this round showed everyone (the cards each side took, who took last), for the
    /// search bot; only since the last snapshot, which does not say.
    pub memory: Memory,
}

impl Table {
    /// Applies one server event; returns it for the caller to announce. Events at or below
    /// the last sequence seen are duplicates and change nothing.
    pub fn apply(&mut self, event: &PlayResponse) -> Result<(), ConvertError> {
        let is_log_event = !matches!(
            event.event,
            Some(Event::Snapshot(_)) | Some(Event::Rejected(_)) | Some(Event::Pong(_))
        );
        if is_log_event && self.last_seq.is_some_and(|seen| event.seq <= seen) {
            return Ok(());
        }
        match &event.event {
            Some(Event::Snapshot(snapshot)) => {
                if let Some(view) = &snapshot.view {
                    self.load(view)?;
                }
            }
            Some(Event::MatchStarted(started)) => {
                // A rematch starts from nothing.
                self.ended = None;
                self.totals = [0, 0];
                self.settings = settings_from_pb(started.settings.as_ref())?;
                self.names = names(&started.seats);
                self.players = players(&started.seats);
            }
            Some(Event::SeatChanged(changed)) => {
                if let Some(info) = &changed.seat {
                    let seat = info.seat as usize;
                    if self.names.len() <= seat {
                        self.names.resize(seat + 1, String::new());
                    }
                    self.names[seat] = display_name(info);
                    if self.players.len() <= seat {
                        self.players.resize(seat + 1, String::new());
                    }
                    self.players[seat] = info.user_id.clone();
                }
            }
            Some(Event::RoundStarted(started)) => {
                self.round = started.round;
                self.memory = Memory {
                    round: Some(started.round),
                    ..Memory::unknown()
                };
                self.piles = [0, 0];
                self.table.clear();
            }
            Some(Event::TableDealt(dealt)) => {
                self.table = dealt
                    .cards
                    .iter()
                    .map(card_from_pb)
                    .collect::<Result<_, _>>()?;
            }
            Some(Event::HandDealt(dealt)) => {
                for card in &dealt.cards {
                    self.hand.insert(card_from_pb(card)?);
                }
                self.hand_counts = dealt.hand_counts.clone();
                self.deck_remaining = dealt.deck_remaining;
            }
            Some(Event::CardPlayed(played)) => self.played(played)?,
            Some(Event::TurnStarted(turn)) => {
                self.turn = Some(turn.seat);
                self.turn_deadline = turn.deadline.as_ref().map(|d| d.seconds);
            }
            Some(Event::RoundEnded(ended)) => {
                for side in &ended.sides {
                    if let Some(total) = self.totals.get_mut(side.side as usize) {
                        *total = side.total;
                    }
                }
                self.table.clear();
            }
            Some(Event::ConnectionChanged(changed))
                if changed.state == game::ConnectionState::Disconnected as i32
                    && !self.left_seats.contains(&changed.seat) =>
            {
                self.left_seats.push(changed.seat);
            }
            Some(Event::MatchEnded(ended)) => {
                self.turn = None;
                for (total, &value) in self.totals.iter_mut().zip(&ended.totals) {
                    *total = value;
                }
                self.ended = Some(ended.clone());
            }
            _ => {}
        }
        if is_log_event || matches!(event.event, Some(Event::Snapshot(_))) {
            self.last_seq = Some(event.seq);
        }
        Ok(())
    }

    fn played(&mut self, played: &game::CardPlayed) -> Result<(), ConvertError> {
        let card = card_from_pb(
            played
                .card
                .as_ref()
                .ok_or_else(|| ConvertError("card_played without a card".into()))?,
        )?;
        let taken: CardSet = played
            .taken
            .iter()
            .map(card_from_pb)
            .collect::<Result<_, _>>()?;
        if Some(played.seat) == self.seat {
            self.hand.remove(card);
        }
        if let Some(count) = self.hand_counts.get_mut(played.seat as usize) {
            *count = count.saturating_sub(1);
        }
        if taken.is_empty() {
            self.table.push(card);
        } else {
            self.table.retain(|c| !taken.contains(*c));
            let side = (played.seat % 2) as usize;
            self.piles[side] += taken.len() as u32 + 1;
            let pile = &mut self.memory.piles[side];
            *pile = pile.union(taken);
            pile.insert(card);
            self.memory.last_capturer = Some(Seat(played.seat as u8));
        }
        Ok(())
    }

    fn load(&mut self, view: &common::GameView) -> Result<(), ConvertError> {
        // The captures before the snapshot are not in it: remember from here on.
        self.memory = Memory {
            round: Some(view.round),
            ..Memory::unknown()
        };
        self.settings = settings_from_pb(view.settings.as_ref())?;
        self.seat = view.your_seat;
        self.hand = view
            .hand
            .iter()
            .map(card_from_pb)
            .collect::<Result<_, _>>()?;
        self.hand_counts = view.hand_counts.clone();
        self.table = view
            .table
            .iter()
            .map(card_from_pb)
            .collect::<Result<_, _>>()?;
        for (pile, &size) in self.piles.iter_mut().zip(&view.pile_sizes) {
            *pile = size;
        }
        for (total, &value) in self.totals.iter_mut().zip(&view.totals) {
            *total = value;
        }
        self.deck_remaining = view.deck_remaining;
        self.round = view.round;
        self.turn = view.turn;
        self.turn_deadline = view.turn_deadline.as_ref().map(|d| d.seconds);
        self.names = names(&view.seats);
        self.players = players(&view.seats);
        Ok(())
    }

    /// Whether it is this client's turn.
    pub fn my_turn(&self) -> bool {
        self.seat.is_some() && self.seat == self.turn && self.ended.is_none()
    }

    /// What each card of the hand would take now (the client highlights it).
    pub fn plays(&self) -> Vec<LegalPlay> {
        legal_plays(&self.table, self.hand, &self.settings)
    }

    /// This client's knowledge as an engine view, for the bot policies.
    pub fn view(&self) -> View {
        let seat = self.seat.map(|s| Seat(s as u8));
        View {
            viewer: seat,
            settings: self.settings,
            commitment: [0; 32],
            round: self.round,
            dealer: Seat(0),
            turn: self.turn.map(|s| Seat(s as u8)),
            hand: self.hand,
            hand_sizes: self.hand_counts.iter().map(|&n| n as u8).collect(),
            table: self.table.clone(),
            pile_sizes: self.piles.map(|n| n as u8),
            totals: self.totals,
            deck_left: self.deck_remaining as u8,
            round_basra_points: [0, 0],
            result: None,
        }
    }
}

fn display_name(info: &common::SeatInfo) -> String {
    if info.display_name.is_empty() {
        format!("seat {}", info.seat)
    } else {
        info.display_name.clone()
    }
}

fn players(seats: &[common::SeatInfo]) -> Vec<String> {
    let mut players = vec![String::new(); seats.len()];
    for info in seats {
        if let Some(id) = players.get_mut(info.seat as usize) {
            id.clone_from(&info.user_id);
        }
    }
    players
}

fn names(seats: &[common::SeatInfo]) -> Vec<String> {
    let mut names = vec![String::new(); seats.len()];
    for info in seats {
        if let Some(name) = names.get_mut(info.seat as usize) {
            *name = display_name(info);
        }
    }
    names
}
