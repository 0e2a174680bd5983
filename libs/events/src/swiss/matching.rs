//! Can a set of players still be paired without a rematch? The completion test behind
//! every Dutch choice (a bracket's floaters must leave the rest of the round pairable).
//!
//! The answer is whether the compatibility graph on the set (an edge between two players
//! who have not met; the bye, a vertex of its own, joined to those who have not had one)
//! has a perfect matching. Two steps:
//!
//! 1. **Dirac's condition**, in `O(set × rounds)`: when every vertex is compatible with at
//!    least half of the set, the graph has a Hamiltonian cycle (Dirac, 1952), and every
//!    other edge of an even cycle is a perfect matching. Early in a large Swiss each player
//!    has met only a few of many, so this answers almost every call.
//! 2. Otherwise **Edmonds' blossom algorithm** (maximum cardinality matching, `O(V³)`,
//!    after a greedy start) on the set: only small sets get here, since a vertex can miss
//!    Dirac's bound only when the set is less than twice its rematches plus one.

/// Marks that a vertex has no partner (Edmonds' `mate`, `parent`).
const NONE: usize = usize::MAX;

/// Whether `set` (vertices `< universe`) has a perfect matching in the graph where `u`
/// and `v` are joined when `compatible(u, v)`. `incompatible(v)` lists every vertex `v`
/// is *not* joined to (it may list vertices outside the set; the lists are short).
pub(crate) fn has_perfect_matching<C, I>(
    set: &[usize],
    universe: usize,
    compatible: C,
    incompatible: I,
) -> bool
where
    C: Fn(usize, usize) -> bool,
    I: Fn(usize, &mut dyn FnMut(usize)),
{
    if set.len() % 2 == 1 {
        return false;
    }
    if set.is_empty() {
        return true;
    }
    let mut member = vec![false; universe];
    for &v in set {
        member[v] = true;
    }
    let half = set.len() / 2;
    let dirac = set.iter().all(|&v| {
        let mut missing = 0;
        incompatible(v, &mut |u| {
            if u != v && member[u] {
                missing += 1;
            }
        });
        set.len() - 1 - missing >= half
    });
    dirac || maximum_matching(set, &compatible) == half
}

/// The size of a maximum matching of the graph on `set` (Edmonds' blossom algorithm, the
/// array form: BFS from each free vertex, odd cycles contracted by relabelling bases).
pub(crate) fn maximum_matching<C: Fn(usize, usize) -> bool>(
    set: &[usize],
    compatible: &C,
) -> usize {
    let n = set.len();
    let mut adj = vec![false; n * n];
    for i in 0..n {
        for j in i + 1..n {
            let c = compatible(set[i], set[j]);
            adj[i * n + j] = c;
            adj[j * n + i] = c;
        }
    }
    let mut m = Blossom {
        n,
        adj,
        mate: vec![NONE; n],
        parent: vec![NONE; n],
        base: (0..n).collect(),
        used: vec![false; n],
        blossom: vec![false; n],
        queue: Vec::with_capacity(n),
    };
    let mut size = 0;
    // Greedy start: most pairs are found here; the search only repairs the rest.
    for v in 0..n {
        if m.mate[v] == NONE
            && let Some(u) = (v + 1..n).find(|&u| m.mate[u] == NONE && m.adj[v * n + u])
        {
            m.mate[v] = u;
            m.mate[u] = v;
            size += 1;
        }
    }
    for root in 0..n {
        if m.mate[root] == NONE && m.augment_from(root) {
            size += 1;
        }
    }
    size
}

struct Blossom {
    n: usize,
    adj: Vec<bool>,
    mate: Vec<usize>,
    parent: Vec<usize>,
    base: Vec<usize>,
    used: Vec<bool>,
    blossom: Vec<bool>,
    queue: Vec<usize>,
}

