//! Between the stored room and the protobuf API. Everything a client receives is made
//! here, from the engine's per-seat [`View`](basra_engine::View) or an event passed
//! through [`Event::for_viewer`]. Cards, rule settings and Basra kinds go through
//! [`basra_proto::convert`], shared by every service, and a deal, a play and a round's end
//! are projected by [`basra_records::spectator`], which accounts' replays share; only what
//! is specific to rooms, seats and the event log lives here.

use basra_engine::Event;
use basra_proto::basra::common::v1 as pb;
use basra_proto::basra::game::v1 as game;
pub use basra_proto::convert::timestamp;
use basra_proto::convert::{bot_display_name, cards_to_pb, player_display_name, settings_to_pb};
pub use basra_records::build::side_scores;
use basra_records::spectator;

use crate::room::events::{LogEvent, StoredEvent};
use crate::room::{Occupant, Room, SeatSnapshot, Status};

/// The API's room status.
pub fn status_to_pb(status: Status) -> pb::RoomStatus {
    match status {
        Status::Waiting => pb::RoomStatus::Waiting,
        Status::InProgress => pb::RoomStatus::InProgress,
        Status::Finished => pb::RoomStatus::Finished,
        Status::Closed => pb::RoomStatus::Closed,
    }
}

/// The public facts of a seat.
pub fn seat_to_pb(seat: &SeatSnapshot, seats: usize) -> pb::SeatInfo {
    let side = u32::from(seat.seat) % 2;
    let _ = seats;
    let mut info = pb::SeatInfo {
        seat: u32::from(seat.seat),
        side,
        ..Default::default()
    };
    match &seat.occupant {
        Occupant::Open => info.occupant = pb::SeatOccupant::Open as i32,
        Occupant::Player { user_id, name } => {
            info.occupant = pb::SeatOccupant::Player as i32;
            info.user_id = user_id.clone();
            info.display_name = player_display_name(name, usize::from(seat.seat));
            info.is_guest = seat.guest;
            info.connected = seat.connected;
        }
        Occupant::Bot { level } => {
            info.occupant = pb::SeatOccupant::Bot as i32;
            info.bot_level = level.to_proto() as i32;
            info.display_name = bot_display_name(info.bot_level);
            info.connected = true;
        }
    }
    info
}

/// The room as `viewer` may see it (`None`: a spectator), built from the engine's view.
pub fn game_view(room: &Room, viewer: Option<u8>) -> pb::GameView {
    let seats = room.seat_snapshots();
    let mut view = pb::GameView {
        room_id: room.id.clone(),
        match_id: room.match_id.clone(),
        status: status_to_pb(room.status) as i32,
        settings: Some(settings_to_pb(&room.settings)),
        ranked: room.ranked,
        seats: seats.iter().map(|s| seat_to_pb(s, seats.len())).collect(),
        your_seat: viewer.map(u32::from),
        ..Default::default()
    };
    let Some(game) = &room.game else {
        view.hand_counts = vec![0; room.seats.len()];
        view.pile_sizes = vec![0, 0];
        view.totals = vec![0, 0];
        view.round_basra_points = vec![0, 0];
        return view;
    };
    let v = game.view(viewer.map(basra_engine::Seat));
    view.hand = cards_to_pb(v.hand);
    view.hand_counts = v.hand_sizes.iter().map(|&n| u32::from(n)).collect();
    view.table = cards_to_pb(v.table.iter().copied());
    view.pile_sizes = v.pile_sizes.iter().map(|&n| u32::from(n)).collect();
    view.totals = v.totals.to_vec();
    view.round_basra_points = v.round_basra_points.to_vec();
    view.carried_majority_points = room.carried;
    view.round = v.round + 1;
    view.dealer = u32::from(v.dealer.0);
    view.turn = v
        .turn
        .filter(|_| room.status == Status::InProgress)
        .map(|s| u32::from(s.0));
    view.turn_deadline = room
        .turn_deadline_ms
        .filter(|_| view.turn.is_some())
        .map(timestamp);
    view.deck_remaining = u32::from(v.deck_left);
    // Public: everyone saw who captured.
    view.last_capturer = game.round().last_capturer().map(|s| u32::from(s.0));
    view.seed_commitment = v.commitment.to_vec();
    view
}

