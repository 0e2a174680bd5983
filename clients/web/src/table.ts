// The table: events from GameService.Watch (resumed from the last seq after a break),
// actions through GameService's unary calls. A player or a spectator (no hand, no action).
// Everything a player typed (names) is isolated in <bdi>; announcements are kept as what
// happened and worded when drawn, so they follow a language switch.

import { create, fromJsonString, toJsonString } from "@bufbuild/protobuf";
import { timestampMs } from "@bufbuild/protobuf/wkt";
import { authed, currentUser, rejectCode, renew } from "./api";
import { app, el, errorText, header, patch, screens, shared, view, Code, ConnectError } from "./shell";
import { bdi, cardName, lang, phrase, phraseCodes, t, tx } from "./i18n";
import { cardBack, cardFace, captureOptions, sameCard, type CardLike } from "./cards";
import { sha256, hex } from "./sha256";
import { inviteList } from "./social";
import { ratingFor, ratingText, watchRating } from "./account";
import type { PlayResponse, MatchEnded } from "./gen/basra/game/v1/game_pb";
import { MatchEndedSchema } from "./gen/basra/game/v1/game_pb";
import type { GameView, SeatInfo } from "./gen/basra/common/v1/common_pb";
import { BasraKind, BotLevel, MatchEndReason, RoomStatus, SeatOccupant } from "./gen/basra/common/v1/common_pb";

/** The room this browser's player sits at: a reload goes back to it. */
export const ROOM_KEY = "basra.room";
/** The last match's end there, as it came (a reload on the result shows it again). */
const ENDED_KEY = "basra.room.ended";
/** Rooms this page left (their invites are no longer offered). */
const roomsLeft = new Set<string>();

/** Whether this browser's player sits at `roomId`, or left it since the page loaded. */
export function sitsOrSat(roomId: string): boolean {
  return roomsLeft.has(roomId) || localStorage.getItem(ROOM_KEY) === roomId;
}

function keepEnded(roomId: string, ended: MatchEnded): void {
  localStorage.setItem(ENDED_KEY, JSON.stringify({ roomId, ended: toJsonString(MatchEndedSchema, ended) }));
}

function keptEnded(roomId: string, matchId: string): MatchEnded | undefined {
  try {
    const kept = JSON.parse(localStorage.getItem(ENDED_KEY) ?? "null");
    if (kept?.roomId !== roomId) return undefined;
    const ended = fromJsonString(MatchEndedSchema, kept.ended);
    return ended.matchId === matchId ? ended : undefined;
  } catch {
    return undefined;
  }
}

/**
 * A finished room's result as its snapshot shows it: the end this page kept when it saw
 * it, else the totals, and the winner when the totals tell (a side past the target,
 * alone at the top); a resignation's winner, and the seed, are then in the history.
 */
function endedFromView(v: GameView): MatchEnded {
  const kept = keptEnded(v.roomId, v.matchId);
  if (kept) return kept;
  const totals = [...v.totals];
  const top = Math.max(0, ...totals);
  const alone = totals.filter((n) => n === top).length === 1;
  const reached = alone && top >= (v.settings?.targetScore ?? Infinity);
  return create(MatchEndedSchema, {
    matchId: v.matchId,
    totals,
    winnerSide: reached ? totals.indexOf(top) : undefined,
    reason: reached ? MatchEndReason.TARGET_REACHED : MatchEndReason.UNSPECIFIED,
  });
}

interface TableState {
  roomId: string;
  code?: string;
  spectate: boolean;
  seat?: number;
  seats: SeatInfo[];
  target?: number;
  ranked: boolean;
  matchId: string;
  commitment?: Uint8Array;
  hand: CardLike[];
  handCounts: number[];
  table: CardLike[];
  pileSizes: number[];
  totals: number[];
  round: number;
  deck: number;
  turn?: number;
  deadlineMs?: number;
  offsetMs: number;
  lastSeq: bigint;
  synced: boolean;
  ended?: MatchEnded;
  /** The room closed while this page showed it (no rematch any more). */
  closed: boolean;
  /** The room was seen open (not only as closed) by this page. */
  live: boolean;
  rematchAsked: boolean;
  /** Announcements, worded when drawn (in the language of the moment). */
  announcements: (() => Node[])[];
  /** Seats whose player was announced gone: only they are announced back. */
  gone: Set<number>;
  /** The card waiting for the player to pick one of its equally large captures. */
  choosing?: { card: CardLike; options: number[][] };
  /** The capture the page named for its last play, to compare with what was taken. */
  named?: { card: CardLike; taken: CardLike[]; table: CardLike[] };
  connection: "ok" | "reconnecting";
  busy: boolean;
  /** The screen, kept across redraws with its result panel (a press on its button holds). */
  screen: HTMLElement;
  result?: HTMLElement;
}

