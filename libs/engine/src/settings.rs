//! The rule settings of RULES.md: a validated value that travels with a match.

use serde::{Deserialize, Serialize};

/// How many players sit at the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "u8", into = "u8")]
pub enum Seats {
    /// Two players, each for themselves (the default).
    Two,
    /// Four players in fixed partnerships: seats 0+2 against 1+3.
    Four,
}

impl Seats {
    /// The number of seats.
    pub fn count(self) -> u8 {
        match self {
            Seats::Two => 2,
            Seats::Four => 4,
        }
    }
}

impl TryFrom<u8> for Seats {
    type Error = String;

    fn try_from(n: u8) -> Result<Seats, String> {
        match n {
            2 => Ok(Seats::Two),
            4 => Ok(Seats::Four),
            other => Err(format!("seats must be 2 or 4, not {other}")),
        }
    }
}

impl From<Seats> for u8 {
    fn from(seats: Seats) -> u8 {
        seats.count()
    }
}

/// Which tables a Komi (7D) takes as a Komi Basra (RULES.md §14).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KomiBasra {
    /// One Q or K rank alone, or number cards that split into groups of one common sum.
    AnyValue,
    /// Number cards only, totalling at most 10.
    #[serde(rename = "sum_at_most_10")]
    SumAtMost10,
    /// Exactly one card (not a jack).
    SingleCard,
}

/// Who gets the majority points when the piles are equal (RULES.md §18).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MajorityTie {
    /// Nobody.
    Nobody,
    /// Both sides.
    Both,
    /// Nobody now; the points are added to the next round's majority award.
    CarryOver,
}

/// The rule settings of a match. Unset fields take the defaults of RULES.md.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Settings {
    /// 2 or 4 seats.
    pub seats: Seats,
    /// Jacks and the Komi in the starting table go back under the deck.
    pub clean_start_table: bool,
    /// A player may take any non-empty legal subset of the groups instead of the most cards.
    pub allow_partial_capture: bool,
    /// Which tables give a Komi Basra.
    pub komi_basra: KomiBasra,
    /// Points of an ordinary Basra.
    pub basra_points: u32,
    /// Points of a Jack Basra.
    pub jack_basra_points: u32,
    /// Points of a Komi Basra.
    pub komi_basra_points: u32,
    /// A Basra made with the last card of the round counts.
    pub last_card_basra: bool,
    /// Points for the side with the most cards.
    pub majority_points: u32,
    /// What a tie for the majority gives.
    pub majority_tie: MajorityTie,
    /// Count card points from the piles (each J 1, each A 1, 2C 2, 10D 3).
    pub card_points: bool,
    /// The match ends after a round in which a side reaches this total, alone in the lead.
    pub target_score: u32,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            seats: Seats::Two,
            clean_start_table: true,
            allow_partial_capture: false,
            komi_basra: KomiBasra::AnyValue,
            basra_points: 10,
            jack_basra_points: 30,
            komi_basra_points: 30,
            last_card_basra: true,
            majority_points: 30,
            majority_tie: MajorityTie::Nobody,
            card_points: false,
            target_score: 101,
        }
    }
}

/// The largest number of points any single setting may give; keeps totals far from overflow.
pub const MAX_POINTS: u32 = 1_000;
/// The largest target score.
pub const MAX_TARGET_SCORE: u32 = 10_000;

/// A setting outside what the rules allow.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SettingsError {
    /// A points setting is above [`MAX_POINTS`].
    #[error("{name} must be at most {MAX_POINTS}, not {value}")]
    TooManyPoints {
        /// The setting's name.
        name: &'static str,
        /// The value given.
        value: u32,
    },
    /// The target score is 0 or above [`MAX_TARGET_SCORE`].
    #[error("target_score must be between 1 and {MAX_TARGET_SCORE}, not {0}")]
    TargetScore(u32),
}

impl Settings {
    /// Checks every setting; a match may only start with settings that pass.
    pub fn validate(self) -> Result<Settings, SettingsError> {
        for (name, value) in [
            ("basra_points", self.basra_points),
            ("jack_basra_points", self.jack_basra_points),
            ("komi_basra_points", self.komi_basra_points),
            ("majority_points", self.majority_points),
        ] {
            if value > MAX_POINTS {
                return Err(SettingsError::TooManyPoints { name, value });
            }
        }
        if !(1..=MAX_TARGET_SCORE).contains(&self.target_score) {
            return Err(SettingsError::TargetScore(self.target_score));
        }
        Ok(self)
    }

    /// The number of seats as a number.
    pub fn seat_count(&self) -> u8 {
        self.seats.count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_the_rules_defaults() {
        let s: Settings = serde_json::from_str("{}").unwrap();
        assert_eq!(s, Settings::default());
        assert_eq!(s.seats, Seats::Two);
        assert!(s.clean_start_table && !s.allow_partial_capture && s.last_card_basra);
        assert!(!s.card_points);
        assert_eq!(s.komi_basra, KomiBasra::AnyValue);
        assert_eq!(s.majority_tie, MajorityTie::Nobody);
        assert_eq!(
            (s.basra_points, s.jack_basra_points, s.komi_basra_points),
            (10, 30, 30)
        );
        assert_eq!((s.majority_points, s.target_score), (30, 101));
    }

    #[test]
    fn settings_parse_by_their_rules_names() {
        let s: Settings = serde_json::from_str(
            r#"{"seats":4,"komi_basra":"sum_at_most_10","majority_tie":"carry_over",
                "card_points":true,"target_score":51}"#,
        )
        .unwrap();
        assert_eq!(s.seats, Seats::Four);
        assert_eq!(s.komi_basra, KomiBasra::SumAtMost10);
        assert_eq!(s.majority_tie, MajorityTie::CarryOver);
        assert!(s.card_points);
        assert_eq!(s.target_score, 51);
    }

    #[test]
    fn bad_settings_are_named() {
        let err = serde_json::from_str::<Settings>(r#"{"seats":3}"#).unwrap_err();
        assert!(err.to_string().contains("seats must be 2 or 4"), "{err}");
        let err = serde_json::from_str::<Settings>(r#"{"sets":2}"#).unwrap_err();
        assert!(err.to_string().contains("unknown field `sets`"), "{err}");
        let err = serde_json::from_str::<Settings>(r#"{"komi_basra":"all"}"#).unwrap_err();
        assert!(err.to_string().contains("unknown variant"), "{err}");
        let zero = Settings {
            target_score: 0,
            ..Settings::default()
        };
        assert_eq!(zero.validate(), Err(SettingsError::TargetScore(0)));
        let huge = Settings {
            basra_points: 5_000,
            ..Settings::default()
        };
        assert!(matches!(
            huge.validate(),
            Err(SettingsError::TooManyPoints {
                name: "basra_points",
                ..
            })
        ));
        assert!(Settings::default().validate().is_ok());
    }
}
