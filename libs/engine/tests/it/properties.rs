//! Property tests: invariants that hold after any sequence of legal plays, under any settings.

use basra_engine::bot::{Policy, decide};
use basra_engine::capture::largest_cover;
use basra_engine::search::{Budget, Memory};
use basra_engine::{
    Action, BasraKind, Card, CardSet, EndReason, Event, Game, KomiBasra, MajorityTie, Seat, Seats,
    Seed, Settings, replay,
};
use proptest::prelude::*;
use rand_chacha::ChaCha8Rng;
use rand_core::SeedableRng;

fn settings() -> impl Strategy<Value = Settings> {
    (
        prop_oneof![Just(Seats::Two), Just(Seats::Four)],
        any::<bool>(),
        any::<bool>(),
        prop_oneof![
            Just(KomiBasra::AnyValue),
            Just(KomiBasra::SumAtMost10),
            Just(KomiBasra::SingleCard)
        ],
        any::<bool>(),
        prop_oneof![
            Just(MajorityTie::Nobody),
            Just(MajorityTie::Both),
            Just(MajorityTie::CarryOver)
        ],
        any::<bool>(),
        prop_oneof![Just(101u32), 1u32..300],
    )
        .prop_map(
            |(seats, clean, partial, komi, last, tie, card_points, target)| Settings {
                seats,
                clean_start_table: clean,
                allow_partial_capture: partial,
                komi_basra: komi,
                last_card_basra: last,
                majority_tie: tie,
                card_points,
                target_score: target,
                ..Settings::default()
            },
        )
}

/// Plays a whole match, choosing each card with the next `choices` byte (cycled).
fn play_match(
    settings: Settings,
    seed: [u8; 32],
    choices: &[u8],
    mut after_each: impl FnMut(&Game, &[Event]),
) -> (Vec<Action>, Vec<Event>) {
    let (mut game, opening) = Game::new(settings, Seed(seed)).unwrap();
    after_each(&game, &opening);
    let mut all = opening;
    let mut actions = Vec::new();
    let mut step = 0;
    while let Some(seat) = game.turn() {
        let plays = game.legal_plays();
        let pick = usize::from(choices[step % choices.len()]) % plays.len();
        step += 1;
        let action = Action::Play {
            seat,
            card: plays[pick].card,
            take: None,
        };
        let events = game.apply(&action).unwrap();
        after_each(&game, &events);
        all.extend_from_slice(&events);
        actions.push(action);
        assert!(step < 100_000, "a match ends");
    }
    (actions, all)
}

fn seats(game: &Game) -> impl Iterator<Item = Seat> {
    (0..game.settings().seat_count()).map(Seat)
}

fn check_conservation(game: &Game) {
    if game.is_over() {
        return;
    }
    let round = game.round();
    let mut parts: Vec<CardSet> = vec![round.deck().iter().collect()];
    parts.extend(seats(game).map(|s| round.hand(s)));
    parts.push(round.table().iter().copied().collect());
    parts.extend(round.piles());
    let mut union = CardSet::EMPTY;
    let mut count = 0;
    for part in parts {
        assert!(
            union.intersection(part).is_empty(),
            "a card is in two places"
        );
        union = union.union(part);
        count += part.len();
    }
    assert_eq!(union, CardSet::FULL);
    assert_eq!(count, 52);
}

fn check_views(game: &Game, events: &[Event]) {
    let round = game.round();
    let deck: CardSet = round.deck().iter().collect();
    let viewers = seats(game).map(Some).chain([None]);
    for viewer in viewers {
        let view = game.view(viewer);
        let own = viewer.map_or(CardSet::EMPTY, |s| round.hand(s));
        assert_eq!(view.hand, own);
        assert_eq!(view.table, round.table());
        let hidden = seats(game)
            .filter(|&s| Some(s) != viewer)
            .fold(deck, |hidden, s| hidden.union(round.hand(s)));
        assert!(view.visible_cards().intersection(hidden).is_empty());
        // Nothing hidden appears anywhere in what is sent, whatever the field.
        let json = serde_json::to_string(&view).unwrap();
        for card in hidden {
            assert!(
                !json.contains(&format!("\"{card}\"")),
                "{card} leaked: {json}"
            );
        }
        for event in events {
            if let Event::HandDealt { seat, cards } = event.for_viewer(viewer) {
                assert_eq!(cards.is_some(), Some(seat) == viewer, "{event:?}");
            }
        }
    }
}

