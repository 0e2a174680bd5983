// Basra online in the browser: sign in as a guest, pick a game, play at the table.
// Events come from GameService.Watch (resumed from the last seq after a break); actions are
// Game's unary calls. No framework: each screen is drawn from its state.

import { timestampMs } from "@bufbuild/protobuf/wkt";
import { connect, signIn, rememberedName, forget, authed, rejectCode, ConnectError, Code, type Api } from "./api";
import { applyDirection, cardName, lang, phrase, phraseCodes, setLang, t } from "./i18n";
import { cardBack, cardFace, cardKey, sameCard, wouldTake, type CardLike } from "./cards";
import type { PlayResponse, MatchEnded } from "./gen/basra/game/v1/game_pb";
import type { SeatInfo, RuleSettings } from "./gen/basra/common/v1/common_pb";
import { BasraKind, BotLevel, MatchEndReason, RoomVisibility, SeatOccupant } from "./gen/basra/common/v1/common_pb";

const ROOM_KEY = "basra.room";
const app = document.getElementById("app")!;
let api: Api;

// ---------------------------------------------------------------------------------------
// Small DOM helpers

type Attrs = Record<string, string | number | boolean | ((e: Event) => void)>;

function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Attrs = {},
  ...children: (Node | string | null | undefined | false)[]
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (typeof value === "function") node.addEventListener(key.replace(/^on/, ""), value);
    else if (value === false) continue;
    else if (key === "class") node.className = String(value);
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children) if (child) node.append(child);
  return node;
}

function header(): HTMLElement {
  const name = rememberedName();
  return el(
    "header",
    { class: "bar" },
    el("h1", {}, t("title")),
    name ? el("span", { class: "who", "data-testid": "who" }, t("signedInAs", { name })) : null,
    el("button", { class: "lang", "data-testid": "lang", onclick: () => { setLang(lang() === "ar" ? "en" : "ar"); redraw(); } }, t("language")),
  );
}

let redraw: () => void = () => {};

function errorText(err: unknown): string {
  return t("error", { message: ConnectError.from(err).rawMessage });
}

// ---------------------------------------------------------------------------------------
// Sign-in and lobby

function showSignIn(): void {
  redraw = showSignIn;
  const input = el("input", { id: "name", "data-testid": "name", maxlength: 32, autocomplete: "nickname", required: true });
  const problem = el("p", { class: "problem", role: "alert" });
  const form = el(
    "form",
    {
      class: "card-panel",
      onsubmit: async (e: Event) => {
        e.preventDefault();
        const name = input.value.trim();
        if (!name) return;
        try {
          await signIn(api, name);
          showLobby();
        } catch (err) {
          problem.textContent = errorText(err);
        }
      },
    },
    el("h2", {}, t("signInTitle")),
    el("label", { for: "name" }, t("yourName")),
    input,
    el("button", { type: "submit", "data-testid": "sign-in" }, t("signIn")),
    problem,
  );
  app.replaceChildren(header(), el("main", {}, form));
  input.focus();
}

