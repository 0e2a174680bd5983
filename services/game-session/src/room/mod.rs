//! A room as stored in Redis: seats, the running match (the engine's full, secret
//! [`Game`]), timers and the bookkeeping the match record needs. Every change is a pure
//! method that pushes the resulting log events into [`Room::take_pending`]; the store
//! then writes state and events in one atomic step.
//!
//! Beside it: [`seats`] (who sits where, as both the room and the log hold it),
//! [`events`] (the stored event log), [`timing`] (the per-room timings and the clock),
//! [`record`] (the match record at a match's end) and `actions` (what a seated player
//! does to a room, checked and committed through the replica).

use basra_engine::search::Memory;
use basra_engine::{
    Action, Card, CardSet, EndReason, Event, Game, RoundScore, Seat, Seed, Settings, View, bot,
};
use basra_proto::basra::common::v1 as pb;
use basra_proto::basra::game::v1::RejectCode;
use basra_records::spectator;
use basra_records::{EndReason as MatchEndReason, SeatFill};
use serde::{Deserialize, Serialize};

use rand::RngCore as _;

pub(crate) mod actions;
pub mod events;
pub mod record;
pub mod seats;
pub mod timing;

use events::{LogEvent, StoredEvent};
pub use seats::{BotLevel, Occupant, SeatOrigin, SeatSnapshot, SeatState};
use timing::Timing;

/// A fresh seed for a new match, from the operating system's CSPRNG-seeded generator.
pub fn fresh_seed() -> Seed {
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    Seed(bytes)
}

/// A fresh match id.
pub fn fresh_id() -> String {
    uuid::Uuid::now_v7().to_string()
}

/// How late (milliseconds past a turn's deadline and slack) a turn's timer may fire and
/// still play for the player. Later than this, the server was not keeping time (its store
/// unreachable, a replica gone before another took over its timers) and the player, whose
/// plays could not land either, gets the turn again, whole, instead of losing it to the
/// outage. The renewed turn's timer fires on time unless the server is out again.
pub const LATE_TIMER_MS: i64 = 2_000;

/// Whether the lobby lists a room. Stored as the API's `RoomVisibility` number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Visibility {
    /// Listed by the lobby; anyone may join.
    Public,
    /// Joinable only with its code.
    Private,
}

impl Visibility {
    /// The visibility of the API's `RoomVisibility` number: unspecified is private (as
    /// the API says), a number that names none is `None`.
    pub fn from_proto(visibility: i32) -> Option<Visibility> {
        Some(match pb::RoomVisibility::try_from(visibility).ok()? {
            pb::RoomVisibility::Public => Visibility::Public,
            pb::RoomVisibility::Unspecified | pb::RoomVisibility::Private => Visibility::Private,
        })
    }

    /// The API's `RoomVisibility`.
    pub fn to_proto(self) -> pb::RoomVisibility {
        match self {
            Visibility::Public => pb::RoomVisibility::Public,
            Visibility::Private => pb::RoomVisibility::Private,
        }
    }
}

/// [`Room::visibility`] as its stored number (any number but public reads as private).
mod stored_visibility {
    use serde::{Deserialize, Deserializer, Serializer};

    use super::Visibility;

    pub(super) fn serialize<S: Serializer>(
        visibility: &Visibility,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        serializer.serialize_i32(visibility.to_proto() as i32)
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Visibility, D::Error> {
        Ok(Visibility::from_proto(i32::deserialize(deserializer)?).unwrap_or(Visibility::Private))
    }
}

/// [`Room::end_reason`] as the API's `MatchEndReason` number (a number that names no
/// reason reads as none).
mod stored_end_reason {
    use basra_proto::basra::common::v1 as pb;
    use basra_records::EndReason;
    use serde::{Deserialize, Deserializer, Serialize as _, Serializer};

    pub(super) fn serialize<S: Serializer>(
        reason: &Option<EndReason>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        reason
            .map(|reason| reason.to_proto() as i32)
            .serialize(serializer)
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<EndReason>, D::Error> {
        Ok(
            Option::<i32>::deserialize(deserializer)?.and_then(|number| {
                Some(match pb::MatchEndReason::try_from(number).ok()? {
                    pb::MatchEndReason::Unspecified => return None,
                    pb::MatchEndReason::TargetReached => EndReason::TargetReached,
                    pb::MatchEndReason::Resigned => EndReason::Resigned,
                    pb::MatchEndReason::Abandoned => EndReason::Abandoned,
                    pb::MatchEndReason::Closed => EndReason::Closed,
                })
            }),
        )
    }
}

/// Where a room is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Seats are open.
    Waiting,
    /// A match runs.
    InProgress,
    /// The match ended; a rematch may follow.
    Finished,
    /// Closed for good.
    Closed,
}

/// One action of the running match's log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ActionRecord {
    /// The engine action.
    pub action: Action,
    /// The server acted (timer or bot).
    pub automatic: bool,
    /// When (Unix milliseconds).
    pub at_ms: i64,
}

/// A finished round of the running match.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoundRecord {
    /// Who dealt the round (a seat).
    pub dealer: u8,
    /// The engine's scoring.
    pub score: RoundScore,
}

/// A refused client message: the code and a developer-facing message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reject {
    /// Why.
    pub code: RejectCode,
    /// Explanation (English).
    pub message: String,
}

impl Reject {
    pub(crate) fn new(code: RejectCode, message: impl Into<String>) -> Reject {
        Reject {
            code,
            message: message.into(),
        }
    }
}

/// A hard bot's turn, as its seat sees it, for the search (see `crate::replica::bots`).
#[derive(Debug, Clone)]
pub struct BotTurn {
    /// The room's `seq` when it was taken: the state the choice is for.
    pub seq: u64,
    /// The bot's seat.
    pub seat: Seat,
    /// What the seat sees.
    pub view: View,
    /// What the round showed everyone.
    pub memory: Memory,
}

