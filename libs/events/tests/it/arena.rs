//! Arena over random fields and random results: nobody in two matches at once, no
//! immediate rematch while others wait, and the points exactly as the rule says.

use std::collections::{HashMap, HashSet};

use basra_events::arena::{ArenaMatch, ArenaMatchId, ArenaState};
use basra_events::{Arena, Outcome, PlayerId};
use chrono::{DateTime, Duration, TimeZone, Utc};
use proptest::prelude::*;

use crate::support::{field, outcome, ratings};

fn at(second: i64) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 3, 1, 20, 0, 0).unwrap() + Duration::seconds(second)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn waves_pair_each_player_once_and_score_by_the_rule(
        n in 2usize..=1024,
        ratings in ratings(),
        rolls in prop::collection::vec(any::<u32>(), 1..400),
        waves in 1i64..40,
    ) {
        let mut arena = Arena::new(at(0), at(3600)).unwrap();
        for e in field(n, &ratings) {
            arena.join(e, at(0)).unwrap();
        }
        let mut roll = rolls.iter().cycle();
        let mut running: HashMap<ArenaMatchId, ArenaMatch> = HashMap::new();
        let mut last_opponent: HashMap<PlayerId, PlayerId> = HashMap::new();
        // The rule, restated: wins in a row (forfeit wins neither count nor break it).
        let mut streak: HashMap<PlayerId, u32> = HashMap::new();
        let mut awarded = 0u32;
        for wave in 0..waves {
            let now = at(wave * 60);
            let waiting = arena.players().iter().filter(|p| p.state == ArenaState::Waiting).count();
            let new = arena.pair(now).unwrap();
            let busy: HashSet<PlayerId> = running.values().flat_map(|m| m.players).collect();
            let mut seen = HashSet::new();
            for m in &new {
                for p in m.players {
                    prop_assert!(seen.insert(p), "{p} twice in wave {wave}");
                    prop_assert!(!busy.contains(&p), "{p} paired while playing");
                }
                let [a, b] = m.players;
                if last_opponent.get(&a) == Some(&b) || last_opponent.get(&b) == Some(&a) {
                    prop_assert_eq!(waiting, 2, "an immediate rematch with others waiting");
                }
                running.insert(m.id, *m);
            }
            // Some matches end, in a random order; some players pause and come back.
            let mut ids: Vec<ArenaMatchId> = running.keys().copied().collect();
            ids.sort();
            for id in ids {
                let r = *roll.next().unwrap();
                if r % 3 == 0 {
                    continue;
                }
                let m = running.remove(&id).unwrap();
                let [a, b] = m.players;
                let o = outcome(a, b, r / 3, true);
                let points = arena.record(id, o).unwrap();
                for (k, (me, other)) in [(a, b), (b, a)].into_iter().enumerate() {
                    last_opponent.insert(me, other);
                    let s = streak.entry(me).or_default();
                    let expected = match o {
                        Outcome::Won(w) if w == me => {
                            *s += 1;
                            if *s >= 3 { 4 } else { 2 }
                        }
                        Outcome::Forfeit { absent } if absent == other => 2,
                        _ => {
                            *s = 0;
                            0
                        }
                    };
                    prop_assert_eq!(points[k], expected);
                    awarded += points[k];
                }
            }
            for p in arena.players().to_vec() {
                let r = *roll.next().unwrap();
                if p.state == ArenaState::Paused && r % 2 == 0 {
                    arena.join(p.entrant, now).unwrap();
                } else if p.state == ArenaState::Waiting && r % 17 == 0 {
                    arena.pause(p.entrant.id).unwrap();
                }
            }
        }
        for (id, m) in running.drain() {
            let [a, _] = m.players;
            awarded += arena.record(id, Outcome::Won(a)).unwrap().iter().sum::<u32>();
        }
        prop_assert!(arena.is_over(at(3600)));
        let standings = arena.standings();
        prop_assert_eq!(standings.iter().map(|s| s.points).sum::<u32>(), awarded);
        let played: u32 = standings.iter().map(|s| s.played).sum();
        prop_assert_eq!(played as usize, 2 * arena.matches().len());
    }
}
