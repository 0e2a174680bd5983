//! The event clock: every replica runs [`run`], which every tick takes the events that
//! are due (upcoming past their start, or running) and drives each one whose lease it
//! holds or can take (`live.rs`): exactly one replica drives an event at a time, and a
//! replica that dies loses its leases when they lapse, so another continues from the
//! stored state.
//!
//! One step of an event ([`step`]):
//! 0. **Starting soon** (upcoming, its notice time come: check-in opening, or
//!    `events.starting_notice_seconds` before the start without a check-in window):
//!    every registered player is told (accounts' inbox, keyed `event:ID:starting`), then
//!    the event is marked told by compare-and-set. A driver that dies between the two
//!    is followed by one that tells them again under the same keys: accounts keeps each
//!    player's notice once. A player who registers later is told by Register.
//! 1. **Start** (upcoming, its second has come): the players checked in (everyone
//!    registered when there is no check-in) are seeded and the first round paired;
//!    fewer than two cancels the event. A recurring series makes its next occurrence
//!    (not when the series was cancelled meanwhile: the store checks it under the
//!    series' lock).
//! 2. **Results**: each match in play is asked of game-session (`GetSeats`, a thousand
//!    seats a call: the winner once the match ended, and whether the player joined; one
//!    seat before the join deadline, both from then on); a player who has not joined by the join deadline,
//!    or has withdrawn, forfeits. A result goes into
//!    the format, which refuses a second one for the same match and pairs the next round
//!    once the last result of a round is in (arena: the two players again at once).
//! 3. **Rooms**: each match without a room (those just paired included) gets one from
//!    game-session (`CreateRooms`, [`ROOMS_PER_CALL`] rooms a call; its id is made from
//!    the event and the match, so making it again after a takeover is harmless).
//! 4. **Save** the live state under the lease, checking the version read (fencing).
//! 5. **Tell**: both players of every match made, unfinished and not yet told (those
//!    of this step, and those of a holder that died between its save and its telling)
//!    are told "your match is ready" in one batch (accounts' `SendNotices`, a few
//!    hundred players a call; the opponents' names asked once for all), then the
//!    matches are saved told (a match accounts could not take a notice of is told
//!    again next step). A holder that dies before that save is followed by one that
//!    tells them again under the same keys (`event:ID:ROOM:ready`): accounts keeps
//!    each player's notice once.
//! 6. **Record** the new results in the durable store (once each: keyed by the match). A
//!    knockout's losers are ELIMINATED as soon as their results are in.
//! 7. **End**: the standings become final, every entry gets its place and points, and
//!    everyone still in (a knockout's champion, every Swiss or arena player who did not
//!    withdraw) is FINISHED ([`EntryRecord::finish`]).
//!
//! Why results are polled: game-session records a finished match to accounts, not to
//! matchmaking; asking it (`GetSeats`: for each seat asked, whether the player joined and
//! who won) for the rooms in play needs no new path between the services and survives the
//! loss of any replica on either side: the room's state is in Redis, and the question is
//! simply asked again next tick.

use std::sync::Arc;
use std::time::Duration;

use basra_events::Outcome;
use basra_proto::basra::common::v1 as common;
use basra_proto::basra::game::v1 as game;
use tokio_util::sync::CancellationToken;

use super::EventsShared;
use super::model::{EntryRecord, EntryStatus, EventRecord, Phase, ResultRecord};
use super::notices::Notice;
use super::play::{self, LiveEvent, LiveMatch, player_of};
use super::store::PhaseChange;
use crate::clock::Millis;
use crate::error::{MatchmakingError, Result};
use crate::upstream::{GameRooms, is_transient};

/// Rooms asked of game-session in one CreateRooms (it takes up to 256): a round of 512
/// matches is 8 calls, each short enough to finish well within matchmaking's per-call
/// timeout on a loaded machine, so a slow step still keeps the rooms of the calls that
/// finished.
const ROOMS_PER_CALL: usize = 64;

/// Seats asked of game-session in one GetSeats (it takes up to 1,000): an arena of 4,096
/// in play is 3 calls a step before the join deadline.
const SEATS_PER_CALL: usize = 1000;

