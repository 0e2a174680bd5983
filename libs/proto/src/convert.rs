//! Between the rules engine's types and the API's common messages, written once for every
//! service and client: cards, rule settings, Basra kinds.

use basra_engine::{BasraKind, Card, KomiBasra, MajorityTie, Rank, Seats, Settings, Suit};
use prost_types::Timestamp;

use crate::basra::common::v1 as pb;

/// A message that does not describe a valid card or valid settings; the text says which
/// field and why, for an `INVALID_ARGUMENT` answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ConvertError(pub String);

/// The engine's card as an API card.
pub fn card_to_pb(card: Card) -> pb::Card {
    pb::Card {
        rank: i32::from(card.rank().number()),
        // The API numbers suits from 1 (0 is UNSPECIFIED), in the same order.
        suit: card.suit() as i32 + 1,
    }
}

/// The cards, in the order given.
pub fn cards_to_pb(cards: impl IntoIterator<Item = Card>) -> Vec<pb::Card> {
    cards.into_iter().map(card_to_pb).collect()
}

/// An API card as the engine's card.
pub fn card_from_pb(card: &pb::Card) -> Result<Card, ConvertError> {
    let rank = u8::try_from(card.rank)
        .ok()
        .and_then(Rank::new)
        .ok_or_else(|| {
            ConvertError(format!(
                "card rank {} is not 1 (ace) to 13 (king)",
                card.rank
            ))
        })?;
    let suit = usize::try_from(card.suit)
        .ok()
        .and_then(|suit| suit.checked_sub(1))
        .and_then(|suit| Suit::ALL.get(suit).copied())
        .ok_or_else(|| {
            ConvertError(format!(
                "card suit {} is not 1 (clubs) to 4 (spades)",
                card.suit
            ))
        })?;
    Ok(Card::new(rank, suit))
}

/// API rule settings as validated engine settings: unset fields (and `UNSPECIFIED` enums)
/// take the defaults of docs/rules.md; `None` is all defaults.
pub fn settings_from_pb(settings: Option<&pb::RuleSettings>) -> Result<Settings, ConvertError> {
    let mut out = Settings::default();
    let Some(s) = settings else {
        return Ok(out);
    };
    if let Some(seats) = s.seats {
        out.seats = match seats {
            2 => Seats::Two,
            4 => Seats::Four,
            other => {
                return Err(ConvertError(format!(
                    "settings.seats must be 2 or 4, not {other}"
                )));
            }
        };
    }
    let set = |field: &mut bool, value: Option<bool>| {
        if let Some(value) = value {
            *field = value;
        }
    };
    set(&mut out.clean_start_table, s.clean_start_table);
    set(&mut out.allow_partial_capture, s.allow_partial_capture);
    set(&mut out.last_card_basra, s.last_card_basra);
    set(&mut out.card_points, s.card_points);
    for (field, value) in [
        (&mut out.basra_points, s.basra_points),
        (&mut out.jack_basra_points, s.jack_basra_points),
        (&mut out.komi_basra_points, s.komi_basra_points),
        (&mut out.majority_points, s.majority_points),
        (&mut out.target_score, s.target_score),
    ] {
        if let Some(value) = value {
            *field = value;
        }
    }
    match s.komi_basra.map(pb::KomiBasra::try_from) {
        None | Some(Ok(pb::KomiBasra::Unspecified)) => {}
        Some(Ok(pb::KomiBasra::AnyValue)) => out.komi_basra = KomiBasra::AnyValue,
        Some(Ok(pb::KomiBasra::SumAtMost10)) => out.komi_basra = KomiBasra::SumAtMost10,
        Some(Ok(pb::KomiBasra::SingleCard)) => out.komi_basra = KomiBasra::SingleCard,
        Some(Err(_)) => {
            return Err(ConvertError(
                "settings.komi_basra is not a known value".into(),
            ));
        }
    }
    match s.majority_tie.map(pb::MajorityTie::try_from) {
        None | Some(Ok(pb::MajorityTie::Unspecified)) => {}
        Some(Ok(pb::MajorityTie::Nobody)) => out.majority_tie = MajorityTie::Nobody,
        Some(Ok(pb::MajorityTie::Both)) => out.majority_tie = MajorityTie::Both,
        Some(Ok(pb::MajorityTie::CarryOver)) => out.majority_tie = MajorityTie::CarryOver,
        Some(Err(_)) => {
            return Err(ConvertError(
                "settings.majority_tie is not a known value".into(),
            ));
        }
    }
    out.validate()
        .map_err(|error| ConvertError(format!("settings.{error}")))
}

