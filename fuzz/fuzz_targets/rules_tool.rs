//! The rules tool answers any line with exactly one JSON object and never panics.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(line) = std::str::from_utf8(data) else {
        return;
    };
    if line.contains('\n') {
        return;
    }
    let answer = basra_rules::answer(line);
    assert!(!answer.contains('\n'), "one line: {answer}");
    let value: serde_json::Value = serde_json::from_str(&answer).expect("the answer is JSON");
    assert!(value.is_object(), "{answer}");
});