impl Blossom {
    /// Searches an augmenting path from the free vertex `root` and flips it.
    fn augment_from(&mut self, root: usize) -> bool {
        let n = self.n;
        self.used.fill(false);
        self.parent.fill(NONE);
        for (i, b) in self.base.iter_mut().enumerate() {
            *b = i;
        }
        self.used[root] = true;
        self.queue.clear();
        self.queue.push(root);
        let mut head = 0;
        while head < self.queue.len() {
            let v = self.queue[head];
            head += 1;
            for to in 0..n {
                if !self.adj[v * n + to] || self.base[v] == self.base[to] || self.mate[v] == to {
                    continue;
                }
                if to == root || (self.mate[to] != NONE && self.parent[self.mate[to]] != NONE) {
                    let current = self.common_base(v, to);
                    self.blossom.fill(false);
                    self.mark_path(v, current, to);
                    self.mark_path(to, current, v);
                    for i in 0..n {
                        if self.blossom[self.base[i]] {
                            self.base[i] = current;
                            if !self.used[i] {
                                self.used[i] = true;
                                self.queue.push(i);
                            }
                        }
                    }
                } else if self.parent[to] == NONE {
                    self.parent[to] = v;
                    if self.mate[to] == NONE {
                        let mut v = to;
                        while v != NONE {
                            let pv = self.parent[v];
                            let next = self.mate[pv];
                            self.mate[v] = pv;
                            self.mate[pv] = v;
                            v = next;
                        }
                        return true;
                    }
                    let m = self.mate[to];
                    self.used[m] = true;
                    self.queue.push(m);
                }
            }
        }
        false
    }

    /// The base of the blossom closed by the edge `a`–`b`.
    fn common_base(&self, mut a: usize, mut b: usize) -> usize {
        let mut seen = vec![false; self.n];
        loop {
            a = self.base[a];
            seen[a] = true;
            if self.mate[a] == NONE {
                break;
            }
            a = self.parent[self.mate[a]];
        }
        loop {
            b = self.base[b];
            if seen[b] {
                return b;
            }
            b = self.parent[self.mate[b]];
        }
    }

    fn mark_path(&mut self, mut v: usize, b: usize, mut child: usize) {
        while self.base[v] != b {
            self.blossom[self.base[v]] = true;
            self.blossom[self.base[self.mate[v]]] = true;
            self.parent[v] = child;
            child = self.mate[v];
            v = self.parent[self.mate[v]];
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn from_edges(n: usize, edges: &[(usize, usize)]) -> impl Fn(usize, usize) -> bool {
        let mut adj = vec![false; n * n];
        for &(a, b) in edges {
            adj[a * n + b] = true;
            adj[b * n + a] = true;
        }
        move |a, b| adj[a * n + b]
    }

    #[test]
    fn two_triangles_have_no_perfect_matching_a_hexagon_has() {
        let all: Vec<usize> = (0..6).collect();
        let triangles = from_edges(6, &[(0, 1), (1, 2), (2, 0), (3, 4), (4, 5), (5, 3)]);
        assert_eq!(maximum_matching(&all, &triangles), 2);
        let hexagon = from_edges(6, &[(0, 1), (1, 2), (2, 3), (3, 4), (4, 5), (5, 0)]);
        assert_eq!(maximum_matching(&all, &hexagon), 3);
    }

    #[test]
    fn the_search_repairs_what_the_greedy_start_missed() {
        // A 5-cycle 0–4 with 6 hanging on 2 and 7 on 5 (itself on 4): the greedy start
        // matches 0–1, 2–3, 4–5 and leaves 6 and 7 free; the path 6 2 3 4 5 7 repairs it.
        let g = from_edges(
            8,
            &[
                (0, 1),
                (1, 2),
                (2, 3),
                (3, 4),
                (4, 0),
                (4, 5),
                (2, 6),
                (5, 7),
            ],
        );
        let all: Vec<usize> = (0..8).collect();
        assert_eq!(maximum_matching(&all, &g), 4);
    }

    #[test]
    fn dirac_and_blossom_agree_with_brute_force_on_small_graphs() {
        // Every graph on 6 vertices given by a 15-bit mask of its edges.
        let pairs: Vec<(usize, usize)> = (0..6)
            .flat_map(|a| (a + 1..6).map(move |b| (a, b)))
            .collect();
        for mask in 0u32..1 << 15 {
            let edges: Vec<(usize, usize)> = pairs
                .iter()
                .enumerate()
                .filter(|(i, _)| mask >> i & 1 == 1)
                .map(|(_, e)| *e)
                .collect();
            let g = from_edges(6, &edges);
            let brute = perfect_by_brute_force(&[0, 1, 2, 3, 4, 5], &g);
            let fast = has_perfect_matching(&[0, 1, 2, 3, 4, 5], 6, &g, |v, out| {
                (0..6).filter(|&u| u != v && !g(u, v)).for_each(&mut *out)
            });
            assert_eq!(fast, brute, "edges {edges:?}");
        }
    }

    fn perfect_by_brute_force(set: &[usize], g: &impl Fn(usize, usize) -> bool) -> bool {
        match set {
            [] => true,
            [first, rest @ ..] => rest.iter().enumerate().any(|(i, &u)| {
                let mut others = rest.to_vec();
                others.remove(i);
                g(*first, u) && perfect_by_brute_force(&others, g)
            }),
        }
    }
}
