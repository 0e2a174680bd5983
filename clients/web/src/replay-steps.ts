// The replay's pure parts (no DOM, no words): the table after the first events of a
// replay, made by the table's own state, and the analysis' verdict on a play with its
// mark. The panel (replay.ts) draws them; tests/unit/replay-panel.test.ts checks them.

import { timestampMs } from "@bufbuild/protobuf/wkt";
import { apply, openTable, type TableState } from "./table/state";
import type { PlayResponse } from "./gen/basra/game/v1/game_pb";
import type { MatchAnalysis, PlayVerdict } from "./gen/basra/accounts/v1/accounts_pb";
import { AnalysisState, PlayQuality } from "./gen/basra/accounts/v1/accounts_pb";

/** The mark of a verdict, as an i18n key; none for a good play. */
export function markKey(quality: PlayQuality): "markInaccuracy" | "markMistake" | "markBlunder" | null {
  switch (quality) {
    case PlayQuality.INACCURACY:
      return "markInaccuracy";
    case PlayQuality.MISTAKE:
      return "markMistake";
    case PlayQuality.BLUNDER:
      return "markBlunder";
    default:
      return null;
  }
}

/** The verdict on the play at `seq`, when the analysis is ready and has one. */
export function verdictAt(analysis: MatchAnalysis | undefined, seq: bigint): PlayVerdict | undefined {
  if (analysis?.state !== AnalysisState.READY) return undefined;
  return analysis.plays.find((v) => v.seq === seq);
}

/** The table after the first `count` events of a replay. */
export function replayed(matchId: string, events: PlayResponse[], count: number): TableState {
  let state = openTable(`replay-${matchId}`, { spectate: true });
  for (const event of events.slice(0, count)) {
    const now = event.serverTime ? timestampMs(event.serverTime) : 0;
    state = apply(state, event, { now, keptEnd: () => undefined });
  }
  return state;
}