/// The card the search chose for a [`BotTurn`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BotChoice {
    /// The room's `seq` the choice is for.
    pub seq: u64,
    /// The bot's seat.
    pub seat: Seat,
    /// The card it chose to play, from its hand.
    pub card: Card,
}

/// A table: its seats, the match being played (the engine's state), timers, and the events not yet committed.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Room {
    /// The room id.
    pub id: String,
    /// The rules.
    pub settings: Settings,
    /// Whether the match counts for ratings (never with a bot seat).
    pub ranked: bool,
    /// Spectators allowed.
    pub allow_spectators: bool,
    /// Listed in the lobby or not.
    #[serde(with = "stored_visibility")]
    pub visibility: Visibility,
    /// Who sits in each seat, in turn order, and their connection.
    pub seats: Vec<SeatState>,
    /// Where the room is.
    pub status: Status,
    /// The timings every replica applies to this room.
    pub timing: Timing,
    /// The current (or last) match id; empty before the first.
    pub match_id: String,
    /// The running (or last) match: full secret state.
    pub game: Option<Game>,
    /// How many actions the running match has had (its action log is stored apart
    /// from the room, see [`Room::take_pending_actions`]).
    pub action_count: u32,
    /// The match's finished rounds.
    pub rounds: Vec<RoundRecord>,
    /// The dealer of the current round.
    pub dealer: u8,
    /// Majority points carried over.
    pub carried: u32,
    /// The match ended by this reason (set at the end).
    #[serde(with = "stored_end_reason")]
    pub end_reason: Option<MatchEndReason>,
    /// The seat that resigned or abandoned.
    pub forfeit_seat: Option<u8>,
    /// When the match started and ended.
    pub started_at_ms: i64,
    /// When the match ended.
    pub ended_at_ms: i64,
    /// When the room was created.
    pub created_at_ms: i64,
    /// When the last event happened.
    pub last_event_ms: i64,
    /// When the current turn times out.
    pub turn_deadline_ms: Option<i64>,
    /// When the bot to move plays.
    pub bot_due_ms: Option<i64>,
    /// Seats that asked for a rematch.
    pub rematch: Vec<u8>,
    /// When the rematch offer lapses.
    pub rematch_deadline_ms: Option<i64>,
    /// The seq of the room's last event.
    pub seq: u64,
    /// The seq of the last event that changed the game (what `based_on_seq` is checked
    /// against).
    pub game_seq: u64,
    /// How each seat was filled, by seat (shorter, even empty, for rooms stored before
    /// format 2: those seats are not known). Not in the room's own serde form: the
    /// codec stores it after the room (see `store::codec`).
    #[serde(skip)]
    pub seat_origins: Vec<SeatOrigin>,
    /// Events not yet stored.
    #[serde(skip)]
    pending: Vec<StoredEvent>,
    /// Actions not yet stored, and whether a new match (a new action log) began.
    #[serde(skip)]
    pending_actions: PendingActions,
}

/// The changes to the running match's action log since the room was loaded: the log
/// only grows, so the hot path never reads it back (only the match record does).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PendingActions {
    /// A new match started: its log starts empty (before `actions`).
    pub reset: bool,
    /// Actions to append, in order.
    pub actions: Vec<ActionRecord>,
}

