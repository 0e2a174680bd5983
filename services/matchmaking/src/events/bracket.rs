//! The rounds before the current one, for a watcher who (re)opens mid-event
//! (`WatchEventResponse.earlier_pairings`): from the live state while it is kept, from
//! the stored results of a finished event once it has expired. Pure.

use basra_proto::basra::matchmaking::v1 as pb;

use super::convert;
use super::model::ResultRecord;
use super::play::LiveEvent;

/// The most pairings one message carries in `earlier_pairings` (the .proto says so).
pub(crate) const MAX_EARLIER: usize = 8_192;

/// A knockout's or Swiss' matches of rounds `from..to` (an arena has no rounds: none), by
/// round then table, at most [`MAX_EARLIER`]: the latest whole rounds that fit.
pub(crate) fn earlier(live: &LiveEvent, from: u32, to: u32) -> Vec<pb::Pairing> {
    let mut rows: Vec<pb::Pairing> = live
        .matches
        .iter()
        .filter(|m| m.round >= from.max(1) && m.round < to)
        .map(convert::pairing)
        .collect();
    sorted_and_capped(&mut rows);
    rows
}

/// A finished event's pairings rebuilt from its stored results (keys `r<round>t<table>`;
/// an arena's `a<n>` are not rounds): the current round's, and the earlier rounds'.
pub(crate) fn from_results(
    results: &[ResultRecord],
    current: u32,
) -> (Vec<pb::Pairing>, Vec<pb::Pairing>) {
    let (mut now, mut before): (Vec<pb::Pairing>, Vec<pb::Pairing>) = results
        .iter()
        .filter_map(|r| {
            let (round, table) = round_and_table(&r.match_key)?;
            let result = match r.outcome.as_str() {
                "won" => pb::PairingResult::Won,
                "forfeit" => pb::PairingResult::Forfeit,
                _ => pb::PairingResult::BothAbsent,
            };
            Some(pb::Pairing {
                round,
                table,
                user_ids: r.players.to_vec(),
                room_id: r.room_id.clone(),
                result: result as i32,
                winner: r.winner.clone().unwrap_or_default(),
                match_id: r.match_id.clone(),
            })
        })
        .filter(|p| p.round <= current)
        .partition(|p| p.round == current);
    now.sort_by_key(|p| p.table);
    sorted_and_capped(&mut before);
    (now, before)
}

fn sorted_and_capped(rows: &mut Vec<pb::Pairing>) {
    rows.sort_by_key(|p| (p.round, p.table));
    if rows.len() > MAX_EARLIER {
        // Whole rounds: drop the first round that is cut, too.
        let cut = rows.len() - MAX_EARLIER;
        let first_kept =
            rows[cut].round + u32::from(cut > 0 && rows[cut - 1].round == rows[cut].round);
        rows.retain(|p| p.round >= first_kept);
    }
}

