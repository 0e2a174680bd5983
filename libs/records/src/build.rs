//! The `RecordMatch` record of a match played on the engine, built in one place:
//! game-session builds it when a room's match ends, `basra simulate` and the
//! [`crate::corpus`] for every simulated match, so all record exactly the same shape and
//! the analytics export's replay checks them all the same way.
//!
//! What the engine's game holds (settings, seed, totals, winner) comes from the game;
//! what only the caller knows (who sat where, when each action happened, which were
//! automatic, each round's dealer, how the match ended) comes from the caller.

use basra_engine::{Action, Game, RoundScore};

use basra_proto::basra::accounts::v1 as accounts;
use basra_proto::basra::common::v1 as pb;
use basra_proto::convert::{card_to_pb, cards_to_pb, settings_to_pb, timestamp};

/// One action of a match's log as the caller saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoggedAction {
    /// What the engine applied.
    pub action: Action,
    /// The server acted for the seat (turn timer, bot, or an abandoned seat's
    /// resignation).
    pub automatic: bool,
    /// When (Unix milliseconds).
    pub at_ms: i64,
}

/// The facts of a match the engine does not hold.
#[derive(Debug, Clone, PartialEq)]
pub struct MatchFacts {
    /// The match id (RecordMatch's idempotency key).
    pub match_id: String,
    /// The room it was played in.
    pub room_id: String,
    /// Whether it was played for rating (a closed match never is).
    pub ranked: bool,
    /// Every seat, in seat order.
    pub seats: Vec<accounts::RecordedSeat>,
    /// How it ended.
    pub end_reason: pb::MatchEndReason,
    /// When the first deal happened (Unix milliseconds).
    pub started_at_ms: i64,
    /// When it ended (Unix milliseconds).
    pub ended_at_ms: i64,
    /// Whether the room let anyone watch it.
    pub allow_spectators: bool,
    /// The event (tournament) it was played in, if any.
    pub event_id: Option<String>,
}

/// The record of `game`, finished (or stopped: resigned, abandoned, closed), whose action
/// log is `actions` and whose completed rounds are `rounds` (each with its dealer).
///
/// The winner is the game's, except that a closed match has none; the Basra counts are
/// the rounds' sums.
pub fn match_record<'a>(
    facts: MatchFacts,
    game: &Game,
    actions: impl IntoIterator<Item = LoggedAction>,
    rounds: impl IntoIterator<Item = (u8, &'a RoundScore)>,
) -> accounts::MatchRecord {
    let closed = facts.end_reason == pb::MatchEndReason::Closed;
    let actions = actions.into_iter().map(recorded_action).collect();
    let mut basra_counts = [pb::BasraCounts::default(), pb::BasraCounts::default()];
    let rounds = rounds
        .into_iter()
        .map(|(dealer, score)| {
            for (side, counts) in basra_counts.iter_mut().enumerate() {
                counts.basra += u32::from(score.basras[side][0]);
                counts.jack += u32::from(score.basras[side][1]);
                counts.komi += u32::from(score.basras[side][2]);
            }
            accounts::RoundRecord {
                round: score.round + 1,
                dealer: u32::from(dealer),
                sides: side_scores(score),
            }
        })
        .collect();
    let winner_side = match game.result() {
        Some(result) if !closed => Some(u32::from(result.winner.0)),
        _ => None,
    };
    accounts::MatchRecord {
        match_id: facts.match_id,
        room_id: facts.room_id,
        ranked: facts.ranked && !closed,
        settings: Some(settings_to_pb(game.settings())),
        seats: facts.seats,
        seed: game.seed().0.to_vec(),
        actions,
        rounds,
        final_totals: game.totals().to_vec(),
        basra_counts: basra_counts.to_vec(),
        winner_side,
        end_reason: facts.end_reason as i32,
        started_at: Some(timestamp(facts.started_at_ms)),
        ended_at: Some(timestamp(facts.ended_at_ms)),
        allow_spectators: facts.allow_spectators,
        event_id: facts.event_id.unwrap_or_default(),
    }
}

fn recorded_action(logged: LoggedAction) -> accounts::RecordedAction {
    let (seat, action) = match logged.action {
        Action::Play { seat, card, take } => (
            seat,
            accounts::recorded_action::Action::Play(accounts::RecordedPlay {
                card: Some(card_to_pb(card)),
                capture_choice: take.map(|cards| accounts::RecordedCapture {
                    cards: cards_to_pb(cards),
                }),
            }),
        ),
        Action::Resign { seat } => (
            seat,
            accounts::recorded_action::Action::Resign(accounts::RecordedResign {}),
        ),
    };
    accounts::RecordedAction {
        seat: u32::from(seat.0),
        action: Some(action),
        automatic: logged.automatic,
        at: Some(timestamp(logged.at_ms)),
    }
}

/// A round's score as the API's per-side scores.
pub fn side_scores(score: &RoundScore) -> Vec<pb::SideRoundScore> {
    (0..2)
        .map(|side| pb::SideRoundScore {
            side: side as u32,
            pile_size: u32::from(score.piles[side]),
            basras: Some(pb::BasraCounts {
                basra: u32::from(score.basras[side][0]),
                jack: u32::from(score.basras[side][1]),
                komi: u32::from(score.basras[side][2]),
            }),
            basra_points: score.basra_points[side],
            majority_points: score.majority_points[side],
            card_points: score.card_points[side],
            round_points: score.points[side],
            total: score.totals[side],
        })
        .collect()
}