function showLobby(notice = ""): void {
  redraw = () => showLobby(notice);
  const problem = el("p", { class: "problem", role: "alert", "data-testid": "problem" }, notice);
  const fail = (err: unknown) => (problem.textContent = errorText(err));
  const target = el(
    "select",
    { id: "target", "data-testid": "target", "aria-label": "target" },
    ...[101, 61, 31, 11].map((n) => el("option", { value: n }, String(n))),
  );
  const settings = (): Partial<RuleSettings> => ({ targetScore: Number(target.value) });
  const create = async (visibility: RoomVisibility, bots: number[]) => {
    try {
      const room = await authed(api, () =>
        api.matchmaking.createRoom({
          requestId: crypto.randomUUID(),
          visibility,
          settings: settings(),
          botSeats: bots,
          botLevel: BotLevel.MEDIUM,
        }),
      );
      showTable(room.roomId, room.joinCode);
    } catch (err) {
      fail(err);
    }
  };
  const code = el("input", { id: "code", "data-testid": "code", maxlength: 6, autocomplete: "off", "aria-label": t("code"), placeholder: t("code") });
  const rooms = el("ul", { class: "rooms", "data-testid": "rooms" });
  const listRooms = async () => {
    try {
      const answer = await authed(api, () => api.matchmaking.listPublicRooms({ pageSize: 20 }));
      rooms.replaceChildren(
        ...(answer.rooms.length
          ? answer.rooms.map((room) => {
              const taken = room.seats.filter((s) => s.occupant !== SeatOccupant.OPEN).length;
              const host = room.seats.find((s) => s.displayName)?.displayName ?? "?";
              return el(
                "li",
                {},
                `${host} — ${t("seatsTaken", { taken, seats: room.seats.length, target: room.settings?.targetScore ?? 101 })} `,
                el("button", { onclick: () => join({ case: "roomId", value: room.roomId }) }, t("join")),
              );
            })
          : [el("li", {}, t("noRooms"))]),
      );
    } catch (err) {
      fail(err);
    }
  };
  const join = async (target: { case: "roomId"; value: string } | { case: "joinCode"; value: string }) => {
    try {
      const joined = await authed(api, () => api.matchmaking.joinRoom({ target }));
      showTable(joined.roomId);
    } catch (err) {
      fail(err);
    }
  };
  app.replaceChildren(
    header(),
    el(
      "main",
      { class: "lobby" },
      el(
        "section",
        { class: "card-panel" },
        el("label", { for: "target" }, "🎯 "),
        target,
        el("button", { "data-testid": "play-computer", onclick: () => create(RoomVisibility.PRIVATE, [1]) }, t("playComputer")),
        el("button", { "data-testid": "quick-match", onclick: () => showSearch() }, t("quickMatch")),
        el("button", { "data-testid": "create-private", onclick: () => create(RoomVisibility.PRIVATE, []) }, t("createPrivate")),
        el("button", { "data-testid": "create-public", onclick: () => create(RoomVisibility.PUBLIC, []) }, t("createPublic")),
      ),
      el(
        "form",
        { class: "card-panel", onsubmit: (e: Event) => { e.preventDefault(); join({ case: "joinCode", value: code.value.trim().toUpperCase() }); } },
        el("h2", {}, t("joinByCode")),
        code,
        el("button", { type: "submit", "data-testid": "join-code" }, t("join")),
      ),
      el(
        "section",
        { class: "card-panel" },
        el("h2", {}, t("publicRooms")),
        el("button", { onclick: listRooms }, t("refresh")),
        rooms,
      ),
      problem,
      el(
        "button",
        { class: "quiet", onclick: () => { forget(); showSignIn(); } },
        t("signOut"),
      ),
    ),
  );
  void listRooms();
}

function showSearch(): void {
  const abort = new AbortController();
  const ticketId = crypto.randomUUID();
  const status = el("p", { "aria-live": "polite", "data-testid": "searching" }, t("searching", { waiting: 0 }));
  redraw = () => {};
  app.replaceChildren(
    header(),
    el(
      "main",
      {},
      el(
        "section",
        { class: "card-panel" },
        status,
        el("button", { onclick: () => { abort.abort(); void api.matchmaking.cancelFind({ ticketId }).catch(() => {}); showLobby(); } }, t("cancel")),
      ),
    ),
  );
  void (async () => {
    try {
      const updates = api.matchmaking.findMatch({ ticketId, allowBots: true }, { signal: abort.signal });
      for await (const update of updates) {
        if (update.update.case === "queued") status.textContent = t("searching", { waiting: update.update.value.playersWaiting });
        if (update.update.case === "matched") {
          abort.abort();
          showTable(update.update.value.roomId);
          return;
        }
        if (update.update.case === "cancelled") break;
      }
      showLobby();
    } catch (err) {
      if (!abort.signal.aborted) showLobby(errorText(err));
    }
  })();
}

// ---------------------------------------------------------------------------------------
// The table

