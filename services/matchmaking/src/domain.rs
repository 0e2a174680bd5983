//! Pure matchmaking rules: queue formats, the widening rating window, join
//! codes, and which rule settings a ranked room may set. (Rule settings
//! between the API and the engine: `basra_proto::convert`.)

use basra_engine::{Seats, Settings};
use basra_proto::basra::common::v1 as common;
use rand::Rng;

use crate::clock::Millis;

/// One queue: players are only matched with players of the same format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Format {
    /// A rated queue (pairs by rating window) or not (first come, first served).
    pub ranked: bool,
    /// 2 or 4.
    pub seats: u8,
    /// The target score of the matches.
    pub target_score: u32,
}

impl Format {
    /// The format's name in store keys: `r.2.101` (ranked) or `u.4.51`.
    pub fn key(&self) -> String {
        format!(
            "{}.{}.{}",
            if self.ranked { "r" } else { "u" },
            self.seats,
            self.target_score
        )
    }

    /// Every queue a search may enter: ranked or not, 2 or 4 seats, each offered
    /// target score (`queue.target_scores`).
    pub fn offered(target_scores: &[u32]) -> impl Iterator<Item = Format> + '_ {
        [false, true].into_iter().flat_map(move |ranked| {
            [2, 4].into_iter().flat_map(move |seats| {
                target_scores.iter().map(move |&target_score| Format {
                    ranked,
                    seats,
                    target_score,
                })
            })
        })
    }

    /// The inverse of [`key`](Self::key).
    pub fn parse(key: &str) -> Option<Format> {
        let mut parts = key.split('.');
        let ranked = match parts.next()? {
            "r" => true,
            "u" => false,
            _ => return None,
        };
        let seats = parts.next()?.parse().ok()?;
        let target_score = parts.next()?.parse().ok()?;
        parts.next().is_none().then_some(Format {
            ranked,
            seats,
            target_score,
        })
    }

    /// The rule settings of matches of this format: the defaults with these
    /// seats and target.
    pub fn settings(&self) -> Settings {
        Settings {
            seats: if self.seats == 4 {
                Seats::Four
            } else {
                Seats::Two
            },
            target_score: self.target_score,
            ..Settings::default()
        }
    }
}

/// How the acceptable rating difference grows with waiting time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WindowParams {
    /// Half-width at first (rating points either side).
    pub start: f64,
    /// Added per second waited.
    pub growth_per_second: f64,
    /// The widest it gets.
    pub max: f64,
}

impl WindowParams {
    /// The half-width after waiting `waited_ms`. A ticket accepts an opponent
    /// whose rating is within this of its own; two tickets pair only when
    /// each accepts the other.
    pub fn width(&self, waited_ms: Millis) -> f64 {
        let waited = waited_ms.max(0) as f64 / 1000.0;
        (self.start + self.growth_per_second * waited).min(self.max)
    }
}

/// What a pairing round needs to know besides the queue itself.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PairingParams {
    /// The rating window (ranked formats; unranked ones accept anyone).
    pub window: WindowParams,
    /// A ticket allowing bots gets them after waiting this long.
    pub bot_after_ms: Millis,
    /// How long the replica forming a group has to create its room.
    pub lease_ms: Millis,
    /// At most this many groups per round.
    pub max_groups: usize,
    /// At most this many oldest tickets per format are tried as anchors.
    pub scan_limit: usize,
    /// Nearest candidates looked at on each side of an anchor's rating.
    pub candidates: usize,
    /// Least real time between two rounds over all replicas (0: no limit;
    /// a store with a single process may ignore it).
    pub min_round_interval_ms: Millis,
}

/// The alphabet of the codes the server makes: A-Z and 2-9 without the
/// look-alikes I, L and O (31 characters). Input may use all of A-Z and 2-9
/// (the API's promise): a code with I, L or O is well formed but names no room.
pub const CODE_ALPHABET: &[u8] = b"ABCDEFGHJKMNPQRSTUVWXYZ23456789";
/// Join code length.
///
/// Why 6 is enough: 31^6 = 887,503,681 codes (29.7 bits). Wrong codes are
/// limited per account (default 10 per 10 minutes, i.e. 1,440 a day). Aiming
/// at one given room, an account needs on average 887,503,681 / 2 / 1,440 ≈
/// 308,000 days. Even fishing for *any* room while 10,000 rooms wait at once,
/// one guess succeeds with probability 10,000 / 887,503,681 ≈ 1.1e-5, so an
/// account finds one about once in 60 days of non-stop guessing — and a
/// found room takes nobody once it is full, within minutes (its code still
/// answers, with FAILED_PRECONDITION, so friends learn why they cannot join).
pub const CODE_LENGTH: usize = 6;

/// A fresh random join code.
pub fn new_join_code() -> String {
    let mut rng = rand::rng();
    (0..CODE_LENGTH)
        .map(|_| CODE_ALPHABET[rng.random_range(0..CODE_ALPHABET.len())] as char)
        .collect()
}

/// The canonical form of a code a player typed: upper case, spaces and
/// dashes removed. `None` if it is not six characters of A-Z and 2-9 (the
/// API's definition; codes the server makes use [`CODE_ALPHABET`]).
pub fn normalize_join_code(code: &str) -> Option<String> {
    let code: String = code
        .chars()
        .filter(|c| !matches!(c, ' ' | '-'))
        .map(|c| c.to_ascii_uppercase())
        .collect();
    let well_formed = |b: u8| b.is_ascii_uppercase() || (b'2'..=b'9').contains(&b);
    (code.len() == CODE_LENGTH && code.bytes().all(well_formed)).then_some(code)
}

