//! `basra simulate` through the real services, its default mode: simulated people sign in
//! as guests and take seats the ways people do — the ranked queue, a private room joined
//! by code (two or four seats), a match against the computer — and a bot policy plays
//! each of their seats over the `Play` stream. Every finished match so takes the whole
//! record path: game-session's outbox → `AccountsInternalService.RecordMatch` → PostgreSQL. The run
//! then waits until each match it played is in its players' match history, so "recorded"
//! means what it says.
//!
//! The fast mode (`--fast`, [`super::fast`]) plays the matches in the
//! engine here instead and records them through `RecordMatches`, for corpora of many
//! thousands of matches.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use basra_engine::bot::Policy;
use basra_proto::basra::accounts::v1::{GuestLoginRequest, MatchHistoryRequest};
use basra_proto::basra::common::v1::{BotLevel, RoomVisibility, RuleSettings};
use basra_proto::basra::matchmaking::v1::join_room_request::Target;
use basra_records::corpus::policy_of;
use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};
use tokio::task::JoinSet;

use crate::lobby::{self, Seated};
use crate::player::{Driver, play_room};
use crate::session::{Endpoints, Session};

/// What to simulate, and where.
#[derive(Debug, Clone)]
pub struct ServicesOptions {
    /// Where the services answer.
    pub endpoints: Endpoints,
    /// Matches to play.
    pub matches: u64,
    /// Simulated people (guests; the same `seed` signs the same ones in again). Each
    /// sign-in counts against accounts' sign-up limit per address (300 a minute by
    /// default): a refused one waits as long as accounts says.
    pub players: usize,
    /// Makes the run's choices reproducible, and names the guests.
    pub seed: u64,
    /// Matches played at once.
    pub concurrency: usize,
    /// How long to wait, after the last match, for every record to reach accounts.
    pub record_timeout: Duration,
    /// Let the queue seat a bot (after its usual wait) when it finds nobody in a queued
    /// person's rating window. Ratings drift apart as people win and lose, and two
    /// people more than the window's width apart would otherwise wait for ever.
    pub queue_bots: bool,
    /// Show a progress bar (only ever on a terminal).
    pub progress: bool,
}

/// How the people of one match get their seats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Seating {
    /// Two people queue for a ranked two-seat match (a bot fills in only when
    /// [`ServicesOptions::queue_bots`] allows and nobody is in the rating window).
    RankedQueue,
    /// One person plays the computer (unranked, a bot seat).
    Computer,
    /// A private two-seat room: one creates it, the other joins by code.
    PrivateTwo,
    /// A private four-seat room: one creates it, three join by code.
    PrivateFour,
}

/// The seatings in turn: four in ten matches ranked, three private duels, two against
/// the computer, one partnership match. Any ten consecutive matches have each kind.
const SEATINGS: [Seating; 10] = [
    Seating::RankedQueue,
    Seating::PrivateTwo,
    Seating::Computer,
    Seating::RankedQueue,
    Seating::PrivateFour,
    Seating::PrivateTwo,
    Seating::RankedQueue,
    Seating::Computer,
    Seating::PrivateTwo,
    Seating::RankedQueue,
];

impl Seating {
    /// The seating of the `index`-th match.
    pub fn of(index: u64) -> Seating {
        SEATINGS[(index % SEATINGS.len() as u64) as usize]
    }

    /// How many simulated people it seats.
    pub fn people(self) -> usize {
        match self {
            Seating::Computer => 1,
            Seating::RankedQueue | Seating::PrivateTwo => 2,
            Seating::PrivateFour => 4,
        }
    }
}

/// What a run did.
#[derive(Debug, Clone, PartialEq)]
pub struct ServicesSummary {
    /// The matches played to their end, by id.
    pub match_ids: Vec<String>,
    /// Of those, the ones found in the players' match history.
    pub recorded: u64,
    /// Wall time of the play (sign-in excluded, the wait for the records included).
    pub elapsed: Duration,
}

impl ServicesSummary {
    /// One line for people.
    pub fn describe(&self) -> String {
        let played = self.match_ids.len();
        format!(
            "played {played} matches through the services, {} recorded, in {:.1}s: {:.1} matches/s",
            self.recorded,
            self.elapsed.as_secs_f64(),
            played as f64 / self.elapsed.as_secs_f64().max(1e-9)
        )
    }
}

/// A signed-in simulated person.
struct Person {
    session: Session,
    policy: Policy,
}

