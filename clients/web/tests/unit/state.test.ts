// The table's state (src/table/state.ts) replaying event logs recorded from a real backend
// (tests/unit/fixtures/, written by tests/record.ts): a player and a spectator of a
// two-seat and a four-seat match against the computer, each with a reload, a broken
// stream resumed, a chat, a rematch resigned and a reload on the result. What the page
// shows must follow from the events alone: every card somewhere, each play possible in
// the state before it, the same table as the server's own snapshot after a reload, the
// scores, the announcements; and `apply` leaves the state it is given as it was.
import { test } from "node:test";
import assert from "node:assert/strict";
import { timestampMs } from "@bufbuild/protobuf/wkt";
import { captureOptions, sameCard, type CardLike } from "../../src/capture";
import { apply, openTable, sideOf, type Announcement, type Context, type TableState } from "../../src/table/state";
import type { MatchEnded, PlayResponse } from "../../src/gen/basra/game/v1/game_pb";
import { BasraKind, MatchEndReason } from "../../src/gen/basra/common/v1/common_pb";
import { FIXTURES, load, type Stream } from "./replay";

const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
const card = (c: { rank: number; suit: number } | undefined): CardLike => ({ rank: c?.rank ?? 0, suit: c?.suit ?? 0 });
const names = (cards: CardLike[]) => cards.map((c) => `${c.rank}-${c.suit}`).join(" ");

/** The device's clock is the server's: the offset is 0, the replay the same every time. */
function at(event: PlayResponse, keptEnd: Context["keptEnd"] = () => undefined): Context {
  return { now: event.serverTime ? timestampMs(event.serverTime) : 0, keptEnd };
}

function roomOf(streams: Stream[]): string {
  const first = streams[0].events[0].event;
  assert.equal(first.case, "snapshot", "a log opens with a snapshot");
  return first.value.view!.roomId;
}

/** Each step of the replay the page makes: a stream without `lastSeenSeq` is a new page. */
function* pageReplay(streams: Stream[], spectate: boolean): Generator<{ before: TableState; event: PlayResponse; after: TableState }> {
  const roomId = roomOf(streams);
  let state = openTable(roomId, { spectate });
  for (const stream of streams) {
    if (stream.lastSeenSeq === undefined) state = openTable(roomId, { spectate });
    else assert.equal(state.lastSeq, stream.lastSeenSeq, "a stream resumes after the last seq the state took");
    for (const event of stream.events) {
      const before = state;
      state = apply(state, event, at(event));
      yield { before, event, after: state };
    }
  }
}

/** What the page draws of the game, whatever stream brought it. */
function game(s: TableState) {
  return {
    seat: s.seat,
    seats: s.seats.map(({ seat, side, occupant, displayName, botLevel }) => ({ seat, side, occupant, displayName, botLevel })),
    target: s.target,
    ranked: s.ranked,
    matchId: s.matchId,
    commitment: s.commitment && Buffer.from(s.commitment).toString("hex"),
    hand: names(s.hand),
    handCounts: s.handCounts,
    table: names(s.table),
    pileSizes: s.pileSizes,
    totals: s.totals,
    round: s.round,
    deck: s.deck,
    turn: s.turn,
    ended: s.ended !== undefined,
  };
}

