//! The wire form of a match record: [`MatchRecord::from_proto`] parses and checks the
//! `RecordMatch` request's record (every rule a stored record keeps: seats numbered in
//! order, one seat a user, 32-byte seed, known end reason, a winner unless closed, times in
//! order), and the few conversions back to the API's messages.
//!
//! A refusal is an [`InvalidRecord`]: the field as the proto names it and what is wrong,
//! for the client developer (accounts answers it as `INVALID_ARGUMENT`).

use std::collections::HashSet;

use basra_proto::basra::accounts::v1 as pb;
use basra_proto::basra::common::v1 as common;
use basra_proto::convert::{ConvertError, card_from_pb, settings_from_pb};
use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::record::{
    ActionKind, ActionRecord, BasraCounts, EndReason, MAX_ACTIONS, MatchRecord, RoundRecord,
    SEAT_NAME_MAX, SIDES, SeatFill, SeatRecord, SideScore, side_of,
};

/// Why a record is refused: the field as the proto names it, and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {reason}")]
pub struct InvalidRecord {
    /// The offending field (`record.seats`, `record.end_reason`, …).
    pub field: &'static str,
    /// What is wrong, for the client developer.
    pub reason: String,
}

impl InvalidRecord {
    /// A refusal of `field`.
    pub fn new(field: &'static str, reason: impl Into<String>) -> InvalidRecord {
        InvalidRecord {
            field,
            reason: reason.into(),
        }
    }
}

/// A seat's fill and queue wait, checked: a known fill, `bot` only for a bot seat (and
/// a bot seat nothing else), a queue wait only for a queue seat.
fn seat_fill_from_proto(
    index: usize,
    seat: &pb::RecordedSeat,
) -> Result<(Option<SeatFill>, Option<u32>), InvalidRecord> {
    let fill = common::SeatFill::try_from(seat.fill)
        .map_err(|_| {
            InvalidRecord::new(
                "record.seats",
                format!("seat {index}: fill {} is not a known value", seat.fill),
            )
        })
        .map(SeatFill::from_proto)?;
    match fill {
        Some(SeatFill::Bot) if !seat.is_bot => {
            return Err(InvalidRecord::new(
                "record.seats",
                format!("seat {index}: fill is SEAT_FILL_BOT but a player sat there"),
            ));
        }
        Some(other) if seat.is_bot && other != SeatFill::Bot => {
            return Err(InvalidRecord::new(
                "record.seats",
                format!("seat {index}: a bot seat's fill is SEAT_FILL_BOT or unspecified"),
            ));
        }
        _ => {}
    }
    if seat.queue_wait_ms.is_some() && fill != Some(SeatFill::Queue) {
        return Err(InvalidRecord::new(
            "record.seats",
            format!("seat {index}: queue_wait_ms is only for a SEAT_FILL_QUEUE seat"),
        ));
    }
    Ok((fill, seat.queue_wait_ms))
}

/// Most characters of a match or room id.
pub const ID_MAX: usize = 64;

/// An opaque id (a match id, a room id): 1 to [`ID_MAX`] printable ASCII characters,
/// no spaces.
pub fn opaque_id(field: &'static str, raw: &str) -> Result<String, InvalidRecord> {
    if raw.is_empty() {
        return Err(InvalidRecord::new(field, "must not be empty"));
    }
    if raw.len() > ID_MAX {
        return Err(InvalidRecord::new(
            field,
            format!("must be at most {ID_MAX} characters long"),
        ));
    }
    if !raw.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(InvalidRecord::new(
            field,
            "must be printable ASCII without spaces",
        ));
    }
    Ok(raw.to_owned())
}

/// `t` without its sub-microsecond part: what PostgreSQL stores, so both of accounts'
/// stores compare and order times the same way.
pub fn truncate_micros(t: DateTime<Utc>) -> DateTime<Utc> {
    DateTime::from_timestamp_micros(t.timestamp_micros()).unwrap_or(t)
}

