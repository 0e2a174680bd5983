//! `basra tournament list|join|watch|standings|withdraw`: a player's side of the events
//! (`basra.matchmaking.v1.EventService`). `join` registers, checks in when the event's
//! check-in window opens, then plays each of the player's matches in the terminal table
//! as soon as it is ready (from the event's live `WatchEvent` stream and `GetMyMatch`),
//! until the event ends or the player is out. What is printed is made by the pure
//! functions here ([`next_step`], [`standings_table`], [`event_line`], …).

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use basra_proto::basra::matchmaking::v1::{
    self as pb, CheckInRequest, EntryStatus, EventFormat, EventStatus, GetEventRequest,
    GetMyMatchRequest, GetStandingsRequest, ListEventsRequest, ListMyEventsRequest, PairingResult,
    RegisterRequest, WatchEventRequest, WatchEventResponse, WithdrawRequest,
};
use clap::Subcommand;

use crate::admin_output::iso;
use crate::player::{Driver, play_room};
use crate::render::isolate;
use crate::session::{Bearer, Channel, Session};
use basra_proto::basra::matchmaking::v1::event_service_client::EventServiceClient;
use tonic::service::interceptor::InterceptedService;

/// `basra tournament …`.
#[derive(Subcommand, Debug, Clone)]
pub enum TournamentCommand {
    /// Upcoming and running events, soonest start first, with your place in each
    /// (`--mine`: the events you registered for, with your final rank).
    List {
        /// Your own events instead, newest first.
        #[arg(long)]
        mine: bool,
    },
    /// Register (and check in when the window opens), then play each of your matches in
    /// the terminal as soon as it is ready, until the event ends or you are out.
    Join {
        /// The event (from `basra tournament list`).
        event_id: String,
        /// Let a bot play your matches instead (random, easy, greedy, hard).
        #[arg(long)]
        bot: Option<String>,
        /// The bot's pause before each play, in milliseconds.
        #[arg(long, default_value_t = 300)]
        delay_ms: u64,
    },
    /// Follow an event live: each round's pairings and results, then the final standings.
    Watch {
        /// The event.
        event_id: String,
    },
    /// The standings (final once the event has finished).
    Standings {
        /// The event.
        event_id: String,
    },
    /// Withdraw (before the start: give your place up; arena: pause).
    Withdraw {
        /// The event.
        event_id: String,
    },
}

/// Runs a `basra tournament` command for the signed-in player.
pub async fn run(session: &Session, command: TournamentCommand) -> anyhow::Result<()> {
    let now = chrono::Utc::now().timestamp_millis();
    match command {
        TournamentCommand::List { mine: false } => {
            let answer = call(
                session,
                ListEventsRequest {
                    page_size: PAGE,
                    page_token: String::new(),
                },
                |mut c, r| async move { c.list_events(r).await },
            )
            .await?;
            if answer.events.is_empty() {
                println!("no event is open or running now");
            }
            for e in &answer.events {
                if let Some(event) = &e.event {
                    println!("{}", event_line(event, e.entry.as_ref(), now));
                }
            }
        }
        TournamentCommand::List { mine: true } => {
            let answer = call(
                session,
                ListMyEventsRequest {
                    page_size: PAGE,
                    page_token: String::new(),
                },
                |mut c, r| async move { c.list_my_events(r).await },
            )
            .await?;
            if answer.events.is_empty() {
                println!("you have not registered for any event");
            }
            for mine in &answer.events {
                let Some(e) = &mine.event else { continue };
                let Some(event) = &e.event else { continue };
                let mut line = event_line(event, e.entry.as_ref(), now);
                if mine.rank > 0 {
                    line.push_str(&format!(
                        " — you finished #{} ({} pts)",
                        mine.rank, mine.points
                    ));
                }
                println!("{line}");
            }
        }
        TournamentCommand::Join {
            event_id,
            bot,
            delay_ms,
        } => {
            let driver = match bot.as_deref() {
                None => Driver::Human,
                Some(name) => Driver::Bot {
                    policy: parse_policy(name)?,
                    delay: Duration::from_millis(delay_ms),
                },
            };
            let outcome = join(session, &event_id, driver, |line| println!("{line}")).await?;
            println!("{}", outcome.summary());
        }
        TournamentCommand::Watch { event_id } => {
            watch(session, &event_id, |update| {
                println!("{}", update_text(update));
                true
            })
            .await?;
        }
        TournamentCommand::Standings { event_id } => {
            let request = GetStandingsRequest { event_id };
            let answer = call(session, request, |mut c, r| async move {
                c.get_standings(r).await
            })
            .await?;
            if let Some(event) = &answer.event {
                println!("{}", event_line(event, None, now));
            }
            println!(
                "{}",
                if answer.r#final {
                    "final standings:"
                } else {
                    "standings so far:"
                }
            );
            print!(
                "{}",
                standings_table(&answer.standings, format_of(&answer.event))
            );
        }
        TournamentCommand::Withdraw { event_id } => {
            let request = WithdrawRequest {
                event_id: event_id.clone(),
            };
            let answer = call(
                session,
                request,
                |mut c, r| async move { c.withdraw(r).await },
            )
            .await?;
            match answer.entry.map(|e| e.status()) {
                None => println!("withdrawn: your place went to the next to register"),
                Some(EntryStatus::Paused) => {
                    println!("paused: `basra tournament join {event_id}` to play again")
                }
                Some(_) => println!("withdrawn from {event_id}"),
            }
        }
    }
    Ok(())
}

