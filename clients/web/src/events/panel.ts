// The Tournaments tab: the events upcoming and running (ListEvents) and mine (ListMyEvents);
// one event's page: register, check in, withdraw, the live bracket (knockout) or rounds
// (Swiss), every earlier round included after a reload, or the arena's matches; the
// standings, the champion and final standings once it is over.
// The live state is follow.ts' (WatchEvent); "your match is ready" is its notice. A match
// played to its end has a Replay (Pairing.matchId), opened below the event's head in the
// history's replay panel (replay.ts), which the live redraws leave alone.

import { authed, currentUser } from "../api";
import { el, errorText, screens, shared, Code, ConnectError } from "../shell";
import { bdi, t } from "../i18n";
import { replayPanel } from "../replay";
import type { Entry, Event, EventWithEntry, Pairing, Standing } from "../gen/basra/matchmaking/v1/events_pb";
import { EventFormat, EventStatus, PairingResult } from "../gen/basra/matchmaking/v1/events_pb";
import { actions, entryWord, errorReason, isOver, ms, until } from "./model";
import { follow, onEventsChange, unfollowUnlessMine, type Followed } from "./follow";
import { isEventWord, w, wx } from "./words";

/** The event whose page is open, if any (kept across redraws and the table). */
let selected: string | null = null;

/** The tab's body. */
export function eventsPanel(): HTMLElement {
  return selected ? eventPage(selected) : eventList();
}

function refusal(err: unknown): string {
  const e = ConnectError.from(err);
  const reason = errorReason(e.details);
  if (reason && isEventWord(reason)) return w(reason);
  if (e.code === Code.PermissionDenied) return w("guestRated");
  return errorText(err);
}

function when(at: number): string {
  const [key, values] = until(at, Date.now());
  return w(key, values);
}

function formatWord(event: Event): string {
  switch (event.definition?.format) {
    case EventFormat.KNOCKOUT:
      return w("knockout");
    case EventFormat.SWISS:
      return w("swiss");
    case EventFormat.ARENA:
      return w("arena");
    default:
      return "";
  }
}

function statusText(event: Event): string {
  switch (event.status) {
    case EventStatus.SCHEDULED:
      return w("scheduled", { when: when(ms(event.registrationOpensAt)) });
    case EventStatus.REGISTRATION:
      return w("registration", { when: when(ms(event.startsAt)) });
    case EventStatus.RUNNING:
      return event.roundsTotal > 0 ? w("runningRound", { round: event.currentRound, total: event.roundsTotal }) : w("running");
    case EventStatus.FINISHED:
      return w("finished");
    case EventStatus.CANCELLED:
      return w("cancelled", { reason: event.cancelReason });
    default:
      return "";
  }
}

/** Format, target, rated, players: one line. */
function facts(event: Event): string {
  const def = event.definition;
  return [
    formatWord(event),
    w("target", { target: def?.settings?.targetScore ?? 101 }),
    def?.rated ? w("rated") : "",
    w("players", { n: event.registered, cap: def?.cap ?? 0 }),
  ]
    .filter(Boolean)
    .join(" · ");
}

// ---------------------------------------------------------------------------------------
// The list

