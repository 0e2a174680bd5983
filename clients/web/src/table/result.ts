// The result panel: who won, the final score, the rating change of a ranked match, the
// revealed seed checked against the commitment shown from the start, the rematch and the
// way back to the lobby.

import { el } from "../shell";
import { bdi, t, tx } from "../i18n";
import { currentUser } from "../api";
import { sha256, hex } from "../sha256";
import { ratingFor, ratingText } from "../account";
import type { MatchEnded } from "../gen/basra/game/v1/game_pb";
import { MatchEndReason } from "../gen/basra/common/v1/common_pb";
import { sideOf, type TableState } from "./state";
import { scoreLine, sideName } from "./words";
import type { TableActions } from "./view";
import { reportButton } from "../report";

export function resultPanel(state: TableState, ended: MatchEnded, actions: TableActions): HTMLElement {
  const mySide = state.seat === undefined ? undefined : sideOf(state, state.seat);
  const title =
    ended.winnerSide !== undefined
      ? ended.winnerSide === mySide ? t("youWon") : mySide === undefined ? "" : t("youLost")
      : ended.reason === MatchEndReason.CLOSED ? t("noWinner") : t("matchOver");
  const seed = hex(ended.seed);
  // The page checks the revealed seed against the commitment it showed from the start.
  const check = !ended.seed.length
    ? el("p", { "data-testid": "seed-check", "data-ok": "unknown" }, t("seedInHistory"))
    : !state.commitment
    ? el("p", { "data-testid": "seed-check", "data-ok": "unknown" }, t("seedUnchecked"))
    : hex(sha256(ended.seed)) === hex(state.commitment)
      ? el("p", { "data-testid": "seed-check", "data-ok": "true", class: "verified" }, t("seedVerified"))
      : el("p", { "data-testid": "seed-check", "data-ok": "false", class: "problem" }, t("seedMismatch", { hash: hex(state.commitment) }));
  const mine = state.ranked ? (ended.ratingChanges.find((c) => c.userId === currentUser()?.userId) ?? ratingFor(state.matchId)) : undefined;
  const rating = !state.ranked || state.spectate
    ? null
    : mine
      ? el("p", { "data-testid": "rating-change" }, ratingText(mine))
      : el("p", { "data-testid": "rating-change", "data-pending": "true" }, t("ratingPending"));
  const winnerName = ended.winnerSide === undefined ? null : sideName(state, ended.winnerSide);
  // "Report" for each other player who sat in the match (not bots, not the reader).
  const me = currentUser()?.userId;
  const others = state.spectate ? [] : state.seats.filter((s) => s.userId && s.userId !== me);
  return el(
    "section",
    { class: "result card-panel", role: "region", "aria-label": title || t("result"), "data-testid": "result" },
    el("h2", {}, ...(title ? [title] : winnerName ? tx("sideWon", { name: winnerName }) : [])),
    el("p", { "data-testid": "final-score" }, ...tx("finalScore", { scores: scoreLine(state, ended.totals) })),
    ended.reason === MatchEndReason.CLOSED && ended.closeReason.trim()
      ? el("p", { "data-testid": "close-reason" }, ...tx("closedBecause", { reason: ended.closeReason.trim() }))
      : null,
    rating,
    ended.seed.length ? el("p", { class: "seed", "data-testid": "seed" }, t("seedShown", { seed })) : null,
    check,
    state.closed ? el("p", { "data-testid": "room-closed" }, t("roomClosed")) : null,
    others.length
      ? el("ul", { class: "report-players", "data-testid": "report-players" },
          ...others.map((s) => el("li", {}, bdi(s.displayName), " ", reportButton(s.userId, s.displayName, ended.matchId))))
      : null,
    state.spectate || state.closed
      ? null
      : el("button", { "data-testid": "rematch", disabled: state.rematchAsked, onclick: () => actions.rematch() }, t("rematch")),
    el("button", { "data-testid": "back", onclick: () => actions.back() }, t("backToLobby")),
  );
}
