// Basra online in the browser: sign in (a guest, or an account), the lobby's tabs (play,
// friends, ranked, profile), the queue, the table. No framework: each screen is drawn from
// its state; shell.ts holds what they share.

import { authed, connect, currentUser, logIn, resume, signIn, signOut } from "./api";
import { app, el, errorText, header, screens, shared, view } from "./shell";
import { applyDirection, t } from "./i18n";
import { friendsPanel, startFeed, stopFeed } from "./social";
import { eventsPanel } from "./events/panel";
import { startEvents, stopEvents } from "./events/follow";
import { w } from "./events/words";
import { NAME_MAX, nameError, nameProblem, profilePanel, rankedPanel, refuseLongPaste, signInError } from "./account";
import { ROOM_KEY, showTable } from "./table/controller";
import type { RuleSettings } from "./gen/basra/common/v1/common_pb";
import { BotLevel, RoomVisibility, SeatOccupant } from "./gen/basra/common/v1/common_pb";

type Tab = "play" | "events" | "friends" | "ranked" | "profile";
let tab: Tab = "play";

// ---------------------------------------------------------------------------------------
// Sign-in

function showSignIn(): void {
  view.redraw = showSignIn;
  const input = el("input", { id: "name", "data-testid": "name", maxlength: NAME_MAX, autocomplete: "nickname", required: true, "aria-describedby": "name-rules" });
  const problem = el("p", { class: "problem", role: "alert", "data-testid": "sign-in-problem" });
  refuseLongPaste(input, (text) => (problem.textContent = text));
  const form = el(
    "form",
    {
      class: "card-panel",
      onsubmit: async (e: Event) => {
        e.preventDefault();
        const wrong = nameProblem(input.value);
        if (wrong) {
          problem.textContent = wrong;
          return;
        }
        try {
          await signIn(shared.api, input.value.trim());
          startFeed();
          void startEvents();
          showLobby();
        } catch (err) {
          problem.textContent = nameError(err);
        }
      },
    },
    el("h2", {}, t("signInTitle")),
    el("label", { for: "name" }, t("yourName")),
    input,
    el("p", { id: "name-rules", class: "hint-text" }, t("nameRules")),
    el("button", { type: "submit", "data-testid": "sign-in" }, t("signIn")),
    problem,
  );
  app.replaceChildren(header(), el("main", {}, form, el("section", { class: "card-panel" }, profileSignInOnly())));
  input.focus();
}

/** Sign in with a username and password, from the first screen. */
function profileSignInOnly(): Node {
  const user = el("input", { id: "first-username", "data-testid": "first-username", autocomplete: "username", maxlength: 20 });
  const pass = el("input", { id: "first-password", "data-testid": "first-password", type: "password", autocomplete: "current-password" });
  const message = el("p", { role: "status" });
  return el(
    "form",
    {
      onsubmit: async (e: Event) => {
        e.preventDefault();
        try {
          await logIn(shared.api, user.value.trim(), pass.value);
          startFeed();
          void startEvents();
          showLobby();
        } catch (err) {
          message.textContent = signInError(err);
        }
      },
    },
    el("h2", {}, t("loginTitle")),
    el("label", { for: "first-username" }, t("username")),
    user,
    el("label", { for: "first-password" }, t("password")),
    pass,
    el("button", { type: "submit", "data-testid": "first-log-in" }, t("logIn")),
    message,
  );
}

// ---------------------------------------------------------------------------------------
// Lobby

function showLobby(notice = ""): void {
  view.redraw = () => showLobby(notice);
  const tabs: [Tab, string][] = [
    ["play", t("tabPlay")],
    ["events", w("tab")],
    ["friends", t("tabFriends")],
    ["ranked", t("tabRanked")],
    ["profile", t("tabProfile")],
  ];
  const nav = el(
    "nav",
    { class: "tabs", "aria-label": t("title") },
    ...tabs.map(([id, label]) =>
      el(
        "button",
        {
          "data-testid": `tab-${id}`,
          "aria-current": tab === id ? "page" : undefined,
          onclick: () => {
            tab = id;
            showLobby();
          },
        },
        label,
      ),
    ),
  );
  const body =
    tab === "events" ? eventsPanel() : tab === "friends" ? friendsPanel() : tab === "ranked" ? rankedPanel() : tab === "profile" ? profilePanel() : playPanel(notice);
  app.replaceChildren(
    header(),
    el(
      "main",
      { class: "lobby" },
      nav,
      body,
      el(
        "button",
        {
          class: "quiet",
          "data-testid": "sign-out",
          onclick: async () => {
            stopFeed();
            stopEvents();
            await signOut(shared.api);
            tab = "play";
            showSignIn();
          },
        },
        t("signOut"),
      ),
    ),
  );
}

