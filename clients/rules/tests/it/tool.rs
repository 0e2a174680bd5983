//! The `basra-rules` binary speaks the protocol of docs/rules.md: one answer line per request line.

use std::io::Write;
use std::process::{Command, Stdio};

use basra_engine::round::Round;
use basra_engine::{Card, Deck, Event, Seat, Seed, Settings, bot};
use rand_core::SeedableRng;
use serde_json::{Value, json};

/// Runs the binary on these lines and returns its answer lines, parsed.
fn ask(lines: &[String]) -> Vec<Value> {
    let mut child = Command::new(env!("CARGO_BIN_EXE_basra-rules"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("the rules tool starts");
    let mut stdin = child.stdin.take().unwrap();
    for line in lines {
        writeln!(stdin, "{line}").unwrap();
    }
    drop(stdin);
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success());
    String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).expect("every answer is JSON"))
        .collect()
}

#[test]
fn capture_answers_match_the_rules_examples_exactly() {
    let request = r#"{"op":"capture","table":["AS","7H","KC","8D"],"card":"8S"}"#;
    let output = Command::new(env!("CARGO_BIN_EXE_basra-rules"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            writeln!(child.stdin.take().unwrap(), "{request}")?;
            child.wait_with_output()
        })
        .unwrap();
    // Byte for byte the answer docs/rules.md shows.
    assert_eq!(
        String::from_utf8(output.stdout).unwrap(),
        "{\"taken\":[\"AS\",\"7H\",\"8D\"],\"basra\":\"none\"}\n"
    );
    let answers = ask(&[
        json!({"op":"capture","table":["10H","5C","4D","AS"],"card":"10S"}).to_string(),
        json!({"op":"capture","table":["JD"],"card":"JS"}).to_string(),
        json!({"op":"capture","table":["6C","6D"],"card":"7D"}).to_string(),
        json!({"op":"capture","table":["6C","6D"],"card":"7D","rules":{"komi_basra":"sum_at_most_10"}}).to_string(),
        json!({"op":"capture","table":[],"card":"5H"}).to_string(),
        // Taken cards come back in the order the request gave them.
        json!({"op":"capture","table":["4D","QC","AS","3S","3C","2D"],"card":"7S"}).to_string(),
    ]);
    assert_eq!(
        answers[0],
        json!({"taken":["10H","5C","4D","AS"],"basra":"basra"})
    );
    assert_eq!(answers[1], json!({"taken":["JD"],"basra":"jack"}));
    // Two sixes split into groups of 6: a Komi Basra, unless only sums up to 10 count.
    assert_eq!(answers[2], json!({"taken":["6C","6D"],"basra":"komi"}));
    assert_eq!(answers[3], json!({"taken":["6C","6D"],"basra":"none"}));
    assert_eq!(answers[4], json!({"taken":[],"basra":"none"}));
    // 7 = 4+1+2 (positions 0, 2, 5) or 3+3+1 (2, 3, 4): the first compares smaller.
    assert_eq!(answers[5], json!({"taken":["4D","AS","2D"],"basra":"none"}));
}

#[test]
fn a_bad_line_gets_one_error_line_and_the_tool_goes_on() {
    let answers = ask(&[
        "not json".to_owned(),
        json!({"op":"fly"}).to_string(),
        json!({"op":"capture","table":["ZZ"],"card":"8S"}).to_string(),
        json!({"op":"capture","table":["8D","8D"],"card":"8S"}).to_string(),
        json!({"op":"capture","table":["8D"],"card":"8D"}).to_string(),
        json!({"op":"capture","table":[],"card":"8S","rules":{"seats":3}}).to_string(),
        json!({"op":"capture","table":[],"card":"8S","rules":{"target_score":0}}).to_string(),
        json!({"op":"round","deck":["AS"],"dealer":0,"plays":[]}).to_string(),
        String::new(),
        json!({"op":"capture","table":["KC"],"card":"KS"}).to_string(),
    ]);
    assert_eq!(answers.len(), 10, "one answer per line");
    let errors: Vec<String> = answers[..9]
        .iter()
        .map(|a| a["error"].as_str().expect("an error line").to_owned())
        .collect();
    assert!(errors[0].contains("not valid JSON"), "{}", errors[0]);
    assert!(errors[1].contains("unknown variant `fly`"), "{}", errors[1]);
    assert!(errors[2].contains("\"ZZ\" is not a card"), "{}", errors[2]);
    assert!(
        errors[3].contains("8D appears twice in the table"),
        "{}",
        errors[3]
    );
    assert!(
        errors[4].contains("8D is both played and on the table"),
        "{}",
        errors[4]
    );
    assert!(errors[5].contains("seats must be 2 or 4"), "{}", errors[5]);
    assert!(errors[6].contains("target_score"), "{}", errors[6]);
    assert!(errors[7].contains("52 cards, not 1"), "{}", errors[7]);
    assert!(errors[8].contains("not valid JSON"), "{}", errors[8]);
    assert_eq!(answers[9], json!({"taken":["KC"],"basra":"basra"}));
}