function eventList(): HTMLElement {
  const api = shared.api;
  const list = el("ul", { class: "events", "data-testid": "events" });
  const mine = el("ul", { class: "events", "data-testid": "my-events" });
  const problem = el("p", { class: "problem", role: "alert" });
  const open = (eventId: string) => {
    selected = eventId;
    screens.lobby();
  };
  const row = (e: EventWithEntry, extra: Node[] = []) => {
    const event = e.event!;
    const entry = isOver(event) ? null : entryWord(e.entry);
    return el(
      "li",
      { "data-testid": "event", "data-event-id": event.eventId },
      el("strong", {}, bdi(event.definition?.name ?? "")),
      " — ",
      statusText(event),
      el("br"),
      el("span", { class: "hint-text" }, facts(event)),
      entry ? el("span", { class: "hint-text" }, " · ", w(entry)) : null,
      ...extra,
      " ",
      el("button", { "data-testid": "event-open", onclick: () => open(event.eventId) }, w("open")),
    );
  };
  const load = async () => {
    try {
      const [all, my] = await Promise.all([
        authed(api, () => api.events.listEvents({ pageSize: 50 })),
        authed(api, () => api.events.listMyEvents({ pageSize: 20 })),
      ]);
      list.replaceChildren(...(all.events.length ? all.events.filter((e) => e.event).map((e) => row(e)) : [el("li", {}, w("none"))]));
      const finished = my.events.filter((m) => m.event?.event && m.rank > 0);
      mine.replaceChildren(
        ...finished.map((m) => row(m.event!, [el("span", { class: "hint-text" }, " · ", w("myRank", { rank: m.rank, points: m.points }))])),
      );
    } catch (err) {
      problem.textContent = errorText(err);
    }
  };
  void load();
  return el(
    "div",
    {},
    el(
      "section",
      { class: "card-panel", "aria-labelledby": "events-title" },
      el("h2", { id: "events-title" }, w("title")),
      el("button", { "data-testid": "events-refresh", onclick: load }, w("refresh")),
      list,
      problem,
    ),
    el("section", { class: "card-panel", "aria-labelledby": "my-events-title" }, el("h2", { id: "my-events-title" }, w("myEvents")), mine),
  );
}

// ---------------------------------------------------------------------------------------
// One event

