//! The computer's plays off the async runtime.
//!
//! The levels are policies of the engine (`basra_engine::bot`): EASY plays `Policy::Easy`,
//! MEDIUM greedy, HARD the search bot. Easy and greedy decide in a microsecond, inside the
//! room's change ([`Room::on_timer`](crate::room::Room::on_timer)). A HARD decision takes
//! milliseconds of CPU (`docs/performance.md`, "Bots"), which must not hold a worker
//! thread of the runtime that serves the players' streams. So a bot's timer goes through
//! the timer's own change ([`super::timers`]):
//!
//! 1. the room's change runs as usual, except that when a hard bot's turn is due it stores
//!    nothing and hands out the turn as the seat sees it ([`Room::hard_bot_turn`](crate::room::Room::hard_bot_turn));
//! 2. the search runs on threads of its own ([`SearchThreads`], at the lowest CPU priority
//!    unless `[bots] search_priority` says otherwise), at most [`Bots`]' `concurrent` at a
//!    time (others wait for a permit, up to `queue`), within `[bots]`' worlds and time;
//! 3. the change runs again with the card chosen. If the room moved on meanwhile (a
//!    resignation, another replica), or no permit came in time, the bot plays the greedy
//!    card instead of thinking again.
//!
//! The timer's claim on the room ([`RoomStore::claim_due`](crate::store::RoomStore::claim_due))
//! keeps other replicas from playing the same turn while the search runs. The search
//! runs through the bot's think delay (`game.bot_delay_ms`): the replica whose commit
//! gave the bot its turn starts it then ([`super::timers`]), and the card is played when
//! the delay has passed (a replica that fires the room without having started it, as
//! after a failover, thinks when it fires).

use std::sync::Arc;
use std::time::{Duration, Instant};

use basra_engine::search::{self, Budget};
use serde::Deserialize;
use tokio::sync::{Semaphore, oneshot};

use crate::metrics::GameMetrics;
use crate::room::{BotChoice, BotTurn};

use basra_platform::search_threads::{SearchPriority, SearchThreads};

/// The `[bots]` section.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BotSettings {
    /// Worlds the hard bot deals per decision (its iterations).
    pub hard_worlds: u32,
    /// The most milliseconds a hard decision may compute; it plays the best card so far.
    pub hard_max_ms: u64,
    /// Most hard decisions computing at once on this replica; 0: half the cores (at
    /// least one).
    pub concurrent: usize,
    /// The most milliseconds a decision waits for its turn to compute; then the bot plays
    /// the greedy card.
    pub queue_ms: u64,
    /// The search threads' CPU priority: `low` (nice 19, the players' plays first) or
    /// `normal`.
    pub search_priority: SearchPriority,
}

impl Default for BotSettings {
    /// The values of `config/default.toml`.
    fn default() -> BotSettings {
        BotSettings {
            hard_worlds: Budget::HARD.worlds,
            hard_max_ms: 25,
            concurrent: 0,
            queue_ms: 1000,
            search_priority: SearchPriority::Low,
        }
    }
}

impl BotSettings {
    /// Checks the ranges.
    pub fn validate(&self) -> std::result::Result<(), String> {
        if !(1..=100_000).contains(&self.hard_worlds) {
            return Err(format!(
                "bots.hard_worlds must be 1..=100000, not {}",
                self.hard_worlds
            ));
        }
        if !(1..=10_000).contains(&self.hard_max_ms) {
            return Err(format!(
                "bots.hard_max_ms must be 1..=10000, not {}",
                self.hard_max_ms
            ));
        }
        if self.concurrent > 1024 || self.queue_ms > 60_000 {
            return Err("bots.concurrent must be at most 1024 and bots.queue_ms 60000".into());
        }
        Ok(())
    }
}

/// The hard bot's budget, its thinking slots and the threads they compute on (clones share
/// the slots and the threads).
#[derive(Debug, Clone)]
pub struct Bots {
    budget: Budget,
    max_think: Duration,
    queue: Duration,
    slots: Arc<Semaphore>,
    threads: SearchThreads,
}

impl Default for Bots {
    fn default() -> Bots {
        Bots::new(&BotSettings::default())
    }
}

impl Bots {
    /// Slots, budget and threads (one a slot) as `settings` say.
    pub fn new(settings: &BotSettings) -> Bots {
        let concurrent = match settings.concurrent {
            0 => std::thread::available_parallelism().map_or(1, |n| (n.get() / 2).max(1)),
            n => n,
        };
        Bots {
            budget: Budget {
                worlds: settings.hard_worlds,
            },
            max_think: Duration::from_millis(settings.hard_max_ms),
            queue: Duration::from_millis(settings.queue_ms),
            slots: Arc::new(Semaphore::new(concurrent)),
            threads: SearchThreads::start("hard-bot", concurrent, settings.search_priority),
        }
    }