impl Room {
    /// A new room; the match starts at once when no seat is open (see [`Room::start_if_full`]).
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        id: String,
        settings: Settings,
        occupants: Vec<Occupant>,
        ranked: bool,
        allow_spectators: bool,
        visibility: Visibility,
        timing: Timing,
        now: i64,
    ) -> Room {
        let seats = occupants
            .into_iter()
            .map(|occupant| SeatState {
                connected: matches!(occupant, Occupant::Bot { .. }),
                occupant,
                conn_id: None,
                replica: None,
                connected_at_ms: 0,
                grace_deadline_ms: None,
            })
            .collect();
        Room {
            id,
            settings,
            ranked,
            allow_spectators,
            visibility,
            seats,
            status: Status::Waiting,
            timing,
            match_id: String::new(),
            game: None,
            action_count: 0,
            rounds: Vec::new(),
            dealer: 0,
            carried: 0,
            end_reason: None,
            forfeit_seat: None,
            started_at_ms: 0,
            ended_at_ms: 0,
            created_at_ms: now,
            last_event_ms: now,
            turn_deadline_ms: None,
            bot_due_ms: None,
            rematch: Vec::new(),
            rematch_deadline_ms: None,
            seq: 0,
            game_seq: 0,
            seat_origins: Vec::new(),
            pending: Vec::new(),
            pending_actions: PendingActions::default(),
        }
    }

    /// The events made since the last call, to be stored; the first has seq
    /// `self.seq - len + 1`.
    pub fn take_pending(&mut self) -> Vec<StoredEvent> {
        std::mem::take(&mut self.pending)
    }

    /// The action-log changes made since the last call, to be stored with the events.
    pub fn take_pending_actions(&mut self) -> PendingActions {
        std::mem::take(&mut self.pending_actions)
    }

    fn record_action(&mut self, record: ActionRecord) {
        self.action_count += 1;
        self.pending_actions.actions.push(record);
    }

    fn push(&mut self, event: LogEvent, now: i64) {
        self.seq += 1;
        if event.changes_game() {
            self.game_seq = self.seq;
        }
        self.last_event_ms = now;
        self.pending.push(StoredEvent { at_ms: now, event });
    }

    /// The seat of `user_id`, if they have one.
    pub fn seat_of(&self, user_id: &str) -> Option<u8> {
        self.seats
            .iter()
            .position(
                |seat| matches!(&seat.occupant, Occupant::Player { user_id: id, .. } if id == user_id),
            )
            .map(|index| index as u8)
    }

    /// How `seat` was filled (the default when not known).
    pub fn seat_origin(&self, seat: usize) -> SeatOrigin {
        self.seat_origins.get(seat).copied().unwrap_or_default()
    }

    /// Records how `seat` was filled.
    pub fn set_seat_origin(&mut self, seat: usize, origin: SeatOrigin) {
        if seat >= self.seats.len() {
            return;
        }
        if self.seat_origins.len() < self.seats.len() {
            self.seat_origins
                .resize(self.seats.len(), SeatOrigin::default());
        }
        self.seat_origins[seat] = origin;
    }

    /// The public facts of every seat.
    pub fn seat_snapshots(&self) -> Vec<SeatSnapshot> {
        (0..self.seats.len())
            .map(|i| self.snapshot(i as u8))
            .collect()
    }

    fn snapshot(&self, seat: u8) -> SeatSnapshot {
        let state = &self.seats[usize::from(seat)];
        SeatSnapshot {
            seat,
            occupant: state.occupant.clone(),
            connected: state.connected,
            guest: self.seat_origin(usize::from(seat)).guest,
        }
    }

    /// Starts the first match if every seat is taken and the room is waiting.
    pub fn start_if_full(&mut self, seed: Seed, match_id: String, now: i64) {
        if self.status != Status::Waiting || self.seats.iter().any(|s| s.occupant == Occupant::Open)
        {
            return;
        }
        self.start_match(seed, match_id, now);
    }

    fn start_match(&mut self, seed: Seed, match_id: String, now: i64) {
        let (game, events) = Game::new(self.settings, seed).expect("settings were validated");
        self.game = Some(game);
        self.match_id = match_id;
        self.status = Status::InProgress;
        self.action_count = 0;
        self.pending_actions = PendingActions {
            reset: true,
            actions: Vec::new(),
        };
        self.rounds.clear();
        self.carried = 0;
        self.end_reason = None;
        self.forfeit_seat = None;
        self.started_at_ms = now;
        self.ended_at_ms = 0;
        self.rematch.clear();
        self.rematch_deadline_ms = None;
        self.absorb(events, now, false, String::new(), None);
    }

    /// [`Room::seat_player`] for a player who arrives `origin` (matchmaking's
    /// `SeatPlayer`): the origin goes in before the seat is taken, since a full room
    /// starts its match at once and the match's record reads it from there; a refusal
    /// puts the seat's previous origin back. A player seated already keeps the origin
    /// their seat has.
    #[allow(clippy::too_many_arguments)]
    pub fn seat_arriving_player(
        &mut self,
        user_id: &str,
        name: &str,
        preferred: Option<u32>,
        origin: SeatOrigin,
        seed: Seed,
        match_id: String,
        now: i64,
    ) -> Result<u8, String> {
        let fresh = self.seat_of(user_id).is_none();
        let open = match preferred {
            Some(seat) => usize::try_from(seat).ok(),
            None => self.seats.iter().position(|s| s.occupant == Occupant::Open),
        };
        let before = open.map(|seat| (seat, self.seat_origin(seat)));
        if let (true, Some((seat, _))) = (fresh, before) {
            self.set_seat_origin(seat, origin);
        }
        self.seat_player(user_id, name, preferred, seed, match_id, now)
            .inspect_err(|_| {
                if let (true, Some((seat, previous))) = (fresh, before) {
                    self.set_seat_origin(seat, previous);
                }
            })
    }

    /// Puts `user_id` (shown as `name`) in a seat of a waiting room (idempotent for a seated
    /// player until the match ends: a room whose match has ended seats nobody, not even
    /// its own players, who would find a table with nothing left to play).
    pub fn seat_player(
        &mut self,
        user_id: &str,
        name: &str,
        preferred: Option<u32>,
        seed: Seed,
        match_id: String,
        now: i64,
    ) -> Result<u8, String> {
        if let Some(seat) = self.seat_of(user_id) {
            if matches!(self.status, Status::Finished | Status::Closed) {
                return Err("the room's match has ended".into());
            }
            return Ok(seat);
        }
        if self.status != Status::Waiting {
            return Err("the room is not waiting for players".into());
        }
        let seat = match preferred {
            Some(wanted) => {
                let index = usize::try_from(wanted).unwrap_or(usize::MAX);
                match self.seats.get(index) {
                    None => return Err(format!("there is no seat {wanted}")),
                    Some(seat) if seat.occupant != Occupant::Open => {
                        return Err(format!("seat {wanted} is taken"));
                    }
                    Some(_) => index,
                }
            }
            None => self
                .seats
                .iter()
                .position(|seat| seat.occupant == Occupant::Open)
                .ok_or_else(|| "no seat is open".to_owned())?,
        };
        self.seats[seat].occupant = Occupant::Player {
            user_id: user_id.to_owned(),
            name: name.to_owned(),
        };
        let snapshot = self.snapshot(seat as u8);
        self.push(LogEvent::SeatChanged { seat: snapshot }, now);
        self.start_if_full(seed, match_id, now);
        Ok(seat as u8)
    }

    /// Turns the engine's events into log events, updating timers and records.
    fn absorb(
        &mut self,
        events: Vec<Event>,
        now: i64,
        automatic: bool,
        client_move_id: String,
        end: Option<(MatchEndReason, u8)>,
    ) {
        let mut deals = Vec::new();
        let mut client_move_id = Some(client_move_id);
        for event in events {
            if let Event::HandDealt { .. } = event {
                deals.push(event);
                continue;
            }
            if !deals.is_empty() {
                self.push_deal(std::mem::take(&mut deals), now);
            }
            match event {
                Event::MatchStarted { commitment, .. } => {
                    let started = LogEvent::MatchStarted {
                        match_id: self.match_id.clone(),
                        ranked: self.ranked,
                        seats: self.seat_snapshots(),
                        commitment,
                    };
                    self.push(started, now);
                }
                Event::RoundStarted { round, dealer } => {
                    self.dealer = dealer.0;
                    self.push(LogEvent::RoundStarted { round, dealer }, now);
                }
                Event::TableDealt { cards } => {
                    self.push(
                        LogEvent::TableDealt {
                            cards: cards.to_vec(),
                        },
                        now,
                    );
                }
                Event::Turn { seat } => {
                    let deadline = now + self.turn_allowance_ms(seat) as i64;
                    self.turn_deadline_ms = Some(deadline);
                    self.bot_due_ms =
                        matches!(self.seats[seat.index()].occupant, Occupant::Bot { .. })
                            .then(|| now + self.timing.bot_delay_ms as i64);
                    self.push(
                        LogEvent::TurnStarted {
                            seat,
                            deadline_ms: deadline,
                        },
                        now,
                    );
                }
                Event::CardPlayed { .. } => {
                    let basra_points = spectator::basra_points(&event, &self.settings);
                    self.push(
                        LogEvent::CardPlayed {
                            played: event,
                            basra_points,
                            automatic,
                            client_move_id: client_move_id.take().unwrap_or_default(),
                        },
                        now,
                    );
                }
                Event::RoundEnded(score) => {
                    self.carried = spectator::carried_after(self.carried, &score, &self.settings);
                    self.rounds.push(RoundRecord {
                        dealer: self.dealer,
                        score,
                    });
                    self.push(
                        LogEvent::RoundEnded {
                            score,
                            carried: self.carried,
                        },
                        now,
                    );
                }
                Event::HandDealt { .. } => unreachable!("deals are grouped above"),
                Event::MatchEnded(result) => {
                    let (reason, forfeit) = match (end, result.reason) {
                        (Some((reason, seat)), _) => (reason, Some(seat)),
                        (None, EndReason::Resigned { seat }) => {
                            (MatchEndReason::Resigned, Some(seat.0))
                        }
                        (None, EndReason::TargetReached) => (MatchEndReason::TargetReached, None),
                    };
                    let ending = Ending {
                        winner_side: Some(result.winner.0),
                        reason,
                        forfeit_seat: forfeit,
                        close_reason: String::new(),
                    };
                    self.finish(ending, result.totals, result.seed.0, now);
                }
            }
        }
        if !deals.is_empty() {
            self.push_deal(deals, now);
        }
    }

    fn finish(&mut self, ending: Ending, totals: [u32; 2], seed: [u8; 32], now: i64) {
        let Ending {
            winner_side,
            reason,
            forfeit_seat,
            close_reason,
        } = ending;
        self.status = Status::Finished;
        self.end_reason = Some(reason);
        self.forfeit_seat = forfeit_seat;
        self.ended_at_ms = now;
        self.turn_deadline_ms = None;
        self.bot_due_ms = None;
        for seat in &mut self.seats {
            seat.grace_deadline_ms = None;
        }
        self.rematch_deadline_ms = Some(now + self.timing.rematch_ms as i64);
        self.push(
            LogEvent::MatchEnded {
                match_id: self.match_id.clone(),
                winner_side,
                reason: reason.to_proto() as i32,
                forfeit_seat,
                totals,
                seed,
                close_reason,
            },
            now,
        );
    }

    fn push_deal(&mut self, deals: Vec<Event>, now: i64) {
        let game = self.game.as_ref().expect("a deal happens in a match");
        let view = game.view(None);
        let hand_counts = view.hand_sizes.iter().map(|&n| u32::from(n)).collect();
        // The count once the whole deal is done, the starting table of a round included
        // (it is drawn after the hands): what a snapshot taken now would say.
        let deck_remaining = u32::from(view.deck_left);
        self.push(
            LogEvent::HandDealt {
                deals,
                hand_counts,
                deck_remaining,
            },
            now,
        );
    }

    fn running_game(&mut self) -> Result<&mut Game, Reject> {
        match (&mut self.game, self.status) {
            (Some(game), Status::InProgress) => Ok(game),
            _ => Err(Reject::new(
                RejectCode::NotInProgress,
                "no match is running in this room",
            )),
        }
    }

    /// Plays a card for `seat`. On error the room is unchanged.
    pub fn play(
        &mut self,
        seat: u8,
        card: basra_engine::Card,
        take: Option<CardSet>,
        automatic: bool,
        client_move_id: String,
        now: i64,
    ) -> Result<(), Reject> {
        let action = Action::Play {
            seat: Seat(seat),
            card,
            take,
        };
        let game = self.running_game()?;
        let events = game.apply(&action).map_err(rule_reject)?;
        let server_played = automatic || self.is_bot(seat);
        self.record_action(ActionRecord {
            action,
            automatic: server_played,
            at_ms: now,
        });
        self.absorb(events, now, automatic, client_move_id, None);
        Ok(())
    }

    /// Plays `record` again on the room it was played on (a room loaded from its snapshot
    /// and the plain plays after it, `store::plain_play`): the room becomes what the play
    /// made it; the events and action it makes again are dropped (they are stored).
    pub fn replay(&mut self, record: &ActionRecord) -> Result<(), Reject> {
        let Action::Play { seat, card, take } = record.action else {
            return Err(Reject::new(
                RejectCode::Malformed,
                "only a play is replayed".to_owned(),
            ));
        };
        self.play(
            seat.0,
            card,
            take,
            record.automatic,
            String::new(),
            record.at_ms,
        )?;
        self.pending.clear();
        self.pending_actions = PendingActions::default();
        Ok(())
    }

    fn is_bot(&self, seat: u8) -> bool {
        matches!(
            self.seats.get(usize::from(seat)).map(|s| &s.occupant),
            Some(Occupant::Bot { .. })
        )
    }

    /// `seat` resigns (or, with `abandoned`, is out of grace): the other side wins.
    pub fn resign(&mut self, seat: u8, abandoned: bool, now: i64) -> Result<(), Reject> {
        let action = Action::Resign { seat: Seat(seat) };
        let game = self.running_game()?;
        let events = game.apply(&action).map_err(rule_reject)?;
        self.record_action(ActionRecord {
            action,
            automatic: abandoned,
            at_ms: now,
        });
        let end = abandoned.then_some((MatchEndReason::Abandoned, seat));
        self.absorb(events, now, false, String::new(), end);
        Ok(())
    }

    /// A stream for `seat` connected (replacing any other stream of the seat).
    pub fn connect(&mut self, seat: u8, conn_id: &str, replica: &str, now: i64) {
        let state = &mut self.seats[usize::from(seat)];
        state.connected = true;
        state.conn_id = Some(conn_id.to_owned());
        state.replica = Some(replica.to_owned());
        state.connected_at_ms = now;
        state.grace_deadline_ms = None;
        self.push(
            LogEvent::ConnectionChanged {
                seat,
                connected: true,
                grace_deadline_ms: None,
                conn_id: conn_id.to_owned(),
            },
            now,
        );
    }

    /// The stream `conn_id` of `seat` ended. Nothing happens when a newer stream has
    /// replaced it. Returns whether anything changed.
    pub fn disconnect(&mut self, seat: u8, conn_id: &str, now: i64) -> bool {
        let in_progress = self.status == Status::InProgress;
        let grace_ms = self.timing.grace_ms as i64;
        let state = &mut self.seats[usize::from(seat)];
        if state.conn_id.as_deref() != Some(conn_id) || !state.connected {
            return false;
        }
        state.connected = false;
        state.conn_id = None;
        state.replica = None;
        state.grace_deadline_ms = in_progress.then_some(now + grace_ms);
        let grace = state.grace_deadline_ms;
        self.push(
            LogEvent::ConnectionChanged {
                seat,
                connected: false,
                grace_deadline_ms: grace,
                conn_id: conn_id.to_owned(),
            },
            now,
        );
        true
    }

    /// A quick-chat phrase from `seat`.
    pub fn chat(&mut self, seat: u8, phrase: i32, now: i64) {
        self.push(LogEvent::Chat { seat, phrase }, now);
    }

    /// `seat` asks for a rematch; when every player has, a new match starts.
    pub fn ask_rematch(
        &mut self,
        seat: u8,
        seed: Seed,
        match_id: String,
        now: i64,
    ) -> Result<(), Reject> {
        if self.status != Status::Finished {
            return Err(Reject::new(
                RejectCode::NotInProgress,
                "a rematch can only be asked for after a match",
            ));
        }
        if !self.rematch.contains(&seat) {
            self.rematch.push(seat);
        }
        for (index, state) in self.seats.iter().enumerate() {
            if matches!(state.occupant, Occupant::Bot { .. })
                && !self.rematch.contains(&(index as u8))
            {
                self.rematch.push(index as u8);
            }
        }
        self.rematch.sort_unstable();
        let deadline = self.rematch_deadline_ms.unwrap_or(now);
        self.push(
            LogEvent::RematchOffered {
                seat,
                accepted: self.rematch.clone(),
                deadline_ms: deadline,
            },
            now,
        );
        if self.rematch.len() == self.seats.len() {
            // Every player of the new match stayed for it.
            for index in 0..self.seats.len() {
                if matches!(self.seats[index].occupant, Occupant::Player { .. }) {
                    let rematch = SeatOrigin {
                        fill: Some(SeatFill::Rematch),
                        queue_wait_ms: None,
                        guest: self.seat_origin(index).guest,
                    };
                    self.set_seat_origin(index, rematch);
                }
            }
            self.start_match(seed, match_id, now);
        }
        Ok(())
    }

    /// `seat` leaves: frees the seat while waiting, declines the rematch (closing the room)
    /// after a match. Refused during a match.
    pub fn leave(&mut self, seat: u8, now: i64) -> Result<(), Reject> {
        match self.status {
            Status::Waiting => {
                self.set_seat_origin(usize::from(seat), SeatOrigin::default());
                let state = &mut self.seats[usize::from(seat)];
                state.occupant = Occupant::Open;
                state.connected = false;
                state.conn_id = None;
                let snapshot = self.snapshot(seat);
                self.push(LogEvent::SeatChanged { seat: snapshot }, now);
                Ok(())
            }
            Status::Finished => {
                self.status = Status::Closed;
                Ok(())
            }
            Status::Closed => Ok(()),
            Status::InProgress => Err(Reject::new(
                RejectCode::NotInProgress,
                "a match is running: resign instead of leaving",
            )),
        }
    }

    /// Closes the room (operators, saying why: a running match's end tells its players).
    /// Returns (a match was ended, closed now).
    pub fn close(&mut self, reason: &str, now: i64) -> (bool, bool) {
        if self.status == Status::Closed {
            return (false, false);
        }
        let ended = self.status == Status::InProgress;
        if ended {
            let game = self.game.as_ref().expect("a match runs");
            let totals = game.totals();
            let seed = game.seed().0;
            let ending = Ending {
                winner_side: None,
                reason: MatchEndReason::Closed,
                forfeit_seat: None,
                close_reason: reason.to_owned(),
            };
            self.finish(ending, totals, seed, now);
        }
        self.status = Status::Closed;
        (ended, true)
    }

    /// Gives `seat` its turn again, whole, from `now`: the server could not keep the
    /// turn's time (see [`LATE_TIMER_MS`]). A `turn_started` for the same seat with the
    /// new deadline; the game is unchanged, so `game_seq` stays (a play sent for the turn
    /// as it was, `based_on_seq` included, is still good).
    fn renew_turn(&mut self, seat: Seat, now: i64) {
        let deadline = now + self.timing.turn_ms as i64;
        self.turn_deadline_ms = Some(deadline);
        let game_seq = self.game_seq;
        self.push(
            LogEvent::TurnStarted {
                seat,
                deadline_ms: deadline,
            },
            now,
        );
        self.game_seq = game_seq;
    }

    /// How long `seat`'s turn lasts from now: `turn_ms`; but a player's first turn of the
    /// match while they have no stream yet (a room is made, or its last seat filled,
    /// before its players connect) lasts the disconnect grace (`grace_ms`) when that is
    /// longer, so that a slow client's first turn is not played for it. The deadline the
    /// clients are told includes it: no later event changes it.
    fn turn_allowance_ms(&self, seat: Seat) -> u64 {
        let state = &self.seats[seat.index()];
        let first_lap = (self.action_count as usize) < self.seats.len();
        let awaited = matches!(state.occupant, Occupant::Player { .. }) && !state.connected;
        if first_lap && awaited {
            self.timing.turn_ms.max(self.timing.grace_ms)
        } else {
            self.timing.turn_ms
        }
    }

    /// When the server plays for the player whose turn it is: the turn's deadline (as
    /// the clients are told it) plus the slack that lets plays in flight land first.
    fn turn_timer_ms(&self) -> Option<i64> {
        let slack = i64::try_from(self.timing.turn_slack_ms).unwrap_or(i64::MAX);
        self.turn_deadline_ms.map(|at| at.saturating_add(slack))
    }

    /// The next moment something is due in this room (a bot's move, a turn timeout, a
    /// grace period's end, the rematch window's end).
    pub fn next_deadline(&self) -> Option<i64> {
        match self.status {
            Status::InProgress => [self.bot_due_ms, self.turn_timer_ms()]
                .into_iter()
                .chain(self.seats.iter().map(|s| s.grace_deadline_ms))
                .flatten()
                .min(),
            Status::Finished => self.rematch_deadline_ms,
            Status::Waiting | Status::Closed => None,
        }
    }

    /// Does what is due at `now`: abandons a seat out of grace, plays a bot's move or a
    /// timed-out turn (with the greedy bot), closes the room when the rematch window ends.
    /// Returns whether anything changed.
    pub fn on_timer(&mut self, now: i64) -> bool {
        self.on_timer_with(now, None)
    }

    /// The turn of a hard bot that is due at `now`, for the search to think about away
    /// from the room (`crate::replica::bots`); `None` when no hard bot is to play now.
    pub fn hard_bot_turn(&self, now: i64) -> Option<BotTurn> {
        let game = self.game.as_ref()?;
        let seat = game.turn()?;
        let due = self.status == Status::InProgress && self.bot_due_ms.is_some_and(|at| at <= now);
        let hard = matches!(
            self.seats[seat.index()].occupant,
            Occupant::Bot {
                level: BotLevel::Hard
            }
        );
        (due && hard).then(|| BotTurn {
            seq: self.seq,
            seat,
            view: game.view(Some(seat)),
            memory: Memory::of(game.round()),
        })
    }

    /// [`Room::on_timer`], a due hard bot playing `choice` when it was made for the room
    /// as it is now (the same `seq`); any other bot, a hard bot without a choice for
    /// this state, and a timed-out player play at once by their policy (never the search:
    /// it does not run here).
    pub fn on_timer_with(&mut self, now: i64, choice: Option<&BotChoice>) -> bool {
        match self.status {
            Status::InProgress => {
                let out_of_grace = self
                    .seats
                    .iter()
                    .position(|s| s.grace_deadline_ms.is_some_and(|at| at <= now));
                if let Some(seat) = out_of_grace {
                    return self.resign(seat as u8, true, now).is_ok();
                }
                let bot_due = self.bot_due_ms.is_some_and(|at| at <= now);
                let turn_timer = self.turn_timer_ms();
                let timed_out = turn_timer.is_some_and(|at| at <= now);
                if !(bot_due || timed_out) {
                    return false;
                }
                let Some(game) = &self.game else { return false };
                let Some(seat) = game.turn() else {
                    return false;
                };
                let late = turn_timer.is_some_and(|at| now.saturating_sub(at) > LATE_TIMER_MS);
                if !bot_due && late {
                    self.renew_turn(seat, now);
                    return true;
                }
                let policy = match &self.seats[seat.index()].occupant {
                    Occupant::Bot {
                        level: BotLevel::Easy,
                    } => bot::Policy::Easy,
                    _ => bot::Policy::Greedy,
                };
                let chosen = choice
                    .filter(|c| bot_due && c.seq == self.seq && c.seat == seat)
                    .map(|c| c.card)
                    .filter(|&card| game.round().hand(seat).contains(card));
                let (card, take) = match chosen {
                    Some(card) => (card, None),
                    None => {
                        let view = game.view(Some(seat));
                        match bot::choose(policy, &view, &mut rand::rng()) {
                            Some(Action::Play { card, take, .. }) => (card, take),
                            _ => return false,
                        }
                    }
                };
                let automatic = !bot_due;
                self.play(seat.0, card, take, automatic, String::new(), now)
                    .is_ok()
            }
            Status::Finished => {
                if self.rematch_deadline_ms.is_some_and(|at| at <= now) {
                    self.status = Status::Closed;
                    true
                } else {
                    false
                }
            }
            Status::Waiting | Status::Closed => false,
        }
    }
}

