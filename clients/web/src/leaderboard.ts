// The ranked tab's leaderboard: a season picker (ListSeasons: the current season, then the
// finished ones) above the board of the season picked, the current one live and a
// finished one as it was kept at its end, the reader's own row marked (and added below
// the page when it is not on it). The decisions are seasons.ts's.

import { authed } from "./api";
import { el, errorText, shared } from "./shell";
import { bdi, t } from "./i18n";
import { boardHeading, boardView, LastPick, seasonChoices, type BoardHeading } from "./seasons";
import type { LeaderboardResponse } from "./gen/basra/accounts/v1/accounts_pb";

/** How many rows the board shows. */
const ROWS = 20;

/** The heading's words. */
function headingText(heading: BoardHeading): string {
  switch (heading.key) {
    case "leaderboard":
      return t("leaderboard");
    case "boardCurrent":
      return t("boardCurrent", { name: heading.name });
    case "boardFinal":
      return heading.endedMs === null
        ? t("boardFinalUndated", { name: heading.name })
        : t("boardFinal", { name: heading.name, when: new Date(heading.endedMs).toLocaleDateString() });
  }
}

/** The leaderboard section for the reader `me` (their user id). */
export function leaderboardSection(me: string | undefined): HTMLElement {
  const api = shared.api;
  const heading = el("h3", { id: "board-title", "data-testid": "board-title" }, t("leaderboard"));
  const picker = el("select", { id: "season-picker", "data-testid": "season-picker", hidden: true });
  const label = el("label", { for: "season-picker", hidden: true }, t("season"));
  const board = el("ol", { class: "board", "data-testid": "leaderboard", "aria-labelledby": "board-title", "aria-live": "polite" });
  // Said beside the list (a list item would be numbered "1.").
  const note = el("p", { class: "hint-text", "data-testid": "leaderboard-note", role: "status", hidden: true });
  const picks = new LastPick();

  const say = (text: string | null) => {
    note.textContent = text ?? "";
    note.hidden = text === null;
    board.hidden = text !== null;
  };
  const draw = (answer: LeaderboardResponse) => {
    heading.textContent = headingText(boardHeading(answer));
    const view = boardView(answer, me);
    board.replaceChildren(
      ...view.rows.map(({ entry, mine, gap }) =>
        el(
          "li",
          { value: entry.rank, class: [mine ? "me" : "", gap ? "gap" : ""].join(" ").trim(), "data-testid": "leader" },
          bdi(entry.displayName),
          ` — ${Math.round(entry.rating)}`,
          entry.tier ? ` · ${entry.tier}` : "",
        ),
      ),
    );
    say(view.empty && t(view.empty));
  };
  const show = (seasonId: string) => {
    const ticket = picks.take();
    void authed(api, () => api.accounts.leaderboard({ pageSize: ROWS, seasonId }))
      .then((answer) => picks.current(ticket) && draw(answer))
      .catch((err) => picks.current(ticket) && (board.replaceChildren(), say(errorText(err))));
  };
  picker.addEventListener("change", () => show(picker.value));

  void authed(api, () => api.accounts.listSeasons({}))
    .then((answer) => {
      const choices = seasonChoices(answer);
      picker.replaceChildren(
        ...choices.map((c) =>
          el("option", { value: c.value, "data-season": c.id }, c.current ? t("seasonCurrent", { name: c.name }) : t("seasonFinished", { name: c.name })),
        ),
      );
      // Nothing to pick until a season has finished.
      const pickable = choices.some((c) => !c.current);
      picker.hidden = !pickable;
      label.hidden = !pickable;
    })
    .catch(() => {});
  show("");
  return el("section", { "data-testid": "leaderboard-section" }, heading, el("p", {}, label, " ", picker), board, note);
}
