//! One test per numbered rule of RULES.md (`rule_NN_…`), with every example of RULES.md and
//! of the seed texts. Finer cases of a rule live beside its code (`src/capture.rs`,
//! `src/round.rs`); the invariants over whole matches in `tests/it/properties.rs`.

use basra_engine::capture::{capture, chosen_capture, komi_basra_applies};
use basra_engine::round::Round;
use basra_engine::{
    Action, BasraKind, Card, CardSet, Deck, EndReason, Event, Game, KomiBasra, RuleError, Seat,
    Seats, Seed, Settings, Side,
};

fn card(text: &str) -> Card {
    text.parse().unwrap()
}

fn cards(text: &str) -> Vec<Card> {
    text.split_whitespace().map(card).collect()
}

fn set(text: &str) -> CardSet {
    cards(text).into_iter().collect()
}

fn takes(table: &str, played: &str) -> (CardSet, Option<BasraKind>) {
    let got = capture(&cards(table), card(played), &Settings::default());
    (got.taken, got.basra)
}

fn four_seats() -> Settings {
    Settings {
        seats: Seats::Four,
        ..Settings::default()
    }
}

/// A deck in index order with `front` moved to the top.
fn deck_with(front: &str) -> Deck {
    let front = cards(front);
    let mut all = front.clone();
    all.extend(Card::all().filter(|c| !front.contains(c)));
    Deck::from_cards(all.try_into().unwrap())
}

/// Plays a match to its end with the first legal card each turn.
fn play_out(settings: Settings, seed: u8) -> Vec<Event> {
    let (mut game, mut events) = Game::new(settings, Seed([seed; 32])).unwrap();
    while let Some(seat) = game.turn() {
        let card = game.legal_plays()[0].card;
        events.extend(
            game.apply(&Action::Play {
                seat,
                card,
                take: None,
            })
            .unwrap(),
        );
    }
    events
}

#[test]
fn rule_01_two_or_four_seats_four_in_partnerships() {
    let events = play_out(four_seats(), 1);
    let mut seats_seen = [false; 4];
    for event in &events {
        if let Event::CardPlayed { seat, .. } = event {
            seats_seen[seat.index()] = true;
        }
    }
    assert_eq!(seats_seen, [true; 4]);
    assert_eq!(Seat(0).side(), Seat(2).side());
    assert_eq!(Seat(1).side(), Seat(3).side());
    assert_ne!(Seat(0).side(), Seat(1).side());
    assert!(matches!(events.last(), Some(Event::MatchEnded(_))));
}

#[test]
fn rule_02_deal_blocks_of_four_from_the_seat_after_the_dealer_then_four_to_the_table() {
    let round = Round::start(&four_seats(), 0, deck_with(""), Seat(1), &mut Vec::new());
    assert_eq!(round.hand(Seat(2)), set("AC AD AH AS"));
    assert_eq!(round.hand(Seat(3)), set("2C 2D 2H 2S"));
    assert_eq!(round.hand(Seat(0)), set("3C 3D 3H 3S"));
    assert_eq!(
        round.hand(Seat(1)),
        set("4C 4D 4H 4S"),
        "the dealer is dealt last"
    );
    assert_eq!(round.table(), cards("5C 5D 5H 5S").as_slice());
}

#[test]
fn rule_03_the_starting_table_holds_no_jack_and_no_komi() {
    let top = "AC AD AH AS 2C 2D 2H 2S 7D JS 3C 4C";
    let round = Round::start(
        &Settings::default(),
        0,
        deck_with(top),
        Seat(0),
        &mut Vec::new(),
    );
    assert!(
        !round
            .table()
            .iter()
            .any(|c| c.is_jack() || *c == Card::KOMI)
    );
    assert_eq!(&round.table()[2..], cards("3C 4C").as_slice());
    let kept = Settings {
        clean_start_table: false,
        ..Settings::default()
    };
    let round = Round::start(&kept, 0, deck_with(top), Seat(0), &mut Vec::new());
    assert_eq!(round.table(), cards("7D JS 3C 4C").as_slice());
}

