//! The timer loop and a room's deadline fired when it is close: a turn timed out, a
//! bot's play, a grace period or a rematch window ending. Every replica's loop also
//! refreshes its presence lease and sweeps the expired ones of others ([`super::lease`]);
//! the rooms due are found through the shards this replica walks ([`super::walks`]).
//!
//! A hard bot thinks through its think delay: when the commit that gives it the turn
//! schedules the room's deadline here, its search starts at once (`Early`) and its card
//! is played when the delay ends, so the card comes on time whenever the search and its
//! wait for a slot take less than the delay.

use std::sync::Arc;
use std::time::Duration;

use basra_proto::basra::game::v1::RejectCode;
use tokio::sync::Semaphore;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::error::{GameError, Result};
use crate::room::timing::now_ms;
use crate::room::{BotChoice, BotTurn, Reject, Room};

use super::{Mutation, Replica, lease};

/// Due rooms a replica's timer loop fires at once (each a task; a room waiting for a
/// store round trip or a hard bot's search holds up no other).
pub const TIMERS_IN_FLIGHT: usize = 64;
/// When a room's next deadline is close — within a timer poll, or a bot's think
/// delay — fires it from here at that moment rather than on the timer loop's next
/// tick: a bot answers on time, and the rooms due spread over time instead of
/// firing in a burst each tick. The claim keeps it to one replica (the timer loop
/// still fires it if this replica dies meanwhile). A hard bot due then starts its search
/// now, for the room as `room` is ([`Early`]).
pub(crate) fn schedule(replica: &Arc<Replica>, room: &Room) {
    let Some(at) = room.next_deadline() else {
        return;
    };
    let wait = at - now_ms();
    let close = replica
        .config
        .timer_poll
        .max(Duration::from_millis(replica.config.timing.bot_delay_ms));
    if wait > close.as_millis() as i64 {
        return;
    }
    let due = tokio::time::Instant::now() + Duration::from_millis(wait.max(0) as u64);
    let early = room
        .hard_bot_turn(at)
        .map(|turn| Early::start(replica, turn, due));
    let replica = Arc::clone(replica);
    let room_id = room.id.clone();
    tokio::spawn(async move {
        if wait > 0 {
            tokio::time::sleep(Duration::from_millis(wait as u64)).await;
        }
        if let Err(err) = fire(&replica, &room_id, early).await {
            tracing::warn!(room_id, error = %err, "timer failed");
        }
    });
}

/// A hard bot's search started when its turn began, for the room at `seq`; its answer is
/// awaited until `by` (the end of the think delay and one search's time), then the bot
/// plays greedy: the card comes on time even when the search could not. Dropped, it
/// stops the search (its turn was played, or fired elsewhere).
pub(crate) struct Early {
    seq: u64,
    by: tokio::time::Instant,
    answer: JoinHandle<Option<BotChoice>>,
}

impl Early {
    fn start(replica: &Arc<Replica>, turn: BotTurn, due: tokio::time::Instant) -> Early {
        let seq = turn.seq;
        let by = due + replica.config.bots.max_think();
        let replica = Arc::clone(replica);
        let answer =
            tokio::spawn(async move { replica.config.bots.think(turn, &replica.metrics).await });
        Early { seq, by, answer }
    }

    /// The card for `turn`: the early search's when it was for the same state of the
    /// room (`None` when it found no slot, or had not answered by `by`: the bot plays
    /// greedy), otherwise a search now.
    async fn card_for(
        early: Option<Early>,
        replica: &Arc<Replica>,
        turn: BotTurn,
    ) -> Option<BotChoice> {
        match early {
            Some(mut early) if early.seq == turn.seq => {
                match tokio::time::timeout_at(early.by, &mut early.answer).await {
                    Ok(answer) => answer.ok().flatten(),
                    Err(_) => {
                        replica.metrics.hard_bot_late_answers.inc();
                        None
                    }
                }
            }
            stale => {
                drop(stale);
                replica.config.bots.think(turn, &replica.metrics).await
            }
        }
    }
}

/// The search is of no use once its turn is played: stop it, or skip it if it has not
/// started, so that its slot goes to the next decision.
impl Drop for Early {
    fn drop(&mut self) {
        self.answer.abort();
    }
}

