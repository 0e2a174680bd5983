//! What a played card takes (RULES.md §6–§14): the exact largest disjoint cover of number
//! cards, Q/K pairs, J and Komi sweeps, and which kind of Basra a play makes.
//!
//! The search works on counts per value, not on subsets of cards: cards of one value are
//! interchangeable for the size of a cover. Most tables split whole, or nearly: the search
//! first asks for the fewest cards (up to two) to leave out so that the rest splits into
//! groups of the played value. When more must stay, it searches the groups to take instead,
//! remembering the best of each count vector, then walks every cover of the largest size.
//! Among those, the canonical one takes the oldest table cards of each value, and covers
//! that differ in their counts per value are compared by their sorted positions. Up to about
//! a dozen smaller cards everything lives on the stack; nothing is allocated.

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
    let v = usize::from(value);
    let masks = value_masks(table, value);
    // A card of the played value is a group alone; taking it never costs another card.
    let forced = masks[v];
    let mut counts: Counts = [0; 11];
    let mut small_cards = 0u8;
    let mut small_total = 0u32;
    // Which sums some subset of the smaller cards reaches, as a bitset; bit v tells whether
    // any group of two or more cards exists at all.
    let mut reachable: u32 = 1;
    for x in 1..v {
        counts[x] = masks[x].count_ones() as u8;
        small_cards += counts[x];
        small_total += x as u32 * u32::from(counts[x]);
        for _ in 0..counts[x] {
            reachable |= reachable << x;
        }
    }
    if reachable & (1 << v) == 0 {
        return Cover {
            positions: forced,
            alternatives: false,
        };
    }
    // Most tables need at most two cards left out; try that before anything costlier.
    let mut search = ExclusionSearch {
        counts,
        value,
        small_total,
        canonical: Canonical::new(&masks, counts),
    };
    if let Some(cover) = search.fewest_left_out(0..=small_cards.min(2)) {
        return Cover {
            positions: forced | cover.positions,
            ..cover
        };
    }
    // Many cards must stay on the table: searching what to leave out would try too many
    // sets. Search the groups to take instead, remembering each state's best.
    let mut radix = [0u32; 11];
    let mut states = 1u32;
    for x in 1..v {
        radix[x] = states;
        states *= u32::from(counts[x]) + 1;
    }
    // Up to about 12 smaller cards of mixed values fit the stack table; more are rare.
    let mut stack_memo = [UNKNOWN; 4096];
    let mut heap_memo = Vec::new();
    let memo: &mut [u8] = if states as usize <= stack_memo.len() {
        &mut stack_memo[..states as usize]
    } else {
        heap_memo.resize(states as usize, UNKNOWN);
        &mut heap_memo
    };
    let mut search = CoverSearch {
        value,
        radix,
        memo,
        canonical: Canonical::new(&masks, counts),
    };
    let top = states - 1;
    let most = search.most(&mut counts, top);
    search.collect(&mut counts, top, most, &mut [0; 11], None);
    let cover = search.canonical.cover().expect("some cover always exists");
    Cover {
        positions: forced | cover.positions,
        ..cover
    }
}

const UNKNOWN: u8 = u8::MAX;

/// The largest value of the group just taken and the list of its other parts, packed.
type Signature = Option<(usize, u64)>;

/// The group being completed in [`CoverSearch::collect_group`].
struct Group {
    largest: usize,
    /// The previous group's signature when it had the same largest value.
    bound: Option<u64>,
    /// Cards still to take, this group included.
    target: u8,
}

/// The search over count vectors of the cards smaller than the played value: `most` finds
/// how many cards the best cover takes (memoized per state), `collect` walks every cover
/// of that size and keeps the canonical one.
struct CoverSearch<'a> {
    value: u8,
    radix: [u32; 11],
    memo: &'a mut [u8],
    canonical: Canonical<'a>,
}

