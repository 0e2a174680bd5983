//! The timer loop and a room's deadline fired when it is close: a turn timed out, a
//! bot's play, a grace period or a rematch window ending. Every replica's loop also
//! refreshes its presence lease and sweeps the expired ones of others ([`super::lease`]);
//! the rooms due are found through the shards this replica walks ([`super::walks`]).

use std::sync::Arc;
use std::time::Duration;

use basra_proto::basra::game::v1::RejectCode;
use tokio::sync::Semaphore;
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
/// still fires it if this replica dies meanwhile).
pub(crate) fn schedule(replica: &Arc<Replica>, room_id: &str, deadline: Option<i64>) {
    let Some(at) = deadline else { return };
    let wait = at - now_ms();
    let close = replica
        .config
        .timer_poll
        .max(Duration::from_millis(replica.config.timing.bot_delay_ms));
    if wait > close.as_millis() as i64 {
        return;
    }
    let replica = Arc::clone(replica);
    let room_id = room_id.to_owned();
    tokio::spawn(async move {
        if wait > 0 {
            tokio::time::sleep(Duration::from_millis(wait as u64)).await;
        }
        if let Err(err) = fire(&replica, &room_id).await {
            tracing::warn!(room_id, error = %err, "timer failed");
        }
    });
}

/// Claims the room's due deadline and does what is due (one trace per firing: a
/// bot's play, an automatic play, a grace period ending).
#[tracing::instrument(name = "game.timer", skip(replica))]
pub(crate) async fn fire(replica: &Arc<Replica>, room_id: &str) -> Result<()> {
    let now = now_ms();
    let lease = 5_000;
    if !replica.store.claim_due(room_id, now, lease).await? {
        return Ok(());
    }
    replica.metrics.timers_fired.inc();
    // A hard bot thinks away from the runtime (crate::replica::bots).
    let outcome = on_timer(replica, room_id).await;
    match outcome {
        Ok(Mutation::Rejected(_)) => {
            // Nothing was due after all (another replica acted first): put the real
            // deadline back in place of the lease.
            if let Some(loaded) = replica.store.load(room_id).await? {
                replica
                    .store
                    .sync_deadline(room_id, loaded.version, loaded.room.next_deadline())
                    .await?;
                schedule(replica, room_id, loaded.room.next_deadline());
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
                if let Err(err) = fire(&replica, &room_id).await {
                    tracing::warn!(room_id, error = %err, "timer failed");
                }
            });
        }
    }
}

/// Does what is due in the room, as [`Room::on_timer`] does, with a due hard bot's card
/// thought of away from the runtime (see [`super::bots`]).
async fn on_timer(replica: &Arc<Replica>, room_id: &str) -> Result<Mutation<()>> {
    // After one search (`thought`), the change plays its card, or greedy without one.
    let (mut thought, mut choice) = (false, None::<BotChoice>);
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
                choice = replica.config.bots.think(turn, &replica.metrics).await;
                thought = true;
            }
            (_, outcome) => return Ok(outcome),
        }
    }
}
