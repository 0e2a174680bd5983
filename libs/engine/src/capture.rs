//! What a played card takes (RULES.md §6–§14): the exact largest disjoint cover of number
//! cards, Q/K pairs, J and Komi sweeps, and which kind of Basra a play makes.
//!
//! The search works on counts per value, not on subsets of cards: cards of one value are
//! interchangeable for the size of a cover, and the canonical cover takes the oldest cards
//! of each value (covers that differ in their counts per value are compared by their sorted
//! positions). It goes in three steps, each for the tables the step before leaves:
//!
//! 1. Leave out no card, then one: does the rest split into groups of the played value?
//!    (Whether a multiset splits is memoized per count vector.) Most tables end here.
//! 2. Set aside the cards no cover can hold (no partners, or more copies of a card above
//!    half the value than the smaller cards can complete), then leave out two cards.
//! 3. Count the most cards disjoint groups take (a memoized search over count vectors,
//!    with the groups each value can head listed once from a table of partitions), then
//!    walk every cover of that size.
//!
//! Cheap necessary conditions (the sum, and what the cards above half the value need from
//! those below) skip most candidates before any search. Up to a dozen or so smaller cards
//! everything lives on the stack; nothing is allocated.

use std::cmp::Ordering;

use serde::{Deserialize, Serialize};

use crate::card::{Card, CardSet, Rank};
use crate::error::RuleError;
use crate::settings::{KomiBasra, Settings};

/// The three kinds of Basra (RULES.md §12–§14).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BasraKind {
    /// A number card, Q or K that leaves the table empty.
    Basra,
    /// A J played onto a table holding exactly one J.
    Jack,
    /// The 7D played onto a table that another rank could have taken as a Basra.
    Komi,
}

impl BasraKind {
    /// The points this kind is worth under `settings`.
    pub fn points(self, settings: &Settings) -> u32 {
        match self {
            BasraKind::Basra => settings.basra_points,
            BasraKind::Jack => settings.jack_basra_points,
            BasraKind::Komi => settings.komi_basra_points,
        }
    }
}

/// The outcome of playing one card onto a table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capture {
    /// The table cards taken (the played card is not included).
    pub taken: CardSet,
    /// The Basra the play makes, before the last-card rule (§16) is applied.
    pub basra: Option<BasraKind>,
    /// Whether other sets of the same size could be taken instead (the player may name one).
    pub alternatives: bool,
}

/// The largest set of table number cards that splits into disjoint groups of one sum.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cover {
    /// Table positions taken (bit `i` = the card at position `i`, 0 = laid longest ago).
    pub positions: u64,
    /// Whether another set of the same size exists.
    pub alternatives: bool,
}

/// Per value 1..=10, the table positions holding a number card of that value.
type ValueMasks = [u64; 11];
/// Per value 1..=10, a number of cards.
type Counts = [u8; 11];

fn value_masks(table: &[Card], max_value: u8) -> ValueMasks {
    let mut masks = [0u64; 11];
    for (position, card) in table.iter().enumerate() {
        if let Some(value) = card.value().filter(|&v| v <= max_value) {
            masks[usize::from(value)] |= 1 << position;
        }
    }
    masks
}

/// The exact largest disjoint cover of table number cards by groups summing to `value`,
/// with the canonical tie-break of RULES.md §6.
///
/// # Panics
/// If `value` is not in `1..=10` or the table holds more than 64 cards.
pub fn largest_cover(table: &[Card], value: u8) -> Cover {
    assert!((1..=10).contains(&value), "a sum is between 1 and 10");
    assert!(table.len() <= 64, "a table holds at most 52 cards");
    let masks = value_masks(table, value);
    // A card of the played value is a group alone; taking it never costs another card.
    let forced = masks[usize::from(value)];
    let cover = Digits::new(&masks, value).largest_cover();
    Cover {
        positions: forced | cover.positions,
        ..cover
    }
}

/// One value smaller than the played one that lies on the table.
#[derive(Debug, Clone, Copy, Default)]
struct Digit {
    value: u8,
    /// How many cards of the value the search may take.
    count: u8,
    /// How many cards of the value the table holds.
    had: u8,
    /// The table positions of the cards the search may take.
    mask: u64,
    /// The digit's weight in a state's index.
    radix: u32,
}

/// The values smaller than the played one that lie on the table, smallest first, as the
/// digits of a mixed-radix number: a sub-multiset of the smaller cards (how many of each
/// value) is one number below `states`, its index.
#[derive(Debug)]
struct Digits {
    /// The played value: the sum of every group.
    target: u8,
    len: usize,
    digit: [Digit; 9],
    /// Below digit `d` (the digits `0..d`, all taken): how many cards, …
    below: [u8; 10],
    /// … the sum of those smaller than half the target, …
    small_below: [u32; 10],
    /// … and the least those others need from them (see [`Digits::demand`]).
    demand_below: [u32; 10],
    states: usize,
}

impl Digits {
    fn new(masks: &ValueMasks, target: u8) -> Digits {
        let mut digits = Digits::empty(target);
        for x in 1..target {
            let mask = masks[usize::from(x)];
            let count = mask.count_ones() as u8;
            digits.push(x, count, count, mask);
        }
        digits.finish();
        digits
    }

    fn empty(target: u8) -> Digits {
        Digits {
            target,
            len: 0,
            digit: [Digit::default(); 9],
            below: [0; 10],
            small_below: [0; 10],
            demand_below: [0; 10],
            states: 1,
        }
    }

    fn push(&mut self, value: u8, count: u8, had: u8, mask: u64) {
        if count > 0 {
            self.digit[self.len] = Digit {
                value,
                count,
                had,
                mask,
                radix: self.states as u32,
            };
            self.states *= usize::from(count) + 1;
            self.len += 1;
        }
    }