/// Claims the room's due deadline and does what is due (one trace per firing: a
/// bot's play, an automatic play, a grace period ending).
#[tracing::instrument(name = "game.timer", skip(replica, early))]
pub(crate) async fn fire(
    replica: &Arc<Replica>,
    room_id: &str,
    early: Option<Early>,
) -> Result<()> {
    let now = now_ms();
    let lease = 5_000;
    if !replica.store.claim_due(room_id, now, lease).await? {
        return Ok(());
    }
    replica.metrics.timers_fired.inc();
    // A hard bot thinks away from the runtime (crate::replica::bots).
    let outcome = on_timer(replica, room_id, early).await;
    match outcome {
        Ok(Mutation::Rejected(_)) => {
            // Nothing was due after all (another replica acted first): put the real
            // deadline back in place of the lease.
            if let Some(loaded) = replica.store.load(room_id).await? {
                replica
                    .store
                    .sync_deadline(room_id, loaded.version, loaded.room.next_deadline())
                    .await?;
                schedule(replica, &loaded.room);
            }
            Ok(())
        }
        Ok(_) => Ok(()),
        Err(GameError::RoomNotFound(_)) => Ok(()),
        Err(err) => Err(err),
    }
}

/// The timer loop until `shutdown`: refreshes this replica's presence lease, sweeps
/// expired ones, fires due rooms (side by side, at most [`TIMERS_IN_FLIGHT`] at once).
pub(crate) async fn run(replica: Arc<Replica>, shutdown: CancellationToken) {
    let mut tick = tokio::time::interval(replica.config.timer_poll);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let slots = Arc::new(Semaphore::new(TIMERS_IN_FLIGHT));
    let mut next_refresh = 0;
    loop {
        tokio::select! {
            () = shutdown.cancelled() => return,
            _ = tick.tick() => {}
        }
        let now = now_ms();
        if now >= next_refresh {
            lease::refresh(&replica, now).await;
            next_refresh = now + replica.config.lease.as_millis() as i64 / 3;
        }
        let shards = replica.walks.shards();
        if shards.is_empty() {
            continue;
        }
        if let Err(err) = lease::sweep(&replica, &shards, now).await {
            tracing::warn!(error = %err, "cannot sweep presence leases");
        }
        let due = match replica.store.due_rooms(&shards, now_ms(), 256).await {
            Ok(due) => due,
            Err(err) => {
                tracing::warn!(error = %err, "cannot read due rooms");
                continue;
            }
        };
        // The rooms fire side by side, each in a task of its own: one that waits (a
        // store round trip, a hard bot's search on its thread) holds up no
        // other, nor the next tick. At most `TIMERS_IN_FLIGHT` fire at once; a room
        // left out is due still and fires on a later tick (its claim keeps a room
        // fired twice from acting twice).
        for room_id in due {
            let Ok(slot) = Arc::clone(&slots).try_acquire_owned() else {
                break;
            };
            let replica = Arc::clone(&replica);
            tokio::spawn(async move {
                let _slot = slot;
                if let Err(err) = fire(&replica, &room_id, None).await {
                    tracing::warn!(room_id, error = %err, "timer failed");
                }
            });
        }
    }
}

/// Does what is due in the room, as [`Room::on_timer`] does, with a due hard bot's card
/// thought of away from the runtime (see [`super::bots`]), or by the search `early`
/// started.
async fn on_timer(
    replica: &Arc<Replica>,
    room_id: &str,
    mut early: Option<Early>,
) -> Result<Mutation<()>> {
    // After one search (`thought`), the change plays its card, or greedy without one.
    let (mut thought, mut choice) = (false, None::<BotChoice>);
    // The room as this replica last committed it, looked at rather than taken or loaded:
    // a hard bot's turn due there is thought of (its early search awaited) before the one
    // change that plays the card. A stale look costs the commit's version check, and a
    // card made for another state of the room gives way to greedy.
    let held = replica.hub.cached(room_id);
    if let Some(turn) = held.and_then(|held| held.room.hard_bot_turn(now_ms())) {
        choice = Early::card_for(early.take(), replica, turn).await;
        thought = true;
    }
    loop {
        let mut turn: Option<BotTurn> = None;
        let outcome = replica
            .mutate(room_id, None, |room: &mut Room, now| {
                turn = None;
                if !thought {
                    turn = room.hard_bot_turn(now);
                    if turn.is_some() {
                        return Err(Reject::new(RejectCode::Unspecified, "the bot thinks"));
                    }
                }
                if room.on_timer_with(now, choice.as_ref()) {
                    Ok(())
                } else {
                    Err(Reject::new(RejectCode::Unspecified, "nothing due"))
                }
            })
            .await?;
        match (turn, outcome) {
            (Some(turn), Mutation::Rejected(_)) if !thought => {
                choice = Early::card_for(early.take(), replica, turn).await;
                thought = true;
            }
            (_, outcome) => return Ok(outcome),
        }
    }
}