function eventPage(eventId: string): HTMLElement {
  const api = shared.api;
  const f = follow(eventId);
  let event: Event | undefined;
  let entry: Entry | undefined;
  const head = el("div", {});
  const doing = el("div", { "data-testid": "event-actions" });
  const live = el("div", { "data-testid": "event-live" });
  // The replay of a match of the event: kept across the live redraws.
  const replaying = el("div", { "data-testid": "event-replay" });
  const replay = (matchId: string) => {
    const panel = replayPanel(matchId, () => panel.remove());
    panel.dataset.matchId = matchId;
    replaying.replaceChildren(panel);
    panel.scrollIntoView({ block: "nearest" });
  };
  const problem = el("p", { class: "problem", role: "alert", "data-testid": "event-problem" });
  const root = el(
    "div",
    {},
    el(
      "section",
      { class: "card-panel", "aria-labelledby": "event-title" },
      el(
        "button",
        {
          class: "quiet",
          "data-testid": "events-back",
          onclick: () => {
            selected = null;
            unfollowUnlessMine(eventId);
            screens.lobby();
          },
        },
        w("back"),
      ),
      head,
      doing,
      problem,
    ),
    replaying,
    live,
  );
  const drawHead = () => {
    const shown = f.last?.event ?? event;
    if (!shown) return;
    head.replaceChildren(
      ...present(
      el("h2", { id: "event-title", "data-testid": "event-name" }, bdi(shown.definition?.name ?? "")),
      el("p", { "data-testid": "event-status", "data-status": EventStatus[shown.status] }, statusText(shown)),
      el("p", { class: "hint-text" }, facts(shown)),
      shown.champion ? el("p", { class: "banner", "data-testid": "event-champion" }, ...wx("champion", { name: bdi(nameOf(f, shown.champion)) })) : null,
      ),
    );
  };
  const drawActions = () => {
    const shown = f.last?.event ?? event;
    if (!shown) return;
    const can = actions(shown, entry, Date.now());
    // Once the event is over, the standings say where the player finished.
    const word = isOver(shown) ? null : entryWord(entry);
    const act = (call: () => Promise<unknown>) => async () => {
      problem.textContent = "";
      try {
        await authed(api, call);
        if (entry === undefined) f.mine = true;
      } catch (err) {
        problem.textContent = refusal(err);
      }
      await refresh();
    };
    doing.replaceChildren(
      ...present(
      word ? el("p", { "data-testid": "event-entry", "data-entry": word }, w(word)) : null,
      can.checkIn ? el("p", { class: "hint-text" }, w("checkInNow")) : null,
      can.checkInOpensAt ? el("p", { class: "hint-text" }, w("checkInOpens", { when: when(can.checkInOpensAt) })) : null,
      can.register ? el("button", { "data-testid": "event-register", onclick: act(() => api.events.register({ eventId })) }, w("register")) : null,
      can.checkIn ? el("button", { "data-testid": "event-check-in", onclick: act(() => api.events.checkIn({ eventId })) }, w("checkIn")) : null,
      can.withdraw ? el("button", { class: "quiet", "data-testid": "event-withdraw", onclick: act(() => api.events.withdraw({ eventId })) }, w("withdraw")) : null,
      ),
    );
  };
  const drawLive = () => {
    const update = f.last;
    if (!update?.event) return;
    const format = update.event.definition?.format;
    const final = update.event.status === EventStatus.FINISHED;
    const parts: Node[] = [];
    // A knockout's bracket, a Swiss' rounds: every round, the earlier ones too after a
    // reload (the stream's first update brings them).
    if ((format === EventFormat.KNOCKOUT || format === EventFormat.SWISS) && f.rounds.size) parts.push(bracket(f, update.event, replay));
    else if (update.pairings.length) parts.push(matches(f, update.event, update.pairings, replay));
    parts.push(standings(f, update.standings, format ?? EventFormat.UNSPECIFIED, final));
    live.replaceChildren(...parts);
  };
  /** The event and my entry again (after an action, a change of the live state). */
  const refresh = async () => {
    try {
      const answer = await authed(api, () => api.events.getEvent({ eventId }));
      event = answer.event?.event;
      entry = answer.event?.entry;
      if (entry) f.mine = true;
    } catch (err) {
      problem.textContent = refusal(err);
    }
    drawHead();
    drawActions();
  };
  let seen = -1n;
  const stop = onEventsChange(() => {
    if (!root.isConnected) return stop();
    const version = f.last?.version ?? -1n;
    if (version === seen) return;
    seen = version;
    drawLive();
    void refresh();
  });
  // Times in words move on (and check-in opens) without a change of the event.
  const timer = setInterval(() => {
    if (!root.isConnected) {
      clearInterval(timer);
      stop();
      return;
    }
    drawHead();
    if (!doing.contains(document.activeElement)) drawActions();
  }, 1000);
  drawLive();
  void refresh();
  return root;
}

/** The nodes that are there. */
function present(...nodes: (Node | null)[]): Node[] {
  return nodes.filter((n): n is Node => n !== null);
}

function nameOf(f: Followed, userId: string): string {
  if (userId === currentUser()?.userId) return currentUser()?.name ?? userId;
  return f.names.get(userId) ?? userId.slice(0, 8);
}

function player(f: Followed, userId: string, winner: string): HTMLElement {
  const me = userId === currentUser()?.userId;
  return el(
    "span",
    { class: `player${userId === winner ? " winner" : ""}${me ? " me" : ""}`, "data-testid": "bracket-player" },
    bdi(nameOf(f, userId)),
    me ? ` (${w("you")})` : "",
  );
}

function resultText(f: Followed, p: Pairing): Node[] {
  switch (p.result) {
    case PairingResult.WON:
      return wx("won", { name: bdi(nameOf(f, p.winner)) });
    case PairingResult.FORFEIT:
      return wx("forfeit", { name: bdi(nameOf(f, p.winner)) });
    case PairingResult.BOTH_ABSENT:
      return [document.createTextNode(w("bothAbsent"))];
    case PairingResult.BYE:
      return [document.createTextNode(w("bye"))];
    default:
      return [document.createTextNode(w("playing"))];
  }
}

/** Opens the replay of a match of the event (by its match id). */
type Replay = (matchId: string) => void;