    fn finish(&mut self) {
        for d in 0..self.len {
            let count = self.digit[d].count;
            self.below[d + 1] = self.below[d] + count;
            self.small_below[d + 1] = self.small_below[d] + self.small(d, count);
            self.demand_below[d + 1] = self.demand_below[d] + self.demand(d, count);
        }
    }

    /// The number of cards the search may take.
    fn cards(&self) -> u8 {
        self.below[self.len]
    }

    /// The sum of `taken` cards of digit `d` if they are smaller than half the target.
    fn small(&self, d: usize, taken: u8) -> u32 {
        let x = self.digit[d].value;
        if 2 * x < self.target {
            u32::from(x) * u32::from(taken)
        } else {
            0
        }
    }

    /// The least sum of cards smaller than half the target that `taken` cards of digit `d`
    /// need as partners. A group holds at most one card larger than half the target, and
    /// the rest of it is smaller than half; two halves make a group, an odd one out needs
    /// half the target from smaller cards.
    fn demand(&self, d: usize, taken: u8) -> u32 {
        let x = self.digit[d].value;
        match (2 * x).cmp(&self.target) {
            Ordering::Greater => u32::from(self.target - x) * u32::from(taken),
            Ordering::Equal => u32::from(x) * u32::from(taken % 2),
            Ordering::Less => 0,
        }
    }

    /// Whether the cards of `taken` may split, by a finer count than [`Digits::demand`]: a
    /// card larger than half the target that needs `y` more takes it from cards of at most
    /// `y`, so for every `y`, what those cards need is at most the sum of the cards of at
    /// most `y`.
    fn may_split(&self, taken: &[u8; 9]) -> bool {
        // Per `y`: the sum of the small cards of value `y`, less what the large cards
        // needing exactly `y` need.
        let mut balance = [0i32; 5];
        for (d, digit) in self.digit[..self.len].iter().enumerate() {
            let (x, t) = (digit.value, i32::from(taken[d]));
            if 2 * x < self.target {
                balance[usize::from(x)] += i32::from(x) * t;
            } else if 2 * x > self.target {
                let y = self.target - x;
                balance[usize::from(y)] -= i32::from(y) * t;
            }
        }
        let mut running = 0;
        balance.iter().all(|&b| {
            running += b;
            running >= 0
        })
    }

    /// The positions of the oldest `taken[d]` cards of each digit.
    fn positions(&self, taken: &[u8; 9]) -> u64 {
        self.digit[..self.len]
            .iter()
            .zip(taken)
            .fold(0, |positions, (digit, &t)| {
                positions | lowest_bits(digit.mask, t)
            })
    }

    /// Whether some group of two or more cards sums to the target at all.
    fn some_group(&self) -> bool {
        // Which sums some subset of the smaller cards reaches, as a bitset.
        let mut reachable: u32 = 1;
        for digit in &self.digit[..self.len] {
            for _ in 0..digit.count {
                reachable |= reachable << digit.value;
            }
        }
        reachable & (1 << self.target) != 0
    }

    fn largest_cover(&self) -> Cover {
        if !self.some_group() {
            return Cover {
                positions: 0,
                alternatives: false,
            };
        }
        // Most tables leave out at most one card: try that on the table as it is.
        if let Some(cover) = search(self, 0..=1) {
            return cover;
        }
        // Set aside what no cover can hold; many more tables leave out two cards, and
        // those with many small cards are the cheapest to search that way.
        let pruned = self.pruned();
        if let Some(level) = 2u8.checked_sub(self.cards() - pruned.cards())
            && let Some(cover) = search(&pruned, level..=level)
        {
            return cover;
        }
        // Many must stay: count how many cards the best cover takes, and walk the covers
        // of that size.
        match Groups::new(&pruned) {
            Some(groups) => groups.largest_cover(),
            // Only a table with more than 15 cards of one value gets here.
            None => search(&pruned, 0..=u8::MAX).expect("leaving every card out splits"),
        }
    }

