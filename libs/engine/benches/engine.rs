//! Engine speed: `cargo bench -p basra-engine --bench engine` (figures in README, "Performance").

use std::hint::black_box;

use basra_engine::bot::{self, Policy};
use basra_engine::capture::{capture, largest_cover};
use basra_engine::round::Round;
use basra_engine::{Action, Card, Deck, Game, Seat, Seed, Settings};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use rand_chacha::ChaCha8Rng;
use rand_core::SeedableRng;

fn cards(text: &str) -> Vec<Card> {
    text.split_whitespace()
        .map(|c| c.parse().unwrap())
        .collect()
}

/// One whole two-player round: shuffle, deal, 48 random plays, leftovers and scoring.
fn random_rounds(c: &mut Criterion) {
    let settings = Settings::default();
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let mut events = Vec::with_capacity(256);
    let mut round_index = 0u32;
    let seed = Seed([9; 32]);
    let mut group = c.benchmark_group("round");
    group.throughput(Throughput::Elements(1));
    group.bench_function("random_two_player_round", |b| {
        b.iter(|| {
            round_index = round_index.wrapping_add(1);
            events.clear();
            let deck = Deck::shuffled(&seed, round_index);
            let mut round = Round::start(&settings, round_index, deck, Seat(1), &mut events);
            while !round.is_over() {
                let seat = round.turn();
                let card = bot::random_card(round.hand(seat), &mut rng).unwrap();
                round
                    .play(&settings, seat, card, None, &mut events)
                    .unwrap();
            }
            black_box(round.finish(&settings, &mut 0, [0, 0]))
        })
    });
    group.finish();
}

fn capture_search(c: &mut Criterion) {
    let settings = Settings::default();
    let mut group = c.benchmark_group("capture");
    let cases = [
        ("4_card_table", "AS 7H KC 8D", "8S"),
        (
            "12_numbers_sum_10",
            "AC 2D 3H 4S 5C 6D 7H 8S 9C AD 2H 3C",
            "10S",
        ),
        (
            "12_numbers_sum_7",
            "AC 2D 3H 4S 5C 6D AH 2S 3D 4C 5H 6S",
            "7S",
        ),
        (
            "12_numbers_no_cover",
            "9C 9D 9H 8S 8C 8D 8H 6S 6C 6D 6H 4S",
            "5S",
        ),
        // Among the slowest of 1,000,000 random tables (examples/capture_worst.rs): the
        // slowest for the search before December 2026 (75,000 instructions then), and the
        // slowest now (28,500 instructions).
        (
            "12_numbers_slowest_before",
            "8C 2H 6H AH 6C 6S 3C AC 7D AS 5H 4S",
            "10S",
        ),
        (
            "12_numbers_slowest_found",
            "4S 8H AD 5S 6H 9S 2D 4H 8S AS 3C 4C",
            "10S",
        ),
    ];
    for (name, table, played) in cases {
        let table = cards(table);
        let value = played.parse::<Card>().unwrap().value().unwrap();
        group.bench_function(format!("largest_cover/{name}"), |b| {
            b.iter(|| largest_cover(black_box(&table), black_box(value)))
        });
    }
    let table = cards("AC 2D 3H 4S 5C 6D 7H 8S 9C AD 2H 3C");
    let ten: Card = "10S".parse().unwrap();
    group.bench_function("capture/12_numbers_sum_10", |b| {
        b.iter(|| capture(black_box(&table), black_box(ten), &settings))
    });
    group.finish();
}

/// A greedy bot's decision from its view, a few plays into a match.
fn bot_decision(c: &mut Criterion) {
    let (mut game, _) = Game::new(Settings::default(), Seed([4; 32])).unwrap();
    for _ in 0..5 {
        let seat = game.turn().unwrap();
        let card = game.legal_plays()[0].card;
        game.apply(&Action::Play {
            seat,
            card,
            take: None,
        })
        .unwrap();
    }
    let view = game.view(game.turn());
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    assert!(view.hand.len() > 1, "the bot has a real choice to make");
    assert!(bot::choose(Policy::Greedy, &view, &mut rng).is_some());
    let mut group = c.benchmark_group("bot");
    group.bench_function("greedy_decision", |b| {
        b.iter(|| bot::choose(Policy::Greedy, black_box(&view), &mut rng))
    });
    group.bench_function("view_and_greedy_decision", |b| {
        b.iter(|| {
            let view = game.view(game.turn());
            bot::choose(Policy::Greedy, &view, &mut rng)
        })
    });
    group.finish();
}

criterion_group!(benches, random_rounds, capture_search, bot_decision);
criterion_main!(benches);
