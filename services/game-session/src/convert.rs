//! Between the engine, the stored room and the protobuf API. Everything a client
//! receives is made here, from the engine's per-seat [`View`](basra_engine::View) or an
//! event passed through [`Event::for_viewer`].

use basra_engine::{BasraKind, Card, CardSet, Event, KomiBasra, MajorityTie, Rank, Seats, Suit};
use basra_proto::basra::common::v1 as pb;
use basra_proto::basra::game::v1 as game;
use prost_types::Timestamp;

use crate::events::{LogEvent, StoredEvent};
use crate::room::{Occupant, Room, SeatSnapshot, Status};

/// A Unix-milliseconds instant as a protobuf timestamp.
pub fn timestamp(ms: i64) -> Timestamp {
    Timestamp {
        seconds: ms.div_euclid(1000),
        nanos: (ms.rem_euclid(1000) * 1_000_000) as i32,
    }
}

/// The engine card as a protobuf card.
pub fn card_to_pb(card: Card) -> pb::Card {
    pb::Card {
        rank: i32::from(card.rank().number()),
        suit: card.suit() as i32 + 1,
    }
}

/// The cards of a set, in index order.
pub fn cards_to_pb(cards: impl IntoIterator<Item = Card>) -> Vec<pb::Card> {
    cards.into_iter().map(card_to_pb).collect()
}

/// A protobuf card as an engine card, or why it is malformed.
pub fn card_from_pb(card: &pb::Card) -> Result<Card, String> {
    let rank = u8::try_from(card.rank)
        .ok()
        .and_then(Rank::new)
        .ok_or_else(|| format!("rank {} is not a card rank (1..13)", card.rank))?;
    let suit = usize::try_from(card.suit)
        .ok()
        .and_then(|s| s.checked_sub(1))
        .and_then(|s| Suit::ALL.get(s).copied())
        .ok_or_else(|| format!("suit {} is not a card suit (1..4)", card.suit))?;
    Ok(Card::new(rank, suit))
}

/// Rule settings from the API (unset fields take the defaults), validated.
pub fn settings_from_pb(
    settings: Option<&pb::RuleSettings>,
) -> Result<basra_engine::Settings, String> {
    let mut out = basra_engine::Settings::default();
    let Some(s) = settings else { return Ok(out) };
    if let Some(seats) = s.seats {
        out.seats = match seats {
            2 => Seats::Two,
            4 => Seats::Four,
            other => return Err(format!("settings.seats must be 2 or 4, not {other}")),
        };
    }
    if let Some(v) = s.clean_start_table {
        out.clean_start_table = v;
    }
    if let Some(v) = s.allow_partial_capture {
        out.allow_partial_capture = v;
    }
    match s.komi_basra.map(pb::KomiBasra::try_from) {
        None | Some(Ok(pb::KomiBasra::Unspecified)) => {}
        Some(Ok(pb::KomiBasra::AnyValue)) => out.komi_basra = KomiBasra::AnyValue,
        Some(Ok(pb::KomiBasra::SumAtMost10)) => out.komi_basra = KomiBasra::SumAtMost10,
        Some(Ok(pb::KomiBasra::SingleCard)) => out.komi_basra = KomiBasra::SingleCard,
        Some(Err(_)) => return Err("settings.komi_basra is out of range".into()),
    }
    match s.majority_tie.map(pb::MajorityTie::try_from) {
        None | Some(Ok(pb::MajorityTie::Unspecified)) => {}
        Some(Ok(pb::MajorityTie::Nobody)) => out.majority_tie = MajorityTie::Nobody,
        Some(Ok(pb::MajorityTie::Both)) => out.majority_tie = MajorityTie::Both,
        Some(Ok(pb::MajorityTie::CarryOver)) => out.majority_tie = MajorityTie::CarryOver,
        Some(Err(_)) => return Err("settings.majority_tie is out of range".into()),
    }
    if let Some(v) = s.basra_points {
        out.basra_points = v;
    }
    if let Some(v) = s.jack_basra_points {
        out.jack_basra_points = v;
    }
    if let Some(v) = s.komi_basra_points {
        out.komi_basra_points = v;
    }
    if let Some(v) = s.last_card_basra {
        out.last_card_basra = v;
    }
    if let Some(v) = s.majority_points {
        out.majority_points = v;
    }
    if let Some(v) = s.card_points {
        out.card_points = v;
    }
    if let Some(v) = s.target_score {
        out.target_score = v;
    }
    out.validate().map_err(|e| format!("settings: {e}"))
}

/// Engine settings with every API field set.
pub fn settings_to_pb(s: &basra_engine::Settings) -> pb::RuleSettings {
    pb::RuleSettings {
        seats: Some(u32::from(s.seat_count())),
        clean_start_table: Some(s.clean_start_table),
        allow_partial_capture: Some(s.allow_partial_capture),
        komi_basra: Some(match s.komi_basra {
            KomiBasra::AnyValue => pb::KomiBasra::AnyValue,
            KomiBasra::SumAtMost10 => pb::KomiBasra::SumAtMost10,
            KomiBasra::SingleCard => pb::KomiBasra::SingleCard,
        } as i32),
        basra_points: Some(s.basra_points),
        jack_basra_points: Some(s.jack_basra_points),
        komi_basra_points: Some(s.komi_basra_points),
        last_card_basra: Some(s.last_card_basra),
        majority_points: Some(s.majority_points),
        majority_tie: Some(match s.majority_tie {
            MajorityTie::Nobody => pb::MajorityTie::Nobody,
            MajorityTie::Both => pb::MajorityTie::Both,
            MajorityTie::CarryOver => pb::MajorityTie::CarryOver,
        } as i32),
        card_points: Some(s.card_points),
        target_score: Some(s.target_score),
    }
}