/// Plays `options.matches` matches through the services.
pub async fn simulate_services(options: &ServicesOptions) -> anyhow::Result<ServicesSummary> {
    anyhow::ensure!(options.players >= 4, "--players must be at least 4");
    let people = sign_in(options).await?;
    let people: Vec<Arc<Person>> = people.into_iter().map(Arc::new).collect();
    let free: Arc<Mutex<Vec<usize>>> = Arc::new(Mutex::new((0..people.len()).collect()));
    let mut rng = ChaCha8Rng::seed_from_u64(options.seed);
    let bar = basra_analytics::progress::matches_bar(options.progress, options.matches);
    let started = Instant::now();

    let mut in_flight = JoinSet::new();
    let mut played: Vec<(String, usize)> = Vec::new();
    let mut seen = HashSet::new();
    let mut finish = |result: Result<anyhow::Result<Vec<(String, usize)>>, _>| {
        let result: Result<_, tokio::task::JoinError> = result;
        for (match_id, person) in result.context("a match task panicked")?? {
            if seen.insert(match_id.clone()) {
                played.push((match_id, person));
                bar.inc(1);
            }
        }
        anyhow::Ok(())
    };
    for index in 0..options.matches {
        while in_flight.len() >= options.concurrency.max(1) {
            let done = in_flight.join_next().await.expect("a match is in flight");
            finish(done)?;
        }
        let seating = Seating::of(index);
        let seated = loop {
            if let Some(seated) = take(&free, seating.people(), &mut rng) {
                break seated;
            }
            // Everyone is playing: wait for a match to end.
            match in_flight.join_next().await {
                Some(done) => finish(done)?,
                None => anyhow::bail!("not enough players for a {seating:?} match"),
            }
        };
        let target = match rng.next_u32() % 10 {
            0 => 61,
            1 => 151,
            _ => 101,
        };
        let group: Vec<(usize, Arc<Person>)> = seated
            .iter()
            .map(|&i| (i, Arc::clone(&people[i])))
            .collect();
        let free = Arc::clone(&free);
        let queue_bots = options.queue_bots;
        in_flight.spawn(async move {
            let result = play_match(seating, target, queue_bots, &group).await;
            free.lock()
                .expect("the free list is never poisoned")
                .extend(group.iter().map(|(i, _)| *i));
            result.with_context(|| format!("a {seating:?} match"))
        });
    }
    while let Some(done) = in_flight.join_next().await {
        finish(done)?;
    }
    bar.finish_and_clear();

    let recorded = wait_for_records(&people, &played, options.record_timeout).await?;
    Ok(ServicesSummary {
        match_ids: played.into_iter().map(|(id, _)| id).collect(),
        recorded,
        elapsed: started.elapsed(),
    })
}

/// Signs the simulated people in, as guests of devices named by the seed (the fast mode
/// names them the same way, so both modes play with the same people).
async fn sign_in(options: &ServicesOptions) -> anyhow::Result<Vec<Person>> {
    let mut people = Vec::with_capacity(options.players);
    for index in 0..options.players {
        let request = GuestLoginRequest {
            device_id: format!("simulate-{:x}-{index}", options.seed),
            display_name: format!("Sim {}", index + 1),
        };
        let session = loop {
            let request = request.clone();
            let result = Session::sign_in(&options.endpoints, |mut accounts| async move {
                Ok(accounts.guest_login(request).await?.into_inner().tokens)
            })
            .await;
            match result {
                Ok(session) => break session,
                Err(error) => match error.downcast_ref::<tonic::Status>() {
                    Some(status) if status.code() == tonic::Code::ResourceExhausted => {
                        let wait = retry_after(status).unwrap_or(Duration::from_secs(1));
                        eprintln!(
                            "sign-ups are rate limited; waiting {:.1}s (player {index} of {})",
                            wait.as_secs_f64(),
                            options.players
                        );
                        tokio::time::sleep(wait).await;
                    }
                    _ => return Err(error.context(format!("signing in simulated player {index}"))),
                },
            }
        };
        people.push(Person {
            session,
            policy: policy_of(index),
        });
    }
    Ok(people)
}

/// When to retry a refusal: its `google.rpc.RetryInfo`.
fn retry_after(status: &tonic::Status) -> Option<Duration> {
    basra_platform::error::retry_after_of(status)
}

