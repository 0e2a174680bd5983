//! One Swiss round paired by the FIDE Dutch system (C.04.3), without colours. What is
//! implemented and what is left out is listed in the module docs of [`crate::swiss`];
//! this file is the procedure.
//!
//! Players are indices (their pairing number less one, so a lower index is a higher
//! seed); the bye is one more vertex (index `n`), ranked below everyone, which may be
//! paired only with a player who has not had a bye. Pairing goes bracket by bracket from
//! the top score group down: a bracket is the players moved down from above (MDPs) and
//! the residents of one score group; its unpaired players move down to the next.
//!
//! Every choice in a bracket is checked against the whole round (the completion
//! criterion): the players it sends down, with every lower group, must still have a
//! perfect matching without rematches ([`matching`](super::matching)). Since the round
//! as a whole was checked first, a bracket can always send everyone down, and the last
//! bracket can always be completed: the search never paints itself into a corner.

use std::cmp::Reverse;

use super::matching::has_perfect_matching;

/// The search budget of one bracket: candidates tried (assignments of one S1 player)
/// and completion checks. Past it the bracket is paired by the fallback.
const NODES: usize = 20_000;
const LEAVES: usize = 200;
/// Two-player exchanges are tried in brackets whose halves are at most this large.
const TWO_PLAYER_EXCHANGES_UP_TO: usize = 16;

/// How a player floated in a round.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Float {
    /// Paired with an equal score.
    #[default]
    None,
    /// Paired with a lower score, or given the bye.
    Down,
    /// Paired with a higher score.
    Up,
}

/// What the pairing of a round needs to know of each player (index = pairing number − 1).
#[derive(Debug, Clone, Default)]
pub(crate) struct Field {
    /// Points so far.
    pub(crate) score: Vec<u32>,
    /// Everyone each player has been paired with.
    pub(crate) opponents: Vec<Vec<usize>>,
    /// Whether the player has had the bye.
    pub(crate) had_bye: Vec<bool>,
    /// How the player floated in the previous round.
    pub(crate) last_float: Vec<Float>,
    /// The players to pair this round (not withdrawn).
    pub(crate) active: Vec<usize>,
}

/// A round's pairing: pairs of player indices (the higher-ranked first) and the bye.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Pairing {
    pub(crate) pairs: Vec<(usize, usize)>,
    pub(crate) bye: Option<usize>,
}

/// Pairs a round, or `None` when the active players cannot be paired without a rematch
/// (or a second bye).
pub(crate) fn pair(field: &Field) -> Option<Pairing> {
    let p = Pairer::new(field);
    let mut order = field.active.clone();
    order.sort_by_key(|&v| p.rank(v));
    if order.len() % 2 == 1 {
        order.push(p.bye);
    }
    if !p.completable(&order) {
        return None;
    }
    let mut groups: Vec<Vec<usize>> = Vec::new();
    for &v in &order {
        match groups.last_mut() {
            Some(g) if p.level(g[0]) == p.level(v) => g.push(v),
            _ => groups.push(vec![v]),
        }
    }
    let mut pairs = Vec::with_capacity(order.len() / 2);
    let mut moved_down: Vec<usize> = Vec::new();
    for k in 0..groups.len() {
        let lower: Vec<usize> = groups[k + 1..].concat();
        let (paired, floaters) = p.pair_bracket(&moved_down, &groups[k], &lower)?;
        pairs.extend(paired);
        moved_down = floaters;
        moved_down.sort_by_key(|&v| p.rank(v));
    }
    if !moved_down.is_empty() {
        return None;
    }
    let mut bye = None;
    pairs.retain(|&(a, b)| {
        if b == p.bye {
            bye = Some(a);
        }
        b != p.bye
    });
    Some(Pairing { pairs, bye })
}

/// A bracket's result: its pairs, and the players it moves down.
type Found = (Vec<(usize, usize)>, Vec<usize>);

struct Pairer<'a> {
    field: &'a Field,
    bye: usize,
    /// Who has met whom: a bit matrix over the players.
    met: Vec<u64>,
    stride: usize,
}

