// The Tournaments tab's decisions (src/events/model.ts), without a page: my ready match
// (once joined, not again; a bye or a decided match never), the live bracket from the
// rounds seen, what a player may do (register, check in once the window opens, withdraw),
// times in words, and a refusal's ErrorInfo reason read from the bytes gRPC sends.
import { test } from "node:test";
import assert from "node:assert/strict";
import { create, toBinary } from "@bufbuild/protobuf";
import { BinaryWriter } from "@bufbuild/protobuf/wire";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { actions, applyChanges, errorReason, myOpenMatch, namesOf, until, withRound } from "../../src/events/model";
import {
  EntrySchema,
  EntryStatus,
  EventDefinitionSchema,
  EventFormat,
  EventSchema,
  EventChangesSchema,
  EventStatus,
  IndexedStandingSchema,
  PairingResult,
  PairingSchema,
  StandingSchema,
  WatchEventResponseSchema,
} from "../../src/gen/basra/matchmaking/v1/events_pb";

const pairing = (round: number, table: number, users: string[], room: string, result = PairingResult.UNSPECIFIED, winner = "") =>
  create(PairingSchema, { round, table, userIds: users, roomId: room, result, winner });

const event = (status: EventStatus, format = EventFormat.KNOCKOUT, checkInSeconds = 0, checkInOpensAt = 0) =>
  create(EventSchema, {
    eventId: "e1",
    status,
    definition: create(EventDefinitionSchema, { name: "Cup", format, checkInSeconds, cap: 8 }),
    checkInOpensAt: timestampFromMs(checkInOpensAt),
  });

test("my ready match is the pairing of mine with a room and no result, once", () => {
  const update = create(WatchEventResponseSchema, {
    version: 3n,
    event: event(EventStatus.RUNNING),
    pairings: [pairing(1, 1, ["a", "b"], "r1"), pairing(1, 2, ["me", "c"], "r2"), pairing(1, 3, ["d"], "", PairingResult.BYE)],
  });
  assert.equal(myOpenMatch(update, "me")?.roomId, "r2");
  assert.equal(myOpenMatch(update, "me", new Set(["r2"])), undefined, "joined already");
  assert.equal(myOpenMatch(update, "d"), undefined, "a bye is not played");
  assert.equal(myOpenMatch(update, "zz"), undefined);
  update.pairings[1].result = PairingResult.WON;
  assert.equal(myOpenMatch(update, "me"), undefined, "decided");
  assert.equal(myOpenMatch(undefined, "me"), undefined);
});

test("the bracket keeps every round seen, each table's newest result", () => {
  const round1 = create(WatchEventResponseSchema, {
    event: event(EventStatus.RUNNING),
    pairings: [pairing(1, 2, ["c", "d"], "r2"), pairing(1, 1, ["a", "b"], "r1")],
  });
  let rounds = withRound(new Map(), round1);
  assert.deepEqual(rounds.get(1)?.map((p) => p.table), [1, 2]);
  const decided = create(WatchEventResponseSchema, {
    event: event(EventStatus.RUNNING),
    pairings: [pairing(1, 1, ["a", "b"], "r1", PairingResult.WON, "a"), pairing(1, 2, ["c", "d"], "r2", PairingResult.FORFEIT, "d")],
  });
  rounds = withRound(rounds, decided);
  const final = create(WatchEventResponseSchema, { event: event(EventStatus.RUNNING), pairings: [pairing(2, 1, ["a", "d"], "r3")] });
  const before = rounds;
  rounds = withRound(rounds, final);
  assert.equal(before.size, 1, "the rounds given are left as they were");
  assert.deepEqual([...rounds.keys()], [1, 2]);
  assert.deepEqual(rounds.get(1)?.map((p) => p.winner), ["a", "d"]);
  assert.equal(rounds.get(2)?.[0].roomId, "r3");
  // A round's last result that came only with the next round: whoever plays on won.
  const skipped = withRound(withRound(new Map(), round1), final);
  assert.deepEqual(skipped.get(1)?.map((p) => [p.result, p.winner]), [[PairingResult.WON, "a"], [PairingResult.WON, "d"]]);
  assert.equal(round1.pairings[0].result, PairingResult.UNSPECIFIED, "the update given is left as it was");
  const arena = create(WatchEventResponseSchema, { event: event(EventStatus.RUNNING, EventFormat.ARENA), pairings: [pairing(0, 7, ["a", "b"], "r9")] });
  assert.equal(withRound(new Map(), arena).size, 0, "an arena has no bracket");
  const names = namesOf([create(StandingSchema, { userId: "a", displayName: "Amal" }), create(StandingSchema, { userId: "b" })], new Map([["c", "Camil"]]));
  assert.deepEqual([...names.entries()].sort(), [["a", "Amal"], ["c", "Camil"]]);
});