let stopTable: () => void = () => {};
/** The table on screen; events of a table left behind draw nothing. */
let currentTable: TableState | null = null;

function card(c: { rank: number; suit: number } | undefined): CardLike {
  return { rank: c?.rank ?? 0, suit: c?.suit ?? 0 };
}

function sideOf(state: TableState, seat: number): number {
  return state.seats[seat]?.side ?? seat % 2;
}

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
function nameNode(state: TableState, seat: number): Node {
  const info = state.seats[seat];
  const text = seatName(info, seat === state.seat, seat);
  return info?.occupant === SeatOccupant.PLAYER && seat !== state.seat ? bdi(text) : el("span", {}, text);
}

function cardList(cards: CardLike[]): string {
  return cards.map((c) => cardName(c.rank, c.suit)).join(lang() === "ar" ? "، " : ", ");
}

export function showTable(roomId: string, options: { code?: string; spectate?: boolean } = {}): void {
  stopTable();
  if (!options.spectate) localStorage.setItem(ROOM_KEY, roomId);
  const abort = new AbortController();
  const state: TableState = {
    roomId,
    code: options.code,
    spectate: options.spectate ?? false,
    seats: [],
    ranked: false,
    matchId: "",
    hand: [],
    handCounts: [],
    table: [],
    pileSizes: [],
    totals: [],
    round: 0,
    deck: 0,
    offsetMs: 0,
    lastSeq: 0n,
    synced: false,
    closed: false,
    live: false,
    rematchAsked: false,
    announcements: [],
    gone: new Set(),
    connection: "ok",
    busy: false,
    screen: el("main", { class: "table-screen", "data-testid": "table" }),
  };
  const timer = setInterval(() => drawCountdown(state), 250);
  const onKey = (e: KeyboardEvent) => {
    if (e.target instanceof HTMLInputElement || state.choosing) return;
    const n = Number(e.key);
    if (n >= 1 && n <= state.hand.length) void choose(state, state.hand[n - 1]);
  };
  document.addEventListener("keydown", onKey);
  stopTable = () => {
    abort.abort();
    clearInterval(timer);
    document.removeEventListener("keydown", onKey);
    currentTable = null;
    stopTable = () => {};
  };
  currentTable = state;
  view.redraw = () => drawTable(state);
  drawTable(state);
  void watch(state, abort.signal);
}

export function leaveTable(notice = ""): void {
  if (currentTable && !currentTable.spectate) forget(currentTable.roomId);
  stopTable();
  screens.lobby(notice);
}

/** The player is done with `roomId`: a reload goes to the lobby. */
function forget(roomId: string): void {
  roomsLeft.add(roomId);
  if (localStorage.getItem(ROOM_KEY) === roomId) localStorage.removeItem(ROOM_KEY);
  localStorage.removeItem(ENDED_KEY);
}

/**
 * The room closed (its stream ended OK). Seen open, its result stays on the screen
 * without a rematch; found closed (a reload after the rematch window), the player is
 * taken to the lobby.
 */
function roomClosed(state: TableState): void {
  if (!state.spectate) forget(state.roomId);
  if (state.live && state.ended) {
    state.closed = true;
    drawTable(state);
    return;
  }
  stopTable();
  screens.lobby(t("roomClosed"));
}

async function watch(state: TableState, signal: AbortSignal): Promise<void> {
  const api = shared.api;
  let backoff = 250;
  while (!signal.aborted) {
    try {
      const stream = api.game.watch(
        { roomId: state.roomId, lastSeenSeq: state.synced ? state.lastSeq : undefined, spectate: state.spectate },
        { signal },
      );
      for await (const message of stream) {
        state.connection = "ok";
        backoff = 250;
        if (message.event) apply(state, message.event);
        drawTable(state);
      }
      return roomClosed(state);
    } catch (err) {
      if (signal.aborted) return;
      const e = ConnectError.from(err);
      if (e.code === Code.Unauthenticated && (await renew(api).catch(() => false))) continue;
      if (e.code === Code.NotFound || e.code === Code.PermissionDenied) return leaveTable(errorText(err));
      if (e.code === Code.FailedPrecondition) return leaveTable(t("replaced"));
      state.connection = "reconnecting";
      drawTable(state);
      await new Promise((r) => setTimeout(r, backoff));
      backoff = Math.min(backoff * 2, 4000);
    }
  }
}