for (const name of FIXTURES) {
  const { log, streams } = load(name);
  const spectate = log.viewer === "spectator";

  test(`${name}: every card is somewhere after each deal and play`, () => {
    let looks = 0;
    // A round deals the hands before the table: the count holds from the table's deal on.
    let dealt = false;
    for (const { event, after: s } of pageReplay(streams, spectate)) {
      const c = event.event.case;
      if (c === "roundStarted") dealt = false;
      if (c === "tableDealt" || (c === "snapshot" && s.round > 0)) dealt = true;
      const look = dealt && (c === "tableDealt" || c === "handDealt" || c === "cardPlayed" || c === "snapshot");
      if (!look || s.ended) continue;
      looks += 1;
      const total = s.deck + sum(s.handCounts) + s.table.length + sum(s.pileSizes);
      assert.equal(total, 52, `seq ${event.seq} (${c}): deck ${s.deck} + hands ${s.handCounts} + table ${s.table.length} + piles ${s.pileSizes}`);
      if (s.seat !== undefined) assert.equal(s.hand.length, s.handCounts[s.seat], `seq ${event.seq}: the hand is as many cards as its count`);
      else assert.equal(s.hand.length, 0, "a spectator sees no hand");
    }
    assert.ok(looks > 100, `the log was looked at after each deal and play (${looks} looks)`);
  });

  test(`${name}: each play was possible in the state before it`, (t) => {
    let plays = 0;
    let named = 0;
    let several = 0;
    for (const { before, event } of pageReplay(streams, spectate)) {
      if (event.event.case !== "cardPlayed") continue;
      const p = event.event.value;
      const played = card(p.card);
      const taken = p.taken.map(card);
      const where = `seq ${event.seq}: seat ${p.seat} plays ${names([played])} taking [${names(taken)}] from [${names(before.table)}]`;
      plays += 1;
      assert.equal(before.turn, p.seat, `${where}: it was that seat's turn`);
      assert.ok((before.handCounts[p.seat] ?? 0) > 0, `${where}: that seat held a card`);
      if (p.seat === before.seat) assert.ok(before.hand.some((c) => sameCard(c, played)), `${where}: the card was in the hand`);
      // The cards taken lay on the table, and are told in laying order.
      const positions = taken.map((t) => before.table.findIndex((c) => sameCard(c, t)));
      assert.ok(positions.every((i) => i >= 0), `${where}: the cards taken lay on the table`);
      assert.deepEqual(positions, [...positions].sort((a, b) => a - b), `${where}: in laying order`);
      // What the page offers for that card on that table includes what was taken.
      const options = captureOptions(played, before.table);
      assert.ok(
        taken.length ? options.some((o) => o.join() === positions.join()) : options.length === 0,
        `${where}: the page offered ${JSON.stringify(options)}`,
      );
      if (options.length > 1) several += 1;
      if (options.length > 1 && positions.join() !== options[0].join()) named += 1;
    }
    assert.ok(plays >= 80, `${plays} plays`);
    t.diagnostic(`${plays} plays, ${several} with several largest captures, ${named} of them taking another than the canonical one`);
  });

  test(`${name}: a new stream's snapshot shows the table the events before it made`, () => {
    // The events alone, across the streams: a resumed stream goes on from the state, a
    // new one (its snapshot) is compared with it, then left out.
    const roomId = roomOf(streams);
    let state = apply(openTable(roomId, { spectate }), streams[0].events[0], at(streams[0].events[0]));
    let compared = 0;
    let ended: MatchEnded | undefined;
    streams.forEach((stream, n) => {
      stream.events.forEach((event, i) => {
        if (n === 0 && i === 0) return;
        if (i === 0 && event.event.case === "snapshot") {
          const fresh = apply(openTable(roomId, { spectate }), event, at(event));
          assert.deepEqual(game(fresh), game(state), `the snapshot at seq ${event.seq} and the events before it`);
          // A reload on the result: the end this page kept is the one shown.
          if (fresh.ended) {
            const kept = apply(openTable(roomId, { spectate }), event, at(event, (room, match) => (room === roomId && match === ended?.matchId ? ended : undefined)));
            assert.equal(kept.ended, ended, "the kept end is the one shown after a reload");
            assert.deepEqual(fresh.ended.totals, ended?.totals, "without it, the totals are the snapshot's");
          }
          compared += 1;
          return;
        }
        if (event.event.case === "matchEnded") ended = event.event.value;
        state = apply(state, event, at(event));
      });
    });
    assert.equal(compared, streams.filter((s) => s.lastSeenSeq === undefined).length - 1, "every reload compared");
  });

  test(`${name}: the scores follow the rounds and the end`, () => {
    let rounds = 0;
    for (const { before, event, after } of pageReplay(streams, spectate)) {
      const e = event.event;
      if (e.case === "roundStarted") assert.deepEqual(after.pileSizes, before.pileSizes.map(() => 0), "a round starts with empty piles");
      if (e.case === "roundEnded") {
        rounds += 1;
        for (const side of e.value.sides) {
          assert.equal(after.totals[side.side], side.total, `seq ${event.seq}: side ${side.side}'s total`);
          assert.equal(side.total - (before.totals[side.side] ?? 0), side.roundPoints, `seq ${event.seq}: the round's points add up`);
        }
      }
      if (e.case === "matchEnded" && e.value.reason === MatchEndReason.TARGET_REACHED) {
        assert.deepEqual(before.totals, e.value.totals, "the totals the rounds made are the end's");
        const top = Math.max(...e.value.totals);
        assert.equal(before.totals.indexOf(top), e.value.winnerSide, "the side at the top won");
        assert.ok(top >= (before.target ?? Infinity), "past the target");
      }
      if (e.case === "cardPlayed" && e.value.taken.length) {
        const side = sideOf(before, e.value.seat);
        assert.equal(after.pileSizes[side], before.pileSizes[side] + e.value.taken.length + 1, "the capture goes to the side's pile");
      }
    }
    assert.ok(rounds >= 2, `${rounds} rounds`);
  });

  test(`${name}: each event is announced as it should`, () => {
    const announced = new Map<string, number>();
    for (const { before, event, after } of pageReplay(streams, spectate)) {
      const e = event.event;
      const expect: Announcement[] = [];
      switch (e.case) {
        case "cardPlayed": {
          const p = e.value;
          if (p.taken.length) expect.push({ kind: "captured", seat: p.seat, taken: p.taken.map(card), card: card(p.card) });
          const kind = ({ [BasraKind.BASRA]: "basraBy", [BasraKind.JACK]: "jackBasraBy", [BasraKind.KOMI]: "komiBasraBy" } as const)[p.basra as 2 | 3 | 4];
          if (kind) expect.push({ kind, seat: p.seat, points: p.basraPoints });
          break;
        }
        case "roundEnded":
          expect.push({ kind: "roundOver", round: e.value.round, roundPoints: e.value.sides.map((s) => s.roundPoints) });
          break;
        case "matchEnded":
          if (e.value.reason === MatchEndReason.RESIGNED) expect.push({ kind: "reasonResigned", seat: e.value.forfeitSeat! });
          break;
        case "chat":
          expect.push({ kind: "chatBy", seat: e.value.seat, phrase: e.value.phrase });
          break;
        case "rematchOffered":
          if (e.value.seat !== before.seat) expect.push({ kind: "rematchOffered", seat: e.value.seat });
          break;
        case "connectionChanged": {
          // Only a seat announced gone is announced back; the viewer's own seat never.
          const seat = e.value.seat;
          const connected = e.value.state === 1;
          if (seat !== before.seat && !connected) expect.push({ kind: "disconnected", seat });
          if (seat !== before.seat && connected && before.gone.has(seat)) expect.push({ kind: "reconnected", seat });
          break;
        }
      }
      for (const a of expect) announced.set(a.kind, (announced.get(a.kind) ?? 0) + 1);
      if (e.case === "matchStarted" || e.case === "snapshot") {
        if (e.case === "matchStarted") assert.deepEqual(after.announcements, [], "a new match starts with nothing said");
        continue;
      }
      if (!expect.length) {
        assert.equal(after.announcements, before.announcements, `seq ${event.seq} (${e.case}) says nothing`);
        continue;
      }
      assert.deepEqual(after.announcements, [...before.announcements, ...expect].slice(-4), `seq ${event.seq} (${e.case})`);
    }
    for (const kind of ["captured", "roundOver", "reasonResigned", "chatBy"]) assert.ok(announced.get(kind), `${kind} was announced`);
    if (spectate) for (const kind of ["disconnected", "reconnected", "rematchOffered"]) assert.ok(announced.get(kind), `${kind} was announced`);
  });

  test(`${name}: apply leaves the state it is given as it was`, () => {
    let state = openTable(roomOf(streams), { spectate });
    for (const event of streams.flatMap((s) => s.events)) {
      const copy = structuredClone(state);
      const next = apply(state, event, at(event));
      assert.deepEqual(state, copy, `seq ${event.seq} (${event.event.case})`);
      state = next;
    }
  });
}
