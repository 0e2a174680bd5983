// The replay panel's pure parts (src/replay-steps.ts): the marks of the analysis by quality, the
// verdict found by the seq of its card_played event (only once the analysis is ready), and
// the table after the first events of a replay, made by the table's own state.
import { test } from "node:test";
import assert from "node:assert/strict";
import { create } from "@bufbuild/protobuf";
import { markKey, replayed, verdictAt } from "../../src/replay-steps";
import { AnalysisState, MatchAnalysisSchema, PlayQuality, PlayVerdictSchema } from "../../src/gen/basra/accounts/v1/accounts_pb";
import { PlayResponseSchema } from "../../src/gen/basra/game/v1/game_pb";

test("each quality has its mark and a good play none", () => {
  assert.equal(markKey(PlayQuality.BLUNDER), "markBlunder");
  assert.equal(markKey(PlayQuality.MISTAKE), "markMistake");
  assert.equal(markKey(PlayQuality.INACCURACY), "markInaccuracy");
  assert.equal(markKey(PlayQuality.GOOD), null);
});

test("a verdict is found by its play's seq once the analysis is ready", () => {
  const plays = [create(PlayVerdictSchema, { seq: 7n, expectedLoss: 9, quality: PlayQuality.BLUNDER })];
  const ready = create(MatchAnalysisSchema, { state: AnalysisState.READY, plays });
  assert.equal(verdictAt(ready, 7n)?.expectedLoss, 9);
  assert.equal(verdictAt(ready, 8n), undefined);
  assert.equal(verdictAt(create(MatchAnalysisSchema, { state: AnalysisState.PENDING, plays }), 7n), undefined);
  assert.equal(verdictAt(undefined, 7n), undefined);
});

test("the table after the first events is the table state's, as a spectator's", () => {
  const events = [
    create(PlayResponseSchema, { seq: 1n, event: { case: "roundStarted", value: { round: 1, dealer: 0 } } }),
    create(PlayResponseSchema, {
      seq: 2n,
      event: { case: "tableDealt", value: { cards: [{ rank: 2, suit: 1 }, { rank: 3, suit: 2 }, { rank: 4, suit: 3 }, { rank: 5, suit: 4 }] } },
    }),
  ];
  assert.equal(replayed("m", events, 0).table.length, 0);
  const after = replayed("m", events, 2);
  assert.equal(after.table.length, 4);
  assert.equal(after.round, 1);
  assert.equal(after.spectate, true);
  assert.equal(after.hand.length, 0);
});
