//! Scripted players: real gRPC clients that sign in as guests, play their seat of a room to
//! the end through the `Play` stream, and keep the books the scenarios judge by: every
//! logged event sequence they received (a gap or a repeat is counted, never smoothed
//! over), every stream error by code, each outage from a broken stream to the first event
//! after the resume, and every automatic play of their seat.
//!
//! A player knows every game-session replica: when its stream breaks with a status a client
//! should retry, it resumes on the next replica with the last sequence it saw, as a client
//! behind a load balancer would.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::Context as _;
use basra::table::Table;
use basra_engine::Action;
use basra_engine::bot::{self, Policy};
use basra_proto::basra::accounts::v1::GuestLoginRequest;
use basra_proto::basra::accounts::v1::accounts_service_client::AccountsServiceClient;
use basra_proto::basra::common::v1::RuleSettings;
use basra_proto::basra::game::v1::game_internal_service_client::GameInternalServiceClient;
use basra_proto::basra::game::v1::game_service_client::GameServiceClient;
use basra_proto::basra::game::v1::play_request::Kind;
use basra_proto::basra::game::v1::play_response::Event;
use basra_proto::basra::game::v1::seat_assignment::Occupant;
use basra_proto::basra::game::v1::{
    CaptureChoice, ConnectionState, CreateRoomRequest, Join, PlayCard, PlayRequest, Resign,
    SeatAssignment,
};
use basra_proto::convert::card_to_pb;
use rand_chacha::ChaCha8Rng;
use rand_core::SeedableRng as _;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::Request;
use tonic::metadata::MetadataValue;
use tonic::transport::{Channel, Endpoint};

use crate::stack::Stack;

/// A signed-in guest.
#[derive(Clone)]
pub struct Player {
    /// Its user id.
    pub user_id: String,
    /// `Bearer <access token>`.
    pub bearer: MetadataValue<tonic::metadata::Ascii>,
}

/// A lazily connected channel (each player has its own connections, like a real client).
pub fn channel(url: &str) -> anyhow::Result<Channel> {
    Ok(Endpoint::from_shared(url.to_owned())?
        .tcp_nodelay(true)
        .connect_timeout(Duration::from_secs(2))
        .connect_lazy())
}

/// A connection to `url` that every caller shares: the players of a scenario that
/// multiplexes them all on one connection per replica, as a proxy or a bot farm does (a
/// Channel's clones share its connection).
pub fn shared_channel(url: &str) -> anyhow::Result<Channel> {
    static SHARED: std::sync::OnceLock<std::sync::Mutex<BTreeMap<String, Channel>>> =
        std::sync::OnceLock::new();
    let mut shared = SHARED
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(channel) = shared.get(url) {
        return Ok(channel.clone());
    }
    let fresh = channel(url)?;
    shared.insert(url.to_owned(), fresh.clone());
    Ok(fresh)
}

/// How long a client waits before its attempt number `failures + 1` after `failures`
/// refusals: uniformly random up to 100 ms doubling with each refusal, at most 2 s ("full
/// jitter").
pub fn backoff(failures: u32) -> Duration {
    use rand::Rng as _;
    let ceiling = Duration::from_millis(100)
        .saturating_mul(1 << failures.saturating_sub(1).min(5))
        .min(Duration::from_secs(2));
    ceiling.mul_f64(rand::rng().random::<f64>())
}

/// Adds the bearer token to a request.
pub fn authed<T>(message: T, bearer: &MetadataValue<tonic::metadata::Ascii>) -> Request<T> {
    let mut request = Request::new(message);
    request
        .metadata_mut()
        .insert("authorization", bearer.clone());
    request
}

/// Signs `n` guests in at accounts (tag keeps device ids unique across scenarios).
pub async fn guests(accounts_url: &str, tag: &str, n: usize) -> anyhow::Result<Vec<Player>> {
    let mut client = AccountsServiceClient::new(channel(accounts_url)?);
    let mut players = Vec::with_capacity(n);
    for i in 0..n {
        let tokens = client
            .guest_login(GuestLoginRequest {
                device_id: format!("chaos-{tag}-{i}-{}", uuid::Uuid::now_v7().simple()),
                display_name: format!("Chaos {i}"),
            })
            .await
            .context("GuestLogin")?
            .into_inner()
            .tokens
            .context("GuestLogin without tokens")?;
        players.push(Player {
            user_id: tokens.user_id,
            bearer: format!("Bearer {}", tokens.access_token).parse()?,
        });
    }
    Ok(players)
}