/// A bot policy by name.
pub fn parse_policy(name: &str) -> anyhow::Result<basra_engine::bot::Policy> {
    use basra_engine::bot::Policy;
    Ok(match name.to_ascii_lowercase().as_str() {
        "random" => Policy::Random,
        "easy" => Policy::Easy,
        "greedy" => Policy::Greedy,
        "hard" => Policy::Hard,
        other => anyhow::bail!("unknown bot {other:?}: random, easy, greedy, hard"),
    })
}

/// How `join` ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JoinOutcome {
    /// The matches played.
    pub played: Vec<String>,
    /// Where the player stands at the end: the event's status, and their entry's.
    pub event_status: EventStatus,
    /// The entry's status at the end (None: no longer registered).
    pub entry_status: Option<EntryStatus>,
    /// Their rank in the last standings seen (0: not ranked).
    pub rank: u32,
    /// The champion, once finished.
    pub champion: String,
}

impl JoinOutcome {
    /// One line for the player.
    pub fn summary(&self) -> String {
        let played = self.played.len();
        match self.event_status {
            EventStatus::Cancelled => format!("the event was cancelled ({played} matches played)"),
            EventStatus::Finished if self.rank == 1 => {
                format!("you won the event! ({played} matches played)")
            }
            EventStatus::Finished if self.rank > 0 => {
                format!(
                    "the event is over: you finished #{} ({played} matches played)",
                    self.rank
                )
            }
            EventStatus::Finished => format!("the event is over ({played} matches played)"),
            _ => format!(
                "you are out of the event: {} ({played} matches played); follow it with `basra tournament watch`",
                self.entry_status.map_or("not registered", entry_word)
            ),
        }
    }
}

/// What a player in an event does next, from what the event and their entry say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Next {
    /// Check in now: the window is open and they have not.
    CheckIn,
    /// Nothing to do until this time (ms since the epoch: check-in opens).
    WaitUntil(i64),
    /// Their match is in this room, not played yet: play it.
    Play(String),
    /// Nothing to do until the event changes.
    Wait,
    /// They are no longer playing (eliminated, withdrew, paused, not checked in).
    Out,
    /// The event has finished or was cancelled.
    Over,
}

/// What to do next in `update` for the player `me` with `entry`, at `now_ms`, having
/// already played the rooms in `played`.
pub fn next_step(
    update: &WatchEventResponse,
    me: &str,
    entry: Option<&pb::Entry>,
    played: &HashSet<String>,
    now_ms: i64,
) -> Next {
    let Some(event) = &update.event else {
        return Next::Wait;
    };
    match event.status() {
        EventStatus::Finished | EventStatus::Cancelled => return Next::Over,
        EventStatus::Scheduled | EventStatus::Registration => {
            let check_in = event
                .definition
                .as_ref()
                .is_some_and(|d| d.check_in_seconds > 0);
            return match entry.map(|e| e.status()) {
                None => Next::Out,
                Some(EntryStatus::Registered) if check_in => {
                    let opens = millis(event.check_in_opens_at.as_ref());
                    if now_ms >= opens {
                        Next::CheckIn
                    } else {
                        Next::WaitUntil(opens)
                    }
                }
                Some(EntryStatus::Withdrawn) => Next::Out,
                Some(_) => Next::Wait,
            };
        }
        EventStatus::Running | EventStatus::Unspecified => {}
    }
    if let Some(room) = my_open_match(update, me)
        && !played.contains(room)
    {
        return Next::Play(room.to_owned());
    }
    match entry.map(|e| e.status()) {
        None
        | Some(
            EntryStatus::Eliminated
            | EntryStatus::Withdrawn
            | EntryStatus::Paused
            | EntryStatus::NotCheckedIn,
        ) => Next::Out,
        // FINISHED is given to everyone still in at the event's end, just before the
        // event itself reads finished: wait for it (the champion's place comes with it).
        Some(_) => Next::Wait,
    }
}