function announce(state: TableState, words: () => Node[]): void {
  state.announcements = [...state.announcements.slice(-3), words];
}

function apply(state: TableState, event: PlayResponse): void {
  if (event.serverTime) state.offsetMs = timestampMs(event.serverTime) - Date.now();
  const e = event.event;
  if (e.case !== "rejected" && e.case !== "pong") {
    state.lastSeq = event.seq;
    state.synced = true;
  }
  if (!(e.case === "snapshot" && e.value.view?.status === RoomStatus.CLOSED)) state.live = true;
  switch (e.case) {
    case "snapshot": {
      const v = e.value.view!;
      state.seat = v.yourSeat;
      state.seats = v.seats;
      state.target = v.settings?.targetScore;
      state.ranked = v.ranked;
      state.matchId = v.matchId;
      state.commitment = v.seedCommitment.length ? v.seedCommitment : undefined;
      state.hand = v.hand.map(card);
      state.handCounts = [...v.handCounts];
      state.table = v.table.map(card);
      state.pileSizes = [...v.pileSizes];
      state.totals = [...v.totals];
      state.round = v.round;
      state.deck = v.deckRemaining;
      state.turn = v.turn;
      state.deadlineMs = v.turnDeadline ? timestampMs(v.turnDeadline) : undefined;
      state.choosing = undefined;
      for (const s of v.seats) if (s.connected) state.gone.delete(s.seat);
      // A room whose match is over shows its result, whenever the page arrives.
      const over = v.status === RoomStatus.FINISHED || v.status === RoomStatus.CLOSED;
      state.ended = over && v.matchId ? endedFromView(v) : undefined;
      if (state.ended && state.ranked && !state.spectate) watchRating(state.matchId, () => drawTable(state));
      break;
    }
    case "seatChanged":
      if (e.value.seat) state.seats[e.value.seat.seat] = e.value.seat;
      break;
    case "matchStarted": {
      const sides = new Set(e.value.seats.map((s) => s.side)).size || 2;
      state.seats = e.value.seats;
      state.target = e.value.settings?.targetScore ?? state.target;
      state.ranked = e.value.ranked;
      state.matchId = e.value.matchId;
      state.commitment = e.value.seedCommitment;
      state.hand = [];
      state.table = [];
      state.handCounts = e.value.seats.map(() => 0);
      state.pileSizes = Array(sides).fill(0);
      state.totals = Array(sides).fill(0);
      state.ended = undefined;
      state.rematchAsked = false;
      state.code = undefined;
      state.announcements = [];
      break;
    }
    case "roundStarted":
      state.round = e.value.round;
      state.pileSizes = state.pileSizes.map(() => 0);
      break;
    case "tableDealt":
      state.table = e.value.cards.map(card);
      break;
    case "handDealt":
      if (e.value.cards.length) state.hand = e.value.cards.map(card);
      state.handCounts = [...e.value.handCounts];
      state.deck = e.value.deckRemaining;
      break;
    case "cardPlayed": {
      const p = e.value;
      const played = card(p.card);
      if (p.seat === state.seat) {
        state.hand = state.hand.filter((c) => !sameCard(c, played));
        checkNamed(state, played, p.taken.map(card));
      }
      state.handCounts[p.seat] = Math.max(0, (state.handCounts[p.seat] ?? 1) - 1);
      const taken = p.taken.map(card);
      const seat = p.seat;
      if (taken.length) {
        state.table = state.table.filter((c) => !taken.some((x) => sameCard(x, c)));
        const side = sideOf(state, seat);
        state.pileSizes[side] = (state.pileSizes[side] ?? 0) + taken.length + 1;
        const cards = () => ({ name: nameNode(state, seat), cards: cardList(taken), card: cardName(played.rank, played.suit) });
        announce(state, () => tx(seat === state.seat ? "capturedYou" : "capturedBy", cards()));
      } else {
        state.table = [...state.table, played];
      }
      const points = p.basraPoints;
      const kind = p.basra === BasraKind.BASRA ? "basraBy" : p.basra === BasraKind.JACK ? "jackBasraBy" : p.basra === BasraKind.KOMI ? "komiBasraBy" : null;
      if (kind) announce(state, () => tx(kind, { name: nameNode(state, seat), points }));
      if (state.turn === p.seat) state.turn = undefined;
      break;
    }
    case "turnStarted":
      state.turn = e.value.seat;
      state.deadlineMs = e.value.deadline ? timestampMs(e.value.deadline) : undefined;
      break;
    case "roundEnded": {
      state.table = [];
      for (const side of e.value.sides) state.totals[side.side] = side.total;
      const n = e.value.round;
      const sides = e.value.sides;
      announce(state, () => tx("roundOver", { n, scores: scoreLine(state, sides.map((s) => s.roundPoints)) }));
      break;
    }
    case "matchEnded": {
      state.ended = e.value;
      state.totals = [...e.value.totals];
      state.turn = undefined;
      state.choosing = undefined;
      const forfeit = e.value.forfeitSeat;
      if (e.value.reason !== MatchEndReason.TARGET_REACHED && forfeit !== undefined) {
        const key = e.value.reason === MatchEndReason.RESIGNED ? "reasonResigned" : "reasonAbandoned";
        announce(state, () => tx(key, { name: nameNode(state, forfeit) }));
      }
      if (!state.spectate) keepEnded(state.roomId, e.value);
      if (state.ranked && !state.spectate) watchRating(state.matchId, () => drawTable(state));
      break;
    }
    case "connectionChanged": {
      const seat = e.value.seat;
      const info = state.seats[seat];
      const connected = e.value.state === 1;
      if (info) info.connected = connected;
      if (seat === state.seat) break;
      // A player's first connection is no return: only a seat announced gone comes back.
      if (!connected && !state.gone.has(seat)) {
        state.gone.add(seat);
        announce(state, () => tx("disconnected", { name: nameNode(state, seat) }));
      } else if (connected && state.gone.delete(seat)) {
        announce(state, () => tx("reconnected", { name: nameNode(state, seat) }));
      }
      break;
    }
    case "chat": {
      const { seat, phrase: code } = e.value;
      announce(state, () => tx("chatBy", { name: nameNode(state, seat), phrase: phrase(code) }));
      break;
    }
    case "rematchOffered": {
      const seat = e.value.seat;
      if (seat !== state.seat) announce(state, () => tx("rematchOffered", { name: nameNode(state, seat) }));
      break;
    }
    default:
      break;
  }
}