/// Creates a ranked two-player room for `a` and `b` (as matchmaking does, with its service
/// identity) on game-session at `url`.
pub async fn create_room(
    stack: &Stack,
    url: &str,
    a: &Player,
    b: &Player,
    target_score: u32,
) -> anyhow::Result<String> {
    create_room_with_token(&stack.room_maker.token()?, url, a, b, target_score).await
}

/// [`create_room`] with a service token already minted.
pub async fn create_room_with_token(
    service_token: &str,
    url: &str,
    a: &Player,
    b: &Player,
    target_score: u32,
) -> anyhow::Result<String> {
    let room_id = uuid::Uuid::now_v7().to_string();
    let token: MetadataValue<_> = format!("Bearer {service_token}").parse()?;
    let seat = |user: &Player| SeatAssignment {
        occupant: Some(Occupant::UserId(user.user_id.clone())),
        ..Default::default()
    };
    GameInternalServiceClient::new(channel(url)?)
        .create_room(authed(
            CreateRoomRequest {
                room_id: room_id.clone(),
                seats: vec![seat(a), seat(b)],
                settings: Some(RuleSettings {
                    target_score: Some(target_score),
                    ..RuleSettings::default()
                }),
                ranked: true,
                allow_spectators: false,
                visibility: 0,
            },
            &token,
        ))
        .await
        .context("GameInternalService.CreateRoom")?;
    Ok(room_id)
}

/// How a player behaves.
#[derive(Clone)]
pub struct Script {
    /// Pause before each play.
    pub think: Duration,
    /// When this flag goes up, the player lets its next turn run out (the turn timer must
    /// play for it), then plays on.
    pub sleep_once: Option<Arc<AtomicBool>>,
    /// The configured turn length (to tell a timer that beat a connected player).
    pub turn_seconds: u64,
    /// The configured grace period (to tell when a disconnect was recorded: its grace
    /// deadline less this).
    pub grace_seconds: u64,
    /// Give up after this long in all.
    pub deadline: Duration,
    /// Resign after this many own plays (the soak's resigning players).
    pub resign_after: Option<u32>,
    /// Drop the stream after this many own plays, once, and resume a moment later (the
    /// soak's flaky connections).
    pub drop_after: Option<u32>,
    /// Share one connection per replica with every other player that shares ([`shared_channel`])
    /// instead of a connection of its own.
    pub shared_connections: bool,
}

/// What one player saw.
#[derive(Debug, Default, Clone)]
pub struct SeatLog {
    /// The room.
    pub room_id: String,
    /// The match id (from `match_started`).
    pub match_id: Option<String>,
    /// Logged events received once, in order.
    pub events: u64,
    /// Sequence numbers skipped (missed events).
    pub lost: u64,
    /// Logged events received again (or out of order).
    pub duplicated: u64,
    /// Whether `match_ended` arrived.
    pub finished: bool,
    /// Stream ends and failed opens, by status code, with one message each.
    pub errors: BTreeMap<String, (u32, String)>,
    /// Streams opened after the first.
    pub resumes: u32,
    /// Longest time from a broken stream to the next event.
    pub longest_outage: Duration,
    /// Automatic plays of this seat.
    pub automatic: u32,
    /// Automatic plays of this seat although the player was connected for the whole turn
    /// or had a play in flight, and was not told to sleep.
    pub automatic_while_connected: u32,
    /// For each automatic play while connected: what the player knew of that turn.
    pub automatic_details: Vec<String>,
    /// DISCONNECTED announced for this seat although its player was connected (the
    /// disconnect was recorded after the stream that received it had been served).
    pub disconnected_while_connected: u32,
    /// For each of those: when it was recorded against when the stream was opened.
    pub disconnect_details: Vec<String>,
    /// For each resumed stream: from asking for it to its first event.
    pub resume_latencies: Vec<Duration>,
    /// The longest this player went without an event, once its first came (a stall).
    pub longest_silence: Duration,
    /// The last seq this player saw.
    pub last_seq: Option<u64>,
    /// Whether the timer played the turn the player slept through.
    pub slept_turn_timed_out: Option<bool>,
    /// From sending a play to receiving its `card_played`.
    pub play_latencies: Vec<Duration>,
    /// `card_played` events received (every seat's).
    pub plays_seen: u64,
    /// Why the player gave up, if it did.
    pub failure: Option<String>,
}

