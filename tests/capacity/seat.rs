//! One player's seat through a match on the real Play stream: join, think 2–8 s when the
//! turn comes, play, and measure each play from its scheduled instant to its
//! `card_played` on the player's own stream and on the opponent's; some players drop
//! the stream once and resume from the last event seen, some let a turn time out. And a
//! spectator's stream on a friend's room.

use std::time::{Duration, Instant};

use basra_engine::CardSet;
use basra_proto::basra::common::v1::RoomStatus;
use basra_proto::basra::game::v1::game_service_client::GameServiceClient;
use basra_proto::basra::game::v1::play_request::Kind;
use basra_proto::basra::game::v1::play_response::Event;
use basra_proto::basra::game::v1::{Join, Leave, PlayCard, PlayRequest, PlayResponse, RejectCode};
use basra_proto::convert::{card_from_pb, card_to_pb};
use rand::{Rng as _, SeedableRng as _};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::Streaming;

use crate::front::{Links, Player, authed};
use crate::sim::{Sim, lock, sleep_until};

/// The longest a seat or a spectator stays in one match.
const MATCH_DEADLINE: Duration = Duration::from_secs(3_600);

/// How many times a broken stream is opened again before the seat gives up.
const RESUMES: u32 = 3;

fn hand_of(cards: &[basra_proto::basra::common::v1::Card]) -> CardSet {
    cards.iter().filter_map(|c| card_from_pb(c).ok()).collect()
}

async fn open(
    links: &Links,
    player: &Player,
    room_id: &str,
    last_seen_seq: Option<u64>,
    spectate: bool,
) -> Result<(mpsc::Sender<PlayRequest>, Streaming<PlayResponse>), tonic::Status> {
    let (tx, rx) = mpsc::channel(8);
    let join = PlayRequest {
        kind: Some(Kind::Join(Join {
            room_id: room_id.to_owned(),
            last_seen_seq,
            spectate,
        })),
    };
    tx.send(join)
        .await
        .map_err(|_| tonic::Status::cancelled("request stream closed"))?;
    let stream = GameServiceClient::new(links.game.clone())
        .play(authed(ReceiverStream::new(rx), &player.bearer))
        .await?
        .into_inner();
    Ok((tx, stream))
}

/// How a stream of the seat ended.
enum Ended {
    /// The match ended (its id, if seen).
    Match(Option<String>),
    /// Dropped on purpose: resume.
    Dropped,
    /// Broke: resume or give up.
    Broken(String),
}