interface TableState {
  roomId: string;
  code?: string;
  seat?: number;
  seats: SeatInfo[];
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
  rematchAsked: boolean;
  announcements: string[];
  connection: "ok" | "reconnecting";
  busy: boolean;
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

function nameOf(state: TableState, seat: number): string {
  if (seat === state.seat) return t("you");
  return state.seats[seat]?.displayName || `#${seat + 1}`;
}

function showTable(roomId: string, code?: string): void {
  stopTable();
  localStorage.setItem(ROOM_KEY, roomId);
  const abort = new AbortController();
  const state: TableState = {
    roomId,
    code,
    seats: [],
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
    rematchAsked: false,
    announcements: [],
    connection: "ok",
    busy: false,
  };
  const timer = setInterval(() => drawCountdown(state), 250);
  const onKey = (e: KeyboardEvent) => {
    const n = Number(e.key);
    if (n >= 1 && n <= state.hand.length && !(e.target instanceof HTMLInputElement)) void play(state, state.hand[n - 1]);
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
  redraw = () => drawTable(state);
  drawTable(state);
  void watch(state, abort.signal);
}

function leaveTable(notice = ""): void {
  stopTable();
  localStorage.removeItem(ROOM_KEY);
  showLobby(notice);
}

async function watch(state: TableState, signal: AbortSignal): Promise<void> {
  let backoff = 250;
  while (!signal.aborted) {
    try {
      const stream = api.game.watch(
        { roomId: state.roomId, lastSeenSeq: state.synced ? state.lastSeq : undefined },
        { signal },
      );
      for await (const message of stream) {
        if (state.connection !== "ok") {
          state.connection = "ok";
        }
        backoff = 250;
        if (message.event) apply(state, message.event);
        drawTable(state);
      }
      return; // the room closed
    } catch (err) {
      if (signal.aborted) return;
      const e = ConnectError.from(err);
      if (e.code === Code.Unauthenticated && rememberedName()) {
        await signIn(api, rememberedName()!).catch(() => {});
        continue;
      }
      if (e.code === Code.NotFound || e.code === Code.PermissionDenied) return leaveTable(errorText(err));
      if (e.code === Code.FailedPrecondition) return leaveTable(t("replaced"));
      state.connection = "reconnecting";
      drawTable(state);
      await new Promise((r) => setTimeout(r, backoff));
      backoff = Math.min(backoff * 2, 4000);
    }
  }
}

function announce(state: TableState, text: string): void {
  state.announcements = [...state.announcements.slice(-3), text];
}

function apply(state: TableState, event: PlayResponse): void {
  if (event.serverTime) state.offsetMs = timestampMs(event.serverTime) - Date.now();
  const e = event.event;
  if (e.case !== "rejected" && e.case !== "pong") {
    state.lastSeq = event.seq;
    state.synced = true;
  }
  switch (e.case) {
    case "snapshot": {
      const v = e.value.view!;
      state.seat = v.yourSeat;
      state.seats = v.seats;
      state.hand = v.hand.map(card);
      state.handCounts = [...v.handCounts];
      state.table = v.table.map(card);
      state.pileSizes = [...v.pileSizes];
      state.totals = [...v.totals];
      state.round = v.round;
      state.deck = v.deckRemaining;
      state.turn = v.turn;
      state.deadlineMs = v.turnDeadline ? timestampMs(v.turnDeadline) : undefined;
      break;
    }
    case "seatChanged":
      if (e.value.seat) state.seats[e.value.seat.seat] = e.value.seat;
      break;
    case "matchStarted": {
      const sides = new Set(e.value.seats.map((s) => s.side)).size || 2;
      state.seats = e.value.seats;
      state.hand = [];
      state.table = [];
      state.handCounts = e.value.seats.map(() => 0);
      state.pileSizes = Array(sides).fill(0);
      state.totals = Array(sides).fill(0);
      state.ended = undefined;
      state.rematchAsked = false;
      state.code = undefined;
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
      if (p.seat === state.seat) state.hand = state.hand.filter((c) => !sameCard(c, played));
      state.handCounts[p.seat] = Math.max(0, (state.handCounts[p.seat] ?? 1) - 1);
      const taken = p.taken.map(card);
      if (taken.length) {
        state.table = state.table.filter((c) => !taken.some((x) => sameCard(x, c)));
        const side = sideOf(state, p.seat);
        state.pileSizes[side] = (state.pileSizes[side] ?? 0) + taken.length + 1;
        announce(state, t("captured", { name: nameOf(state, p.seat), cards: [played, ...taken].map(cardKey).join(" ") }));
      } else {
        state.table = [...state.table, played];
      }
      if (p.basra === BasraKind.BASRA) announce(state, `🎉 ${t("basra", { points: p.basraPoints })}`);
      if (p.basra === BasraKind.JACK) announce(state, `🎉 ${t("jackBasra", { points: p.basraPoints })}`);
      if (p.basra === BasraKind.KOMI) announce(state, `🎉 ${t("komiBasra", { points: p.basraPoints })}`);
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
      const scores = e.value.sides.map((s) => `${s.roundPoints}`).join(" – ");
      announce(state, t("roundOver", { n: e.value.round, scores }));
      break;
    }
    case "matchEnded":
      state.ended = e.value;
      state.totals = [...e.value.totals];
      state.turn = undefined;
      if (e.value.reason !== MatchEndReason.TARGET_REACHED && e.value.forfeitSeat !== undefined) {
        const name = nameOf(state, e.value.forfeitSeat);
        announce(state, e.value.reason === MatchEndReason.RESIGNED ? t("reasonResigned", { name }) : t("reasonAbandoned", { name }));
      }
      break;
    case "connectionChanged": {
      const seat = state.seats[e.value.seat];
      const connected = e.value.state === 1;
      if (seat) seat.connected = connected;
      if (e.value.seat !== state.seat) announce(state, t(connected ? "reconnected" : "disconnected", { name: nameOf(state, e.value.seat) }));
      break;
    }
    case "chat":
      announce(state, `💬 ${nameOf(state, e.value.seat)}: ${phrase(e.value.phrase)}`);
      break;
    case "rematchOffered":
      if (e.value.seat !== state.seat) announce(state, t("rematchOffered", { name: nameOf(state, e.value.seat) }));
      break;
    default:
      break;
  }
}

async function play(state: TableState, c: CardLike): Promise<void> {
  if (state.turn !== state.seat || state.busy || state.ended) return;
  state.busy = true;
  try {
    await authed(api, () =>
      api.game.playCard({
        roomId: state.roomId,
        card: c,
        basedOnSeq: state.lastSeq,
        clientMoveId: crypto.randomUUID(),
      }),
    );
  } catch (err) {
    announce(state, rejectCode(err) === "REJECT_CODE_STALE" ? t("stale") : errorText(err));
  } finally {
    state.busy = false;
    drawTable(state);
  }
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
  const highlight = (c: CardLike | null) => {
    const take = c ? new Set(wouldTake(c, state.table)) : new Set<number>();
    tableCards.forEach((node, i) => node.classList.toggle("would-take", take.has(i)));
  };
  const hand = state.hand.map((c, i) => {
    const take = wouldTake(c, state.table);
    const takes = take.length ? t("takes", { cards: take.map((j) => cardName(state.table[j].rank, state.table[j].suit)).join(", ") }) : t("takesNothing");
    return el(
      "button",
      {
        class: "hand-card",
        "data-testid": "hand-card",
        "data-card": cardKey(c),
        "aria-label": `${i + 1}: ${cardName(c.rank, c.suit)} — ${takes}`,
        title: takes,
        disabled: !myTurn || state.busy,
        onmouseenter: () => highlight(c),
        onmouseleave: () => highlight(null),
        onfocus: () => highlight(c),
        onblur: () => highlight(null),
        onclick: () => void play(state, c),
      },
      cardFace(c),
    );
  });
  const others = state.seats
    .filter((s) => s.seat !== me)
    .map((s) =>
      el(
        "div",
        { class: `opponent ${state.turn === s.seat ? "active" : ""}`, "data-testid": "opponent" },
        el("span", { class: `dot ${s.connected || s.occupant === SeatOccupant.BOT ? "on" : "off"}`, "aria-hidden": "true" }),
        el("span", { class: "name" }, s.displayName || `#${s.seat + 1}`),
        el("span", { class: "sr" }, t("opponentHand", { name: s.displayName, n: state.handCounts[s.seat] ?? 0 })),
        el("div", { class: "backs", "aria-hidden": "true" }, ...Array.from({ length: state.handCounts[s.seat] ?? 0 }, () => cardBack())),
        el("span", { class: "count", "aria-hidden": "true" }, `×${state.handCounts[s.seat] ?? 0}`),
      ),
    );
  const sides = state.totals.map((total, side) => {
    const who = state.seats.filter((s) => s.side === side).map((s) => nameOf(state, s.seat)).join(" + ") || `#${side + 1}`;
    return el(
      "li",
      { "data-testid": "side" },
      el("strong", {}, who),
      ` ${t("score", { n: total })} · ${t("pile", { n: state.pileSizes[side] ?? 0 })}`,
    );
  });
  const turnText =
    state.turn === undefined ? "" : myTurn ? t("yourTurn") : t("theirTurn", { name: nameOf(state, state.turn) });
  const waiting = !state.ended && state.seats.some((s) => s.occupant === SeatOccupant.OPEN);
  const chat = el(
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
              announce(state, errorText(err));
              drawTable(state);
            }
          },
        },
        phrase(code),
      ),
    ),
  );
  const result = state.ended ? resultPanel(state, state.ended) : null;
  app.replaceChildren(
    header(),
    el(
      "main",
      { class: "table-screen", "data-testid": "table" },
      state.connection === "reconnecting" ? el("p", { class: "banner", role: "status" }, t("reconnecting")) : null,
      state.code && waiting ? el("p", { class: "banner code", "data-testid": "room-code" }, t("shareCode", { code: state.code })) : null,
      waiting ? el("p", { class: "banner" }, t("waitingFor")) : null,
      el("section", { class: "opponents" }, ...others),
      el(
        "section",
        { class: "felt", "aria-label": t("table") },
        el("ul", { class: "table-cards", "aria-label": t("table") }, ...(tableCards.length ? tableCards : [el("li", { class: "empty" }, t("emptyTable"))])),
      ),
      el(
        "section",
        { class: "status" },
        el("span", {}, t("round", { n: state.round })),
        el("span", {}, t("deck", { n: state.deck })),
        el("span", { class: `turn ${myTurn ? "mine" : ""}`, "data-testid": "turn" }, turnText),
        el("span", { id: "countdown", class: "countdown", "aria-hidden": "true" }),
        el("ul", { class: "sides" }, ...sides),
      ),
      el("section", { class: "hand", "aria-label": t("yourHand") }, ...hand),
      el("p", { class: "hint" }, t("keysHint")),
      el("div", { class: "announce", "aria-live": "polite", "data-testid": "announce" }, ...state.announcements.map((a, i, all) => el("p", { class: i === all.length - 1 ? "fresh" : "" }, a))),
      el(
        "section",
        { class: "actions" },
        chat,
        !state.ended
          ? el(
              "button",
              {
                class: "danger",
                "data-testid": "resign",
                onclick: async () => {
                  if (!confirm(t("resignConfirm"))) return;
                  await authed(api, () => api.game.resign({ roomId: state.roomId })).catch((err) => announce(state, errorText(err)));
                },
              },
              t("resign"),
            )
          : null,
      ),
      result,
    ),
  );
  drawCountdown(state);
}