/// Recomputes each round's score from the events alone and compares.
fn check_scores(settings: &Settings, events: &[Event]) {
    let mut piles = [0u32; 2];
    let mut basra_points = [0u32; 2];
    let mut basras = [[0u8; 3]; 2];
    let mut totals = [0u32; 2];
    let mut carry = 0;
    for event in events {
        match *event {
            Event::RoundStarted { .. } => {
                piles = [0; 2];
                basra_points = [0; 2];
                basras = [[0; 3]; 2];
            }
            Event::CardPlayed {
                seat, taken, basra, ..
            } => {
                let side = seat.side().index();
                if !taken.is_empty() {
                    piles[side] += taken.len() as u32 + 1;
                }
                if let Some(kind) = basra {
                    basra_points[side] += kind.points(settings);
                    basras[side][kind as usize] += 1;
                    assert!(!taken.is_empty(), "a Basra takes cards");
                }
            }
            Event::RoundEnded(score) => {
                if let Some(seat) = score.last_capturer {
                    piles[seat.side().index()] += score.leftovers.len() as u32;
                }
                assert_eq!(score.piles.map(u32::from), piles);
                let out_of_play = if score.last_capturer.is_none() {
                    score.leftovers.len() as u32
                } else {
                    0
                };
                assert_eq!(piles[0] + piles[1] + out_of_play, 52);
                assert_eq!(score.basra_points, basra_points);
                assert_eq!(score.basras, basras);
                let award = settings.majority_points + carry;
                let majority = match (piles[0].cmp(&piles[1]), settings.majority_tie) {
                    (std::cmp::Ordering::Greater, _) => [award, 0],
                    (std::cmp::Ordering::Less, _) => [0, award],
                    (_, MajorityTie::Both) => [award, award],
                    _ => [0, 0],
                };
                carry = if piles[0] == piles[1] && settings.majority_tie == MajorityTie::CarryOver {
                    award
                } else {
                    0
                };
                assert_eq!(score.majority_points, majority);
                if !settings.card_points {
                    assert_eq!(score.card_points, [0, 0]);
                }
                for side in 0..2 {
                    let points = basra_points[side] + majority[side] + score.card_points[side];
                    assert_eq!(score.points[side], points);
                    totals[side] += points;
                }
                assert_eq!(score.totals, totals);
            }
            Event::MatchEnded(result) => {
                assert_eq!(result.totals, totals);
                if result.reason == EndReason::TargetReached {
                    let (w, l) = (result.winner.index(), 1 - result.winner.index());
                    assert!(totals[w] >= settings.target_score && totals[w] > totals[l]);
                }
            }
            _ => {}
        }
    }
}

