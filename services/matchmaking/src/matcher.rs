//! The pairing loop every replica runs: form groups from the shared queue
//! (atomically, in the store), create their rooms in game-session, and match
//! or release their members; plus the housekeeping sweep (ticket and room expiry,
//! metrics).

use std::{sync::Arc, time::Duration};

use basra_proto::{
    basra::{common::v1 as common, game::v1 as game},
    convert::{settings_from_pb, settings_to_pb},
};
use tokio::task::JoinSet;
use uuid::Uuid;

use crate::{
    convert::seat_assignment,
    domain::balanced_partnerships,
    error::Result,
    state::{PLAYER_ROOM_TTL_MS, Shared},
    store::{CommitOutcome, Group, MatchRecord, Occupant},
    upstream::is_transient,
};

/// How often expiry and the queue-length gauges run.
const SWEEP_EVERY: Duration = Duration::from_secs(1);
/// Stale groups taken over per round.
const RECLAIM_PER_ROUND: usize = 64;
/// Tickets (and rooms) expired per sweep call.
const EXPIRE_PER_SWEEP: usize = 1000;

/// Runs until shutdown.
pub(crate) async fn run(inner: Arc<Shared>) {
    let tick = Duration::from_millis(inner.config.queue.tick_millis);
    let mut last_sweep = tokio::time::Instant::now();
    let mut last_matches = inner.deps.metrics.matches();
    loop {
        let full = match round(&inner).await {
            Ok(formed) => formed >= inner.config.queue.max_groups_per_round,
            Err(err) => {
                tracing::warn!(error = %err, "pairing round failed");
                false
            }
        };
        if last_sweep.elapsed() >= SWEEP_EVERY {
            let elapsed = last_sweep.elapsed().as_secs_f64();
            last_sweep = tokio::time::Instant::now();
            if let Err(err) = sweep(&inner).await {
                tracing::warn!(error = %err, "queue sweep failed");
            }
            let matches = inner.deps.metrics.matches();
            inner
                .deps
                .metrics
                .set_rate((matches - last_matches) as f64 / elapsed);
            last_matches = matches;
        }
        // A full round means more may be waiting: go again at once.
        let pause = if full { Duration::ZERO } else { tick };
        tokio::select! {
            () = inner.shutdown.cancelled() => break,
            () = tokio::time::sleep(pause) => {}
        }
    }
}

async fn sweep(inner: &Shared) -> Result<()> {
    let store = &inner.deps.store;
    let expired = store.expire(inner.now(), EXPIRE_PER_SWEEP).await?;
    if expired > 0 {
        tracing::info!(expired, "expired abandoned tickets");
        inner.deps.metrics.expired(expired);
    }
    let rooms = &inner.config.rooms;
    let closed = store
        .expire_rooms(inner.now(), rooms.expired_retention_ms(), EXPIRE_PER_SWEEP)
        .await?;
    if !closed.is_empty() {
        tracing::info!(rooms = closed.len(), "closed rooms nobody joined in time");
    }
    let lengths = store.queue_lengths().await?;
    inner
        .deps
        .metrics
        .set_queue(lengths.into_iter().map(|(f, n)| (f.key(), n)));
    Ok(())
}

/// One pairing round; returns how many groups it formed.
pub(crate) async fn round(inner: &Arc<Shared>) -> Result<usize> {
    let q = &inner.config.queue;
    let params = q.pairing();
    let now = inner.now();
    let room_ids: Vec<String> = (0..params.max_groups)
        .map(|_| Uuid::now_v7().to_string())
        .collect();
    let mut groups = inner
        .deps
        .store
        .form_groups(now, &params, &room_ids)
        .await?;
    let formed = groups.len();
    // The groups just formed are ours whatever happens to the takeover.
    match inner
        .deps
        .store
        .reclaim(now, params.lease_ms, RECLAIM_PER_ROUND)
        .await
    {
        Ok(reclaimed) => groups.extend(reclaimed),
        Err(err) => tracing::warn!(error = %err, "cannot take over stale groups this round"),
    }
    let mut tasks = JoinSet::new();
    for group in groups {
        let inner = inner.clone();
        tasks.spawn(async move {
            let room = group.room_id.clone();
            if let Err(err) = settle(&inner, group).await {
                tracing::warn!(room = %room, error = %err, "cannot settle group; its lease will expire and another round retries it");
            }
        });
    }
    while tasks.join_next().await.is_some() {}
    Ok(formed)
}

/// A full four-seat group in the seat order that balances its partnerships by rating
/// ([`balanced_partnerships`]); any other group as it is. A function of the members
/// only, so a retried or taken-over group gets the same seats again.
fn seat_partnerships(mut group: Group) -> Group {
    if let [a, b, c, d] = group.members.as_slice() {
        let order = balanced_partnerships([a.rating, b.rating, c.rating, d.rating]);
        let members = order.map(|i| group.members[i].clone());
        group.members = members.into();
    }
    group
}

