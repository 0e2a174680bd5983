//! Stored events ⇄ API messages.

use std::collections::HashMap;

use basra_events::{Outcome, Standing, TieBreaks};
use basra_proto::basra::matchmaking::v1 as pb;
use basra_proto::convert::timestamp;

use super::model::{EntryRecord, EntryStatus, EventRecord, Status};
use super::play::{LiveMatch, user_of};
use crate::clock::Millis;

/// An event as the API shows it at `now`.
pub(crate) fn event(e: &EventRecord, now: Millis) -> pb::Event {
    let status = match e.status(now) {
        Status::Scheduled => pb::EventStatus::Scheduled,
        Status::Registration => pb::EventStatus::Registration,
        Status::Running => pb::EventStatus::Running,
        Status::Finished => pb::EventStatus::Finished,
        Status::Cancelled => pb::EventStatus::Cancelled,
    };
    let ends_at = e
        .arena_ends_at()
        .or((e.ended_at_ms > 0).then_some(e.ended_at_ms))
        .map(timestamp);
    let rounds_total = match e.spec.format {
        super::spec::Format::Swiss { rounds } if e.rounds_total == 0 => rounds,
        _ => e.rounds_total,
    };
    pb::Event {
        event_id: e.id.clone(),
        series_id: e.series_id.clone().unwrap_or_default(),
        definition: Some(e.spec.to_pb(e.starts_at_ms)),
        status: status as i32,
        starts_at: Some(timestamp(e.starts_at_ms)),
        registration_opens_at: e.spec.registration_opens_at(e.starts_at_ms).map(timestamp),
        check_in_opens_at: Some(timestamp(e.spec.check_in_opens_at(e.starts_at_ms))),
        ends_at,
        registered: e.registered,
        current_round: e.current_round,
        rounds_total,
        cancel_reason: e.cancel_reason.clone(),
        champion: e.champion.clone().unwrap_or_default(),
    }
}

/// A player's entry.
pub(crate) fn entry(e: &EntryRecord) -> pb::Entry {
    let status = match e.status {
        EntryStatus::Registered => pb::EntryStatus::Registered,
        EntryStatus::CheckedIn => pb::EntryStatus::CheckedIn,
        EntryStatus::Playing => pb::EntryStatus::Playing,
        EntryStatus::Eliminated => pb::EntryStatus::Eliminated,
        EntryStatus::Withdrawn => pb::EntryStatus::Withdrawn,
        EntryStatus::Paused => pb::EntryStatus::Paused,
        EntryStatus::NotCheckedIn => pb::EntryStatus::NotCheckedIn,
        EntryStatus::Finished => pb::EntryStatus::Finished,
    };
    pb::Entry {
        status: status as i32,
        registered_at: Some(timestamp(e.registered_at_ms)),
        rank: e.rank,
    }
}

/// A standings row, with the player's name when known.
pub(crate) fn standing(s: &Standing, names: &HashMap<String, String>) -> pb::Standing {
    let user = user_of(s.player);
    let mut row = pb::Standing {
        rank: s.rank,
        display_name: names.get(&user).cloned().unwrap_or_default(),
        user_id: user,
        points: s.points,
        played: s.played,
        ..Default::default()
    };
    match s.tie_breaks {
        TieBreaks::Knockout { reached } => row.round_reached = reached,
        TieBreaks::Swiss {
            buchholz_cut1,
            buchholz,
            sonneborn_berger,
        } => {
            row.buchholz_cut1 = buchholz_cut1;
            row.buchholz = buchholz;
            row.sonneborn_berger = sonneborn_berger;
        }
        TieBreaks::Arena { performance } => row.performance = performance,
    }
    row
}

/// A match of the event.
pub(crate) fn pairing(m: &LiveMatch) -> pb::Pairing {
    let result = match m.outcome {
        None => pb::PairingResult::Unspecified,
        Some(Outcome::Won(_)) => pb::PairingResult::Won,
        Some(Outcome::Forfeit { .. }) => pb::PairingResult::Forfeit,
        Some(Outcome::BothAbsent) => pb::PairingResult::BothAbsent,
    };
    pb::Pairing {
        round: m.round,
        table: m.table,
        user_ids: m.players.to_vec(),
        room_id: if m.created {
            m.room_id.clone()
        } else {
            String::new()
        },
        result: result as i32,
        winner: m.winner().unwrap_or_default(),
        match_id: m.match_id.clone(),
    }
}
