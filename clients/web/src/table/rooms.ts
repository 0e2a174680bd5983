// What this browser remembers of its rooms (local storage): the room its player sits at, so
// a reload goes back to it; the last match's end there, as it came, so a reload on the
// result shows it again; and the rooms this page left, whose invites are no longer offered.

import { fromJsonString, toJsonString } from "@bufbuild/protobuf";
import type { MatchEnded } from "../gen/basra/game/v1/game_pb";
import { MatchEndedSchema } from "../gen/basra/game/v1/game_pb";

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

/** The player sits at `roomId`: a reload goes back to it. */
export function sitAt(roomId: string): void {
  localStorage.setItem(ROOM_KEY, roomId);
}

/** The player is done with `roomId`: a reload goes to the lobby. */
export function forget(roomId: string): void {
  roomsLeft.add(roomId);
  if (localStorage.getItem(ROOM_KEY) === roomId) localStorage.removeItem(ROOM_KEY);
  localStorage.removeItem(ENDED_KEY);
}

export function keepEnded(roomId: string, ended: MatchEnded): void {
  localStorage.setItem(ENDED_KEY, JSON.stringify({ roomId, ended: toJsonString(MatchEndedSchema, ended) }));
}

export function keptEnded(roomId: string, matchId: string): MatchEnded | undefined {
  try {
    const kept = JSON.parse(localStorage.getItem(ENDED_KEY) ?? "null");
    if (kept?.roomId !== roomId) return undefined;
    const ended = fromJsonString(MatchEndedSchema, kept.ended);
    return ended.matchId === matchId ? ended : undefined;
  } catch {
    return undefined;
  }
}
