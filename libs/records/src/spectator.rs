//! What a viewer of a match sees, made in one place for game-session's live streams and
//! accounts' replays: the engine's events projected for a viewer ([`hand_dealt`],
//! [`card_played`], [`round_ended`]: other seats' cards hidden by
//! [`Event::for_viewer`]), and [`replay`], the events a spectator saw of a recorded match,
//! rebuilt from its seed and action log.
//!
//! A replay holds exactly what a spectator's `Play` stream carried of the match: the
//! match's start, each round's start and table, each deal with only its counts (no hand),
//! each turn and play, each round's end and the match's end; not what belonged to the
//! room rather than the match (seats changing, connections, quick chat, the rematch offer)
//! and no turn deadlines (a replay has no clock).

use basra_engine::{Action, CardSet, Event, Game, MajorityTie, RoundScore, Seat, Seed, Settings};
use basra_proto::basra::common::v1 as pb;
use basra_proto::basra::game::v1 as game;
use basra_proto::convert::{basra_to_pb, card_to_pb, cards_to_pb, settings_to_pb};

use crate::build::side_scores;
use crate::record::{ActionKind, ActionRecord, MatchRecord, SeatRecord};
use crate::wire::timestamp_to_proto;

/// A deal (the `HandDealt` events of one deal) as `viewer` sees it: its own cards only
/// (none for a spectator), every hand's count and the deck's after the deal.
pub fn hand_dealt(
    deals: &[Event],
    viewer: Option<Seat>,
    hand_counts: Vec<u32>,
    deck_remaining: u32,
) -> game::HandDealt {
    let mine = deals
        .iter()
        .map(|deal| deal.for_viewer(viewer))
        .find_map(|deal| match deal {
            Event::HandDealt {
                cards: Some(cards), ..
            } => Some(cards),
            _ => None,
        })
        .unwrap_or(CardSet::EMPTY);
    game::HandDealt {
        cards: cards_to_pb(mine),
        hand_counts,
        deck_remaining,
    }
}

/// A played card (an [`Event::CardPlayed`]) as `viewer` sees it: the client move id only
/// for the seat that played. `None` for any other event.
pub fn card_played(
    played: &Event,
    viewer: Option<Seat>,
    basra_points: u32,
    automatic: bool,
    client_move_id: &str,
) -> Option<game::CardPlayed> {
    match played.for_viewer(viewer) {
        Event::CardPlayed {
            seat,
            card,
            taken,
            basra,
        } => Some(game::CardPlayed {
            seat: u32::from(seat.0),
            card: Some(card_to_pb(card)),
            taken: cards_to_pb(taken),
            basra: basra_to_pb(basra) as i32,
            basra_points,
            automatic,
            client_move_id: if viewer == Some(seat) {
                client_move_id.to_owned()
            } else {
                String::new()
            },
        }),
        _ => None,
    }
}

/// The points of a played card's Basra (0 without one).
pub fn basra_points(played: &Event, settings: &Settings) -> u32 {
    match played {
        Event::CardPlayed { basra, .. } => basra.map_or(0, |kind| kind.points(settings)),
        _ => 0,
    }
}

/// The majority points carried to the next round after `score`, `carried` having been
/// carried into it: a tie on piles carries them on when the rules say so.
pub fn carried_after(carried: u32, score: &RoundScore, settings: &Settings) -> u32 {
    let tie = score.piles[0] == score.piles[1];
    if tie && settings.majority_tie == MajorityTie::CarryOver {
        carried + settings.majority_points
    } else {
        0
    }
}

/// A round's end, with the majority points carried to the next.
pub fn round_ended(score: &RoundScore, carried: u32) -> game::RoundEnded {
    game::RoundEnded {
        round: score.round + 1,
        leftover: cards_to_pb(score.leftovers),
        last_capturer: score.last_capturer.map(|s| u32::from(s.0)),
        sides: side_scores(score),
        carried_majority_points: carried,
    }
}

/// A seat as the match's start shows it.
fn seat_info(seat: &SeatRecord) -> pb::SeatInfo {
    pb::SeatInfo {
        seat: u32::from(seat.seat),
        side: u32::from(seat.side),
        occupant: if seat.is_bot {
            pb::SeatOccupant::Bot
        } else {
            pb::SeatOccupant::Player
        } as i32,
        user_id: seat.user_id.map(|id| id.to_string()).unwrap_or_default(),
        display_name: seat.display_name.clone(),
        connected: true,
        ..Default::default()
    }
}

/// Why a record does not replay.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReplayError {
    /// The engine refused the record's settings or seed.
    #[error("the match cannot start again: {0}")]
    Start(String),
    /// The engine refused an action of the log.
    #[error("action {index} of the log does not apply: {error}")]
    Action {
        /// Its index in the log.
        index: usize,
        /// The engine's refusal.
        error: String,
    },
}

/// The engine's action of a logged one.
pub fn engine_action(record: &ActionRecord) -> Action {
    match &record.action {
        ActionKind::Play { card, capture } => Action::Play {
            seat: Seat(record.seat),
            card: *card,
            take: capture
                .as_ref()
                .map(|cards| cards.iter().copied().collect()),
        },
        ActionKind::Resign => Action::Resign {
            seat: Seat(record.seat),
        },
    }
}

