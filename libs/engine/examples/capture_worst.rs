//! The slowest largest-capture searches among random 12-card all-number tables:
//! `cargo run --release -p basra-engine --example capture_worst -- [tables]`.
//! Each table is timed as the best of four runs, to keep scheduler noise out.

use std::hint::black_box;
use std::time::Instant;

use basra_engine::Card;
use basra_engine::capture::largest_cover;
use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};

fn main() {
    let tables: usize = std::env::args()
        .nth(1)
        .map(|n| n.parse().expect("the number of tables"))
        .unwrap_or(200_000);
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    let mut times = Vec::with_capacity(tables);
    let mut worst = (0u128, Vec::new(), 0u8);
    for _ in 0..tables {
        // 12 distinct number cards (indices 0..40 are A..10) and a played value.
        let mut numbers: Vec<u8> = (0..40).collect();
        for i in (1..40).rev() {
            numbers.swap(i, rng.next_u32() as usize % (i + 1));
        }
        let table: Vec<Card> = numbers[..12]
            .iter()
            .map(|&i| Card::from_index(i).unwrap())
            .collect();
        let value = (rng.next_u32() % 10 + 1) as u8;
        let nanos = (0..4)
            .map(|_| {
                let started = Instant::now();
                black_box(largest_cover(black_box(&table), value));
                started.elapsed().as_nanos()
            })
            .min()
            .unwrap();
        times.push(nanos);
        if nanos > worst.0 {
            worst = (nanos, table, value);
        }
    }
    times.sort_unstable();
    let at = |q: f64| times[((times.len() - 1) as f64 * q) as usize];
    println!(
        "{tables} random 12-card number tables: p50 {} ns, p99 {} ns, p99.9 {} ns, max {} ns",
        at(0.5),
        at(0.99),
        at(0.999),
        worst.0
    );
    println!("slowest: table {:?}, played value {}", worst.1, worst.2);
}