    /// The most a decision computes (`hard_max_ms`).
    pub fn max_think(&self) -> Duration {
        self.max_think
    }

    /// The search's card for `turn`, computed on the search threads; `None` when no slot
    /// came within the queue time (or the search failed). Dropping the future stops the
    /// search (at its next world) or skips it. `metrics` count the
    /// decisions, the fallbacks, and the searches' wall and CPU time.
    pub async fn think(&self, turn: BotTurn, metrics: &Arc<GameMetrics>) -> Option<BotChoice> {
        let slot = tokio::time::timeout(self.queue, Arc::clone(&self.slots).acquire_owned()).await;
        let Ok(Ok(permit)) = slot else {
            metrics.hard_bot_fallbacks.inc();
            return None;
        };
        let (budget, max_think) = (self.budget, self.max_think);
        let metrics = Arc::clone(metrics);
        let (answer, answered) = oneshot::channel();
        self.threads.run(move || {
            let _permit = permit;
            // Nobody waits for the card any more (the turn was played without it): the
            // slot goes to the next decision at once.
            if answer.is_closed() {
                return;
            }
            let (started, cpu_started) = (Instant::now(), thread_cpu_ns());
            let mut rng = rand::rng();
            let card = search::best_card(&turn.view, &turn.memory, &budget, &mut rng, || {
                started.elapsed() >= max_think || answer.is_closed()
            });
            let think = started.elapsed();
            metrics.hard_bot_decisions.inc();
            metrics.hard_bot_think_seconds.observe(think.as_secs_f64());
            if let (Some(from), Some(to)) = (cpu_started, thread_cpu_ns()) {
                metrics
                    .hard_bot_cpu_seconds
                    .inc_by(to.saturating_sub(from) as f64 / 1e9);
            }
            tracing::debug!(
                seat = turn.seat.0,
                think_us = think.as_micros() as u64,
                "hard bot decided"
            );
            let choice = card.map(|card| BotChoice {
                seq: turn.seq,
                seat: turn.seat,
                card,
            });
            let _ = answer.send(choice);
        });
        answered.await.ok().flatten()
    }
}