test("changes applied to the state held give the state they stand for; changes to another version throw", () => {
  const row = (userId: string, rank: number, points: number) => create(StandingSchema, { userId, displayName: userId.toUpperCase(), rank, points });
  const held = create(WatchEventResponseSchema, {
    version: 7n,
    event: event(EventStatus.RUNNING),
    standings: [row("a", 1, 0), row("b", 1, 0), row("c", 1, 0)],
    pairings: [pairing(1, 1, ["a", "b"], "r1"), pairing(1, 2, ["c", "d"], "r2"), pairing(1, 3, ["e", "f"], "r3")],
  });
  const update = create(WatchEventResponseSchema, {
    version: 9n,
    event: event(EventStatus.RUNNING),
    changes: create(EventChangesSchema, {
      sinceVersion: 7n,
      standingsCount: 4,
      standings: [create(IndexedStandingSchema, { index: 0, standing: row("a", 1, 1) }), create(IndexedStandingSchema, { index: 3, standing: row("g", 4, 0) })],
      pairings: [pairing(1, 4, ["g", "h"], "r4"), pairing(1, 1, ["a", "b"], "r1", PairingResult.WON, "a")],
      removedTables: [2],
    }),
  });
  const state = applyChanges(held, update);
  assert.equal(state.version, 9n);
  assert.deepEqual(state.standings.map((s) => [s.userId, s.points]), [["a", 1], ["b", 0], ["c", 0], ["g", 0]]);
  assert.deepEqual(state.pairings.map((p) => [p.table, p.winner]), [[1, "a"], [3, ""], [4, ""]]);
  assert.equal(held.standings[0].points, 0, "the state held is left as it was");
  const shrunk = applyChanges(state, create(WatchEventResponseSchema, { version: 10n, changes: create(EventChangesSchema, { sinceVersion: 9n, standingsCount: 1 }) }));
  assert.deepEqual(shrunk.standings.map((s) => s.userId), ["a"]);
  const whole = create(WatchEventResponseSchema, { version: 11n, standings: [row("z", 1, 5)] });
  assert.equal(applyChanges(state, whole), whole, "a whole update replaces the state");
  assert.throws(() => applyChanges(held, { ...update, changes: { ...update.changes!, sinceVersion: 8n } }), /since version 8/);
  assert.throws(() => applyChanges(undefined, update), /state held is version none/);
  const gap = { ...update, changes: { ...update.changes!, standings: [create(IndexedStandingSchema, { index: 4, standing: row("g", 4, 0) })], standingsCount: 5 } };
  assert.throws(() => applyChanges(held, gap), /out of place/);
});