/// The room of `me`'s pairing that has no result yet, if any.
pub fn my_open_match<'a>(update: &'a WatchEventResponse, me: &str) -> Option<&'a str> {
    update
        .pairings
        .iter()
        .find(|p| {
            p.result() == PairingResult::Unspecified
                && !p.room_id.is_empty()
                && p.user_ids.iter().any(|u| u == me)
        })
        .map(|p| p.room_id.as_str())
}

/// Registers `session`'s player for `event_id` (already registered is fine), checks in
/// when the window opens and plays each match with `driver` as soon as it is ready,
/// until the event ends or the player is out. `say` hears what a person is told.
pub async fn join(
    session: &Session,
    event_id: &str,
    driver: Driver,
    mut say: impl FnMut(&str),
) -> anyhow::Result<JoinOutcome> {
    let request = RegisterRequest {
        event_id: event_id.to_owned(),
    };
    let registered = call(
        session,
        request,
        |mut c, r| async move { c.register(r).await },
    )
    .await;
    match registered {
        Ok(answer) => {
            if let Some(event) = &answer.event {
                say(&format!(
                    "registered for {} ({} players so far); it starts {}",
                    isolate(&event_name(event)),
                    event.registered,
                    iso(event.starts_at.as_ref()).unwrap_or_default()
                ));
            }
        }
        Err(status) if status.code() == tonic::Code::AlreadyExists => {
            say("you are registered already");
        }
        Err(status) => return Err(refusal(status)),
    }
    let mut played: Vec<String> = Vec::new();
    let mut done: HashSet<String> = HashSet::new();
    let mut last: Option<WatchEventResponse> = None;
    let mut seen = 0u64;
    let mut failures = 0u32;
    let mut told_wait = false;
    loop {
        let mut stream = match open_watch(session, event_id, seen).await {
            Ok(stream) => stream,
            Err(status) if retryable(&status) && failures < 8 => {
                failures += 1;
                tokio::time::sleep(Duration::from_millis(200 * u64::from(failures))).await;
                continue;
            }
            Err(status) => return Err(status.into()),
        };
        loop {
            // What the last state says, with the entry as it is now.
            let step = match &last {
                Some(update) => {
                    let entry = my_entry(session, event_id).await?;
                    let now = chrono::Utc::now().timestamp_millis();
                    let step = next_step(update, &session.user_id, entry.as_ref(), &done, now);
                    if matches!(step, Next::Over | Next::Out) {
                        let rank = update
                            .standings
                            .iter()
                            .find(|s| s.user_id == session.user_id)
                            .map_or(0, |s| s.rank);
                        let event = update.event.clone().unwrap_or_default();
                        return Ok(JoinOutcome {
                            played,
                            event_status: event.status(),
                            entry_status: entry.map(|e| e.status()),
                            rank,
                            champion: event.champion,
                        });
                    }
                    step
                }
                None => Next::Wait,
            };
            match step {
                Next::CheckIn => {
                    let request = CheckInRequest {
                        event_id: event_id.to_owned(),
                    };
                    call(
                        session,
                        request,
                        |mut c, r| async move { c.check_in(r).await },
                    )
                    .await
                    .map_err(refusal)?;
                    say("checked in: you will be paired at the start");
                    continue;
                }
                Next::Play(room) => {
                    done.insert(room.clone());
                    let request = GetMyMatchRequest {
                        event_id: event_id.to_owned(),
                    };
                    let ready = call(session, request, |mut c, r| async move {
                        c.get_my_match(r).await
                    })
                    .await;
                    let room = match ready {
                        Ok(ready) => {
                            let names = names_of(last.as_ref());
                            say(&match_ready_text(&ready, &names));
                            ready.room_id
                        }
                        // Over already (a forfeit, the round timed out): look again.
                        Err(status) if status.code() == tonic::Code::NotFound => continue,
                        Err(status) => return Err(status.into()),
                    };
                    if let Driver::Human = driver {
                        println!("{}", crate::render::HELP);
                        println!("when the match is over, press Enter to go back to the event");
                    }
                    play_room(session, &room, driver).await?;
                    played.push(room);
                    told_wait = false;
                    // The stream may have dropped meanwhile: reopen it from where it was.
                    break;
                }
                Next::WaitUntil(_) | Next::Wait if !told_wait && last.is_some() => {
                    told_wait = true;
                    say("waiting for your match…");
                }
                _ => {}
            }
            let wake = match step {
                Next::WaitUntil(at) => Some(Duration::from_millis(
                    (at - chrono::Utc::now().timestamp_millis()).max(0) as u64 + 50,
                )),
                _ => None,
            };
            tokio::select! {
                message = stream.message() => match message {
                    Ok(Some(update)) => {
                        failures = 0;
                        seen = update.version;
                        last = Some(update);
                    }
                    // Ends after a finished or cancelled event: the last state says so.
                    Ok(None) => {
                        let over = last.as_ref().and_then(|u| u.event.as_ref()).is_some_and(|e| {
                            matches!(e.status(), EventStatus::Finished | EventStatus::Cancelled)
                        });
                        if !over {
                            break;
                        }
                    }
                    Err(status) if retryable(&status) => {
                        failures += 1;
                        anyhow::ensure!(failures <= 8, "the event's stream keeps dropping: {}", status.message());
                        tokio::time::sleep(Duration::from_millis(200 * u64::from(failures))).await;
                        break;
                    }
                    Err(status) => return Err(status.into()),
                },
                () = sleep_for(wake), if wake.is_some() => {}
            }
        }
    }
}

