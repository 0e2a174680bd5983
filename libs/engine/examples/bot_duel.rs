//! Bots against bots, on every core: `cargo run --release -p basra-engine --example bot_duel
//! -- <command>` (`--help` lists them; figures in `docs/performance.md`, "Bots").
//!
//! - `levels N`: the levels against each other, N matches to 101 each: hard vs medium
//!   (greedy), hard vs easy, easy vs medium, easy vs random, medium vs random, and the
//!   four-seat hard team against the greedy team.
//! - `duel A B N`: one pairing (`--seats 4` for partnerships, `--worlds W` for the search).
//! - `budgets N W1,W2,..`: hard at each budget against greedy: win rate and decision time.
//! - `timing N`: hard's decision times over N whole matches against greedy, on one core.
//!
//! Each side plays seat 0 (its team seats 0 and 2) in half the matches; match `i` is dealt
//! from seed `i`, so a run is reproducible whatever the number of threads. A win rate comes
//! with its 95 % confidence interval (normal approximation; a match always has a winner).

use std::time::{Duration, Instant};

use basra_engine::bot::{Policy, decide};
use basra_engine::search::{Budget, Memory};
use basra_engine::{Action, Event, Game, Seats, Seed, Settings, Side};
use clap::{Parser, Subcommand, ValueEnum};
use rand_chacha::ChaCha8Rng;
use rand_core::SeedableRng;

#[derive(Parser)]
#[command(about = "Bots against bots: win rates and decision times")]
struct Cli {
    /// Worker threads (default: every core).
    #[arg(long, global = true)]
    threads: Option<usize>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// The levels against each other, N matches each.
    Levels {
        #[arg(default_value_t = 1_000)]
        matches: u32,
    },
    /// One pairing: A against B.
    Duel {
        a: Level,
        b: Level,
        #[arg(default_value_t = 1_000)]
        matches: u32,
        /// Seats at the table (4: partnerships, A's team against B's).
        #[arg(long, default_value_t = 2)]
        seats: u8,
        /// The search bot's worlds per decision (default: the hard budget).
        #[arg(long)]
        worlds: Option<u32>,
    },
    /// Hard at each budget (worlds per decision) against greedy.
    Budgets {
        matches: u32,
        #[arg(value_delimiter = ',')]
        worlds: Vec<u32>,
    },
    /// Hard's decision times over whole matches against greedy, on one core.
    Timing {
        #[arg(default_value_t = 100)]
        matches: u32,
        #[arg(long)]
        worlds: Option<u32>,
    },
}

#[derive(Clone, Copy, ValueEnum)]
enum Level {
    Random,
    Easy,
    Medium,
    Hard,
}

impl Level {
    fn policy(self) -> Policy {
        match self {
            Level::Random => Policy::Random,
            Level::Easy => Policy::Easy,
            Level::Medium => Policy::Greedy,
            Level::Hard => Policy::Hard,
        }
    }
}

/// One pairing to play.
#[derive(Clone, Copy)]
struct Duel {
    a: Policy,
    b: Policy,
    seats: Seats,
    budget: Budget,
    matches: u32,
}

/// What a pairing gave.
#[derive(Default)]
struct Outcome {
    matches: u32,
    a_wins: u32,
    a_points: u64,
    b_points: u64,
    plays: u64,
    rounds: u64,
    /// Basras made by [A, B] × [ordinary, Jack, Komi].
    basras: [[u64; 3]; 2],
    /// Decision times of the search bot (`Policy::Hard`), when it played.
    decisions: Vec<Duration>,
    elapsed: Duration,
}

impl Outcome {
    fn merge(&mut self, other: Outcome) {
        self.matches += other.matches;
        self.a_wins += other.a_wins;
        self.a_points += other.a_points;
        self.b_points += other.b_points;
        self.plays += other.plays;
        self.rounds += other.rounds;
        for (mine, theirs) in self.basras.iter_mut().zip(other.basras) {
            for (total, count) in mine.iter_mut().zip(theirs) {
                *total += count;
            }
        }
        self.decisions.extend(other.decisions);
    }