test("after a reload, the first update's earlier rounds make the whole bracket", () => {
  // A page reloaded in a four-round knockout's round 3: its stream's first update.
  const reloaded = create(WatchEventResponseSchema, {
    version: 9n,
    event: event(EventStatus.RUNNING),
    pairings: [pairing(3, 1, ["a", "e"], "r3t1")],
    earlierPairings: [
      pairing(1, 1, ["a", "b"], "r1t1", PairingResult.WON, "a"),
      pairing(1, 2, ["c", "d"], "r1t2", PairingResult.BOTH_ABSENT),
      pairing(1, 3, ["e", "f"], "r1t3", PairingResult.FORFEIT, "e"),
      pairing(2, 1, ["a", "g"], "r2t1", PairingResult.WON, "a"),
      pairing(2, 2, ["e", "h"], "r2t2", PairingResult.WON, "e"),
    ],
  });
  let rounds = withRound(new Map(), reloaded);
  assert.deepEqual([...rounds.keys()].sort(), [1, 2, 3]);
  assert.deepEqual(rounds.get(1)?.map((p) => [p.table, p.result, p.winner]), [
    [1, PairingResult.WON, "a"],
    [2, PairingResult.BOTH_ABSENT, ""],
    [3, PairingResult.FORFEIT, "e"],
  ]);
  assert.deepEqual(rounds.get(2)?.map((p) => p.winner), ["a", "e"]);
  // The next update has no earlier rounds (the client has them): they stay; the final's
  // update brings round 3 whole with the final.
  rounds = withRound(rounds, create(WatchEventResponseSchema, { event: event(EventStatus.RUNNING), pairings: [pairing(3, 1, ["a", "e"], "r3t1", PairingResult.WON, "e")] }));
  assert.deepEqual([...rounds.keys()].sort(), [1, 2, 3]);
  assert.equal(rounds.get(3)?.[0].winner, "e");
  // Swiss too: every round is kept by its number.
  const swiss = create(WatchEventResponseSchema, {
    event: event(EventStatus.RUNNING, EventFormat.SWISS),
    pairings: [pairing(2, 1, ["a", "c"], "s2")],
    earlierPairings: [pairing(1, 1, ["a", "b"], "s1", PairingResult.WON, "a")],
  });
  assert.deepEqual([...withRound(new Map(), swiss).keys()].sort(), [1, 2]);
});

test("register, check in once its window opens, withdraw", () => {
  const registered = create(EntrySchema, { status: EntryStatus.REGISTERED });
  const open = event(EventStatus.REGISTRATION, EventFormat.KNOCKOUT, 60, 10_000);
  assert.deepEqual(actions(open, undefined, 0), { register: true, checkIn: false, checkInOpensAt: undefined, withdraw: false });
  assert.deepEqual(actions(open, registered, 5_000), { register: false, checkIn: false, checkInOpensAt: 10_000, withdraw: true });
  assert.deepEqual(actions(open, registered, 10_000), { register: false, checkIn: true, checkInOpensAt: undefined, withdraw: true });
  const checkedIn = create(EntrySchema, { status: EntryStatus.CHECKED_IN });
  assert.equal(actions(open, checkedIn, 10_000).checkIn, false);
  const noWindow = event(EventStatus.REGISTRATION);
  assert.equal(actions(noWindow, registered, 10_000).checkIn, false, "no check-in: registered plays");
  const running = event(EventStatus.RUNNING);
  assert.equal(actions(running, undefined, 0).register, false, "a knockout that started takes nobody");
  const arena = event(EventStatus.RUNNING, EventFormat.ARENA);
  assert.equal(actions(arena, undefined, 0).register, true, "an arena is entered while it runs");
  assert.equal(actions(arena, create(EntrySchema, { status: EntryStatus.PAUSED }), 0).register, true, "back from a pause");
  const out = create(EntrySchema, { status: EntryStatus.ELIMINATED });
  assert.equal(actions(running, out, 0).withdraw, false);
  assert.equal(actions(event(EventStatus.FINISHED), registered, 0).withdraw, false);
});

test("times in words", () => {
  assert.deepEqual(until(0, 5), ["now", {}]);
  assert.deepEqual(until(42_000, 0), ["inSeconds", { n: 42 }]);
  assert.deepEqual(until(125_000, 0), ["inMinutes", { n: 2 }]);
  assert.deepEqual(until(3_725_000, 0), ["inHours", { h: 1, m: 2 }]);
  assert.deepEqual(until(3 * 86_400_000, 0), ["inDays", { n: 3 }]);
});

test("a refusal's reason is read from its google.rpc.ErrorInfo detail", () => {
  // ErrorInfo { reason = 1; domain = 2; metadata = 3 }, as the server encodes it.
  const info = new BinaryWriter().tag(2, 2).string("basra.online").tag(1, 2).string("EVENT_FULL").finish();
  assert.equal(errorReason([{ type: "google.rpc.RetryInfo", value: new Uint8Array([8, 1]) }, { type: "google.rpc.ErrorInfo", value: info }]), "EVENT_FULL");
  assert.equal(errorReason([]), "");
  assert.equal(errorReason([{ type: "google.rpc.ErrorInfo", value: toBinary(PairingSchema, create(PairingSchema, {})) }]), "");
});