/// Plays `player`'s seat of `room_id` to the end of the match; the stream is opened at
/// `scheduled`. Returns the match id.
pub async fn play(
    sim: &Sim,
    links: &Links,
    player: &Player,
    room_id: &str,
    scheduled: Instant,
) -> Result<Option<String>, String> {
    let behaviour = &sim.behaviour;
    let mut rng = rand::rngs::StdRng::from_rng(&mut rand::rng());
    let drop_after =
        (rng.random::<f64>() < behaviour.drop_share).then(|| rng.random_range(2..12u32));
    let mut timeout_at =
        (rng.random::<f64>() < behaviour.timeout_share).then(|| rng.random_range(1..10u32));
    let deadline = Instant::now() + MATCH_DEADLINE;
    let mut hand = CardSet::EMPTY;
    let mut my_seat: Option<u32> = None;
    let mut last_seq: Option<u64> = None;
    let mut match_id: Option<String> = None;
    let mut humans = 0u32;
    let mut my_plays = 0u32;
    let mut dropped = false;
    let mut open_at = scheduled;
    let mut opened = 0u32;
    let mut broken = 0u32;
    loop {
        let kind = if opened == 0 {
            "Play: open → first event"
        } else {
            "Play: resume → first event"
        };
        opened += 1;
        let (tx, mut stream) = match open(links, player, room_id, last_seq, false).await {
            Ok(opened) => opened,
            Err(status) => {
                sim.rec.rpc::<()>(kind, open_at, &Err(status.clone()));
                broken += 1;
                if broken > RESUMES {
                    return Err(format!("Play refused: {status}"));
                }
                tokio::time::sleep(Duration::from_millis(500 * u64::from(broken))).await;
                open_at = Instant::now();
                continue;
            }
        };
        let mut first = true;
        // The scheduled instant of the play being thought about, and of the one sent.
        let mut play_at: Option<Instant> = None;
        let mut sent_at: Option<Instant> = None;
        let mut rejected = 0usize;
        let ended = loop {
            let next = tokio::select! {
                next = tokio::time::timeout_at(deadline.into(), stream.message()) => next,
                () = sleep_until(play_at.unwrap_or(deadline)), if play_at.is_some() => {
                    let Some(at) = play_at.take() else { continue };
                    let cards: Vec<_> = hand.iter().collect();
                    let Some(&card) = cards.get(rejected % cards.len().max(1)) else {
                        continue;
                    };
                    if let Some(seat) = my_seat {
                        lock(&sim.last_play).insert(room_id.to_owned(), (seat, at));
                    }
                    sent_at = Some(at);
                    my_plays += 1;
                    sim.counters.plays.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let play = PlayRequest {
                        kind: Some(Kind::PlayCard(PlayCard {
                            card: Some(card_to_pb(card)),
                            capture_choice: None,
                            based_on_seq: None,
                            client_move_id: uuid::Uuid::now_v7().to_string(),
                        })),
                    };
                    if tx.send(play).await.is_err() {
                        break Ended::Broken("request stream closed".into());
                    }
                    if !dropped && drop_after == Some(my_plays) {
                        dropped = true;
                        break Ended::Dropped;
                    }
                    continue;
                }
            };
            let event = match next {
                Err(_) => break Ended::Broken("gave up: match deadline".into()),
                Ok(Err(status)) => break Ended::Broken(format!("{:?}", status.code())),
                Ok(Ok(None)) => break Ended::Broken("stream ended early".into()),
                Ok(Ok(Some(event))) => event,
            };
            let now = Instant::now();
            if std::mem::take(&mut first) {
                sim.rec.record(kind, open_at, now, Ok(()));
                broken = 0;
            }
            if !matches!(event.event, Some(Event::Rejected(_) | Event::Pong(_))) {
                last_seq = Some(event.seq);
            }
            let think = || now + behaviour.think.pick(rand::rng().random());
            match event.event {
                Some(Event::Snapshot(snapshot)) => {
                    if let Some(view) = snapshot.view {
                        my_seat = view.your_seat;
                        hand = hand_of(&view.hand);
                        if !view.match_id.is_empty() {
                            match_id = Some(view.match_id.clone());
                            humans =
                                view.seats.iter().filter(|s| !s.user_id.is_empty()).count() as u32;
                        }
                        let over = [RoomStatus::Finished, RoomStatus::Closed]
                            .map(|status| status as i32)
                            .contains(&view.status);
                        if over {
                            // Ended while this seat was away (a resume, a restart).
                            if let Some(id) = &match_id {
                                lock(&sim.ended).entry(id.clone()).or_insert((humans, now));
                            }
                            break Ended::Match(match_id.clone());
                        }
                        if view.turn.is_some() && view.turn == my_seat && !hand.is_empty() {
                            play_at = Some(think());
                        }
                    }
                }
                Some(Event::MatchStarted(started)) => {
                    match_id = Some(started.match_id);
                    humans = started
                        .seats
                        .iter()
                        .filter(|s| !s.user_id.is_empty())
                        .count() as u32;
                    if my_seat == Some(0) {
                        sim.counters
                            .matches_started
                            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                }
                Some(Event::HandDealt(dealt)) => hand = hand_of(&dealt.cards),
                Some(Event::TurnStarted(turn)) if Some(turn.seat) == my_seat => {
                    rejected = 0;
                    if timeout_at == Some(my_plays + 1) {
                        // Let this turn run out: the turn timer plays for the seat.
                        timeout_at = None;
                        sim.counters
                            .timeouts
                            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    } else {
                        play_at = Some(think());
                    }
                }
                Some(Event::CardPlayed(played)) => {
                    if Some(played.seat) == my_seat {
                        if let Some(card) = played.card.as_ref().and_then(|c| card_from_pb(c).ok())
                        {
                            hand.remove(card);
                        }
                        play_at = None;
                        if let Some(at) = sent_at.take()
                            && !played.automatic
                        {
                            sim.rec.record("play → own card_played", at, now, Ok(()));
                        }
                    } else {
                        let mut last = lock(&sim.last_play);
                        if let Some(&(seat, at)) = last.get(room_id)
                            && seat == played.seat
                        {
                            last.remove(room_id);
                            drop(last);
                            if !played.automatic {
                                sim.rec
                                    .record("play → opponent's card_played", at, now, Ok(()));
                            }
                        }
                    }
                }
                Some(Event::MatchEnded(end)) => {
                    lock(&sim.last_play).remove(room_id);
                    let id = if end.match_id.is_empty() {
                        match_id.clone()
                    } else {
                        Some(end.match_id)
                    };
                    if let Some(id) = &id {
                        lock(&sim.ended).entry(id.clone()).or_insert((humans, now));
                    }
                    // Leave the table: declines the rematch, so the seat is free for the
                    // next search at once.
                    let _ = tx.try_send(PlayRequest {
                        kind: Some(Kind::Leave(Leave {})),
                    });
                    break Ended::Match(id);
                }
                Some(Event::Rejected(reject)) => {
                    let code = RejectCode::try_from(reject.code)
                        .map_or_else(|_| reject.code.to_string(), |c| c.as_str_name().to_owned());
                    if let Some(at) = sent_at.take() {
                        sim.rec.record("play → own card_played", at, now, Err(code));
                    }
                    // Try another card of the hand, at most three times a turn.
                    rejected += 1;
                    if rejected <= 3 {
                        play_at = Some(now);
                    }
                }
                _ => {}
            }
        };
        drop(tx);
        drop(stream);
        match ended {
            Ended::Match(id) => return Ok(id),
            Ended::Dropped => {
                sim.counters
                    .resumes
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let pause = Duration::from_millis(rng.random_range(1_000..3_000));
                open_at = Instant::now() + pause;
                sleep_until(open_at).await;
            }
            Ended::Broken(reason) => {
                sim.rec.record(
                    "Play: stream broke",
                    open_at,
                    Instant::now(),
                    Err(reason.clone()),
                );
                broken += 1;
                if broken > RESUMES || reason.starts_with("gave up") {
                    return Err(format!("Play stream: {reason}"));
                }
                open_at = Instant::now() + Duration::from_millis(500);
                sleep_until(open_at).await;
            }
        }
    }
}

/// Spectates `room_id` until its match ends or `until`; the stream opens at `scheduled`.
/// Returns the events seen.
pub async fn watch(
    sim: &Sim,
    links: &Links,
    player: &Player,
    room_id: &str,
    scheduled: Instant,
    until: Instant,
) -> Result<u64, String> {
    let kind = "Play (spectate): open → first event";
    let (_tx, mut stream) = match open(links, player, room_id, None, true).await {
        Ok(opened) => opened,
        Err(status) => {
            sim.rec.rpc::<()>(kind, scheduled, &Err(status.clone()));
            return Err(format!("spectate refused: {status}"));
        }
    };
    let mut events = 0u64;
    loop {
        let next = tokio::time::timeout_at(until.into(), stream.message()).await;
        match next {
            Err(_) => return Ok(events),
            Ok(Ok(Some(event))) => {
                if events == 0 {
                    sim.rec.record(kind, scheduled, Instant::now(), Ok(()));
                }
                events += 1;
                if matches!(event.event, Some(Event::MatchEnded(_))) {
                    return Ok(events);
                }
            }
            Ok(Ok(None)) => return Ok(events),
            Ok(Err(status)) => {
                let reason = format!("{:?}", status.code());
                sim.rec.record(
                    "Play (spectate): stream broke",
                    scheduled,
                    Instant::now(),
                    Err(reason.clone()),
                );
                return Err(reason);
            }
        }
    }
}

/// Leaves `room_id` before its match starts (frees the seat): a Play stream, `leave`,
/// and the stream's end.
pub async fn leave(sim: &Sim, links: &Links, player: &Player, room_id: &str, scheduled: Instant) {
    let outcome = async {
        let (tx, mut stream) = open(links, player, room_id, None, false).await?;
        tx.send(PlayRequest {
            kind: Some(Kind::Leave(Leave {})),
        })
        .await
        .map_err(|_| tonic::Status::cancelled("request stream closed"))?;
        let drained = tokio::time::timeout(Duration::from_secs(10), async {
            while stream.message().await?.is_some() {}
            Ok::<(), tonic::Status>(())
        })
        .await;
        drained.unwrap_or_else(|_| Err(tonic::Status::deadline_exceeded("the stream did not end")))
    }
    .await;
    sim.rec
        .rpc("Play: leave a room not started", scheduled, &outcome);
}