fn wall_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs_f64()
}

fn retryable(code: tonic::Code) -> bool {
    matches!(
        code,
        tonic::Code::Unavailable
            | tonic::Code::Cancelled
            | tonic::Code::Unknown
            | tonic::Code::Internal
            | tonic::Code::DeadlineExceeded
            | tonic::Code::ResourceExhausted
    )
}

fn note_error(log: &mut SeatLog, status: &tonic::Status) {
    let entry = log
        .errors
        .entry(format!("{:?}", status.code()))
        .or_insert((0, status.message().to_owned()));
    entry.0 += 1;
}

fn play_message(table: &Table, rng: &mut ChaCha8Rng) -> Option<(PlayRequest, String)> {
    match bot::choose(Policy::Greedy, &table.view(), rng)? {
        Action::Play { card, take, .. } => {
            let id = uuid::Uuid::now_v7().to_string();
            let message = PlayRequest {
                kind: Some(Kind::PlayCard(PlayCard {
                    card: Some(card_to_pb(card)),
                    capture_choice: take.map(|cards| CaptureChoice {
                        cards: table
                            .table
                            .iter()
                            .copied()
                            .filter(|c| cards.contains(*c))
                            .map(card_to_pb)
                            .collect(),
                    }),
                    based_on_seq: table.last_seq,
                    client_move_id: id.clone(),
                })),
            };
            Some((message, id))
        }
        Action::Resign { .. } => None,
    }
}