function resultPanel(state: TableState, ended: MatchEnded): HTMLElement {
  const mySide = state.seat === undefined ? undefined : sideOf(state, state.seat);
  const title =
    ended.winnerSide === undefined ? t("noWinner") : ended.winnerSide === mySide ? t("youWon") : t("youLost");
  const seed = Array.from(ended.seed, (b) => b.toString(16).padStart(2, "0")).join("");
  return el(
    "section",
    { class: "result", role: "dialog", "aria-label": title, "data-testid": "result" },
    el("h2", {}, title),
    el("p", {}, t("finalScore", { scores: ended.totals.join(" – ") })),
    el("p", { class: "seed", "data-testid": "seed" }, t("seed", { seed })),
    el(
      "button",
      {
        "data-testid": "rematch",
        disabled: state.rematchAsked,
        onclick: async () => {
          state.rematchAsked = true;
          await authed(api, () => api.game.askRematch({ roomId: state.roomId })).catch((err) => announce(state, errorText(err)));
          drawTable(state);
        },
      },
      t("rematch"),
    ),
    el("button", { "data-testid": "back", onclick: () => leaveTable() }, t("backToLobby")),
  );
}

// ---------------------------------------------------------------------------------------

async function start(): Promise<void> {
  applyDirection();
  api = await connect();
  const name = rememberedName();
  if (!name) return showSignIn();
  try {
    await signIn(api, name);
  } catch {
    showSignIn();
    return;
  }
  const room = localStorage.getItem(ROOM_KEY);
  if (room) showTable(room);
  else showLobby();
}

void start();
