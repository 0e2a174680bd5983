//! Knockout over random fields of 2..1,024 players and random results.

use std::collections::HashSet;

use basra_events::knockout::{Progress, Table};
use basra_events::{EventError, Knockout, MatchId, PlayerId};
use proptest::prelude::*;

use crate::support::{field, outcome, ratings, winner};

/// Plays a knockout to its end with results drawn from `rolls`; checks on the way that no
/// player has two tables in a round and that a result outside the current round is
/// refused. Answers the event and the number of matches that had a winner.
fn play(n: usize, ratings: &[i32], rolls: &[u32], double: bool) -> (Knockout, u32) {
    let mut k = Knockout::new(&field(n, ratings)).unwrap();
    let mut roll = rolls.iter().cycle();
    let mut with_winner = 0;
    let mut rounds_played = 0;
    loop {
        let round = k.current_round();
        rounds_played += 1;
        let tables: Vec<Table> = k.round(round).unwrap().to_vec();
        let mut seen = HashSet::new();
        for p in tables.iter().flat_map(|t| t.players.iter().flatten()) {
            assert!(seen.insert(*p), "{p} twice in round {round}");
        }
        if round > 1 {
            let late = MatchId::new(round - 1, 1);
            assert!(matches!(
                k.clone().record(late, basra_events::Outcome::BothAbsent),
                Err(EventError::NotCurrentRound { .. })
            ));
        }
        let early = MatchId::new(round + 1, 1);
        assert!(
            k.clone()
                .record(early, basra_events::Outcome::BothAbsent)
                .is_err()
        );
        let mut last = Progress::Recorded;
        for t in tables.iter().filter(|t| t.is_match()) {
            let [Some(a), Some(b)] = t.players else {
                unreachable!()
            };
            let o = outcome(a, b, *roll.next().unwrap(), double);
            with_winner += u32::from(winner(a, b, o).is_some());
            last = k.record(t.id, o).unwrap();
        }
        match last {
            Progress::Finished { .. } => break,
            Progress::RoundStarted(next) => assert!(next > round),
            Progress::Recorded => panic!("round {round} complete but not advanced"),
        }
    }
    assert!(rounds_played <= k.rounds_total());
    (k, with_winner)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn exactly_one_champion_after_log2_rounds(
        n in 2usize..=1024,
        ratings in ratings(),
        rolls in prop::collection::vec(any::<u32>(), 1..200),
    ) {
        let (k, with_winner) = play(n, &ratings, &rolls, false);
        let rounds = (n as f64).log2().ceil() as u32;
        prop_assert_eq!(k.rounds_total(), rounds);
        prop_assert_eq!(k.current_round(), rounds);
        prop_assert!(k.is_finished());
        let champion = k.champion().expect("no double forfeits: a champion");
        // Without double forfeits every match but the final eliminates one player:
        // n - 1 matches in all, and the champion lost none of them.
        prop_assert_eq!(with_winner as usize, n - 1);
        let standings = k.standings();
        let first: Vec<PlayerId> = standings.iter().filter(|s| s.rank == 1).map(|s| s.player).collect();
        prop_assert_eq!(first, vec![champion]);
        prop_assert_eq!(standings.iter().map(|s| s.points).sum::<u32>(), with_winner);
        prop_assert_eq!(standings.len(), n);
    }

    #[test]
    fn double_forfeits_leave_at_most_one_champion(
        n in 2usize..=256,
        ratings in ratings(),
        rolls in prop::collection::vec(any::<u32>(), 1..200),
    ) {
        let (k, with_winner) = play(n, &ratings, &rolls, true);
        prop_assert!(k.is_finished());
        let standings = k.standings();
        prop_assert_eq!(standings.iter().map(|s| s.points).sum::<u32>(), with_winner);
        let final_table = k.round(k.rounds_total()).unwrap()[0];
        prop_assert_eq!(k.champion(), final_table.advancing());
    }

    #[test]
    fn seeds_one_and_two_meet_only_in_the_final(n in 2usize..=1024, ratings in ratings()) {
        let k = Knockout::new(&field(n, &ratings)).unwrap();
        let seeds = k.seeds();
        let tables = k.round(1).unwrap();
        let half = tables.len().div_ceil(2);
        let side = |p: PlayerId| tables.iter().position(|t| t.players.contains(&Some(p))).unwrap() < half;
        if n > 2 {
            prop_assert_ne!(side(seeds[0].id), side(seeds[1].id));
        }
        // Byes go to the top seeds: exactly bracket − n of them, seeds 1 ..= bracket − n.
        let byes: Vec<usize> = tables
            .iter()
            .filter(|t| !t.is_match())
            .map(|t| seeds.iter().position(|e| Some(e.id) == t.players[0]).unwrap())
            .collect();
        let size = n.next_power_of_two();
        let mut sorted = byes.clone();
        sorted.sort();
        prop_assert_eq!(sorted, (0..size - n).collect::<Vec<_>>());
    }
}