/** Scores per side with their names: "You 130 · Nour 40". */
function scoreLine(state: TableState, scores: number[]): Node {
  const line = el("span", { class: "score-line" });
  scores.forEach((n, side) => {
    if (side) line.append(" · ");
    line.append(...tx("sideScore", { name: sideName(state, side), n }));
  });
  return line;
}

function sideName(state: TableState, side: number): Node {
  const seats = state.seats.filter((s) => s.side === side);
  const span = el("span", { class: "side-name" });
  if (!seats.length) span.append(`#${side + 1}`);
  seats.forEach((s, i) => {
    if (i) span.append(" + ");
    span.append(nameNode(state, s.seat));
  });
  return span;
}

/**
 * The card's captures: one (or none) is played at once, several equally large ones ask
 * the player which (docs/rules.md §6).
 */
async function choose(state: TableState, c: CardLike): Promise<void> {
  if (state.turn !== state.seat || state.busy || state.ended) return;
  const options = captureOptions(c, state.table);
  if (options.length > 1) {
    state.choosing = { card: c, options };
    drawTable(state);
    document.querySelector<HTMLButtonElement>("[data-testid=capture-option]")?.focus();
    return;
  }
  await play(state, c, options[0]);
}

async function play(state: TableState, c: CardLike, take: number[] | undefined): Promise<void> {
  if (state.turn !== state.seat || state.busy || state.ended) return;
  state.busy = true;
  state.choosing = undefined;
  const taken = (take ?? []).map((i) => state.table[i]);
  state.named = { card: c, taken, table: [...state.table] };
  const api = shared.api;
  const request = (named: boolean) =>
    authed(api, () =>
      api.game.playCard({
        roomId: state.roomId,
        card: c,
        // The capture the page showed, so the server takes exactly it or refuses.
        captureChoice: named && taken.length ? { cards: taken } : undefined,
        basedOnSeq: state.lastSeq,
        clientMoveId: crypto.randomUUID(),
      }),
    );
  try {
    try {
      await request(true);
    } catch (err) {
      if (rejectCode(err) !== "REJECT_CODE_ILLEGAL_CAPTURE") throw err;
      // The page's rule and the server's differ: say so with the table, and let the server
      // take its own capture.
      console.warn("basra: the server refused the capture the page showed", JSON.stringify(state.named));
      state.named = undefined;
      announce(state, () => [document.createTextNode(t("captureFixed"))]);
      await request(false);
    }
  } catch (err) {
    const message = rejectCode(err) === "REJECT_CODE_STALE" ? t("stale") : errorText(err);
    announce(state, () => [document.createTextNode(message)]);
  } finally {
    state.busy = false;
    drawTable(state);
  }
}