/// Plays `player`'s seat of `room_id` to the end, starting on replica `home` of `urls`.
pub async fn play(
    player: Player,
    room_id: String,
    urls: Vec<String>,
    home: usize,
    script: Script,
) -> SeatLog {
    let mut log = SeatLog {
        room_id: room_id.clone(),
        ..SeatLog::default()
    };
    let connect = if script.shared_connections {
        shared_channel
    } else {
        channel
    };
    let channels: Vec<Channel> = match urls.iter().map(|u| connect(u)).collect() {
        Ok(channels) => channels,
        Err(err) => {
            log.failure = Some(format!("{err:#}"));
            return log;
        }
    };
    let started = Instant::now();
    let mut rng = ChaCha8Rng::seed_from_u64(uuid::Uuid::now_v7().as_u128() as u64);
    let mut table = Table::default();
    let mut replica = home;
    let mut opened = 0u32;
    let mut failures = 0u32;
    let mut broken_at: Option<Instant> = None;
    let mut sleeping = false;
    let mut slept_seq: Option<u64> = None;
    let mut my_plays = 0u32;
    let mut dropped = false;
    let mut last_event: Option<Instant> = None;
    loop {
        if started.elapsed() > script.deadline {
            log.failure = Some(format!(
                "gave up after {:?} (last seq {:?})",
                script.deadline, table.last_seq
            ));
            return log;
        }
        let (tx, rx) = mpsc::channel(16);
        let join = PlayRequest {
            kind: Some(Kind::Join(Join {
                room_id: room_id.clone(),
                last_seen_seq: table.last_seq,
                spectate: false,
            })),
        };
        let _ = tx.send(join).await;
        opened += 1;
        if opened > 1 {
            log.resumes += 1;
        }
        let mut client = GameServiceClient::new(channels[replica].clone());
        let asked = Instant::now();
        // When this stream's first event came: the server had connected the seat by then
        // (its join's connect commit comes before any event).
        let mut served_wall: Option<f64> = None;
        let mut first_event = true;
        let stream = client
            .play(authed(ReceiverStream::new(rx), &player.bearer))
            .await;
        let mut stream = match stream {
            Ok(response) => response.into_inner(),
            Err(status) => {
                note_error(&mut log, &status);
                if !retryable(status.code()) {
                    log.failure = Some(format!("Play refused: {status}"));
                    return log;
                }
                broken_at.get_or_insert_with(Instant::now);
                failures += 1;
                replica = (replica + 1) % channels.len();
                tokio::time::sleep(Duration::from_millis(100 * u64::from(failures.min(10)))).await;
                continue;
            }
        };
        let stream_since = wall_now();
        let mut answered: Option<u64> = None;
        let mut pending: Option<(String, Instant)> = None;
        let mut turn_seen: Option<Instant> = None;
        let ended: Result<(), Option<tonic::Status>> = loop {
            let next = match tokio::time::timeout(
                script.deadline.saturating_sub(started.elapsed()),
                stream.message(),
            )
            .await
            {
                Ok(next) => next,
                Err(_) => break Err(None),
            };
            let event = match next {
                Ok(Some(event)) => event,
                Ok(None) => break Err(None),
                Err(status) => break Err(Some(status)),
            };
            failures = 0;
            if let Some(at) = broken_at.take() {
                log.longest_outage = log.longest_outage.max(at.elapsed());
            }
            if std::mem::take(&mut first_event) {
                served_wall = Some(wall_now());
                if opened > 1 {
                    log.resume_latencies.push(asked.elapsed());
                }
            }
            if let Some(last) = last_event.replace(Instant::now()) {
                log.longest_silence = log.longest_silence.max(last.elapsed());
            }
            log.last_seq = log.last_seq.max(Some(event.seq));
            let logged = !matches!(
                event.event,
                Some(Event::Snapshot(_)) | Some(Event::Rejected(_)) | Some(Event::Pong(_))
            );
            match table.last_seq {
                Some(last) if logged && event.seq <= last => {
                    log.duplicated += 1;
                    continue;
                }
                Some(last) if event.seq > last + 1 && logged => log.lost += event.seq - last - 1,
                // A snapshot after a resume stands for the events it skipped.
                Some(last) if !logged && event.seq > last => log.lost += event.seq - last,
                _ => {}
            }
            if logged {
                log.events += 1;
            }
            let first_view = table.last_seq.is_none();
            if let Err(err) = table.apply(&event) {
                log.failure = Some(format!("bad event: {err}"));
                return log;
            }
            if first_view && matches!(event.event, Some(Event::Snapshot(_))) {
                // Plays made before this player first joined (the timer plays for a player
                // who has not joined yet): 48 cards go round the table each round; rounds
                // count from 1 (0 before the first).
                let held = table.hand_counts.iter().sum::<u32>() + table.deck_remaining;
                if held > 0 && table.round > 0 {
                    log.plays_seen += u64::from((table.round - 1) * 48 + 48 - held.min(48));
                }
            }
            if matches!(event.event, Some(Event::CardPlayed(_))) {
                log.plays_seen += 1;
            }
            match &event.event {
                Some(Event::MatchStarted(started)) => log.match_id = Some(started.match_id.clone()),
                Some(Event::CardPlayed(played)) if Some(played.seat) == table.seat => {
                    let in_flight = pending
                        .as_ref()
                        .is_some_and(|(id, _)| played.client_move_id != *id);
                    if let Some((id, sent)) = &pending
                        && played.client_move_id == *id
                    {
                        log.play_latencies.push(sent.elapsed());
                    }
                    let in_flight_play = pending.take();
                    if played.automatic {
                        log.automatic += 1;
                        if sleeping {
                            sleeping = false;
                            log.slept_turn_timed_out = Some(true);
                        } else {
                            let turn_start = table_turn_start(&table, script.turn_seconds);
                            if in_flight || turn_start.is_some_and(|t| stream_since <= t) {
                                log.automatic_while_connected += 1;
                                let now = wall_now();
                                log.automatic_details.push(format!(
                                    "turn shown {:.2} s ago, deadline {:+.2} s, own play {}",
                                    turn_seen
                                        .map_or(f64::NAN, |t: Instant| t.elapsed().as_secs_f64()),
                                    table.turn_deadline.map_or(f64::NAN, |d| d as f64 - now),
                                    match &in_flight_play {
                                        Some((_, sent)) => format!(
                                            "sent {:.2} s before",
                                            sent.elapsed().as_secs_f64()
                                        ),
                                        None => "not sent".to_owned(),
                                    }
                                ));
                            }
                        }
                    }
                }
                Some(Event::TurnStarted(turn)) if Some(turn.seat) == table.seat => {
                    turn_seen = Some(Instant::now());
                }
                Some(Event::ConnectionChanged(change))
                    if Some(change.seat) == table.seat
                        && change.state == ConnectionState::Disconnected as i32 =>
                {
                    // Recorded when its grace period began.
                    let recorded = change.grace_deadline.as_ref().map(|deadline| {
                        deadline.seconds as f64 + f64::from(deadline.nanos) / 1e9
                            - script.grace_seconds as f64
                    });
                    // After this stream was served, the seat was connected through it: a
                    // disconnect recorded then hit a connected player. (One recorded
                    // before is the end of an earlier stream, which a resume may race;
                    // a resume held back shows as its latency and as automatic plays.)
                    if let (Some(recorded), Some(served)) = (recorded, served_wall)
                        && recorded > served
                    {
                        log.disconnected_while_connected += 1;
                        log.disconnect_details.push(format!(
                            "recorded {:.3} s after this stream's first event (seq {})",
                            recorded - served,
                            event.seq
                        ));
                    }
                }
                Some(Event::Rejected(_)) => answered = None,
                _ => {}
            }
            if table.ended.is_some() {
                log.finished = true;
                if sleeping {
                    log.slept_turn_timed_out.get_or_insert(false);
                }
                return log;
            }
            if let Some(flag) = &script.sleep_once
                && slept_seq.is_none()
                && flag.load(Ordering::Relaxed)
                && table.my_turn()
            {
                sleeping = true;
                slept_seq = table.last_seq;
                log.slept_turn_timed_out = Some(false);
            }
            if table.my_turn() && answered != table.last_seq && !sleeping {
                answered = table.last_seq;
                if !script.think.is_zero() {
                    tokio::time::sleep(script.think).await;
                }
                let message = if script.resign_after == Some(my_plays) {
                    Some((
                        PlayRequest {
                            kind: Some(Kind::Resign(Resign {})),
                        },
                        String::new(),
                    ))
                } else {
                    play_message(&table, &mut rng)
                };
                if let Some((message, id)) = message {
                    pending = (!id.is_empty()).then(|| (id, Instant::now()));
                    my_plays += 1;
                    if tx.send(message).await.is_err() {
                        break Err(None);
                    }
                }
                if !dropped && script.drop_after == Some(my_plays) {
                    dropped = true;
                    break Ok(());
                }
            }
        };
        match ended {
            Err(Some(status)) => {
                note_error(&mut log, &status);
                if !retryable(status.code()) {
                    log.failure = Some(format!("stream ended: {status}"));
                    return log;
                }
            }
            Err(None) => {
                let entry = log
                    .errors
                    .entry("stream closed early".into())
                    .or_insert((0, String::new()));
                entry.0 += 1;
            }
            // The scripted drop: not an error; resume after a pause, on the same replica.
            Ok(()) => {
                drop(stream);
                tokio::time::sleep(Duration::from_millis(1500)).await;
                continue;
            }
        }
        broken_at.get_or_insert_with(Instant::now);
        failures += 1;
        replica = (replica + 1) % channels.len();
        tokio::time::sleep(Duration::from_millis(50 * u64::from(failures.min(20)))).await;
    }
}

/// When the current turn started, in Unix seconds (from its deadline).
fn table_turn_start(table: &Table, turn_seconds: u64) -> Option<f64> {
    table
        .turn_deadline
        .map(|deadline| deadline as f64 - turn_seconds as f64)
}
