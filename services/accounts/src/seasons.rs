//! Rating seasons (pure: no I/O, no clock): the [`Calendar`] of seasons set in
//! `[seasons]`, the soft reset of a rating at a season's start, and the tiers a rating
//! falls in.
//!
//! A season is a start time; it ends where the next one starts (the last one never
//! ends). Before the first season's start ratings belong to no season (id `""`).
//!
//! **The soft reset.** At each season start a player's Glicko-2 state moves toward a new
//! player's:
//!
//! ```text
//! r' = mean + k · (r − mean)          mean = 1500 (a new player's rating), k = reset_factor
//! d' = min(max(d₀, d), √(d² + c²))    d₀ = 350 (a new player's deviation), c = deviation_growth
//! σ' = σ
//! ```
//!
//! The rating keeps a share `k` of its distance from the mean, so the order of last
//! season carries over but the spread shrinks and everyone has room to climb again;
//! the mean is the fixed start value, not the population's mean, so every replica and
//! every lazy correction computes the same value without a scan. The deviation grows the
//! way Glicko itself grows it for a player who has not played for a while (`√(d² + c²)`
//! per rating period, capped at a new player's), so the first matches of a season move
//! the rating more, and a player whose skill changed in the break is placed again
//! quickly. The reset is applied once per season start crossed: a player back after two
//! seasons away is reset twice (`k²`). A new player (1500, 350) is left unchanged.

use chrono::{DateTime, Utc};
use serde::Deserialize;

use crate::rating::Rating;

/// The id of the time before the first season (and of every rating when no seasons are
/// configured).
pub const NO_SEASON: &str = "";

/// The longest season id accepted (settings and requests).
pub const SEASON_ID_MAX: usize = 64;

/// One season as `[[seasons.list]]` sets it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Season {
    /// Its id: stored with every rating of the season (`[A-Za-z0-9_.-]`, 1..64).
    pub id: String,
    /// The name players see.
    pub name: String,
    /// When it starts (RFC 3339); it ends where the next starts.
    pub start: DateTime<Utc>,
}

/// A tier: the ratings from `min_rating` up to the next tier's.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tier {
    /// Its name.
    pub name: String,
    /// The lowest rating in it.
    pub min_rating: f64,
}

/// The seasons, the reset and the tiers: `[seasons]`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Calendar {
    /// The share of its distance from the mean a rating keeps at a season start (`k`,
    /// 0..=1; 1: no reset).
    pub reset_factor: f64,
    /// How much the deviation grows at a season start (`c`, ≥ 0).
    pub deviation_growth: f64,
    /// The seasons, by start (strictly increasing).
    #[serde(default)]
    pub list: Vec<Season>,
    /// The tiers, by `min_rating` (strictly increasing; the first one's bound is the
    /// lowest rating it is shown for, below it the first tier still applies).
    #[serde(default)]
    pub tiers: Vec<Tier>,
}

impl Default for Calendar {
    /// No seasons (every rating in [`NO_SEASON`]) and no tiers.
    fn default() -> Calendar {
        Calendar {
            reset_factor: 1.0,
            deviation_growth: 0.0,
            list: Vec::new(),
            tiers: Vec::new(),
        }
    }
}

/// Where a season stands at some time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SeasonState {
    /// Ended: its leaderboard is final.
    Finished,
    /// Running now.
    Current,
    /// Not started yet.
    Upcoming,
}