/// How a match ended, as its `match_ended` says.
struct Ending {
    /// The winning side, if any.
    winner_side: Option<u8>,
    reason: MatchEndReason,
    /// The seat that resigned or abandoned.
    forfeit_seat: Option<u8>,
    /// Why an operator closed the room (closed only).
    close_reason: String,
}

/// The reject answering a rule error.
fn rule_reject(error: basra_engine::RuleError) -> Reject {
    use basra_engine::RuleError as E;
    let code = match error {
        E::MatchOver => RejectCode::NotInProgress,
        E::NoSuchSeat { .. } => RejectCode::NotSeated,
        E::NotYourTurn { .. } => RejectCode::NotYourTurn,
        E::CardNotInHand { .. } => RejectCode::CardNotInHand,
        E::NotOnTable(_)
        | E::NotInSum { .. }
        | E::NotGroups { .. }
        | E::NotLargest { .. }
        | E::FixedCapture { .. } => RejectCode::IllegalCapture,
    };
    Reject::new(code, error.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The JSON form is what the event log (and rooms stored before the binary form)
    /// holds: it must not change.
    #[test]
    fn occupants_keep_their_json_form() {
        let cases = [
            (Occupant::Open, r#"{"type":"open"}"#),
            (
                Occupant::Bot {
                    level: BotLevel::Medium,
                },
                r#"{"type":"bot","level":2}"#,
            ),
            (
                Occupant::Player {
                    user_id: "u".into(),
                    name: "Nour".into(),
                },
                r#"{"type":"player","user_id":"u","name":"Nour"}"#,
            ),
            (
                Occupant::Player {
                    user_id: "u".into(),
                    name: String::new(),
                },
                r#"{"type":"player","user_id":"u"}"#,
            ),
        ];
        for (occupant, text) in cases {
            assert_eq!(serde_json::to_string(&occupant).unwrap(), text);
            assert_eq!(serde_json::from_str::<Occupant>(text).unwrap(), occupant);
        }
    }

    /// A room of two players ("a", "b") whose match has started from `seed`.
    fn started_room(visibility: Visibility, timing: Timing, seed: u8) -> Room {
        let occupants = ["a", "b"]
            .map(|id| Occupant::Player {
                user_id: id.into(),
                name: String::new(),
            })
            .to_vec();
        let mut room = Room::new(
            "room".into(),
            Settings::default(),
            occupants,
            false,
            true,
            visibility,
            timing,
            1,
        );
        room.start_if_full(Seed([seed; 32]), "match".into(), 2);
        room
    }

    fn stored_again(room: &Room) -> Room {
        serde_json::from_str(&serde_json::to_string(room).unwrap()).unwrap()
    }

    /// A replica reuses the room it committed instead of loading it back (see
    /// `crate::replica::hub`): the room kept in memory must behave exactly like the one read from
    /// the store. Two copies play the same whole matches, one of them stored and read
    /// back after every change: same events, same stored form, at every step.
    #[test]
    fn a_room_kept_in_memory_plays_like_the_stored_one() {
        let timing = Timing::for_tests();
        for (n, seed) in [[7u8; 32], [42u8; 32], [200u8; 32]].into_iter().enumerate() {
            let occupants = vec![
                Occupant::Player {
                    user_id: "a".into(),
                    name: "A".into(),
                },
                Occupant::Player {
                    user_id: "b".into(),
                    name: String::new(),
                },
            ];
            let mut kept = Room::new(
                format!("room-{n}"),
                Settings::default(),
                occupants,
                false,
                true,
                Visibility::Private,
                timing,
                1,
            );
            kept.start_if_full(Seed(seed), "match".into(), 2);
            let _ = kept.take_pending();
            let _ = kept.take_pending_actions();
            let mut stored = stored_again(&kept);
            let mut now = 3;
            while let Some(turn) = kept.game.as_ref().and_then(basra_engine::Game::turn) {
                now += 1;
                let play = kept.game.as_ref().unwrap().legal_plays()[0];
                let a = kept.play(turn.0, play.card, None, false, now.to_string(), now);
                let b = stored.play(turn.0, play.card, None, false, now.to_string(), now);
                assert_eq!(a, b);
                assert_eq!(kept.take_pending(), stored.take_pending());
                assert_eq!(kept.take_pending_actions(), stored.take_pending_actions());
                assert_eq!(
                    serde_json::to_string(&kept).unwrap(),
                    serde_json::to_string(&stored).unwrap()
                );
                stored = stored_again(&stored);
            }
            assert!(kept.game.as_ref().unwrap().is_over());
            assert_eq!(kept.status, Status::Finished);
        }
    }

    /// The room keeps how a match ended as a domain value and stores, logs and sends it
    /// as the API's `MatchEndReason` number (what older replicas wrote and read).
    #[test]
    fn an_end_reason_is_the_apis_number_in_the_log_and_the_stored_room() {
        let mut room = started_room(Visibility::Public, Timing::for_tests(), 9);
        room.resign(1, false, 3).unwrap();
        assert_eq!(room.end_reason, Some(MatchEndReason::Resigned));
        let logged = room
            .take_pending()
            .into_iter()
            .find_map(|stored| match stored.event {
                LogEvent::MatchEnded { reason, .. } => Some(reason),
                _ => None,
            });
        assert_eq!(logged, Some(pb::MatchEndReason::Resigned as i32));
        let stored: serde_json::Value = serde_json::to_value(&room).unwrap();
        assert_eq!(stored["end_reason"], pb::MatchEndReason::Resigned as i32);
        assert_eq!(stored["visibility"], pb::RoomVisibility::Public as i32);
        let read: Room = serde_json::from_value(stored).unwrap();
        assert_eq!(read.end_reason, Some(MatchEndReason::Resigned));
        assert_eq!(read.visibility, Visibility::Public);
    }

    /// Every deal says how many cards the deck holds once it is done, the starting table
    /// of a round included: 40 at the start of every round with two seats (44 was the
    /// count before the table, which no client subtracted), as a snapshot says.
    #[test]
    fn a_deal_counts_the_deck_after_the_starting_table() {
        let mut room = started_room(Visibility::Private, Timing::for_tests(), 9);
        let mut deals = Vec::new();
        let mut now = 3;
        loop {
            let left = room.game.as_ref().unwrap().view(None).deck_left;
            for stored in room.take_pending() {
                if let LogEvent::HandDealt {
                    deck_remaining,
                    hand_counts,
                    ..
                } = stored.event
                {
                    assert_eq!(deck_remaining, u32::from(left), "as a snapshot says");
                    deals.push((deck_remaining, hand_counts));
                }
            }
            let Some(turn) = room.game.as_ref().and_then(basra_engine::Game::turn) else {
                break;
            };
            now += 1;
            let play = room.game.as_ref().unwrap().legal_plays()[0];
            room.play(turn.0, play.card, None, false, now.to_string(), now)
                .unwrap();
        }
        let round_starts: Vec<u32> = deals
            .iter()
            .filter(|(deck, _)| *deck >= 40)
            .map(|(deck, _)| *deck)
            .collect();
        assert!(
            round_starts.len() >= 2,
            "a match of several rounds: {deals:?}"
        );
        assert!(round_starts.iter().all(|&deck| deck == 40), "{deals:?}");
        // Six deals a round: 40, 32, …, 0.
        let counts: Vec<u32> = deals.iter().take(6).map(|(deck, _)| *deck).collect();
        assert_eq!(counts, [40, 32, 24, 16, 8, 0]);
    }

    /// A player's first turn of the match while they have no stream yet lasts the grace
    /// period (longer than a turn here); a connected player's first turn, and every turn
    /// after the first lap, lasts a turn.
    #[test]
    fn a_first_turn_waits_for_a_player_who_has_not_connected() {
        let timing = Timing {
            turn_ms: 5_000,
            grace_ms: 30_000,
            ..Timing::for_tests()
        };
        let turn = |room: &Room| room.game.as_ref().and_then(Game::turn).unwrap();
        // Started at 2 with nobody connected: the first turn waits 30 s.
        let mut room = started_room(Visibility::Private, timing, 3);
        assert_eq!(room.turn_deadline_ms, Some(2 + 30_000));
        let (first, second) = (turn(&room), Seat(1 - turn(&room).0));
        room.connect(first.0, "c1", "r", 3);
        // Played for the first seat at its deadline; the second has not connected: its
        // first turn waits too.
        let now = room.next_deadline().unwrap();
        assert!(room.on_timer(now));
        assert_eq!(turn(&room), second);
        assert_eq!(room.turn_deadline_ms, Some(now + 30_000));
        room.connect(second.0, "c2", "r", now + 1);
        let now = room.next_deadline().unwrap();
        assert!(room.on_timer(now));
        // The first lap is over: a turn's time, connected or not.
        assert_eq!(turn(&room), first);
        assert_eq!(room.turn_deadline_ms, Some(now + 5_000));
        assert!(room.disconnect(first.0, "c1", now + 1));
        let now = room.next_deadline().unwrap();
        assert!(room.on_timer(now));
        assert_eq!(room.turn_deadline_ms, Some(now + 5_000));

        // A room whose first seat connected before the last seat filled: its first turn,
        // if that seat's, is a turn long.
        let mut room = Room::new(
            "room".into(),
            Settings::default(),
            vec![
                Occupant::Player {
                    user_id: "a".into(),
                    name: String::new(),
                },
                Occupant::Open,
            ],
            false,
            true,
            Visibility::Private,
            timing,
            1,
        );
        room.connect(0, "c1", "r", 1);
        room.seat_player("b", "", None, Seed([3; 32]), "match".into(), 2)
            .unwrap();
        let expected = if turn(&room).0 == 0 { 5_000 } else { 30_000 };
        assert_eq!(room.turn_deadline_ms, Some(2 + expected));
    }

    /// A turn's timer that fires on time plays for the player; one that fires later than
    /// [`LATE_TIMER_MS`] (the server could not keep time: a store outage) gives the
    /// turn again, whole, without touching the game, and the renewed turn's timer, on
    /// time, plays for the player.
    #[test]
    fn a_late_turn_timer_gives_the_turn_again() {
        let timing = Timing {
            turn_ms: 5_000,
            turn_slack_ms: 1_000,
            ..Timing::for_tests()
        };
        let mut room = started_room(Visibility::Private, timing, 3);
        let _ = room.take_pending();
        let seat = room.game.as_ref().and_then(Game::turn).unwrap();
        let due = room.next_deadline().unwrap();
        assert_eq!(due, room.turn_deadline_ms.unwrap() + 1_000);

        // Late: the turn starts again, nothing is played.
        let (seq, game_seq) = (room.seq, room.game_seq);
        let hand = room.game.as_ref().unwrap().round().hand(seat);
        let now = due + LATE_TIMER_MS + 1;
        assert!(room.on_timer(now));
        let events: Vec<LogEvent> = room.take_pending().into_iter().map(|e| e.event).collect();
        assert_eq!(
            events,
            [LogEvent::TurnStarted {
                seat,
                deadline_ms: now + 5_000
            }]
        );
        assert_eq!((room.seq, room.game_seq), (seq + 1, game_seq));
        assert_eq!(room.game.as_ref().unwrap().round().hand(seat), hand);
        assert_eq!(room.next_deadline(), Some(now + 6_000));

        // On time (within the lateness allowed): played for the player.
        let now = now + 6_000 + LATE_TIMER_MS;
        assert!(room.on_timer(now));
        let played = room.take_pending().into_iter().find_map(|e| match e.event {
            LogEvent::CardPlayed {
                played: Event::CardPlayed { seat: by, .. },
                automatic,
                ..
            } => Some((by, automatic)),
            _ => None,
        });
        assert_eq!(played, Some((seat, true)));
        assert_ne!(room.game_seq, game_seq);
    }
}