/// `count` free people, picked at random and taken off the free list; `None` when fewer
/// are free.
fn take(free: &Mutex<Vec<usize>>, count: usize, rng: &mut ChaCha8Rng) -> Option<Vec<usize>> {
    let mut free = free.lock().expect("the free list is never poisoned");
    if free.len() < count {
        return None;
    }
    Some(
        (0..count)
            .map(|_| {
                let pick = (rng.next_u32() as usize) % free.len();
                free.swap_remove(pick)
            })
            .collect(),
    )
}

/// Seats `group` as `seating` says and plays every seat to the end; answers the matches
/// played with one person of each (to find the record in their history). A queued person
/// may be matched with a person of another match in flight: each person's match counts.
async fn play_match(
    seating: Seating,
    target: u32,
    queue_bots: bool,
    group: &[(usize, Arc<Person>)],
) -> anyhow::Result<Vec<(String, usize)>> {
    let settings = |seats: u32| RuleSettings {
        seats: Some(seats),
        target_score: Some(target),
        ..Default::default()
    };
    let mut seats: JoinSet<anyhow::Result<(String, usize)>> = JoinSet::new();
    let mut play = |seated: Seated, index: usize, person: Arc<Person>| {
        seats.spawn(async move {
            let driver = Driver::Bot {
                policy: person.policy,
                delay: Duration::ZERO,
            };
            let table = play_room(&person.session, &seated.room_id, driver).await?;
            let ended = table.ended.context("the stream stopped before the end")?;
            Ok((ended.match_id, index))
        });
    };
    match seating {
        Seating::RankedQueue => {
            // Queue everyone at once, so they can be matched with each other.
            let mut queued = JoinSet::new();
            for (index, person) in group {
                let (index, person) = (*index, Arc::clone(person));
                queued.spawn(async move {
                    let seated =
                        lobby::find_match(&person.session, true, queue_bots, 2, false).await;
                    (seated, index, person)
                });
            }
            while let Some(done) = queued.join_next().await {
                let (seated, index, person) = done.context("a queued player panicked")?;
                play(seated?, index, person);
            }
        }
        Seating::Computer => {
            let (index, person) = &group[0];
            let seated = lobby::create_room(
                &person.session,
                RoomVisibility::Private,
                vec![1],
                BotLevel::Hard,
                settings(2),
            )
            .await?;
            play(seated, *index, Arc::clone(person));
        }
        Seating::PrivateTwo | Seating::PrivateFour => {
            let (index, creator) = &group[0];
            let seated = lobby::create_room(
                &creator.session,
                RoomVisibility::Private,
                Vec::new(),
                BotLevel::Unspecified,
                settings(group.len() as u32),
            )
            .await?;
            let code = seated
                .join_code
                .clone()
                .context("a private room has a join code")?;
            play(seated, *index, Arc::clone(creator));
            for (index, person) in &group[1..] {
                let joined = lobby::join(&person.session, Target::JoinCode(code.clone())).await?;
                play(joined, *index, Arc::clone(person));
            }
        }
    }
    let mut matches = Vec::new();
    while let Some(done) = seats.join_next().await {
        let (match_id, index) = done.context("a player panicked")??;
        if !matches.iter().any(|(id, _)| *id == match_id) {
            matches.push((match_id, index));
        }
    }
    Ok(matches)
}

/// Waits until each played match is in the match history of its person, or `timeout`
/// passes; answers how many are. Each pass asks only the people with a match missing.
async fn wait_for_records(
    people: &[Arc<Person>],
    played: &[(String, usize)],
    timeout: Duration,
) -> anyhow::Result<u64> {
    let deadline = Instant::now() + timeout;
    let mut missing: HashMap<usize, HashSet<&str>> = HashMap::new();
    for (match_id, person) in played {
        missing
            .entry(*person)
            .or_default()
            .insert(match_id.as_str());
    }
    loop {
        for (&person, ids) in missing.iter_mut() {
            let mut accounts = people[person].session.accounts();
            let mut page_token = String::new();
            loop {
                let page = accounts
                    .match_history(MatchHistoryRequest {
                        page_size: 100,
                        page_token,
                    })
                    .await
                    .context("MatchHistory of a simulated player")?
                    .into_inner();
                for summary in &page.matches {
                    ids.remove(summary.match_id.as_str());
                }
                if ids.is_empty() || page.next_page_token.is_empty() {
                    break;
                }
                page_token = page.next_page_token;
            }
        }
        missing.retain(|_, ids| !ids.is_empty());
        if missing.is_empty() || Instant::now() >= deadline {
            let left: usize = missing.values().map(HashSet::len).sum();
            return Ok((played.len() - left) as u64);
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
