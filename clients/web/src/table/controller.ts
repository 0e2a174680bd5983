// The table on screen: GameService.Watch (resumed from the last seq after a break) fed
// through the state (state.ts) and drawn (view.ts) after each event; the player's actions
// through GameService's unary calls (`PlayCard` naming the capture the page showed,
// `Resign`, `QuickChat`, `AskRematch`). A player or a spectator (no hand, no action).

import { authed, rejectCode, renew } from "../api";
import { errorText, screens, shared, view, Code, ConnectError } from "../shell";
import { t } from "../i18n";
import { captureOptions, sameCard, type CardLike } from "../capture";
import { watchRating } from "../account";
import { onFeedChange } from "../social";
import type { PlayResponse } from "../gen/basra/game/v1/game_pb";
import * as table from "./state";
import type { Announcement, TableState } from "./state";
import { drawCountdown, drawTable, tableScreen, type TableActions, type TableScreen } from "./view";
import { forget, keepEnded, keptEnded, sitAt } from "./rooms";

export { ROOM_KEY } from "./rooms";

/** A table on screen: its state, its screen, and the capture its last play named. */
interface Session {
  state: TableState;
  readonly screen: TableScreen;
  /** The capture the page named for its last play, to compare with what was taken. */
  named?: { card: CardLike; taken: CardLike[]; table: CardLike[] };
}

let stopTable: () => void = () => {};
/** The table on screen; events of a table left behind draw nothing. */
let currentTable: Session | null = null;

function draw(session: Session): void {
  if (session === currentTable) drawTable(session.state, session.screen, actionsOf(session));
}

function say(session: Session, a: Announcement): void {
  session.state = table.announce(session.state, a);
}

export function showTable(roomId: string, options: { code?: string; spectate?: boolean } = {}): void {
  stopTable();
  if (!options.spectate) sitAt(roomId);
  const abort = new AbortController();
  const session: Session = { state: table.openTable(roomId, options), screen: tableScreen() };
  const timer = setInterval(() => drawCountdown(session.state), 250);
  const onKey = (e: KeyboardEvent) => {
    const state = session.state;
    if (e.target instanceof HTMLInputElement || state.choosing) return;
    const n = Number(e.key);
    if (n >= 1 && n <= state.hand.length) void choose(session, state.hand[n - 1]);
  };
  document.addEventListener("keydown", onKey);
  // The friends' feed moved: a waiting table redraws its list of friends to invite.
  const unwatchFeed = onFeedChange(() => draw(session));
  stopTable = () => {
    abort.abort();
    clearInterval(timer);
    document.removeEventListener("keydown", onKey);
    unwatchFeed();
    currentTable = null;
    stopTable = () => {};
  };
  currentTable = session;
  view.redraw = () => draw(session);
  draw(session);
  void watch(session, abort.signal);
}

export function leaveTable(notice = ""): void {
  if (currentTable && !currentTable.state.spectate) forget(currentTable.state.roomId);
  stopTable();
  screens.lobby(notice);
}

/**
 * The room closed (its stream ended OK). Seen open, its result stays on the screen
 * without a rematch; found closed (a reload after the rematch window), the player is
 * taken to the lobby.
 */
function roomClosed(session: Session): void {
  const state = session.state;
  if (!state.spectate) forget(state.roomId);
  if (state.live && state.ended) {
    session.state = table.closed(state);
    draw(session);
    return;
  }
  stopTable();
  screens.lobby(t("roomClosed"));
}

async function watch(session: Session, signal: AbortSignal): Promise<void> {
  const api = shared.api;
  let backoff = 250;
  while (!signal.aborted) {
    try {
      const { roomId, synced, lastSeq, spectate } = session.state;
      const stream = api.game.watch({ roomId, lastSeenSeq: synced ? lastSeq : undefined, spectate }, { signal });
      for await (const message of stream) {
        session.state = table.connection(session.state, "ok");
        backoff = 250;
        if (message.event) take(session, message.event);
        draw(session);
      }
      return roomClosed(session);
    } catch (err) {
      if (signal.aborted) return;
      const e = ConnectError.from(err);
      if (e.code === Code.Unauthenticated && (await renew(api).catch(() => false))) continue;
      if (e.code === Code.NotFound || e.code === Code.PermissionDenied) return leaveTable(errorText(err));
      if (e.code === Code.FailedPrecondition) return leaveTable(t("replaced"));
      session.state = table.connection(session.state, "reconnecting");
      draw(session);
      await new Promise((r) => setTimeout(r, backoff));
      backoff = Math.min(backoff * 2, 4000);
    }
  }
}