/// Bulk calls (CreateRooms, GetSeats) one event's step has in flight at once.
const BULK_PARALLEL: usize = 4;

/// Runs `f` over `items`, at most `parallel` at once; the answers in any order.
async fn in_parallel_at<T, F, Fut>(parallel: usize, items: Vec<T>, f: F) -> Vec<Fut::Output>
where
    F: Fn(T) -> Fut,
    Fut: std::future::Future + Send + 'static,
    Fut::Output: Send + 'static,
{
    let limit = Arc::new(tokio::sync::Semaphore::new(parallel));
    let mut tasks = tokio::task::JoinSet::new();
    for item in items {
        let (limit, call) = (limit.clone(), f(item));
        tasks.spawn(async move {
            let _permit = limit.acquire_owned().await;
            call.await
        });
    }
    let mut out = Vec::new();
    while let Some(done) = tasks.join_next().await {
        match done {
            Ok(answer) => out.push(answer),
            Err(err) => tracing::warn!(error = %err, "an event call panicked"),
        }
    }
    out
}

/// Drives every due event this replica can lease, every `events.tick_millis` and at
/// the second an event starts (a start within the next tick is waited for exactly, not
/// rounded up to the tick), until `shutdown`; gives its leases up on the way out.
pub(crate) async fn run(shared: Arc<EventsShared>, shutdown: CancellationToken) {
    let every = Duration::from_millis(shared.settings.tick_millis);
    let mut held: Vec<String> = Vec::new();
    let mut wake = tokio::time::Instant::now() + every;
    loop {
        tokio::select! {
            () = shutdown.cancelled() => break,
            () = tokio::time::sleep_until(wake) => {}
        }
        let ticked = tokio::time::Instant::now();
        wake = ticked + every;
        match tick(&shared).await {
            Ok((now_held, next_start)) => {
                held = now_held;
                if let Some(at) = next_start {
                    let until = Duration::from_millis((at - shared.now()).max(0) as u64);
                    wake = wake.min(tokio::time::Instant::now() + until);
                }
            }
            Err(err) => tracing::warn!(error = %err, "event clock tick failed"),
        }
    }
    for event in held {
        let _ = shared.live.release(&event, &shared.holder).await;
    }
}

/// One tick: every due event whose lease this replica holds or takes is stepped. The
/// events it holds.
#[cfg(test)]
pub(crate) async fn tick_once(shared: &EventsShared) -> Result<Vec<String>> {
    Ok(tick(shared).await?.0)
}

/// One tick: every due event whose lease this replica holds or takes is stepped. The
/// events it holds, and the earliest start within the next tick, if any (the clock
/// wakes then).
async fn tick(shared: &EventsShared) -> Result<(Vec<String>, Option<Millis>)> {
    let now = shared.now();
    let lead = shared.settings.starting_notice_seconds;
    // The longest a notice comes before a start: a day's check-in, or the setting.
    let horizon = i64::from(super::spec::MAX_CHECK_IN_SECONDS.max(lead)) * 1000;
    let mut held = Vec::new();
    let mut next_start: Option<Millis> = None;
    let soon = now + shared.settings.tick_millis as i64;
    for event in shared.store.due(soon, horizon).await? {
        if event.phase == Phase::Upcoming && now < event.starts_at_ms {
            // One starting before the next tick is woken for.
            if event.starts_at_ms <= soon {
                let at = event.starts_at_ms;
                next_start = Some(next_start.map_or(at, |n| n.min(at)));
            }
            if !event.starting_notice_due(now, lead) {
                // Nothing to do before its notice time.
                continue;
            }
        }
        let took = shared
            .live
            .acquire(
                &event.id,
                &shared.holder,
                now,
                shared.settings.lease_millis as i64,
            )
            .await?;
        if !took {
            continue;
        }
        held.push(event.id.clone());
        if let Err(err) = step_leased(shared, event.clone()).await {
            tracing::warn!(event = %event.id, error = %err, "event step failed: retried next tick");
        }
    }
    Ok((held, next_start))
}