/// Brute force over every subset of the table's number cards: the largest set that splits
/// into groups of `value`, the lexicographically smallest of those, and how many there are.
fn brute_force_cover(table: &[Card], value: u8) -> (u64, usize) {
    fn splits(mask: u64, values: &[u8], value: u8) -> bool {
        if mask == 0 {
            return true;
        }
        let low = mask & mask.wrapping_neg();
        let rest = mask ^ low;
        // Every subset of `rest`, with `low` added, is a candidate group.
        let mut sub = rest;
        loop {
            let group = sub | low;
            let sum: u32 = (0..64)
                .filter(|i| group & (1 << i) != 0)
                .map(|i| u32::from(values[i]))
                .sum();
            if sum == u32::from(value) && splits(mask ^ group, values, value) {
                return true;
            }
            if sub == 0 {
                return false;
            }
            sub = (sub - 1) & rest;
        }
    }
    let values: Vec<u8> = table
        .iter()
        .map(|c| c.value().filter(|&v| v <= value).unwrap_or(0))
        .collect();
    let usable: u64 = (0..table.len())
        .filter(|&i| values[i] > 0)
        .fold(0, |m, i| m | 1 << i);
    let sorted = |m: u64| -> Vec<u32> { (0..64).filter(|i| m & (1 << i) != 0).collect() };
    let mut best = 0u64;
    let mut count = 0;
    let mut sub = usable;
    loop {
        if splits(sub, &values, value) {
            let (size, best_size) = (sub.count_ones(), best.count_ones());
            if size > best_size || (size == best_size && sorted(sub) < sorted(best)) {
                if size > best_size {
                    count = 0;
                }
                best = sub;
            }
            if size == best.count_ones() {
                count += 1;
            }
        }
        if sub == 0 {
            break;
        }
        sub = (sub - 1) & usable;
    }
    (best, count)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn cards_are_conserved_and_views_hide_other_hands(
        settings in settings(),
        seed in any::<[u8; 32]>(),
        choices in prop::collection::vec(any::<u8>(), 1..64),
    ) {
        play_match(settings, seed, &choices, |game, events| {
            check_conservation(game);
            check_views(game, events);
        });
    }

    #[test]
    fn scores_are_the_basras_and_majority_awarded(
        settings in settings(),
        seed in any::<[u8; 32]>(),
        choices in prop::collection::vec(any::<u8>(), 1..64),
    ) {
        let (_, events) = play_match(settings, seed, &choices, |_, _| {});
        check_scores(&settings, &events);
        prop_assert!(matches!(events.last(), Some(Event::MatchEnded(_))));
    }

    #[test]
    fn replay_from_seed_and_actions_reproduces_every_event(
        settings in settings(),
        seed in any::<[u8; 32]>(),
        choices in prop::collection::vec(any::<u8>(), 1..64),
    ) {
        let (actions, events) = play_match(settings, seed, &choices, |_, _| {});
        let (replayed, again) = replay(settings, Seed(seed), &actions).unwrap();
        prop_assert_eq!(again, events);
        prop_assert!(replayed.is_over());
    }

    #[test]
    fn a_stored_game_plays_on_exactly_like_the_original(
        settings in settings(),
        seed in any::<[u8; 32]>(),
        choices in prop::collection::vec(any::<u8>(), 1..64),
        stop in 0usize..200,
    ) {
        // What the server keeps in its store between two plays.
        let (actions, events) = play_match(settings, seed, &choices, |_, _| {});
        let stop = stop.min(actions.len());
        let (game, _) = replay(settings, Seed(seed), &actions[..stop]).unwrap();
        let stored = serde_json::to_string(&game).unwrap();
        let mut restored: Game = serde_json::from_str(&stored).unwrap();
        prop_assert_eq!(&restored, &game);
        let mut rest = Vec::new();
        for action in &actions[stop..] {
            restored.apply_into(action, &mut rest).unwrap();
        }
        prop_assert_eq!(&rest[..], &events[events.len() - rest.len()..]);
    }

    #[test]
    fn illegal_actions_change_nothing(
        settings in settings(),
        seed in any::<[u8; 32]>(),
        choices in prop::collection::vec(any::<u8>(), 1..64),
        takes in prop::collection::vec(any::<u64>(), 8),
    ) {
        let (mut game, _) = Game::new(settings, Seed(seed)).unwrap();
        let mut step = 0;
        while let Some(seat) = game.turn() {
            let before = game.clone();
            let round = game.round();
            let seat_count = settings.seat_count();
            let other = seat.next(seat_count);
            let mut attempts = vec![
                Action::Play { seat: other, card: round.hand(other).iter().next().unwrap_or(Card::KOMI), take: None },
                Action::Play { seat: Seat(seat_count), card: Card::KOMI, take: None },
                Action::Resign { seat: Seat(seat_count + 1) },
            ];
            if let Some(card) = CardSet::FULL.difference(round.hand(seat)).nth(usize::from(choices[step % choices.len()]) % 40) {
                attempts.push(Action::Play { seat, card, take: None });
            }
            // Named captures: random subsets of the table and of the whole deck.
            let table: Vec<Card> = round.table().to_vec();
            for bits in &takes {
                let of_table: CardSet = table.iter().enumerate().filter(|(i, _)| bits & (1 << i) != 0).map(|(_, c)| *c).collect();
                let anywhere = CardSet::FULL.intersection(basra_engine::Card::all().filter(|c| bits & (1 << c.index()) != 0).collect());
                for card in round.hand(seat) {
                    attempts.push(Action::Play { seat, card, take: Some(of_table) });
                    attempts.push(Action::Play { seat, card, take: Some(anywhere) });
                }
            }
            for action in attempts {
                let mut copy = game.clone();
                let mut events = Vec::new();
                if copy.apply_into(&action, &mut events).is_err() {
                    prop_assert_eq!(&copy, &before, "{:?} changed the game", action);
                    prop_assert!(events.is_empty());
                }
            }
            let plays = game.legal_plays();
            let card = plays[usize::from(choices[step % choices.len()]) % plays.len()].card;
            game.apply(&Action::Play { seat, card, take: None }).unwrap();
            step += 1;
        }
        let over = game.clone();
        prop_assert_eq!(game.apply(&Action::Resign { seat: Seat(0) }), Err(basra_engine::RuleError::MatchOver));
        prop_assert_eq!(game, over);
    }

}