/// Builds the events of one replay, numbering them from 1.
struct Replay<'a> {
    record: &'a MatchRecord,
    events: Vec<game::PlayResponse>,
    carried: u32,
}

impl Replay<'_> {
    fn push(&mut self, at: chrono::DateTime<chrono::Utc>, event: game::play_response::Event) {
        self.events.push(game::PlayResponse {
            seq: self.events.len() as u64 + 1,
            server_time: Some(timestamp_to_proto(at)),
            event: Some(event),
        });
    }

    /// The events one engine step made (the start, or one action), as a spectator saw
    /// them: a deal's hands grouped into one event, counted after the step.
    fn absorb(
        &mut self,
        game: &Game,
        made: &[Event],
        automatic: bool,
        at: chrono::DateTime<chrono::Utc>,
    ) {
        use game::play_response::Event as E;
        let settings = &self.record.settings;
        let mut deals: Vec<Event> = Vec::new();
        for &event in made {
            if let Event::HandDealt { .. } = event {
                deals.push(event);
                continue;
            }
            if !deals.is_empty() {
                self.push_deal(game, std::mem::take(&mut deals), at);
            }
            match event {
                Event::MatchStarted { commitment, .. } => {
                    let started = E::MatchStarted(game::MatchStarted {
                        match_id: self.record.match_id.clone(),
                        settings: Some(settings_to_pb(settings)),
                        ranked: self.record.ranked,
                        seats: self.record.seats.iter().map(seat_info).collect(),
                        seed_commitment: commitment.to_vec(),
                    });
                    self.push(at, started);
                }
                Event::RoundStarted { round, dealer } => self.push(
                    at,
                    E::RoundStarted(game::RoundStarted {
                        round: round + 1,
                        dealer: u32::from(dealer.0),
                    }),
                ),
                Event::TableDealt { cards } => self.push(
                    at,
                    E::TableDealt(game::TableDealt {
                        cards: cards_to_pb(cards),
                    }),
                ),
                Event::Turn { seat } => self.push(
                    at,
                    E::TurnStarted(game::TurnStarted {
                        seat: u32::from(seat.0),
                        deadline: None,
                    }),
                ),
                Event::CardPlayed { .. } => {
                    let points = basra_points(&event, settings);
                    if let Some(played) = card_played(&event, None, points, automatic, "") {
                        self.push(at, E::CardPlayed(played));
                    }
                }
                Event::RoundEnded(score) => {
                    self.carried = carried_after(self.carried, &score, settings);
                    let ended = round_ended(&score, self.carried);
                    self.push(at, E::RoundEnded(ended));
                }
                Event::HandDealt { .. } | Event::MatchEnded(_) => {}
            }
        }
        if !deals.is_empty() {
            self.push_deal(game, deals, at);
        }
    }

    fn push_deal(&mut self, game: &Game, deals: Vec<Event>, at: chrono::DateTime<chrono::Utc>) {
        let view = game.view(None);
        let counts = view.hand_sizes.iter().map(|&n| u32::from(n)).collect();
        let dealt = hand_dealt(&deals, None, counts, u32::from(view.deck_left));
        self.push(at, game::play_response::Event::HandDealt(dealt));
    }

    /// The match's end as the record tells it (a match closed or abandoned ends without
    /// the engine's saying so).
    fn push_end(&mut self) {
        let record = self.record;
        let forfeit_seat = record
            .actions
            .iter()
            .rev()
            .find(|a| a.action == ActionKind::Resign)
            .map(|a| u32::from(a.seat));
        let ended = game::MatchEnded {
            match_id: record.match_id.clone(),
            winner_side: record.winner_side.map(u32::from),
            reason: record.end_reason.to_proto() as i32,
            forfeit_seat,
            totals: record.final_totals.clone(),
            rating_changes: Vec::new(),
            seed: record.seed.to_vec(),
            close_reason: String::new(),
        };
        self.push(
            record.ended_at,
            game::play_response::Event::MatchEnded(ended),
        );
    }
}

/// The events a spectator saw of `record`'s match, in order (`seq` from 1, each stamped
/// with the time of the action that made it), rebuilt by playing its action log again
/// on the engine from its seed: the module's documentation says what they hold.
pub fn replay(record: &MatchRecord) -> Result<Vec<game::PlayResponse>, ReplayError> {
    let (mut game, started) = Game::new(record.settings, Seed(record.seed))
        .map_err(|e| ReplayError::Start(e.to_string()))?;
    let mut replay = Replay {
        record,
        events: Vec::new(),
        carried: 0,
    };
    replay.absorb(&game, &started, false, record.started_at);
    for (index, logged) in record.actions.iter().enumerate() {
        let made = game
            .apply(&engine_action(logged))
            .map_err(|e| ReplayError::Action {
                index,
                error: e.to_string(),
            })?;
        replay.absorb(&game, &made, logged.automatic, logged.at);
    }
    replay.push_end();
    Ok(replay.events)
}