/// [`step`] while the lease is renewed every third of `events.lease_millis`: a step
/// that outlasts the lease (slow calls on a loaded machine) keeps it, so no other
/// replica takes the event meanwhile. Once a renewal finds another holder (or none has
/// succeeded for a whole lease), the step is dropped where it stands, as if this
/// replica had died there (every step is safe to cut at any point, and its saves are
/// fenced): two replicas never act on one event at once.
async fn step_leased(shared: &EventsShared, event: EventRecord) -> Result<()> {
    let lease = shared.settings.lease_millis;
    let every = Duration::from_millis((lease / 3).max(1));
    let renew = async {
        let mut renewed = tokio::time::Instant::now();
        loop {
            tokio::time::sleep(every).await;
            let now = shared.now();
            match shared
                .live
                .acquire(&event.id, &shared.holder, now, lease as i64)
                .await
            {
                Ok(true) => renewed = tokio::time::Instant::now(),
                Ok(false) => return "another replica holds its lease",
                Err(err) => {
                    tracing::warn!(event = %event.id, error = %err, "event lease not renewed");
                    if renewed.elapsed() >= Duration::from_millis(lease) {
                        return "its lease could not be renewed for a whole lease";
                    }
                }
            }
        }
    };
    tokio::select! {
        biased;
        done = step(shared, event.clone()) => done,
        why = renew => {
            tracing::warn!(event = %event.id, why, "event step abandoned");
            Ok(())
        }
    }
}

/// One step of one event whose lease this replica holds.
pub(crate) async fn step(shared: &EventsShared, event: EventRecord) -> Result<()> {
    match event.phase {
        Phase::Upcoming if shared.now() < event.starts_at_ms => tell_starting(shared, &event).await,
        Phase::Upcoming => start(shared, event).await,
        Phase::Running => advance(shared, event).await,
        Phase::Finished | Phase::Cancelled => Ok(()),
    }
}

fn corrupt(err: impl std::fmt::Display) -> MatchmakingError {
    MatchmakingError::Corrupt(format!("event state: {err}"))
}

async fn load(shared: &EventsShared, event_id: &str) -> Result<Option<(u64, LiveEvent)>> {
    match shared.live.load(event_id).await? {
        Some(stored) => Ok(Some((
            stored.version,
            serde_json::from_str(&stored.json).map_err(corrupt)?,
        ))),
        None => Ok(None),
    }
}

async fn save(
    shared: &EventsShared,
    event_id: &str,
    version: u64,
    live: &LiveEvent,
) -> Result<bool> {
    let json = serde_json::to_string(live)?;
    let saved = shared
        .live
        .save(event_id, &shared.holder, version, &json)
        .await?;
    if saved {
        // This replica's watchers of the event see it now, not at their next poll.
        shared.hub.wake(event_id);
    }
    Ok(saved)
}

async fn start(shared: &EventsShared, event: EventRecord) -> Result<()> {
    let now = shared.now();
    let entries = shared.store.entries(&event.id).await?;
    let players: Vec<(String, i32)> = entries
        .iter()
        .filter(|e| e.status == EntryStatus::CheckedIn)
        .map(|e| (e.user_id.clone(), e.rating))
        .collect();
    next_occurrence(shared, &event).await?;
    // A previous holder may have saved the state and died before the phase changed.
    let stored = load(shared, &event.id).await?;
    let live = match stored {
        Some((_, live)) => Some(live),
        None => match play::start(&event, &players, now) {
            Ok(live) => {
                if !save(shared, &event.id, 0, &live).await? {
                    return Ok(());
                }
                Some(live)
            }
            Err(err) => {
                tracing::info!(event = %event.id, error = %err, "event cannot start: cancelled");
                None
            }
        },
    };
    let Some(live) = live else {
        let change = PhaseChange {
            from: Phase::Upcoming,
            to: Phase::Cancelled,
            current_round: 0,
            rounds_total: 0,
            champion: None,
            cancel_reason: "fewer than two players checked in".into(),
            ended_at_ms: now,
        };
        if shared.store.change_phase(&event.id, &change).await? {
            tell_all(shared, &event, &entries, |_| {
                Some(Notice::Cancelled {
                    reason: change.cancel_reason.clone(),
                })
            })
            .await;
        }
        return Ok(());
    };
    let (round, rounds) = live.rounds();
    let change = PhaseChange {
        from: Phase::Upcoming,
        to: Phase::Running,
        current_round: round,
        rounds_total: rounds,
        champion: None,
        cancel_reason: String::new(),
        ended_at_ms: 0,
    };
    if !shared.store.change_phase(&event.id, &change).await? {
        return Ok(());
    }
    let updated: Vec<EntryRecord> = entries
        .into_iter()
        .map(|mut e| {
            e.status = if e.status == EntryStatus::CheckedIn {
                EntryStatus::Playing
            } else {
                EntryStatus::NotCheckedIn
            };
            e
        })
        .collect();
    shared.store.update_entries(&updated).await?;
    let event = shared.store.get(&event.id).await?.unwrap_or(event);
    advance(shared, event).await
}

