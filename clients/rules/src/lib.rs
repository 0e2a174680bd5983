//! The rules tool's protocol (docs/rules.md, "The rules tool"): one JSON request per line, one
//! JSON answer per line, so that other implementations of Basra can be checked against ours.
//!
//! - `{"op":"capture","table":[..],"card":"8S"}` → `{"taken":[..],"basra":"none"}`
//! - `{"op":"round","deck":[52 cards],"dealer":0,"plays":[..]}` →
//!   `{"piles":[n0,n1],"basras":[[..],[..]],"score":[s0,s1],"last_capturer":seat}`
//! - `{"op":"bot","policy":"hard","deck":[52 cards],"dealer":0,"plays":[..],"seed":7}` →
//!   `{"seat":1,"card":"8S"}`: the card the bot plays next, seeing only its seat.
//! - any may carry `"rules":{..}`; a bad line answers `{"error":".."}`.

use basra_engine::bot::{Policy, decide};
use basra_engine::capture::capture;
use basra_engine::round::Round;
use basra_engine::search::{Budget, Memory};
use basra_engine::{Action, BasraKind, Card, CardSet, Deck, Event, Seat, Settings, View};
use rand_chacha::ChaCha8Rng;
use rand_core::SeedableRng;
use serde::{Deserialize, Serialize};

/// One request line.
#[derive(Debug, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case", deny_unknown_fields)]
enum Request {
    Capture {
        table: Vec<Card>,
        card: Card,
        #[serde(default)]
        rules: Settings,
    },
    Round {
        deck: Vec<Card>,
        dealer: u8,
        plays: Vec<Card>,
        #[serde(default)]
        rules: Settings,
    },
    Bot {
        policy: Policy,
        deck: Vec<Card>,
        dealer: u8,
        plays: Vec<Card>,
        /// Seeds the bot's random choices (the same seed, the same answer).
        #[serde(default)]
        seed: u64,
        /// The search bot's worlds per decision (default: the hard level's).
        #[serde(default)]
        worlds: Option<u32>,
        #[serde(default)]
        rules: Settings,
    },
}

/// The answer to a `bot` request.
#[derive(Debug, Serialize)]
struct BotAnswer {
    seat: u8,
    card: Card,
}

/// The answer to a `capture` request.
#[derive(Debug, Serialize)]
struct CaptureAnswer {
    /// The table cards taken, in the order the request gave them.
    taken: Vec<Card>,
    basra: &'static str,
}

/// The answer to a `round` request.
#[derive(Debug, Serialize)]
struct RoundAnswer {
    piles: [u8; 2],
    basras: [Vec<&'static str>; 2],
    score: [u32; 2],
    last_capturer: Option<u8>,
}

#[derive(Debug, Serialize)]
struct ErrorAnswer {
    error: String,
}

/// Answers one request line with one JSON line (without the newline).
pub fn answer(line: &str) -> String {
    let request = serde_json::from_str::<Request>(line).map_err(|error| {
        if error.is_syntax() || error.is_eof() {
            format!("the line is not valid JSON: {error}")
        } else {
            format!("bad request: {error}")
        }
    });
    let answer = request.and_then(|request| match request {
        Request::Capture { table, card, rules } => {
            answer_capture(&table, card, rules).map(|a| serde_json::to_string(&a))
        }
        Request::Round {
            deck,
            dealer,
            plays,
            rules,
        } => answer_round(&deck, dealer, &plays, rules).map(|a| serde_json::to_string(&a)),
        Request::Bot {
            policy,
            deck,
            dealer,
            plays,
            seed,
            worlds,
            rules,
        } => answer_bot(policy, &deck, dealer, &plays, seed, worlds, rules)
            .map(|a| serde_json::to_string(&a)),
    });
    match answer {
        Ok(json) => json.expect("answers always serialize"),
        Err(error) => serde_json::to_string(&ErrorAnswer { error }).expect("errors serialize"),
    }
}

fn distinct(cards: impl IntoIterator<Item = Card>, what: &str) -> Result<CardSet, String> {
    let mut seen = CardSet::EMPTY;
    for card in cards {
        if seen.contains(card) {
            return Err(format!("{card} appears twice in {what}"));
        }
        seen.insert(card);
    }
    Ok(seen)
}

fn basra_name(kind: Option<BasraKind>) -> &'static str {
    match kind {
        None => "none",
        Some(BasraKind::Basra) => "basra",
        Some(BasraKind::Jack) => "jack",
        Some(BasraKind::Komi) => "komi",
    }
}