/** One event into the state, and what the page keeps or fetches because of it. */
function take(session: Session, event: PlayResponse): void {
  const e = event.event;
  if (e.case === "cardPlayed" && e.value.seat === session.state.seat) {
    const card = (c: CardLike | undefined): CardLike => ({ rank: c?.rank ?? 0, suit: c?.suit ?? 0 });
    checkNamed(session, card(e.value.card), e.value.taken.map(card));
  }
  const state = table.apply(session.state, event, { now: Date.now(), keptEnd: keptEnded });
  session.state = state;
  if (state.spectate) return;
  if (e.case === "matchEnded") keepEnded(state.roomId, e.value);
  // A ranked match's rating change comes after its end: the history has it.
  if ((e.case === "snapshot" || e.case === "matchEnded") && state.ended && state.ranked) {
    watchRating(state.matchId, () => draw(session));
  }
}

/** Logs the table when the server took other cards than the page named. */
function checkNamed(session: Session, played: CardLike, taken: CardLike[]): void {
  const named = session.named;
  session.named = undefined;
  if (!named || !sameCard(named.card, played)) return;
  const same = named.taken.length === taken.length && named.taken.every((c) => taken.some((x) => sameCard(c, x)));
  if (!same) console.warn("basra: the play took other cards than the page showed", JSON.stringify({ ...named, serverTook: taken }));
}

/**
 * The card's captures: one (or none) is played at once, several equally large ones ask
 * the player which (docs/rules.md §6).
 */
async function choose(session: Session, c: CardLike): Promise<void> {
  if (!table.mayPlay(session.state)) return;
  const options = captureOptions(c, session.state.table);
  if (options.length > 1) {
    session.state = table.choosing(session.state, c, options);
    draw(session);
    document.querySelector<HTMLButtonElement>("[data-testid=capture-option]")?.focus();
    return;
  }
  await play(session, c, options[0]);
}

async function play(session: Session, c: CardLike, take: number[] | undefined): Promise<void> {
  if (!table.mayPlay(session.state)) return;
  session.state = table.playSent(session.state);
  const { roomId, table: onTable } = session.state;
  const taken = (take ?? []).map((i) => onTable[i]);
  session.named = { card: c, taken, table: [...onTable] };
  const api = shared.api;
  const request = (named: boolean) =>
    authed(api, () =>
      api.game.playCard({
        roomId,
        card: c,
        // The capture the page showed, so the server takes exactly it or refuses.
        captureChoice: named && taken.length ? { cards: taken } : undefined,
        basedOnSeq: session.state.lastSeq,
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
      console.warn("basra: the server refused the capture the page showed", JSON.stringify(session.named));
      session.named = undefined;
      say(session, { kind: "captureFixed" });
      await request(false);
    }
  } catch (err) {
    const text = rejectCode(err) === "REJECT_CODE_STALE" ? t("stale") : errorText(err);
    say(session, { kind: "said", text });
  } finally {
    session.state = table.playAnswered(session.state);
    draw(session);
  }
}

function actionsOf(session: Session): TableActions {
  const api = shared.api;
  const roomId = session.state.roomId;
  const failed = (err: unknown) => say(session, { kind: "said", text: errorText(err) });
  return {
    choose: (c) => void choose(session, c),
    play: (c, take) => void play(session, c, take),
    cancelChoice: () => {
      session.state = table.choiceCancelled(session.state);
      draw(session);
    },
    chat: async (code) => {
      try {
        await authed(api, () => api.game.quickChat({ roomId, phrase: code }));
      } catch (err) {
        failed(err);
        draw(session);
      }
    },
    resign: () => void authed(api, () => api.game.resign({ roomId })).catch(failed),
    rematch: async () => {
      session.state = table.rematchAsked(session.state);
      await authed(api, () => api.game.askRematch({ roomId })).catch(failed);
      draw(session);
    },
    back: () => leaveTable(),
    leave: () => {
      stopTable();
      screens.lobby();
    },
  };
}