/// Creates the group's room and matches its members, or releases them (one trace per
/// group: its CreateRoom in game-session continues it).
#[tracing::instrument(name = "matchmaking.settle", skip_all, fields(room_id = %group.room_id))]
async fn settle(inner: &Shared, group: Group) -> Result<()> {
    let q = &inner.config.queue;
    let group = seat_partnerships(group);
    let format = group.format;
    let bots = group.bots();
    let ranked = format.ranked && bots == 0;
    let mut seats: Vec<Occupant> = group
        .members
        .iter()
        .map(|m| Occupant::Player {
            user_id: m.user_id.clone(),
            guest: m.guest,
            rating: format.ranked.then_some(m.rating),
        })
        .collect();
    seats.extend((0..bots).map(|_| Occupant::Bot {
        level: common::BotLevel::Medium as i32,
    }));
    let settings = format.settings();
    let created = inner
        .deps
        .game
        .create_room(game::CreateRoomRequest {
            room_id: group.room_id.clone(),
            seats: seats
                .iter()
                .enumerate()
                .map(|(seat, occupant)| {
                    let mut assignment = seat_assignment(occupant, common::SeatFill::Queue);
                    // How long the player searched: from the ticket's first queueing
                    // (kept across resumes) to the group that matched it.
                    if let Some(member) = group.members.get(seat) {
                        assignment.queue_wait_ms =
                            u32::try_from((group.formed_ms - member.enqueued_ms).max(0))
                                .unwrap_or(u32::MAX);
                    }
                    assignment
                })
                .collect(),
            settings: Some(settings_to_pb(&settings)),
            ranked,
            allow_spectators: false,
            visibility: common::RoomVisibility::Private as i32,
        })
        .await;
    let now = inner.now();
    match created {
        Ok(response) => {
            let settings = response
                .settings
                .as_ref()
                .and_then(|s| settings_from_pb(Some(s)).ok())
                .unwrap_or(settings);
            let records: Vec<(String, MatchRecord)> = group
                .members
                .iter()
                .enumerate()
                .map(|(seat, m)| {
                    (
                        m.ticket_id.clone(),
                        MatchRecord {
                            room_id: group.room_id.clone(),
                            seat: seat as u32,
                            ranked,
                            settings,
                            seats: seats.clone(),
                        },
                    )
                })
                .collect();
            let outcome = inner
                .deps
                .store
                .commit(&group.room_id, group.format, &records, now, q.grace_ms())
                .await?;
            if outcome == CommitOutcome::Committed {
                // Counted as soon as it is committed: the players hear of it from here.
                inner.deps.metrics.matched(bots > 0);
                for member in &group.members {
                    inner
                        .deps
                        .store
                        .set_player_room(&member.user_id, &group.room_id, PLAYER_ROOM_TTL_MS)
                        .await?;
                }
                tracing::debug!(room = %group.room_id, players = group.members.len(), bots, "matched");
            } else {
                tracing::info!(room = %group.room_id, ?outcome, "group not committed");
            }
        }
        // No answer, or a transient one: the room may well exist (a reply
        // lost after its deadline looks just like a call that never
        // arrived). The group keeps its room id and is tried again; its
        // players are never put in another room meanwhile.
        // After `room_max_attempts` (the lease number counts the first attempt and
        // each retry or takeover) the group is given up: its players' searches end
        // with a reason they are told, instead of waiting on a room forever.
        Err(status) if is_transient(&status) && group.lease >= q.room_max_attempts => {
            inner.deps.metrics.room_failed();
            tracing::warn!(room = %group.room_id, attempts = group.lease, error = %status, "game-session did not confirm the room in the attempts allowed; giving the group up");
            inner
                .deps
                .store
                .abandon(&group.room_id, group.format, group.lease, now, q.grace_ms())
                .await?;
        }
        Err(status) if is_transient(&status) => {
            inner.deps.metrics.room_failed();
            tracing::warn!(room = %group.room_id, error = %status, "game-session did not confirm the room; the group will try again");
            inner
                .deps
                .store
                .defer(
                    &group.room_id,
                    group.format,
                    group.lease,
                    now + q.room_retry_ms(),
                )
                .await?;
        }
        // A refusal: the room was not made, so the players may go back to
        // the queue.
        Err(status) => {
            inner.deps.metrics.room_failed();
            tracing::warn!(room = %group.room_id, error = %status, "game-session refused the room; releasing the group");
            inner
                .deps
                .store
                .release(&group.room_id, group.format, group.lease, now, q.grace_ms())
                .await?;
        }
    }
    Ok(())
}