fn answer_capture(table: &[Card], card: Card, rules: Settings) -> Result<CaptureAnswer, String> {
    let rules = rules.validate().map_err(|e| e.to_string())?;
    let on_table = distinct(table.iter().copied(), "the table")?;
    if on_table.contains(card) {
        return Err(format!("{card} is both played and on the table"));
    }
    let got = capture(table, card, &rules);
    Ok(CaptureAnswer {
        taken: table
            .iter()
            .copied()
            .filter(|c| got.taken.contains(*c))
            .collect(),
        basra: basra_name(got.basra),
    })
}

/// Deals a round from `deck` and makes `plays` in turn order.
fn play_round(
    deck: &[Card],
    dealer: u8,
    plays: &[Card],
    rules: Settings,
) -> Result<(Settings, Round, Vec<Event>), String> {
    let rules = rules.validate().map_err(|e| e.to_string())?;
    let cards: [Card; 52] = deck
        .try_into()
        .map_err(|_| format!("the deck must hold 52 cards, not {}", deck.len()))?;
    distinct(cards, "the deck")?;
    let seats = rules.seat_count();
    if dealer >= seats {
        return Err(format!(
            "dealer must be a seat from 0 to {}, not {dealer}",
            seats - 1
        ));
    }
    let mut events = Vec::new();
    let mut round = Round::start(
        &rules,
        0,
        Deck::from_cards(cards),
        Seat(dealer),
        &mut events,
    );
    for (index, &card) in plays.iter().enumerate() {
        if round.is_over() {
            return Err(format!(
                "play {index} ({card}): the round is over after {index} plays"
            ));
        }
        let seat = round.turn();
        round
            .play(&rules, seat, card, None, &mut events)
            .map_err(|error| format!("play {index} ({card}): {error}"))?;
    }
    Ok((rules, round, events))
}

fn answer_round(
    deck: &[Card],
    dealer: u8,
    plays: &[Card],
    rules: Settings,
) -> Result<RoundAnswer, String> {
    let (rules, mut round, events) = play_round(deck, dealer, plays, rules)?;
    if !round.is_over() {
        return Err(format!(
            "the plays end before the round does: {} given, {} cards still to play",
            plays.len(),
            usize::from(round.deck().len())
                + (0..rules.seat_count())
                    .map(|s| round.hand(Seat(s)).len())
                    .sum::<usize>()
        ));
    }
    let mut basras: [Vec<&'static str>; 2] = [Vec::new(), Vec::new()];
    for event in &events {
        if let Event::CardPlayed {
            seat,
            basra: Some(kind),
            ..
        } = event
        {
            basras[seat.side().index()].push(basra_name(Some(*kind)));
        }
    }
    // A single round has no next round: a carried-over tie awards nobody.
    let score = round.finish(&rules, &mut 0, [0, 0]);
    Ok(RoundAnswer {
        piles: score.piles,
        basras,
        score: score.points,
        last_capturer: score.last_capturer.map(|seat| seat.0),
    })
}

/// The bot's next card after `plays`: it sees the view of the seat to move and what the
/// round showed everyone (a round outside a match: totals 0 to 0).
fn answer_bot(
    policy: Policy,
    deck: &[Card],
    dealer: u8,
    plays: &[Card],
    seed: u64,
    worlds: Option<u32>,
    rules: Settings,
) -> Result<BotAnswer, String> {
    let (rules, round, _) = play_round(deck, dealer, plays, rules)?;
    if round.is_over() {
        return Err(format!(
            "the round is over after {} plays: nobody is to play",
            plays.len()
        ));
    }
    let seat = round.turn();
    let view = View::of_round(&rules, &round, Some(seat), [0, 0]);
    let budget = worlds.map_or(Budget::HARD, |worlds| Budget { worlds });
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    match decide(policy, &view, &Memory::of(&round), &budget, &mut rng) {
        Some(Action::Play { card, .. }) => Ok(BotAnswer { seat: seat.0, card }),
        other => unreachable!("the seat to move plays a card, not {other:?}"),
    }
}