/// Follows `event_id` live: `each` hears every update (the whole state, then each change)
/// and answers whether to go on. Reopens a dropped stream from the last version seen.
/// Answers the last update.
pub async fn watch(
    session: &Session,
    event_id: &str,
    mut each: impl FnMut(&WatchEventResponse) -> bool,
) -> anyhow::Result<Option<WatchEventResponse>> {
    let mut last: Option<WatchEventResponse> = None;
    let mut failures = 0u32;
    loop {
        let seen = last.as_ref().map_or(0, |u| u.version);
        let mut stream = match open_watch(session, event_id, seen).await {
            Ok(stream) => stream,
            Err(status) if retryable(&status) && failures < 8 => {
                failures += 1;
                tokio::time::sleep(Duration::from_millis(200 * u64::from(failures))).await;
                continue;
            }
            Err(status) => return Err(status.into()),
        };
        loop {
            match stream.message().await {
                Ok(Some(update)) => {
                    failures = 0;
                    let go_on = each(&update);
                    last = Some(update);
                    if !go_on {
                        return Ok(last);
                    }
                }
                Ok(None) => {
                    let over = last
                        .as_ref()
                        .and_then(|u| u.event.as_ref())
                        .is_some_and(|e| {
                            matches!(e.status(), EventStatus::Finished | EventStatus::Cancelled)
                        });
                    if over {
                        return Ok(last);
                    }
                    break;
                }
                Err(status) if retryable(&status) && failures < 8 => {
                    failures += 1;
                    tokio::time::sleep(Duration::from_millis(200 * u64::from(failures))).await;
                    break;
                }
                Err(status) => return Err(status.into()),
            }
        }
    }
}

async fn my_entry(session: &Session, event_id: &str) -> anyhow::Result<Option<pb::Entry>> {
    let request = GetEventRequest {
        event_id: event_id.to_owned(),
        with_state: false,
    };
    let answer = call(
        session,
        request,
        |mut c, r| async move { c.get_event(r).await },
    )
    .await?;
    Ok(answer.event.and_then(|e| e.entry))
}

/// How many events a list shows (its first page).
const PAGE: u32 = 100;

/// The events service signed in as `session`'s player.
type Events = EventServiceClient<InterceptedService<Channel, Bearer>>;

/// `method` of the events service with `request`, its answer's message; called once more
/// after a refresh when the access token had expired ([`Session::with_refresh`]).
async fn call<Req, T, Fut>(
    session: &Session,
    request: Req,
    method: impl Fn(Events, Req) -> Fut,
) -> Result<T, tonic::Status>
where
    Req: Clone,
    Fut: std::future::Future<Output = Result<tonic::Response<T>, tonic::Status>>,
{
    session
        .with_refresh(|| method(session.events(), request.clone()))
        .await
        .map(tonic::Response::into_inner)
}

/// The event's live stream from after version `seen`.
async fn open_watch(
    session: &Session,
    event_id: &str,
    seen: u64,
) -> Result<tonic::Streaming<WatchEventResponse>, tonic::Status> {
    let request = WatchEventRequest {
        event_id: event_id.to_owned(),
        last_seen_version: seen,
        changes_only: false,
    };
    call(session, request, |mut c, r| async move {
        c.watch_event(r).await
    })
    .await
}