/** Logs the table when the server took other cards than the page named. */
function checkNamed(state: TableState, played: CardLike, taken: CardLike[]): void {
  const named = state.named;
  state.named = undefined;
  if (!named || !sameCard(named.card, played)) return;
  const same = named.taken.length === taken.length && named.taken.every((c) => taken.some((x) => sameCard(c, x)));
  if (!same) console.warn("basra: the play took other cards than the page showed", JSON.stringify({ ...named, serverTook: taken }));
}

function drawCountdown(state: TableState): void {
  const node = document.getElementById("countdown");
  if (!node) return;
  if (state.turn === undefined || state.deadlineMs === undefined || state.ended) {
    node.textContent = "";
    return;
  }
  const left = Math.max(0, Math.ceil((state.deadlineMs - (Date.now() + state.offsetMs)) / 1000));
  node.textContent = t("secondsLeft", { s: left });
  node.classList.toggle("hurry", left <= 5);
}

function drawTable(state: TableState): void {
  if (state !== currentTable) return;
  const me = state.seat;
  const myTurn = me !== undefined && state.turn === me && !state.ended;
  const tableCards = state.table.map((c, i) => el("li", { class: "slot", "data-index": i, "data-testid": "table-card" }, cardFace(c)));
  const highlight = (take: number[]) => tableCards.forEach((node, i) => node.classList.toggle("would-take", take.includes(i)));
  const hand = state.hand.map((c, i) => {
    const options = captureOptions(c, state.table);
    const take = options[0] ?? [];
    const takes =
      options.length > 1
        ? t("chooseCapture", { card: cardName(c.rank, c.suit) })
        : take.length
          ? t("takes", { cards: cardList(take.map((j) => state.table[j])) })
          : t("takesNothing");
    return el(
      "button",
      {
        class: "hand-card",
        "data-testid": "hand-card",
        "data-card": `${c.rank}-${c.suit}`,
        "data-takes": take.map((j) => `${state.table[j].rank}-${state.table[j].suit}`).join(" "),
        "aria-label": `${i + 1}: ${cardName(c.rank, c.suit)} — ${takes}`,
        title: takes,
        disabled: !myTurn || state.busy || !!state.choosing,
        onmouseenter: () => highlight(take),
        onmouseleave: () => highlight([]),
        onfocus: () => highlight(take),
        onblur: () => highlight([]),
        onclick: () => void choose(state, c),
      },
      cardFace(c),
    );
  });
  const choosing = state.choosing;
  const chooser = choosing
    ? el(
        "section",
        { class: "card-panel chooser", role: "group", "aria-label": t("chooseCapture", { card: cardName(choosing.card.rank, choosing.card.suit) }), "data-testid": "capture-choice" },
        el("p", {}, t("chooseCapture", { card: cardName(choosing.card.rank, choosing.card.suit) })),
        ...choosing.options.map((option) =>
          el(
            "button",
            {
              "data-testid": "capture-option",
              onmouseenter: () => highlight(option),
              onfocus: () => highlight(option),
              onclick: () => void play(state, choosing.card, option),
            },
            t("takeThese", { cards: cardList(option.map((i) => state.table[i])) }),
          ),
        ),
        el("button", { class: "quiet", onclick: () => { state.choosing = undefined; drawTable(state); } }, t("cancel")),
      )
    : null;
  const others = state.seats
    .filter((s) => s.seat !== me)
    .map((s) =>
      el(
        "div",
        { class: `opponent ${state.turn === s.seat ? "active" : ""}`, "data-testid": "opponent" },
        el("span", { class: `dot ${s.connected || s.occupant === SeatOccupant.BOT ? "on" : "off"}`, "aria-hidden": "true" }),
        el("span", { class: "name", "data-testid": "opponent-name" }, nameNode(state, s.seat)),
        el("span", { class: "sr" }, t("opponentHand", { name: seatName(s, false), n: state.handCounts[s.seat] ?? 0 })),
        el("div", { class: "backs", "aria-hidden": "true", "data-testid": "backs" }, ...Array.from({ length: state.handCounts[s.seat] ?? 0 }, () => cardBack())),
        el("span", { class: "count", "aria-hidden": "true", "data-testid": "hand-count", "data-n": state.handCounts[s.seat] ?? 0 }, `×${state.handCounts[s.seat] ?? 0}`),
      ),
    );
  const sides = state.totals.map((total, side) =>
    el(
      "li",
      { "data-testid": "side", "data-side": side, "data-pile": state.pileSizes[side] ?? 0, "data-total": total },
      el("strong", {}, sideName(state, side)),
      ` ${t("score", { n: total })} · ${t("pile", { n: state.pileSizes[side] ?? 0 })}`,
    ),
  );
  const turn = state.turn;
  const turnText = turn === undefined ? [] : myTurn ? [t("yourTurn")] : tx("theirTurn", { name: nameNode(state, turn) });
  const waiting = !state.ended && state.seats.some((s) => s.occupant === SeatOccupant.OPEN);
  const api = shared.api;
  const chat = state.spectate
    ? null
    : el(
        "div",
        { class: "chat", role: "group", "aria-label": t("chat") },
        ...phraseCodes().map((code) =>
          el(
            "button",
            {
              class: "phrase",
              onclick: async () => {
                try {
                  await authed(api, () => api.game.quickChat({ roomId: state.roomId, phrase: code }));
                } catch (err) {
                  const message = errorText(err);
                  announce(state, () => [document.createTextNode(message)]);
                  drawTable(state);
                }
              },
            },
            phrase(code),
          ),
        ),
      );
  const commitment = state.commitment
    ? el("p", { class: "seed", "data-testid": "commitment" }, t("commitment", { hash: hex(state.commitment) }))
    : null;
  // The screen and an unchanged result panel stay in place: a button pressed while an
  // event redraws the table is still there when it is released.
  const fresh = state.ended ? resultPanel(state, state.ended) : undefined;
  if (!fresh || !state.result?.isEqualNode(fresh)) state.result = fresh;
  const parts: (HTMLElement | null)[] = [
      state.connection === "reconnecting" ? el("p", { class: "banner", role: "status" }, t("reconnecting")) : null,
      state.spectate ? el("p", { class: "banner", "data-testid": "spectating" }, t("spectating")) : null,
      state.code && waiting ? el("p", { class: "banner code", "data-testid": "room-code" }, t("shareCode", { code: state.code })) : null,
      waiting ? el("p", { class: "banner" }, t("waitingFor")) : null,
      waiting && state.code ? inviteList(state.roomId) : null,
      state.result ?? null,
      el("section", { class: "opponents" }, ...others),
      el(
        "section",
        { class: "felt", "aria-label": t("table") },
        el("ul", { class: "table-cards", "aria-label": t("table") }, ...(tableCards.length ? tableCards : [el("li", { class: "empty" }, t("emptyTable"))])),
      ),
      el(
        "section",
        { class: "status" },
        el("span", { "data-testid": "round", "data-n": state.round }, t("round", { n: state.round })),
        el("span", { "data-testid": "deck", "data-n": state.deck }, t("deck", { n: state.deck })),
        state.target ? el("span", { "data-testid": "target-shown" }, t("toTarget", { n: state.target })) : null,
        el("span", { class: `turn ${myTurn ? "mine" : ""}`, "data-testid": "turn" }, ...turnText),
        el("span", { id: "countdown", class: "countdown", "aria-hidden": "true" }),
        el("ul", { class: "sides", "data-testid": "sides" }, ...sides),
      ),
      chooser,
      state.spectate ? null : el("section", { class: "hand", "aria-label": t("yourHand") }, ...hand),
      state.spectate ? null : el("p", { class: "hint" }, t("keysHint")),
      el("div", { class: "announce", "aria-live": "polite", "data-testid": "announce" }, ...state.announcements.map((words, i, all) => el("p", { class: i === all.length - 1 ? "fresh" : "" }, ...words()))),
      el(
        "section",
        { class: "actions" },
        chat,
        state.spectate
          ? el("button", { "data-testid": "leave", onclick: () => { stopTable(); screens.lobby(); } }, t("leave"))
          : !state.ended
            ? el(
                "button",
                {
                  class: "danger",
                  "data-testid": "resign",
                  onclick: async () => {
                    if (!confirm(t("resignConfirm"))) return;
                    await authed(api, () => api.game.resign({ roomId: state.roomId })).catch((err) => {
                      const message = errorText(err);
                      announce(state, () => [document.createTextNode(message)]);
                    });
                  },
                },
                t("resign"),
              )
            : null,
      ),
      commitment,
  ];
  patch(state.screen, parts.filter((part): part is HTMLElement => part !== null));
  patch(app, [header(), state.screen]);
  drawCountdown(state);
}