impl<'a> Pairer<'a> {
    fn new(field: &'a Field) -> Self {
        let n = field.score.len();
        let stride = n.div_ceil(64);
        let mut met = vec![0u64; n * stride];
        for (a, opponents) in field.opponents.iter().enumerate() {
            for &b in opponents {
                met[a * stride + b / 64] |= 1 << (b % 64);
            }
        }
        Pairer {
            field,
            bye: n,
            met,
            stride,
        }
    }

    /// The pairing order (A.2): score, highest first, then pairing number; the bye last.
    fn rank(&self, v: usize) -> (Reverse<u64>, usize) {
        (Reverse(self.level(v)), v)
    }

    /// The score group: the score plus one, and 0 for the bye's own group.
    fn level(&self, v: usize) -> u64 {
        if v == self.bye {
            0
        } else {
            u64::from(self.field.score[v]) + 1
        }
    }

    /// C.1 (no rematch) and C.2 (one bye at most).
    fn compatible(&self, a: usize, b: usize) -> bool {
        if a == b {
            false
        } else if a == self.bye {
            !self.field.had_bye[b]
        } else if b == self.bye {
            !self.field.had_bye[a]
        } else {
            self.met[a * self.stride + b / 64] >> (b % 64) & 1 == 0
        }
    }

    fn incompatible(&self, v: usize, out: &mut dyn FnMut(usize)) {
        if v == self.bye {
            for &p in &self.field.active {
                if self.field.had_bye[p] {
                    out(p);
                }
            }
        } else {
            self.field.opponents[v].iter().for_each(|&u| out(u));
            if self.field.had_bye[v] {
                out(self.bye);
            }
        }
    }

    /// C.4: can these players all still be paired?
    fn completable(&self, set: &[usize]) -> bool {
        has_perfect_matching(
            set,
            self.bye + 1,
            |a, b| self.compatible(a, b),
            |v, out| self.incompatible(v, out),
        )
    }

    fn downfloated(&self, v: usize) -> bool {
        v != self.bye && self.field.last_float[v] == Float::Down
    }

    fn upfloated(&self, v: usize) -> bool {
        v != self.bye && self.field.last_float[v] == Float::Up
    }

    /// Pairs one bracket: the Dutch search in order of quality, then, if its budget runs
    /// out, the fallback. Answers the pairs and the players moved down.
    fn pair_bracket(
        &self,
        moved_down: &[usize],
        residents: &[usize],
        lower: &[usize],
    ) -> Option<Found> {
        let mut search = Search {
            p: self,
            lower,
            strict: true,
            nodes: NODES,
            leaves: LEAVES,
        };
        let players = moved_down.len() + residents.len();
        // C.5: as many pairs as possible; then MDPs paired first (the highest first);
        // then the float criteria; then the Dutch order of candidates.
        for pairs in (0..=players / 2).rev() {
            let most_mdps = moved_down.len().min(residents.len()).min(pairs);
            for m1 in (0..=most_mdps).rev() {
                let remainder_pairs = pairs - m1;
                if 2 * remainder_pairs > residents.len() - m1 {
                    continue;
                }
                for strict in [true, false] {
                    search.strict = strict;
                    if let Some(found) =
                        search.heterogeneous(moved_down, residents, m1, remainder_pairs)
                    {
                        return Some(found);
                    }
                    if search.exhausted() {
                        return self.fallback([moved_down, residents].concat(), lower);
                    }
                }
            }
            // A bracket of MDPs that may pair among themselves when the residents cannot
            // take them (more MDPs than residents): the bracket as one homogeneous group.
            if moved_down.len() > residents.len() {
                let all = [moved_down, residents].concat();
                for strict in [true, false] {
                    search.strict = strict;
                    if let Some(found) = search.homogeneous(&all, &[], pairs) {
                        return Some(found);
                    }
                }
            }
            if search.exhausted() {
                break;
            }
        }
        self.fallback([moved_down, residents].concat(), lower)
    }