impl MatchRecord {
    /// Parses and checks a `RecordMatch` record.
    pub fn from_proto(record: pb::MatchRecord) -> Result<MatchRecord, InvalidRecord> {
        let match_id = opaque_id("record.match_id", &record.match_id)?;
        let room_id = opaque_id("record.room_id", &record.room_id)?;
        let settings = settings_from_pb(Some(
            record
                .settings
                .as_ref()
                .ok_or_else(|| InvalidRecord::new("record.settings", "is missing"))?,
        ))
        .map_err(|e| InvalidRecord::new("record", e.to_string()))?;
        let seat_count = usize::from(settings.seat_count());

        if record.seats.len() != seat_count {
            return Err(InvalidRecord::new(
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
                return Err(InvalidRecord::new(
                    "record.seats",
                    format!("seat {index} is numbered {}", seat.seat),
                ));
            }
            let user_id = match (seat.is_bot, seat.user_id.is_empty()) {
                (true, true) => None,
                (false, false) => {
                    let id = Uuid::parse_str(&seat.user_id).map_err(|_| {
                        InvalidRecord::new(
                            "record.seats",
                            format!("seat {index}: user_id {:?} is not a UUID", seat.user_id),
                        )
                    })?;
                    if !users.insert(id) {
                        return Err(InvalidRecord::new(
                            "record.seats",
                            format!("seat {index}: user {id} sits twice"),
                        ));
                    }
                    Some(id)
                }
                (true, false) => {
                    return Err(InvalidRecord::new(
                        "record.seats",
                        format!("seat {index}: a bot has no user_id"),
                    ));
                }
                (false, true) => {
                    return Err(InvalidRecord::new(
                        "record.seats",
                        format!("seat {index}: a player needs a user_id"),
                    ));
                }
            };
            if seat.display_name.chars().count() > SEAT_NAME_MAX {
                return Err(InvalidRecord::new(
                    "record.seats",
                    format!("seat {index}: display_name longer than {SEAT_NAME_MAX} characters"),
                ));
            }
            let (fill, queue_wait_ms) = seat_fill_from_proto(index, seat)?;
            let seat_no = index as u8;
            seats.push(SeatRecord {
                seat: seat_no,
                side: side_of(seat_no),
                user_id,
                is_bot: seat.is_bot,
                display_name: seat.display_name.clone(),
                fill,
                queue_wait_ms,
            });
        }

        let seed: [u8; 32] = record.seed.as_slice().try_into().map_err(|_| {
            InvalidRecord::new(
                "record.seed",
                format!("must be 32 bytes, not {}", record.seed.len()),
            )
        })?;

        if record.actions.len() > MAX_ACTIONS {
            return Err(InvalidRecord::new(
                "record.actions",
                format!("more than {MAX_ACTIONS} actions"),
            ));
        }
        let actions = record
            .actions
            .iter()
            .enumerate()
            .map(|(i, a)| action_from_proto(i, a, seat_count))
            .collect::<Result<Vec<_>, _>>()?;

        let rounds = record
            .rounds
            .iter()
            .enumerate()
            .map(|(i, r)| round_from_proto(i, r, seat_count))
            .collect::<Result<Vec<_>, _>>()?;

        if record.final_totals.len() != SIDES {
            return Err(InvalidRecord::new(
                "record.final_totals",
                format!("needs {SIDES} totals, not {}", record.final_totals.len()),
            ));
        }
        if record.basra_counts.len() != SIDES {
            return Err(InvalidRecord::new(
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
                return Err(InvalidRecord::new(
                    "record.end_reason",
                    "must be set to a known reason",
                ));
            }
        };
        let winner_side = match (record.winner_side, end_reason) {
            (Some(_), EndReason::Closed) => {
                return Err(InvalidRecord::new(
                    "record.winner_side",
                    "a closed match has no winner",
                ));
            }
            (None, EndReason::Closed) => None,
            (None, _) => {
                return Err(InvalidRecord::new(
                    "record.winner_side",
                    "is required unless the match was closed",
                ));
            }
            (Some(side), _) if (side as usize) < SIDES => Some(side as u8),
            (Some(side), _) => {
                return Err(InvalidRecord::new(
                    "record.winner_side",
                    format!("must be below {SIDES}, not {side}"),
                ));
            }
        };

        let started_at = timestamp("record.started_at", record.started_at.as_ref())?;
        let ended_at = timestamp("record.ended_at", record.ended_at.as_ref())?;
        if ended_at < started_at {
            return Err(InvalidRecord::new(
                "record.ended_at",
                "is before started_at",
            ));
        }

        let event_id = match record.event_id.as_str() {
            "" => None,
            id => Some(opaque_id("record.event_id", id)?),
        };

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
            allow_spectators: record.allow_spectators,
            event_id,
        })
    }
}