/// Plays a round with the greedy bot's cards and returns the request and the engine's score.
fn played_round(settings: Settings, seed: u8, dealer: u8) -> (Value, Value) {
    let deck = Deck::shuffled(&Seed([seed; 32]), 0);
    let deck_cards: Vec<Card> = deck.iter().collect();
    let mut events = Vec::new();
    let mut round = Round::start(&settings, 0, deck, Seat(dealer), &mut events);
    let mut plays = Vec::new();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(u64::from(seed));
    while !round.is_over() {
        let seat = round.turn();
        let card = bot::random_card(round.hand(seat), &mut rng).unwrap();
        round
            .play(&settings, seat, card, None, &mut events)
            .unwrap();
        plays.push(card);
    }
    let mut basras = [Vec::new(), Vec::new()];
    for event in &events {
        if let Event::CardPlayed {
            seat,
            basra: Some(kind),
            ..
        } = event
        {
            basras[seat.side().index()].push(json!(kind));
        }
    }
    let score = round.finish(&settings, &mut 0, [0, 0]);
    let request =
        json!({"op":"round","deck":deck_cards,"dealer":dealer,"plays":plays,"rules":settings});
    let expected = json!({
        "piles": score.piles,
        "basras": basras,
        "score": score.points,
        "last_capturer": score.last_capturer.map(|s| s.0),
    });
    (request, expected)
}

#[test]
fn round_answers_report_piles_basras_score_and_last_capturer() {
    let four = Settings {
        seats: basra_engine::Seats::Four,
        ..Settings::default()
    };
    let cases: Vec<(Value, Value)> = (0..12u8)
        .map(|seed| {
            let settings = if seed % 3 == 0 {
                four
            } else {
                Settings::default()
            };
            played_round(settings, seed, seed % settings.seat_count())
        })
        .collect();
    let answers = ask(&cases
        .iter()
        .map(|(request, _)| request.to_string())
        .collect::<Vec<_>>());
    for ((request, expected), answer) in cases.iter().zip(&answers) {
        assert_eq!(answer, expected, "request {request}");
        let piles = answer["piles"].as_array().unwrap();
        let total: u64 = piles.iter().map(|p| p.as_u64().unwrap()).sum();
        assert!(total <= 52);
    }
}

#[test]
fn round_plays_are_checked_against_the_current_hand() {
    let (request, _) = played_round(Settings::default(), 1, 0);
    let mut short = request.clone();
    short["plays"].as_array_mut().unwrap().truncate(10);
    let mut long = request.clone();
    long["plays"].as_array_mut().unwrap().push(json!("AS"));
    let mut swapped = request.clone();
    swapped["plays"].as_array_mut().unwrap().swap(0, 1);
    let mut bad_dealer = request.clone();
    bad_dealer["dealer"] = json!(2);
    let answers = ask(&[short, long, swapped, bad_dealer].map(|r| r.to_string()));
    let error = |i: usize| answers[i]["error"].as_str().unwrap().to_owned();
    assert!(
        error(0).contains("plays end before the round does: 10 given, 38"),
        "{}",
        error(0)
    );
    assert!(
        error(1).contains("play 48 (AS): the round is over"),
        "{}",
        error(1)
    );
    assert!(
        error(2).contains("play 0") && error(2).contains("is not in seat 1's hand"),
        "{}",
        error(2)
    );
    assert!(
        error(3).contains("dealer must be a seat from 0 to 1"),
        "{}",
        error(3)
    );
}