    /// The win rate of A in percent and the half-width of its 95 % confidence interval.
    fn win_rate(&self) -> (f64, f64) {
        let n = f64::from(self.matches);
        let p = f64::from(self.a_wins) / n;
        (100.0 * p, 100.0 * 1.96 * (p * (1.0 - p) / n).sqrt())
    }
}

fn main() {
    let cli = Cli::parse();
    let threads = cli.threads.unwrap_or_else(|| {
        std::thread::available_parallelism()
            .map(usize::from)
            .unwrap_or(1)
    });
    let two = Seats::Two;
    match cli.command {
        Command::Levels { matches } => {
            println!("{matches} matches to 101 per pairing, {threads} threads");
            let started = Instant::now();
            for (a, b, seats) in [
                (Policy::Hard, Policy::Greedy, two),
                (Policy::Hard, Policy::Easy, two),
                (Policy::Greedy, Policy::Easy, two),
                (Policy::Easy, Policy::Random, two),
                (Policy::Greedy, Policy::Random, two),
                (Policy::Hard, Policy::Greedy, Seats::Four),
            ] {
                let duel = Duel {
                    a,
                    b,
                    seats,
                    budget: Budget::HARD,
                    matches,
                };
                report(&duel, &play(duel, threads));
            }
            println!("{:.1} s in all", started.elapsed().as_secs_f64());
        }
        Command::Duel {
            a,
            b,
            matches,
            seats,
            worlds,
        } => {
            let duel = Duel {
                a: a.policy(),
                b: b.policy(),
                seats: if seats == 4 { Seats::Four } else { two },
                budget: worlds.map_or(Budget::HARD, |worlds| Budget { worlds }),
                matches,
            };
            report(&duel, &play(duel, threads));
        }
        Command::Budgets { matches, worlds } => {
            println!(
                "hard at each budget against greedy, {matches} matches each, {threads} threads"
            );
            println!("| worlds | hard wins (95 % CI) | decision p50 | p99 | max | time |");
            println!("|---|---|---|---|---|---|");
            for worlds in worlds {
                let duel = Duel {
                    a: Policy::Hard,
                    b: Policy::Greedy,
                    seats: two,
                    budget: Budget { worlds },
                    matches,
                };
                let mut outcome = play(duel, threads);
                let (rate, ci) = outcome.win_rate();
                let [p50, p99, max] = percentiles(&mut outcome.decisions);
                println!(
                    "| {worlds} | {rate:.1} % ± {ci:.1} | {p50} | {p99} | {max} | {:.0} s |",
                    outcome.elapsed.as_secs_f64()
                );
            }
        }
        Command::Timing { matches, worlds } => {
            let duel = Duel {
                a: Policy::Hard,
                b: Policy::Greedy,
                seats: two,
                budget: worlds.map_or(Budget::HARD, |worlds| Budget { worlds }),
                matches,
            };
            let mut outcome = play(duel, 1);
            let count = outcome.decisions.len();
            let mean = outcome.decisions.iter().sum::<Duration>() / count.max(1) as u32;
            let [p50, p99, max] = percentiles(&mut outcome.decisions);
            println!(
                "hard ({} worlds) against greedy, {matches} matches on one thread: {count} \
                 decisions, p50 {p50}, p99 {p99}, max {max}, mean {}",
                duel.budget.worlds,
                micros(mean)
            );
        }
    }
}

/// Plays a pairing on `threads` threads.
fn play(duel: Duel, threads: usize) -> Outcome {
    let started = Instant::now();
    let mut outcome = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|t| {
                scope.spawn(move || {
                    let mut outcome = Outcome::default();
                    for i in (t as u32..duel.matches).step_by(threads) {
                        one_match(&duel, i, &mut outcome);
                    }
                    outcome
                })
            })
            .collect();
        let mut all = Outcome::default();
        for worker in workers {
            all.merge(worker.join().expect("a worker finished"));
        }
        all
    });
    outcome.elapsed = started.elapsed();
    outcome
}

