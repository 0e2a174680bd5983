//! A `WatchEvent` stream's changes (`WatchEventRequest.changes_only`): made by the
//! server from two whole states ([`diff`]), applied by a client to the state it holds
//! ([`apply`]). Written once, so that the two cannot disagree: applying the changes
//! between two states to the first gives the second.

use std::collections::{HashMap, HashSet};

use crate::basra::matchmaking::v1::{
    EventChanges, IndexedStanding, Pairing, Standing, WatchEventResponse,
};

/// What changed from the standings and current-round pairings of the state at
/// `since_version` (`old_*`) to the new ones. The pairings are in table order (the
/// server's whole lists are).
pub fn diff(
    since_version: u64,
    (old_standings, old_pairings): (&[Standing], &[Pairing]),
    (standings, pairings): (&[Standing], &[Pairing]),
) -> EventChanges {
    let changed_standings = standings
        .iter()
        .enumerate()
        .filter(|&(i, row)| old_standings.get(i) != Some(row))
        .map(|(i, row)| IndexedStanding {
            index: i as u32,
            standing: Some(row.clone()),
        })
        .collect();
    let old: HashMap<u32, &Pairing> = old_pairings.iter().map(|p| (p.table, p)).collect();
    let tables: HashSet<u32> = pairings.iter().map(|p| p.table).collect();
    EventChanges {
        since_version,
        standings_count: standings.len() as u32,
        standings: changed_standings,
        pairings: pairings
            .iter()
            .filter(|p| old.get(&p.table) != Some(p))
            .cloned()
            .collect(),
        removed_tables: old_pairings
            .iter()
            .map(|p| p.table)
            .filter(|t| !tables.contains(t))
            .collect(),
    }
}

/// A message that cannot be applied to the state held: reopen the stream with
/// `last_seen_version` 0 (its first message is whole).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ChangesError(pub String);

