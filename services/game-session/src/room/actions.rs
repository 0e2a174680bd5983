//! What a seated player does to a room — play a card, resign, chat, ask for a rematch,
//! leave — checked and stored in one place, whichever shape of the API it came through:
//! a client message on the `Play` stream ([`session`](crate::stream)) or a unary call of
//! the browser shape ([`web`](crate::api::web)). Each shape only turns the [`Acted`] answer into
//! its own form: events and `rejected` on the stream, a response or a status for a call.

use std::sync::Arc;

use basra_engine::CardSet;
use basra_platform::ratelimit::RateLimiter;
use basra_proto::basra::game::v1::{self as game, RejectCode, play_request::Kind};
use basra_proto::convert::card_from_pb;

use crate::error::GameError;
use crate::replica::{Committed, Mutation, Replica};
use crate::room::events::StoredEvent;
use crate::room::{Reject, Room};
use crate::room::{fresh_id, fresh_seed};

/// The longest client move id accepted.
const MAX_MOVE_ID: usize = 128;

/// How an action ended.
#[derive(Debug)]
pub(crate) enum Acted {
    /// Stored: the room after it, and the events it logged (the last with seq `room.seq`).
    Done(Committed),
    /// Not applied (or applied before: [`RejectCode::AlreadyApplied`]).
    Refused(Refusal),
}

/// The seq of the first of `events` (a play's `card_played`), the last of which is the
/// room's `seq`; the room's `seq` when there are none.
pub(crate) fn first_seq(room: &Room, events: &[StoredEvent]) -> u64 {
    room.seq + 1 - (events.len() as u64).max(1)
}

/// Why an action was not applied: Play's `rejected` event, a unary call's status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Refusal {
    /// Why.
    pub(crate) code: RejectCode,
    /// A developer-facing explanation.
    pub(crate) message: String,
    /// The play's client move id, echoed (empty when it is itself the problem).
    pub(crate) client_move_id: String,
    /// With [`RejectCode::AlreadyApplied`]: the seq of the original play.
    pub(crate) applied_seq: Option<u64>,
}

impl Refusal {
    fn new(code: RejectCode, message: impl Into<String>, client_move_id: &str) -> Refusal {
        Refusal {
            code,
            message: message.into(),
            client_move_id: client_move_id.to_owned(),
            applied_seq: None,
        }
    }

    fn already_applied(client_move_id: &str, seq: u64) -> Refusal {
        Refusal {
            applied_seq: Some(seq),
            ..Refusal::new(
                RejectCode::AlreadyApplied,
                "this move was already played",
                client_move_id,
            )
        }
    }

    /// The Play stream's `rejected` event.
    pub(crate) fn to_pb(&self) -> game::Rejected {
        game::Rejected {
            code: self.code as i32,
            message: self.message.clone(),
            client_move_id: self.client_move_id.clone(),
            applied_seq: self.applied_seq,
        }
    }
}

/// Applies what `seat` asks in `room_id` (any client message kind but join and ping).
/// `Err` only for what ends a Play stream (the store failing, the room gone).
pub(crate) async fn act(
    replica: &Arc<Replica>,
    chat: &RateLimiter,
    room_id: &str,
    seat: u8,
    kind: Kind,
) -> Result<Acted, GameError> {
    let move_id = match &kind {
        Kind::PlayCard(play) => play.client_move_id.clone(),
        _ => String::new(),
    };
    if move_id.len() > MAX_MOVE_ID {
        return Ok(Acted::Refused(Refusal::new(
            RejectCode::Malformed,
            "client_move_id is longer than 128",
            "",
        )));
    }
    let refused = |code, message: String| Ok(Acted::Refused(Refusal::new(code, message, &move_id)));
    let outcome = match kind {
        Kind::PlayCard(play) => {
            let card = match play.card.as_ref().map(card_from_pb) {
                Some(Ok(card)) => card,
                Some(Err(err)) => return refused(RejectCode::Malformed, err.0),
                None => return refused(RejectCode::Malformed, "play_card.card is required".into()),
            };
            let take = match play.capture_choice {
                None => None,
                Some(choice) => {
                    let mut set = CardSet::EMPTY;
                    for card in &choice.cards {
                        match card_from_pb(card) {
                            Ok(card) => set.insert(card),
                            Err(err) => return refused(RejectCode::Malformed, err.0),
                        }
                    }
                    Some(set)
                }
            };
            let based_on = play.based_on_seq;
            let id = move_id.clone();
            replica
                .mutate_play(room_id, Some((seat, &move_id)), move |room, now| {
                    if let Some(based) = based_on
                        && based < room.game_seq
                    {
                        return Err(Reject::new(
                            RejectCode::Stale,
                            format!(
                                "the game changed after seq {based} (now at {}); look again",
                                room.game_seq
                            ),
                        ));
                    }
                    room.play(seat, card, take, false, id.clone(), now)
                })
                .await?
        }
        Kind::Resign(_) => {
            replica
                .mutate(room_id, None, |room, now| room.resign(seat, false, now))
                .await?
        }
        Kind::QuickChat(chat_message) => {
            let phrase = chat_message.phrase;
            if !matches!(game::QuickChatPhrase::try_from(phrase), Ok(p) if p != game::QuickChatPhrase::Unspecified)
            {
                return refused(RejectCode::Malformed, "unknown phrase".into());
            }
            if chat.check(&format!("{room_id}:{seat}")).is_err() {
                return refused(
                    RejectCode::RateLimited,
                    "too many chat messages; wait a little".into(),
                );
            }
            replica
                .mutate(room_id, None, |room, now| {
                    room.chat(seat, phrase, now);
                    Ok(())
                })
                .await?
        }
        Kind::Rematch(_) => {
            replica
                .mutate(room_id, None, |room, now| {
                    room.ask_rematch(seat, fresh_seed(), fresh_id(), now)
                })
                .await?
        }
        Kind::Leave(_) => {
            replica
                .mutate(room_id, None, |room, now| room.leave(seat, now))
                .await?
        }
        Kind::Ping(_) | Kind::Join(_) => {
            return refused(RejectCode::Malformed, "not an action".into());
        }
    };
    match outcome {
        Mutation::Done { committed, .. } => Ok(Acted::Done(committed)),
        Mutation::Rejected(reject) => {
            // A retried move is usually refused by the rules (the card is gone, the turn
            // moved on): look its id up only then, not before every play. (A retry the
            // rules would accept again is caught by the commit's own idempotency check.)
            if !move_id.is_empty()
                && let Some(seq) = replica
                    .store
                    .applied_move(room_id, &crate::store::move_key(seat, &move_id))
                    .await?
            {
                return Ok(Acted::Refused(Refusal::already_applied(&move_id, seq)));
            }
            refused(reject.code, reject.message)
        }
        Mutation::AlreadyApplied(seq) => {
            Ok(Acted::Refused(Refusal::already_applied(&move_id, seq)))
        }
    }
}
