//! Finished matches as the service stores them: a validated [`MatchRecord`]
//! parsed from the `RecordMatch` request, kept as JSON columns (settings, seats,
//! action log, rounds) next to the columns queries need.

use std::collections::HashSet;

use basra_engine::{Card, Settings};
use basra_proto::basra::accounts::v1 as pb;
use basra_proto::basra::common::v1 as common;
use basra_proto::convert::{ConvertError, card_from_pb, settings_from_pb};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::domain::{parse_opaque_id, truncate_micros};
use crate::error::{AccountsError, Result};

/// Most actions a match log may hold (a 4-seat match to 10,000 points stays far below).
pub const MAX_ACTIONS: usize = 100_000;
/// Most characters in a seat's display name (bot names included).
pub const SEAT_NAME_MAX: usize = 64;

/// One seat of a recorded match.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SeatRecord {
    /// The seat number.
    pub seat: u8,
    /// The scoring side (seat % 2).
    pub side: u8,
    /// The player; `None` for a bot.
    pub user_id: Option<Uuid>,
    /// Whether a bot played the seat.
    pub is_bot: bool,
    /// The name shown during the match.
    pub display_name: String,
}

/// What a seat did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ActionKind {
    /// Played a card, naming a capture or not (the canonical capture).
    Play {
        /// The card.
        card: Card,
        /// The table cards the player named, in table order.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        capture: Option<Vec<Card>>,
    },
    /// Resigned.
    Resign,
}

/// One action of the log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ActionRecord {
    /// The acting seat.
    pub seat: u8,
    /// What it did.
    pub action: ActionKind,
    /// Whether the server acted for the seat.
    pub automatic: bool,
    /// When.
    pub at: DateTime<Utc>,
}

/// Basras of one side.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BasraCounts {
    /// Ordinary Basras.
    pub basra: u32,
    /// Jack Basras.
    pub jack: u32,
    /// Komi Basras.
    pub komi: u32,
}

/// One side's score for one round.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SideScore {
    /// The side.
    pub side: u8,
    /// Cards captured.
    pub pile_size: u32,
    /// Basras made.
    pub basras: BasraCounts,
    /// Points from Basras.
    pub basra_points: u32,
    /// Majority points.
    pub majority_points: u32,
    /// Card points.
    pub card_points: u32,
    /// The round's points.
    pub round_points: u32,
    /// The match total after the round.
    pub total: u32,
}

/// One completed round.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RoundRecord {
    /// The round, from 1.
    pub round: u32,
    /// Its dealer.
    pub dealer: u8,
    /// Each side's score, indexed by side.
    pub sides: Vec<SideScore>,
}

/// How a match ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EndReason {
    /// A side reached the target score.
    TargetReached,
    /// A player resigned.
    Resigned,
    /// A player stayed away past the grace period.
    Abandoned,
    /// An operator closed the room: no winner, unrated.
    Closed,
}

impl EndReason {
    /// The name stored in the database.
    pub fn as_str(self) -> &'static str {
        match self {
            EndReason::TargetReached => "target_reached",
            EndReason::Resigned => "resigned",
            EndReason::Abandoned => "abandoned",
            EndReason::Closed => "closed",
        }
    }

    /// The reason stored as `name`.
    pub fn from_name(name: &str) -> Option<EndReason> {
        Some(match name {
            "target_reached" => EndReason::TargetReached,
            "resigned" => EndReason::Resigned,
            "abandoned" => EndReason::Abandoned,
            "closed" => EndReason::Closed,
            _ => return None,
        })
    }

    /// The proto enum value.
    pub fn to_proto(self) -> common::MatchEndReason {
        match self {
            EndReason::TargetReached => common::MatchEndReason::TargetReached,
            EndReason::Resigned => common::MatchEndReason::Resigned,
            EndReason::Abandoned => common::MatchEndReason::Abandoned,
            EndReason::Closed => common::MatchEndReason::Closed,
        }
    }
}