    /// The same cards less those no cover can hold: a card with no partners among the
    /// others, and the copies of a card larger than half the target beyond what the
    /// smaller cards can complete. Every cover of these digits' table is a cover here; the
    /// oldest copies of each value are kept, so the canonical cover is the same.
    fn pruned(&self) -> Digits {
        let target = self.target;
        let digits = &self.digit[..self.len];
        let mut count: [u8; 9] = std::array::from_fn(|d| self.digit[d].count);
        loop {
            let mut changed = false;
            for (d, digit) in digits.iter().enumerate() {
                if count[d] == 0 {
                    continue;
                }
                let (x, need) = (digit.value, target - digit.value);
                // Which sums the other cards reach.
                let mut reachable: u32 = 1;
                for (e, other) in digits.iter().enumerate() {
                    for _ in 0..count[e] - u8::from(e == d) {
                        reachable |= reachable << other.value;
                    }
                }
                let mut cap = if reachable & (1 << need) == 0 {
                    0
                } else {
                    count[d]
                };
                // A group holds at most one card above half the target; the rest of each
                // such group comes from cards of at most `need`.
                if 2 * x > target {
                    let partners: u32 = digits
                        .iter()
                        .zip(&count)
                        .filter(|(other, _)| other.value <= need)
                        .map(|(other, &c)| u32::from(other.value) * u32::from(c))
                        .sum();
                    cap = cap.min((partners / u32::from(need)).min(255) as u8);
                }
                if cap < count[d] {
                    count[d] = cap;
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
        let mut pruned = Digits::empty(target);
        for (digit, &c) in digits.iter().zip(&count) {
            pruned.push(digit.value, c, digit.had, lowest_bits(digit.mask, c));
        }
        pruned.finish();
        pruned
    }
}

/// Counts per value packed in 5-bit lanes (value `x` in bits `5(x-1)..5x`), so that whether
/// one multiset holds another is a single subtraction. Counts stay below 16, the lane's
/// top bit free.
type Packed = u64;

/// The top bit of the lanes of values 1..=9.
const LANE_TOPS: Packed = 0b10000_10000_10000_10000_10000_10000_10000_10000_10000;

/// The largest count a lane holds.
const LANE_MAX: u8 = 15;

const fn lane(x: u8) -> u32 {
    5 * (x as u32 - 1)
}

/// Whether `t` holds every card of `g`.
fn holds(t: Packed, g: Packed) -> bool {
    ((t | LANE_TOPS) - g) & LANE_TOPS == LANE_TOPS
}

/// One way to write a sum as two or more smaller values.
#[derive(Debug, Clone, Copy)]
struct Partition {
    parts: Packed,
    largest: u8,
    size: u8,
}

/// Every partition of 2..=10 into two or more smaller parts, by sum and then by largest
/// part, largest first: sum `v`'s are `PARTITIONS[PARTITION_FIRST[v]..PARTITION_FIRST[v + 1]]`.
static PARTITIONS: [Partition; PARTITION_COUNT] = partitions().0;
static PARTITION_FIRST: [usize; 12] = partitions().1;

/// Partitions of 2..=10 into smaller parts: 1 + 2 + 4 + 6 + 10 + 14 + 21 + 29 + 41.
const PARTITION_COUNT: usize = 128;

const fn partitions() -> ([Partition; PARTITION_COUNT], [usize; 12]) {
    let mut list = [Partition {
        parts: 0,
        largest: 0,
        size: 0,
    }; PARTITION_COUNT];
    let mut first = [0; 12];
    let mut len = 0;
    let mut sum = 0u8;
    while sum <= 10 {
        first[sum as usize] = len;
        let mut largest = sum.saturating_sub(1);
        while largest >= 1 {
            let head = 1 << lane(largest);
            len = extend(&mut list, len, sum - largest, largest, head, largest, 1);
            largest -= 1;
        }
        sum += 1;
    }
    first[11] = len;
    assert!(len == PARTITION_COUNT);
    (list, first)
}

/// Adds to `list` the partitions completing `parts` (still needing `need`) with parts up
/// to `top`; answers the new length.
const fn extend(
    list: &mut [Partition; PARTITION_COUNT],
    mut len: usize,
    need: u8,
    top: u8,
    parts: Packed,
    largest: u8,
    size: u8,
) -> usize {
    if need == 0 {
        if size >= 2 {
            list[len] = Partition {
                parts,
                largest,
                size,
            };
            len += 1;
        }
        return len;
    }
    let mut part = if top < need { top } else { need };
    while part >= 1 {
        let more = parts + (1 << lane(part));
        len = extend(list, len, need - part, part, more, largest, size + 1);
        part -= 1;
    }
    len
}

/// One group the digits' cards can form.
#[derive(Debug, Clone, Copy, Default)]
struct Group {
    parts: Packed,
    /// Its weight in a state's index.
    delta: u32,
    size: u8,
}

/// Every group the digits' cards can form, by their largest value, and the most cards a
/// set of disjoint groups takes from each state (memoized): the largest card left is
/// either left out with all its copies or in one of the groups it can head.
struct Groups {
    list: [Group; 41],
    /// The groups headed by value `x` are `list[first[x]..first[x - 1]]`.
    first: [usize; 11],
    /// Per value, the weight of its digit in a state's index.
    radix: [u32; 11],
    /// Per value, the positions of its cards and how many the table holds.
    mask: [u64; 11],
    had: [u8; 11],
    all: Packed,
    states: usize,
}

impl Groups {
    /// The groups of `digits`, or `None` when a value has more copies than a lane holds.
    fn new(digits: &Digits) -> Option<Groups> {
        let mut groups = Groups {
            list: [Group::default(); 41],
            first: [0; 11],
            radix: [0; 11],
            mask: [0; 11],
            had: [0; 11],
            all: 0,
            states: digits.states,
        };
        for digit in &digits.digit[..digits.len] {
            if digit.count > LANE_MAX {
                return None;
            }
            groups.all |= Packed::from(digit.count) << lane(digit.value);
            let x = usize::from(digit.value);
            groups.radix[x] = digit.radix;
            groups.mask[x] = digit.mask;
            groups.had[x] = digit.had;
        }
        let target = usize::from(digits.target);
        let mut len = 0;
        let mut head = digits.target;
        for partition in &PARTITIONS[PARTITION_FIRST[target]..PARTITION_FIRST[target + 1]] {
            while head > partition.largest {
                head -= 1;
                groups.first[usize::from(head)] = len;
            }
            if holds(groups.all, partition.parts) {
                let mut delta = 0;
                let mut parts = partition.parts;
                while parts != 0 {
                    let at = parts.trailing_zeros() / 5;
                    let copies = (parts >> (5 * at)) as u32 & 31;
                    delta += copies * groups.radix[at as usize + 1];
                    parts &= !(31 << (5 * at));
                }
                groups.list[len] = Group {
                    parts: partition.parts,
                    delta,
                    size: partition.size,
                };
                len += 1;
            }
        }
        while head > 0 {
            head -= 1;
            groups.first[usize::from(head)] = len;
        }
        Some(groups)
    }

    /// The canonical largest cover: how many cards it takes, then every cover of that
    /// size, walked as [`Groups::most_from`] builds them, offered to [`Canonical`].
    fn largest_cover(&self) -> Cover {
        // Most pruned tables have a few hundred states: zero no more than needed.
        let mut small_memo = [0u8; 256];
        let mut stack_memo;
        let mut heap_memo = Vec::new();
        let memo: &mut [u8] = if self.states <= small_memo.len() {
            &mut small_memo[..self.states]
        } else if self.states <= 2048 {
            stack_memo = [0u8; 2048];
            &mut stack_memo[..self.states]
        } else {
            heap_memo.resize(self.states, 0);
            &mut heap_memo
        };
        let top = (self.states - 1) as u32;
        let most = self.most_from(memo, self.all, top);
        let mut canonical = Canonical::default();
        let mut walk = Walk {
            groups: self,
            memo,
            canonical: &mut canonical,
        };
        walk.collect(self.all, top, most, 0, None);
        canonical
            .cover()
            .expect("a cover of the largest size exists")
    }

    /// The most from state `t` (index `index`); `memo` holds one more than each known.
    #[inline(always)]
    fn most_from(&self, memo: &mut [u8], t: Packed, index: u32) -> u8 {
        match memo[index as usize] {
            _ if t == 0 => 0,
            0 => self.most_unknown(memo, t, index),
            known => known - 1,
        }
    }

    /// [`Groups::most_from`] for a state not yet in `memo`.
    fn most_unknown(&self, memo: &mut [u8], t: Packed, index: u32) -> u8 {
        let x = ((Packed::BITS - 1 - t.leading_zeros()) / 5 + 1) as u8;
        let copies = (t >> lane(x)) as u32 & 31;
        let rest = t & !(31 << lane(x));
        let x = usize::from(x);
        let mut most = self.most_from(memo, rest, index - copies * self.radix[x]);
        for group in &self.list[self.first[x]..self.first[x - 1]] {
            if holds(t, group.parts) {
                let with = group.size + self.most_from(memo, t - group.parts, index - group.delta);
                most = most.max(with);
            }
        }
        memo[index as usize] = most + 1;
        most
    }
}

/// The walk over the covers of a given size in [`Groups::largest_cover`].
struct Walk<'a> {
    groups: &'a Groups,
    memo: &'a mut [u8],
    canonical: &'a mut Canonical,
}

impl Walk<'_> {
    /// Visits every cover that takes `need` more cards from state `t` (index `index`);
    /// `taken` holds the cards taken on the way here. Groups headed by one value are taken
    /// in the order of the list (from `after`, the last one's place, when the previous
    /// group had the same head), so each set of groups is reached once.
    fn collect(&mut self, t: Packed, index: u32, need: u8, taken: Packed, after: Option<usize>) {
        let groups = self.groups;
        if need == 0 {
            self.offer(taken);
            return;
        }
        let x = ((Packed::BITS - 1 - t.leading_zeros()) / 5 + 1) as u8;
        let copies = (t >> lane(x)) as u32 & 31;
        let rest = t & !(31 << lane(x));
        let x = usize::from(x);
        let rest_index = index - copies * groups.radix[x];
        if groups.most_from(self.memo, rest, rest_index) >= need {
            self.collect(rest, rest_index, need, taken, None);
        }
        for g in after.unwrap_or(groups.first[x])..groups.first[x - 1] {
            let group = groups.list[g];
            if group.size <= need && holds(t, group.parts) {
                let (t, index) = (t - group.parts, index - group.delta);
                if group.size + groups.most_from(self.memo, t, index) >= need {
                    self.collect(t, index, need - group.size, taken + group.parts, Some(g));
                }
            }
        }
    }

    fn offer(&mut self, taken: Packed) {
        let groups = self.groups;
        let mut positions = 0;
        let mut partial = false;
        for x in 1..=9u8 {
            let took = ((taken >> lane(x)) & 31) as u8;
            positions |= lowest_bits(groups.mask[usize::from(x)], took);
            partial |= took > 0 && took < groups.had[usize::from(x)];
        }
        if self.canonical.matters(positions) {
            self.canonical.offer(positions, partial);
        }
    }
}

/// The canonical largest cover of `digits` if it leaves out a number of cards in `levels`.
fn search(digits: &Digits, levels: std::ops::RangeInclusive<u8>) -> Option<Cover> {
    // Whether each sub-multiset splits, once known: two bitsets indexed by state. Up to
    // about a dozen smaller cards they fit the stack.
    let words = digits.states.div_ceil(64);
    let mut stack_memo = [0u64; 2 * STACK_WORDS];
    let mut heap_memo = Vec::new();
    let memo: &mut [u64] = if words <= STACK_WORDS {
        &mut stack_memo[..2 * words]
    } else {
        heap_memo.resize(2 * words, 0);
        &mut heap_memo
    };
    let (known, splits) = memo.split_at_mut(words);
    let mut search = Search {
        digits,
        known,
        splits,
        canonical: Canonical::default(),
    };
    search.largest(levels)
}

/// What stays on the table in [`Search::leave_out`], over the digits decided so far.
#[derive(Clone, Copy)]
struct Stay {
    /// The index of everything that stays (undecided digits count whole).
    index: u32,
    /// The sum of everything that stays, modulo the target.
    residue: u8,
    /// The sum of the decided cards smaller than half the target.
    small: u32,
    /// What the decided cards need from those (see [`Digits::demand`]).
    demand: u32,
}

/// Memo words on the stack: 4,096 states, more than any 12-card table has (at most 1,728).
const STACK_WORDS: usize = 64;

/// The search for the largest sub-multiset of the smaller cards that splits into groups:
/// leave out none, then one card, then two, …; the first count that works is the answer,
/// and every multiset left out of that size is tried, to find the canonical cover and
/// whether another exists. Whether a multiset splits is memoized, so every state is
/// searched at most once in all.
struct Search<'a> {
    digits: &'a Digits,
    known: &'a mut [u64],
    splits: &'a mut [u64],
    canonical: Canonical,
}

