// What a card takes from the table (docs/rules.md §6–9), the engine's rule in the page: the
// preview, the choice among equally large captures, and the capture a play names. A play
// always names the capture the page showed (`capture_choice`), so the server either takes
// exactly that or refuses the play: the preview and the server's answer cannot differ
// without the page noticing. Pure: no DOM, so tests load it alone (dist/capture.js).

export interface CardLike {
  rank: number; // 1 = ace … 10, 11 = J, 12 = Q, 13 = K
  suit: number; // 1 clubs, 2 diamonds, 3 hearts, 4 spades
}

const isKomi = (c: CardLike) => c.rank === 7 && c.suit === 2;

export function sameCard(a: CardLike, b: CardLike): boolean {
  return a.rank === b.rank && a.suit === b.suit;
}

/**
 * Every capture `card` may take from `table`, as ascending lists of table indexes: the
 * fixed set of a J, the Komi, a Q or a K; for a number card every largest set of table
 * number cards (worth at most its value) that splits into groups summing to its value.
 * The first is the canonical one (the lexicographically first index list, §6). Empty when
 * the card takes nothing.
 */
export function captureOptions(card: CardLike, table: CardLike[]): number[][] {
  const all = table.map((_, i) => i);
  if (table.length === 0) return [];
  if (card.rank === 11 || isKomi(card)) return [all];
  if (card.rank >= 12) {
    const same = all.filter((i) => table[i].rank === card.rank);
    return same.length ? [same] : [];
  }
  const v = card.rank;
  const numbers = all.filter((i) => table[i].rank <= v);
  let best: number[][] = [];
  let size = 1;
  const n = numbers.length;
  for (let mask = 1; mask < 1 << n; mask++) {
    const chosen = numbers.filter((_, b) => mask & (1 << b));
    if (chosen.length < size) continue;
    if (!splitsInto(chosen.map((i) => table[i].rank), v)) continue;
    if (chosen.length > size) {
      size = chosen.length;
      best = [];
    }
    best.push(chosen);
  }
  return best.sort(compare);
}

/** The canonical capture (what the server takes when no capture is named). */
export function wouldTake(card: CardLike, table: CardLike[]): number[] {
  return captureOptions(card, table)[0] ?? [];
}

function compare(a: number[], b: number[]): number {
  for (let i = 0; i < Math.min(a.length, b.length); i++) if (a[i] !== b[i]) return a[i] - b[i];
  return a.length - b.length;
}

/** Whether `values` split into disjoint groups each summing to `v`. */
function splitsInto(values: number[], v: number): boolean {
  const total = values.reduce((s, x) => s + x, 0);
  if (total % v !== 0) return false;
  const used = values.map(() => false);
  const fill = (groupsLeft: number): boolean => {
    if (groupsLeft === 0) return true;
    const first = used.indexOf(false);
    used[first] = true;
    const ok = extend(first + 1, v - values[first], groupsLeft);
    used[first] = false;
    return ok;
  };
  const extend = (from: number, need: number, groupsLeft: number): boolean => {
    if (need === 0) return fill(groupsLeft - 1);
    for (let i = from; i < values.length; i++) {
      if (used[i] || values[i] > need) continue;
      used[i] = true;
      if (extend(i + 1, need - values[i], groupsLeft)) {
        used[i] = false;
        return true;
      }
      used[i] = false;
    }
    return false;
  };
  return fill(total / v);
}