/// Engine settings as API settings, every field set.
pub fn settings_to_pb(s: &Settings) -> pb::RuleSettings {
    pb::RuleSettings {
        seats: Some(u32::from(s.seat_count())),
        clean_start_table: Some(s.clean_start_table),
        allow_partial_capture: Some(s.allow_partial_capture),
        komi_basra: Some(match s.komi_basra {
            KomiBasra::AnyValue => pb::KomiBasra::AnyValue,
            KomiBasra::SumAtMost10 => pb::KomiBasra::SumAtMost10,
            KomiBasra::SingleCard => pb::KomiBasra::SingleCard,
        } as i32),
        basra_points: Some(s.basra_points),
        jack_basra_points: Some(s.jack_basra_points),
        komi_basra_points: Some(s.komi_basra_points),
        last_card_basra: Some(s.last_card_basra),
        majority_points: Some(s.majority_points),
        majority_tie: Some(match s.majority_tie {
            MajorityTie::Nobody => pb::MajorityTie::Nobody,
            MajorityTie::Both => pb::MajorityTie::Both,
            MajorityTie::CarryOver => pb::MajorityTie::CarryOver,
        } as i32),
        card_points: Some(s.card_points),
        target_score: Some(s.target_score),
    }
}

/// How a player's seat is shown: their display name, or "Player N" (N from 1) while it is
/// not known (accounts could not be asked when they were seated).
pub fn player_display_name(name: &str, seat: usize) -> String {
    if name.is_empty() {
        format!("Player {}", seat + 1)
    } else {
        name.to_owned()
    }
}

/// The one name a bot goes by, everywhere a seat is shown (views, events, lobby listings,
/// match records): its level, as the server plays it (unspecified plays medium).
pub fn bot_display_name(level: i32) -> String {
    match pb::BotLevel::try_from(level) {
        Ok(pb::BotLevel::Easy) => "Bot (easy)".into(),
        Ok(pb::BotLevel::Hard) => "Bot (hard)".into(),
        _ => "Bot (medium)".into(),
    }
}

/// Whether a player's display name could pass for a name the server gives a seat: a bot
/// ([`bot_display_name`], "Bot (hard)") or an unnamed player ([`player_display_name`],
/// "Player 2"). accounts refuses such names, so a seat that reads "Bot" is always a bot.
///
/// The name is compared folded: case, full-width forms and the common look-alikes of the
/// letters of "bot" and "player" (`0`, `1`, Cyrillic and Greek letters) are folded to ASCII, and any run of
/// other characters separates words. It is reserved when any word is `bot` (`B0T`,
/// `bot_easy`, `Not a bot`), or when it is `player` followed by a number only. Words that
/// merely contain "bot" (`Robot`, `Abbott`) are fine.
pub fn is_reserved_name(name: &str) -> bool {
    let words = |digits_as_letters: bool| -> Vec<String> {
        let folded: String = name
            .chars()
            .map(|c| fold_lookalike(c, digits_as_letters))
            .collect();
        folded
            .split(|c: char| !c.is_ascii_alphanumeric())
            .filter(|w| !w.is_empty())
            .map(str::to_owned)
            .collect()
    };
    if words(true).iter().any(|w| w == "bot") {
        return true;
    }
    // "Player 2", "player2", "PLAYER #12", "P1ayer 1": the placeholder of an unnamed seat,
    // a (look-alike of) "player" then a number.
    let joined: String = words(false).concat();
    let number = joined.len() - joined.trim_end_matches(|c: char| c.is_ascii_digit()).len();
    let (word, digits) = joined.split_at(joined.len() - number);
    !digits.is_empty()
        && word
            .chars()
            .map(|c| fold_lookalike(c, true))
            .eq("player".chars())
}

/// One character of a name, folded for [`is_reserved_name`]: lower-case ASCII for the
/// letters a bot's name is made of and their look-alikes; anything else as it is.
fn fold_lookalike(c: char, digits_as_letters: bool) -> char {
    // Full-width ASCII (U+FF01..U+FF5E) is ASCII shifted by 0xFEE0.
    let c = match u32::from(c) {
        0xFF01..=0xFF5E => char::from_u32(u32::from(c) - 0xFEE0).unwrap_or(c),
        _ => c,
    };
    match c {
        '0' if digits_as_letters => 'o',
        '1' if digits_as_letters => 'l',
        'о' | 'О' | 'ο' | 'Ο' | 'օ' => 'o',
        'В' | 'в' | 'Β' | 'β' | 'Ь' | 'ь' => 'b',
        'т' | 'Т' | 'τ' | 'Τ' => 't',
        'р' | 'Р' | 'ρ' | 'Ρ' => 'p',
        'а' | 'А' | 'α' | 'Α' => 'a',
        'е' | 'Е' | 'ε' | 'Ε' => 'e',
        'у' | 'У' => 'y',
        'І' | 'і' | '|' | 'ӏ' => 'l',
        c => c.to_ascii_lowercase(),
    }
}

