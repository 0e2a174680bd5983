// The table's state, events in and state out: what a seat (or a spectator) knows from
// GameService.Watch, and what the player's own actions changed (a capture being chosen, a
// play on its way, a rematch asked). Pure: no DOM, no storage, no calls, no words, so the
// tests replay recorded event logs through it in node (tests/unit/state.test.ts). The
// views draw it (view.ts), the controller feeds it (controller.ts).

import { create } from "@bufbuild/protobuf";
import { timestampMs } from "@bufbuild/protobuf/wkt";
import { sameCard, type CardLike } from "../capture";
import type { PlayResponse, MatchEnded } from "../gen/basra/game/v1/game_pb";
import { MatchEndedSchema } from "../gen/basra/game/v1/game_pb";
import type { GameView, SeatInfo } from "../gen/basra/common/v1/common_pb";
import { BasraKind, MatchEndReason, RoomStatus } from "../gen/basra/common/v1/common_pb";

/**
 * Something that happened, kept as data and worded when drawn (words.ts), so that it
 * follows a language switch and names seats as they are when drawn.
 */
export type Announcement =
  | { kind: "captured"; seat: number; taken: CardLike[]; card: CardLike }
  | { kind: "basraBy" | "jackBasraBy" | "komiBasraBy"; seat: number; points: number }
  | { kind: "roundOver"; round: number; roundPoints: number[] }
  | { kind: "reasonResigned" | "reasonAbandoned"; seat: number }
  | { kind: "disconnected" | "reconnected"; seat: number }
  | { kind: "chatBy"; seat: number; phrase: number }
  | { kind: "rematchOffered"; seat: number }
  /** The server took its own capture after refusing the one the page named. */
  | { kind: "captureFixed" }
  /** Text worded when it was said (a refusal, an error). */
  | { kind: "said"; text: string };

export interface TableState {
  roomId: string;
  /** The join code to share while the room waits (until a match starts). */
  code?: string;
  spectate: boolean;
  /** This page's seat; none for a spectator. */
  seat?: number;
  /** Indexed by seat. */
  seats: SeatInfo[];
  target?: number;
  ranked: boolean;
  matchId: string;
  commitment?: Uint8Array;
  hand: CardLike[];
  /** Cards in each seat's hand, indexed by seat. */
  handCounts: number[];
  /** In laying order (docs/rules.md §2). */
  table: CardLike[];
  /** Cards in each side's pile this round, indexed by side. */
  pileSizes: number[];
  totals: number[];
  round: number;
  deck: number;
  turn?: number;
  /** The turn's deadline on the server's clock (ms). */
  deadlineMs?: number;
  /** The server's clock minus this device's, from the last event's `server_time`. */
  offsetMs: number;
  lastSeq: bigint;
  /** Whether an event with a seq arrived: a new stream resumes after `lastSeq`. */
  synced: boolean;
  ended?: MatchEnded;
  /** The room closed while this page showed it (no rematch any more). */
  closed: boolean;
  /** The room was seen open (not only as closed) by this page. */
  live: boolean;
  rematchAsked: boolean;
  /** The last four announcements, oldest first. */
  announcements: Announcement[];
  /** Seats whose player was announced gone: only they are announced back. */
  gone: ReadonlySet<number>;
  /** The card waiting for the player to pick one of its equally large captures. */
  choosing?: { card: CardLike; options: number[][] };
  connection: "ok" | "reconnecting";
  /** A play is on its way to the server. */
  busy: boolean;
}

/** What `apply` needs from outside: the device's clock, and the match ends this page kept. */
export interface Context {
  now: number;
  /** The end of `matchId` in `roomId` as this page saw it come, if it kept it. */
  keptEnd(roomId: string, matchId: string): MatchEnded | undefined;
}

/** The state of a table before its first event. */
export function openTable(roomId: string, options: { code?: string; spectate?: boolean } = {}): TableState {
  return {
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
  };
}

function card(c: { rank: number; suit: number } | undefined): CardLike {
  return { rank: c?.rank ?? 0, suit: c?.suit ?? 0 };
}

/** The side a seat plays for (its partnership at four seats). */
export function sideOf(state: TableState, seat: number): number {
  return state.seats[seat]?.side ?? seat % 2;
}

/** `state` with `a` as its newest announcement (the last four are kept). */
export function announce(state: TableState, a: Announcement): TableState {
  return { ...state, announcements: [...state.announcements.slice(-3), a] };
}

/**
 * A finished room's result as its snapshot shows it: the end this page kept when it saw
 * it, else the totals, and the winner when the totals tell (a side past the target,
 * alone at the top); a resignation's winner, and the seed, are then in the history.
 */