impl Calendar {
    /// Checks the settings: ids well formed and unique, starts increasing, bounds in
    /// range, tiers increasing.
    pub fn validate(&self) -> Result<(), String> {
        if !(0.0..=1.0).contains(&self.reset_factor) {
            return Err(format!(
                "seasons.reset_factor must be between 0 and 1, not {}",
                self.reset_factor
            ));
        }
        if !(0.0..=1000.0).contains(&self.deviation_growth) {
            return Err(format!(
                "seasons.deviation_growth must be between 0 and 1000, not {}",
                self.deviation_growth
            ));
        }
        for (i, s) in self.list.iter().enumerate() {
            let well_formed = (1..=SEASON_ID_MAX).contains(&s.id.len())
                && s.id
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'));
            if !well_formed {
                return Err(format!(
                    "seasons.list[{i}].id {:?} must be 1 to {SEASON_ID_MAX} characters of \
                     A-Z a-z 0-9 _ . -",
                    s.id
                ));
            }
            if s.name.trim().is_empty() {
                return Err(format!("seasons.list[{i}].name must not be empty"));
            }
            if self.list[..i].iter().any(|o| o.id == s.id) {
                return Err(format!("seasons.list[{i}].id {:?} is used twice", s.id));
            }
            if i > 0 && self.list[i - 1].start >= s.start {
                return Err(format!(
                    "seasons.list[{i}] must start after seasons.list[{}]",
                    i - 1
                ));
            }
        }
        for (i, t) in self.tiers.iter().enumerate() {
            if t.name.trim().is_empty() || !t.min_rating.is_finite() {
                return Err(format!(
                    "seasons.tiers[{i}] needs a name and a finite min_rating"
                ));
            }
            if i > 0 && self.tiers[i - 1].min_rating >= t.min_rating {
                return Err(format!(
                    "seasons.tiers[{i}].min_rating must be above seasons.tiers[{}]'s",
                    i - 1
                ));
            }
        }
        Ok(())
    }

    /// The index in [`Calendar::list`] of the season running at `at`, if any.
    fn index_at(&self, at: DateTime<Utc>) -> Option<usize> {
        self.list.iter().rposition(|s| s.start <= at)
    }

    /// The season running at `at` (`None`: before the first, or no seasons).
    pub fn season_at(&self, at: DateTime<Utc>) -> Option<&Season> {
        self.index_at(at).map(|i| &self.list[i])
    }

    /// The id of the season running at `at` ([`NO_SEASON`] before the first).
    pub fn id_at(&self, at: DateTime<Utc>) -> &str {
        self.season_at(at).map_or(NO_SEASON, |s| s.id.as_str())
    }

    /// The season called `id`.
    pub fn season(&self, id: &str) -> Option<&Season> {
        self.list.iter().find(|s| s.id == id)
    }

    /// When the season called `id` ends (`None`: the last one, or unknown).
    pub fn end_of(&self, id: &str) -> Option<DateTime<Utc>> {
        let i = self.list.iter().position(|s| s.id == id)?;
        self.list.get(i + 1).map(|next| next.start)
    }

    /// Where the season called `id` stands at `at` (`None`: unknown id).
    pub fn state(&self, id: &str, at: DateTime<Utc>) -> Option<SeasonState> {
        let season = self.season(id)?;
        Some(if season.start > at {
            SeasonState::Upcoming
        } else if self.end_of(id).is_some_and(|end| end <= at) {
            SeasonState::Finished
        } else {
            SeasonState::Current
        })
    }

    /// The seasons finished at `at`, oldest first.
    pub fn finished_at(&self, at: DateTime<Utc>) -> impl Iterator<Item = &Season> {
        let current = self.index_at(at);
        self.list
            .iter()
            .enumerate()
            .filter(move |(i, _)| current.is_some_and(|c| *i < c))
            .map(|(_, s)| s)
    }

    /// How many season starts lie after season `from` up to and including season `to`
    /// (0 when `to` is not after `from`). A rating with no known season ([`NO_SEASON`]:
    /// recorded before seasons existed, or by the previous release during a rolling
    /// upgrade, which leaves the column at its default) is taken as `to`'s: no reset, so a
    /// match the previous release recorded this season never costs its players half their
    /// distance from the mean.
    fn starts_between(&self, from: &str, to: &str) -> usize {
        let position = |id: &str| self.list.iter().position(|s| s.id == id);
        match (position(from), position(to)) {
            (Some(from), Some(to)) => to.saturating_sub(from),
            _ => 0,
        }
    }

    /// `rating`, stored in season `from`, as it stands in season `to`: the soft reset
    /// (module documentation) applied once per season start in between.
    pub fn roll(&self, rating: Rating, from: &str, to: &str) -> Rating {
        let fresh = Rating::default();
        let mut r = rating;
        for _ in 0..self.starts_between(from, to) {
            r = Rating {
                rating: fresh.rating + self.reset_factor * (r.rating - fresh.rating),
                deviation: (r.deviation.powi(2) + self.deviation_growth.powi(2))
                    .sqrt()
                    .min(fresh.deviation.max(r.deviation)),
                volatility: r.volatility,
            };
        }
        r
    }

