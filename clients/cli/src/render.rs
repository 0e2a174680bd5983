//! The terminal picture of a game: the table, your hand with what each card would take,
//! piles, scores and whose turn it is; and one line per event worth telling.

use std::fmt::Write as _;

use basra_engine::{BasraKind, Card};
use basra_proto::basra::common::v1 as common;
use basra_proto::basra::game::v1::PlayResponse;
use basra_proto::basra::game::v1::play_response::Event;
use basra_proto::convert::{basra_from_pb, card_from_pb};

use crate::table::Table;

/// The quick-chat phrases, in the API's order.
pub const PHRASES: [&str; 9] = [
    "hello",
    "good luck",
    "nice play",
    "nice basra",
    "oops",
    "thanks",
    "hurry up",
    "well played",
    "good game",
];

/// What a player can type.
pub const HELP: &str = "\
play a card:      7D   (or its number in your hand: 2)
name a capture:   8S take AS 7H
resign:           resign
quick chat:       chat nice basra   (hello, good luck, nice play, nice basra, oops,
                                     thanks, hurry up, well played, good game)
show the table:   (an empty line)
play again:       rematch   (after the match)
leave:            quit";

/// What a person can do once the match is over.
pub const AFTER_MATCH: &str =
    "type `rematch` to play again in this room, or `quit` (or an empty line) to leave";

/// Said on the first `quit` during a match.
pub const QUIT_WARNING: &str = "the match is not over: if you leave, your seat stays yours \
and your turns are played for you until you lose by absence (to come back: basra play, \
then go back to your room). Type `resign` to end the match, or `quit` again to leave.";

fn cards(cards: impl IntoIterator<Item = Card>) -> String {
    let text: Vec<String> = cards.into_iter().map(|c| c.to_string()).collect();
    if text.is_empty() {
        "(empty)".to_owned()
    } else {
        text.join(" ")
    }
}

fn name(table: &Table, seat: u32) -> String {
    match table.names.get(seat as usize) {
        Some(name) if !name.is_empty() => isolate(name),
        _ => format!("seat {seat}"),
    }
}

/// `text` between FIRST STRONG ISOLATE and POP DIRECTIONAL ISOLATE, so that a name in a
/// right-to-left script does not reorder the words around it on a bidi terminal.
pub fn isolate(text: &str) -> String {
    format!("\u{2068}{text}\u{2069}")
}

/// "you" for this client's side, "them" for the other.
fn side_name(table: &Table, side: u32) -> &'static str {
    match table.seat {
        Some(seat) if seat % 2 == side => "you",
        Some(_) => "them",
        None if side == 0 => "seats 0 and 2",
        None => "seats 1 and 3",
    }
}

fn who(table: &Table, seat: u32) -> String {
    if Some(seat) == table.seat {
        "you".to_owned()
    } else {
        name(table, seat)
    }
}

/// The whole board as the player sees it.
pub fn board(table: &Table) -> String {
    let mut out = String::new();
    let my_side = table.seat.map_or(0, |s| (s % 2) as usize);
    let _ = writeln!(
        out,
        "round {} · score you {} – {} them · piles you {} – {} them · deck {}",
        table.round,
        table.totals[my_side],
        table.totals[1 - my_side],
        table.piles[my_side],
        table.piles[1 - my_side],
        table.deck_remaining
    );
    let _ = writeln!(out, "table: {}", cards(table.table.iter().copied()));
    if table.seat.is_some() {
        let plays = table.plays();
        let mut hand = Vec::new();
        for (i, play) in plays.iter().enumerate() {
            let taken: Vec<Card> = table
                .table
                .iter()
                .copied()
                .filter(|c| play.capture.taken.contains(*c))
                .collect();
            let mut line = format!("{}. {}", i + 1, play.card);
            if !taken.is_empty() {
                let _ = write!(line, " takes {}", cards(taken));
            }
            if let Some(kind) = play.capture.basra {
                let _ = write!(line, " — {}!", basra_name(kind));
            }
            if play.capture.alternatives {
                line.push_str(" (or name another set)");
            }
            hand.push(line);
        }
        let _ = writeln!(out, "your hand: {}", hand.join(" · "));
    }
    match table.turn {
        Some(_) if table.my_turn() => {
            let _ = write!(out, "your turn{}", time_left(table));
        }
        Some(turn) => {
            let _ = write!(out, "{} to play{}", name(table, turn), time_left(table));
        }
        None => {}
    }
    out
}

