//! A player's Play stream with a model of what the player knows ([`Player`]): every
//! event is checked against what the seat may see and against the seqs before it.

use basra_engine::{Card, CardSet};
use basra_platform::auth::Role;
use basra_proto::basra::common::v1 as pb;
use basra_proto::basra::game::v1::{
    self as game, PlayRequest, PlayResponse, game_service_client::GameServiceClient,
    play_request::Kind, play_response::Event as E,
};
use tokio::sync::mpsc;
use tonic::transport::Channel;
use tonic::{Status, Streaming};
use uuid::Uuid;

use super::{Tokens, WAIT};
use crate::authed;

/// A player's stream, with a model of what the player knows.
#[derive(Debug)]
pub struct Player {
    /// Whose stream it is.
    pub user: Uuid,
    /// The player's seat.
    pub seat: u32,
    /// The stream's client messages.
    pub tx: mpsc::Sender<PlayRequest>,
    /// The stream's events.
    pub events: Streaming<PlayResponse>,
    /// The cards the player holds, from its own events.
    pub hand: CardSet,
    /// Every event received, in order.
    pub log: Vec<PlayResponse>,
    /// The highest logged seq seen.
    pub last_seq: u64,
    /// The plays this player sent.
    pub moves: u32,
    /// Whose turn it is, as far as this player has seen and not yet acted on.
    pub turn: Option<u32>,
}

/// The engine's card for an API card.
pub fn card(c: &pb::Card) -> Card {
    basra_proto::convert::card_from_pb(c).unwrap()
}

/// A Join for `room_id`'s seat, resuming after `last_seen_seq` (a snapshot without it).
pub fn join_message(room_id: &str, last_seen_seq: Option<u64>) -> PlayRequest {
    PlayRequest {
        kind: Some(Kind::Join(game::Join {
            room_id: room_id.into(),
            last_seen_seq,
            spectate: false,
        })),
    }
}

/// A Join that watches `room_id` as a spectator, from the start.
pub fn spectate_message(room_id: &str) -> PlayRequest {
    PlayRequest {
        kind: Some(Kind::Join(game::Join {
            room_id: room_id.into(),
            last_seen_seq: None,
            spectate: true,
        })),
    }
}

/// A PlayCard of `card` with client move id `move_id`, based on `based_on_seq`.
pub fn play_card(card: Card, move_id: &str, based_on_seq: Option<u64>) -> Kind {
    Kind::PlayCard(game::PlayCard {
        card: Some(basra_proto::convert::card_to_pb(card)),
        capture_choice: None,
        based_on_seq,
        client_move_id: move_id.into(),
    })
}

/// Opens a Play stream and sends Join; the error status if the server refuses.
pub async fn open(
    channel: Channel,
    token: &str,
    join: PlayRequest,
) -> Result<(mpsc::Sender<PlayRequest>, Streaming<PlayResponse>), Status> {
    let (tx, rx) = mpsc::channel(16);
    tx.send(join).await.unwrap();
    let request = authed(tokio_stream::wrappers::ReceiverStream::new(rx), token);
    let response = GameServiceClient::new(channel).play(request).await?;
    Ok((tx, response.into_inner()))
}

impl Player {
    /// Opens `user`'s Play stream on `channel` and joins `room_id` at `seat`, resuming
    /// after `last_seen_seq` (a snapshot without it).
    pub async fn join(
        channel: Channel,
        tokens: &Tokens,
        user: Uuid,
        seat: u32,
        room_id: &str,
        last_seen_seq: Option<u64>,
    ) -> Player {
        let token = tokens.token(user, Role::Player);
        let (tx, events) = open(channel, &token, join_message(room_id, last_seen_seq))
            .await
            .expect("join");
        Player {
            user,
            seat,
            tx,
            events,
            hand: CardSet::EMPTY,
            log: Vec::new(),
            last_seq: last_seen_seq.unwrap_or(0),
            moves: 0,
            turn: None,
        }
    }

    /// The next event, checked against what this seat may know.
    pub async fn next(&mut self) -> Result<PlayResponse, Status> {
        let event = tokio::time::timeout(WAIT, self.events.message())
            .await
            .expect("an event in time")?
            .ok_or_else(|| Status::ok("stream ended"))?;
        self.observe(&event);
        Ok(event)
    }

