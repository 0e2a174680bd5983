// The events the player follows, live: one EventService.WatchEvent stream each (resumed
// after a break from the last version seen), the bracket built from the rounds seen, and
// "your match is ready" the moment the player's pairing has a room: GetMyMatch, then a
// notice above every screen with one-tap join (the table). The events the player is in
// are followed from sign-in (ListMyEvents), others while their page is open. A cancelled
// event the player was in is said in the same place.

import { timestampMs } from "@bufbuild/protobuf/wkt";
import { authed, currentUser, renew } from "../api";
import { el, screens, shared, Code, ConnectError } from "../shell";
import { bdi, lang } from "../i18n";
import type { GetMyMatchResponse, Pairing, WatchEventResponse } from "../gen/basra/matchmaking/v1/events_pb";
import { EventStatus } from "../gen/basra/matchmaking/v1/events_pb";
import { applyChanges, isOver, myOpenMatch, namesOf, withRound } from "./model";
import { w, wx } from "./words";

export interface Followed {
  eventId: string;
  /** The newest state. */
  last?: WatchEventResponse;
  /** Knockout and Swiss rounds seen, by round. */
  rounds: Map<number, Pairing[]>;
  /** Names by user id, from every standings seen. */
  names: Map<string, string>;
  /** My match, ready to join. */
  ready?: GetMyMatchResponse;
  /** Whether I am in it (the notices say its cancellation). */
  mine: boolean;
  abort: AbortController;
}

const followed = new Map<string, Followed>();
const listeners = new Set<() => void>();
/** Rooms joined from here (this tab of the browser): their notice is not offered again. */
const JOINED_KEY = "basra.events.joined";
/** Cancellations the player dismissed. */
const dismissed = new Set<string>();

function joinedRooms(): Set<string> {
  try {
    return new Set(JSON.parse(sessionStorage.getItem(JOINED_KEY) ?? "[]") as string[]);
  } catch {
    return new Set();
  }
}

function markJoined(roomId: string): void {
  const rooms = [...joinedRooms(), roomId].slice(-50);
  sessionStorage.setItem(JOINED_KEY, JSON.stringify(rooms));
}

/** Calls `listener` whenever a followed event moves, until the function returned is called. */
export function onEventsChange(listener: () => void): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

/** The live state of `eventId`, if followed. */
export function followedEvent(eventId: string): Followed | undefined {
  return followed.get(eventId);
}

function changed(): void {
  drawNotices();
  for (const listener of [...listeners]) listener();
}

/** Follows `eventId` live (once; `mine`: the player is in it). */
export function follow(eventId: string, mine = false): Followed {
  const known = followed.get(eventId);
  if (known) {
    known.mine ||= mine;
    return known;
  }
  const f: Followed = { eventId, rounds: new Map(), names: new Map(), mine, abort: new AbortController() };
  followed.set(eventId, f);
  void watch(f);
  return f;
}

/** Stops following `eventId` unless the player is in it. */
export function unfollowUnlessMine(eventId: string): void {
  const f = followed.get(eventId);
  if (!f || f.mine) return;
  f.abort.abort();
  followed.delete(eventId);
}

/** Follows every event the player is in and that has not ended (after a sign-in). */
export async function startEvents(): Promise<void> {
  stopEvents();
  try {
    const mine = await authed(shared.api, () => shared.api.events.listMyEvents({ pageSize: 20 }));
    for (const m of mine.events) {
      const event = m.event?.event;
      if (event && !isOver(event)) follow(event.eventId, true);
    }
  } catch {
    // Offline now: the tab follows an event when it is opened.
  }
}

/** Stops every stream (sign-out). */
export function stopEvents(): void {
  for (const f of followed.values()) f.abort.abort();
  followed.clear();
  drawNotices();
}