/// A snapshot event carrying `seq`.
pub fn snapshot(room: &Room, viewer: Option<u8>, seq: u64, now: i64) -> game::PlayResponse {
    server_event(
        seq,
        now,
        game::play_response::Event::Snapshot(Box::new(game::Snapshot {
            view: Some(game_view(room, viewer)),
        })),
    )
}

/// A `PlayResponse` carrying `event` at `seq`, stamped with the server time `now`.
pub fn server_event(seq: u64, now: i64, event: game::play_response::Event) -> game::PlayResponse {
    game::PlayResponse {
        seq,
        server_time: Some(timestamp(now)),
        event: Some(event),
    }
}

/// Whether `viewer` sees `event` as every viewer of the room does but the seat it is
/// about: not for a seat's own deal (its hand) nor its own played card (which gives it back
/// its client move id); everything else [`project`] makes alike for every viewer. The
/// viewers who see an event in common get the same bytes of it (given the same seq and
/// server time), so a commit's events can be encoded once and those bytes shared.
pub fn seen_in_common(event: &LogEvent, viewer: Option<u8>) -> bool {
    match event {
        LogEvent::HandDealt { .. } => viewer.is_none(),
        LogEvent::CardPlayed {
            played: Event::CardPlayed { seat, .. },
            ..
        } => viewer != Some(seat.0),
        _ => true,
    }
}

/// The stored event number `seq` as `viewer` may see it (`None`: a spectator). Other
/// seats' dealt cards are hidden by [`Event::for_viewer`]; the client move id goes only to
/// the seat that played.
pub fn project(
    stored: &StoredEvent,
    seq: u64,
    viewer: Option<u8>,
    seats: usize,
    settings: &basra_engine::Settings,
    now: i64,
) -> game::PlayResponse {
    use game::play_response::Event as E;
    let viewer_seat = viewer.map(basra_engine::Seat);
    let event = match &stored.event {
        LogEvent::SeatChanged { seat } => E::SeatChanged(game::SeatChanged {
            seat: Some(seat_to_pb(seat, seats)),
        }),
        LogEvent::MatchStarted {
            match_id,
            ranked,
            seats: snapshots,
            commitment,
        } => E::MatchStarted(game::MatchStarted {
            match_id: match_id.clone(),
            settings: Some(settings_to_pb(settings)),
            ranked: *ranked,
            seats: snapshots.iter().map(|s| seat_to_pb(s, seats)).collect(),
            seed_commitment: commitment.to_vec(),
        }),
        LogEvent::RoundStarted { round, dealer } => E::RoundStarted(game::RoundStarted {
            round: round + 1,
            dealer: u32::from(dealer.0),
        }),
        LogEvent::TableDealt { cards } => E::TableDealt(game::TableDealt {
            cards: cards_to_pb(cards.iter().copied()),
        }),
        LogEvent::HandDealt {
            deals,
            hand_counts,
            deck_remaining,
        } => E::HandDealt(spectator::hand_dealt(
            deals,
            viewer_seat,
            hand_counts.clone(),
            *deck_remaining,
        )),
        LogEvent::CardPlayed {
            played,
            basra_points,
            automatic,
            client_move_id,
        } => E::CardPlayed(
            spectator::card_played(
                played,
                viewer_seat,
                *basra_points,
                *automatic,
                client_move_id,
            )
            .expect("a played card stays a played card"),
        ),
        LogEvent::TurnStarted { seat, deadline_ms } => E::TurnStarted(game::TurnStarted {
            seat: u32::from(seat.0),
            deadline: Some(timestamp(*deadline_ms)),
        }),
        LogEvent::RoundEnded { score, carried } => {
            E::RoundEnded(spectator::round_ended(score, *carried))
        }
        LogEvent::MatchEnded {
            match_id,
            winner_side,
            reason,
            forfeit_seat,
            totals,
            seed,
            close_reason,
        } => E::MatchEnded(game::MatchEnded {
            match_id: match_id.clone(),
            winner_side: winner_side.map(u32::from),
            reason: *reason,
            forfeit_seat: forfeit_seat.map(u32::from),
            totals: totals.to_vec(),
            rating_changes: Vec::new(),
            seed: seed.to_vec(),
            close_reason: close_reason.clone(),
        }),
        LogEvent::ConnectionChanged {
            seat,
            connected,
            grace_deadline_ms,
            ..
        } => E::ConnectionChanged(game::ConnectionChanged {
            seat: u32::from(*seat),
            state: if *connected {
                game::ConnectionState::Connected
            } else {
                game::ConnectionState::Disconnected
            } as i32,
            grace_deadline: grace_deadline_ms.map(timestamp),
        }),
        LogEvent::Chat { seat, phrase } => E::Chat(game::ChatMessage {
            seat: u32::from(*seat),
            phrase: *phrase,
        }),
        LogEvent::RematchOffered {
            seat,
            accepted,
            deadline_ms,
        } => E::RematchOffered(game::RematchOffered {
            seat: u32::from(*seat),
            accepted_seats: accepted.iter().map(|&s| u32::from(s)).collect(),
            deadline: Some(timestamp(*deadline_ms)),
        }),
    };
    server_event(seq, now, event)
}