    /// Pairs a bracket greedily in pairing order, each player with the first player
    /// below it that leaves the rest pairable (the completion check), or sends it down.
    /// Always succeeds when the bracket and everything below it can be completed.
    fn fallback(&self, mut left: Vec<usize>, lower: &[usize]) -> Option<Found> {
        left.sort_by_key(|&v| self.rank(v));
        let mut pairs = Vec::new();
        let mut floaters = Vec::new();
        while !left.is_empty() {
            let v = left.remove(0);
            let partner = (0..left.len()).find(|&i| {
                self.compatible(v, left[i]) && {
                    let mut rest: Vec<usize> = left.clone();
                    rest.remove(i);
                    rest.extend_from_slice(&floaters);
                    rest.extend_from_slice(lower);
                    self.completable(&rest)
                }
            });
            match partner {
                Some(i) => pairs.push((v, left.remove(i))),
                None => floaters.push(v),
            }
        }
        // The last bracket has nowhere to send a player (never happens: see above).
        if lower.is_empty() && !floaters.is_empty() {
            return None;
        }
        Some((pairs, floaters))
    }
}

/// One bracket's search, with its budget.
struct Search<'a, 'p> {
    p: &'a Pairer<'p>,
    lower: &'a [usize],
    /// Whether the float criteria are required (nobody floats down twice in a row, nobody
    /// is paired up twice in a row).
    strict: bool,
    nodes: usize,
    leaves: usize,
}

impl Search<'_, '_> {
    fn exhausted(&self) -> bool {
        self.nodes == 0 || self.leaves == 0
    }

    fn spend_node(&mut self) -> bool {
        self.nodes = self.nodes.saturating_sub(1);
        self.nodes > 0
    }

    /// Whether `floaters` may move down: the float criterion, then completion.
    fn floaters_ok(&mut self, floaters: &[usize]) -> bool {
        if self.strict && floaters.iter().any(|&f| self.p.downfloated(f)) {
            return false;
        }
        if self.lower.is_empty() {
            return floaters.is_empty();
        }
        self.leaves = self.leaves.saturating_sub(1);
        let mut rest = floaters.to_vec();
        rest.extend_from_slice(self.lower);
        self.p.completable(&rest)
    }

    /// A bracket with `mdps`: `m1` of them paired with residents (B.2: S1 the MDPs, S2 the
    /// residents, the other MDPs in limbo), then the remainder paired as a homogeneous
    /// bracket of `remainder_pairs` pairs. MDP choices go highest first (combinations in
    /// order), assignments in transposition order.
    fn heterogeneous(
        &mut self,
        mdps: &[usize],
        residents: &[usize],
        m1: usize,
        remainder_pairs: usize,
    ) -> Option<Found> {
        if m1 == 0 {
            return self.homogeneous(residents, mdps, remainder_pairs);
        }
        let mut chosen: Vec<usize> = (0..m1).collect();
        loop {
            if !self.spend_node() {
                return None;
            }
            let s1: Vec<usize> = chosen.iter().map(|&i| mdps[i]).collect();
            let limbo: Vec<usize> = (0..mdps.len())
                .filter(|i| !chosen.contains(i))
                .map(|i| mdps[i])
                .collect();
            let mut used = vec![false; residents.len()];
            let mut pairs = Vec::new();
            if let Some(found) = self.mdp_pairing(
                &s1,
                residents,
                &limbo,
                remainder_pairs,
                &mut used,
                &mut pairs,
            ) {
                return Some(found);
            }
            if !next_combination(&mut chosen, mdps.len()) {
                return None;
            }
        }
    }

    fn mdp_pairing(
        &mut self,
        s1: &[usize],
        s2: &[usize],
        limbo: &[usize],
        remainder_pairs: usize,
        used: &mut [bool],
        pairs: &mut Vec<(usize, usize)>,
    ) -> Option<Found> {
        let i = pairs.len();
        if i == s1.len() {
            let remainder: Vec<usize> =
                (0..s2.len()).filter(|&j| !used[j]).map(|j| s2[j]).collect();
            let (more, floaters) = self.homogeneous(&remainder, limbo, remainder_pairs)?;
            let mut all = pairs.clone();
            all.extend(more);
            return Some((all, floaters));
        }
        for j in 0..s2.len() {
            if used[j]
                || !self.p.compatible(s1[i], s2[j])
                || (self.strict && self.p.upfloated(s2[j]))
            {
                continue;
            }
            if !self.spend_node() {
                return None;
            }
            used[j] = true;
            pairs.push((s1[i], s2[j]));
            if let Some(found) = self.mdp_pairing(s1, s2, limbo, remainder_pairs, used, pairs) {
                return Some(found);
            }
            pairs.pop();
            used[j] = false;
        }
        None
    }