async function watch(f: Followed): Promise<void> {
  const api = shared.api;
  const signal = f.abort.signal;
  let backoff = 500;
  while (!signal.aborted) {
    try {
      // Changes only: after the first whole state, a result is a few hundred bytes.
      const stream = api.events.watchEvent(
        { eventId: f.eventId, lastSeenVersion: f.last?.version ?? 0n, changesOnly: true },
        { signal },
      );
      for await (const update of stream) {
        backoff = 500;
        let state: WatchEventResponse;
        try {
          state = applyChanges(f.last, update);
        } catch {
          // Changes to a state not held: start again from a whole one.
          f.last = undefined;
          break;
        }
        f.last = state;
        // Into the bracket and the names: what this update brought.
        const changes = update.changes;
        f.rounds = withRound(f.rounds, changes ? { ...state, earlierPairings: [], pairings: changes.pairings } : state);
        f.names = namesOf(changes ? changes.standings.flatMap((r) => (r.standing ? [r.standing] : [])) : state.standings, f.names);
        await lookForMatch(f);
        changed();
      }
      // It ends after a finished or cancelled event.
      if (isOver(f.last?.event)) return;
    } catch (err) {
      if (signal.aborted) return;
      const code = ConnectError.from(err).code;
      if (code === Code.Unauthenticated && (await renew(api))) continue;
      if (code === Code.NotFound || code === Code.InvalidArgument || code === Code.PermissionDenied) {
        followed.delete(f.eventId);
        changed();
        return;
      }
    }
    await new Promise((resolve) => setTimeout(resolve, backoff));
    backoff = Math.min(backoff * 2, 8000);
  }
}

/** Asks GetMyMatch when the state shows a match of mine not joined yet. */
async function lookForMatch(f: Followed): Promise<void> {
  const me = currentUser()?.userId ?? "";
  const open = myOpenMatch(f.last, me, joinedRooms());
  if (!open) {
    f.ready = undefined;
    return;
  }
  if (f.ready?.roomId === open.roomId) return;
  try {
    f.ready = await authed(shared.api, () => shared.api.events.getMyMatch({ eventId: f.eventId }));
    f.mine = true;
  } catch {
    // Decided meanwhile (a forfeit, the round over): the next update says.
    f.ready = undefined;
  }
}

/** Joins my ready match of `f`: the table, with one tap. */
export function joinMatch(f: Followed): void {
  const roomId = f.ready?.roomId;
  if (!roomId) return;
  markJoined(roomId);
  f.ready = undefined;
  drawNotices();
  screens.table(roomId);
}

function eventName(f: Followed): string {
  return f.last?.event?.definition?.name ?? "";
}

// ---------------------------------------------------------------------------------------
// The notices above every screen (outside #app, so the screens' redraws leave them).

function drawNotices(): void {
  let box = document.getElementById("event-notices");
  const items: HTMLElement[] = [];
  for (const f of followed.values()) {
    if (f.ready && !joinedRooms().has(f.ready.roomId)) {
      const deadline = f.ready.joinDeadline ? new Date(timestampMs(f.ready.joinDeadline)) : null;
      const opponent = f.names.get(f.ready.opponent) ?? "?";
      const ready = f;
      items.push(
        el(
          "p",
          { class: "notice", "data-testid": "event-match-ready", role: "alert" },
          ...wx("matchReady", {
            event: bdi(eventName(f)),
            name: bdi(opponent),
            time: deadline ? deadline.toLocaleTimeString(lang()) : "",
          }),
          " ",
          el("button", { "data-testid": "event-join-match", onclick: () => joinMatch(ready) }, w("joinMatch")),
        ),
      );
    }
    const event = f.last?.event;
    if (f.mine && event?.status === EventStatus.CANCELLED && !dismissed.has(f.eventId)) {
      const id = f.eventId;
      items.push(
        el(
          "p",
          { class: "notice", "data-testid": "event-cancelled" },
          ...wx("wasCancelled", { event: bdi(eventName(f)), reason: bdi(event.cancelReason) }),
          " ",
          el("button", { class: "quiet", onclick: () => { dismissed.add(id); drawNotices(); } }, w("dismiss")),
        ),
      );
    }
  }
  if (!items.length) {
    box?.remove();
    return;
  }
  if (!box) {
    box = el("div", { id: "event-notices", class: "event-notices notices", "aria-live": "assertive" });
    document.body.prepend(box);
  }
  box.replaceChildren(...items);
}