function resultPanel(state: TableState, ended: MatchEnded): HTMLElement {
  const mySide = state.seat === undefined ? undefined : sideOf(state, state.seat);
  const title =
    ended.winnerSide !== undefined
      ? ended.winnerSide === mySide ? t("youWon") : mySide === undefined ? "" : t("youLost")
      : ended.reason === MatchEndReason.CLOSED ? t("noWinner") : t("matchOver");
  const seed = hex(ended.seed);
  // The page checks the revealed seed against the commitment it showed from the start.
  const check = !ended.seed.length
    ? el("p", { "data-testid": "seed-check", "data-ok": "unknown" }, t("seedInHistory"))
    : !state.commitment
    ? el("p", { "data-testid": "seed-check", "data-ok": "unknown" }, t("seedUnchecked"))
    : hex(sha256(ended.seed)) === hex(state.commitment)
      ? el("p", { "data-testid": "seed-check", "data-ok": "true", class: "verified" }, t("seedVerified"))
      : el("p", { "data-testid": "seed-check", "data-ok": "false", class: "problem" }, t("seedMismatch", { hash: hex(state.commitment) }));
  const mine = state.ranked ? (ended.ratingChanges.find((c) => c.userId === currentUser()?.userId) ?? ratingFor(state.matchId)) : undefined;
  const rating = !state.ranked || state.spectate
    ? null
    : mine
      ? el("p", { "data-testid": "rating-change" }, ratingText(mine))
      : el("p", { "data-testid": "rating-change", "data-pending": "true" }, t("ratingPending"));
  const api = shared.api;
  const winnerName = ended.winnerSide === undefined ? null : sideName(state, ended.winnerSide);
  return el(
    "section",
    { class: "result card-panel", role: "region", "aria-label": title || t("result"), "data-testid": "result" },
    el("h2", {}, ...(title ? [title] : winnerName ? tx("sideWon", { name: winnerName }) : [])),
    el("p", { "data-testid": "final-score" }, ...tx("finalScore", { scores: scoreLine(state, ended.totals) })),
    rating,
    ended.seed.length ? el("p", { class: "seed", "data-testid": "seed" }, t("seedShown", { seed })) : null,
    check,
    state.closed ? el("p", { "data-testid": "room-closed" }, t("roomClosed")) : null,
    state.spectate || state.closed
      ? null
      : el(
          "button",
          {
            "data-testid": "rematch",
            disabled: state.rematchAsked,
            onclick: async () => {
              state.rematchAsked = true;
              await authed(api, () => api.game.askRematch({ roomId: state.roomId })).catch((err) => {
                const message = errorText(err);
                announce(state, () => [document.createTextNode(message)]);
              });
              drawTable(state);
            },
          },
          t("rematch"),
        ),
    el("button", { "data-testid": "back", onclick: () => leaveTable() }, t("backToLobby")),
  );
}

/** Redraws the table on screen (a rating arrived). */
export function redrawTable(): void {
  if (currentTable) drawTable(currentTable);
}