/// `r3t12` → (3, 12).
fn round_and_table(key: &str) -> Option<(u32, u32)> {
    let (round, table) = key.strip_prefix('r')?.split_once('t')?;
    Some((round.parse().ok()?, table.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use basra_events::{Entrant, Knockout, Outcome};
    use prost::Message;

    use super::*;
    use crate::events::play::{LiveMatch, Play, player_of, room_id, user_of};

    fn user(i: usize) -> String {
        uuid::Uuid::from_u128(0x0190_0000_0000_7000_8000_0000_0000_0000 + i as u128).to_string()
    }

    /// A knockout played to its final (the better seed wins each match): every earlier
    /// round has its results, the final none yet.
    fn knockout_at_its_final(players: usize) -> LiveEvent {
        let entrants: Vec<Entrant> = (0..players)
            .map(|i| Entrant::new(player_of(&user(i)), 2000 - i as i32))
            .collect();
        let mut k = Knockout::new(&entrants).unwrap();
        let mut matches = Vec::new();
        loop {
            let round = k.current_round();
            let tables: Vec<_> = k.round(round).unwrap().to_vec();
            for t in tables {
                let ([Some(a), Some(b)], None) = (t.players, t.outcome) else {
                    continue;
                };
                let key = format!("r{}t{}", t.id.round, t.id.table);
                let last = round == k.rounds_total();
                let outcome = (!last).then_some(Outcome::Won(a));
                if let Some(o) = outcome {
                    k.record(t.id, o).unwrap();
                }
                matches.push(LiveMatch {
                    room_id: room_id("0190aaaa-0000-7000-8000-000000000001", &key),
                    key,
                    round: t.id.round,
                    table: t.id.table,
                    players: [user_of(a), user_of(b)],
                    created: true,
                    ready_at_ms: 0,
                    deadline_ms: 0,
                    outcome,
                    recorded: outcome.is_some(),
                    told: true,
                    // A played match's id (game-session's: a UUID), as a replay offers it.
                    match_id: if outcome.is_some() {
                        uuid::Uuid::now_v7().to_string()
                    } else {
                        String::new()
                    },
                });
            }
            if round == k.rounds_total() {
                break;
            }
        }
        LiveEvent {
            play: Play::Knockout(k),
            matches,
            ratings: Default::default(),
        }
    }

    /// The size the .proto states: a knockout of 1,024 (and of 4,096, the most players
    /// an event takes) at its final, the largest earlier_pairings it sends.
    #[test]
    fn a_1024_knockout_at_its_final_sends_1022_earlier_pairings_in_under_230_kb() {
        let live = knockout_at_its_final(1024);
        let (current, total) = live.rounds();
        assert_eq!((current, total), (10, 10));
        let rows = earlier(&live, 0, current);
        assert_eq!(rows.len(), 1022);
        assert!(
            rows.iter()
                .all(|p| p.result == pb::PairingResult::Won as i32)
        );
        assert!(
            rows.windows(2)
                .all(|w| (w[0].round, w[0].table) < (w[1].round, w[1].table))
        );
        let bytes = encoded(rows);
        println!("1,024 knockout at its final: earlier_pairings {bytes} bytes");
        assert!((200_000..230_000).contains(&bytes), "{bytes} bytes");
        // Only the rounds asked for: a stream that saw round 8 gets rounds 8 and 9.
        let rounds: Vec<u32> = earlier(&live, 8, 10).iter().map(|p| p.round).collect();
        assert_eq!(rounds, [8, 8, 8, 8, 9, 9]);

        let live = knockout_at_its_final(4096);
        let rows = earlier(&live, 0, live.rounds().0);
        assert_eq!(rows.len(), 4094);
        let bytes = encoded(rows);
        println!("4,096 knockout at its final: earlier_pairings {bytes} bytes");
        assert!(bytes < 900_000, "{bytes} bytes");
    }

    fn encoded(rows: Vec<pb::Pairing>) -> usize {
        pb::WatchEventResponse {
            earlier_pairings: rows,
            ..Default::default()
        }
        .encoded_len()
    }

    #[test]
    fn over_the_cap_the_latest_whole_rounds_are_sent() {
        let mut rows: Vec<pb::Pairing> = (1..=3)
            .flat_map(|round| {
                (1..=MAX_EARLIER as u32 / 2).map(move |table| pb::Pairing {
                    round,
                    table,
                    ..Default::default()
                })
            })
            .collect();
        sorted_and_capped(&mut rows);
        assert_eq!(rows.len(), MAX_EARLIER);
        assert_eq!(rows[0].round, 2);
        rows.push(pb::Pairing {
            round: 4,
            table: 1,
            ..Default::default()
        });
        sorted_and_capped(&mut rows);
        assert!(rows.iter().all(|p| p.round >= 3), "round 2 cut whole");
    }

    #[test]
    fn stored_results_give_back_the_rounds() {
        let result = |key: &str, winner: Option<&str>, outcome: &str| ResultRecord {
            event_id: "e".into(),
            match_key: key.into(),
            room_id: format!("ev-e-{key}"),
            players: [user(1), user(2)],
            winner: winner.map(str::to_owned),
            outcome: outcome.into(),
            recorded_at_ms: 0,
            match_id: if outcome == "won" {
                format!("m-{key}")
            } else {
                String::new()
            },
        };
        let u1 = user(1);
        let u2 = user(2);
        let results = [
            result("r2t1", Some(&u2), "won"),
            result("r1t2", Some(&u1), "forfeit"),
            result("r1t1", None, "both_absent"),
            result("a7", Some(&u1), "won"),
        ];
        let (now, before) = from_results(&results, 2);
        assert_eq!(now.len(), 1);
        assert_eq!(
            (now[0].round, now[0].table, now[0].winner.as_str()),
            (2, 1, u2.as_str())
        );
        // A played match's pairing offers its replay; a forfeit or an absence none.
        assert_eq!(now[0].match_id, "m-r2t1");
        assert!(before.iter().all(|p| p.match_id.is_empty()), "{before:?}");
        let got: Vec<(u32, u32, i32)> = before
            .iter()
            .map(|p| (p.round, p.table, p.result))
            .collect();
        assert_eq!(
            got,
            [
                (1, 1, pb::PairingResult::BothAbsent as i32),
                (1, 2, pb::PairingResult::Forfeit as i32)
            ]
        );
    }
}