/// A finished match, checked for consistency.
#[derive(Debug, Clone, PartialEq)]
pub struct MatchRecord {
    /// The idempotency key.
    pub match_id: String,
    /// The room.
    pub room_id: String,
    /// Whether the match counts for ratings.
    pub ranked: bool,
    /// The rules.
    pub settings: Settings,
    /// Every seat, indexed by seat.
    pub seats: Vec<SeatRecord>,
    /// The shuffle seed.
    pub seed: [u8; 32],
    /// The action log.
    pub actions: Vec<ActionRecord>,
    /// The completed rounds.
    pub rounds: Vec<RoundRecord>,
    /// Final totals by side.
    pub final_totals: Vec<u32>,
    /// Basras over the match by side.
    pub basra_counts: Vec<BasraCounts>,
    /// The winning side, if any.
    pub winner_side: Option<u8>,
    /// How it ended.
    pub end_reason: EndReason,
    /// When it started.
    pub started_at: DateTime<Utc>,
    /// When it ended.
    pub ended_at: DateTime<Utc>,
}

/// The number of scoring sides: always two (2 players, or 2 partnerships).
pub const SIDES: usize = 2;

/// The side a seat scores for: seat % 2 (with 2 seats the side is the seat).
pub fn side_of(seat: u8) -> u8 {
    seat % 2
}

impl MatchRecord {
    /// Whether the match changes ratings: ranked, and won by a side.
    pub fn is_rated(&self) -> bool {
        self.ranked && self.winner_side.is_some() && self.end_reason != EndReason::Closed
    }

    /// The human seats.
    pub fn players(&self) -> impl Iterator<Item = (&SeatRecord, Uuid)> {
        self.seats
            .iter()
            .filter_map(|s| s.user_id.map(|id| (s, id)))
    }