fn action_from_proto(
    index: usize,
    action: &pb::RecordedAction,
    seats: usize,
) -> Result<ActionRecord, InvalidRecord> {
    let field = "record.actions";
    if action.seat as usize >= seats {
        return Err(InvalidRecord::new(
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
                .map_err(|e| InvalidRecord::new(field, format!("action {index}: {e}")))?;
            let capture = match &play.capture_choice {
                None => None,
                Some(choice) => Some(
                    choice
                        .cards
                        .iter()
                        .map(card_from_pb)
                        .collect::<std::result::Result<Vec<_>, _>>()
                        .map_err(|e| {
                            InvalidRecord::new(field, format!("action {index}: capture: {e}"))
                        })?,
                ),
            };
            ActionKind::Play { card, capture }
        }
        Some(pb::recorded_action::Action::Resign(_)) => ActionKind::Resign,
        None => {
            return Err(InvalidRecord::new(
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

fn round_from_proto(
    index: usize,
    round: &pb::RoundRecord,
    seats: usize,
) -> Result<RoundRecord, InvalidRecord> {
    let field = "record.rounds";
    if round.round as usize != index + 1 {
        return Err(InvalidRecord::new(
            field,
            format!("round {} is numbered {}", index + 1, round.round),
        ));
    }
    if round.dealer as usize >= seats {
        return Err(InvalidRecord::new(
            field,
            format!(
                "round {}: dealer {} does not exist",
                round.round, round.dealer
            ),
        ));
    }
    if round.sides.len() != SIDES {
        return Err(InvalidRecord::new(
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
                return Err(InvalidRecord::new(
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
        .collect::<Result<Vec<_>, _>>()?;
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

fn timestamp(
    field: &'static str,
    ts: Option<&prost_types::Timestamp>,
) -> Result<DateTime<Utc>, InvalidRecord> {
    let ts = ts.ok_or_else(|| InvalidRecord::new(field, "is missing"))?;
    let nanos =
        u32::try_from(ts.nanos).map_err(|_| InvalidRecord::new(field, "has negative nanos"))?;
    DateTime::from_timestamp(ts.seconds, nanos)
        .map(truncate_micros)
        .ok_or_else(|| InvalidRecord::new(field, "is out of range"))
}

/// The proto form of a time.
pub fn timestamp_to_proto(t: DateTime<Utc>) -> prost_types::Timestamp {
    prost_types::Timestamp {
        seconds: t.timestamp(),
        nanos: t.timestamp_subsec_nanos() as i32,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::corpus::{Corpus, CorpusOptions, Player, policy_of};

    /// A record of the corpus with every seat a player.
    fn record() -> pb::MatchRecord {
        let players = (0..4)
            .map(|i| Player {
                user_id: Uuid::now_v7(),
                policy: policy_of(i),
            })
            .collect();
        let options = CorpusOptions {
            seed: 3,
            days: 1,
            until: Utc::now(),
        };
        let mut corpus = Corpus::new(players, options);
        loop {
            let record = corpus.next_record();
            if record.seats.iter().all(|s| !s.is_bot) {
                return record;
            }
        }
    }

    #[test]
    fn each_seat_keeps_its_fill_and_queue_wait() {
        let mut proto = record();
        proto.seats[0].fill = common::SeatFill::Queue as i32;
        proto.seats[0].queue_wait_ms = Some(7_500);
        proto.seats[1].fill = common::SeatFill::Unspecified as i32;
        proto.seats[1].queue_wait_ms = None;
        let checked = MatchRecord::from_proto(proto).unwrap();
        assert_eq!(checked.seats[0].fill, Some(SeatFill::Queue));
        assert_eq!(checked.seats[0].queue_wait_ms, Some(7_500));
        assert_eq!(checked.seats[1].fill, None, "not known");
        // Stored as names, and a seat that does not say is stored as before.
        let json = serde_json::to_value(&checked.seats).unwrap();
        assert_eq!(json[0]["fill"], "queue");
        assert_eq!(json[0]["queue_wait_ms"], 7_500);
        assert!(json[1].get("fill").is_none() && json[1].get("queue_wait_ms").is_none());
        for fill in SeatFill::ALL {
            assert_eq!(SeatFill::from_proto(fill.to_proto()), Some(fill));
            let name = serde_json::to_value(fill).unwrap();
            assert_eq!(name, fill.as_str());
        }
    }

    #[test]
    fn a_record_keeps_who_may_replay_it_and_one_that_does_not_say_is_private() {
        // As the previous release sends it: neither field (proto3 defaults).
        let old = record();
        assert!(!old.allow_spectators && old.event_id.is_empty());
        let checked = MatchRecord::from_proto(old.clone()).unwrap();
        assert_eq!(
            (checked.allow_spectators, checked.event_id.as_deref()),
            (false, None)
        );
        assert!(
            !checked.is_public(),
            "not allowed when the record does not say"
        );

        let mut event = old.clone();
        event.event_id = "0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b".into();
        let checked = MatchRecord::from_proto(event).unwrap();
        assert_eq!(
            checked.event_id.as_deref(),
            Some("0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b")
        );
        assert!(checked.is_public() && !checked.allow_spectators);

        let mut watched = old.clone();
        watched.allow_spectators = true;
        assert!(MatchRecord::from_proto(watched).unwrap().is_public());

        for bad in ["x".repeat(65), "an event".into(), "é".into()] {
            let mut refused = old.clone();
            refused.event_id = bad.clone();
            let err = MatchRecord::from_proto(refused).unwrap_err();
            assert_eq!(err.field, "record.event_id", "{bad:?}");
        }
    }

    #[test]
    fn fills_that_contradict_the_seat_are_refused() {
        let refused = |edit: &dyn Fn(&mut pb::RecordedSeat)| {
            let mut proto = record();
            edit(&mut proto.seats[1]);
            let err = MatchRecord::from_proto(proto).unwrap_err();
            assert_eq!(err.field, "record.seats");
            err.reason
        };
        let reason = refused(&|s| s.fill = 99);
        assert!(reason.contains("not a known value"), "{reason}");
        let reason = refused(&|s| s.fill = common::SeatFill::Bot as i32);
        assert!(reason.contains("a player sat there"), "{reason}");
        let reason = refused(&|s| {
            s.fill = common::SeatFill::Code as i32;
            s.queue_wait_ms = Some(1);
        });
        assert!(
            reason.contains("only for a SEAT_FILL_QUEUE seat"),
            "{reason}"
        );
        let reason = refused(&|s| {
            s.is_bot = true;
            s.user_id.clear();
            s.fill = common::SeatFill::Host as i32;
            s.queue_wait_ms = None;
        });
        assert!(reason.contains("a bot seat's fill"), "{reason}");
    }
}