/// Tells an upcoming event's registered players that it starts soon, once its notice
/// time has come, then marks it told.
async fn tell_starting(shared: &EventsShared, event: &EventRecord) -> Result<()> {
    if !event.starting_notice_due(shared.now(), shared.settings.starting_notice_seconds) {
        return Ok(());
    }
    let entries = shared.store.entries(&event.id).await?;
    tell_all(shared, event, &entries, |e| {
        matches!(e.status, EntryStatus::Registered | EntryStatus::CheckedIn).then_some(
            Notice::Starting {
                starts_at_ms: event.starts_at_ms,
            },
        )
    })
    .await;
    shared.store.mark_starting_told(&event.id).await?;
    Ok(())
}

/// Makes a series' next occurrence (once: its request id is the series and the start),
/// unless the series was cancelled (this occurrence with it: the store refuses then).
async fn next_occurrence(shared: &EventsShared, event: &EventRecord) -> Result<()> {
    let Some(recurrence) = &event.spec.recurrence else {
        return Ok(());
    };
    let series = event.series_id.clone().unwrap_or_else(|| event.id.clone());
    let start = recurrence.next_after(event.starts_at_ms)?;
    let next = EventRecord {
        id: uuid::Uuid::now_v7().to_string(),
        series_id: Some(series.clone()),
        request_id: Some(format!("series-{series}-{start}")),
        starts_at_ms: start,
        phase: Phase::Upcoming,
        cancel_reason: String::new(),
        champion: None,
        current_round: 0,
        rounds_total: 0,
        ended_at_ms: 0,
        version: 0,
        registered: 0,
        starting_told: false,
        spec: event.spec.clone(),
    };
    if shared
        .store
        .create_occurrence(&event.id, next)
        .await?
        .is_none()
    {
        tracing::info!(event = %event.id, series, "series cancelled: no next occurrence");
    }
    Ok(())
}

/// Tells each entry's player what `notice` says for them (nothing for `None`), in one
/// batch ([`Notices::notify_all`](super::Notices::notify_all): accounts takes them a few
/// hundred a call).
async fn tell_all<F>(shared: &EventsShared, event: &EventRecord, entries: &[EntryRecord], notice: F)
where
    F: Fn(&EntryRecord) -> Option<Notice>,
{
    let told: Vec<(String, Notice)> = entries
        .iter()
        .filter_map(|e| notice(e).map(|n| (e.user_id.clone(), n)))
        .collect();
    if told.is_empty() {
        return;
    }
    shared
        .notices
        .notify_all(&event.id, &event.spec.name, told)
        .await;
}