    /// Parses and checks a `RecordMatch` record.
    pub fn from_proto(record: pb::MatchRecord) -> Result<MatchRecord> {
        let match_id = parse_opaque_id("record.match_id", &record.match_id)?;
        let room_id = parse_opaque_id("record.room_id", &record.room_id)?;
        let settings =
            settings_from_pb(Some(record.settings.as_ref().ok_or_else(|| {
                AccountsError::invalid("record.settings", "is missing")
            })?))
            .map_err(|e| AccountsError::invalid("record", e.to_string()))?;
        let seat_count = usize::from(settings.seat_count());

        if record.seats.len() != seat_count {
            return Err(AccountsError::invalid(
                "record.seats",
                format!(
                    "has {} seats but settings.seats is {seat_count}",
                    record.seats.len()
                ),
            ));
        }
        let mut seats = Vec::with_capacity(seat_count);
        let mut users = HashSet::new();
        for (index, seat) in record.seats.iter().enumerate() {
            if seat.seat as usize != index {
                return Err(AccountsError::invalid(
                    "record.seats",
                    format!("seat {index} is numbered {}", seat.seat),
                ));
            }
            let user_id = match (seat.is_bot, seat.user_id.is_empty()) {
                (true, true) => None,
                (false, false) => {
                    let id = Uuid::parse_str(&seat.user_id).map_err(|_| {
                        AccountsError::invalid(
                            "record.seats",
                            format!("seat {index}: user_id {:?} is not a UUID", seat.user_id),
                        )
                    })?;
                    if !users.insert(id) {
                        return Err(AccountsError::invalid(
                            "record.seats",
                            format!("seat {index}: user {id} sits twice"),
                        ));
                    }
                    Some(id)
                }
                (true, false) => {
                    return Err(AccountsError::invalid(
                        "record.seats",
                        format!("seat {index}: a bot has no user_id"),
                    ));
                }
                (false, true) => {
                    return Err(AccountsError::invalid(
                        "record.seats",
                        format!("seat {index}: a player needs a user_id"),
                    ));
                }
            };
            if seat.display_name.chars().count() > SEAT_NAME_MAX {
                return Err(AccountsError::invalid(
                    "record.seats",
                    format!("seat {index}: display_name longer than {SEAT_NAME_MAX} characters"),
                ));
            }
            let seat_no = index as u8;
            seats.push(SeatRecord {
                seat: seat_no,
                side: side_of(seat_no),
                user_id,
                is_bot: seat.is_bot,
                display_name: seat.display_name.clone(),
            });
        }

        let seed: [u8; 32] = record.seed.as_slice().try_into().map_err(|_| {
            AccountsError::invalid(
                "record.seed",
                format!("must be 32 bytes, not {}", record.seed.len()),
            )
        })?;

        if record.actions.len() > MAX_ACTIONS {
            return Err(AccountsError::invalid(
                "record.actions",
                format!("more than {MAX_ACTIONS} actions"),
            ));
        }
        let actions = record
            .actions
            .iter()
            .enumerate()
            .map(|(i, a)| action_from_proto(i, a, seat_count))
            .collect::<Result<Vec<_>>>()?;

        let rounds = record
            .rounds
            .iter()
            .enumerate()
            .map(|(i, r)| round_from_proto(i, r, seat_count))
            .collect::<Result<Vec<_>>>()?;

        if record.final_totals.len() != SIDES {
            return Err(AccountsError::invalid(
                "record.final_totals",
                format!("needs {SIDES} totals, not {}", record.final_totals.len()),
            ));
        }
        if record.basra_counts.len() != SIDES {
            return Err(AccountsError::invalid(
                "record.basra_counts",
                format!("needs {SIDES} entries, not {}", record.basra_counts.len()),
            ));
        }
        let basra_counts = record.basra_counts.iter().map(basras_from_proto).collect();

        let end_reason = match common::MatchEndReason::try_from(record.end_reason) {
            Ok(common::MatchEndReason::TargetReached) => EndReason::TargetReached,
            Ok(common::MatchEndReason::Resigned) => EndReason::Resigned,
            Ok(common::MatchEndReason::Abandoned) => EndReason::Abandoned,
            Ok(common::MatchEndReason::Closed) => EndReason::Closed,
            Ok(common::MatchEndReason::Unspecified) | Err(_) => {
                return Err(AccountsError::invalid(
                    "record.end_reason",
                    "must be set to a known reason",
                ));
            }
        };
        let winner_side = match (record.winner_side, end_reason) {
            (Some(_), EndReason::Closed) => {
                return Err(AccountsError::invalid(
                    "record.winner_side",
                    "a closed match has no winner",
                ));
            }
            (None, EndReason::Closed) => None,
            (None, _) => {
                return Err(AccountsError::invalid(
                    "record.winner_side",
                    "is required unless the match was closed",
                ));
            }
            (Some(side), _) if (side as usize) < SIDES => Some(side as u8),
            (Some(side), _) => {
                return Err(AccountsError::invalid(
                    "record.winner_side",
                    format!("must be below {SIDES}, not {side}"),
                ));
            }
        };

        let started_at = timestamp("record.started_at", record.started_at.as_ref())?;
        let ended_at = timestamp("record.ended_at", record.ended_at.as_ref())?;
        if ended_at < started_at {
            return Err(AccountsError::invalid(
                "record.ended_at",
                "is before started_at",
            ));
        }

        Ok(MatchRecord {
            match_id,
            room_id,
            ranked: record.ranked,
            settings,
            seats,
            seed,
            actions,
            rounds,
            final_totals: record.final_totals,
            basra_counts,
            winner_side,
            end_reason,
            started_at,
            ended_at,
        })
    }
}

