//! `--rate R`: the open loop. Plays arrive on a schedule that does not wait for the
//! server's answers, R plays a second over all the two-player rooms, and each play's
//! latency runs from its scheduled instant, not from when it was sent (so a slow answer
//! that delays the next play is counted in that play too: no coordinated omission).
//!
//! A turn-based game cannot take a play from a player whose turn it is not, so the
//! schedule is the room's, not the player's: each room has its own sequence of instants,
//! `interval = rooms / R` apart on average (a random phase in `[0, interval)` for the
//! first; then gaps drawn uniformly from `[interval / 2, 3 × interval / 2]`). At each
//! instant the seat whose turn it is plays: at once if its turn came before the instant
//! (it waits for it), or as soon as its turn comes if the room is behind its schedule
//! (the previous play's answer was late). A room never has two plays in flight, as in
//! the game; its next instant follows from its previous instant, not from when that play
//! was sent, so a room that falls behind stays behind until its answers come faster than
//! its schedule. With many rooms, their instants together arrive as a Poisson stream at
//! R a second (the superposition of many independent sparse renewal streams), and no
//! room's gap is shorter than half its interval, so a play waits for its own room's
//! previous one only when that one is later than half an interval.
//!
//! Pure functions: the caller draws the uniform numbers `u` in `[0, 1)` and reads the clock.

/// One room's schedule: the mean gap between its plays.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Schedule {
    /// Mean nanoseconds between two plays of a room.
    pub(crate) interval_ns: u64,
}

impl Schedule {
    /// `rate` plays a second in total over `rooms` rooms.
    pub(crate) fn new(rate: f64, rooms: usize) -> Schedule {
        let interval = rooms as f64 / rate.max(f64::MIN_POSITIVE) * 1e9;
        Schedule {
            interval_ns: interval.round().max(1.0) as u64,
        }
    }

    /// A room's first instant after `start_ns`: a phase `u × interval` later.
    pub(crate) fn first(&self, start_ns: u64, u: f64) -> u64 {
        start_ns + (self.interval_ns as f64 * u.clamp(0.0, 1.0)) as u64
    }

    /// The instant after `previous_ns`: a gap of `(1/2 + u) × interval`, between half and
    /// one and a half intervals, one interval on average.
    pub(crate) fn next(&self, previous_ns: u64, u: f64) -> u64 {
        previous_ns + (self.interval_ns as f64 * (0.5 + u.clamp(0.0, 1.0))) as u64
    }
}

/// When the seat whose turn it is plays the play scheduled at `scheduled_ns`, its turn
/// having come at `turn_ns`: the later of the two.
pub(crate) fn send_at(scheduled_ns: u64, turn_ns: u64) -> u64 {
    scheduled_ns.max(turn_ns)
}

/// A play's latency in microseconds: from its scheduled instant to the opponent's
/// receipt of it (`received_ns`), whenever it was actually sent.
pub(crate) fn latency_us(scheduled_ns: u64, received_ns: u64) -> u32 {
    u32::try_from(received_ns.saturating_sub(scheduled_ns) / 1000).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_interval_spreads_the_rate_over_the_rooms() {
        // 1,000 rooms at 5,000 plays/s: each room plays every 200 ms on average.
        assert_eq!(Schedule::new(5_000.0, 1_000).interval_ns, 200_000_000);
        assert_eq!(Schedule::new(40.0, 4).interval_ns, 100_000_000);
    }

    #[test]
    fn gaps_lie_within_half_and_one_and_a_half_intervals_and_average_one() {
        let schedule = Schedule::new(10.0, 1); // 100 ms
        let first = schedule.first(7, 0.25);
        assert_eq!(first, 7 + 25_000_000);
        assert_eq!(schedule.first(7, 0.0), 7);
        assert_eq!(schedule.next(first, 0.0) - first, 50_000_000);
        assert_eq!(schedule.next(first, 1.0) - first, 150_000_000);
        // Evenly spread draws: the mean gap is the interval.
        let draws = 1_000;
        let mut at = 0;
        for i in 0..draws {
            at = schedule.next(at, (i as f64 + 0.5) / draws as f64);
        }
        let mean = at as f64 / draws as f64;
        assert!((mean - 100_000_000.0).abs() < 1_000.0, "mean gap {mean}");
    }

    #[test]
    fn the_rooms_together_offer_the_rate() {
        // 500 rooms at 2,500 plays/s for 10 s: about 25,000 instants.
        let (rooms, rate, seconds) = (500, 2_500.0, 10u64);
        let schedule = Schedule::new(rate, rooms);
        let end = seconds * 1_000_000_000;
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        let mut uniform = || {
            // xorshift64*: reproducible draws without a dependency.
            state ^= state >> 12;
            state ^= state << 25;
            state ^= state >> 27;
            (state.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 11) as f64 / (1u64 << 53) as f64
        };
        let mut instants = 0;
        for _ in 0..rooms {
            let mut at = schedule.first(0, uniform());
            while at < end {
                instants += 1;
                at = schedule.next(at, uniform());
            }
        }
        let offered = instants as f64 / seconds as f64;
        assert!((offered - rate).abs() < rate * 0.02, "{offered} plays/s");
    }

    #[test]
    fn latency_runs_from_the_schedule_not_from_the_send() {
        let scheduled = 1_000_000_000;
        // The turn came before the instant: sent on time.
        assert_eq!(send_at(scheduled, scheduled - 5_000_000), scheduled);
        // The room was behind (its previous answer came 30 ms late): sent when the turn
        // came, and the 30 ms count in this play's latency.
        let turn = scheduled + 30_000_000;
        let sent = send_at(scheduled, turn);
        assert_eq!(sent, turn);
        let received = sent + 2_000_000;
        assert_eq!(latency_us(scheduled, received), 32_000);
        assert_eq!(
            latency_us(sent, received),
            2_000,
            "what a closed loop would see"
        );
        // Never negative, never wrapped.
        assert_eq!(latency_us(scheduled, scheduled - 1), 0);
        assert_eq!(latency_us(0, u64::MAX), u32::MAX);
    }
}
