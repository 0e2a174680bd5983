//! The compact binary form of a match's action log, stored in `matches.action_log`.
//!
//! The log is the bulk of every record (about 200 actions for a two-seat match to 101).
//! As JSONB it cost PostgreSQL a full JSON parse on every recording and a full JSON
//! rendering on every export read, and the export a JSON parse with a date-time per
//! action; in this form it is about 7 bytes an action, written and read with no
//! parsing on PostgreSQL's side. Rows recorded before it keep their JSONB `actions`
//! (readable by [`crate::record::ActionRecord`]'s serde form), and a row holds exactly
//! one of the two.
//!
//! Layout: a version byte ([`VERSION`]), then for each action
//!
//! | bytes | what |
//! |---|---|
//! | 1 | seat |
//! | 1 | flags: `1` resign, `2` automatic, `4` a named capture follows |
//! | 1 | the card played (`Card::index`, 0–51), plays only |
//! | varint + n | the capture: card count, then each card's index (flag `4` only) |
//! | varint | the time: zigzag microseconds since the previous action's (the first: since the Unix epoch) |
//!
//! Varints are LEB128 (7 bits a byte, least significant first).

use basra_engine::Card;
use chrono::{DateTime, Utc};

use crate::record::{ActionKind, ActionRecord};

/// The format version written first.
pub const VERSION: u8 = 1;

const RESIGN: u8 = 1;
const AUTOMATIC: u8 = 2;
const CAPTURE: u8 = 4;

/// Why a stored log could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("action log: {0}")]
pub struct ActionLogError(String);

fn error(at: usize, what: &str) -> ActionLogError {
    ActionLogError(format!("byte {at}: {what}"))
}

/// The binary form of `actions`.
pub fn encode(actions: &[ActionRecord]) -> Vec<u8> {
    let mut out = Vec::with_capacity(1 + actions.len() * 8);
    out.push(VERSION);
    let mut previous = 0i64;
    for action in actions {
        out.push(action.seat);
        let mut flags = if action.automatic { AUTOMATIC } else { 0 };
        match &action.action {
            ActionKind::Play { card, capture } => {
                if capture.is_some() {
                    flags |= CAPTURE;
                }
                out.push(flags);
                out.push(card.index());
                if let Some(cards) = capture {
                    put_varint(&mut out, cards.len() as u64);
                    out.extend(cards.iter().map(|c| c.index()));
                }
            }
            ActionKind::Resign => out.push(flags | RESIGN),
        }
        let micros = action.at.timestamp_micros();
        put_varint(&mut out, zigzag(micros.wrapping_sub(previous)));
        previous = micros;
    }
    out
}

/// The actions of a binary log.
pub fn decode(bytes: &[u8]) -> Result<Vec<ActionRecord>, ActionLogError> {
    let mut reader = Reader { bytes, at: 0 };
    let version = reader.byte()?;
    if version != VERSION {
        return Err(error(0, &format!("unknown version {version}")));
    }
    // Every action takes at least 3 bytes.
    let mut actions = Vec::with_capacity(bytes.len() / 6);
    let mut previous = 0i64;
    while reader.at < bytes.len() {
        let seat = reader.byte()?;
        let flags = reader.byte()?;
        if flags & !(RESIGN | AUTOMATIC | CAPTURE) != 0
            || flags & (RESIGN | CAPTURE) == RESIGN | CAPTURE
        {
            return Err(error(reader.at - 1, &format!("bad flags {flags:#x}")));
        }
        let action = if flags & RESIGN != 0 {
            ActionKind::Resign
        } else {
            let card = reader.card()?;
            let capture = if flags & CAPTURE != 0 {
                let count = reader.varint()?;
                if count > 52 {
                    return Err(error(reader.at, "a capture of more than 52 cards"));
                }
                let mut cards = Vec::with_capacity(count as usize);
                for _ in 0..count {
                    cards.push(reader.card()?);
                }
                Some(cards)
            } else {
                None
            };
            ActionKind::Play { card, capture }
        };
        let micros = previous.wrapping_add(unzigzag(reader.varint()?));
        let at = DateTime::<Utc>::from_timestamp_micros(micros)
            .ok_or_else(|| error(reader.at, "a time out of range"))?;
        previous = micros;
        actions.push(ActionRecord {
            seat,
            action,
            automatic: flags & AUTOMATIC != 0,
            at,
        });
    }
    Ok(actions)
}