fn action_from_proto(
    index: usize,
    action: &pb::RecordedAction,
    seats: usize,
) -> Result<ActionRecord> {
    let field = "record.actions";
    if action.seat as usize >= seats {
        return Err(AccountsError::invalid(
            field,
            format!("action {index}: seat {} does not exist", action.seat),
        ));
    }
    let kind = match &action.action {
        Some(pb::recorded_action::Action::Play(play)) => {
            let card = play
                .card
                .as_ref()
                .ok_or_else(|| ConvertError("a card is missing".into()))
                .and_then(card_from_pb)
                .map_err(|e| AccountsError::invalid(field, format!("action {index}: {e}")))?;
            let capture = match &play.capture_choice {
                None => None,
                Some(choice) => Some(
                    choice
                        .cards
                        .iter()
                        .map(card_from_pb)
                        .collect::<std::result::Result<Vec<_>, _>>()
                        .map_err(|e| {
                            AccountsError::invalid(field, format!("action {index}: capture: {e}"))
                        })?,
                ),
            };
            ActionKind::Play { card, capture }
        }
        Some(pb::recorded_action::Action::Resign(_)) => ActionKind::Resign,
        None => {
            return Err(AccountsError::invalid(
                field,
                format!("action {index}: neither a play nor a resignation"),
            ));
        }
    };
    let at = timestamp(field, action.at.as_ref())?;
    Ok(ActionRecord {
        seat: action.seat as u8,
        action: kind,
        automatic: action.automatic,
        at,
    })
}

fn round_from_proto(index: usize, round: &pb::RoundRecord, seats: usize) -> Result<RoundRecord> {
    let field = "record.rounds";
    if round.round as usize != index + 1 {
        return Err(AccountsError::invalid(
            field,
            format!("round {} is numbered {}", index + 1, round.round),
        ));
    }
    if round.dealer as usize >= seats {
        return Err(AccountsError::invalid(
            field,
            format!(
                "round {}: dealer {} does not exist",
                round.round, round.dealer
            ),
        ));
    }
    if round.sides.len() != SIDES {
        return Err(AccountsError::invalid(
            field,
            format!("round {}: needs {SIDES} side scores", round.round),
        ));
    }
    let sides = round
        .sides
        .iter()
        .enumerate()
        .map(|(side, s)| {
            if s.side as usize != side {
                return Err(AccountsError::invalid(
                    field,
                    format!("round {}: side {side} is numbered {}", round.round, s.side),
                ));
            }
            Ok(SideScore {
                side: side as u8,
                pile_size: s.pile_size,
                basras: s.basras.as_ref().map(basras_from_proto).unwrap_or_default(),
                basra_points: s.basra_points,
                majority_points: s.majority_points,
                card_points: s.card_points,
                round_points: s.round_points,
                total: s.total,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(RoundRecord {
        round: round.round,
        dealer: round.dealer as u8,
        sides,
    })
}

fn basras_from_proto(b: &common::BasraCounts) -> BasraCounts {
    BasraCounts {
        basra: b.basra,
        jack: b.jack,
        komi: b.komi,
    }
}

/// The proto form of Basra counts.
pub fn basras_to_proto(b: BasraCounts) -> common::BasraCounts {
    common::BasraCounts {
        basra: b.basra,
        jack: b.jack,
        komi: b.komi,
    }
}

fn timestamp(field: &'static str, ts: Option<&prost_types::Timestamp>) -> Result<DateTime<Utc>> {
    let ts = ts.ok_or_else(|| AccountsError::invalid(field, "is missing"))?;
    let nanos =
        u32::try_from(ts.nanos).map_err(|_| AccountsError::invalid(field, "has negative nanos"))?;
    DateTime::from_timestamp(ts.seconds, nanos)
        .map(truncate_micros)
        .ok_or_else(|| AccountsError::invalid(field, "is out of range"))
}

/// The proto form of a time.
pub fn timestamp_to_proto(t: DateTime<Utc>) -> prost_types::Timestamp {
    prost_types::Timestamp {
        seconds: t.timestamp(),
        nanos: t.timestamp_subsec_nanos() as i32,
    }
}
