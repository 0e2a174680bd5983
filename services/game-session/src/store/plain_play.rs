//! The stored form of a plain play: a card played that scores and ends nothing (it may
//! deal the next hands: 47 plays of a two-player round's 48). Such a play is stored as
//! its events alone,
//! in a compact binary form, not as the whole room: the room's snapshot stays as the last
//! other commit wrote it, and the plain plays on the log after it (after the snapshot's
//! seq, see `redis_store.rs`) are the room's tail, replayed on load. The next other commit
//! writes a snapshot and moves the tail's plays to the match's action log. A plain play's
//! commit bumps the room's version and appends these events, nothing else (`lua/play.lua`):
//! its move's answer is its `card_played` on the log.
//!
//! | stored | first byte | form |
//! |---|---|---|
//! | log event, action | `{` | JSON (`StoredEvent`, `ActionRecord`), what every other commit writes |
//! | log event, action | [`CARD_PLAYED`] | postcard of `card_played`'s fields with the play's own (see `CardPlayedForm`), then the client move id's UTF-8 bytes to the end: the move's answer is this event's seq ([`played_move`]) |
//! | log event | [`TURN_STARTED`] | postcard of `turn_started`'s fields |
//! | log event | [`HAND_DEALT`] | postcard of `hand_dealt`'s fields, each hand as its card set |
//!
//! Postcard is not self-describing: a change of these fields is a new first byte, with a
//! decoder of the previous one kept (see `codec.rs` for the room's own formats).

use basra_engine::{Action, BasraKind, Card, CardList, CardSet, Event, Seat};
use serde::{Deserialize, Serialize};

use crate::error::{GameError, Result};
use crate::room::events::{LogEvent, StoredEvent};
use crate::room::{ActionRecord, PendingActions};

/// The first byte of a compact `card_played`.
pub const CARD_PLAYED: u8 = 1;
/// The first byte of a compact `turn_started`.
pub const TURN_STARTED: u8 = 2;
/// The first byte of a compact `hand_dealt`.
pub const HAND_DEALT: u8 = 3;

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
struct HandDealtForm {
    at_ms: i64,
    /// Each seat dealt to and its cards.
    hands: Vec<(Seat, Option<CardSet>)>,
    hand_counts: Vec<u32>,
    deck_remaining: u32,
}

#[derive(Serialize, Deserialize)]
struct TurnStartedForm {
    at_ms: i64,
    seat: Seat,
    deadline_ms: i64,
}

/// Whether a change is a plain play: one play action, on the running match's log, whose
/// events are its `card_played`, the next hands if it ended a deal, and the next
/// `turn_started` (nothing scored or ended, no seat changed).
pub fn is_plain_play(events: &[StoredEvent], actions: &PendingActions) -> bool {
    let one_play = matches!(
        actions.actions.as_slice(),
        [ActionRecord {
            action: Action::Play { .. },
            ..
        }]
    );
    let plain_events = match events {
        [played, dealt @ .., turn] => {
            matches!(played.event, LogEvent::CardPlayed { .. })
                && matches!(turn.event, LogEvent::TurnStarted { .. })
                && match dealt {
                    [] => true,
                    [deal] => matches!(deal.event, LogEvent::HandDealt { .. }),
                    _ => false,
                }
        }
        _ => false,
    };
    one_play && !actions.reset && plain_events
}

/// A plain play's events in their compact form, `card_played` (first) ending with its
/// client move id (the reader takes the bytes after the fields as the id). `None`: not a
/// plain play (see [`is_plain_play`]) or its capture named is not what it took.
pub fn encode(events: &[StoredEvent], action: &ActionRecord) -> Option<Vec<Vec<u8>>> {
    let Action::Play { take, .. } = action.action else {
        return None;
    };
    let mut out = Vec::with_capacity(events.len());
    for (i, stored) in events.iter().enumerate() {
        let at_ms = stored.at_ms;
        let encoded = match (&stored.event, i) {
            (
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
                    client_move_id,
                },
                0,
            ) => {
                if take.is_some_and(|take| take != taken.iter().collect::<CardSet>()) {
                    return None;
                }
                let form = CardPlayedForm {
                    at_ms,
                    seat: *seat,
                    card: *card,
                    taken: *taken,
                    basra: *basra,
                    basra_points: *basra_points,
                    automatic: *automatic,
                    server_played: action.automatic,
                    named: take.is_some(),
                };
                postcard::to_extend(&form, vec![CARD_PLAYED]).map(|mut bytes| {
                    bytes.extend_from_slice(client_move_id.as_bytes());
                    bytes
                })
            }
            (
                LogEvent::HandDealt {
                    deals,
                    hand_counts,
                    deck_remaining,
                },
                1..,
            ) => {
                let hands = deals
                    .iter()
                    .map(|deal| match deal {
                        Event::HandDealt { seat, cards } => Some((*seat, *cards)),
                        _ => None,
                    })
                    .collect::<Option<Vec<_>>>()?;
                let form = HandDealtForm {
                    at_ms,
                    hands,
                    hand_counts: hand_counts.clone(),
                    deck_remaining: *deck_remaining,
                };
                postcard::to_extend(&form, vec![HAND_DEALT])
            }
            (LogEvent::TurnStarted { seat, deadline_ms }, 1..) => {
                let form = TurnStartedForm {
                    at_ms,
                    seat: *seat,
                    deadline_ms: *deadline_ms,
                };
                postcard::to_extend(&form, vec![TURN_STARTED])
            }
            _ => return None,
        };
        out.push(encoded.ok()?);
    }
    Some(out)
}

