//! What `basra admin` prints: times in ISO 8601 with their zone (UTC, `Z`), tables and
//! labelled lines for a person, and one JSON document per command under `--json`.

use basra_proto::basra::common::v1::{GameView, RoomStatus, SeatOccupant};
use basra_proto::basra::game::v1::{DrainReplicaResponse, GetRoomResponse, UndrainReplicaResponse};
use serde_json::{Value, json};

/// A protobuf time as ISO 8601 in UTC (`2026-12-05T00:45:00Z`); `None` when absent.
pub fn iso(time: Option<&prost_types::Timestamp>) -> Option<String> {
    let time = time?;
    chrono::DateTime::from_timestamp(time.seconds, time.nanos.max(0) as u32)
        .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
}

/// `basra admin player ban`'s answer (a ban for good ends far in the future).
pub fn ban(
    user_id: &str,
    until: Option<&prost_types::Timestamp>,
    for_good: bool,
    json: bool,
) -> String {
    let until = iso(until);
    if json {
        return json!({ "user_id": user_id, "banned_until": until, "for_good": for_good })
            .to_string();
    }
    match until {
        Some(_) if for_good => format!("banned {user_id} for good"),
        Some(until) => format!("banned {user_id} until {until}"),
        None => format!("banned {user_id}"),
    }
}

/// `basra admin drain`'s answer.
pub fn drain(drained: &DrainReplicaResponse, json: bool) -> String {
    let deadline = iso(drained.drain_deadline.as_ref());
    if json {
        return json!({
            "replica": drained.replica,
            "open_streams": drained.streams,
            "deadline": deadline,
        })
        .to_string();
    }
    format!(
        "draining {}: {} open streams, ending by {}",
        drained.replica,
        drained.streams,
        deadline.as_deref().unwrap_or("(no deadline)")
    )
}

/// `basra admin undrain`'s answer.
pub fn undrain(undrained: &UndrainReplicaResponse, json: bool) -> String {
    if json {
        return json!({
            "replica": undrained.replica,
            "was_draining": undrained.was_draining,
        })
        .to_string();
    }
    if undrained.was_draining {
        format!(
            "{} serves again: new streams and rooms are welcome",
            undrained.replica
        )
    } else {
        format!("{} was not draining: nothing changed", undrained.replica)
    }
}

fn status_name(status: i32) -> String {
    RoomStatus::try_from(status)
        .map(|s| {
            s.as_str_name()
                .trim_start_matches("ROOM_STATUS_")
                .to_ascii_lowercase()
                .replace('_', "-")
        })
        .unwrap_or_else(|_| status.to_string())
}

fn occupant(seat: &basra_proto::basra::common::v1::SeatInfo) -> String {
    match SeatOccupant::try_from(seat.occupant) {
        Ok(SeatOccupant::Open) => "empty".into(),
        Ok(SeatOccupant::Bot) => "computer".into(),
        Ok(SeatOccupant::Player) if seat.is_guest => "guest".into(),
        Ok(SeatOccupant::Player) => "player".into(),
        _ => seat.occupant.to_string(),
    }
}

fn view_json(view: &GameView) -> Value {
    json!({
        "room_id": view.room_id,
        "match_id": view.match_id,
        "status": status_name(view.status),
        "ranked": view.ranked,
        "round": view.round,
        "totals": view.totals,
        "pile_sizes": view.pile_sizes,
        "turn": view.turn,
        "turn_deadline": iso(view.turn_deadline.as_ref()),
        "deck_remaining": view.deck_remaining,
        "seed_commitment": basra_engine::deck::hex(&view.seed_commitment),
        "seats": view.seats.iter().map(|seat| json!({
            "seat": seat.seat,
            "side": seat.side,
            "occupant": occupant(seat),
            "user_id": seat.user_id,
            "display_name": seat.display_name,
            "connected": seat.connected,
        })).collect::<Vec<_>>(),
    })
}

/// `basra admin room`'s answer: the room's public view and its streams.
pub fn room(room: &GetRoomResponse, json: bool) -> String {
    let streams: Vec<Value> = room
        .streams
        .iter()
        .map(|stream| {
            json!({
                "seat": stream.seat,
                "user_id": stream.user_id,
                "replica": stream.replica,
                "delivered_seq": stream.delivered_seq,
            })
        })
        .collect();
    if json {
        return json!({
            "room_id": room.summary.as_ref().map(|s| s.room_id.clone()),
            "streams": streams,
            "view": room.public_view.as_ref().map(view_json),
        })
        .to_string();
    }
    let mut out = String::new();
    if let Some(summary) = &room.summary {
        out.push_str(&crate::admin::rooms_table(std::slice::from_ref(summary)));
    }
    if let Some(view) = &room.public_view {
        let totals: Vec<String> = view.totals.iter().map(u32::to_string).collect();
        out.push_str(&format!(
            "status {} · round {} · totals {} · deck {} · turn {}{}\n",
            status_name(view.status),
            view.round,
            totals.join("–"),
            view.deck_remaining,
            view.turn.map_or("-".into(), |t| format!("seat {t}")),
            iso(view.turn_deadline.as_ref())
                .map(|d| format!(" until {d}"))
                .unwrap_or_default()
        ));
        out.push_str(&format!(
            "seed commitment {}\n",
            basra_engine::deck::hex(&view.seed_commitment)
        ));
        out.push_str(&format!(
            "{:<5} {:<5} {:<9} {:<38} {:<24} {}\n",
            "SEAT", "SIDE", "WHO", "USER", "NAME", "CONNECTED"
        ));
        for seat in &view.seats {
            out.push_str(&format!(
                "{:<5} {:<5} {:<9} {:<38} {:<24} {}\n",
                seat.seat,
                seat.side,
                occupant(seat),
                seat.user_id,
                seat.display_name,
                if seat.connected { "yes" } else { "no" }
            ));
        }
    }
    out.push_str(&format!(
        "{:<10} {:<38} {:<24} {}\n",
        "STREAM", "USER", "REPLICA", "DELIVERED"
    ));
    for stream in &room.streams {
        out.push_str(&format!(
            "{:<10} {:<38} {:<24} {}\n",
            stream
                .seat
                .map_or("spectator".into(), |s| format!("seat {s}")),
            stream.user_id,
            stream.replica,
            stream.delivered_seq
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_iso_8601_in_utc_and_json_says_the_same() {
        let until = prost_types::Timestamp {
            seconds: 1_796_426_404,
            nanos: 0,
        };
        assert_eq!(
            ban("u1", Some(&until), false, false),
            "banned u1 until 2026-12-04T23:20:04Z"
        );
        assert_eq!(ban("u1", Some(&until), true, false), "banned u1 for good");
        let parsed: Value = serde_json::from_str(&ban("u1", Some(&until), false, true)).unwrap();
        assert_eq!(parsed["banned_until"], "2026-12-04T23:20:04Z");
        let drained = DrainReplicaResponse {
            replica: "r1".into(),
            streams: 3,
            drain_deadline: Some(until),
        };
        assert_eq!(
            drain(&drained, false),
            "draining r1: 3 open streams, ending by 2026-12-04T23:20:04Z"
        );
    }
}