/// Steps a running event: rooms, results, the next round, the end.
async fn advance(shared: &EventsShared, event: EventRecord) -> Result<()> {
    let Some((version, mut live)) = load(shared, &event.id).await? else {
        return Err(corrupt("a running event without a live state"));
    };
    let now = shared.now();
    let mut changed = false;
    // Arena players who came back (Register after a pause, or entered while running).
    let entries = shared.store.entries(&event.id).await?;
    changed |= sync_entries(&mut live, &event, &entries, now);
    // Results of the matches in play, asked of game-session in bulk.
    let withdrawn: Vec<String> = entries
        .iter()
        .filter(|e| matches!(e.status, EntryStatus::Withdrawn))
        .map(|e| e.user_id.clone())
        .collect();
    let in_play: Vec<LiveMatch> = live
        .matches
        .iter()
        .filter(|m| m.created && m.outcome.is_none())
        .cloned()
        .collect();
    // In the order the matches were made.
    let outcomes = results_of(&shared.game, &in_play, &withdrawn, now).await;
    for (m, outcome) in in_play.iter().zip(outcomes) {
        let outcome = match outcome {
            Ok(outcome) => outcome,
            Err(err) => {
                tracing::warn!(event = %event.id, room = %m.room_id, error = %err, "event match result unknown: asked again");
                None
            }
        };
        if let Some((outcome, match_id)) = outcome {
            if live.record(&event, &m.key, outcome, now).map_err(corrupt)? {
                live.set_match_id(&m.key, match_id);
            }
            changed = true;
        }
    }
    // Rooms for the matches that have none (those the results just paired included),
    // made in a few bulk calls.
    let to_make: Vec<usize> = live
        .matches
        .iter()
        .enumerate()
        .filter(|(_, m)| !m.created && m.outcome.is_none())
        .map(|(i, _)| i)
        .collect();
    let requests = to_make
        .iter()
        .map(|&i| room_request(&event, &live.matches[i]))
        .collect();
    let made = make_rooms(&shared.game, requests).await;
    for (i, answer) in to_make.into_iter().zip(made) {
        let m = &mut live.matches[i];
        match answer {
            Ok(()) => {
                m.created = true;
                m.ready_at_ms = now;
                m.deadline_ms = now + event.spec.join_ms();
                changed = true;
            }
            Err(err) => {
                tracing::warn!(event = %event.id, room = %m.room_id, error = %err, "event room not made: retried")
            }
        }
    }
    let finished = live.is_finished(now);
    let mut version = version;
    if changed {
        if !save(shared, &event.id, version, &live).await? {
            // Another replica holds the event now: its state wins.
            return Ok(());
        }
        version += 1;
    }
    if tell_ready(shared, &event, &mut live, now).await {
        if !save(shared, &event.id, version, &live).await? {
            return Ok(());
        }
        version += 1;
    }
    eliminate(shared, &live, &entries).await?;
    record_results(shared, &event, version, &mut live, now).await?;
    let (round, rounds) = live.rounds();
    if finished {
        finish(shared, &event, &live, now).await?;
    } else if round != event.current_round || rounds != event.rounds_total {
        let change = PhaseChange {
            from: Phase::Running,
            to: Phase::Running,
            current_round: round,
            rounds_total: rounds,
            champion: None,
            cancel_reason: String::new(),
            ended_at_ms: 0,
        };
        shared.store.change_phase(&event.id, &change).await?;
    }
    Ok(())
}

/// Tells both players of every match made, unfinished and untold (step 5), in one batch
/// ([`Notices::notify_all`](super::Notices::notify_all): the opponents' names asked once
/// for all, the notices a few hundred a call), and marks told the matches whose two
/// notices are done (the caller saves them; one that accounts could not take is told
/// again next step). Whether any match was marked. A match whose join deadline has
/// passed is not told: its players forfeit it.
async fn tell_ready(
    shared: &EventsShared,
    event: &EventRecord,
    live: &mut LiveEvent,
    now: Millis,
) -> bool {
    let mut matches = Vec::new();
    let mut told = Vec::new();
    for (at, m) in live.matches.iter().enumerate() {
        if !(m.created && m.outcome.is_none() && !m.told && now < m.deadline_ms) {
            continue;
        }
        for (i, user) in m.players.iter().enumerate() {
            let notice = Notice::MatchReady {
                round: m.round,
                room_id: m.room_id.clone(),
                opponent: m.players[1 - i].clone(),
                deadline_ms: m.deadline_ms,
            };
            matches.push(at);
            told.push((user.clone(), notice));
        }
    }
    if told.is_empty() {
        return false;
    }
    let answers = shared
        .notices
        .notify_all(&event.id, &event.spec.name, told)
        .await;
    let mut done: std::collections::HashMap<usize, u8> = std::collections::HashMap::new();
    for (at, delivered) in matches.into_iter().zip(answers) {
        *done.entry(at).or_default() += u8::from(delivered);
    }
    let mut marked = false;
    for (at, delivered) in done {
        if delivered == 2 {
            live.matches[at].told = true;
            marked = true;
        }
    }
    marked
}