fn time_left(table: &Table) -> String {
    let Some(deadline) = table.turn_deadline else {
        return String::new();
    };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    format!(" ({} s left)", (deadline - now).max(0))
}

fn basra_name(kind: BasraKind) -> &'static str {
    match kind {
        BasraKind::Basra => "Basra",
        BasraKind::Jack => "Jack Basra",
        BasraKind::Komi => "Komi Basra",
    }
}

/// Prints what `event` means to the player (after it was applied to `table`).
pub fn announce(table: &Table, event: &PlayResponse) {
    if let Some(line) = describe(table, event) {
        println!("{line}");
    }
}

fn describe(table: &Table, event: &PlayResponse) -> Option<String> {
    Some(match event.event.as_ref()? {
        Event::Snapshot(_) if table.round == 0 && table.turn.is_none() && table.ended.is_none() => {
            "joined; waiting for an opponent (the match starts when every seat is taken)".into()
        }
        Event::Snapshot(_) => format!("joined.\n{}", board(table)),
        Event::MatchStarted(started) => format!(
            "match started ({} seats, to {}); seed commitment {}",
            started.seats.len(),
            table.settings.target_score,
            basra_engine::deck::hex(&started.seed_commitment)
        ),
        Event::RoundStarted(started) => format!("— round {} —", started.round),
        Event::CardPlayed(played) => {
            let card = played.card.as_ref().and_then(|c| card_from_pb(c).ok())?;
            let taken: Vec<Card> = played
                .taken
                .iter()
                .filter_map(|c| card_from_pb(c).ok())
                .collect();
            let mut line = format!("{} played {card}", who(table, played.seat));
            if taken.is_empty() {
                line.push_str(" onto the table");
            } else {
                let _ = write!(line, " and took {}", cards(taken));
            }
            let kind = common::BasraKind::try_from(played.basra)
                .ok()
                .and_then(basra_from_pb);
            if let Some(kind) = kind {
                let _ = write!(line, " — {} (+{})!", basra_name(kind), played.basra_points);
            }
            if played.automatic {
                line.push_str(" (played automatically: time ran out)");
            }
            line
        }
        Event::TurnStarted(_) => board(table),
        Event::RoundEnded(ended) => {
            let mut sides: Vec<_> = ended.sides.iter().collect();
            // Your side first.
            sides.sort_by_key(|side| side_name(table, side.side) != "you");
            let sides: Vec<String> = sides
                .iter()
                .map(|side| {
                    format!(
                        "{} {} cards, {} points (total {})",
                        side_name(table, side.side),
                        side.pile_size,
                        side.round_points,
                        side.total
                    )
                })
                .collect();
            format!("round {} over: {}", ended.round, sides.join("; "))
        }
        Event::MatchEnded(ended) => {
            let my_side = table.seat.map(|s| s % 2);
            let verdict = match (ended.winner_side, my_side) {
                (Some(w), Some(m)) if w == m => "you won",
                (Some(_), Some(_)) => "you lost",
                (Some(_), None) => "the match is decided",
                (None, _) => "no winner",
            };
            let total = |side: u32| ended.totals.get(side as usize).copied().unwrap_or(0);
            let score = match my_side {
                Some(mine) => format!("you {} – {} them", total(mine), total(1 - mine)),
                None => format!("{} – {}", total(0), total(1)),
            };
            format!(
                "match over: {verdict}, {score}{}. Seed {} (replay it to check every deal).{}",
                end_reason(table, ended),
                basra_engine::deck::hex(&ended.seed),
                report_hints(table, &ended.match_id)
            )
        }
        Event::ConnectionChanged(changed) => {
            let state = if changed.state == 2 {
                "left (their turns are played for them until they are back)"
            } else if table.left_seats.contains(&changed.seat) {
                "is back"
            } else {
                "joined"
            };
            format!("{} {state}", who(table, changed.seat))
        }
        Event::Chat(chat) => {
            let phrase = PHRASES
                .get((chat.phrase - 1).max(0) as usize)
                .unwrap_or(&"…");
            format!("{}: {phrase}", who(table, chat.seat))
        }
        Event::Rejected(rejected) => format!("not played: {}", rejected.message),
        _ => return None,
    })
}