async fn sleep_for(wait: Option<Duration>) {
    tokio::time::sleep(wait.unwrap_or_default()).await;
}

fn retryable(status: &tonic::Status) -> bool {
    matches!(
        status.code(),
        tonic::Code::Unavailable | tonic::Code::Cancelled | tonic::Code::Unknown
    )
}

/// A refusal in words: the server's message, with its `ErrorInfo` reason in plain words
/// when it gave one.
pub fn refusal(status: tonic::Status) -> anyhow::Error {
    let reason = basra_platform::error::reason_of(&status);
    let words = reason.as_deref().and_then(reason_words);
    match words {
        Some(words) => anyhow::anyhow!("{words} ({})", status.message()),
        None => anyhow::Error::from(status),
    }
}

/// An event refusal's `ErrorInfo` reason in plain words.
pub fn reason_words(reason: &str) -> Option<&'static str> {
    Some(match reason {
        "EVENT_ALREADY_REGISTERED" => "you are registered already",
        "EVENT_REGISTRATION_NOT_OPEN" => "registration is not open yet",
        "EVENT_FULL" => "the event is full",
        "EVENT_RATING_BAND" => "your rating is outside the event's band",
        "EVENT_STARTED" => "the event has started",
        "EVENT_CANCELLED" => "the event was cancelled",
        "EVENT_FINISHED" => "the event is over",
        "EVENT_CHECK_IN_CLOSED" => "check-in is not open",
        "EVENT_WITHDRAWN" => "you withdrew from this event",
        _ => return None,
    })
}

fn millis(at: Option<&prost_types::Timestamp>) -> i64 {
    at.map_or(0, |t| t.seconds * 1000 + i64::from(t.nanos) / 1_000_000)
}

fn event_name(event: &pb::Event) -> String {
    event
        .definition
        .as_ref()
        .map(|d| d.name.clone())
        .unwrap_or_default()
}

fn format_of(event: &Option<pb::Event>) -> EventFormat {
    event
        .as_ref()
        .and_then(|e| e.definition.as_ref())
        .map_or(EventFormat::Unspecified, |d| d.format())
}

/// A format in a word.
pub fn format_word(format: EventFormat) -> &'static str {
    match format {
        EventFormat::Knockout => "knockout",
        EventFormat::Swiss => "Swiss",
        EventFormat::Arena => "arena",
        EventFormat::Unspecified => "?",
    }
}

/// An event status in a word.
pub fn status_word(status: EventStatus) -> &'static str {
    match status {
        EventStatus::Scheduled => "scheduled",
        EventStatus::Registration => "registration open",
        EventStatus::Running => "running",
        EventStatus::Finished => "finished",
        EventStatus::Cancelled => "cancelled",
        EventStatus::Unspecified => "?",
    }
}

/// An entry status in a few words.
pub fn entry_word(status: EntryStatus) -> &'static str {
    match status {
        EntryStatus::Registered => "registered",
        EntryStatus::CheckedIn => "checked in",
        EntryStatus::Playing => "playing",
        EntryStatus::Eliminated => "eliminated",
        EntryStatus::Withdrawn => "withdrawn",
        EntryStatus::Paused => "paused",
        EntryStatus::NotCheckedIn => "not checked in",
        EntryStatus::Finished => "finished",
        EntryStatus::Unspecified => "not registered",
    }
}

/// How long until `at_ms` from `now_ms`, in a few words (`in 2 h 5 min`, `now`).
pub fn until(at_ms: i64, now_ms: i64) -> String {
    let s = (at_ms - now_ms) / 1000;
    if s <= 0 {
        return "now".into();
    }
    match s {
        0..60 => format!("in {s} s"),
        60..3600 => format!("in {} min", s / 60),
        3600..86_400 => format!("in {} h {} min", s / 3600, s % 3600 / 60),
        _ => format!("in {} d {} h", s / 86_400, s % 86_400 / 3600),
    }
}

