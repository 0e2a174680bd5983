//! Greedy bot against random bot: `cargo run --release -p basra-engine --example bot_duel -- N`.
//! Each side takes seat 0 in half the matches. Prints win rate, scores and Basras.

use std::time::Instant;

use basra_engine::bot::{Policy, self_play};
use basra_engine::{Event, Seed, Settings, Side, replay};
use rand_chacha::ChaCha8Rng;
use rand_core::SeedableRng;

fn main() {
    let matches: u32 = std::env::args()
        .nth(1)
        .map(|n| n.parse().expect("the number of matches"))
        .unwrap_or(10_000);
    let mut rng = ChaCha8Rng::seed_from_u64(2026);
    let started = Instant::now();
    let (mut greedy_wins, mut rounds, mut plays) = (0u32, 0u64, 0u64);
    let (mut greedy_points, mut random_points) = (0u64, 0u64);
    let mut basras = [[0u64; 3]; 2]; // [greedy, random] × [basra, jack, komi]
    for i in 0..matches {
        let greedy = (i % 2) as usize;
        let mut policies = [Policy::Random; 2];
        policies[greedy] = Policy::Greedy;
        let mut seed = [0u8; 32];
        seed[..4].copy_from_slice(&i.to_le_bytes());
        let (game, actions) = self_play(Settings::default(), Seed(seed), &policies, &mut rng)
            .expect("valid settings");
        let result = game.result().expect("the match ended");
        if result.winner == Side(greedy as u8) {
            greedy_wins += 1;
        }
        greedy_points += u64::from(result.totals[greedy]);
        random_points += u64::from(result.totals[1 - greedy]);
        plays += actions.len() as u64;
        // The statistics come from the replayed events, which also checks the log replays.
        let (_, events) = replay(Settings::default(), Seed(seed), &actions).expect("replays");
        for event in events {
            if let Event::RoundEnded(score) = event {
                rounds += 1;
                for (who, side) in [(0, greedy), (1, 1 - greedy)] {
                    for (total, &count) in basras[who].iter_mut().zip(&score.basras[side]) {
                        *total += u64::from(count);
                    }
                }
            }
        }
    }
    let n = f64::from(matches);
    let elapsed = started.elapsed();
    println!("greedy vs random, {matches} matches (default rules, target 101)");
    println!(
        "greedy won {greedy_wins} ({:.1} %), random won {} ({:.1} %)",
        100.0 * f64::from(greedy_wins) / n,
        matches - greedy_wins,
        100.0 * f64::from(matches - greedy_wins) / n
    );
    println!(
        "mean final score: greedy {:.1}, random {:.1}; {:.2} rounds and {:.0} plays a match",
        greedy_points as f64 / n,
        random_points as f64 / n,
        rounds as f64 / n,
        plays as f64 / n
    );
    for (name, counts) in [("greedy", basras[0]), ("random", basras[1])] {
        println!(
            "{name} Basras per round: basra {:.2}, jack {:.3}, komi {:.3}",
            counts[0] as f64 / rounds as f64,
            counts[1] as f64 / rounds as f64,
            counts[2] as f64 / rounds as f64
        );
    }
    println!(
        "{:.2} s in all (with a replay of every match)",
        elapsed.as_secs_f64()
    );
}
