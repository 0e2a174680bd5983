//! The per-play rows of a match, derived by replaying its seed and action log through the
//! engine, and checked against what was recorded: a log the engine refuses, or a replay
//! that ends differently from the record, is a [`ReplayFailure`].

use basra_engine::{Action, BasraKind, Card, CardList, CardSet, Event, Game, Seat, Seed};
use basra_records::ActionKind;
use chrono::{DateTime, Utc};

use super::source::StoredMatch;

/// One play of a match.
#[derive(Debug, Clone, PartialEq)]
pub struct PlayRow {
    /// The round, from 1 (as in the record's rounds).
    pub round: u32,
    /// The play's number within its round, from 1.
    pub turn: u32,
    /// The play's position in the whole action log, from 0.
    pub action_index: u32,
    /// The seat that played.
    pub seat: u8,
    /// Its side.
    pub side: u8,
    /// The card played.
    pub card: Card,
    /// The table cards it took, in the order they lay on the table.
    pub taken: CardList,
    /// The Basra it made, if any.
    pub basra: Option<BasraKind>,
    /// Cards on the table before the play.
    pub table_before: u8,
    /// Whether the server played for the seat (turn timer).
    pub automatic: bool,
    /// When.
    pub at: DateTime<Utc>,
}

/// Why a record's plays could not be derived.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ReplayFailure(pub String);

/// Replays `record` and returns its plays, in order.
pub fn plays(record: &StoredMatch) -> Result<Vec<PlayRow>, ReplayFailure> {
    let (mut game, _) = Game::new(record.settings, Seed(record.seed))
        .map_err(|e| ReplayFailure(format!("settings: {e}")))?;
    let mut rows = Vec::with_capacity(record.actions.len());
    let mut events = Vec::with_capacity(16);
    let mut turn = 0;
    let mut round = 0;
    for (index, logged) in record.actions.iter().enumerate() {
        let seat = Seat(logged.seat);
        let action = match &logged.action {
            ActionKind::Play { card, capture } => Action::Play {
                seat,
                card: *card,
                take: capture.as_ref().map(|cards| {
                    let mut set = CardSet::default();
                    for &c in cards {
                        set.insert(c);
                    }
                    set
                }),
            },
            ActionKind::Resign => Action::Resign { seat },
        };
        let round_index = game.round().index();
        if round_index != round {
            round = round_index;
            turn = 0;
        }
        let table_before = game.round().table().len() as u8;
        events.clear();
        game.apply_into(&action, &mut events)
            .map_err(|e| ReplayFailure(format!("action {index} was refused: {e}")))?;
        for event in &events {
            if let Event::CardPlayed {
                seat,
                card,
                taken,
                basra,
            } = *event
            {
                turn += 1;
                rows.push(PlayRow {
                    round: round_index + 1,
                    turn,
                    action_index: index as u32,
                    seat: seat.0,
                    side: seat.side().0,
                    card,
                    taken,
                    basra,
                    table_before,
                    automatic: logged.automatic,
                    at: logged.at,
                });
            }
        }
    }
    check_outcome(record, &game)?;
    Ok(rows)
}

/// A match that ended on the board must end the same way when replayed; an abandoned or
/// closed match may stop anywhere, but never past its recorded rounds.
fn check_outcome(record: &StoredMatch, game: &Game) -> Result<(), ReplayFailure> {
    let completed = game.round().index() as usize + usize::from(game.is_over());
    let replayed_rounds = match game.result() {
        Some(result) if matches!(result.reason, basra_engine::EndReason::TargetReached) => {
            completed
        }
        _ => game.round().index() as usize,
    };
    if replayed_rounds != record.rounds.len() {
        return Err(ReplayFailure(format!(
            "the replay completed {replayed_rounds} rounds, the record has {}",
            record.rounds.len()
        )));
    }
    if game.totals().as_slice() != record.final_totals.as_slice() {
        return Err(ReplayFailure(format!(
            "the replay's totals are {:?}, the record's {:?}",
            game.totals(),
            record.final_totals
        )));
    }
    match record.end_reason.as_str() {
        "target_reached" | "resigned" => match game.result() {
            Some(result) if Some(result.winner.0) == record.winner_side => Ok(()),
            Some(result) => Err(ReplayFailure(format!(
                "the replay's winner is side {}, the record's {:?}",
                result.winner.0, record.winner_side
            ))),
            None => Err(ReplayFailure(format!(
                "the record says {} but the replayed match is not over",
                record.end_reason
            ))),
        },
        _ => Ok(()),
    }
}