impl Search<'_> {
    fn largest(&mut self, levels: std::ops::RangeInclusive<u8>) -> Option<Cover> {
        let digits = self.digits;
        let mut all = [0u8; 9];
        let mut total = 0u32;
        for (d, digit) in digits.digit[..digits.len].iter().enumerate() {
            all[d] = digit.count;
            total += u32::from(digit.value) * u32::from(digit.count);
        }
        let at = Stay {
            index: (digits.states - 1) as u32,
            residue: (total % u32::from(digits.target)) as u8,
            small: 0,
            demand: 0,
        };
        for left_out in levels {
            if left_out > digits.cards() {
                break;
            }
            self.leave_out(digits.len, left_out, &mut all.clone(), at);
            if let Some(cover) = self.canonical.cover() {
                return Some(cover);
            }
        }
        None
    }

    /// Leaves `k` more cards out of the digits below `d`, the largest first; `taken` is what
    /// stays to be covered, `at` what is known of it (the digits from `d` on are decided).
    fn leave_out(&mut self, d: usize, k: u8, taken: &mut [u8; 9], at: Stay) {
        let digits = self.digits;
        // What the undecided digits add if none of them is left out.
        let small = at.small + digits.small_below[d];
        if k == 0 {
            if at.residue == 0 && at.demand + digits.demand_below[d] <= small {
                self.consider(taken, at.index);
            }
            return;
        }
        // Leaving more out only lowers what the larger cards need and the smaller offer.
        if digits.below[d] < k || at.demand > small {
            return;
        }
        let e = d - 1;
        let digit = digits.digit[e];
        let target = digits.target;
        // The sum of the `l` cards left out, modulo the target.
        let mut off = 0;
        for l in 0..=digit.count.min(k) {
            let stays = digit.count - l;
            taken[e] = stays;
            let next = Stay {
                index: at.index - u32::from(l) * digit.radix,
                residue: if at.residue >= off {
                    at.residue - off
                } else {
                    at.residue + target - off
                },
                small: at.small + digits.small(e, stays),
                demand: at.demand + digits.demand(e, stays),
            };
            self.leave_out(e, k - l, taken, next);
            off += digit.value;
            if off >= target {
                off -= target;
            }
        }
        taken[e] = digit.count;
    }

    fn consider(&mut self, taken: &mut [u8; 9], index: u32) {
        let digits = self.digits;
        if !digits.may_split(taken) {
            return;
        }
        let positions = digits.positions(taken);
        if self.canonical.matters(positions) && self.splits(taken, index) {
            // Another card of the same value could be taken instead.
            let partial = digits.digit[..digits.len]
                .iter()
                .zip(taken.iter())
                .any(|(digit, &t)| t > 0 && t < digit.had);
            self.canonical.offer(positions, partial);
        }
    }

    /// Whether `t` (index `index`) splits into groups of the target. `t` is restored.
    fn splits(&mut self, t: &mut [u8; 9], index: u32) -> bool {
        if index == 0 {
            return true;
        }
        let (word, bit) = (index as usize / 64, 1u64 << (index % 64));
        if self.known[word] & bit != 0 {
            return self.splits[word] & bit != 0;
        }
        // The largest card left must be in some group; build it from parts no larger.
        let digits = self.digits;
        let d = (0..digits.len)
            .rev()
            .find(|&d| t[d] > 0)
            .expect("index > 0");
        let digit = digits.digit[d];
        t[d] -= 1;
        let ok = self.complete(t, index - digit.radix, digits.target - digit.value, d);
        t[d] += 1;
        self.known[word] |= bit;
        if ok {
            self.splits[word] |= bit;
        }
        ok
    }

    /// Whether a group still needing `need`, from digits up to `top`, can be completed so
    /// that the rest of `t` splits.
    fn complete(&mut self, t: &mut [u8; 9], index: u32, need: u8, top: usize) -> bool {
        if need == 0 {
            return self.splits(t, index);
        }
        let digits = self.digits;
        for d in (0..=top).rev() {
            let digit = digits.digit[d];
            if t[d] == 0 || digit.value > need {
                continue;
            }
            t[d] -= 1;
            let ok = self.complete(t, index - digit.radix, need - digit.value, d);
            t[d] += 1;
            if ok {
                return true;
            }
        }
        false
    }
}