#[test]
fn rule_04_six_deals_a_round_with_two_players_three_with_four() {
    for (settings, deals) in [(Settings::default(), 6), (four_seats(), 3)] {
        let seats = usize::from(settings.seat_count());
        let events = play_out(settings, 4);
        let first_round: Vec<&Event> = events
            .iter()
            .take_while(|e| !matches!(e, Event::RoundEnded(_)))
            .collect();
        let hands = first_round
            .iter()
            .filter(|e| matches!(e, Event::HandDealt { .. }))
            .count();
        assert_eq!(hands, deals * seats);
        let plays: Vec<Seat> = first_round
            .iter()
            .filter_map(|e| match e {
                Event::CardPlayed { seat, .. } => Some(*seat),
                _ => None,
            })
            .collect();
        assert_eq!(plays.len(), 48);
        // Seat 0 (after the dealer of round 0) plays first, then seat by seat.
        for (i, seat) in plays.iter().enumerate() {
            assert_eq!(usize::from(seat.0), i % seats);
        }
    }
}

#[test]
fn rule_05_the_deal_passes_to_the_next_seat() {
    let events = play_out(Settings::default(), 9);
    let dealers: Vec<u8> = events
        .iter()
        .filter_map(|e| match e {
            Event::RoundStarted { dealer, .. } => Some(dealer.0),
            _ => None,
        })
        .collect();
    assert!(dealers.len() >= 2, "a match to 101 takes several rounds");
    for pair in dealers.windows(2) {
        assert_eq!(pair[1], (pair[0] + 1) % 2);
    }
}

#[test]
fn rule_06_number_cards_take_the_largest_disjoint_groups() {
    // RULES.md and both seed texts: table A 7 K 8, play 8 → 8 and A+7; K stays.
    assert_eq!(takes("AS 7H KC 8D", "8S"), (set("AS 7H 8D"), None));
    // Seed text 1.4: "or if has 9 he can take 8+1".
    assert_eq!(takes("AS 7H KC 8D", "9S").0, set("AS 8D"));
    // A single table card of the same rank is a group; J, Q, K are never in a sum.
    assert_eq!(takes("QC 4H 6D 10C", "10S").0, set("4H 6D 10C"));
    // Largest: {1,2,4} and {1,3,3} are both three cards; canonical takes positions 0,1,2.
    assert_eq!(takes("AC 2D 4H 3S 3C", "7S").0, set("AC 2D 4H"));
    let named = chosen_capture(
        &cards("AC 2D 4H 3S 3C"),
        card("7S"),
        set("AC 3S 3C"),
        &Settings::default(),
    );
    assert_eq!(named.unwrap().taken, set("AC 3S 3C"));
    // allow_partial_capture lets the player take any one of the groups.
    let partial = Settings {
        allow_partial_capture: true,
        ..Settings::default()
    };
    let table = cards("AS 7H KC 8D");
    assert_eq!(
        chosen_capture(&table, card("8S"), set("8D"), &partial)
            .unwrap()
            .taken,
        set("8D")
    );
    assert!(matches!(
        chosen_capture(&table, card("8S"), set("8D"), &Settings::default()),
        Err(RuleError::NotLargest { .. })
    ));
}

#[test]
fn rule_07_queen_and_king_take_only_their_rank() {
    // Seed texts: "If you have a K card in your hand, you can only take the K".
    assert_eq!(takes("AS 7H KC 8D", "KS"), (set("KC"), None));
    assert_eq!(takes("QC QD 2H", "QS"), (set("QC QD"), None));
    assert_eq!(takes("2H", "QS").0, CardSet::EMPTY);
}

#[test]
fn rule_08_the_jack_sweeps_a_non_empty_table() {
    assert_eq!(takes("AS 7H KC 8D", "JS"), (set("AS 7H KC 8D"), None));
    assert_eq!(
        takes("", "JS"),
        (CardSet::EMPTY, None),
        "it stays on an empty table"
    );
}

#[test]
fn rule_09_the_komi_sweeps_or_stays_and_then_counts_as_a_seven() {
    assert_eq!(takes("AS 7H KC 8D", "7D").0, set("AS 7H KC 8D"));
    assert_eq!(takes("", "7D"), (CardSet::EMPTY, None));
    assert_eq!(takes("7D", "7S"), (set("7D"), Some(BasraKind::Basra)));
    assert_eq!(takes("7D", "4S").0, CardSet::EMPTY);
    assert_eq!(takes("7D AH", "8S").0, set("7D AH"));
}