#[cfg(test)]
mod tests {
    use basra_engine::{Seats, Seed, Settings};

    use super::*;
    use crate::room::Occupant;
    use crate::room::timing::Timing;

    /// Every event of whole matches (deals, plays, round and match ends, connections,
    /// chat, a rematch) in rooms of 2 and 4 seats.
    fn match_events(seats: Seats, seed: u8) -> (Vec<StoredEvent>, usize) {
        let timing = Timing::for_tests();
        let settings = Settings {
            seats,
            ..Settings::default()
        };
        let n = usize::from(settings.seats.count());
        let occupants = (0..n)
            .map(|i| Occupant::Player {
                user_id: format!("u{i}"),
                name: format!("P{i}"),
            })
            .collect();
        let mut room = Room::new(
            "r".into(),
            settings,
            occupants,
            false,
            true,
            crate::room::Visibility::Private,
            timing,
            1,
        );
        room.connect(0, "c0", "replica", 1);
        room.start_if_full(Seed([seed; 32]), "match".into(), 2);
        room.chat(1, 3, 3);
        room.disconnect(0, "c0", 4);
        let mut now = 5;
        while let Some(turn) = room.game.as_ref().and_then(basra_engine::Game::turn) {
            now += 1;
            let play = room.game.as_ref().unwrap().legal_plays()[0];
            room.play(turn.0, play.card, None, false, format!("move-{now}"), now)
                .unwrap();
        }
        room.ask_rematch(0, Seed([seed ^ 1; 32]), "rematch".into(), now + 1)
            .unwrap();
        (room.take_pending(), n)
    }

    /// The viewers who see an event in common get identical messages, and what a seat
    /// sees alone (its hand, its own move ids) nobody else sees.
    #[test]
    fn viewers_who_see_an_event_in_common_get_the_same_message() {
        for (seats, seed) in [(Seats::Two, 7), (Seats::Two, 99), (Seats::Four, 42)] {
            let (events, n) = match_events(seats, seed);
            let settings = Settings {
                seats,
                ..Settings::default()
            };
            let viewers: Vec<Option<u8>> = std::iter::once(None)
                .chain((0..n as u8).map(Some))
                .collect();
            let mut kinds = std::collections::HashSet::new();
            for (i, stored) in events.iter().enumerate() {
                kinds.insert(std::mem::discriminant(&stored.event));
                let seq = i as u64 + 1;
                for &a in &viewers {
                    for &b in &viewers {
                        let pa = project(stored, seq, a, n, &settings, 1_000);
                        let pb = project(stored, seq, b, n, &settings, 1_000);
                        let common =
                            seen_in_common(&stored.event, a) && seen_in_common(&stored.event, b);
                        if common {
                            assert_eq!(pa, pb, "{:?}", stored.event);
                        } else if a != b {
                            assert_ne!(pa, pb, "{:?} for {a:?} and {b:?}", stored.event);
                        }
                    }
                }
            }
            // Deals, plays, turns, round and match ends, connections, chat, rematch.
            assert!(kinds.len() >= 9, "only {} kinds of event", kinds.len());
        }
    }
}
