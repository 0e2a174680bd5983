//! The short form of the `rules_tool` fuzz target (`fuzz/`): any line, however broken,
//! gets exactly one JSON object back and never a panic.

use proptest::prelude::*;

fn check(line: &str) {
    let answer = basra_rules::answer(line);
    assert!(!answer.contains('\n'), "one line: {answer}");
    let value: serde_json::Value = serde_json::from_str(&answer).expect("the answer is JSON");
    assert!(value.is_object(), "{answer}");
}

/// Lines that look like requests, with the parts shuffled, cut and misspelt.
fn request_like() -> impl Strategy<Value = String> {
    let card = prop::sample::select(vec![
        "\"AS\"", "\"7D\"", "\"10H\"", "\"JC\"", "\"QS\"", "\"KD\"", "\"1S\"", "\"7X\"", "7",
        "null",
    ]);
    let cards =
        prop::collection::vec(card.clone(), 0..8).prop_map(|c| format!("[{}]", c.join(",")));
    (
        prop::sample::select(vec!["capture", "round", "other", ""]),
        cards.clone(),
        card,
        cards,
        0..6u8,
        any::<bool>(),
    )
        .prop_map(|(op, table, card, plays, dealer, rules)| {
            let rules = if rules {
                r#","rules":{"komi_basra":"single_card","seats":4}"#
            } else {
                ""
            };
            format!(
                r#"{{"op":"{op}","table":{table},"card":{card},"deck":{plays},"dealer":{dealer},"plays":{plays}{rules}}}"#
            )
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn any_text_gets_one_json_answer(line in "[^\n]{0,200}") {
        check(&line);
    }

    #[test]
    fn request_like_lines_get_one_json_answer(line in request_like()) {
        check(&line);
    }
}