/// How to report each other player of the match (`basra report`), a line each.
fn report_hints(table: &Table, match_id: &str) -> String {
    let mut hints = String::new();
    for (seat, user_id) in table.players.iter().enumerate() {
        if user_id.is_empty() || Some(seat as u32) == table.seat {
            continue;
        }
        hints.push_str(&format!(
            "\nreport {}: basra report {user_id} --match {match_id} --reason \
             offensive-name|cheating|chat-abuse|other [--comment TEXT]",
            who(table, seat as u32)
        ));
    }
    hints
}

/// Why the match ended, as a clause after the score ("" when it was played out).
fn end_reason(table: &Table, ended: &basra_proto::basra::game::v1::MatchEnded) -> String {
    let by = ended.forfeit_seat.map(|seat| who(table, seat));
    match common::MatchEndReason::try_from(ended.reason) {
        Ok(common::MatchEndReason::Resigned) => match by {
            Some(who) if who == "you" => " (you resigned)".into(),
            Some(who) => format!(" ({who} resigned)"),
            None => " (a resignation)".into(),
        },
        Ok(common::MatchEndReason::Abandoned) => match by {
            Some(who) if who == "you" => " (you left and did not come back in time)".into(),
            Some(who) => format!(" ({who} left and did not come back in time)"),
            None => " (a player left)".into(),
        },
        Ok(common::MatchEndReason::Closed) if !ended.close_reason.trim().is_empty() => format!(
            " (the room was closed by an operator: {})",
            ended.close_reason.trim()
        ),
        Ok(common::MatchEndReason::Closed) => " (the room was closed by an operator)".into(),
        _ => String::new(),
    }
}

/// The answer to `basra name`, in one line: the name now, and how many changes are left.
pub fn name_change(answer: &basra_proto::basra::accounts::v1::SetDisplayNameResponse) -> String {
    let mut line = if answer.changed {
        format!("you are now {:?}", answer.display_name)
    } else {
        format!("you already are {:?}", answer.display_name)
    };
    match answer
        .next_change_at
        .as_ref()
        .and_then(|t| chrono::DateTime::from_timestamp(t.seconds, 0))
    {
        Some(next) => {
            let _ = write!(
                line,
                "; your next change is allowed from {}",
                next.format("%Y-%m-%d %H:%M UTC")
            );
        }
        None => {
            let _ = write!(line, "; {} more change(s) allowed", answer.changes_left);
        }
    }
    line
}

#[cfg(test)]
mod name_tests {
    use basra_proto::basra::accounts::v1::SetDisplayNameResponse;

    #[test]
    fn a_name_change_says_what_is_left() {
        let answer = SetDisplayNameResponse {
            display_name: "Rita".into(),
            changed: true,
            changes_left: 2,
            next_change_at: None,
        };
        assert_eq!(
            super::name_change(&answer),
            "you are now \"Rita\"; 2 more change(s) allowed"
        );
        let limited = SetDisplayNameResponse {
            changes_left: 0,
            next_change_at: Some(prost_types::Timestamp {
                seconds: 1_800_000_000,
                nanos: 0,
            }),
            ..answer
        };
        assert_eq!(
            super::name_change(&limited),
            "you are now \"Rita\"; your next change is allowed from 2027-01-15 08:00 UTC"
        );
    }
}