/// The canonical cover among those of the largest size found so far: the one whose sorted
/// positions come first.
#[derive(Debug, Default)]
struct Canonical {
    best: Option<u64>,
    /// Whether a different set of the same size exists.
    alternatives: bool,
}

impl Canonical {
    /// Whether a cover at `positions` could change the answer: once another cover is known
    /// to exist, only a canonically smaller one does.
    fn matters(&self, positions: u64) -> bool {
        !self.alternatives
            || self
                .best
                .is_none_or(|b| lexicographically_smaller(positions, b))
    }

    /// A cover at `positions`; `partial` when it takes some but not all cards of a value.
    fn offer(&mut self, positions: u64, partial: bool) {
        self.alternatives |= partial;
        match self.best {
            Some(best) if best == positions => {}
            Some(best) => {
                self.alternatives = true;
                if lexicographically_smaller(positions, best) {
                    self.best = Some(positions);
                }
            }
            None => self.best = Some(positions),
        }
    }

    fn cover(&self) -> Option<Cover> {
        self.best.map(|positions| Cover {
            positions,
            alternatives: self.alternatives,
        })
    }
}

/// The `n` lowest set bits of `mask`.
fn lowest_bits(mut mask: u64, n: u8) -> u64 {
    let mut out = 0;
    for _ in 0..n {
        let low = mask & mask.wrapping_neg();
        out |= low;
        mask ^= low;
    }
    out
}

/// For two position sets of equal size: whether `a`'s sorted positions come first.
fn lexicographically_smaller(a: u64, b: u64) -> bool {
    let differ = a ^ b;
    differ != 0 && a & differ & differ.wrapping_neg() != 0
}