/// The API's Basra kind (`NONE` for a play that made none).
pub fn basra_to_pb(kind: Option<BasraKind>) -> pb::BasraKind {
    match kind {
        None => pb::BasraKind::None,
        Some(BasraKind::Basra) => pb::BasraKind::Basra,
        Some(BasraKind::Jack) => pb::BasraKind::Jack,
        Some(BasraKind::Komi) => pb::BasraKind::Komi,
    }
}

/// The engine's Basra kind of an API one (`None` for `NONE` and `UNSPECIFIED`).
pub fn basra_from_pb(kind: pb::BasraKind) -> Option<BasraKind> {
    match kind {
        pb::BasraKind::Unspecified | pb::BasraKind::None => None,
        pb::BasraKind::Basra => Some(BasraKind::Basra),
        pb::BasraKind::Jack => Some(BasraKind::Jack),
        pb::BasraKind::Komi => Some(BasraKind::Komi),
    }
}

/// A Unix-milliseconds instant as a protobuf timestamp.
pub fn timestamp(ms: i64) -> Timestamp {
    Timestamp {
        seconds: ms.div_euclid(1000),
        nanos: (ms.rem_euclid(1000) * 1_000_000) as i32,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_pass_for_a_bot_or_a_placeholder_are_reserved() {
        for level in [pb::BotLevel::Easy, pb::BotLevel::Medium, pb::BotLevel::Hard] {
            assert!(is_reserved_name(&bot_display_name(level as i32)));
        }
        assert!(is_reserved_name(&player_display_name("", 1)));
        for reserved in [
            "Bot",
            "bot",
            "B0T (hard)",
            "bot_easy",
            "Not a bot",
            "\u{0412}\u{043e}\u{0442}", // Cyrillic "Вот"
            "\u{ff22}\u{ff4f}\u{ff54}", // full-width "Ｂｏｔ"
            "Player 3",
            "player12",
            "PLAYER #4",
            "P1ayer 2",
        ] {
            assert!(is_reserved_name(reserved), "{reserved:?}");
        }
        for free in [
            "Robot",
            "Abbott",
            "Botany fan",
            "Player One",
            "Playful 2",
            "Layla",
        ] {
            assert!(!is_reserved_name(free), "{free:?}");
        }
    }

    #[test]
    fn every_card_round_trips() {
        for card in Card::all() {
            assert_eq!(card_from_pb(&card_to_pb(card)), Ok(card));
        }
        let komi = card_to_pb(Card::KOMI);
        assert_eq!(
            (komi.rank, komi.suit),
            (pb::Rank::Seven as i32, pb::Suit::Diamonds as i32)
        );
    }

    #[test]
    fn malformed_cards_name_the_field() {
        let unspecified = pb::Card { rank: 0, suit: 1 };
        assert!(card_from_pb(&unspecified).unwrap_err().0.contains("rank 0"));
        let bad_suit = pb::Card { rank: 5, suit: 9 };
        assert!(card_from_pb(&bad_suit).unwrap_err().0.contains("suit 9"));
    }

    #[test]
    fn unset_settings_are_the_defaults_and_set_ones_round_trip() {
        assert_eq!(settings_from_pb(None), Ok(Settings::default()));
        assert_eq!(
            settings_from_pb(Some(&pb::RuleSettings::default())),
            Ok(Settings::default())
        );
        let custom = Settings {
            seats: Seats::Four,
            komi_basra: KomiBasra::SingleCard,
            majority_tie: MajorityTie::CarryOver,
            card_points: true,
            target_score: 51,
            ..Settings::default()
        };
        assert_eq!(settings_from_pb(Some(&settings_to_pb(&custom))), Ok(custom));
    }

    #[test]
    fn bad_settings_are_refused_with_their_name() {
        let three = pb::RuleSettings {
            seats: Some(3),
            ..Default::default()
        };
        assert!(
            settings_from_pb(Some(&three))
                .unwrap_err()
                .0
                .contains("seats must be 2 or 4")
        );
        let zero = pb::RuleSettings {
            target_score: Some(0),
            ..Default::default()
        };
        assert!(
            settings_from_pb(Some(&zero))
                .unwrap_err()
                .0
                .contains("target_score")
        );
        let komi = pb::RuleSettings {
            komi_basra: Some(42),
            ..Default::default()
        };
        assert!(
            settings_from_pb(Some(&komi))
                .unwrap_err()
                .0
                .contains("komi_basra")
        );
    }

    #[test]
    fn basra_kinds_round_trip() {
        for kind in [
            None,
            Some(BasraKind::Basra),
            Some(BasraKind::Jack),
            Some(BasraKind::Komi),
        ] {
            assert_eq!(basra_from_pb(basra_to_pb(kind)), kind);
        }
    }
}