    /// The tier `rating` falls in (`None` when no tiers are set).
    pub fn tier(&self, rating: f64) -> Option<&Tier> {
        self.tiers
            .iter()
            .rev()
            .find(|t| rating >= t.min_rating)
            .or(self.tiers.first())
    }

    /// The tier's name, or `""` when no tiers are set.
    pub fn tier_name(&self, rating: f64) -> &str {
        self.tier(rating).map_or("", |t| t.name.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn day(d: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2027, 1, d, 0, 0, 0).unwrap()
    }

    fn calendar() -> Calendar {
        Calendar {
            reset_factor: 0.5,
            deviation_growth: 150.0,
            list: ["a", "b", "c"]
                .iter()
                .enumerate()
                .map(|(i, id)| Season {
                    id: (*id).into(),
                    name: id.to_uppercase(),
                    start: day(1 + 10 * i as u32),
                })
                .collect(),
            tiers: [("Bronze", 0.0), ("Silver", 1400.0), ("Gold", 1550.0)]
                .iter()
                .map(|(n, r)| Tier {
                    name: (*n).into(),
                    min_rating: *r,
                })
                .collect(),
        }
    }

    #[test]
    fn seasons_run_from_their_start_to_the_next() {
        let c = calendar();
        assert_eq!(c.id_at(day(1) - chrono::Duration::seconds(1)), NO_SEASON);
        assert_eq!(c.id_at(day(1)), "a");
        assert_eq!(c.id_at(day(10)), "a");
        assert_eq!(c.id_at(day(11)), "b");
        assert_eq!(c.id_at(day(31)), "c");
        assert_eq!(c.state("a", day(12)), Some(SeasonState::Finished));
        assert_eq!(c.state("b", day(12)), Some(SeasonState::Current));
        assert_eq!(c.state("c", day(12)), Some(SeasonState::Upcoming));
        assert_eq!(c.state("zz", day(12)), None);
        let finished: Vec<&str> = c.finished_at(day(25)).map(|s| s.id.as_str()).collect();
        assert_eq!(finished, ["a", "b"]);
        assert_eq!(c.end_of("c"), None);
    }

    #[test]
    fn the_reset_halves_the_distance_and_grows_the_deviation_once_per_start() {
        let c = calendar();
        let r = Rating {
            rating: 1900.0,
            deviation: 80.0,
            volatility: 0.05,
        };
        let once = c.roll(r, "a", "b");
        assert_eq!(once.rating, 1700.0);
        assert!((once.deviation - (80.0f64.powi(2) + 150.0f64.powi(2)).sqrt()).abs() < 1e-9);
        assert_eq!(once.volatility, 0.05);
        let twice = c.roll(r, "a", "c");
        assert_eq!(twice.rating, 1600.0);
        assert_eq!(c.roll(r, "b", "b"), r);
        assert_eq!(c.roll(r, "c", "a"), r, "never backwards");
        // With no known season (before seasons, or the previous release's write): no reset.
        assert_eq!(c.roll(r, NO_SEASON, "a"), r);
        assert_eq!(c.roll(r, NO_SEASON, "c"), r);
        // A new player is left alone; the deviation never passes a new player's.
        assert_eq!(c.roll(Rating::default(), "a", "c"), Rating::default());
    }

    #[test]
    fn tiers_by_rating() {
        let c = calendar();
        assert_eq!(c.tier_name(1200.0), "Bronze");
        assert_eq!(c.tier_name(1400.0), "Silver");
        assert_eq!(c.tier_name(2400.0), "Gold");
        assert_eq!(c.tier_name(-5.0), "Bronze");
        assert_eq!(Calendar::default().tier_name(1500.0), "");
    }

    #[test]
    fn bad_settings_are_named() {
        let mut c = calendar();
        c.list[1].start = day(1);
        assert!(c.validate().unwrap_err().contains("seasons.list[1]"));
        let mut c = calendar();
        c.list[2].id = "a".into();
        assert!(c.validate().unwrap_err().contains("used twice"));
        let mut c = calendar();
        c.reset_factor = 1.5;
        assert!(c.validate().unwrap_err().contains("reset_factor"));
        let mut c = calendar();
        c.tiers[2].min_rating = 100.0;
        assert!(c.validate().unwrap_err().contains("tiers[2]"));
        assert_eq!(calendar().validate(), Ok(()));
    }
}