/// A compact `card_played`'s fields and its client move id.
fn card_played(bytes: &[u8]) -> Result<(CardPlayedForm, &str)> {
    let (form, rest) = postcard::take_from_bytes::<CardPlayedForm>(&bytes[1..])
        .map_err(|err| corrupt("card_played", err))?;
    let move_id =
        std::str::from_utf8(rest).map_err(|err| corrupt("card_played's client move id", err))?;
    Ok((form, move_id))
}

/// The seat and client move id of a compact `card_played` (`None`: another event, or a
/// `card_played` in JSON, whose answer its commit recorded in the moves hash).
pub fn played_move(bytes: &[u8]) -> Result<Option<(Seat, &str)>> {
    if bytes.first() != Some(&CARD_PLAYED) {
        return Ok(None);
    }
    let (form, move_id) = card_played(bytes)?;
    Ok(Some((form.seat, move_id)))
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
            let form: TurnStartedForm = whole(bytes, "turn_started")?;
            Ok(StoredEvent {
                at_ms: form.at_ms,
                event: LogEvent::TurnStarted {
                    seat: form.seat,
                    deadline_ms: form.deadline_ms,
                },
            })
        }
        Some(&HAND_DEALT) => {
            let form: HandDealtForm = whole(bytes, "hand_dealt")?;
            Ok(StoredEvent {
                at_ms: form.at_ms,
                event: LogEvent::HandDealt {
                    deals: form
                        .hands
                        .into_iter()
                        .map(|(seat, cards)| Event::HandDealt { seat, cards })
                        .collect(),
                    hand_counts: form.hand_counts,
                    deck_remaining: form.deck_remaining,
                },
            })
        }
        _ => Err(GameError::Corrupt(
            "a log event in no known form (first byte)".into(),
        )),
    }
}

/// The fields of a compact form that holds nothing after them.
fn whole<T: for<'de> Deserialize<'de>>(bytes: &[u8], what: &str) -> Result<T> {
    let (form, rest) =
        postcard::take_from_bytes::<T>(&bytes[1..]).map_err(|err| corrupt(what, err))?;
    if rest.is_empty() {
        Ok(form)
    } else {
        Err(corrupt(what, "bytes after the fields"))
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
    use crate::room::timing::Timing;
    use crate::room::{Occupant, Room, Visibility};
    use crate::store::{decode_room, encode_room};

    /// Whole matches played as players play them (now the default capture, now one
    /// named): at every plain play (dealing or not), its events and action read back from
    /// their compact forms are the ones made, and the room stored before it with the play
    /// replayed is the room after it, byte for byte.
    #[test]
    fn a_plain_play_replayed_on_the_stored_room_is_the_room_after_it() {
        let (mut plain, mut dealt, mut other) = (0, 0, 0);
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
                dealt += usize::from(events.len() == 3);
                let compact = encode(&events, &actions.actions[0]).unwrap();
                assert_eq!(decode_action(&compact[0]).unwrap(), actions.actions[0]);
                assert_eq!(
                    played_move(&compact[0]).unwrap(),
                    Some((turn, move_id.as_str()))
                );
                assert_eq!(played_move(&compact[1]).unwrap(), None);
                for (bytes, event) in compact.iter().zip(&events) {
                    assert_eq!(&decode_event(bytes).unwrap(), event);
                }
                let mut replayed = decode_room(&before).unwrap();
                replayed.replay(&actions.actions[0]).unwrap();
                assert_eq!(encode_room(&replayed).unwrap(), encode_room(&room).unwrap());
            }
        }
        // A round's last play scores; every other is plain, some of them dealing.
        assert!(plain > 30 * other, "{plain} plain plays, {other} others");
        assert!(dealt * 10 > plain, "{dealt} of {plain} plain plays dealt");
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
