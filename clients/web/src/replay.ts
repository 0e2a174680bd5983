// A finished match of the player's, move by move (AccountsService.GetReplay): the events a
// spectator saw go through the table's own state (table/state.ts), one at a time (Step) or
// one a second (Play / Pause), with the analysis of the player's plays beside each one.
// Opened from a row of the match history.

import { authed } from "./api";
import { el, errorText, shared } from "./shell";
import { cardName, t } from "./i18n";
import { markKey, replayed, verdictAt } from "./replay-steps";
import { announcementWords, cardList, nameNode, scoreLine } from "./table/words";
import type { GetReplayResponse, PlayVerdict } from "./gen/basra/accounts/v1/accounts_pb";
import { AnalysisState } from "./gen/basra/accounts/v1/accounts_pb";

function verdictWords(v: PlayVerdict): string {
  const key = markKey(v.quality);
  if (!key) return t("markGood");
  const best = v.best ? cardName(v.best.rank, v.best.suit) : "?";
  return t("markLine", { mark: t(key), n: v.expectedLoss.toFixed(1), card: best });
}

/** The replay panel of `matchId`; `close` takes it away. */
export function replayPanel(matchId: string, close: () => void): HTMLElement {
  const api = shared.api;
  const status = el("p", { "data-testid": "replay-status", role: "status" }, "…");
  const board = el("div", { class: "replay-board", "data-testid": "replay-board" });
  const mark = el("p", { class: "replay-mark", "data-testid": "replay-mark" });
  const step = el("button", { type: "button", "data-testid": "replay-step" }, t("replayStep"));
  const play = el("button", { type: "button", "data-testid": "replay-play" }, t("replayPlay"));
  const done = el("button", { type: "button", "data-testid": "replay-close" }, t("replayClose"));
  let answer: GetReplayResponse | undefined;
  let shown = 0;
  let timer: ReturnType<typeof setInterval> | undefined;

  const stop = () => {
    if (timer) clearInterval(timer);
    timer = undefined;
    play.textContent = t("replayPlay");
  };
  const draw = () => {
    if (!answer) return;
    const state = replayed(matchId, answer.events, shown);
    const event = answer.events[shown - 1];
    board.replaceChildren(
      el("p", {}, t("replayRound", { round: state.round }), " · ", scoreLine(state, state.totals)),
      el("p", {}, t("replayTable", { cards: cardList(state.table) || "—" })),
      ...state.announcements.slice(-2).map((a) => el("p", { class: "announcement" }, ...announcementWords(state, a))),
    );
    mark.replaceChildren();
    if (event?.event.case === "cardPlayed") {
      const played = event.event.value;
      mark.append(nameNode(state, played.seat), ` ${t("replayPlayed", { card: played.card ? cardName(played.card.rank, played.card.suit) : "?" })}`);
      const verdict = verdictAt(answer.analysis, event.seq);
      if (verdict) {
        mark.append(" — ", el("strong", { "data-quality": String(verdict.quality) }, verdictWords(verdict)));
      }
    }
    status.textContent = shown >= answer.events.length ? t("replayEnd") : t("replayAt", { n: shown, of: answer.events.length });
    // What is shown, for tests and assistive tools alike: the events shown of all, the
    // kind of the last one, the totals so far.
    status.dataset.shown = String(shown);
    status.dataset.events = String(answer.events.length);
    mark.dataset.kind = event?.event.case ?? "";
    board.dataset.totals = state.totals.join(",");
    step.disabled = shown >= answer.events.length;
    if (shown >= answer.events.length) stop();
  };
  const next = () => {
    if (answer && shown < answer.events.length) {
      shown += 1;
      draw();
    }
  };
  step.addEventListener("click", () => {
    stop();
    next();
  });
  play.addEventListener("click", () => {
    if (timer) return stop();
    play.textContent = t("replayPause");
    timer = setInterval(next, 1000);
  });
  done.addEventListener("click", () => {
    stop();
    close();
  });

  const load = async (tries: number): Promise<void> => {
    const fresh = await authed(api, () => api.accounts.getReplay({ matchId, withAnalysis: true }));
    answer = fresh;
    draw();
    const pending = fresh.analysis?.state === AnalysisState.PENDING;
    if (pending) status.textContent = `${status.textContent} · ${t("analysisPending")}`;
    if (pending && tries > 0) setTimeout(() => void load(tries - 1).catch(() => {}), 2000);
  };
  void load(15).catch((err) => {
    status.textContent = errorText(err);
  });

  return el(
    "section",
    { class: "replay", "data-testid": "replay", "aria-label": t("replay") },
    el("h3", {}, t("replay")),
    el("div", { class: "actions" }, step, play, done),
    status,
    board,
    mark,
  );
}