/// Whether the cards counted in `counts` (values 1..=`value`) split exactly into disjoint
/// groups that each sum to `value`. `counts` is restored before returning.
fn can_partition(counts: &mut Counts, value: u8) -> bool {
    // The largest card left must be in some group; build that group from parts no larger.
    let Some(largest) = (1..=usize::from(value)).rev().find(|&x| counts[x] > 0) else {
        return true;
    };
    counts[largest] -= 1;
    let ok = complete_group(counts, value - largest as u8, largest, value);
    counts[largest] += 1;
    ok
}

fn complete_group(counts: &mut Counts, need: u8, max_part: usize, value: u8) -> bool {
    if need == 0 {
        return can_partition(counts, value);
    }
    for part in (1..=max_part.min(usize::from(need))).rev() {
        if counts[part] > 0 {
            counts[part] -= 1;
            let ok = complete_group(counts, need - part as u8, part, value);
            counts[part] += 1;
            if ok {
                return true;
            }
        }
    }
    false
}

fn positions_to_cards(table: &[Card], mut positions: u64) -> CardSet {
    let mut cards = CardSet::EMPTY;
    while positions != 0 {
        cards.insert(table[positions.trailing_zeros() as usize]);
        positions &= positions - 1;
    }
    cards
}

fn all_cards(table: &[Card]) -> CardSet {
    table.iter().copied().collect()
}

/// What `card` takes from `table` when the player names no choice (the canonical capture).
pub fn capture(table: &[Card], card: Card, settings: &Settings) -> Capture {
    let basra_if_cleared = |taken: CardSet| {
        (!table.is_empty() && taken.len() == table.len()).then_some(BasraKind::Basra)
    };
    if table.is_empty() {
        return Capture {
            taken: CardSet::EMPTY,
            basra: None,
            alternatives: false,
        };
    }
    if card == Card::KOMI {
        let basra = komi_basra_applies(table, settings.komi_basra).then_some(BasraKind::Komi);
        return Capture {
            taken: all_cards(table),
            basra,
            alternatives: false,
        };
    }
    let rank = card.rank();
    if rank == Rank::JACK {
        let jack_basra = table.len() == 1 && table[0].is_jack();
        return Capture {
            taken: all_cards(table),
            basra: jack_basra.then_some(BasraKind::Jack),
            alternatives: false,
        };
    }
    match card.value() {
        Some(value) => {
            let cover = largest_cover(table, value);
            let taken = positions_to_cards(table, cover.positions);
            Capture {
                taken,
                basra: basra_if_cleared(taken),
                alternatives: cover.alternatives,
            }
        }
        None => {
            let taken: CardSet = table.iter().copied().filter(|c| c.rank() == rank).collect();
            Capture {
                taken,
                basra: basra_if_cleared(taken),
                alternatives: false,
            }
        }
    }
}

/// What `card` takes from `table` when the player names the cards to take. The choice must
/// be a legal capture: the largest (or, with `allow_partial_capture`, any non-empty) set of
/// groups of the card's value; J, Q, K and the Komi take a fixed set that can only be
/// named as it is.
pub fn chosen_capture(
    table: &[Card],
    card: Card,
    choice: CardSet,
    settings: &Settings,
) -> Result<Capture, RuleError> {
    let canonical = capture(table, card, settings);
    let on_table = all_cards(table);
    if let Some(stray) = choice.difference(on_table).iter().next() {
        return Err(RuleError::NotOnTable(stray));
    }
    let value = match card.value() {
        Some(value) if card != Card::KOMI || table.is_empty() => value,
        _ => {
            return if choice == canonical.taken {
                Ok(canonical)
            } else {
                Err(RuleError::FixedCapture {
                    card,
                    takes: canonical.taken,
                })
            };
        }
    };
    let mut counts: Counts = [0; 11];
    let mut total = 0u32;
    for named in choice {
        match named.value().filter(|&x| x <= value) {
            Some(x) => {
                counts[usize::from(x)] += 1;
                total += u32::from(x);
            }
            None => return Err(RuleError::NotInSum { card: named, value }),
        }
    }
    if !total.is_multiple_of(u32::from(value)) || !can_partition(&mut counts, value) {
        return Err(RuleError::NotGroups { value });
    }
    let largest = canonical.taken.len();
    let size_ok = if settings.allow_partial_capture {
        !choice.is_empty() || largest == 0
    } else {
        choice.len() == largest
    };
    if !size_ok {
        return Err(RuleError::NotLargest {
            named: choice.len(),
            largest,
        });
    }
    let cleared = !table.is_empty() && choice.len() == table.len();
    Ok(Capture {
        taken: choice,
        basra: cleared.then_some(BasraKind::Basra),
        alternatives: canonical.alternatives,
    })
}

/// Whether a Komi played onto this non-empty table is a Komi Basra (RULES.md §14).
pub fn komi_basra_applies(table: &[Card], rule: KomiBasra) -> bool {
    if table.is_empty() {
        return false;
    }
    let mut counts: Counts = [0; 11];
    let mut total = 0u32;
    let mut largest = 0u8;
    let mut all_numbers = true;
    for card in table {
        match card.value() {
            Some(x) => {
                counts[usize::from(x)] += 1;
                total += u32::from(x);
                largest = largest.max(x);
            }
            None => all_numbers = false,
        }
    }
    match rule {
        KomiBasra::SingleCard => table.len() == 1,
        KomiBasra::SumAtMost10 => all_numbers && total <= 10,
        KomiBasra::AnyValue if all_numbers => (largest..=10)
            .any(|v| total.is_multiple_of(u32::from(v)) && can_partition(&mut counts, v)),
        KomiBasra::AnyValue => {
            let rank = table[0].rank();
            (rank == Rank::QUEEN || rank == Rank::KING) && table.iter().all(|c| c.rank() == rank)
        }
    }
}

