// What the Tournaments tab decides, apart from drawing it: which match of mine is ready,
// the bracket built from the rounds seen, what the player may do now (register, check
// in, withdraw), times in words, a refusal's reason. Pure: no DOM, storage or calls, so
// tests/unit/events.test.ts runs it in node.

import { BinaryReader } from "@bufbuild/protobuf/wire";
import type { Entry, Event, Pairing, Standing, WatchEventResponse } from "../gen/basra/matchmaking/v1/events_pb";
import { EntryStatus, EventFormat, EventStatus, PairingResult } from "../gen/basra/matchmaking/v1/events_pb";

/** A protobuf time in milliseconds (0 when absent). */
export function ms(at: { seconds: bigint; nanos: number } | undefined): number {
  return at ? Number(at.seconds) * 1000 + Math.floor(at.nanos / 1e6) : 0;
}

/** My pairing with a room and no result yet, unless I joined its room already. */
export function myOpenMatch(update: WatchEventResponse | undefined, me: string, joined: ReadonlySet<string> = new Set()): Pairing | undefined {
  return update?.pairings.find(
    (p) => p.result === PairingResult.UNSPECIFIED && p.roomId !== "" && p.userIds.includes(me) && !joined.has(p.roomId),
  );
}

/** Whether the event is over (finished or cancelled): its stream ends. */
export function isOver(event: Event | undefined): boolean {
  return event?.status === EventStatus.FINISHED || event?.status === EventStatus.CANCELLED;
}

/**
 * The rounds seen so far, the update's pairings (a knockout's or Swiss') put in at their
 * round: a live bracket, each round once, the newest result of each table kept. A
 * stream's first update (after a reload too) brings every earlier round with its results
 * (`earlierPairings`), a later one the round just ended when a new one starts, so the
 * bracket is whole. A server of the previous release sends the current round only: a
 * round's last result may then come only with the next round, and in a knockout whoever
 * plays on won their earlier match.
 */
export function withRound(rounds: ReadonlyMap<number, Pairing[]>, update: WatchEventResponse): Map<number, Pairing[]> {
  const next = new Map(rounds);
  const format = update.event?.definition?.format;
  if (format === EventFormat.ARENA) return next;
  for (const p of [...update.earlierPairings, ...update.pairings]) {
    const tables = [...(next.get(p.round) ?? [])].filter((q) => q.table !== p.table);
    tables.push(p);
    tables.sort((a, b) => a.table - b.table);
    next.set(p.round, tables);
  }
  if (format !== EventFormat.KNOCKOUT) return next;
  const latest = Math.max(0, ...next.keys());
  for (const [round, pairings] of next) {
    if (round >= latest) continue;
    const later = new Set([...next].filter(([r]) => r > round).flatMap(([, ps]) => ps.flatMap((p) => p.userIds)));
    next.set(
      round,
      pairings.map((p) => {
        const winner = p.userIds.find((u) => later.has(u));
        return p.result === PairingResult.UNSPECIFIED && winner && p.userIds.length === 2 ? { ...p, result: PairingResult.WON, winner } : p;
      }),
    );
  }
  return next;
}

/**
 * The whole state `update` stands for: `update` itself when it is whole (no `changes`),
 * else `held` with its changes applied (the stream asked for `changesOnly`; the server
 * makes them with libs/proto/src/event_changes.rs, whose `apply` this mirrors). Throws
 * when the changes are not since the state held: reopen the stream from version 0.
 */
export function applyChanges(held: WatchEventResponse | undefined, update: WatchEventResponse): WatchEventResponse {
  const changes = update.changes;
  if (!changes) return update;
  if (!held || held.version !== changes.sinceVersion) {
    throw new Error(`changes since version ${changes.sinceVersion} arrived, but the state held is version ${held?.version ?? "none"}`);
  }
  const count = changes.standingsCount;
  const standings = held.standings.slice(0, count);
  for (const row of changes.standings) {
    if (!row.standing || row.index >= count || row.index > standings.length) {
      throw new Error(`standings row ${row.index} of ${count} out of place`);
    }
    standings[row.index] = row.standing;
  }
  if (standings.length !== count) throw new Error(`${standings.length} standings rows of ${count} after the changes`);
  const removed = new Set(changes.removedTables);
  const byTable = new Map(held.pairings.filter((p) => !removed.has(p.table)).map((p) => [p.table, p]));
  for (const p of changes.pairings) byTable.set(p.table, p);
  const pairings = [...byTable.values()].sort((a, b) => a.table - b.table);
  return { ...held, version: update.version, event: update.event, standings, pairings };
}