    /// A homogeneous bracket (or a remainder) `h`, in pairing order, paired into exactly
    /// `pairs` pairs, with `extra` players moving down whatever happens (limbo). B.2: S1 the
    /// top `pairs` players, S2 the rest; then transpositions of S2 (D.1), then exchanges
    /// between S1 and S2 (D.2).
    fn homogeneous(&mut self, h: &[usize], extra: &[usize], pairs: usize) -> Option<Found> {
        if pairs == 0 {
            let floaters = [h, extra].concat();
            return self.floaters_ok(&floaters).then(|| (Vec::new(), floaters));
        }
        let n = h.len();
        let split = |s1: &[usize]| -> (Vec<usize>, Vec<usize>) {
            let mut in_s1 = vec![false; n];
            s1.iter().for_each(|&i| in_s1[i] = true);
            let (a, b): (Vec<usize>, Vec<usize>) = (0..n).partition(|&i| in_s1[i]);
            (
                a.iter().map(|&i| h[i]).collect(),
                b.iter().map(|&i| h[i]).collect(),
            )
        };
        let natural: Vec<usize> = (0..pairs).collect();
        let (s1, s2) = split(&natural);
        if let Some(found) = self.transpositions(&s1, &s2, extra) {
            return Some(found);
        }
        // One-player exchanges: the smallest difference of pairing positions first, and
        // among equal differences the lowest S1 player first.
        for d in 1..n {
            for x in (0..pairs).rev() {
                let y = x + d;
                if y < pairs || y >= n {
                    continue;
                }
                if self.exhausted() {
                    return None;
                }
                let mut s1_positions = natural.clone();
                s1_positions[x] = y;
                let (s1, s2) = split(&s1_positions);
                if let Some(found) = self.transpositions(&s1, &s2, extra) {
                    return Some(found);
                }
            }
        }
        if (2..=TWO_PLAYER_EXCHANGES_UP_TO).contains(&pairs)
            && (2..=TWO_PLAYER_EXCHANGES_UP_TO + 1).contains(&(n - pairs))
        {
            let mut swaps = Vec::new();
            for x1 in 0..pairs {
                for x2 in x1 + 1..pairs {
                    for y1 in pairs..n {
                        for y2 in y1 + 1..n {
                            let d = y1 + y2 - x1 - x2;
                            swaps.push((d, Reverse(x1 + x2), Reverse(x2), y1, [x1, x2, y1, y2]));
                        }
                    }
                }
            }
            swaps.sort();
            for (.., [x1, x2, y1, y2]) in swaps {
                if self.exhausted() {
                    return None;
                }
                let s1_positions: Vec<usize> = natural
                    .iter()
                    .map(|&i| {
                        if i == x1 {
                            y1
                        } else if i == x2 {
                            y2
                        } else {
                            i
                        }
                    })
                    .collect();
                let (s1, s2) = split(&s1_positions);
                if let Some(found) = self.transpositions(&s1, &s2, extra) {
                    return Some(found);
                }
            }
        }
        None
    }

    /// S1's players each take the first S2 player still free and compatible, backtracking
    /// in order: the permutations of S2 in lexicographic order (D.1), only the valid ones
    /// visited.
    fn transpositions(&mut self, s1: &[usize], s2: &[usize], extra: &[usize]) -> Option<Found> {
        let mut used = vec![false; s2.len()];
        let mut pairs = Vec::with_capacity(s1.len());
        self.assign(s1, s2, extra, &mut used, &mut pairs)
            .then_some(pairs)
            .map(|pairs| {
                let mut floaters: Vec<usize> =
                    (0..s2.len()).filter(|&j| !used[j]).map(|j| s2[j]).collect();
                floaters.extend_from_slice(extra);
                (pairs, floaters)
            })
    }