/// Match `i`: A's side is side `i % 2`.
fn one_match(duel: &Duel, i: u32, outcome: &mut Outcome) {
    let settings = Settings {
        seats: duel.seats,
        ..Settings::default()
    };
    let a_side = Side((i % 2) as u8);
    let mut seed = [0u8; 32];
    seed[..4].copy_from_slice(&i.to_le_bytes());
    let mut rng = ChaCha8Rng::seed_from_u64(u64::from(i));
    let (mut game, _) = Game::new(settings, Seed(seed)).expect("valid settings");
    let mut events = Vec::new();
    while let Some(seat) = game.turn() {
        let policy = if seat.side() == a_side {
            duel.a
        } else {
            duel.b
        };
        let view = game.view(Some(seat));
        let memory = Memory::of(game.round());
        let started = Instant::now();
        let action: Action =
            decide(policy, &view, &memory, &duel.budget, &mut rng).expect("the seat plays");
        if policy == Policy::Hard {
            outcome.decisions.push(started.elapsed());
        }
        events.clear();
        game.apply_into(&action, &mut events)
            .expect("bots play legal cards");
        outcome.plays += 1;
        for event in &events {
            match *event {
                Event::CardPlayed {
                    seat,
                    basra: Some(kind),
                    ..
                } => {
                    let who = usize::from(seat.side() != a_side);
                    outcome.basras[who][kind as usize] += 1;
                }
                Event::RoundEnded(_) => outcome.rounds += 1,
                _ => {}
            }
        }
    }
    let result = game.result().expect("the match ended");
    outcome.matches += 1;
    if result.winner == a_side {
        outcome.a_wins += 1;
    }
    outcome.a_points += u64::from(result.totals[a_side.index()]);
    outcome.b_points += u64::from(result.totals[a_side.other().index()]);
}

fn report(duel: &Duel, outcome: &Outcome) {
    let name = |policy| match policy {
        Policy::Random => "random",
        Policy::Easy => "easy",
        Policy::Greedy => "medium (greedy)",
        Policy::Hard => "hard",
    };
    let (rate, ci) = outcome.win_rate();
    let n = f64::from(outcome.matches);
    let table = match duel.seats {
        Seats::Two => String::new(),
        Seats::Four => " (four seats, teams)".into(),
    };
    let per_round = |counts: [u64; 3]| {
        let r = outcome.rounds as f64;
        format!(
            "{:.2} / {:.3} / {:.3}",
            counts[0] as f64 / r,
            counts[1] as f64 / r,
            counts[2] as f64 / r
        )
    };
    println!(
        "{} vs {}{table}: {} of {} matches, {rate:.1} % ± {ci:.1}; mean final score {:.1} to \
         {:.1}; Basras per round (ordinary / Jack / Komi) {} to {}; {:.2} rounds, {:.0} plays \
         a match; {:.1} s",
        name(duel.a),
        name(duel.b),
        outcome.a_wins,
        outcome.matches,
        outcome.a_points as f64 / n,
        outcome.b_points as f64 / n,
        per_round(outcome.basras[0]),
        per_round(outcome.basras[1]),
        outcome.rounds as f64 / n,
        outcome.plays as f64 / n,
        outcome.elapsed.as_secs_f64()
    );
}

/// p50, p99 and max, formatted.
fn percentiles(times: &mut [Duration]) -> [String; 3] {
    if times.is_empty() {
        return ["-".into(), "-".into(), "-".into()];
    }
    times.sort_unstable();
    let at = |q: f64| times[((times.len() - 1) as f64 * q).round() as usize];
    [micros(at(0.5)), micros(at(0.99)), micros(at(1.0))]
}

fn micros(time: Duration) -> String {
    format!("{:.2} ms", time.as_secs_f64() * 1e3)
}
