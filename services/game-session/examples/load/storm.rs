//! `--join-storm N`: N players (N/2 two-player rooms) open their Play streams against one
//! replica within one second, spread evenly, each on its own new connection (as the
//! players of a dead replica resuming on this one; `--connections C` shares C connections
//! made beforehand instead). Every join asks for a snapshot and is never retried: the
//! report counts refusals by status and gives the time from the first join to the last
//! snapshot received, the join latencies, and the replica's RSS and CPU.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use basra_platform::auth::{Role, TokenIssuer};
use basra_proto::basra::game::v1::{
    self as game, PlayRequest, game_service_client::GameServiceClient, play_request::Kind,
    play_response::Event as E,
};
use tokio::sync::mpsc;

use super::{Server, authed, connect, create_rooms, percentile, token};

/// One join: its latency, or the status that refused it.
type Outcome = Result<Duration, String>;

async fn join(
    channel: tonic::transport::Channel,
    token: String,
    room_id: String,
) -> (
    Outcome,
    Option<(
        mpsc::Sender<PlayRequest>,
        tonic::Streaming<game::PlayResponse>,
    )>,
) {
    let started = Instant::now();
    let (tx, rx) = mpsc::channel(4);
    let _ = tx
        .send(PlayRequest {
            kind: Some(Kind::Join(game::Join {
                room_id,
                last_seen_seq: None,
                spectate: false,
            })),
        })
        .await;
    let opened = GameServiceClient::new(channel)
        .play(authed(
            tokio_stream::wrappers::ReceiverStream::new(rx),
            &token,
        ))
        .await;
    let mut events = match opened {
        Ok(response) => response.into_inner(),
        Err(status) => {
            return (
                Err(format!("{:?}: {}", status.code(), status.message())),
                None,
            );
        }
    };
    match events.message().await {
        Ok(Some(event)) if matches!(event.event, Some(E::Snapshot(_))) => {
            (Ok(started.elapsed()), Some((tx, events)))
        }
        Ok(Some(event)) => (Err(format!("first event not a snapshot: {event:?}")), None),
        Ok(None) => (Err("stream closed before the snapshot".into()), None),
        Err(status) => (
            Err(format!("{:?}: {}", status.code(), status.message())),
            None,
        ),
    }
}

/// Runs the storm of `players` joins (rounded up to an even number) and prints its report.
pub(crate) async fn run(
    server: &Server,
    issuer: &TokenIssuer,
    players: usize,
    connections: usize,
) -> anyhow::Result<()> {
    let rooms = create_rooms(server, issuer, players.div_ceil(2), false, None).await?;
    let players = rooms.len() * 2;
    let shared: Vec<_> = {
        let mut channels = Vec::with_capacity(connections);
        for _ in 0..connections {
            channels.push(connect(server.addr).await?);
        }
        channels
    };
    let mut seats = Vec::with_capacity(players);
    for (room_id, ua, ub) in &rooms {
        for user in [ua, ub] {
            seats.push((room_id.clone(), token(issuer, *user, Role::Player)?));
        }
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (rss0, cpu0) = (server.rss(), server.cpu_seconds());

    let start = Instant::now();
    let spread = Duration::from_secs(1);
    let mut joins = tokio::task::JoinSet::new();
    for (i, (room_id, token)) in seats.into_iter().enumerate() {
        let at = spread.mul_f64(i as f64 / players as f64);
        let (addr, channel) = (server.addr, shared.get(i % connections.max(1)).cloned());
        joins.spawn(async move {
            tokio::time::sleep_until((start + at).into()).await;
            let channel = match channel {
                Some(channel) => channel,
                None => match connect(addr).await {
                    Ok(channel) => channel,
                    Err(err) => return (Err(format!("connect: {err:#}")), None, None),
                },
            };
            let (outcome, held) = join(channel, token, room_id).await;
            // The time from the storm's start to this snapshot.
            (outcome, held, Some(start.elapsed()))
        });
    }
    let mut latencies = Vec::with_capacity(players);
    let mut refused: BTreeMap<String, usize> = BTreeMap::new();
    let mut last = Duration::ZERO;
    let mut held = Vec::with_capacity(players);
    while let Some(done) = joins.join_next().await {
        let (outcome, stream, at) = done?;
        match outcome {
            Ok(latency) => {
                latencies.push(latency.as_micros() as u32);
                last = last.max(at.unwrap_or_default());
                held.push(stream);
            }
            Err(status) => *refused.entry(status).or_default() += 1,
        }
    }
    let (rss1, cpu1) = (server.rss(), server.cpu_seconds());
    latencies.sort_unstable();
    let served = latencies.len();
    println!(
        "join storm: {players} joins spread over {:.1} s on {}",
        spread.as_secs_f64(),
        if connections == 0 {
            "a new connection each".to_owned()
        } else {
            format!("{connections} connections")
        }
    );
    println!(
        "served {served}, refused {}; the last snapshot {:.2} s after the first join",
        players - served,
        last.as_secs_f64()
    );
    for (status, n) in &refused {
        println!("  refused ×{n}: {status}");
    }
    println!(
        "join → snapshot: p50 {:.1} ms  p99 {:.1} ms  max {:.1} ms",
        percentile(&latencies, 50.0),
        percentile(&latencies, 99.0),
        percentile(&latencies, 100.0)
    );
    println!(
        "replica CPU during the storm {:.2} s ({:.0} µs per join); RSS {:.1} MiB before, {:.1} MiB with the streams ({:.1} KiB per stream with its connection)",
        cpu1 - cpu0,
        (cpu1 - cpu0) / served.max(1) as f64 * 1e6,
        rss0 as f64 / 1048576.0,
        rss1 as f64 / 1048576.0,
        rss1.saturating_sub(rss0) as f64 / served.max(1) as f64 / 1024.0
    );
    drop(held);
    Ok(())
}
