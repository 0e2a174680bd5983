//! Plays one room to its end over the `Play` stream, for a person at the terminal or for a
//! bot policy. A dropped stream is resumed from the last sequence seen.

use std::time::Duration;

use basra_engine::bot::{self, Policy};
use basra_engine::search::Budget;
use basra_engine::{Action, Card, CardSet};
use basra_proto::basra::common::v1::MatchEndReason;
use basra_proto::basra::game::v1::play_request::Kind;
use basra_proto::basra::game::v1::play_response::Event;
use basra_proto::basra::game::v1::{
    CaptureChoice, Join, Leave, PlayCard, PlayRequest, PlayResponse, QuickChat, QuickChatPhrase,
    RematchRequest, Resign,
};
use basra_proto::convert::{card_to_pb, cards_to_pb};
use rand_chacha::ChaCha8Rng;
use rand_core::SeedableRng;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;

use crate::input;
use crate::render;
use crate::session::Session;
use crate::table::Table;

/// Who decides the plays.
#[derive(Debug, Clone, Copy)]
pub enum Driver {
    /// A person typing commands.
    Human,
    /// A bot policy, after `delay`.
    Bot {
        /// How it chooses its card.
        policy: Policy,
        /// The pause before each play.
        delay: Duration,
    },
}

/// How often a dropped stream is retried before giving up.
const RESUME_ATTEMPTS: u32 = 8;

/// How long before the turn's deadline a person is warned that a card will be played
/// for them.
pub const TURN_WARNING_SECONDS: i64 = 10;

/// Plays `room_id` until the match ends; returns the final model of the table.
pub async fn play_room(session: &Session, room_id: &str, driver: Driver) -> anyhow::Result<Table> {
    resume_room(session, room_id, driver, Table::default()).await
}

/// Like [`play_room`], from what the client already knows: it rejoins with the last
/// sequence `table` saw and receives only the events it missed.
pub async fn resume_room(
    session: &Session,
    room_id: &str,
    driver: Driver,
    mut table: Table,
) -> anyhow::Result<Table> {
    let mut rng = ChaCha8Rng::seed_from_u64(uuid::Uuid::now_v7().as_u128() as u64);
    let mut failures = 0;
    // Whether the token was refreshed for an UNAUTHENTICATED since the last event.
    let mut refreshed = false;
    loop {
        let (tx, rx) = mpsc::channel(16);
        tx.send(message(Kind::Join(Join {
            room_id: room_id.to_owned(),
            last_seen_seq: table.last_seq,
            spectate: false,
        })))
        .await?;
        let mut stream = match session.game().play(ReceiverStream::new(rx)).await {
            Ok(response) => response.into_inner(),
            Err(status) if retryable(&status) && failures < RESUME_ATTEMPTS => {
                failures += 1;
                backoff(failures).await;
                continue;
            }
            Err(status) if status.code() == tonic::Code::Unauthenticated && !refreshed => {
                // The token is no longer taken: refresh once, then resume.
                refreshed = true;
                session.refresh().await?;
                continue;
            }
            Err(status) => return Err(status.into()),
        };
        // The turn (by its event sequence) a bot has already answered.
        let mut answered: Option<u64> = None;
        // Whether a person typed `quit` once during the match (the second one leaves).
        let mut quit_asked = false;
        loop {
            let warning = turn_warning(&table, driver);
            tokio::select! {
                next = stream.message() => match next {
                    Ok(Some(event)) => {
                        failures = 0;
                        refreshed = false;
                        table.apply(&event)?;
                        if let Driver::Human = driver {
                            render::announce(&table, &event);
                        }
                        if table.ended.is_some() {
                            match driver {
                                Driver::Bot { .. } => return Ok(table),
                                Driver::Human => {
                                    if let Some(Event::MatchEnded(ended)) = &event.event
                                        && ended.reason() != MatchEndReason::Closed
                                    {
                                        println!("{}", render::AFTER_MATCH);
                                    }
                                    continue;
                                }
                            }
                        }
                        if matches!(event.event, Some(Event::Rejected(_))) {
                            // Think again: the state moved on under the play.
                            answered = None;
                        }
                        if let Driver::Bot { policy, delay } = driver
                            && table.my_turn()
                            && answered != table.last_seq
                        {
                            answered = table.last_seq;
                            tokio::time::sleep(delay).await;
                            if let Some(play) = bot_play(&table, policy, &mut rng) {
                                tx.send(play).await?;
                            }
                        }
                    }
                    // The room closed after the match (or the rematch was declined).
                    Ok(None) if table.ended.is_some() => return Ok(table),
                    Ok(None) => break,
                    Err(status) if retryable(&status) => break,
                    Err(status) if status.code() == tonic::Code::Unauthenticated && !refreshed => {
                        refreshed = true;
                        session.refresh().await?;
                        break;
                    }
                    Err(status) => return Err(status.into()),
                },
                () = sleep_until(warning), if warning.is_some() => {
                    println!(
                        "{TURN_WARNING_SECONDS} s left: then a card is played for you"
                    );
                    // Once per turn: the deadline is now past the warning time.
                    table.turn_deadline = None;
                }
                line = input::next_line(), if matches!(driver, Driver::Human) => {
                    let Some(line) = line else { return Ok(table) };
                    match command(&table, &line) {
                        Command::Send(msg) => tx.send(msg).await?,
                        Command::Show(text) => println!("{text}"),
                        Command::Quit if in_match(&table) && !quit_asked => {
                            quit_asked = true;
                            println!("{}", render::QUIT_WARNING);
                        }
                        Command::Quit => {
                            // Before the match it frees the seat, after it declines the
                            // rematch; during it the server refuses it (the seat stays).
                            let _ = tx.send(message(Kind::Leave(Leave {}))).await;
                            return Ok(table);
                        }
                    }
                }
            }
        }
        failures += 1;
        if failures > RESUME_ATTEMPTS {
            anyhow::bail!("the game stream keeps dropping; giving up");
        }
        if let Driver::Human = driver {
            println!("connection lost; reconnecting…");
        }
        backoff(failures).await;
    }
}