proptest! {
    // The search is the hot path of every play; check it harder than the whole-match laws.
    #![proptest_config(ProptestConfig::with_cases(500))]

    #[test]
    fn largest_capture_agrees_with_brute_force(
        table in prop::sample::subsequence((0u8..52).collect::<Vec<_>>(), 0..=12).prop_shuffle(),
        value in 1u8..=10,
    ) {
        let table: Vec<Card> = table.into_iter().map(|i| Card::from_index(i).unwrap()).collect();
        let (best, count) = brute_force_cover(&table, value);
        let cover = largest_cover(&table, value);
        prop_assert_eq!(cover.positions, best, "table {:?} value {}", table, value);
        prop_assert_eq!(cover.alternatives, count > 1, "table {:?} value {}", table, value);
    }

    #[test]
    fn largest_capture_agrees_with_brute_force_on_small_number_tables(
        table in prop::sample::subsequence((0u8..40).collect::<Vec<_>>(), 0..=12).prop_shuffle(),
        value in 5u8..=10,
    ) {
        // Number cards only, where sums are richest.
        let table: Vec<Card> = table.into_iter().map(|i| Card::from_index(i).unwrap()).collect();
        let (best, count) = brute_force_cover(&table, value);
        let cover = largest_cover(&table, value);
        prop_assert_eq!(cover.positions, best, "table {:?} value {}", table, value);
        prop_assert_eq!(cover.alternatives, count > 1, "table {:?} value {}", table, value);
    }
}

proptest! {
    // Whole matches with the search bot thinking: few cases, a tiny budget.
    #![proptest_config(ProptestConfig::with_cases(6))]

    #[test]
    fn every_bot_plays_only_cards_of_its_hand_under_any_rules(
        settings in settings(),
        seed in any::<[u8; 32]>(),
        rng_seed in any::<u64>(),
    ) {
        let mut rng = ChaCha8Rng::seed_from_u64(rng_seed);
        let (mut game, _) = Game::new(settings, Seed(seed)).unwrap();
        let budget = Budget { worlds: 2 };
        let mut plays = 0;
        // Every level at the table; a round's worth of plays is enough to meet every case
        // of the deal, and keeps the debug build fast.
        while let (Some(seat), true) = (game.turn(), plays < 60) {
            let view = game.view(Some(seat));
            let policy = Policy::ALL[(seat.index() + plays) % Policy::ALL.len()];
            let memory = Memory::of(game.round());
            let action = decide(policy, &view, &memory, &budget, &mut rng).unwrap();
            let Action::Play { card, take: None, seat: played_by } = action else {
                panic!("a bot plays a card with the canonical capture: {action:?}");
            };
            prop_assert_eq!(played_by, seat);
            prop_assert!(view.hand.contains(card));
            prop_assert!(game.apply(&action).is_ok());
            // Not the bot's turn, not a seat: no action.
            prop_assert_eq!(decide(policy, &game.view(None), &memory, &budget, &mut rng), None);
            plays += 1;
        }
    }
}

#[test]
fn a_match_between_the_bots_ends_with_a_basra_somewhere() {
    // Sanity for the generators above: real matches do make Basras of every common kind.
    let mut kinds = std::collections::HashSet::new();
    for seed in 0..40u8 {
        let (_, events) = play_match(
            Settings::default(),
            [seed; 32],
            &[0, 1, 2, 3, 5, 7],
            |_, _| {},
        );
        for event in events {
            if let Event::CardPlayed {
                basra: Some(kind), ..
            } = event
            {
                kinds.insert(kind);
            }
        }
    }
    assert!(kinds.contains(&BasraKind::Basra) && kinds.contains(&BasraKind::Komi));
}