/** The players' names the standings give, by user id. */
export function namesOf(standings: readonly Standing[], known: ReadonlyMap<string, string> = new Map()): Map<string, string> {
  const names = new Map(known);
  for (const s of standings) if (s.displayName) names.set(s.userId, s.displayName);
  return names;
}

/** What the player may do now in `event` with `entry`, at `now`. */
export interface Actions {
  register: boolean;
  checkIn: boolean;
  /** When check-in opens, if it is still ahead for a registered player. */
  checkInOpensAt?: number;
  withdraw: boolean;
}

export function actions(event: Event, entry: Entry | undefined, now: number): Actions {
  const status = event.status;
  const upcoming = status === EventStatus.SCHEDULED || status === EventStatus.REGISTRATION;
  const arena = event.definition?.format === EventFormat.ARENA;
  const registerable =
    (status === EventStatus.REGISTRATION && !entry) ||
    (arena && status === EventStatus.RUNNING && (!entry || entry.status === EntryStatus.PAUSED));
  const checkInWindow = (event.definition?.checkInSeconds ?? 0) > 0;
  const opens = ms(event.checkInOpensAt);
  const registered = entry?.status === EntryStatus.REGISTERED;
  const checkIn = upcoming && checkInWindow && registered && now >= opens;
  const out = entry?.status === EntryStatus.WITHDRAWN || entry?.status === EntryStatus.ELIMINATED || entry?.status === EntryStatus.PAUSED;
  return {
    register: registerable,
    checkIn,
    checkInOpensAt: upcoming && checkInWindow && registered && now < opens ? opens : undefined,
    withdraw: !!entry && !out && entry.status !== EntryStatus.NOT_CHECKED_IN && !isOver(event),
  };
}

/** How long until `at` from `now`, as a phrase key and its values. */
export function until(at: number, now: number): [key: "now" | "inSeconds" | "inMinutes" | "inHours" | "inDays", values: Record<string, number>] {
  const s = Math.floor((at - now) / 1000);
  if (s <= 0) return ["now", {}];
  if (s < 60) return ["inSeconds", { n: s }];
  if (s < 3600) return ["inMinutes", { n: Math.floor(s / 60) }];
  if (s < 86_400) return ["inHours", { h: Math.floor(s / 3600), m: Math.floor((s % 3600) / 60) }];
  return ["inDays", { n: Math.floor(s / 86_400) }];
}

/** The entry's status as a phrase key. */
export function entryWord(entry: Entry | undefined): "entryRegistered" | "entryCheckedIn" | "entryPlaying" | "entryEliminated" | "entryWithdrawn" | "entryPaused" | "entryNotCheckedIn" | null {
  switch (entry?.status) {
    case EntryStatus.REGISTERED:
      return "entryRegistered";
    case EntryStatus.CHECKED_IN:
      return "entryCheckedIn";
    case EntryStatus.PLAYING:
      return "entryPlaying";
    case EntryStatus.ELIMINATED:
      return "entryEliminated";
    case EntryStatus.WITHDRAWN:
      return "entryWithdrawn";
    case EntryStatus.PAUSED:
      return "entryPaused";
    case EntryStatus.NOT_CHECKED_IN:
      return "entryNotCheckedIn";
    default:
      return null;
  }
}

/**
 * The `google.rpc.ErrorInfo` reason among a refusal's details (`EVENT_FULL`, …), or "".
 * Details arrive as `{ type, value }` with the message's bytes; ErrorInfo's reason is its
 * field 1.
 */
export function errorReason(details: readonly unknown[]): string {
  for (const detail of details) {
    const d = detail as { type?: string; value?: Uint8Array };
    if (d.type !== "google.rpc.ErrorInfo" || !(d.value instanceof Uint8Array)) continue;
    const reader = new BinaryReader(d.value);
    while (reader.pos < reader.len) {
      const [field, wireType] = reader.tag();
      if (field === 1 && wireType === 2) return reader.string();
      reader.skip(wireType);
    }
  }
  return "";
}