#[test]
fn rule_10_a_card_that_takes_nothing_stays_on_the_table() {
    let rules = Settings::default();
    let mut events = Vec::new();
    let mut round = Round::start(&rules, 0, deck_with(""), Seat(0), &mut events);
    // Seat 1 holds the aces; the table holds the 3s. An ace takes nothing.
    round
        .play(&rules, Seat(1), card("AC"), None, &mut events)
        .unwrap();
    assert_eq!(round.table(), cards("3C 3D 3H 3S AC").as_slice());
    assert_eq!(round.piles(), [CardSet::EMPTY; 2]);
}

#[test]
fn rule_11_captured_cards_and_the_played_card_go_to_the_pile() {
    let rules = Settings::default();
    let mut events = Vec::new();
    let mut round = Round::start(
        &rules,
        0,
        deck_with("AC 3S 2H 9D 6C 2D 4H 2S 5C 5D 5H 5S"),
        Seat(0),
        &mut events,
    );
    // Seat 1 throws the ace; seat 0's 6 takes 5+1, the 5 that has lain longest.
    round
        .play(&rules, Seat(1), card("AC"), None, &mut events)
        .unwrap();
    round
        .play(&rules, Seat(0), card("6C"), None, &mut events)
        .unwrap();
    assert_eq!(round.piles(), [set("5C AC 6C"), CardSet::EMPTY]);
    assert_eq!(round.table(), cards("5D 5H 5S").as_slice());
    assert_eq!(round.last_capturer(), Some(Seat(0)));
}

#[test]
fn rule_12_a_basra_leaves_the_table_empty() {
    // RULES.md and seed texts: table 10 5 4 1, play 10 → Basra.
    assert_eq!(
        takes("10H 5C 4D AS", "10S"),
        (set("10H 5C 4D AS"), Some(BasraKind::Basra))
    );
    // Seed text 1.4: (8, 7, 1) and the player has 8.
    assert_eq!(takes("8H 7C AD", "8S").1, Some(BasraKind::Basra));
    // Seed texts: a card thrown on the empty table is taken by a similar card as a Basra.
    assert_eq!(takes("6H", "6S"), (set("6H"), Some(BasraKind::Basra)));
    assert_eq!(takes("KH", "KS").1, Some(BasraKind::Basra));
    assert_eq!(takes("10H 5C 4D AS QC", "10S").1, None, "the queen stays");
}

#[test]
fn rule_13_a_jack_sweep_is_a_basra_only_onto_a_lone_jack() {
    assert_eq!(takes("5H", "JS").1, None);
    assert_eq!(takes("JH", "JS"), (set("JH"), Some(BasraKind::Jack)));
    assert_eq!(takes("JH 2C", "JS").1, None);
}

#[test]
fn rule_14_komi_basra_onto_a_table_another_rank_could_clear() {
    // Seed texts: "Diamond 7 … will take basra of any value".
    assert_eq!(
        takes("10H 5C 4D AS", "7D"),
        (set("10H 5C 4D AS"), Some(BasraKind::Komi))
    );
    assert_eq!(takes("9C", "7D").1, Some(BasraKind::Komi));
    assert_eq!(takes("KC KD", "7D").1, Some(BasraKind::Komi));
    assert_eq!(takes("KC QD", "7D").1, None);
    assert_eq!(
        takes("9C 3D", "7D").1,
        None,
        "9+3 = 12 splits into no common sum"
    );
    assert_eq!(
        takes("3C 3D 4H 2S", "7D").1,
        Some(BasraKind::Komi),
        "3+3 = 4+2"
    );
    assert_eq!(
        takes("6C 6D 4H 8S", "7D").1,
        None,
        "6+6 = 4+8 = 12 is above 10"
    );
    let t = |text| cards(text);
    assert!(!komi_basra_applies(&t("6C 6D"), KomiBasra::SumAtMost10));
    assert!(komi_basra_applies(&t("3C 6D"), KomiBasra::SumAtMost10));
    assert!(komi_basra_applies(&t("QC"), KomiBasra::SingleCard));
    assert!(!komi_basra_applies(&t("3C 6D"), KomiBasra::SingleCard));
    // "exactly one card on the table, of any rank — a lone J or Q qualifies too".
    assert!(komi_basra_applies(&t("JS"), KomiBasra::SingleCard));
    let single = Settings {
        komi_basra: KomiBasra::SingleCard,
        ..Settings::default()
    };
    let lone_jack = capture(&cards("JS"), card("7D"), &single);
    assert_eq!(lone_jack.basra, Some(BasraKind::Komi));
    assert_eq!(lone_jack.taken, set("JS"));
}