/// One event on a line: id, name, format, status, when, players, the caller's place.
pub fn event_line(event: &pb::Event, entry: Option<&pb::Entry>, now_ms: i64) -> String {
    let def = event.definition.clone().unwrap_or_default();
    let target = def
        .settings
        .as_ref()
        .and_then(|s| s.target_score)
        .unwrap_or(101);
    let when = match event.status() {
        EventStatus::Scheduled | EventStatus::Registration => format!(
            "starts {} ({})",
            iso(event.starts_at.as_ref()).unwrap_or_default(),
            until(millis(event.starts_at.as_ref()), now_ms)
        ),
        EventStatus::Running if event.rounds_total > 0 => {
            format!("round {} of {}", event.current_round, event.rounds_total)
        }
        EventStatus::Cancelled => format!("cancelled: {}", event.cancel_reason),
        status => status_word(status).to_owned(),
    };
    let mut line = format!(
        "{}  {}  {}, to {target}{}  {}  {}/{} players{}",
        event.event_id,
        isolate(&def.name),
        format_word(def.format()),
        if def.rated { ", rated" } else { "" },
        when,
        event.registered,
        def.cap,
        match event.status() {
            EventStatus::Scheduled | EventStatus::Registration | EventStatus::Running => {
                String::new()
            }
            status => format!(" [{}]", status_word(status)),
        }
    );
    if let Some(entry) = entry {
        line.push_str(&format!(" — you: {}", entry_word(entry.status())));
    }
    line
}

/// The standings as a table, with the columns of the format.
pub fn standings_table(rows: &[pb::Standing], format: EventFormat) -> String {
    if rows.is_empty() {
        return "  (no result yet)\n".into();
    }
    let mut out = String::new();
    let extra = match format {
        EventFormat::Knockout => "  round",
        EventFormat::Swiss => "  BH-1  BH  SB",
        EventFormat::Arena => "  perf",
        EventFormat::Unspecified => "",
    };
    out.push_str(&format!("  rank  points  played{extra}  player\n"));
    for s in rows {
        let extra = match format {
            EventFormat::Knockout => format!("  {:>5}", s.round_reached),
            EventFormat::Swiss => format!(
                "  {:>4}  {:>2}  {:>2}",
                s.buchholz_cut1, s.buchholz, s.sonneborn_berger
            ),
            EventFormat::Arena => format!("  {:>4}", s.performance),
            EventFormat::Unspecified => String::new(),
        };
        let name = if s.display_name.is_empty() {
            short(&s.user_id)
        } else {
            s.display_name.clone()
        };
        out.push_str(&format!(
            "  {:>4}  {:>6}  {:>6}{extra}  {}\n",
            s.rank,
            s.points,
            s.played,
            isolate(&name)
        ));
    }
    out
}

/// The players' names the standings give, by user id.
pub fn names_of(update: Option<&WatchEventResponse>) -> HashMap<String, String> {
    update
        .map(|u| {
            u.standings
                .iter()
                .filter(|s| !s.display_name.is_empty())
                .map(|s| (s.user_id.clone(), s.display_name.clone()))
                .collect()
        })
        .unwrap_or_default()
}

/// A user id's first 8 characters (a name unknown yet).
fn short(user_id: &str) -> String {
    user_id.chars().take(8).collect()
}

fn name_or_id(names: &HashMap<String, String>, user: &str) -> String {
    isolate(
        names
            .get(user)
            .cloned()
            .unwrap_or_else(|| short(user))
            .as_str(),
    )
}

/// "Your match is ready" in words: the opponent, the room, the deadline.
pub fn match_ready_text(ready: &pb::GetMyMatchResponse, names: &HashMap<String, String>) -> String {
    let round = ready.pairing.as_ref().map_or(0, |p| p.round);
    let round = if round > 0 {
        format!("round {round}: ")
    } else {
        String::new()
    };
    format!(
        "your match is ready — {round}you against {} in room {}; join by {}",
        name_or_id(names, &ready.opponent),
        ready.room_id,
        iso(ready.join_deadline.as_ref()).unwrap_or_default()
    )
}

/// One pairing in words: the players, the result once there is one, and a match played
/// to its end's id (`basra replay MATCH_ID` replays it).
pub fn pairing_text(p: &pb::Pairing, names: &HashMap<String, String>) -> String {
    let players: Vec<String> = p.user_ids.iter().map(|u| name_or_id(names, u)).collect();
    let who = players.join(" v ");
    let result = match p.result() {
        PairingResult::Unspecified => "playing".to_owned(),
        PairingResult::Won => format!("{} won", name_or_id(names, &p.winner)),
        PairingResult::Forfeit => format!("{} won by forfeit", name_or_id(names, &p.winner)),
        PairingResult::BothAbsent => "neither joined".to_owned(),
        PairingResult::Bye => "a bye".to_owned(),
    };
    let replay = if p.match_id.is_empty() {
        String::new()
    } else {
        format!(" (match {})", p.match_id)
    };
    format!("  table {}: {who} — {result}{replay}", p.table)
}