    fn assign(
        &mut self,
        s1: &[usize],
        s2: &[usize],
        extra: &[usize],
        used: &mut [bool],
        pairs: &mut Vec<(usize, usize)>,
    ) -> bool {
        let i = pairs.len();
        if i == s1.len() {
            let mut floaters: Vec<usize> =
                (0..s2.len()).filter(|&j| !used[j]).map(|j| s2[j]).collect();
            floaters.extend_from_slice(extra);
            return self.floaters_ok(&floaters);
        }
        for j in 0..s2.len() {
            if used[j] || !self.p.compatible(s1[i], s2[j]) {
                continue;
            }
            if !self.spend_node() || self.leaves == 0 {
                return false;
            }
            used[j] = true;
            pairs.push((s1[i], s2[j]));
            if self.assign(s1, s2, extra, used, pairs) {
                return true;
            }
            pairs.pop();
            used[j] = false;
        }
        false
    }
}

/// The next `k`-combination of `0..n` in lexicographic order, in place; `false` after the
/// last.
fn next_combination(c: &mut [usize], n: usize) -> bool {
    let k = c.len();
    for i in (0..k).rev() {
        if c[i] < n - k + i {
            c[i] += 1;
            for j in i + 1..k {
                c[j] = c[j - 1] + 1;
            }
            return true;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(n: usize) -> Field {
        Field {
            score: vec![0; n],
            opponents: vec![Vec::new(); n],
            had_bye: vec![false; n],
            last_float: vec![Float::None; n],
            active: (0..n).collect(),
        }
    }

    fn play(f: &mut Field, a: usize, b: usize, winner: usize) {
        f.opponents[a].push(b);
        f.opponents[b].push(a);
        f.score[winner] += 1;
    }

    #[test]
    fn round_one_is_top_half_against_bottom_half() {
        let p = pair(&field(8)).unwrap();
        assert_eq!(p.pairs, [(0, 4), (1, 5), (2, 6), (3, 7)]);
        assert_eq!(p.bye, None);
        let p = pair(&field(7)).unwrap();
        assert_eq!(p.pairs, [(0, 3), (1, 4), (2, 5)]);
        assert_eq!(p.bye, Some(6), "the bye to the lowest-ranked player");
    }

    #[test]
    fn a_transposition_avoids_a_rematch() {
        let mut f = field(4);
        // 0 and 2 met before, all on equal scores: S1 [0, 1], S2 [2, 3]; 0–2 is a rematch,
        // so the next transposition of S2, [3, 2], pairs 0–3 and 1–2.
        play(&mut f, 0, 2, 0);
        f.score = vec![1; 4];
        let p = pair(&f).unwrap();
        assert_eq!(p.pairs, [(0, 3), (1, 2)]);
    }

    #[test]
    fn an_exchange_when_no_transposition_works() {
        let mut f = field(4);
        // 0 met 2 and 3: with S1 [0, 1] and S2 [2, 3] no transposition pairs 0; the first
        // one-player exchange (positions 2 and 3: difference 1, the lowest S1 player) gives
        // S1 [0, 2], S2 [1, 3]: 0–1, 2–3.
        play(&mut f, 0, 2, 0);
        play(&mut f, 0, 3, 0);
        f.score = vec![0; 4];
        let p = pair(&f).unwrap();
        assert_eq!(p.pairs, [(0, 1), (2, 3)]);
    }

    #[test]
    fn the_bye_skips_a_player_who_had_one() {
        let mut f = field(5);
        f.had_bye[4] = true;
        let p = pair(&f).unwrap();
        assert_eq!(p.bye, Some(3));
        assert!(p.pairs.iter().all(|&(a, b)| a != 3 && b != 3));
    }

    #[test]
    fn an_unpairable_field_is_none() {
        let mut f = field(2);
        play(&mut f, 0, 1, 0);
        assert_eq!(pair(&f), None);
        // Three players who have all met, each with a bye: nothing left.
        let mut f = field(3);
        play(&mut f, 0, 1, 0);
        play(&mut f, 0, 2, 0);
        play(&mut f, 1, 2, 1);
        f.had_bye = vec![true, false, false];
        assert_eq!(pair(&f), None);
    }

    #[test]
    fn combinations_come_in_lexicographic_order() {
        let mut c = vec![0, 1];
        let mut all = vec![c.clone()];
        while next_combination(&mut c, 4) {
            all.push(c.clone());
        }
        assert_eq!(
            all,
            [[0, 1], [0, 2], [0, 3], [1, 2], [1, 3], [2, 3]].map(|a| a.to_vec())
        );
    }
}
