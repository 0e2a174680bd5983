//! Every form of a match record that accounts has stored so far still decodes, to the same
//! record: a row written before the binary action log (JSON `actions`), and the binary log
//! of each version. The fixtures in `tests/fixtures/` are frozen copies of what was
//! written (the JSON columns as PostgreSQL hands them back); never regenerate them: a
//! new stored form adds its own fixture, and an old one that stops decoding is a broken
//! database, not a stale test.
//!
//! - `row-json-log.json`: the JSON columns of one `matches` row (a four-seat match with
//!   a bot, timed-out plays and named captures), with its seed in hex.
//! - `action-log-v1.hex`: the same match's action log in binary version 1.

use std::path::{Path, PathBuf};

use basra_engine::{Action, CardSet, Game, Seat, Seed, Settings};
use basra_records::action_log::{self, VERSION};
use basra_records::stored::{SeatInfo, StoredLog};
use basra_records::{
    ActionKind, ActionRecord, BasraCounts, EndReason, RoundRecord, SeatRecord, side_of,
};
use serde::de::DeserializeOwned;
use serde_json::Value;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn row() -> Value {
    serde_json::from_str(&std::fs::read_to_string(fixture("row-json-log.json")).unwrap()).unwrap()
}

fn column<T: DeserializeOwned>(row: &Value, name: &str) -> T {
    serde_json::from_value(row[name].clone())
        .unwrap_or_else(|e| panic!("column {name} no longer decodes: {e}"))
}

fn hex(text: &str) -> Vec<u8> {
    let text = text.trim();
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).unwrap())
        .collect()
}

fn binary_log(version: u8) -> Vec<u8> {
    hex(&std::fs::read_to_string(fixture(&format!("action-log-v{version}.hex"))).unwrap())
}

#[test]
fn every_json_column_of_a_stored_row_still_decodes() {
    let row = row();
    let settings: Settings = column(&row, "settings");
    assert_eq!(settings.seat_count(), 4);
    let seats: Vec<SeatRecord> = column(&row, "seats");
    assert_eq!(seats.len(), 4);
    for (index, seat) in seats.iter().enumerate() {
        assert_eq!(usize::from(seat.seat), index);
        assert_eq!(seat.side, side_of(seat.seat));
        assert_eq!(seat.user_id.is_none(), seat.is_bot);
    }
    // The analyst view drops the display names: the same column reads without them.
    let without_names: Vec<Value> = column::<Vec<Value>>(&row, "seats")
        .into_iter()
        .map(|mut seat| {
            seat.as_object_mut().unwrap().remove("display_name");
            seat
        })
        .collect();
    let infos: Vec<SeatInfo> = serde_json::from_value(Value::Array(without_names)).unwrap();
    assert_eq!(infos.len(), 4);
    assert!(
        infos
            .iter()
            .zip(&seats)
            .all(|(i, s)| i.user_id == s.user_id)
    );

    let actions: Vec<ActionRecord> = column(&row, "actions");
    assert!(actions.iter().any(|a| a.automatic));
    assert!(actions.iter().any(|a| matches!(
        &a.action,
        ActionKind::Play {
            capture: Some(_),
            ..
        }
    )));
    let rounds: Vec<RoundRecord> = column(&row, "rounds");
    let totals: Vec<u32> = column(&row, "final_totals");
    let basras: Vec<BasraCounts> = column(&row, "basra_counts");
    assert_eq!((totals.len(), basras.len()), (2, 2));
    if let Some(last) = rounds.last() {
        let last_totals: Vec<u32> = last.sides.iter().map(|s| s.total).collect();
        assert_eq!(last_totals, totals);
    }
    let reason = row["end_reason"].as_str().unwrap();
    assert_eq!(EndReason::from_name(reason).unwrap().as_str(), reason);
}

#[test]
fn there_is_a_fixture_for_every_binary_version_and_each_reads_as_the_json_row() {
    let json: Vec<ActionRecord> = column(&row(), "actions");
    for version in 1..=VERSION {
        let bytes = binary_log(version);
        assert_eq!(bytes[0], version);
        let decoded = StoredLog::Binary(&bytes).decode().unwrap();
        assert_eq!(decoded, json, "binary version {version}");
    }
    assert_eq!(StoredLog::Json(json.clone()).decode().unwrap(), json);
}

#[test]
fn the_writer_still_writes_the_current_version_byte_for_byte() {
    let json: Vec<ActionRecord> = column(&row(), "actions");
    assert_eq!(action_log::encode(&json), binary_log(VERSION));
}

#[test]
fn the_stored_match_replays_through_the_engine_to_its_stored_totals() {
    let row = row();
    let settings: Settings = column(&row, "settings");
    let seed: [u8; 32] = hex(row["seed"].as_str().unwrap()).try_into().unwrap();
    let (mut game, _) = Game::new(settings, Seed(seed)).unwrap();
    for logged in column::<Vec<ActionRecord>>(&row, "actions") {
        let seat = Seat(logged.seat);
        let action = match logged.action {
            ActionKind::Play { card, capture } => Action::Play {
                seat,
                card,
                take: capture.map(|cards| {
                    let mut set = CardSet::default();
                    for card in cards {
                        set.insert(card);
                    }
                    set
                }),
            },
            ActionKind::Resign => Action::Resign { seat },
        };
        game.apply(&action).unwrap();
    }
    assert_eq!(
        game.totals().to_vec(),
        column::<Vec<u32>>(&row, "final_totals")
    );
}