/// Marks a knockout's losers ELIMINATED as soon as their result is in (a state, not a
/// step's news: a successor that took over after the result was saved still does it).
async fn eliminate(shared: &EventsShared, live: &LiveEvent, entries: &[EntryRecord]) -> Result<()> {
    let out = live.knocked_out();
    let eliminated: Vec<EntryRecord> = entries
        .iter()
        .filter(|e| e.status == EntryStatus::Playing && out.contains(&e.user_id))
        .map(|e| EntryRecord {
            status: EntryStatus::Eliminated,
            ..e.clone()
        })
        .collect();
    if !eliminated.is_empty() {
        shared.store.update_entries(&eliminated).await?;
    }
    Ok(())
}

/// Applies the entries' withdrawals and returns to the format. Whether anything changed.
fn sync_entries(
    live: &mut LiveEvent,
    event: &EventRecord,
    entries: &[EntryRecord],
    now: Millis,
) -> bool {
    let mut changed = false;
    for e in entries {
        let known = live.ratings.contains_key(&e.user_id);
        match e.status {
            EntryStatus::Playing if event.is_arena() => {
                let paused = match &live.play {
                    play::Play::Arena(a) => a.players().iter().any(|p| {
                        p.entrant.id == player_of(&e.user_id)
                            && p.state == basra_events::arena::ArenaState::Paused
                    }),
                    _ => false,
                };
                if !known || paused {
                    changed |= live.join_arena(&e.user_id, e.rating, now).is_ok();
                }
            }
            EntryStatus::Paused if known && event.is_arena() => {
                let playing = match &live.play {
                    play::Play::Arena(a) => a.players().iter().any(|p| {
                        p.entrant.id == player_of(&e.user_id)
                            && !matches!(p.state, basra_events::arena::ArenaState::Paused)
                    }),
                    _ => false,
                };
                if playing {
                    changed |= live.withdraw(&e.user_id, true);
                }
            }
            // Swiss: never paired again (a second withdrawal changes nothing); knockout:
            // the next match is forfeited (below).
            EntryStatus::Withdrawn if known && !event.is_arena() => {
                changed |= live.withdraw(&e.user_id, false);
            }
            _ => {}
        }
    }
    if changed && event.is_arena() {
        let _ = live.open_matches(event, now);
    }
    changed
}

/// The CreateRoom of a match's room: its two players, the event's rules, private.
fn room_request(event: &EventRecord, m: &LiveMatch) -> game::CreateRoomRequest {
    let seat = |user: &str| game::SeatAssignment {
        occupant: Some(game::seat_assignment::Occupant::UserId(user.to_owned())),
        fill: common::SeatFill::Unspecified as i32,
        queue_wait_ms: 0,
    };
    game::CreateRoomRequest {
        room_id: m.room_id.clone(),
        seats: vec![seat(&m.players[0]), seat(&m.players[1])],
        settings: Some(basra_proto::convert::settings_to_pb(&event.spec.settings)),
        ranked: event.spec.rated,
        allow_spectators: event.spec.allow_spectators,
        visibility: common::RoomVisibility::Private as i32,
    }
}

/// Makes the rooms of `requests` (step 3) with game-session's CreateRooms,
/// [`ROOMS_PER_CALL`] a call, [`BULK_PARALLEL`] calls at once: whether each was made,
/// in the order of `requests`. A call that fails leaves its rooms to the next step
/// (making a room again is harmless); the others count.
async fn make_rooms(
    game: &Arc<dyn GameRooms>,
    requests: Vec<game::CreateRoomRequest>,
) -> Vec<Result<()>> {
    let chunks: Vec<(usize, Vec<game::CreateRoomRequest>)> = requests
        .chunks(ROOMS_PER_CALL)
        .map(<[_]>::to_vec)
        .enumerate()
        .collect();
    let mut answers = in_parallel_at(BULK_PARALLEL, chunks, |(at, rooms)| {
        let game = game.clone();
        async move {
            let count = rooms.len();
            let answer = game.create_rooms(rooms).await.map_err(|status| {
                if is_transient(&status) {
                    MatchmakingError::Unavailable(format!("game-session: {status}"))
                } else {
                    MatchmakingError::Upstream {
                        context: "game-session CreateRooms (event)",
                        status,
                    }
                }
            });
            (at, count, answer)
        }
    })
    .await;
    answers.sort_by_key(|(at, _, _)| *at);
    let mut made = Vec::with_capacity(requests.len());
    for (_, count, answer) in answers {
        match answer {
            Ok(rooms) if rooms.len() == count => made.extend((0..count).map(|_| Ok(()))),
            Ok(rooms) => made.extend((0..count).map(|_| {
                Err(corrupt(format!(
                    "CreateRooms answered {} rooms for {count}",
                    rooms.len()
                )))
            })),
            Err(err) => {
                let why = err.to_string();
                made.push(Err(err));
                made.extend((1..count).map(|_| Err(MatchmakingError::Unavailable(why.clone()))));
            }
        }
    }
    made
}