export function endedFromView(v: GameView, kept: MatchEnded | undefined): MatchEnded {
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

const BASRA_WORDS = {
  [BasraKind.BASRA]: "basraBy",
  [BasraKind.JACK]: "jackBasraBy",
  [BasraKind.KOMI]: "komiBasraBy",
} as const;

/** The table after one message of the Watch stream. */
export function apply(before: TableState, event: PlayResponse, context: Context): TableState {
  let state: TableState = { ...before };
  if (event.serverTime) state.offsetMs = timestampMs(event.serverTime) - context.now;
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
      const gone = new Set(state.gone);
      for (const s of v.seats) if (s.connected) gone.delete(s.seat);
      state.gone = gone;
      // A room whose match is over shows its result, whenever the page arrives.
      const over = v.status === RoomStatus.FINISHED || v.status === RoomStatus.CLOSED;
      state.ended = over && v.matchId ? endedFromView(v, context.keptEnd(v.roomId, v.matchId)) : undefined;
      break;
    }
    case "seatChanged":
      if (e.value.seat) {
        state.seats = [...state.seats];
        state.seats[e.value.seat.seat] = e.value.seat;
      }
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
      const seat = p.seat;
      const played = card(p.card);
      const taken = p.taken.map(card);
      if (seat === state.seat) state.hand = state.hand.filter((c) => !sameCard(c, played));
      state.handCounts = [...state.handCounts];
      state.handCounts[seat] = Math.max(0, (state.handCounts[seat] ?? 1) - 1);
      if (taken.length) {
        state.table = state.table.filter((c) => !taken.some((x) => sameCard(x, c)));
        const side = sideOf(state, seat);
        state.pileSizes = [...state.pileSizes];
        state.pileSizes[side] = (state.pileSizes[side] ?? 0) + taken.length + 1;
        state = announce(state, { kind: "captured", seat, taken, card: played });
      } else {
        state.table = [...state.table, played];
      }
      const kind = BASRA_WORDS[p.basra as keyof typeof BASRA_WORDS];
      if (kind) state = announce(state, { kind, seat, points: p.basraPoints });
      if (state.turn === seat) state.turn = undefined;
      break;
    }
    case "turnStarted":
      state.turn = e.value.seat;
      state.deadlineMs = e.value.deadline ? timestampMs(e.value.deadline) : undefined;
      break;
    case "roundEnded": {
      state.table = [];
      state.totals = [...state.totals];
      for (const side of e.value.sides) state.totals[side.side] = side.total;
      state = announce(state, { kind: "roundOver", round: e.value.round, roundPoints: e.value.sides.map((s) => s.roundPoints) });
      break;
    }
    case "matchEnded": {
      state.ended = e.value;
      state.totals = [...e.value.totals];
      state.turn = undefined;
      state.choosing = undefined;
      const forfeit = e.value.forfeitSeat;
      if (e.value.reason !== MatchEndReason.TARGET_REACHED && forfeit !== undefined) {
        const kind = e.value.reason === MatchEndReason.RESIGNED ? "reasonResigned" : "reasonAbandoned";
        state = announce(state, { kind, seat: forfeit });
      }
      break;
    }
    case "connectionChanged": {
      const seat = e.value.seat;
      const connected = e.value.state === 1;
      if (state.seats[seat]) {
        state.seats = [...state.seats];
        state.seats[seat] = { ...state.seats[seat], connected };
      }
      if (seat === state.seat) break;
      // A player's first connection is no return: only a seat announced gone comes back.
      if (!connected && !state.gone.has(seat)) {
        state.gone = new Set(state.gone).add(seat);
        state = announce(state, { kind: "disconnected", seat });
      } else if (connected && state.gone.has(seat)) {
        const gone = new Set(state.gone);
        gone.delete(seat);
        state.gone = gone;
        state = announce(state, { kind: "reconnected", seat });
      }
      break;
    }
    case "chat":
      state = announce(state, { kind: "chatBy", seat: e.value.seat, phrase: e.value.phrase });
      break;
    case "rematchOffered":
      if (e.value.seat !== state.seat) state = announce(state, { kind: "rematchOffered", seat: e.value.seat });
      break;
    default:
      break;
  }
  return state;
}

/** Whether it is this page's player's turn, with the match still on. */
export function myTurn(state: TableState): boolean {
  return state.seat !== undefined && state.turn === state.seat && !state.ended;
}

/** Whether a card may be played now (the player's turn, no play on its way, no result). */
export function mayPlay(state: TableState): boolean {
  return state.turn === state.seat && !state.busy && !state.ended;
}

/** The player is asked which of the card's equally large captures to take. */
export function choosing(state: TableState, card: CardLike, options: number[][]): TableState {
  return { ...state, choosing: { card, options } };
}

/** The player put the card back without choosing. */
export function choiceCancelled(state: TableState): TableState {
  return { ...state, choosing: undefined };
}

/** A play went to the server (`busy` until it answers). */
export function playSent(state: TableState): TableState {
  return { ...state, busy: true, choosing: undefined };
}

/** The server answered the play. */
export function playAnswered(state: TableState): TableState {
  return { ...state, busy: false };
}

export function rematchAsked(state: TableState): TableState {
  return { ...state, rematchAsked: true };
}

export function connection(state: TableState, connection: TableState["connection"]): TableState {
  return state.connection === connection ? state : { ...state, connection };
}

/** The room closed (its stream ended) while this page showed its result. */
export function closed(state: TableState): TableState {
  return { ...state, closed: true };
}