    /// Updates the model and checks that nothing hidden shows up.
    pub fn observe(&mut self, event: &PlayResponse) {
        match event.event.as_ref().expect("an event") {
            E::Snapshot(snapshot) => {
                let view = snapshot.view.as_ref().unwrap();
                assert_eq!(view.your_seat, Some(self.seat));
                self.hand = view.hand.iter().map(card).collect();
                self.turn = view.turn;
                assert_eq!(
                    view.hand_counts
                        .get(self.seat as usize)
                        .copied()
                        .unwrap_or(0) as usize,
                    self.hand.len()
                );
                assert!(event.seq >= self.last_seq || self.last_seq == 0);
            }
            E::Rejected(_) | E::Pong(_) => {
                assert_eq!(event.seq, self.last_seq, "local events repeat the last seq");
            }
            logged => {
                assert_eq!(
                    event.seq,
                    self.last_seq + 1,
                    "logged events arrive in order, none lost or repeated: {logged:?}"
                );
                match logged {
                    // A new match (a rematch) starts with empty hands.
                    E::MatchStarted(_) => self.hand = CardSet::EMPTY,
                    E::TurnStarted(turn) => self.turn = Some(turn.seat),
                    E::MatchEnded(_) => self.turn = None,
                    E::HandDealt(dealt) => {
                        let cards: CardSet = dealt.cards.iter().map(card).collect();
                        assert!(cards.len() == 4 || cards.is_empty());
                        assert!(!cards.is_empty(), "a seat always gets its own deal");
                        assert!(self.hand.is_empty(), "deals come when hands are empty");
                        self.hand = cards;
                        assert_eq!(dealt.hand_counts[self.seat as usize], 4);
                    }
                    E::CardPlayed(played) => {
                        let c = card(played.card.as_ref().unwrap());
                        if played.seat == self.seat {
                            assert!(self.hand.contains(c), "I played a card of mine");
                            self.hand.remove(c);
                        } else {
                            assert!(
                                !self.hand.contains(c),
                                "another seat played {c}, which I was shown as mine"
                            );
                            assert!(
                                played.client_move_id.is_empty(),
                                "others' move ids stay theirs"
                            );
                        }
                    }
                    _ => {}
                }
            }
        }
        if !matches!(event.event, Some(E::Rejected(_)) | Some(E::Pong(_))) {
            self.last_seq = self.last_seq.max(event.seq);
        }
        self.log.push(event.clone());
    }

    /// Sends a client message of `kind`; false if the stream has ended (the next read
    /// returns its status).
    pub async fn try_send(&self, kind: Kind) -> bool {
        self.tx.send(PlayRequest { kind: Some(kind) }).await.is_ok()
    }

    /// Sends a client message of `kind` on a stream that must still be up.
    pub async fn send(&self, kind: Kind) {
        assert!(self.try_send(kind).await, "the stream is up");
    }

    /// Plays `card` with client move id `move_id`, based on the last seq seen.
    pub async fn play(&mut self, card: Card, move_id: &str) {
        self.moves += 1;
        self.send(play_card(card, move_id, Some(self.last_seq)))
            .await;
    }

    /// Plays whenever it is this seat's turn until the match ends (or `stop_after` of
    /// this seat's plays have been made); returns the MatchEnded if it came.
    pub async fn play_on(&mut self, stop_after: Option<u32>) -> Option<game::MatchEnded> {
        loop {
            if stop_after.is_some_and(|n| self.moves >= n) {
                return None;
            }
            if self.turn == Some(self.seat) {
                // Once per turn: the next TurnStarted sets it again.
                self.turn = None;
                let card = self.hand.iter().next().expect("a card to play");
                let id = Uuid::now_v7().to_string();
                self.play(card, &id).await;
                continue;
            }
            let event = self.next().await.expect("the stream stays up");
            match event.event.unwrap() {
                E::MatchEnded(ended) => return Some(ended),
                E::Rejected(rejected) => panic!("unexpected reject: {rejected:?}"),
                _ => {}
            }
        }
    }

    /// Reads events until every play this seat sent has come back as its `card_played`.
    pub async fn until_own_plays_applied(&mut self) {
        let seat = self.seat;
        let own = |log: &[PlayResponse]| {
            log.iter()
                .filter(|e| matches!(&e.event, Some(E::CardPlayed(p)) if p.seat == seat))
                .count()
        };
        while own(&self.log) < self.moves as usize {
            self.next().await.expect("the stream stays up");
        }
    }

    /// Reads events until one matches.
    pub async fn until(&mut self, mut pred: impl FnMut(&E) -> bool) -> PlayResponse {
        loop {
            let event = self.next().await.expect("the stream stays up");
            if pred(event.event.as_ref().unwrap()) {
                return event;
            }
        }
    }
}

/// The logged events of a log (no snapshot, reject or pong), by seq.
pub fn logged(log: &[PlayResponse]) -> Vec<&PlayResponse> {
    log.iter()
        .filter(|e| {
            !matches!(
                e.event,
                Some(E::Snapshot(_)) | Some(E::Rejected(_)) | Some(E::Pong(_))
            )
        })
        .collect()
}

/// Waits for the stream to end; its final status (`Ok` for a clean end).
pub async fn stream_end(p: &mut Player) -> tonic::Code {
    loop {
        match tokio::time::timeout(WAIT, p.events.message())
            .await
            .expect("the stream ends in time")
        {
            Ok(Some(event)) => p.observe(&event),
            Ok(None) => return tonic::Code::Ok,
            Err(status) => return status.code(),
        }
    }
}