#[test]
fn bot_answers_a_card_of_the_hand_of_the_seat_to_move() {
    let (round_request, _) = played_round(Settings::default(), 4, 1);
    let deck = round_request["deck"].clone();
    let plays = round_request["plays"].as_array().unwrap().clone();
    let request = |policy: &str, played: usize, seed: u64| {
        json!({"op":"bot","policy":policy,"deck":deck,"dealer":1,"plays":plays[..played],
               "seed":seed,"worlds":8})
        .to_string()
    };
    let mut lines = Vec::new();
    for policy in ["random", "easy", "greedy", "medium", "hard"] {
        for played in [0, 5, 20, 47] {
            lines.push(request(policy, played, 1));
        }
    }
    lines.push(request("hard", 20, 1));
    lines.push(request("psychic", 0, 1));
    lines.push(request("hard", 48, 1));
    let answers = ask(&lines);
    let policies = 5;
    for (i, answer) in answers[..policies * 4].iter().enumerate() {
        let played = [0, 5, 20, 47][i % 4];
        // Replay the round to see whose turn it is and what that seat holds.
        let cards: Vec<Card> = serde_json::from_value(deck.clone()).unwrap();
        let mut round = Round::start(
            &Settings::default(),
            0,
            Deck::from_cards(cards.try_into().unwrap()),
            Seat(1),
            &mut Vec::new(),
        );
        for card in &plays[..played] {
            let card: Card = serde_json::from_value(card.clone()).unwrap();
            let seat = round.turn();
            round
                .play(&Settings::default(), seat, card, None, &mut Vec::new())
                .unwrap();
        }
        assert_eq!(answer["seat"], json!(round.turn().0), "{answer}");
        let card: Card = serde_json::from_value(answer["card"].clone()).unwrap();
        assert!(round.hand(round.turn()).contains(card), "{answer}");
    }
    // Greedy and its level name "medium" are one policy; the same seed, the same answer.
    assert_eq!(answers[8..12], answers[12..16]);
    assert_eq!(answers[policies * 4], answers[18]);
    let error = |i: usize| answers[i]["error"].as_str().unwrap().to_owned();
    assert!(
        error(21).contains("unknown variant `psychic`"),
        "{}",
        error(21)
    );
    assert!(error(22).contains("the round is over"), "{}", error(22));
}

#[test]
fn the_hard_bot_answers_the_same_whatever_the_cards_it_cannot_see() {
    // Dealer 1: seat 0 holds the deck's cards 0-3, seat 1 cards 4-7, the table 8-11.
    // Seat 0 plays first; everything but its hand and the table is hidden from it.
    let rules = json!({"clean_start_table": false});
    let mut lines = Vec::new();
    for seed in 0..6u8 {
        let cards: Vec<Card> = Deck::shuffled(&Seed([seed; 32]), 0).iter().collect();
        let mut other = cards.clone();
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(u64::from(seed));
        let mut hidden: Vec<Card> = other[4..8].iter().chain(&other[12..]).copied().collect();
        for i in (1..hidden.len()).rev() {
            let j = rand_core::RngCore::next_u32(&mut rng) as usize % (i + 1);
            hidden.swap(i, j);
        }
        other[4..8].copy_from_slice(&hidden[..4]);
        other[12..].copy_from_slice(&hidden[4..]);
        assert_ne!(cards, other);
        for deck in [cards, other] {
            lines.push(
                json!({"op":"bot","policy":"hard","deck":deck,"dealer":1,"plays":[],
                       "seed":seed,"worlds":16,"rules":rules})
                .to_string(),
            );
        }
    }
    let answers = ask(&lines);
    for pair in answers.chunks(2) {
        assert!(pair[0]["card"].is_string(), "{}", pair[0]);
        assert_eq!(pair[0], pair[1]);
    }
}