/// An update of `basra tournament watch`: the event's state, its pairings, its
/// standings.
pub fn update_text(update: &WatchEventResponse) -> String {
    let mut out = String::new();
    let names = names_of(Some(update));
    if let Some(event) = &update.event {
        let def = event.definition.clone().unwrap_or_default();
        out.push_str(&format!(
            "[{}] {} — {}",
            update.version,
            isolate(&def.name),
            status_word(event.status())
        ));
        if event.current_round > 0 {
            out.push_str(&format!(
                ", round {} of {}",
                event.current_round, event.rounds_total
            ));
        }
        if !event.champion.is_empty() {
            out.push_str(&format!(", won by {}", name_or_id(&names, &event.champion)));
        }
        if !event.cancel_reason.is_empty() {
            out.push_str(&format!(": {}", event.cancel_reason));
        }
        out.push('\n');
    }
    // The earlier rounds (a stream's first message, or a new round), each under its
    // number, then the current one under its own when there are earlier ones.
    let mut round = None;
    let headed = !update.earlier_pairings.is_empty();
    for p in update.earlier_pairings.iter().chain(&update.pairings) {
        if headed && round != Some(p.round) {
            round = Some(p.round);
            out.push_str(&format!("round {}:\n", p.round));
        }
        out.push_str(&pairing_text(p, &names));
        out.push('\n');
    }
    let format = format_of(&update.event);
    out.push_str(&standings_table(&update.standings, format));
    out.trim_end().to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(status: EventStatus, check_in_seconds: u32, opens_s: i64) -> pb::Event {
        pb::Event {
            event_id: "e1".into(),
            definition: Some(pb::EventDefinition {
                name: "Friday cup".into(),
                format: EventFormat::Knockout as i32,
                cap: 8,
                check_in_seconds,
                ..Default::default()
            }),
            status: status as i32,
            check_in_opens_at: Some(prost_types::Timestamp {
                seconds: opens_s,
                nanos: 0,
            }),
            ..Default::default()
        }
    }

    fn entry(status: EntryStatus) -> pb::Entry {
        pb::Entry {
            status: status as i32,
            ..Default::default()
        }
    }

    fn pairing(users: &[&str], room: &str, result: PairingResult) -> pb::Pairing {
        pb::Pairing {
            round: 1,
            table: 1,
            user_ids: users.iter().map(|u| u.to_string()).collect(),
            room_id: room.into(),
            result: result as i32,
            winner: String::new(),
            match_id: String::new(),
        }
    }

    fn update(event: pb::Event, pairings: Vec<pb::Pairing>) -> WatchEventResponse {
        WatchEventResponse {
            version: 1,
            event: Some(event),
            standings: vec![],
            pairings,
            ..Default::default()
        }
    }

    #[test]
    fn a_registered_player_checks_in_once_the_window_opens() {
        let none = HashSet::new();
        let u = update(event(EventStatus::Registration, 60, 100), vec![]);
        let registered = entry(EntryStatus::Registered);
        assert_eq!(
            next_step(&u, "me", Some(&registered), &none, 99_000),
            Next::WaitUntil(100_000)
        );
        assert_eq!(
            next_step(&u, "me", Some(&registered), &none, 100_000),
            Next::CheckIn
        );
        let checked = entry(EntryStatus::CheckedIn);
        assert_eq!(
            next_step(&u, "me", Some(&checked), &none, 100_000),
            Next::Wait
        );
        // No check-in window: registered is enough.
        let u = update(event(EventStatus::Registration, 0, 100), vec![]);
        assert_eq!(
            next_step(&u, "me", Some(&registered), &none, 100_000),
            Next::Wait
        );
    }

    #[test]
    fn a_ready_match_is_played_once_and_the_end_is_seen() {
        let mut played = HashSet::new();
        let playing = entry(EntryStatus::Playing);
        let u = update(
            event(EventStatus::Running, 0, 0),
            vec![
                pairing(&["a", "b"], "r1", PairingResult::Unspecified),
                pairing(&["me", "c"], "r2", PairingResult::Unspecified),
            ],
        );
        assert_eq!(
            next_step(&u, "me", Some(&playing), &played, 0),
            Next::Play("r2".into())
        );
        played.insert("r2".to_owned());
        assert_eq!(next_step(&u, "me", Some(&playing), &played, 0), Next::Wait);
        // A bye or a decided match is not played.
        let u = update(
            event(EventStatus::Running, 0, 0),
            vec![pairing(&["me"], "", PairingResult::Bye)],
        );
        assert_eq!(
            next_step(&u, "me", Some(&playing), &HashSet::new(), 0),
            Next::Wait
        );
        let out = entry(EntryStatus::Eliminated);
        assert_eq!(
            next_step(&u, "me", Some(&out), &HashSet::new(), 0),
            Next::Out
        );
        // The entries are finished a moment before the event: not out, the end is near.
        let done = entry(EntryStatus::Finished);
        assert_eq!(
            next_step(&u, "me", Some(&done), &HashSet::new(), 0),
            Next::Wait
        );
        let u = update(event(EventStatus::Finished, 0, 0), vec![]);
        assert_eq!(
            next_step(&u, "me", Some(&playing), &HashSet::new(), 0),
            Next::Over
        );
        let u = update(event(EventStatus::Cancelled, 0, 0), vec![]);
        assert_eq!(next_step(&u, "me", None, &HashSet::new(), 0), Next::Over);
    }

    #[test]
    fn earlier_rounds_are_shown_under_their_numbers_before_the_current_one() {
        let mut u = update(
            event(EventStatus::Running, 0, 0),
            vec![pairing(&["a", "c"], "r3", PairingResult::Unspecified)],
        );
        u.pairings[0].round = 2;
        u.earlier_pairings = vec![
            pairing(&["a", "b"], "r1", PairingResult::Won),
            pairing(&["c", "d"], "r2", PairingResult::Won),
        ];
        u.earlier_pairings[0].winner = "a".into();
        u.earlier_pairings[1].winner = "c".into();
        u.earlier_pairings[1].table = 2;
        // Names are isolated for right-to-left terminals; the order is what is checked.
        let text = update_text(&u).replace(['\u{2068}', '\u{2069}'], "");
        let lines: Vec<&str> = text.lines().collect();
        let at = |needle: &str| {
            lines
                .iter()
                .position(|l| l.contains(needle))
                .unwrap_or_else(|| panic!("{needle:?} not in {text}"))
        };
        let order = [
            "round 1:",
            "table 1: a v b — a won",
            "table 2: c v d — c won",
            "round 2:",
            "table 1: a v c — playing",
        ];
        let places: Vec<usize> = order.iter().map(|n| at(n)).collect();
        assert!(places.windows(2).all(|w| w[0] < w[1]), "{text}");
        assert_eq!(text.matches("round 1:").count(), 1);
        // Without earlier rounds (an arena, a later message), no headings.
        u.earlier_pairings.clear();
        assert!(!update_text(&u).contains("round 2:"));
    }

    #[test]
    fn the_texts_name_players_and_results() {
        let mut u = update(
            event(EventStatus::Running, 0, 0),
            vec![pairing(
                &["u-alice-1234", "u-bob-5678"],
                "r1",
                PairingResult::Won,
            )],
        );
        u.pairings[0].winner = "u-bob-5678".into();
        u.pairings[0].match_id = "0190aaaa-0000-7000-8000-00000000000a".into();
        u.standings = vec![pb::Standing {
            rank: 1,
            user_id: "u-bob-5678".into(),
            display_name: "Bob".into(),
            points: 1,
            played: 1,
            round_reached: 2,
            ..Default::default()
        }];
        u.event.as_mut().unwrap().current_round = 1;
        u.event.as_mut().unwrap().rounds_total = 2;
        let text = update_text(&u);
        assert!(
            text.starts_with("[1] \u{2068}Friday cup\u{2069} — running, round 1 of 2"),
            "{text}"
        );
        assert!(
            text.contains(
                "table 1: \u{2068}u-alice-\u{2069} v \u{2068}Bob\u{2069} — \u{2068}Bob\u{2069} won \
                 (match 0190aaaa-0000-7000-8000-00000000000a)\n"
            ),
            "{text}"
        );
        // A match without a result (or without a match played) names no match.
        assert!(
            !update_text(&update(
                event(EventStatus::Running, 0, 0),
                vec![pairing(&["a", "b"], "r1", PairingResult::Unspecified)]
            ))
            .contains("(match")
        );
        assert!(
            text.contains("rank  points  played  round  player"),
            "{text}"
        );
        assert_eq!(until(10_000, 0), "in 10 s");
        assert_eq!(until(3_720_000, 0), "in 1 h 2 min");
        assert_eq!(until(0, 5), "now");
        let line = event_line(
            &u.event.clone().unwrap(),
            Some(&entry(EntryStatus::Playing)),
            0,
        );
        assert!(line.contains("knockout, to 101"), "{line}");
        assert!(line.ends_with("— you: playing"), "{line}");
        assert_eq!(reason_words("EVENT_FULL"), Some("the event is full"));
        assert!(parse_policy("Greedy").is_ok() && parse_policy("best").is_err());
    }
}
