//! The bench's players as clients see it: each player's feed (`WatchFriends`, where "your
//! match is ready" arrives), watchers of an event (`WatchEvent`), registration, and the
//! two players of a match who join it and end it (one resigns). Every time is the wall
//! clock in milliseconds at the moment the client received (or was answered), on the same
//! machine as the services' clocks.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::Context as _;
use basra_proto::basra::accounts::v1::WatchFriendsRequest;
use basra_proto::basra::accounts::v1::accounts_service_client::AccountsServiceClient;
use basra_proto::basra::accounts::v1::notice::Body;
use basra_proto::basra::accounts::v1::watch_friends_response::Event as FeedEvent;
use basra_proto::basra::game::v1::game_service_client::GameServiceClient;
use basra_proto::basra::game::v1::{Join, PlayRequest, ResignRequest, play_request};
use basra_proto::basra::matchmaking::v1::event_service_client::EventServiceClient;
use basra_proto::basra::matchmaking::v1::{RegisterRequest, WatchEventRequest, WatchEventResponse};
use basra_proto::event_changes;
use tokio::sync::{Semaphore, mpsc};
use tokio::task::JoinSet;
use tokio_stream::wrappers::ReceiverStream;
use tonic::transport::Channel;

use crate::bots::{Player, authed, channel};

/// Most streams the bench opens on one connection (the services allow 1,000).
const STREAMS_PER_CONNECTION: usize = 500;

/// Now, in wall-clock milliseconds.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// Connections to one service, `STREAMS_PER_CONNECTION` streams each.
pub struct Pool(Vec<Channel>);

impl Pool {
    /// Enough connections to `url` for `streams` streams.
    pub fn new(url: &str, streams: usize) -> anyhow::Result<Pool> {
        let n = streams.div_ceil(STREAMS_PER_CONNECTION).max(1);
        Ok(Pool(
            (0..n).map(|_| channel(url)).collect::<Result<_, _>>()?,
        ))
    }

    /// The connection for stream number `i`.
    pub fn get(&self, i: usize) -> Channel {
        self.0[(i / STREAMS_PER_CONNECTION) % self.0.len()].clone()
    }
}

/// "Your match is ready" as a player's feed delivered it.
#[derive(Debug, Clone)]
pub struct Told {
    /// The player.
    pub user: String,
    /// The event.
    pub event: String,
    /// The room.
    pub room: String,
    /// When the feed delivered it.
    pub at_ms: i64,
}

/// Opens every player's feed and forwards each "your match is ready" to the answer's
/// receiver; returns once every feed has sent its snapshot (is open).
pub async fn open_feeds(
    accounts: &Pool,
    players: &[Player],
) -> anyhow::Result<(mpsc::UnboundedReceiver<Told>, JoinSet<()>)> {
    let (tx, rx) = mpsc::unbounded_channel();
    let (open_tx, mut open_rx) = mpsc::channel::<anyhow::Result<()>>(players.len().max(1));
    // A few opening at once, each retried while accounts answers UNAVAILABLE (its
    // database pool busy), as a client does.
    let opening = Arc::new(Semaphore::new(16));
    let mut tasks = JoinSet::new();
    for (i, player) in players.iter().cloned().enumerate() {
        let (tx, open_tx, opening) = (tx.clone(), open_tx.clone(), opening.clone());
        let mut client =
            AccountsServiceClient::new(accounts.get(i)).max_decoding_message_size(64 << 20);
        tasks.spawn(async move {
            let mut permit = Some(opening.acquire_owned().await);
            let mut failures = 0;
            let mut stream = loop {
                let request = authed(WatchFriendsRequest { last_seen_seq: 0 }, &player.bearer);
                match client.watch_friends(request).await {
                    Ok(stream) => break stream.into_inner(),
                    Err(status) if status.code() == tonic::Code::Unavailable && failures < 20 => {
                        failures += 1;
                        tokio::time::sleep(crate::bots::backoff(failures)).await;
                    }
                    Err(status) => {
                        let _ = open_tx
                            .send(Err(anyhow::anyhow!("WatchFriends: {status}")))
                            .await;
                        return;
                    }
                }
            };
            let mut open = Some(open_tx);
            while let Ok(Some(message)) = stream.message().await {
                let at_ms = now_ms();
                if let Some(open) = open.take() {
                    permit.take();
                    let _ = open.send(Ok(())).await;
                }
                let Some(FeedEvent::Notice(notice)) = message.event else {
                    continue;
                };
                if let Some(Body::EventMatchReady(ready)) = notice.body {
                    let _ = tx.send(Told {
                        user: player.user_id.clone(),
                        event: ready.event_id,
                        room: ready.room_id,
                        at_ms,
                    });
                }
            }
        });
    }
    drop(open_tx);
    for _ in players {
        open_rx
            .recv()
            .await
            .context("a feed ended before it opened")??;
    }
    Ok((rx, tasks))
}

/// A result as a watcher's `WatchEvent` stream showed it first.
#[derive(Debug, Clone)]
pub struct Seen {
    /// The watcher (its number).
    pub watcher: usize,
    /// The room whose match has a winner.
    pub room: String,
    /// When the stream delivered it.
    pub at_ms: i64,
}

