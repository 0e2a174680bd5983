//! The stored form of a plain play: a card played that deals nothing and ends nothing
//! (the hot path, seven plays of every eight). Such a play is stored as its events alone,
//! in a compact binary form, not as the whole room: the room's snapshot stays as the last
//! other commit wrote it, and the plain plays on the log after it (from seq `st`, see
//! `redis_store.rs`) are the room's tail, replayed on load. The next other commit writes a
//! snapshot and moves the tail's plays to the match's action log.
//!
//! | stored | first byte | form |
//! |---|---|---|
//! | log event, action | `{` | JSON (`StoredEvent`, `ActionRecord`), what every other commit writes |
//! | log event, action | [`CARD_PLAYED`] | postcard of `card_played`'s fields with the play's own (see `CardPlayedForm`), then the client move id's UTF-8 bytes to the end (the commit script appends it, so the id is sent once) |
//! | log event | [`TURN_STARTED`] | postcard of `turn_started`'s fields |
//!
//! Postcard is not self-describing: a change of these fields is a new first byte, with a
//! decoder of the previous one kept (see `codec.rs` for the room's own formats).

use basra_engine::{Action, BasraKind, Card, CardList, CardSet, Event, Seat};
use serde::{Deserialize, Serialize};

use crate::error::{GameError, Result};
use crate::events::{LogEvent, StoredEvent};
use crate::room::{ActionRecord, PendingActions};

/// The first byte of a compact `card_played`.
pub const CARD_PLAYED: u8 = 1;
/// The first byte of a compact `turn_started`.
pub const TURN_STARTED: u8 = 2;

/// The first byte of the JSON forms.
const JSON_FIRST: u8 = b'{';

/// A plain play's `card_played` and its action: the event's fields, and what the action
/// record holds beyond them (whether the capture was named, who played).
#[derive(Serialize, Deserialize)]
struct CardPlayedForm {
    at_ms: i64,
    seat: Seat,
    card: Card,
    taken: CardList,
    basra: Option<BasraKind>,
    basra_points: u32,
    /// The event's: played because the turn timed out.
    automatic: bool,
    /// The action's: the server played it (timer or bot).
    server_played: bool,
    /// The action named its capture (`take`: the cards taken).
    named: bool,
}

#[derive(Serialize, Deserialize)]
struct TurnStartedForm {
    at_ms: i64,
    seat: Seat,
    deadline_ms: i64,
}

/// Whether a change is a plain play: one play action, on the running match's log, whose
/// events are its `card_played` and the next `turn_started` (nothing dealt, scored or
/// ended, no seat changed).
pub fn is_plain_play(events: &[StoredEvent], actions: &PendingActions) -> bool {
    matches!(
        actions.actions.as_slice(),
        [ActionRecord {
            action: Action::Play { .. },
            ..
        }]
    ) && !actions.reset
        && matches!(
            events,
            [
                StoredEvent {
                    event: LogEvent::CardPlayed { .. },
                    ..
                },
                StoredEvent {
                    event: LogEvent::TurnStarted { .. },
                    ..
                },
            ]
        )
}

/// A plain play's events in their compact form, `card_played` without its client move
/// id (the reader takes the bytes after the fields as the id). `None`: not a plain play
/// (see [`is_plain_play`]) or its capture named is not what it took.
pub fn encode(events: &[StoredEvent], action: &ActionRecord) -> Option<[Vec<u8>; 2]> {
    let [played, turn] = events else { return None };
    let (
        LogEvent::CardPlayed {
            played:
                Event::CardPlayed {
                    seat,
                    card,
                    taken,
                    basra,
                },
            basra_points,
            automatic,
            ..
        },
        LogEvent::TurnStarted {
            seat: next,
            deadline_ms,
        },
        Action::Play { take, .. },
    ) = (&played.event, &turn.event, &action.action)
    else {
        return None;
    };
    if take.is_some_and(|take| take != taken.iter().collect::<CardSet>()) {
        return None;
    }
    let played = CardPlayedForm {
        at_ms: played.at_ms,
        seat: *seat,
        card: *card,
        taken: *taken,
        basra: *basra,
        basra_points: *basra_points,
        automatic: *automatic,
        server_played: action.automatic,
        named: take.is_some(),
    };
    let turn = TurnStartedForm {
        at_ms: turn.at_ms,
        seat: *next,
        deadline_ms: *deadline_ms,
    };
    Some([
        postcard::to_extend(&played, vec![CARD_PLAYED]).ok()?,
        postcard::to_extend(&turn, vec![TURN_STARTED]).ok()?,
    ])
}

/// A compact `card_played`'s fields and its client move id.
fn card_played(bytes: &[u8]) -> Result<(CardPlayedForm, &str)> {
    let (form, rest) = postcard::take_from_bytes::<CardPlayedForm>(&bytes[1..])
        .map_err(|err| corrupt("card_played", err))?;
    let move_id =
        std::str::from_utf8(rest).map_err(|err| corrupt("card_played's client move id", err))?;
    Ok((form, move_id))
}

