// Cards drawn as SVG, and what a card would take from the table (docs/rules.md §6–9), for the
// hover highlight. The server decides every capture; this is only a preview.

import { cardName } from "./i18n";

export interface CardLike {
  rank: number; // 1 = ace … 10, 11 = J, 12 = Q, 13 = K
  suit: number; // 1 clubs, 2 diamonds, 3 hearts, 4 spades
}

const SVG = "http://www.w3.org/2000/svg";
const SUIT_SIGN: Record<number, string> = { 1: "♣", 2: "♦", 3: "♥", 4: "♠" };
const RANK_TEXT: Record<number, string> = { 1: "A", 11: "J", 12: "Q", 13: "K" };

export function rankText(rank: number): string {
  return RANK_TEXT[rank] ?? String(rank);
}

export function sameCard(a: CardLike, b: CardLike): boolean {
  return a.rank === b.rank && a.suit === b.suit;
}

export function cardKey(c: CardLike): string {
  return `${rankText(c.rank)}${"CDHS"[c.suit - 1] ?? "?"}`;
}

/** A face-up card: rank and suit in the suit's colour, with its name for screen readers. */
export function cardFace(card: CardLike): SVGSVGElement {
  const svg = document.createElementNS(SVG, "svg");
  svg.setAttribute("viewBox", "0 0 60 84");
  svg.setAttribute("class", `card face ${card.suit === 2 || card.suit === 3 ? "red" : "black"}`);
  svg.setAttribute("role", "img");
  svg.setAttribute("aria-label", cardName(card.rank, card.suit));
  const title = document.createElementNS(SVG, "title");
  title.textContent = cardName(card.rank, card.suit);
  svg.append(title);
  const rect = document.createElementNS(SVG, "rect");
  Object.entries({ x: "1", y: "1", width: "58", height: "82", rx: "6", class: "paper" }).forEach(([k, v]) =>
    rect.setAttribute(k, v),
  );
  svg.append(rect);
  const text = (x: string, y: string, size: string, content: string, anchor = "middle") => {
    const el = document.createElementNS(SVG, "text");
    el.setAttribute("x", x);
    el.setAttribute("y", y);
    el.setAttribute("font-size", size);
    el.setAttribute("text-anchor", anchor);
    el.setAttribute("class", "ink");
    el.textContent = content;
    svg.append(el);
  };
  text("7", "18", "15", rankText(card.rank), "start");
  text("7", "32", "13", SUIT_SIGN[card.suit] ?? "?", "start");
  text("33", "62", "30", SUIT_SIGN[card.suit] ?? "?");
  if (card.rank === 7 && card.suit === 2) text("30", "80", "8", "KOMI");
  return svg;
}

/** A face-down card. */
export function cardBack(): SVGSVGElement {
  const svg = document.createElementNS(SVG, "svg");
  svg.setAttribute("viewBox", "0 0 60 84");
  svg.setAttribute("class", "card back");
  svg.setAttribute("aria-hidden", "true");
  const rect = document.createElementNS(SVG, "rect");
  Object.entries({ x: "1", y: "1", width: "58", height: "82", rx: "6", class: "back-paper" }).forEach(([k, v]) =>
    rect.setAttribute(k, v),
  );
  const inner = document.createElementNS(SVG, "rect");
  Object.entries({ x: "7", y: "7", width: "46", height: "70", rx: "4", class: "back-pattern" }).forEach(([k, v]) =>
    inner.setAttribute(k, v),
  );
  svg.append(rect, inner);
  return svg;
}

/**
 * The table cards (indexes into `table`) that `card` would take: J and the Komi sweep a
 * non-empty table, Q and K take their own rank, a number card the largest set of disjoint
 * groups of number cards summing to its value (the earliest-laid set among equals).
 */
export function wouldTake(card: CardLike, table: CardLike[]): number[] {
  const all = table.map((_, i) => i);
  if (table.length === 0) return [];
  if (card.rank === 11 || (card.rank === 7 && card.suit === 2)) return all;
  if (card.rank >= 12) return all.filter((i) => table[i].rank === card.rank);
  const v = card.rank;
  const numbers = all.filter((i) => table[i].rank <= 10);
  let best: number[] = [];
  const n = numbers.length;
  for (let mask = 1; mask < 1 << n; mask++) {
    const chosen = numbers.filter((_, b) => mask & (1 << b));
    if (chosen.length < best.length) continue;
    if (!splitsInto(chosen.map((i) => table[i].rank), v)) continue;
    if (chosen.length > best.length || earlier(chosen, best)) best = chosen;
  }
  return best;
}

function earlier(a: number[], b: number[]): boolean {
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return a[i] < b[i];
  return false;
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