/// The calling thread's CPU time in nanoseconds (`/proc/thread-self/schedstat`, Linux);
/// `None` where the kernel does not say.
fn thread_cpu_ns() -> Option<u64> {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use crate::room::{BotLevel, Room, Visibility};
    use basra_engine::bot::{self, Policy};
    use basra_engine::{Action, Card, Event, Seed};

    use super::*;
    use crate::room::Occupant;
    use crate::room::events::LogEvent;
    use crate::room::timing::Timing;
    use crate::settings::Settings;

    /// A match of a player (seat 0) against a bot of `level`, the player's first card
    /// played: the bot is due at once (no think delay in tests).
    fn room_against(level: BotLevel) -> Room {
        let occupants = vec![
            Occupant::Player {
                user_id: "a".into(),
                name: "A".into(),
            },
            Occupant::Bot { level },
        ];
        let mut room = Room::new(
            "r".into(),
            basra_engine::Settings::default(),
            occupants,
            false,
            true,
            Visibility::Private,
            Timing::for_tests(),
            1,
        );
        room.start_if_full(Seed([9; 32]), "m".into(), 2);
        let card = room.game.as_ref().unwrap().legal_plays()[0].card;
        room.play(0, card, None, false, String::new(), 3).unwrap();
        let _ = room.take_pending();
        room
    }

    /// The last card played: by which seat, and whether the server played it for a player.
    fn last_play(room: &mut Room) -> (u8, Card, bool) {
        room.take_pending()
            .into_iter()
            .rev()
            .find_map(|stored| match stored.event {
                LogEvent::CardPlayed {
                    played: Event::CardPlayed { seat, card, .. },
                    automatic,
                    ..
                } => Some((seat.0, card, automatic)),
                _ => None,
            })
            .expect("a card was played")
    }

    #[test]
    fn the_embedded_defaults_are_the_default_bot_settings() {
        let settings = Settings::from_env(Vec::new()).unwrap();
        assert_eq!(settings.bots, BotSettings::default());
        let env = |key: &str, value: &str| vec![(format!("BASRA_BOTS__{key}"), value.to_owned())];
        let tuned = Settings::from_env(env("HARD_WORLDS", "40")).unwrap();
        assert_eq!(tuned.bots.hard_worlds, 40);
        assert!(Settings::from_env(env("HARD_WORLDS", "0")).is_err());
        assert!(Settings::from_env(env("HARD_MAX_MS", "0")).is_err());
        let normal = Settings::from_env(env("SEARCH_PRIORITY", "normal")).unwrap();
        assert_eq!(normal.bots.search_priority, SearchPriority::Normal);
        assert!(Settings::from_env(env("SEARCH_PRIORITY", "high")).is_err());
    }

    #[test]
    fn only_a_due_hard_bot_hands_out_its_turn() {
        assert!(room_against(BotLevel::Medium).hard_bot_turn(4).is_none());
        assert!(room_against(BotLevel::Easy).hard_bot_turn(4).is_none());
        let room = room_against(BotLevel::Hard);
        let due = room.bot_due_ms.unwrap();
        assert!(
            room.hard_bot_turn(due - 1).is_none(),
            "not before it is due"
        );
        let turn = room.hard_bot_turn(due).unwrap();
        assert_eq!((turn.seq, turn.seat.0), (room.seq, 1));
        assert_eq!(
            turn.view.hand,
            room.game.as_ref().unwrap().round().hand(turn.seat)
        );
    }

    #[tokio::test]
    async fn a_hard_bot_plays_the_card_thought_of_for_the_room_as_it_is() {
        let mut room = room_against(BotLevel::Hard);
        let now = room.bot_due_ms.unwrap();
        let turn = room.hard_bot_turn(now).unwrap();
        let hand = turn.view.hand;
        let metrics = Arc::new(GameMetrics::default());
        let choice = Bots::default()
            .think(turn, &metrics)
            .await
            .expect("a slot is free");
        assert_eq!(metrics.hard_bot_decisions.get(), 1);
        if cfg!(target_os = "linux") {
            assert!(
                metrics.hard_bot_cpu_seconds.get() > 0.0,
                "a search uses CPU"
            );
        }
        assert!(hand.contains(choice.card));
        // Not the card greedy would play, so that the test tells them apart.
        let choice = BotChoice {
            card: hand
                .iter()
                .find(|&card| card != greedy_card(&room))
                .unwrap(),
            ..choice
        };
        let mut stale = room.clone();
        assert!(room.on_timer_with(now, Some(&choice)));
        assert_eq!(last_play(&mut room), (1, choice.card, false));
        // For another state of the room (a different seq), the bot plays greedy instead.
        let greedy = greedy_card(&stale);
        let old = BotChoice {
            seq: choice.seq - 1,
            ..choice
        };
        assert!(stale.on_timer_with(now, Some(&old)));
        assert_eq!(last_play(&mut stale), (1, greedy, false));
    }

    fn greedy_card(room: &Room) -> Card {
        let game = room.game.as_ref().unwrap();
        let view = game.view(game.turn());
        match bot::choose(Policy::Greedy, &view, &mut rand::rng()) {
            Some(Action::Play { card, .. }) => card,
            other => panic!("{other:?}"),
        }
    }

    #[tokio::test]
    async fn a_search_nobody_waits_for_stops_and_frees_its_slot() {
        // One slot, and a search that would run for ten seconds.
        let bots = Bots::new(&BotSettings {
            concurrent: 1,
            hard_worlds: 100_000,
            hard_max_ms: 10_000,
            queue_ms: 2_000,
            ..BotSettings::default()
        });
        let room = room_against(BotLevel::Hard);
        let turn = room.hard_bot_turn(room.bot_due_ms.unwrap()).unwrap();
        let metrics = Arc::new(GameMetrics::default());
        let long = tokio::spawn({
            let (bots, turn, metrics) = (bots.clone(), turn.clone(), Arc::clone(&metrics));
            async move { bots.think(turn, &metrics).await }
        });
        tokio::time::sleep(Duration::from_millis(100)).await;
        long.abort();
        // The next decision gets the slot within its queue time: the first search
        // stopped when its caller went away.
        let quick = Bots {
            budget: Budget { worlds: 10 },
            ..bots
        };
        assert!(quick.think(turn, &metrics).await.is_some());
        assert_eq!(metrics.hard_bot_fallbacks.get(), 0);
    }

    #[tokio::test]
    async fn no_thinking_slot_within_the_queue_time_gives_no_card() {
        let bots = Bots::new(&BotSettings {
            concurrent: 1,
            queue_ms: 20,
            ..BotSettings::default()
        });
        let room = room_against(BotLevel::Hard);
        let turn = room.hard_bot_turn(room.bot_due_ms.unwrap()).unwrap();
        let metrics = Arc::new(GameMetrics::default());
        let busy = Arc::clone(&bots.slots).acquire_owned().await.unwrap();
        assert_eq!(bots.think(turn.clone(), &metrics).await, None);
        assert_eq!(metrics.hard_bot_fallbacks.get(), 1);
        drop(busy);
        assert!(bots.think(turn, &metrics).await.is_some());
        assert_eq!(metrics.hard_bot_decisions.get(), 1);
    }
}