function playPanel(notice: string): HTMLElement {
  const api = shared.api;
  const problem = el("p", { class: "problem", role: "alert", "data-testid": "problem" }, notice);
  const fail = (err: unknown) => (problem.textContent = errorText(err));
  const target = el(
    "select",
    { id: "target", "data-testid": "target", "aria-describedby": "target-hint" },
    ...[101, 61, 31, 11].map((n) => el("option", { value: n }, String(n))),
  );
  const settings = (): Partial<RuleSettings> => ({ targetScore: Number(target.value) });
  const level = el(
    "select",
    { id: "bot-level", "data-testid": "bot-level" },
    ...(
      [
        [BotLevel.EASY, "botEasy"],
        [BotLevel.MEDIUM, "botMedium"],
        [BotLevel.HARD, "botHard"],
      ] as const
    ).map(([value, name]) => el("option", value === BotLevel.MEDIUM ? { value, selected: true } : { value }, t(name))),
  );
  const create = async (visibility: RoomVisibility, bots: number[]) => {
    try {
      const room = await authed(api, () =>
        api.matchmaking.createRoom({
          requestId: crypto.randomUUID(),
          visibility,
          settings: settings(),
          botSeats: bots,
          botLevel: bots.length ? (Number(level.value) as BotLevel) : BotLevel.UNSPECIFIED,
        }),
      );
      showTable(room.roomId, { code: room.joinCode });
    } catch (err) {
      fail(err);
    }
  };
  const code = el("input", { id: "code", "data-testid": "code", maxlength: 7, autocomplete: "off", placeholder: "ABC234" });
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
                el("bdi", {}, host),
                ` — ${t("seatsTaken", { taken, seats: room.seats.length, target: room.settings?.targetScore ?? 101 })} `,
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
  void listRooms();
  return el(
    "div",
    {},
    el(
      "section",
      { class: "card-panel", "aria-labelledby": "queue-title" },
      el("h2", { id: "queue-title" }, t("quickMatch")),
      el("p", { class: "hint-text" }, t("queueFormat")),
      el("button", { "data-testid": "quick-match", onclick: () => showSearch(false) }, t("quickMatch")),
      el("button", { "data-testid": "ranked-match", onclick: () => showSearch(true) }, t("rankedMatch")),
    ),
    el(
      "section",
      { class: "card-panel", "aria-labelledby": "room-title" },
      el("h2", { id: "room-title" }, t("yourRoom")),
      el("label", { for: "target" }, t("target")),
      target,
      el("p", { id: "target-hint", class: "hint-text" }, t("targetHint")),
      el("label", { for: "bot-level" }, t("computerLevel")),
      level,
      el("button", { "data-testid": "play-computer", onclick: () => create(RoomVisibility.PRIVATE, [1]) }, t("playComputer")),
      el("button", { "data-testid": "create-private", onclick: () => create(RoomVisibility.PRIVATE, []) }, t("createPrivate")),
      el("button", { "data-testid": "create-public", onclick: () => create(RoomVisibility.PUBLIC, []) }, t("createPublic")),
    ),
    el(
      "form",
      { class: "card-panel", onsubmit: (e: Event) => { e.preventDefault(); join({ case: "joinCode", value: code.value.trim().toUpperCase() }); } },
      el("h2", {}, el("label", { for: "code" }, t("joinByCode"))),
      code,
      el("button", { type: "submit", "data-testid": "join-code" }, t("join")),
    ),
    el(
      "section",
      { class: "card-panel", "aria-labelledby": "public-title" },
      el("h2", { id: "public-title" }, t("publicRooms")),
      el("button", { onclick: listRooms }, t("refresh")),
      rooms,
    ),
    problem,
  );
}

function showSearch(ranked: boolean): void {
  const api = shared.api;
  const abort = new AbortController();
  const ticketId = crypto.randomUUID();
  const words = ranked ? "searchingRanked" : "searching";
  const status = el("p", { "aria-live": "polite", "data-testid": "searching" }, t(words, { waiting: 0 }));
  view.redraw = () => {};
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
      const updates = api.matchmaking.findMatch({ ticketId, ranked, allowBots: !ranked }, { signal: abort.signal });
      for await (const update of updates) {
        if (update.update.case === "queued") status.textContent = t(words, { waiting: update.update.value.playersWaiting });
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

screens.lobby = showLobby;
screens.signIn = showSignIn;
screens.signedOut = () => {
  stopFeed();
  stopEvents();
  tab = "play";
  showSignIn();
};
screens.table = showTable;

async function start(): Promise<void> {
  applyDirection();
  shared.api = await connect();
  const back = await resume(shared.api).catch(() => false);
  if (!back || !currentUser()) return showSignIn();
  startFeed();
  void startEvents();
  const room = localStorage.getItem(ROOM_KEY);
  if (room) showTable(room);
  else showLobby();
}

void start();