/// Whether API settings set anything besides seats and target score (not
/// allowed for ranked rooms).
pub fn sets_more_than_format(s: Option<&common::RuleSettings>) -> bool {
    s.is_some_and(|s| {
        s.clean_start_table.is_some()
            || s.allow_partial_capture.is_some()
            || s.komi_basra.is_some_and(|v| v != 0)
            || s.basra_points.is_some()
            || s.jack_basra_points.is_some()
            || s.komi_basra_points.is_some()
            || s.last_card_basra.is_some()
            || s.majority_points.is_some()
            || s.majority_tie.is_some_and(|v| v != 0)
            || s.card_points.is_some()
    })
}

/// The seat order of a four-player group that makes its two partnerships (seats 0+2
/// against 1+3) as even as the group allows: of the three ways to pair four players,
/// the one whose teams' rating sums are closest (the first of equals, so equal ratings
/// keep the group's order). Returns indices into `ratings`, seat by seat.
pub fn balanced_partnerships(ratings: [f64; 4]) -> [usize; 4] {
    // Player 0 partners player 2, 1 or 3; the other two form the other team.
    const ORDERS: [[usize; 4]; 3] = [[0, 1, 2, 3], [0, 2, 1, 3], [0, 1, 3, 2]];
    let gap = |order: &[usize; 4]| {
        let team = |a: usize, b: usize| ratings[order[a]] + ratings[order[b]];
        (team(0, 2) - team(1, 3)).abs()
    };
    ORDERS
        .into_iter()
        .reduce(|best, order| {
            if gap(&order) < gap(&best) {
                order
            } else {
                best
            }
        })
        .unwrap_or(ORDERS[0])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_widens_then_stops() {
        let w = WindowParams {
            start: 50.0,
            growth_per_second: 10.0,
            max: 200.0,
        };
        assert_eq!(w.width(0), 50.0);
        assert_eq!(w.width(-5), 50.0);
        assert_eq!(w.width(5_000), 100.0);
        assert_eq!(w.width(500_000), 200.0);
    }

    #[test]
    fn codes_are_unambiguous_and_normalized() {
        for _ in 0..1000 {
            let code = new_join_code();
            assert_eq!(code.len(), CODE_LENGTH);
            assert!(!code.contains(['0', 'O', '1', 'I', 'L']), "{code}");
            assert_eq!(normalize_join_code(&code.to_lowercase()), Some(code));
        }
        assert_eq!(normalize_join_code("ab c-234"), Some("ABC234".into()));
        assert_eq!(normalize_join_code("lilo42"), Some("LILO42".into()));
        assert_eq!(
            normalize_join_code("ABC0O2"),
            None,
            "0 is not in A-Z or 2-9"
        );
        assert_eq!(
            normalize_join_code("ABC1O2"),
            None,
            "1 is not in A-Z or 2-9"
        );
        assert_eq!(normalize_join_code("ABC23"), None);
    }

    #[test]
    fn formats_round_trip() {
        let f = Format {
            ranked: true,
            seats: 4,
            target_score: 51,
        };
        assert_eq!(Format::parse(&f.key()), Some(f));
        assert_eq!(Format::parse("x.2.1"), None);
    }

    #[test]
    fn every_queue_is_offered_once() {
        let keys: Vec<String> = Format::offered(&[51, 101]).map(|f| f.key()).collect();
        assert_eq!(
            keys,
            [
                "u.2.51", "u.2.101", "u.4.51", "u.4.101", "r.2.51", "r.2.101", "r.4.51", "r.4.101"
            ]
        );
    }

    #[test]
    fn ranked_rooms_set_only_the_format() {
        use basra_proto::convert::settings_to_pb;
        let all = settings_to_pb(&Settings::default());
        assert!(sets_more_than_format(Some(&all)));
        assert!(!sets_more_than_format(None));
        assert!(!sets_more_than_format(Some(&common::RuleSettings {
            seats: Some(4),
            target_score: Some(51),
            ..Default::default()
        })));
        // UNSPECIFIED enums are "not set".
        assert!(!sets_more_than_format(Some(&common::RuleSettings {
            komi_basra: Some(0),
            majority_tie: Some(0),
            ..Default::default()
        })));
        assert!(sets_more_than_format(Some(&common::RuleSettings {
            card_points: Some(false),
            ..Default::default()
        })));
    }

    #[test]
    fn partnerships_are_balanced_by_rating() {
        let teams = |ratings: [f64; 4]| {
            let order = balanced_partnerships(ratings);
            let mut seen = order;
            seen.sort_unstable();
            assert_eq!(seen, [0, 1, 2, 3], "every player seated once: {order:?}");
            (
                ratings[order[0]] + ratings[order[2]],
                ratings[order[1]] + ratings[order[3]],
            )
        };
        assert_eq!(teams([1000.0, 1100.0, 1900.0, 2000.0]), (3000.0, 3000.0));
        assert_eq!(teams([1500.0, 1505.0, 1525.0, 1530.0]), (3030.0, 3030.0));
        assert_eq!(teams([1200.0, 1800.0, 1300.0, 1700.0]), (3000.0, 3000.0));
        // Equal ratings (unranked: all 0) keep the group's order.
        assert_eq!(balanced_partnerships([0.0; 4]), [0, 1, 2, 3]);
    }
}