/// A seat's view and the id of the match in its room (GetSeat's `match_id`).
type Seen = (SeatView, String);

/// What game-session says of one player's seat in a match's room.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct SeatView {
    finished: bool,
    winner_seat: Option<u32>,
    joined: bool,
}

impl SeatView {
    fn of(answer: &game::GetSeatResponse) -> SeatView {
        let status =
            common::RoomStatus::try_from(answer.status).unwrap_or(common::RoomStatus::Unspecified);
        SeatView {
            finished: matches!(
                status,
                common::RoomStatus::Finished | common::RoomStatus::Closed
            ),
            winner_seat: answer.winner_seat,
            joined: answer.joined,
        }
    }
}

/// The results of the matches in play (step 2), in their order, asked of game-session
/// with GetSeats, [`SEATS_PER_CALL`] seats a call, [`BULK_PARALLEL`] calls at once: the
/// first player's seat of each match, and from its join deadline on the second's too
/// (whether each joined). A match whose seats could not be read (the call failed, or
/// an item's room is unknown) has its result unknown: asked again next step. A result
/// comes with the id of the match played in the room when it ended there with a winner
/// (empty otherwise: a forfeit or an absence has nothing to replay).
async fn results_of(
    game: &Arc<dyn GameRooms>,
    in_play: &[LiveMatch],
    withdrawn: &[String],
    now: Millis,
) -> Vec<Result<Option<(Outcome, String)>>> {
    // (match, seat) of each question, in order.
    let mut asked: Vec<(usize, usize)> = Vec::new();
    for (i, m) in in_play.iter().enumerate() {
        asked.push((i, 0));
        if now >= m.deadline_ms {
            asked.push((i, 1));
        }
    }
    let chunks: Vec<(usize, Vec<game::GetSeatRequest>)> = asked
        .chunks(SEATS_PER_CALL)
        .map(|chunk| {
            chunk
                .iter()
                .map(|&(i, seat)| game::GetSeatRequest {
                    room_id: in_play[i].room_id.clone(),
                    user_id: in_play[i].players[seat].clone(),
                })
                .collect()
        })
        .enumerate()
        .collect();
    let mut answers = in_parallel_at(BULK_PARALLEL, chunks, |(at, seats)| {
        let game = game.clone();
        async move {
            let count = seats.len();
            (at, count, game.get_seats(seats).await)
        }
    })
    .await;
    answers.sort_by_key(|(at, _, _)| *at);
    let mut views: Vec<[Option<Result<Seen>>; 2]> = in_play.iter().map(|_| [None, None]).collect();
    let mut next = asked.into_iter();
    for (_, count, answer) in answers {
        let items: Vec<Result<Seen>> = match answer {
            Ok(items) if items.len() == count => items
                .into_iter()
                .map(|item| {
                    item.map(|a| (SeatView::of(&a), a.match_id))
                        .map_err(|status| MatchmakingError::Upstream {
                            context: "game-session GetSeats (event)",
                            status,
                        })
                })
                .collect(),
            Ok(items) => (0..count)
                .map(|_| {
                    Err(corrupt(format!(
                        "GetSeats answered {} seats for {count}",
                        items.len()
                    )))
                })
                .collect(),
            Err(status) => (0..count)
                .map(|_| {
                    Err(MatchmakingError::Upstream {
                        context: "game-session GetSeats (event)",
                        status: status.clone(),
                    })
                })
                .collect(),
        };
        for (item, (i, seat)) in items.into_iter().zip(next.by_ref()) {
            views[i][seat] = Some(item);
        }
    }
    in_play
        .iter()
        .zip(views)
        .map(|(m, [a, b])| {
            let (a, match_id) = a.unwrap_or_else(|| Err(corrupt("a seat not asked")))?;
            let b = b.transpose()?.map(|(b, _)| b);
            let gone = [
                withdrawn.contains(&m.players[0]),
                withdrawn.contains(&m.players[1]),
            ];
            let outcome = outcome_of(m, a, b, gone, now);
            let played = a.finished && matches!(outcome, Some(Outcome::Won(_)));
            Ok(outcome.map(|o| (o, if played { match_id } else { String::new() })))
        })
        .collect()
}