/// Makes `held` the state `update` stands for: `update` itself when it is whole (it
/// has no `changes`), else `held` with the changes applied (its version and event are
/// the update's; its earlier rounds are kept: changes never span a new round).
pub fn apply(
    held: &mut WatchEventResponse,
    update: WatchEventResponse,
) -> Result<(), ChangesError> {
    let Some(changes) = update.changes else {
        *held = update;
        return Ok(());
    };
    if changes.since_version != held.version {
        return Err(ChangesError(format!(
            "changes since version {} arrived, but the state held is version {}",
            changes.since_version, held.version
        )));
    }
    let count = changes.standings_count as usize;
    held.standings.truncate(count);
    for row in changes.standings {
        let index = row.index as usize;
        let standing = row.standing.unwrap_or_default();
        let len = held.standings.len();
        if index >= count {
            return Err(ChangesError(format!(
                "standings row {index} of a list of {count}"
            )));
        } else if index < len {
            held.standings[index] = standing;
        } else if index == len {
            held.standings.push(standing);
        } else {
            return Err(ChangesError(format!(
                "standings row {index} arrived before row {len}"
            )));
        }
    }
    if held.standings.len() != count {
        return Err(ChangesError(format!(
            "{} standings rows of {count} after the changes",
            held.standings.len()
        )));
    }
    let removed: HashSet<u32> = changes.removed_tables.into_iter().collect();
    held.pairings.retain(|p| !removed.contains(&p.table));
    for pairing in changes.pairings {
        match held
            .pairings
            .binary_search_by_key(&pairing.table, |p| p.table)
        {
            Ok(i) => held.pairings[i] = pairing,
            Err(i) => held.pairings.insert(i, pairing),
        }
    }
    held.version = update.version;
    held.event = update.event;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::basra::matchmaking::v1::PairingResult;

    fn row(user: &str, rank: u32, points: u32) -> Standing {
        Standing {
            rank,
            user_id: user.into(),
            display_name: format!("{user}'s name"),
            points,
            ..Default::default()
        }
    }

    fn pairing(table: u32, winner: &str) -> Pairing {
        Pairing {
            round: 1,
            table,
            user_ids: vec![format!("a{table}"), format!("b{table}")],
            room_id: format!("room-{table}"),
            result: if winner.is_empty() {
                PairingResult::Unspecified as i32
            } else {
                PairingResult::Won as i32
            },
            winner: winner.into(),
            match_id: String::new(),
        }
    }

    fn state(version: u64, standings: Vec<Standing>, pairings: Vec<Pairing>) -> WatchEventResponse {
        WatchEventResponse {
            version,
            standings,
            pairings,
            ..Default::default()
        }
    }

    /// The update carrying the changes from `old` to `new`.
    fn changes(old: &WatchEventResponse, new: &WatchEventResponse) -> WatchEventResponse {
        WatchEventResponse {
            version: new.version,
            changes: Some(diff(
                old.version,
                (&old.standings, &old.pairings),
                (&new.standings, &new.pairings),
            )),
            ..Default::default()
        }
    }

    #[test]
    fn a_result_changes_two_rows_and_one_pairing() {
        let old = state(
            3,
            vec![row("a", 1, 0), row("b", 1, 0), row("c", 1, 0)],
            vec![pairing(1, ""), pairing(2, "")],
        );
        let new = state(
            4,
            vec![row("a", 1, 1), row("b", 1, 0), row("c", 1, 1)],
            vec![pairing(1, "a1"), pairing(2, "")],
        );
        let update = changes(&old, &new);
        let c = update.changes.as_ref().unwrap();
        assert_eq!(
            c.standings.iter().map(|r| r.index).collect::<Vec<_>>(),
            [0, 2]
        );
        assert_eq!(c.pairings, [pairing(1, "a1")]);
        assert!(c.removed_tables.is_empty());
        let mut held = old.clone();
        apply(&mut held, update).unwrap();
        assert_eq!(held, new);
    }

    #[test]
    fn rows_that_move_grow_and_shrink_and_tables_that_leave_come_out_whole() {
        let old = state(
            7,
            vec![
                row("a", 1, 3),
                row("b", 2, 2),
                row("c", 3, 1),
                row("d", 4, 0),
            ],
            (1..=4).map(|t| pairing(t, "")).collect(),
        );
        // c jumps to the top, d leaves, e joins; table 1 scrolls out, 5 arrives.
        let grown = state(
            9,
            vec![
                row("c", 1, 5),
                row("a", 2, 3),
                row("b", 3, 2),
                row("e", 4, 0),
                row("f", 5, 0),
            ],
            (2..=5).map(|t| pairing(t, "")).collect(),
        );
        let shrunk = state(10, vec![row("c", 1, 5)], vec![pairing(5, "a5")]);
        let mut held = old.clone();
        apply(&mut held, changes(&old, &grown)).unwrap();
        assert_eq!(held, grown);
        apply(&mut held, changes(&grown, &shrunk)).unwrap();
        assert_eq!(held, shrunk);
        let c = changes(&grown, &shrunk).changes.unwrap();
        assert_eq!(c.removed_tables, [2, 3, 4]);
        assert!(c.standings.is_empty(), "row 0 is unchanged");
    }

    #[test]
    fn a_whole_update_replaces_what_is_held() {
        let mut held = state(2, vec![row("a", 1, 0)], vec![pairing(1, "")]);
        let whole = state(5, vec![row("z", 1, 9)], vec![]);
        apply(&mut held, whole.clone()).unwrap();
        assert_eq!(held, whole);
    }

    #[test]
    fn changes_to_another_version_or_out_of_place_are_refused_and_leave_the_version() {
        let old = state(3, vec![row("a", 1, 0)], vec![]);
        let new = state(4, vec![row("a", 1, 1)], vec![]);
        let mut held = state(2, vec![row("a", 1, 0)], vec![]);
        let err = apply(&mut held, changes(&old, &new)).unwrap_err();
        assert!(err.0.contains("since version 3"), "{err}");
        assert_eq!(held.version, 2);

        let mut held = old.clone();
        let mut gap = changes(&old, &new);
        let c = gap.changes.as_mut().unwrap();
        c.standings_count = 3;
        c.standings[0].index = 2;
        let err = apply(&mut held, gap).unwrap_err();
        assert!(err.0.contains("row 2 arrived before row 1"), "{err}");
    }
}
