// Cards drawn as SVG. What a card takes is capture.ts's.

import { cardName } from "./i18n";
import type { CardLike } from "./capture";

export type { CardLike } from "./capture";
export { captureOptions, sameCard, wouldTake } from "./capture";

const SVG = "http://www.w3.org/2000/svg";
const SUIT_SIGN: Record<number, string> = { 1: "♣", 2: "♦", 3: "♥", 4: "♠" };
const RANK_TEXT: Record<number, string> = { 1: "A", 11: "J", 12: "Q", 13: "K" };

export function rankText(rank: number): string {
  return RANK_TEXT[rank] ?? String(rank);
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