/// The API's Basra kind.
pub fn basra_to_pb(kind: Option<BasraKind>) -> pb::BasraKind {
    match kind {
        None => pb::BasraKind::None,
        Some(BasraKind::Basra) => pb::BasraKind::Basra,
        Some(BasraKind::Jack) => pb::BasraKind::Jack,
        Some(BasraKind::Komi) => pb::BasraKind::Komi,
    }
}

/// The API's room status.
pub fn status_to_pb(status: Status) -> pb::RoomStatus {
    match status {
        Status::Waiting => pb::RoomStatus::Waiting,
        Status::InProgress => pb::RoomStatus::InProgress,
        Status::Finished => pb::RoomStatus::Finished,
        Status::Closed => pb::RoomStatus::Closed,
    }
}

/// A bot's display name.
fn bot_name(level: i32) -> String {
    match pb::BotLevel::try_from(level) {
        Ok(pb::BotLevel::Easy) => "Bot (easy)".into(),
        Ok(pb::BotLevel::Hard) => "Bot (hard)".into(),
        _ => "Bot".into(),
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
        Occupant::Player { user_id } => {
            info.occupant = pb::SeatOccupant::Player as i32;
            info.user_id = user_id.clone();
            info.display_name = format!("Player {}", seat.seat + 1);
            info.connected = seat.connected;
        }
        Occupant::Bot { level } => {
            info.occupant = pb::SeatOccupant::Bot as i32;
            info.display_name = bot_name(*level);
            info.bot_level = *level;
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
pub fn snapshot(room: &Room, viewer: Option<u8>, seq: u64, now: i64) -> game::ServerEvent {
    server_event(
        seq,
        now,
        game::server_event::Event::Snapshot(Box::new(game::Snapshot {
            view: Some(game_view(room, viewer)),
        })),
    )
}

/// A server event.
pub fn server_event(seq: u64, now: i64, event: game::server_event::Event) -> game::ServerEvent {
    game::ServerEvent {
        seq,
        server_time: Some(timestamp(now)),
        event: Some(event),
    }
}

/// A round score as the API's per-side scores.
pub fn side_scores(score: &basra_engine::RoundScore) -> Vec<pb::SideRoundScore> {
    (0..2)
        .map(|side| pb::SideRoundScore {
            side: side as u32,
            pile_size: u32::from(score.piles[side]),
            basras: Some(pb::BasraCounts {
                basra: u32::from(score.basras[side][0]),
                jack: u32::from(score.basras[side][1]),
                komi: u32::from(score.basras[side][2]),
            }),
            basra_points: score.basra_points[side],
            majority_points: score.majority_points[side],
            card_points: score.card_points[side],
            round_points: score.points[side],
            total: score.totals[side],
        })
        .collect()
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
) -> game::ServerEvent {
    use game::server_event::Event as E;
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
        } => {
            let mine = deals
                .iter()
                .map(|deal| deal.for_viewer(viewer_seat))
                .find_map(|deal| match deal {
                    Event::HandDealt {
                        cards: Some(cards), ..
                    } => Some(cards),
                    _ => None,
                })
                .unwrap_or(CardSet::EMPTY);
            E::HandDealt(game::HandDealt {
                cards: cards_to_pb(mine),
                hand_counts: hand_counts.clone(),
                deck_remaining: *deck_remaining,
            })
        }
        LogEvent::CardPlayed {
            played,
            basra_points,
            automatic,
            client_move_id,
        } => match played.for_viewer(viewer_seat) {
            Event::CardPlayed {
                seat,
                card,
                taken,
                basra,
            } => E::CardPlayed(game::CardPlayed {
                seat: u32::from(seat.0),
                card: Some(card_to_pb(card)),
                taken: cards_to_pb(taken),
                basra: basra_to_pb(basra) as i32,
                basra_points: *basra_points,
                automatic: *automatic,
                client_move_id: if viewer_seat == Some(seat) {
                    client_move_id.clone()
                } else {
                    String::new()
                },
            }),
            _ => unreachable!("a played card stays a played card"),
        },
        LogEvent::TurnStarted { seat, deadline_ms } => E::TurnStarted(game::TurnStarted {
            seat: u32::from(seat.0),
            deadline: Some(timestamp(*deadline_ms)),
        }),
        LogEvent::RoundEnded { score, carried } => E::RoundEnded(game::RoundEnded {
            round: score.round + 1,
            leftover: cards_to_pb(score.leftovers),
            last_capturer: score.last_capturer.map(|s| u32::from(s.0)),
            sides: side_scores(score),
            carried_majority_points: *carried,
        }),
        LogEvent::MatchEnded {
            match_id,
            winner_side,
            reason,
            forfeit_seat,
            totals,
            seed,
        } => E::MatchEnded(game::MatchEnded {
            match_id: match_id.clone(),
            winner_side: winner_side.map(u32::from),
            reason: *reason,
            forfeit_seat: forfeit_seat.map(u32::from),
            totals: totals.to_vec(),
            rating_changes: Vec::new(),
            seed: seed.to_vec(),
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