/// The plays of a log and, of those, the automatic ones (stored beside the log for the
/// analyst views).
pub fn play_counts(actions: &[ActionRecord]) -> (u32, u32) {
    actions
        .iter()
        .filter(|a| matches!(a.action, ActionKind::Play { .. }))
        .fold((0, 0), |(plays, automatic), a| {
            (plays + 1, automatic + u32::from(a.automatic))
        })
}

fn zigzag(n: i64) -> u64 {
    ((n << 1) ^ (n >> 63)) as u64
}

fn unzigzag(n: u64) -> i64 {
    ((n >> 1) as i64) ^ -((n & 1) as i64)
}

fn put_varint(out: &mut Vec<u8>, mut n: u64) {
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn byte(&mut self) -> Result<u8, ActionLogError> {
        let byte = *self
            .bytes
            .get(self.at)
            .ok_or_else(|| error(self.at, "the log ends inside an action"))?;
        self.at += 1;
        Ok(byte)
    }

    fn card(&mut self) -> Result<Card, ActionLogError> {
        let index = self.byte()?;
        Card::from_index(index).ok_or_else(|| error(self.at - 1, &format!("no card {index}")))
    }

    fn varint(&mut self) -> Result<u64, ActionLogError> {
        let mut n = 0u64;
        for shift in (0..64).step_by(7) {
            let byte = self.byte()?;
            n |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Ok(n);
            }
        }
        Err(error(self.at, "a varint longer than 64 bits"))
    }
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    use super::*;

    fn card(text: &str) -> Card {
        text.parse().unwrap()
    }

    fn sample() -> Vec<ActionRecord> {
        let start = Utc.with_ymd_and_hms(2026, 11, 19, 22, 33, 25).unwrap();
        vec![
            ActionRecord {
                seat: 0,
                action: ActionKind::Play {
                    card: card("AH"),
                    capture: None,
                },
                automatic: false,
                at: start,
            },
            ActionRecord {
                seat: 1,
                action: ActionKind::Play {
                    card: card("10D"),
                    capture: Some(vec![card("4C"), card("6S"), card("KD")]),
                },
                automatic: true,
                at: start + chrono::Duration::microseconds(20_000_123),
            },
            ActionRecord {
                seat: 3,
                action: ActionKind::Play {
                    card: card("7D"),
                    capture: Some(Vec::new()),
                },
                automatic: false,
                // Times need not grow (a clock step back is stored as it was).
                at: start - chrono::Duration::seconds(5),
            },
            ActionRecord {
                seat: 2,
                action: ActionKind::Resign,
                automatic: true,
                at: start + chrono::Duration::days(1),
            },
        ]
    }

    #[test]
    fn a_log_reads_back_as_it_was_written() {
        let log = sample();
        let bytes = encode(&log);
        assert_eq!(bytes[0], VERSION);
        assert_eq!(decode(&bytes).unwrap(), log);
        assert_eq!(decode(&encode(&[])).unwrap(), Vec::new());
    }

    #[test]
    fn a_typical_action_takes_a_few_bytes() {
        let log = sample();
        // The first time is absolute (about 8 bytes); the others a few each.
        assert!(encode(&log).len() < 40, "{}", encode(&log).len());
    }

    #[test]
    fn damaged_logs_are_refused_not_misread() {
        let bytes = encode(&sample());
        // Every proper prefix past the version ends inside an action, or is a shorter log.
        for end in 1..bytes.len() {
            if let Ok(actions) = decode(&bytes[..end]) {
                assert!(actions.len() < sample().len());
                assert_eq!(actions[..], sample()[..actions.len()]);
            }
        }
        assert!(decode(&[]).is_err());
        assert!(decode(&[2]).unwrap_err().to_string().contains("version"));
        let mut bad_card = bytes.clone();
        bad_card[3] = 52;
        assert!(
            decode(&bad_card)
                .unwrap_err()
                .to_string()
                .contains("no card 52")
        );
        let mut bad_flags = bytes;
        bad_flags[2] = 8;
        assert!(
            decode(&bad_flags)
                .unwrap_err()
                .to_string()
                .contains("flags")
        );
        assert!(decode(&[VERSION, 0, RESIGN | CAPTURE, 0]).is_err());
    }

    #[test]
    fn plays_and_automatic_plays_are_counted() {
        assert_eq!(play_counts(&sample()), (3, 1));
    }
}