impl CoverSearch<'_> {
    fn largest_present(&self, counts: &Counts) -> Option<usize> {
        (1..usize::from(self.value)).rev().find(|&x| counts[x] > 0)
    }

    /// The most cards that groups of `value` take from the cards in `counts` (state `index`).
    fn most(&mut self, counts: &mut Counts, index: u32) -> u8 {
        let Some(x) = self.largest_present(counts) else {
            return 0;
        };
        if self.memo[index as usize] != UNKNOWN {
            return self.memo[index as usize];
        }
        // Either every card of the largest value is left on the table, or one of them is in
        // a group whose other cards are no larger. (Copies are interchangeable, so "grouped
        // first, then the rest left" covers every cover once.)
        let copies = counts[x];
        counts[x] = 0;
        let left = self.most(counts, index - self.radix[x] * u32::from(copies));
        counts[x] = copies - 1;
        let rest = index - self.radix[x];
        let grouped = self.most_with_group(counts, rest, self.value - x as u8, x, 1);
        counts[x] = copies;
        let most = left.max(grouped);
        self.memo[index as usize] = most;
        most
    }

    /// The most cards taken when a group still needs `need` from parts up to `max_part` and
    /// holds `size` cards so far; 0 when the group cannot be completed.
    fn most_with_group(
        &mut self,
        counts: &mut Counts,
        index: u32,
        need: u8,
        max_part: usize,
        size: u8,
    ) -> u8 {
        if need == 0 {
            return size + self.most(counts, index);
        }
        let mut most = 0;
        for part in (1..=max_part.min(usize::from(need))).rev() {
            if counts[part] > 0 {
                counts[part] -= 1;
                let with = self.most_with_group(
                    counts,
                    index - self.radix[part],
                    need - part as u8,
                    part,
                    size + 1,
                );
                counts[part] += 1;
                most = most.max(with);
            }
        }
        most
    }

    /// Visits every cover that takes `target` more cards from `counts`; `taken` holds the
    /// counts taken on the way here. Groups sharing their largest value are visited in one
    /// order only (non-increasing `signature`), so each cover is reached once.
    fn collect(
        &mut self,
        counts: &mut Counts,
        index: u32,
        target: u8,
        taken: &mut Counts,
        previous: Signature,
    ) {
        let largest = self.largest_present(counts);
        let Some(x) = largest.filter(|_| target > 0) else {
            self.canonical.offer(taken);
            return;
        };
        let copies = counts[x];
        counts[x] = 0;
        let none_taken = index - self.radix[x] * u32::from(copies);
        if self.most(counts, none_taken) == target {
            self.collect(counts, none_taken, target, taken, None);
        }
        counts[x] = copies - 1;
        let bound = previous
            .filter(|&(value, _)| value == x)
            .map(|(_, sig)| sig);
        taken[x] += 1;
        let group = Group {
            largest: x,
            bound,
            target,
        };
        self.collect_group(
            counts,
            index - self.radix[x],
            self.value - x as u8,
            x,
            1,
            0,
            &group,
            taken,
        );
        taken[x] -= 1;
        counts[x] = copies;
    }

    #[allow(clippy::too_many_arguments)]
    fn collect_group(
        &mut self,
        counts: &mut Counts,
        index: u32,
        need: u8,
        max_part: usize,
        size: u8,
        signature: u64,
        group: &Group,
        taken: &mut Counts,
    ) {
        if need == 0 {
            let in_order = group.bound.is_none_or(|bound| signature <= bound);
            if in_order && size <= group.target && size + self.most(counts, index) == group.target {
                let previous = Some((group.largest, signature));
                self.collect(counts, index, group.target - size, taken, previous);
            }
            return;
        }
        for part in (1..=max_part.min(usize::from(need))).rev() {
            if counts[part] > 0 {
                counts[part] -= 1;
                taken[part] += 1;
                // Parts come in non-increasing order; a 4-bit digit each, padded with zeros
                // below, so comparing signatures compares part lists lexicographically.
                let digit = (part as u64) << (4 * (10 - u32::from(size)));
                self.collect_group(
                    counts,
                    index - self.radix[part],
                    need - part as u8,
                    part,
                    size + 1,
                    signature | digit,
                    group,
                    taken,
                );
                taken[part] -= 1;
                counts[part] += 1;
            }
        }
    }
}

/// Enumerates the multisets of smaller cards to leave out, `left_out` cards at a time.
struct ExclusionSearch<'a> {
    counts: Counts,
    value: u8,
    small_total: u32,
    canonical: Canonical<'a>,
}

impl ExclusionSearch<'_> {
    /// The canonical cover that leaves out the fewest cards, trying these many in turn.
    fn fewest_left_out(&mut self, tries: std::ops::RangeInclusive<u8>) -> Option<Cover> {
        for left_out in tries {
            let mut excluded = [0u8; 11];
            self.exclude(1, left_out, &mut excluded, 0);
            if let Some(cover) = self.canonical.cover() {
                return Some(cover);
            }
        }
        None
    }

    fn exclude(&mut self, x: usize, left_out: u8, excluded: &mut Counts, excluded_total: u32) {
        let v = usize::from(self.value);
        if left_out == 0 {
            self.consider(excluded, excluded_total);
            return;
        }
        if x >= v {
            return;
        }
        for k in 0..=self.counts[x].min(left_out) {
            excluded[x] = k;
            self.exclude(
                x + 1,
                left_out - k,
                excluded,
                excluded_total + x as u32 * u32::from(k),
            );
        }
        excluded[x] = 0;
    }

    fn consider(&mut self, excluded: &Counts, excluded_total: u32) {
        let value = u32::from(self.value);
        if !(self.small_total - excluded_total).is_multiple_of(value) {
            return;
        }
        let taken: Counts = std::array::from_fn(|x| self.counts[x] - excluded[x]);
        if can_partition(&mut taken.clone(), self.value) {
            self.canonical.offer(&taken);
        }
    }
}

/// Collects the covers of the largest size, given as counts taken per value, and keeps the
/// canonical one: the oldest cards of each value, then the smallest sorted positions.
struct Canonical<'a> {
    masks: &'a ValueMasks,
    /// The counts per value on the table.
    all: Counts,
    /// The canonical cover so far, as table positions.
    best: Option<u64>,
    /// Whether a different set of the same size exists.
    alternatives: bool,
}

impl<'a> Canonical<'a> {
    fn new(masks: &'a ValueMasks, all: Counts) -> Canonical<'a> {
        Canonical {
            masks,
            all,
            best: None,
            alternatives: false,
        }
    }

    fn offer(&mut self, taken: &Counts) {
        let mut positions = 0;
        for ((&mask, &took), &had) in self.masks.iter().zip(taken).zip(&self.all) {
            positions |= lowest_bits(mask, took);
            // Another card of the same value could be taken instead.
            self.alternatives |= took > 0 && took < had;
        }
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