/// A log event in any stored form.
pub fn decode_event(bytes: &[u8]) -> Result<StoredEvent> {
    match bytes.first() {
        Some(&JSON_FIRST) => Ok(serde_json::from_slice(bytes)?),
        Some(&CARD_PLAYED) => {
            let (form, move_id) = card_played(bytes)?;
            Ok(StoredEvent {
                at_ms: form.at_ms,
                event: LogEvent::CardPlayed {
                    played: Event::CardPlayed {
                        seat: form.seat,
                        card: form.card,
                        taken: form.taken,
                        basra: form.basra,
                    },
                    basra_points: form.basra_points,
                    automatic: form.automatic,
                    client_move_id: move_id.to_owned(),
                },
            })
        }
        Some(&TURN_STARTED) => {
            let (form, rest) = postcard::take_from_bytes::<TurnStartedForm>(&bytes[1..])
                .map_err(|err| corrupt("turn_started", err))?;
            if !rest.is_empty() {
                return Err(corrupt("turn_started", "bytes after the fields"));
            }
            Ok(StoredEvent {
                at_ms: form.at_ms,
                event: LogEvent::TurnStarted {
                    seat: form.seat,
                    deadline_ms: form.deadline_ms,
                },
            })
        }
        _ => Err(GameError::Corrupt(
            "a log event in no known form (first byte)".into(),
        )),
    }
}

/// An action of the action log in any stored form, or the play of a compact
/// `card_played`.
pub fn decode_action(bytes: &[u8]) -> Result<ActionRecord> {
    match bytes.first() {
        Some(&JSON_FIRST) => Ok(serde_json::from_slice(bytes)?),
        Some(&CARD_PLAYED) => {
            let (form, _) = card_played(bytes)?;
            Ok(ActionRecord {
                action: Action::Play {
                    seat: form.seat,
                    card: form.card,
                    take: form.named.then(|| form.taken.iter().collect()),
                },
                automatic: form.server_played,
                at_ms: form.at_ms,
            })
        }
        _ => Err(GameError::Corrupt(
            "an action in no known form (first byte)".into(),
        )),
    }
}

fn corrupt(what: &str, err: impl std::fmt::Display) -> GameError {
    GameError::Corrupt(format!("{what} (compact form): {err}"))
}

#[cfg(test)]
mod tests {
    use basra_engine::{Game, Seed, Settings};

    use super::*;
    use crate::room::{Occupant, Room, Visibility};
    use crate::store::{decode_room, encode_room};
    use crate::timing::Timing;

    /// Whole matches played as players play them (now the default capture, now one
    /// named): at every plain play, its events and action read back from their compact
    /// forms are the ones made, and the room stored before it with the play replayed is
    /// the room after it, byte for byte. Any other change is not a plain play.
    #[test]
    fn a_plain_play_replayed_on_the_stored_room_is_the_room_after_it() {
        let (mut plain, mut other) = (0, 0);
        for (n, seed) in [[3u8; 32], [77u8; 32], [250u8; 32]].into_iter().enumerate() {
            let occupants = ["a", "b"].map(|id| Occupant::Player {
                user_id: id.into(),
                name: id.to_uppercase(),
            });
            let mut room = Room::new(
                format!("room-{n}"),
                Settings::default(),
                occupants.to_vec(),
                false,
                true,
                Visibility::Private,
                Timing::for_tests(),
                1,
            );
            room.start_if_full(Seed(seed), "match".into(), 2);
            let _ = (room.take_pending(), room.take_pending_actions());
            let mut now = 3;
            while let Some(turn) = room.game.as_ref().and_then(Game::turn) {
                now += 17;
                let plays = room.game.as_ref().unwrap().legal_plays();
                let play = plays[now as usize % plays.len()];
                let take = (now % 3 == 0).then_some(play.capture.taken);
                let before = encode_room(&room).unwrap();
                let move_id = format!("move-{now}");
                room.play(turn.0, play.card, take, false, move_id.clone(), now)
                    .unwrap();
                let events = room.take_pending();
                let actions = room.take_pending_actions();
                if !is_plain_play(&events, &actions) {
                    other += 1;
                    continue;
                }
                plain += 1;
                let [mut played, turn] = encode(&events, &actions.actions[0]).unwrap();
                assert_eq!(decode_action(&played).unwrap(), actions.actions[0]);
                played.extend_from_slice(move_id.as_bytes());
                assert_eq!(decode_action(&played).unwrap(), actions.actions[0]);
                assert_eq!(decode_event(&played).unwrap(), events[0]);
                assert_eq!(decode_event(&turn).unwrap(), events[1]);
                let mut replayed = decode_room(&before).unwrap();
                replayed.replay(&actions.actions[0]).unwrap();
                assert_eq!(encode_room(&replayed).unwrap(), encode_room(&room).unwrap());
            }
        }
        // Seven plays of a deal's eight are plain; the eighth deals or scores.
        assert!(plain > 6 * other, "{plain} plain plays, {other} others");
    }

    #[test]
    fn the_json_forms_still_read_and_an_unknown_form_is_corrupt() {
        let event = StoredEvent {
            at_ms: 5,
            event: LogEvent::TurnStarted {
                seat: Seat(1),
                deadline_ms: 9,
            },
        };
        assert_eq!(
            decode_event(&serde_json::to_vec(&event).unwrap()).unwrap(),
            event
        );
        let record = ActionRecord {
            action: Action::Resign { seat: Seat(0) },
            automatic: true,
            at_ms: 4,
        };
        assert_eq!(
            decode_action(&serde_json::to_vec(&record).unwrap()).unwrap(),
            record
        );
        assert!(encode(&[event.clone(), event], &record).is_none());
        for bytes in [&[9u8, 1, 2][..], &[][..], &[TURN_STARTED, 0][..]] {
            assert!(matches!(decode_event(bytes), Err(GameError::Corrupt(_))));
            assert!(matches!(decode_action(bytes), Err(GameError::Corrupt(_))));
        }
    }
}
