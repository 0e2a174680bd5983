// What the table says, in the reader's language of the moment: seats' and sides' names (a
// player's own name isolated in <bdi>), card lists, score lines, and the announcements
// the state keeps as data.

import { el } from "../shell";
import { bdi, cardName, lang, phrase, t, tx } from "../i18n";
import type { CardLike } from "../capture";
import type { SeatInfo } from "../gen/basra/common/v1/common_pb";
import { BotLevel, SeatOccupant } from "../gen/basra/common/v1/common_pb";
import type { Announcement, TableState } from "./state";

const BOT_LEVEL = { [BotLevel.EASY]: "botEasy", [BotLevel.HARD]: "botHard" } as const;

/** A seat's name as text: "You", the bot's name in the reader's language, or the player's. */
export function seatName(seat: SeatInfo | undefined, mine: boolean, index = 0): string {
  if (mine) return t("you");
  if (seat?.occupant === SeatOccupant.BOT) {
    return t("botName", { level: t(BOT_LEVEL[seat.botLevel as keyof typeof BOT_LEVEL] ?? "botMedium") });
  }
  return seat?.displayName || `#${(seat?.seat ?? index) + 1}`;
}

/** A seat's name as a node: a player's own name isolated in <bdi>. */
export function nameNode(state: TableState, seat: number): Node {
  const info = state.seats[seat];
  const text = seatName(info, seat === state.seat, seat);
  return info?.occupant === SeatOccupant.PLAYER && seat !== state.seat ? bdi(text) : el("span", {}, text);
}

export function cardList(cards: CardLike[]): string {
  return cards.map((c) => cardName(c.rank, c.suit)).join(lang() === "ar" ? "، " : ", ");
}

/** Scores per side with their names: "You 130 · Nour 40". */
export function scoreLine(state: TableState, scores: number[]): Node {
  const line = el("span", { class: "score-line" });
  scores.forEach((n, side) => {
    if (side) line.append(" · ");
    line.append(...tx("sideScore", { name: sideName(state, side), n }));
  });
  return line;
}

export function sideName(state: TableState, side: number): Node {
  const seats = state.seats.filter((s) => s.side === side);
  const span = el("span", { class: "side-name" });
  if (!seats.length) span.append(`#${side + 1}`);
  seats.forEach((s, i) => {
    if (i) span.append(" + ");
    span.append(nameNode(state, s.seat));
  });
  return span;
}

/** An announcement in words, naming seats as `state` has them now. */
export function announcementWords(state: TableState, a: Announcement): Node[] {
  switch (a.kind) {
    case "captured":
      return tx(a.seat === state.seat ? "capturedYou" : "capturedBy", {
        name: nameNode(state, a.seat),
        cards: cardList(a.taken),
        card: cardName(a.card.rank, a.card.suit),
      });
    case "basraBy":
    case "jackBasraBy":
    case "komiBasraBy":
      return tx(a.kind, { name: nameNode(state, a.seat), points: a.points });
    case "roundOver":
      return tx("roundOver", { n: a.round, scores: scoreLine(state, a.roundPoints) });
    case "reasonResigned":
    case "reasonAbandoned":
    case "disconnected":
    case "reconnected":
    case "rematchOffered":
      return tx(a.kind, { name: nameNode(state, a.seat) });
    case "chatBy":
      return tx("chatBy", { name: nameNode(state, a.seat), phrase: phrase(a.phrase) });
    case "captureFixed":
      return [document.createTextNode(t("captureFixed"))];
    case "said":
      return [document.createTextNode(a.text)];
  }
}
