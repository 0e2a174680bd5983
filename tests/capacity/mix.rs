//! What simulated players do, in stated shares: the activity of each turn of a session
//! (quick match, ranked, a room with a friend, against the computer, watching a friend)
//! and the way each signs in (new guest, returning guest, password).

/// One choice among several, each with its share.
#[derive(Debug, Clone, PartialEq)]
pub struct Shares<K> {
    /// Each choice and its cumulative share, ending at 1.
    cumulative: Vec<(K, f64)>,
}

impl<K: Copy + PartialEq> Shares<K> {
    /// Parses `name=weight,name=weight` against `names` (weights in any unit: they are
    /// normalised; a name left out has share 0).
    pub fn parse(text: &str, names: &[(&str, K)]) -> anyhow::Result<Shares<K>> {
        let mut weights = Vec::new();
        for part in text.split(',').filter(|p| !p.trim().is_empty()) {
            let (name, weight) = part
                .split_once('=')
                .ok_or_else(|| anyhow::anyhow!("{part}: not name=weight"))?;
            let kind = names
                .iter()
                .find(|(n, _)| *n == name.trim())
                .map(|(_, k)| *k)
                .ok_or_else(|| {
                    let known: Vec<&str> = names.iter().map(|(n, _)| *n).collect();
                    anyhow::anyhow!("{name}: not one of {}", known.join(", "))
                })?;
            let weight: f64 = weight
                .trim()
                .parse()
                .map_err(|_| anyhow::anyhow!("{part}: the weight is not a number"))?;
            anyhow::ensure!(
                weight.is_finite() && weight >= 0.0,
                "{part}: a weight is 0 or more"
            );
            anyhow::ensure!(
                !weights.iter().any(|(k, _)| *k == kind),
                "{name} is given twice"
            );
            weights.push((kind, weight));
        }
        let total: f64 = weights.iter().map(|(_, w)| w).sum();
        anyhow::ensure!(total > 0.0, "{text}: the weights add up to 0");
        let mut sum = 0.0;
        let mut cumulative: Vec<(K, f64)> = weights
            .into_iter()
            .filter(|(_, w)| *w > 0.0)
            .map(|(k, w)| {
                sum += w / total;
                (k, sum)
            })
            .collect();
        if let Some(last) = cumulative.last_mut() {
            last.1 = 1.0;
        }
        Ok(Shares { cumulative })
    }

    /// The choice for `u` uniform in [0, 1).
    pub fn pick(&self, u: f64) -> K {
        self.cumulative
            .iter()
            .find(|(_, upto)| u < *upto)
            .or(self.cumulative.last())
            .map(|(k, _)| *k)
            .expect("at least one choice with a share")
    }

    /// Each choice's share (0 to 1).
    pub fn share(&self, kind: K) -> f64 {
        let mut below = 0.0;
        for (k, upto) in &self.cumulative {
            if *k == kind {
                return upto - below;
            }
            below = *upto;
        }
        0.0
    }
}

/// What a player does next in a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Activity {
    /// FindMatch, unranked, bots allowed after the wait.
    Quick,
    /// FindMatch, ranked (no bots).
    Ranked,
    /// CreateRoom, befriend a second player, InviteFriend, the friend joins by code.
    Friends,
    /// CreateRoom with a bot seat.
    Computer,
    /// Befriend a player of a room being played, and spectate it.
    Watch,
}

/// The activities' names for [`Shares::parse`].
pub const ACTIVITIES: &[(&str, Activity)] = &[
    ("quick", Activity::Quick),
    ("ranked", Activity::Ranked),
    ("friends", Activity::Friends),
    ("computer", Activity::Computer),
    ("watch", Activity::Watch),
];

/// The default mix.
pub const DEFAULT_ACTIVITIES: &str = "quick=35,ranked=20,friends=20,computer=15,watch=10";

/// How a player signs in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SignIn {
    /// GuestLogin with a new device.
    Guest,
    /// GuestLogin with the device of an earlier session (a new guest while none left).
    ReturningGuest,
    /// Login with a username and password (Register the first time).
    Password,
}

/// The sign-ins' names for [`Shares::parse`].
pub const SIGN_INS: &[(&str, SignIn)] = &[
    ("guest", SignIn::Guest),
    ("returning", SignIn::ReturningGuest),
    ("password", SignIn::Password),
];

/// The default sign-in mix.
pub const DEFAULT_SIGN_INS: &str = "guest=50,returning=35,password=15";

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng as _, SeedableRng as _};

    #[test]
    fn picks_in_the_stated_shares() {
        let shares = Shares::parse(DEFAULT_ACTIVITIES, ACTIVITIES).unwrap();
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        let n = 200_000;
        let mut counts = std::collections::BTreeMap::new();
        for _ in 0..n {
            *counts.entry(shares.pick(rng.random())).or_insert(0u32) += 1;
        }
        for (name, kind) in ACTIVITIES {
            let seen = f64::from(counts[kind]) / f64::from(n);
            let stated = shares.share(*kind);
            assert!((seen - stated).abs() < 0.005, "{name}: {seen} vs {stated}");
        }
        assert!((shares.share(Activity::Quick) - 0.35).abs() < 1e-9);
        assert!((shares.share(Activity::Watch) - 0.10).abs() < 1e-9);
    }

    #[test]
    fn edges_and_zero_shares() {
        let shares = Shares::parse("quick=1,ranked=0,computer=3", ACTIVITIES).unwrap();
        assert_eq!(shares.pick(0.0), Activity::Quick);
        assert_eq!(shares.pick(0.2499), Activity::Quick);
        assert_eq!(shares.pick(0.25), Activity::Computer);
        assert_eq!(shares.pick(0.999_999), Activity::Computer);
        // A draw of exactly 1 (outside [0, 1)) still picks something.
        assert_eq!(shares.pick(1.0), Activity::Computer);
        assert_eq!(shares.share(Activity::Ranked), 0.0);
        assert_eq!(shares.share(Activity::Watch), 0.0);
    }

    #[test]
    fn refuses_bad_mixes() {
        assert!(Shares::parse("quick=0", ACTIVITIES).is_err());
        assert!(Shares::parse("chess=1", ACTIVITIES).is_err());
        assert!(Shares::parse("quick=-1,ranked=2", ACTIVITIES).is_err());
        assert!(Shares::parse("quick", ACTIVITIES).is_err());
        assert!(Shares::parse("quick=1,quick=2", ACTIVITIES).is_err());
        assert!(Shares::parse(DEFAULT_SIGN_INS, SIGN_INS).is_ok());
    }
}