/// Opens a `WatchEvent` stream on `event` for each of `watchers` (asking for changes
/// only, as the web page does, when `changes_only`); forwards each result the first time
/// a stream shows it. Returns once every stream has sent its first state.
pub async fn open_watchers(
    matchmaking: &Pool,
    watchers: &[Player],
    event: &str,
    changes_only: bool,
) -> anyhow::Result<(mpsc::UnboundedReceiver<Seen>, JoinSet<()>)> {
    let (tx, rx) = mpsc::unbounded_channel();
    let (open_tx, mut open_rx) = mpsc::channel::<anyhow::Result<()>>(watchers.len().max(1));
    let mut tasks = JoinSet::new();
    for (i, player) in watchers.iter().cloned().enumerate() {
        let (tx, open_tx, event) = (tx.clone(), open_tx.clone(), event.to_owned());
        let mut client =
            EventServiceClient::new(matchmaking.get(i)).max_decoding_message_size(64 << 20);
        tasks.spawn(async move {
            let request = authed(
                WatchEventRequest {
                    event_id: event,
                    last_seen_version: 0,
                    changes_only,
                },
                &player.bearer,
            );
            let mut stream = match client.watch_event(request).await {
                Ok(stream) => stream.into_inner(),
                Err(status) => {
                    let _ = open_tx
                        .send(Err(anyhow::anyhow!("WatchEvent: {status}")))
                        .await;
                    return;
                }
            };
            let mut open = Some(open_tx);
            let mut known = std::collections::HashSet::new();
            // The state the stream stands for, its changes applied (checked as a client
            // keeps it, though only the results are timed).
            let mut held = WatchEventResponse::default();
            while let Ok(Some(update)) = stream.message().await {
                let at_ms = now_ms();
                if let Some(open) = open.take() {
                    let _ = open.send(Ok(())).await;
                }
                let changed = match &update.changes {
                    Some(changes) => changes.pairings.clone(),
                    None => update.pairings.clone(),
                };
                if let Err(err) = event_changes::apply(&mut held, update) {
                    eprintln!("watcher {i}: {err}");
                    return;
                }
                for pairing in changed {
                    if !pairing.winner.is_empty() && known.insert(pairing.room_id.clone()) {
                        let _ = tx.send(Seen {
                            watcher: i,
                            room: pairing.room_id,
                            at_ms,
                        });
                    }
                }
            }
        });
    }
    drop(open_tx);
    for _ in watchers {
        open_rx
            .recv()
            .await
            .context("a watcher's stream ended before it opened")??;
    }
    Ok((rx, tasks))
}

/// Registers every player for `event`, 32 at a time.
pub async fn register_all(
    matchmaking: &Pool,
    players: &[Player],
    event: &str,
) -> anyhow::Result<()> {
    let limit = Arc::new(Semaphore::new(32));
    let mut tasks = JoinSet::new();
    for (i, player) in players.iter().cloned().enumerate() {
        let mut client = EventServiceClient::new(matchmaking.get(i));
        let (limit, event) = (limit.clone(), event.to_owned());
        tasks.spawn(async move {
            let _permit = limit.acquire_owned().await;
            // Retried while UNAVAILABLE (accounts slow to give the rating), as a client does.
            let mut failures = 0;
            loop {
                let request = authed(
                    RegisterRequest {
                        event_id: event.clone(),
                    },
                    &player.bearer,
                );
                match client.register(request).await {
                    Ok(_) => return Ok(()),
                    // A retry after an attempt that registered but answered too late.
                    Err(status) if status.code() == tonic::Code::AlreadyExists && failures > 0 => {
                        return Ok(());
                    }
                    Err(status) if status.code() == tonic::Code::Unavailable && failures < 20 => {
                        failures += 1;
                        tokio::time::sleep(crate::bots::backoff(failures)).await;
                    }
                    Err(status) => return Err(anyhow::anyhow!("Register: {status}")),
                }
            }
        });
    }
    while let Some(done) = tasks.join_next().await {
        done??;
    }
    Ok(())
}

/// Both players of `room` join it (a Play stream each, kept open) and the first resigns
/// as soon as the match runs. When the resignation was answered.
pub async fn end_match(game: Channel, room: &str, players: &[Player; 2]) -> anyhow::Result<i64> {
    let mut streams = Vec::new();
    for player in players {
        let (tx, rx) = mpsc::channel(1);
        tx.send(PlayRequest {
            kind: Some(play_request::Kind::Join(Join {
                room_id: room.to_owned(),
                last_seen_seq: None,
                spectate: false,
            })),
        })
        .await?;
        let mut client = GameServiceClient::new(game.clone()).max_decoding_message_size(64 << 20);
        let mut stream = client
            .play(authed(ReceiverStream::new(rx), &player.bearer))
            .await
            .context("Play")?
            .into_inner();
        // Read what the room sends until the stream ends (the requests' sender kept).
        streams.push(tokio::spawn(async move {
            let _tx = tx;
            while let Ok(Some(_)) = stream.message().await {}
        }));
    }
    let mut client = GameServiceClient::new(game);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let answer = client
            .resign(authed(
                ResignRequest {
                    room_id: room.to_owned(),
                },
                &players[0].bearer,
            ))
            .await;
        match answer {
            Ok(_) => {
                let at = now_ms();
                for stream in streams {
                    stream.abort();
                }
                return Ok(at);
            }
            Err(status)
                if status.code() == tonic::Code::FailedPrecondition
                    && tokio::time::Instant::now() < deadline =>
            {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Err(status) => anyhow::bail!("Resign {room}: {status}"),
        }
    }
}