/// When to warn a person that their turn will be played for them: [`TURN_WARNING_SECONDS`]
/// before the deadline of their own turn (at once if that is already past).
/// Whether a match is being played (dealt, not yet over).
fn in_match(table: &Table) -> bool {
    table.ended.is_none() && table.turn.is_some()
}

fn turn_warning(table: &Table, driver: Driver) -> Option<std::time::SystemTime> {
    if !matches!(driver, Driver::Human) || !table.my_turn() {
        return None;
    }
    let deadline = table.turn_deadline?;
    let at = (deadline - TURN_WARNING_SECONDS).max(0) as u64;
    Some(std::time::UNIX_EPOCH + Duration::from_secs(at))
}

async fn sleep_until(at: Option<std::time::SystemTime>) {
    let wait = at
        .and_then(|at| at.duration_since(std::time::SystemTime::now()).ok())
        .unwrap_or_default();
    tokio::time::sleep(wait).await;
}

fn retryable(status: &tonic::Status) -> bool {
    matches!(
        status.code(),
        tonic::Code::Unavailable
            | tonic::Code::Cancelled
            | tonic::Code::Unknown
            | tonic::Code::Internal
    )
}

async fn backoff(attempt: u32) {
    tokio::time::sleep(Duration::from_millis(100 * 2u64.pow(attempt.min(5)))).await;
}

fn message(kind: Kind) -> PlayRequest {
    PlayRequest { kind: Some(kind) }
}

fn play_message(table: &Table, card: Card, take: Option<CardSet>) -> PlayRequest {
    message(Kind::PlayCard(PlayCard {
        card: Some(card_to_pb(card)),
        capture_choice: take.map(|cards| CaptureChoice {
            cards: cards_to_pb(table.table.iter().copied().filter(|c| cards.contains(*c))),
        }),
        based_on_seq: table.last_seq,
        client_move_id: uuid::Uuid::now_v7().to_string(),
    }))
}

fn bot_play(table: &Table, policy: Policy, rng: &mut ChaCha8Rng) -> Option<PlayRequest> {
    let budget = Budget::HARD;
    match bot::decide(policy, &table.view(), &table.memory, &budget, rng)? {
        Action::Play { card, take, .. } => Some(play_message(table, card, take)),
        Action::Resign { .. } => Some(message(Kind::Resign(Resign {}))),
    }
}

/// What a line typed by the player asks for.
#[derive(Debug)]
pub enum Command {
    /// A message to send.
    Send(PlayRequest),
    /// Text to show (help, or why the line was not understood).
    Show(String),
    /// Leave the game.
    Quit,
}

/// Parses a line: a card (`7D`) or its number in the hand (`2`), optionally followed by
/// `take` and the table cards to capture; `resign`; `chat <phrase>`; `rematch` (after the
/// match); `help`; `quit`.
pub fn command(table: &Table, line: &str) -> Command {
    let words: Vec<&str> = line.split_whitespace().collect();
    match words.as_slice() {
        [] => Command::Show(render::board(table)),
        ["help" | "?"] => Command::Show(render::HELP.to_owned()),
        ["quit" | "exit"] => Command::Quit,
        ["resign"] => Command::Send(message(Kind::Resign(Resign {}))),
        ["rematch"] if table.ended.is_some() => {
            Command::Send(message(Kind::Rematch(RematchRequest {})))
        }
        ["rematch"] => Command::Show("rematch is for after the match".into()),
        ["chat", phrase @ ..] => match chat_phrase(&phrase.join(" ")) {
            Some(phrase) => Command::Send(message(Kind::QuickChat(QuickChat {
                phrase: phrase as i32,
            }))),
            None => Command::Show(format!("phrases: {}", render::PHRASES.join(", "))),
        },
        [card, rest @ ..] => {
            let Some(card) = hand_card(table, card) else {
                return Command::Show(format!("{card:?} is not a card in your hand (type help)"));
            };
            let take = match rest {
                [] => None,
                ["take", cards @ ..] => match cards.iter().map(|c| c.parse::<Card>()).collect() {
                    Ok(cards) => Some(cards),
                    Err(error) => return Command::Show(error.to_string()),
                },
                _ => return Command::Show("after the card, write: take <table cards>".into()),
            };
            if !table.my_turn() {
                return Command::Show("it is not your turn".into());
            }
            Command::Send(play_message(table, card, take))
        }
    }
}

fn hand_card(table: &Table, word: &str) -> Option<Card> {
    if let Ok(n) = word.parse::<usize>() {
        return n.checked_sub(1).and_then(|i| table.hand.nth(i));
    }
    word.to_uppercase()
        .parse::<Card>()
        .ok()
        .filter(|card| table.hand.contains(*card))
}

fn chat_phrase(text: &str) -> Option<QuickChatPhrase> {
    let index = render::PHRASES
        .iter()
        .position(|phrase| phrase.eq_ignore_ascii_case(text.trim()))?;
    QuickChatPhrase::try_from(index as i32 + 1).ok()
}

/// The same event stream a bot or a person receives, for tests: applies every event.
pub fn replay_events(events: &[PlayResponse]) -> anyhow::Result<Table> {
    let mut table = Table::default();
    for event in events {
        table.apply(event)?;
    }
    Ok(table)
}
