//! Helpers shared by the suites: match records to store, and what they take from testkit
//! (accounts' `spawn_app()` and its [`TestApp`], [`FriendLinks`]) under one roof.
#![allow(dead_code)] // Not every helper is used by every build of the suites.

use basra_proto::basra::accounts::v1 as pb;
use basra_records::{BasraCounts, EndReason, MatchRecord, SeatRecord, side_of};
use chrono::{DateTime, TimeZone, Utc};
use uuid::Uuid;

pub(crate) use basra_testkit::accounts::{FriendLinks, KID, TestApp, spawn_app, test_settings};
pub(crate) use basra_testkit::authed;

/// A fixed time, so records compare equal across stores.
pub(crate) fn at(minute: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 1, 12, 0, 0).unwrap() + chrono::Duration::minutes(minute.into())
}

/// A finished 2-seat match between `a` (seat 0) and `b` (seat 1).
pub(crate) fn duel(
    match_id: &str,
    a: Uuid,
    b: Uuid,
    winner: u8,
    ranked: bool,
    ended: u32,
) -> MatchRecord {
    record(match_id, &[Some(a), Some(b)], Some(winner), ranked, ended)
}

/// A finished match with these seats (`None` = a bot).
pub(crate) fn record(
    match_id: &str,
    seats: &[Option<Uuid>],
    winner: Option<u8>,
    ranked: bool,
    ended: u32,
) -> MatchRecord {
    let settings = basra_engine::Settings {
        seats: if seats.len() == 4 {
            basra_engine::settings::Seats::Four
        } else {
            basra_engine::settings::Seats::Two
        },
        ..Default::default()
    };
    MatchRecord {
        match_id: match_id.to_owned(),
        room_id: format!("room-{match_id}"),
        ranked,
        settings,
        seats: seats
            .iter()
            .enumerate()
            .map(|(i, user)| SeatRecord {
                seat: i as u8,
                side: side_of(i as u8),
                user_id: *user,
                is_bot: user.is_none(),
                display_name: match user {
                    Some(_) => format!("player {i}"),
                    None => format!("bot {i}"),
                },
                fill: None,
                queue_wait_ms: None,
            })
            .collect(),
        seed: [7; 32],
        actions: Vec::new(),
        rounds: Vec::new(),
        final_totals: vec![
            if winner == Some(0) { 101 } else { 40 },
            if winner == Some(1) { 101 } else { 40 },
        ],
        basra_counts: vec![
            BasraCounts {
                basra: 2,
                jack: 1,
                komi: 0,
            },
            BasraCounts {
                basra: 1,
                jack: 0,
                komi: 1,
            },
        ],
        winner_side: winner,
        end_reason: if winner.is_some() {
            EndReason::TargetReached
        } else {
            EndReason::Closed
        },
        started_at: at(ended.saturating_sub(20)),
        ended_at: at(ended),
        allow_spectators: false,
        event_id: None,
    }
}

/// The tokens of a sign-in response.
pub(crate) fn tokens(t: Option<pb::AuthTokens>) -> pb::AuthTokens {
    t.expect("the response carries tokens")
}