#[test]
fn rule_15_points_per_basra_kind_are_settings() {
    let rules = Settings {
        basra_points: 7,
        jack_basra_points: 11,
        komi_basra_points: 13,
        ..Settings::default()
    };
    assert_eq!(BasraKind::Basra.points(&rules), 7);
    assert_eq!(BasraKind::Jack.points(&rules), 11);
    assert_eq!(BasraKind::Komi.points(&rules), 13);
    assert_eq!(BasraKind::Komi.points(&Settings::default()), 30);
}

#[test]
fn rule_16_to_19_round_end_and_scoring_add_up_in_whole_matches() {
    // Exact cases are in src/round.rs; here every setting is played through whole matches
    // and each round's score recomputed from the piles it reports.
    for card_points in [false, true] {
        let settings = Settings {
            card_points,
            ..Settings::default()
        };
        for event in play_out(settings, 17) {
            if let Event::RoundEnded(score) = event {
                let majority = score.majority_points;
                assert_eq!(majority[0] > 0, score.piles[0] > score.piles[1]);
                assert_eq!(majority[1] > 0, score.piles[1] > score.piles[0]);
                let parts = [0, 1].map(|side| {
                    score.basra_points[side] + majority[side] + score.card_points[side]
                });
                assert_eq!(score.points, parts);
                assert_eq!(score.card_points.iter().sum::<u32>() > 0, card_points);
            }
        }
    }
}

#[test]
fn rule_20_the_match_ends_at_the_target_with_a_single_leader() {
    for target in [1, 30, 101, 250] {
        let settings = Settings {
            target_score: target,
            ..Settings::default()
        };
        let events = play_out(settings, 3);
        let Some(Event::MatchEnded(result)) = events.last() else {
            panic!("the match ends");
        };
        let [w, l] = [result.winner.index(), result.winner.other().index()];
        assert!(result.totals[w] >= target && result.totals[w] > result.totals[l]);
        // Every earlier round left the match undecided.
        let rounds: Vec<_> = events
            .iter()
            .filter_map(|e| match e {
                Event::RoundEnded(score) => Some(score.totals),
                _ => None,
            })
            .collect();
        for totals in &rounds[..rounds.len() - 1] {
            assert!(totals[0].max(totals[1]) < target || totals[0] == totals[1]);
        }
    }
}

#[test]
fn rule_21_resigning_gives_the_match_to_the_other_side() {
    let (mut game, _) = Game::new(four_seats(), Seed([5; 32])).unwrap();
    let events = game.apply(&Action::Resign { seat: Seat(3) }).unwrap();
    let [Event::MatchEnded(result)] = events.as_slice() else {
        panic!("resigning ends the match: {events:?}");
    };
    assert_eq!(result.winner, Side(0));
    assert_eq!(result.reason, EndReason::Resigned { seat: Seat(3) });
    assert_eq!(game.turn(), None);
    assert_eq!(
        game.apply(&Action::Resign { seat: Seat(0) }),
        Err(RuleError::MatchOver)
    );
}

#[test]
fn rule_22_the_seed_is_committed_at_the_start_and_revealed_at_the_end() {
    let seed = Seed([42; 32]);
    let (game, opening) = Game::new(Settings::default(), seed).unwrap();
    let Event::MatchStarted { commitment, .. } = opening[0] else {
        panic!("the match opens with its commitment");
    };
    assert_eq!(commitment, seed.commitment());
    assert_eq!(
        game.view(Some(Seat(0))).result,
        None,
        "no seed before the end"
    );
    let events = play_out(Settings::default(), 42);
    let Some(Event::MatchEnded(result)) = events.last() else {
        panic!("the match ends");
    };
    assert_eq!(result.seed, seed);
    // Anyone can check every deal: round r's deck is Deck::shuffled(seed, r).
    let dealt: Vec<[Card; 4]> = events
        .iter()
        .filter_map(|e| match e {
            Event::TableDealt { cards } => Some(*cards),
            _ => None,
        })
        .collect();
    for (round, table) in dealt.iter().enumerate() {
        let mut check = Vec::new();
        let replayed = Round::start(
            &Settings::default(),
            round as u32,
            Deck::shuffled(&result.seed, round as u32),
            Seat(((1 + round) % 2) as u8),
            &mut check,
        );
        assert_eq!(replayed.table(), table);
    }
}
