// The recorded event logs (tests/unit/fixtures/, written by tests/record.ts) and their
// replay through the table's state as the page does it: a stream without `lastSeenSeq` is
// a new page (its state starts afresh from the snapshot), one with it resumes the state.
import { fromJson, type JsonValue } from "@bufbuild/protobuf";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { PlayResponseSchema, type PlayResponse } from "../../src/gen/basra/game/v1/game_pb";

/** One viewer's streams of one room, as recorded. */
export interface EventLog {
  about: string;
  viewer: "player" | "spectator";
  streams: { lastSeenSeq: string | null; events: unknown[] }[];
}

/** A recorded stream, its events decoded. */
export interface Stream {
  lastSeenSeq?: bigint;
  events: PlayResponse[];
}

export const FIXTURES = ["two-seats.player", "two-seats.spectator", "four-seats.player", "four-seats.spectator"];

/** The log `name` (tests/unit/fixtures/NAME.json; the tests run in clients/web). */
export function load(name: string): { log: EventLog; streams: Stream[] } {
  const log = JSON.parse(readFileSync(join("tests/unit/fixtures", `${name}.json`), "utf8")) as EventLog;
  const streams = log.streams.map((s) => ({
    lastSeenSeq: s.lastSeenSeq === null ? undefined : BigInt(s.lastSeenSeq),
    events: s.events.map((e) => fromJson(PlayResponseSchema, e as JsonValue)),
  }));
  return { log, streams };
}