function match(f: Followed, event: Event, p: Pairing, replay: Replay): HTMLElement {
  const mine = p.userIds.includes(currentUser()?.userId ?? "");
  const watchable = event.definition?.allowSpectators && p.result === PairingResult.UNSPECIFIED && p.roomId && !mine;
  const names = p.userIds.flatMap((u, i) => (i ? [" – ", player(f, u, p.winner)] : [player(f, u, p.winner)]));
  return el(
    "li",
    { class: "match", "data-testid": "event-match", "data-round": p.round, "data-result": PairingResult[p.result], "data-match-id": p.matchId || undefined },
    ...names,
    el("span", { class: "hint-text" }, " · ", ...resultText(f, p)),
    watchable ? el("button", { class: "quiet", onclick: () => screens.table(p.roomId, { spectate: true }) }, w("watch")) : null,
    // Played to its end (anyone may replay an event match).
    p.matchId ? el("button", { class: "quiet", "data-testid": "event-match-replay", onclick: () => replay(p.matchId) }, t("replay")) : null,
  );
}

/** A knockout's (or Swiss') rounds, side by side. */
function bracket(f: Followed, event: Event, replay: Replay): HTMLElement {
  const rounds = [...f.rounds.entries()].sort(([a], [b]) => a - b);
  const knockout = event.definition?.format === EventFormat.KNOCKOUT;
  return el(
    "section",
    { class: "card-panel", "aria-labelledby": "bracket-title" },
    el("h2", { id: "bracket-title" }, w(knockout ? "bracket" : "rounds")),
    el(
      "div",
      { class: "bracket", "data-testid": "bracket" },
      ...rounds.map(([round, pairings]) =>
        el("div", { class: "round" }, el("h3", {}, w("round", { n: round })), el("ul", {}, ...pairings.map((p) => match(f, event, p, replay)))),
      ),
    ),
  );
}

/** The matches in progress and the last results (arena). */
function matches(f: Followed, event: Event, pairings: Pairing[], replay: Replay): HTMLElement {
  return el(
    "section",
    { class: "card-panel", "aria-labelledby": "matches-title" },
    el("h2", { id: "matches-title" }, w("pairings")),
    el("ul", { class: "matches" }, ...pairings.map((p) => match(f, event, p, replay))),
  );
}

function standings(f: Followed, rows: Standing[], format: EventFormat, final: boolean): HTMLElement {
  const extra =
    format === EventFormat.KNOCKOUT ? w("reached") : format === EventFormat.SWISS ? w("tiebreak") : format === EventFormat.ARENA ? w("perf") : "";
  const extraOf = (s: Standing) =>
    format === EventFormat.KNOCKOUT ? s.roundReached : format === EventFormat.SWISS ? s.buchholz : format === EventFormat.ARENA ? s.performance : "";
  const me = currentUser()?.userId;
  return el(
    "section",
    { class: "card-panel", "aria-labelledby": "standings-title" },
    el("h2", { id: "standings-title" }, w(final ? "finalStandings" : "standings")),
    rows.length
      ? el(
          "table",
          { class: "standings", "data-testid": "event-standings", "data-final": final ? "true" : "false" },
          el("thead", {}, el("tr", {}, ...[w("rank"), w("player"), w("points"), w("played"), extra].map((h) => el("th", {}, h)))),
          el(
            "tbody",
            {},
            ...rows.map((s) =>
              el(
                "tr",
                { class: s.userId === me ? "me" : undefined, "data-testid": "standing", "data-rank": s.rank },
                el("td", {}, String(s.rank)),
                el("td", {}, bdi(s.displayName || nameOf(f, s.userId))),
                el("td", {}, String(s.points)),
                el("td", {}, String(s.played)),
                el("td", {}, String(extraOf(s))),
              ),
            ),
          ),
        )
      : el("p", { class: "hint-text" }, w("noResults")),
  );
}