/// The result of a match in play from what its seats say, if it has one now (pure). The
/// room's end is the same seen from either seat: the first player's seat `a` tells it;
/// `b`, the second player's, is asked from the join deadline on (whether each joined);
/// `gone`: which of the two withdrew.
fn outcome_of(
    m: &LiveMatch,
    a: SeatView,
    b: Option<SeatView>,
    gone: [bool; 2],
    now: Millis,
) -> Option<Outcome> {
    let player = |i: usize| player_of(&m.players[i]);
    let due = now >= m.deadline_ms;
    if a.finished {
        let winner = a.winner_seat.or(b.and_then(|b| b.winner_seat));
        return Some(match winner {
            Some(seat) if seat < 2 => Outcome::Won(player(seat as usize)),
            _ => Outcome::BothAbsent,
        });
    }
    let joined = [a.joined, b.is_none_or(|b| b.joined)];
    let absent = [
        gone[0] || (!joined[0] && due),
        gone[1] || (!joined[1] && due),
    ];
    match absent {
        [true, true] => Some(Outcome::BothAbsent),
        [true, false] => Some(Outcome::Forfeit { absent: player(0) }),
        [false, true] => Some(Outcome::Forfeit { absent: player(1) }),
        [false, false] => None,
    }
}

/// Writes the results not yet in the durable store (each once: keyed by the match),
/// then marks them written in the live state.
async fn record_results(
    shared: &EventsShared,
    event: &EventRecord,
    version: u64,
    live: &mut LiveEvent,
    now: Millis,
) -> Result<()> {
    let mut wrote = false;
    for m in live
        .matches
        .iter_mut()
        .filter(|m| m.outcome.is_some() && !m.recorded)
    {
        let outcome = match m.outcome {
            Some(Outcome::Won(_)) => "won",
            Some(Outcome::Forfeit { .. }) => "forfeit",
            _ => "both_absent",
        };
        let result = ResultRecord {
            event_id: event.id.clone(),
            match_key: m.key.clone(),
            room_id: m.room_id.clone(),
            players: m.players.clone(),
            winner: m.winner(),
            outcome: outcome.to_owned(),
            recorded_at_ms: now,
            match_id: m.match_id.clone(),
        };
        shared.store.record_result(&result).await?;
        m.recorded = true;
        wrote = true;
    }
    if wrote {
        // Not saved (another holder): the next step writes them again, and the store
        // keeps the first.
        save(shared, &event.id, version, live).await?;
    }
    Ok(())
}

async fn finish(
    shared: &EventsShared,
    event: &EventRecord,
    live: &LiveEvent,
    now: Millis,
) -> Result<()> {
    let standings = live.standings();
    let knockout = event.spec.format == super::spec::Format::Knockout;
    // The entries as they are now (this step may have eliminated some).
    let entries = shared.store.entries(&event.id).await?;
    let updated: Vec<EntryRecord> = entries
        .iter()
        .map(|e| {
            let place = standings
                .iter()
                .find(|s| s.player == player_of(&e.user_id))
                .map(|row| (row.rank, row.points));
            e.finish(place, knockout)
        })
        .collect();
    shared.store.update_entries(&updated).await?;
    let (round, rounds) = live.rounds();
    let change = PhaseChange {
        from: Phase::Running,
        to: Phase::Finished,
        current_round: round,
        rounds_total: rounds,
        champion: live.champion(),
        cancel_reason: String::new(),
        ended_at_ms: now,
    };
    shared.store.change_phase(&event.id, &change).await?;
    Ok(())
}
