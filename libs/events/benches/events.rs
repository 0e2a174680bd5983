//! Pairing speed: `cargo bench -p basra-events --bench events` (figures in
//! docs/performance.md, "Events").

use std::hint::black_box;

use basra_events::{Arena, Entrant, Knockout, Outcome, PlayerId, Schedule, Swiss};
use chrono::{TimeZone, Utc};
use criterion::{BatchSize, Criterion, criterion_group, criterion_main};

fn field(n: usize) -> Vec<Entrant> {
    (0..n)
        .map(|i| {
            let id = 1 + i as u128;
            Entrant::new(PlayerId(id), 1200 + (id * 7919 % 1000) as i32)
        })
        .collect()
}

/// A result that looks like play: the higher-rated wins two times in three, by a hash.
fn result(a: &Entrant, b: &Entrant) -> Outcome {
    let (hi, lo) = if a.rating >= b.rating { (a, b) } else { (b, a) };
    let h = (a.id.0 * 31 + b.id.0 * 17) % 3;
    Outcome::Won(if h == 0 { lo.id } else { hi.id })
}

/// A 1,024-player Swiss with `played` rounds done, ready to pair the next.
fn swiss_after(played: u32) -> Swiss {
    let players = field(1024);
    let rating: std::collections::HashMap<PlayerId, Entrant> =
        players.iter().map(|e| (e.id, *e)).collect();
    let mut s = Swiss::new(&players, 11).unwrap();
    for _ in 0..played {
        let tables = s.pair_next_round().unwrap().tables.clone();
        for t in tables {
            let [a, b] = t.players;
            s.record(t.id, result(&rating[&a], &rating[&b])).unwrap();
        }
    }
    s
}

fn swiss(c: &mut Criterion) {
    let mut group = c.benchmark_group("swiss_1024");
    for played in [0, 5, 10] {
        let before = swiss_after(played);
        group.bench_function(format!("pair_round_{}", played + 1), |b| {
            b.iter_batched(
                || before.clone(),
                |mut s| {
                    black_box(s.pair_next_round().unwrap().tables.len());
                },
                BatchSize::LargeInput,
            )
        });
    }
    group.finish();
}

fn arena(c: &mut Criterion) {
    let start = Utc.with_ymd_and_hms(2026, 1, 1, 20, 0, 0).unwrap();
    let end = Utc.with_ymd_and_hms(2026, 1, 1, 21, 0, 0).unwrap();
    let mut a = Arena::new(start, end).unwrap();
    for e in field(4096) {
        a.join(e, start).unwrap();
    }
    // A later wave: everyone has points and a last opponent.
    let mut later = a.clone();
    for m in later.pair(start).unwrap() {
        later
            .record(m.id, Outcome::Won(m.players[(m.id.0 % 2) as usize]))
            .unwrap();
    }
    let mut group = c.benchmark_group("arena_4096");
    for (name, arena) in [("first_wave", a), ("second_wave", later)] {
        group.bench_function(name, |b| {
            b.iter_batched(
                || arena.clone(),
                |mut a| black_box(a.pair(start).unwrap().len()),
                BatchSize::LargeInput,
            )
        });
    }
    group.finish();
}

fn knockout(c: &mut Criterion) {
    let players = field(1024);
    c.bench_function("knockout_1024_draw", |b| {
        b.iter(|| black_box(Knockout::new(&players).unwrap()))
    });
}

fn schedule(c: &mut Criterion) {
    let s = Schedule::parse("0 20 * * *", "Africa/Cairo").unwrap();
    let now = Utc.with_ymd_and_hms(2026, 3, 1, 12, 0, 0).unwrap();
    c.bench_function("schedule_next_after", |b| {
        b.iter(|| black_box(s.next_after(now).unwrap()))
    });
    c.bench_function("schedule_parse_never_fires", |b| {
        b.iter(|| black_box(Schedule::parse("0 0 30 2 *", "UTC").is_err()))
    });
}

criterion_group!(benches, swiss, arena, knockout, schedule);
criterion_main!(benches);
