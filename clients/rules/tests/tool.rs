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
