//! Players of an event: each asks matchmaking for their match (`GetMyMatch`, on either
//! replica: the next one when a call fails), joins the room on game-session and plays it
//! out ([`bots::play`], which resumes on the other game-session replica when a stream
//! breaks), and asks again, until the event has finished or they are knocked out.

use std::time::{Duration, Instant};

use basra_proto::basra::matchmaking::v1::event_service_client::EventServiceClient;
use basra_proto::basra::matchmaking::v1::{
    EntryStatus, EventStatus, GetEventRequest, GetMyMatchRequest, RegisterRequest,
};

use crate::bots::{self, Player, Script, SeatLog};

/// What one player of an event did.
#[derive(Debug, Default)]
pub struct EventLog {
    /// The player.
    pub user_id: String,
    /// Each match they played, in order.
    pub matches: Vec<SeatLog>,
    /// Calls to matchmaking that failed (other than NOT_FOUND), by code.
    pub call_errors: Vec<String>,
    /// Why they stopped before the event ended, if they did.
    pub failure: Option<String>,
}

fn client(url: &str) -> anyhow::Result<EventServiceClient<tonic::transport::Channel>> {
    Ok(EventServiceClient::new(bots::shared_channel(url)?))
}

/// Registers every player for `event` (a few at once), on the matchmaking replicas in
/// turn.
pub async fn register_all(
    players: &[Player],
    event: &str,
    matchmakers: &[String],
) -> anyhow::Result<()> {
    let mut set = tokio::task::JoinSet::new();
    for (i, player) in players.iter().enumerate() {
        let (player, event) = (player.clone(), event.to_owned());
        let url = matchmakers[i % matchmakers.len()].clone();
        set.spawn(async move {
            client(&url)?
                .register(bots::authed(
                    RegisterRequest {
                        event_id: event.clone(),
                    },
                    &player.bearer,
                ))
                .await
                .map_err(|status| anyhow::anyhow!("Register {}: {status}", player.user_id))
        });
        if set.len() >= 16 {
            set.join_next().await.expect("a task")??;
        }
    }
    while let Some(done) = set.join_next().await {
        done??;
    }
    Ok(())
}

/// An event as one player sees it.
#[derive(Debug, Clone, Copy)]
pub struct Seen {
    /// The event's status.
    pub status: EventStatus,
    /// The player's entry's.
    pub entry: EntryStatus,
    /// The round being played (knockout; 0 before the start and in an arena).
    pub round: u32,
    /// The rounds in all (knockout, known at the start).
    pub rounds_total: u32,
}

/// The event as `player` sees it (GetEvent on matchmaking at `url`).
pub async fn event_status(url: &str, player: &Player, event: &str) -> Result<Seen, tonic::Status> {
    let answer = client(url)
        .map_err(|err| tonic::Status::unavailable(err.to_string()))?
        .get_event(bots::authed(
            GetEventRequest {
                event_id: event.to_owned(),
                with_state: false,
            },
            &player.bearer,
        ))
        .await?
        .into_inner()
        .event
        .unwrap_or_default();
    let event = answer.event.unwrap_or_default();
    Ok(Seen {
        status: EventStatus::try_from(event.status).unwrap_or(EventStatus::Unspecified),
        entry: answer
            .entry
            .and_then(|e| EntryStatus::try_from(e.status).ok())
            .unwrap_or(EntryStatus::Unspecified),
        round: event.current_round,
        rounds_total: event.rounds_total,
    })
}

/// Plays `player`'s matches of `event` until it has finished (or they are knocked out),
/// giving up after `deadline`.
pub async fn play_event(
    player: Player,
    event: String,
    matchmakers: Vec<String>,
    games: Vec<String>,
    home: usize,
    script: Script,
    deadline: Duration,
) -> EventLog {
    let mut log = EventLog {
        user_id: player.user_id.clone(),
        ..EventLog::default()
    };
    let started = Instant::now();
    let mut replica = home % matchmakers.len();
    let mut played: Vec<String> = Vec::new();
    let mut polls = 0u32;
    loop {
        if started.elapsed() > deadline {
            log.failure = Some(format!(
                "the event did not end within {deadline:?} ({} matches played)",
                played.len()
            ));
            return log;
        }
        let url = &matchmakers[replica];
        let asked = match client(url) {
            Ok(mut client) => client
                .get_my_match(bots::authed(
                    GetMyMatchRequest {
                        event_id: event.clone(),
                    },
                    &player.bearer,
                ))
                .await
                .map(tonic::Response::into_inner),
            Err(err) => Err(tonic::Status::unavailable(err.to_string())),
        };
        match asked {
            Ok(ready) if !played.contains(&ready.room_id) => {
                played.push(ready.room_id.clone());
                let seat = bots::play(
                    player.clone(),
                    ready.room_id,
                    games.clone(),
                    home % games.len(),
                    script.clone(),
                )
                .await;
                log.matches.push(seat);
                // The next match, if any, comes once the clock has taken this result.
                continue;
            }
            Ok(_) => {}
            Err(status) if status.code() == tonic::Code::NotFound => {}
            Err(status) => {
                log.call_errors.push(format!("{:?}", status.code()));
                replica = (replica + 1) % matchmakers.len();
            }
        }
        polls += 1;
        // Now and then (and between matches): is the event over, or are we out of it?
        if polls % 4 == 1 {
            match event_status(url, &player, &event).await {
                Ok(seen)
                    if matches!(seen.status, EventStatus::Finished | EventStatus::Cancelled)
                        || matches!(
                            seen.entry,
                            EntryStatus::Eliminated | EntryStatus::Finished
                        ) =>
                {
                    return log;
                }
                Ok(_) => {}
                Err(status) => {
                    log.call_errors.push(format!("{:?}", status.code()));
                    replica = (replica + 1) % matchmakers.len();
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}