/// Whether some single card other than a sweeper could take all of `table` as a Basra —
/// the "easy Basra" a careful player does not leave behind.
pub fn clearable(table: &[Card]) -> bool {
    komi_basra_applies(table, KomiBasra::AnyValue) || (table.len() == 1 && table[0].is_jack())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cards(text: &str) -> Vec<Card> {
        text.split_whitespace()
            .map(|c| c.parse().unwrap())
            .collect()
    }

    fn set(text: &str) -> CardSet {
        cards(text).into_iter().collect()
    }

    fn rules() -> Settings {
        Settings::default()
    }

    #[test]
    fn lowest_bits_and_lexicographic_order() {
        assert_eq!(lowest_bits(0b1011_0100, 2), 0b0001_0100);
        assert_eq!(lowest_bits(0b1011_0100, 0), 0);
        // {0, 3} comes before {1, 2}.
        assert!(lexicographically_smaller(0b1001, 0b0110));
        assert!(!lexicographically_smaller(0b0110, 0b1001));
        assert!(!lexicographically_smaller(0b0110, 0b0110));
    }

    #[test]
    fn partition_into_groups() {
        let mut counts = [0u8; 11];
        counts[5] = 1;
        counts[4] = 1;
        counts[1] = 1;
        counts[10] = 1;
        assert!(can_partition(&mut counts, 10));
        counts[1] = 0;
        assert!(!can_partition(&mut counts, 10));
        assert_eq!(counts[5], 1, "counts are restored");
    }

    #[test]
    fn the_rules_example_takes_the_eight_and_ace_plus_seven() {
        let table = cards("AS 7H KC 8D");
        let got = capture(&table, "8S".parse().unwrap(), &rules());
        assert_eq!(got.taken, set("AS 7H 8D"));
        assert_eq!(got.basra, None);
        assert!(!got.alternatives);
    }

    #[test]
    fn nine_takes_eight_plus_ace_from_the_seed_example() {
        let table = cards("AS 7H KC 8D");
        let got = capture(&table, "9S".parse().unwrap(), &rules());
        assert_eq!(got.taken, set("AS 8D"));
    }

    #[test]
    fn ten_clears_ten_five_four_one_as_a_basra() {
        let table = cards("10H 5C 4D AS");
        let got = capture(&table, "10S".parse().unwrap(), &rules());
        assert_eq!(got.taken, set("10H 5C 4D AS"));
        assert_eq!(got.basra, Some(BasraKind::Basra));
    }

    #[test]
    fn eight_clears_eight_seven_one_as_a_basra() {
        let table = cards("8H 7C AD");
        let got = capture(&table, "8S".parse().unwrap(), &rules());
        assert_eq!(got.basra, Some(BasraKind::Basra));
    }

    #[test]
    fn most_cards_beats_fewer_groups() {
        // 6 alone takes {6}; 1+2+3 takes three cards; both can be taken together.
        let table = cards("6C AD 2H 3S 4C");
        let got = capture(&table, "6S".parse().unwrap(), &rules());
        // Groups of 6: {6}, {1,2,3}, {2,4}. Largest disjoint: {6} + {1,2,3} = 4 cards,
        // or {6} + {2,4} = 3 cards.
        assert_eq!(got.taken, set("6C AD 2H 3S"));
    }

    #[test]
    fn disjoint_pairs_are_all_taken() {
        // 5 = 2+3 = 1+4: the pairs are disjoint, so both are taken.
        let table = cards("2C AD 4H 3S");
        let got = capture(&table, "5S".parse().unwrap(), &rules());
        assert_eq!(got.taken, set("2C AD 4H 3S"));
        assert_eq!(got.basra, Some(BasraKind::Basra));
        assert!(!got.alternatives);
    }

    #[test]
    fn canonical_tie_break_prefers_the_oldest_positions() {
        // 7 = 1+2+4 = 1+3+3 = 3+4; the largest captures are three cards, sharing the ace:
        // positions [0,1,2] and [0,3,4]. The first compares smaller.
        let table = cards("AC 2D 4H 3S 3C");
        let got = capture(&table, "7S".parse().unwrap(), &rules());
        assert_eq!(got.taken, set("AC 2D 4H"));
        assert!(got.alternatives);
    }

    #[test]
    fn equal_values_take_the_oldest_card() {
        let table = cards("3C 3D 3H");
        let got = capture(&table, "6S".parse().unwrap(), &rules());
        assert_eq!(got.taken, set("3C 3D"));
        assert!(got.alternatives);
    }

    #[test]
    fn same_rank_is_a_group_of_one() {
        let table = cards("5C 5D 2H 3S");
        let got = capture(&table, "5S".parse().unwrap(), &rules());
        assert_eq!(got.taken, set("5C 5D 2H 3S"));
        assert_eq!(got.basra, Some(BasraKind::Basra));
    }

    #[test]
    fn queen_and_king_take_only_their_rank() {
        let table = cards("QC 2D QH KS");
        let queen = capture(&table, "QS".parse().unwrap(), &rules());
        assert_eq!(queen.taken, set("QC QH"));
        assert_eq!(queen.basra, None);
        let king = capture(&cards("KC"), "KS".parse().unwrap(), &rules());
        assert_eq!(king.basra, Some(BasraKind::Basra));
        let nothing = capture(&cards("2D QH"), "KS".parse().unwrap(), &rules());
        assert!(nothing.taken.is_empty());
    }

    #[test]
    fn jack_sweeps_but_is_a_basra_only_onto_a_lone_jack() {
        let sweep = capture(&cards("2D QH 9C"), "JS".parse().unwrap(), &rules());
        assert_eq!(sweep.taken, set("2D QH 9C"));
        assert_eq!(sweep.basra, None);
        let jack = capture(&cards("JD"), "JS".parse().unwrap(), &rules());
        assert_eq!(jack.basra, Some(BasraKind::Jack));
        let two = capture(&cards("JD 2C"), "JS".parse().unwrap(), &rules());
        assert_eq!(two.basra, None);
        let empty = capture(&[], "JS".parse().unwrap(), &rules());
        assert!(empty.taken.is_empty() && empty.basra.is_none());
    }

    #[test]
    fn komi_sweeps_and_is_a_basra_onto_tables_one_card_could_clear() {
        let komi = Card::KOMI;
        let r = rules();
        let single = capture(&cards("9C"), komi, &r);
        assert_eq!(single.basra, Some(BasraKind::Komi));
        let groups = capture(&cards("2C 4D 3H 3S"), komi, &r);
        assert_eq!(groups.basra, Some(BasraKind::Komi), "2+4 and 3+3 make 6");
        let queens = capture(&cards("QC QD"), komi, &r);
        assert_eq!(queens.basra, Some(BasraKind::Komi));
        let mixed = capture(&cards("QC KD"), komi, &r);
        assert_eq!(mixed.basra, None);
        assert_eq!(mixed.taken, set("QC KD"));
        let uneven = capture(&cards("2C 9D"), komi, &r);
        assert_eq!(uneven.basra, None, "2+9 = 11 splits into no common sum");
        let with_jack = capture(&cards("JC"), komi, &r);
        assert_eq!(with_jack.basra, None);
        let on_empty = capture(&[], komi, &r);
        assert!(on_empty.taken.is_empty() && on_empty.basra.is_none());
    }

    #[test]
    fn komi_basra_settings() {
        use KomiBasra::*;
        let t = |text: &str| cards(text);
        assert!(komi_basra_applies(&t("6C 6D"), AnyValue));
        assert!(!komi_basra_applies(&t("6C 6D"), SumAtMost10));
        assert!(komi_basra_applies(&t("6C 4D"), SumAtMost10));
        assert!(!komi_basra_applies(&t("QC"), SumAtMost10));
        assert!(komi_basra_applies(&t("QC"), SingleCard));
        assert!(komi_basra_applies(&t("8C"), SingleCard));
        assert!(
            komi_basra_applies(&t("JC"), SingleCard),
            "a lone J qualifies"
        );
        assert!(!komi_basra_applies(&t("6C 4D"), SingleCard));
    }

    #[test]
    fn a_komi_lying_on_the_table_is_an_ordinary_seven() {
        let got = capture(&[Card::KOMI], "7S".parse().unwrap(), &rules());
        assert_eq!(got.taken, set("7D"));
        assert_eq!(got.basra, Some(BasraKind::Basra));
        let got = capture(&cards("7D AC"), "8S".parse().unwrap(), &rules());
        assert_eq!(got.taken, set("7D AC"));
    }

    #[test]
    fn named_choices_must_be_largest_groups() {
        let table = cards("AC 2D 4H 3S 3C");
        let r = rules();
        let seven = "7S".parse().unwrap();
        let other = chosen_capture(&table, seven, set("AC 3S 3C"), &r).unwrap();
        assert_eq!(other.taken, set("AC 3S 3C"));
        assert_eq!(
            chosen_capture(&table, seven, set("AC 2D 3S"), &r),
            Err(RuleError::NotGroups { value: 7 })
        );
        assert_eq!(
            chosen_capture(&table, seven, set("3S 4H"), &r),
            Err(RuleError::NotLargest {
                named: 2,
                largest: 3
            })
        );
        assert_eq!(
            chosen_capture(&table, seven, set("9S"), &r),
            Err(RuleError::NotOnTable("9S".parse().unwrap()))
        );
        let five = "5S".parse().unwrap();
        let table = cards("AD 4H 5C");
        assert_eq!(
            chosen_capture(&table, five, set("5C"), &r),
            Err(RuleError::NotLargest {
                named: 1,
                largest: 3
            })
        );
        let partial = Settings {
            allow_partial_capture: true,
            ..r
        };
        assert_eq!(
            chosen_capture(&table, five, set("5C"), &partial)
                .unwrap()
                .taken,
            set("5C")
        );
        assert_eq!(
            chosen_capture(&table, five, CardSet::EMPTY, &partial),
            Err(RuleError::NotLargest {
                named: 0,
                largest: 3
            })
        );
        let table = cards("QC 5H");
        assert!(matches!(
            chosen_capture(&table, five, set("QC"), &r),
            Err(RuleError::NotInSum { .. })
        ));
        assert!(matches!(
            chosen_capture(&table, "JS".parse().unwrap(), set("QC"), &r),
            Err(RuleError::FixedCapture { .. })
        ));
        assert!(chosen_capture(&table, "JS".parse().unwrap(), set("QC 5H"), &r).is_ok());
    }

    #[test]
    fn a_crowded_table_is_searched_exactly() {
        // 24 number cards; twelve must stay, and the search's state table is too big for
        // the stack: 6+4 four times and 5+5 twice, the 9s, 8s and 7s have no partners.
        let table: Vec<Card> = ["9", "8", "7", "6", "5", "4"]
            .iter()
            .flat_map(|rank| ["C", "D", "H", "S"].map(|suit| format!("{rank}{suit}")))
            .map(|text| text.parse().unwrap())
            .collect();
        let got = capture(&table, "10S".parse().unwrap(), &rules());
        let expected: CardSet = table[12..].iter().copied().collect();
        assert_eq!(got.taken, expected);
        assert!(!got.alternatives);
    }

    #[test]
    fn nothing_to_take_leaves_the_card() {
        let got = capture(&cards("9C 8D"), "5S".parse().unwrap(), &rules());
        assert!(got.taken.is_empty());
        let got = capture(&[], "5S".parse().unwrap(), &rules());
        assert!(got.taken.is_empty() && got.basra.is_none());
    }
}
