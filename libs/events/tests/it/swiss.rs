//! Swiss over random fields and random results, and a worked example derived by hand.

use std::collections::HashSet;

use basra_events::swiss::{SwissRound, max_rounds};
use basra_events::{Entrant, EventError, Outcome, PlayerId, Swiss, TieBreaks};
use proptest::prelude::*;

use crate::support::{field, outcome, ratings, winner};

/// Plays every round with results from `rolls`, checking each round as it is paired:
/// every active player exactly once (a table or the bye), no rematch, one bye at most per
/// player, a bye only when the field is odd. Answers the event and the points expected
/// from the results (wins and byes).
fn play(s: &mut Swiss, rolls: &[u32], withdraw_every: Option<usize>) -> Result<u32, EventError> {
    let mut roll = rolls.iter().cycle();
    let mut met: HashSet<(PlayerId, PlayerId)> = HashSet::new();
    let mut byes: HashSet<PlayerId> = HashSet::new();
    let mut withdrawn: HashSet<PlayerId> = HashSet::new();
    let mut points = 0;
    for r in 1..=s.rounds_total() {
        if let Some(every) = withdraw_every {
            let seeds = s.seeds().to_vec();
            let who = seeds[(r as usize * 7) % seeds.len()].id;
            if (r as usize).is_multiple_of(every) && withdrawn.insert(who) {
                s.withdraw(who).unwrap();
            }
        }
        let round: SwissRound = s.pair_next_round()?.clone();
        assert_eq!(round.number, r);
        let active = s.seeds().len() - withdrawn.len();
        let mut seen = HashSet::new();
        for t in &round.tables {
            let [a, b] = t.players;
            assert!(
                seen.insert(a) && seen.insert(b),
                "a player twice in round {r}"
            );
            assert!(
                met.insert((a, b)) && met.insert((b, a)),
                "{a} and {b} meet again in round {r}"
            );
        }
        if let Some(bye) = round.bye {
            assert!(seen.insert(bye), "the bye also plays in round {r}");
            assert!(byes.insert(bye), "{bye} has a second bye in round {r}");
            points += 1;
        }
        assert_eq!(round.bye.is_some(), active % 2 == 1);
        assert_eq!(seen.len(), active, "round {r} leaves someone out");
        assert!(seen.is_disjoint(&withdrawn));
        for t in &round.tables {
            let [a, b] = t.players;
            let o = outcome(a, b, *roll.next().unwrap(), true);
            points += u32::from(winner(a, b, o).is_some());
            s.record(t.id, o).unwrap();
        }
    }
    assert!(s.is_finished());
    Ok(points)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn large_fields_pair_without_rematches(
        n in 2usize..=1024,
        rounds in 1u32..=9,
        ratings in ratings(),
        rolls in prop::collection::vec(any::<u32>(), 1..300),
    ) {
        let rounds = rounds.min(max_rounds(n));
        let mut s = Swiss::new(&field(n, &ratings), rounds).unwrap();
        let points = play(&mut s, &rolls, None).expect("within max_rounds every round pairs");
        let standings = s.standings();
        prop_assert_eq!(standings.iter().map(|r| r.points).sum::<u32>(), points);
        prop_assert_eq!(standings.len(), n);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// The hard end: as many rounds as the field allows, where late rounds leave few
    /// possible opponents.
    #[test]
    fn small_fields_pair_every_round_up_to_the_maximum(
        n in 2usize..=24,
        ratings in ratings(),
        rolls in prop::collection::vec(any::<u32>(), 1..100),
    ) {
        let mut s = Swiss::new(&field(n, &ratings), max_rounds(n)).unwrap();
        let points = play(&mut s, &rolls, None).expect("within max_rounds every round pairs");
        prop_assert_eq!(s.standings().iter().map(|r| r.points).sum::<u32>(), points);
        // One more round is refused up front.
        prop_assert_eq!(
            Swiss::new(&field(n, &ratings), max_rounds(n) + 1).unwrap_err(),
            EventError::TooManyRounds { rounds: max_rounds(n) + 1, players: n, max: max_rounds(n) }
        );
    }

    /// Withdrawals may end an event early, but never with a bad pairing.
    #[test]
    fn withdrawals_never_give_a_bad_pairing(
        n in 4usize..=40,
        ratings in ratings(),
        rolls in prop::collection::vec(any::<u32>(), 1..100),
        every in 1usize..4,
    ) {
        let mut s = Swiss::new(&field(n, &ratings), max_rounds(n)).unwrap();
        match play(&mut s, &rolls, Some(every)) {
            Ok(_) => {}
            Err(EventError::Unpairable { .. }) => {}
            Err(e) => prop_assert!(false, "{e}"),
        }
    }

    #[test]
    fn the_first_bye_goes_to_the_lowest_seed(n in 1usize..=200, ratings in ratings()) {
        let n = 2 * n + 1;
        let mut s = Swiss::new(&field(n, &ratings), 1).unwrap();
        let last = s.seeds()[n - 1].id;
        prop_assert_eq!(s.pair_next_round().unwrap().bye, Some(last));
    }
}

/// Six players, three rounds, pairings derived from the rules by hand (players named by
/// seed, 1 the highest rating):
///
/// Round 1: one homogeneous bracket of six: S1 = 1 2 3, S2 = 4 5 6 → 1–4, 2–5, 3–6.
/// 1, 5 and 3 win.
///
/// Round 2: scores 1 3 5 on 1 point, 2 4 6 on 0.
/// - Bracket {1 3 5}: three players, one pair: S1 = 1, S2 = 3 5 → 1–3; 5 floats down
///   (5 with 2 4 6 can still be paired: 5–4, 2–6).
/// - Bracket {5 | 2 4 6}, heterogeneous: S1 = 5, S2 = 2 4 6. 5–2 is a rematch; 5–4.
///   Remainder {2 6}: 2–6.
///
/// 1, 5 and 6 win. Floats of round 2: 5 down, 4 up.
///
/// Round 3: scores 1 5 on 2, 3 6 on 1, 2 4 on 0.
/// - Bracket {1 5}: 1–5 (never met; 3 6 2 4 can still be paired: 3–2, 6–4).
/// - Bracket {3 6}: 3–6 is a rematch: no pair, both float down.
/// - Bracket {3 6 | 2 4}: S1 = 3 6, S2 = 2 4. Under the float rule no MDP may take 4 (paired
///   up in round 2), and 6 cannot take 2 (a rematch): both MDPs cannot be paired. Pairing
///   both MDPs comes before the float rule, so the rule is relaxed: 3–2 (first in S2),
///   6–4.
///
/// 1, 3 and 4 win. Final points: 1: 3; 3 and 5: 2; 4 and 6: 1; 2: 0.
#[test]
fn six_players_three_rounds_by_hand() {
    let players: Vec<Entrant> = (1..=6)
        .map(|i| Entrant::new(PlayerId(i), 2000 - i as i32))
        .collect();
    let mut s = Swiss::new(&players, 3).unwrap();
    let p = PlayerId;
    let pair_and_play = |s: &mut Swiss, expected: [[u128; 2]; 3], winners: [u128; 3]| {
        let round = s.pair_next_round().unwrap().clone();
        let got: Vec<[u128; 2]> = round
            .tables
            .iter()
            .map(|t| t.players.map(|x| x.0))
            .collect();
        assert_eq!(got, expected, "round {}", round.number);
        assert_eq!(round.bye, None);
        for (t, w) in round.tables.iter().zip(winners) {
            s.record(t.id, Outcome::Won(p(w))).unwrap();
        }
    };
    pair_and_play(&mut s, [[1, 4], [2, 5], [3, 6]], [1, 5, 3]);
    pair_and_play(&mut s, [[1, 3], [5, 4], [2, 6]], [1, 5, 6]);
    pair_and_play(&mut s, [[1, 5], [3, 2], [6, 4]], [1, 3, 4]);
    assert!(s.is_finished());

    // Buchholz (opponents' points), cut-1 (less the lowest), Sonneborn–Berger (beaten
    // opponents' points):
    //   1 met 4 (1) 3 (2) 5 (2): 5, cut-1 4, SB 5
    //   3 met 6 (1) 1 (3) 2 (0): 4, cut-1 4, SB 1 (beat 6 and 2)
    //   5 met 2 (0) 4 (1) 1 (3): 4, cut-1 4, SB 1 (beat 2 and 4)  → tied with 3
    //   4 met 1 (3) 5 (2) 6 (1): 6, cut-1 5, SB 1 (beat 6)
    //   6 met 3 (2) 2 (0) 4 (1): 3, cut-1 3, SB 0 (beat 2)
    //   2 met 5 (2) 6 (1) 3 (2): 5, cut-1 4, SB 0
    let tb = |buchholz_cut1, buchholz, sonneborn_berger| TieBreaks::Swiss {
        buchholz_cut1,
        buchholz,
        sonneborn_berger,
    };
    let got: Vec<(u32, u128, u32, u32, TieBreaks)> = s
        .standings()
        .iter()
        .map(|r| (r.rank, r.player.0, r.points, r.played, r.tie_breaks))
        .collect();
    assert_eq!(
        got,
        [
            (1, 1, 3, 3, tb(4, 5, 5)),
            (2, 3, 2, 3, tb(4, 4, 1)),
            (2, 5, 2, 3, tb(4, 4, 1)),
            (4, 4, 1, 3, tb(5, 6, 1)),
            (5, 6, 1, 3, tb(3, 3, 0)),
            (6, 2, 0, 3, tb(4, 5, 0)),
        ]
    );
}
