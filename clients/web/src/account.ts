// The player's own things: the profile (display name within the server's limits, sign in
// with a username and password or stay a guest, sign out) and ranked play (rating and its
// change, the leaderboard, the match history). Names are checked here as accounts checks
// them (services/accounts/src/domain.rs), and the server's refusals are put in words.

import { authed, currentUser, deleteMyAccount, exportMyData, logIn, register, setRememberedName } from "./api";
import { el, errorText, screens, shared, Code, ConnectError } from "./shell";
import { bdi, t, tx } from "./i18n";
import { replayPanel } from "./replay";
import { leaderboardSection } from "./leaderboard";
import { standing } from "./seasons";
import type { Profile } from "./gen/basra/accounts/v1/accounts_pb";
import type { RatingChange } from "./gen/basra/common/v1/common_pb";
import { MatchEndReason } from "./gen/basra/common/v1/common_pb";
import { timestampMs } from "@bufbuild/protobuf/wkt";

export const NAME_MAX = 24;

// Zero-width, bidirectional controls, blank fillers… (the server's list).
const INVISIBLE = /[\u00AD\u034F\u0600-\u0605\u061C\u06DD\u070F\u115F\u1160\u17B4\u17B5\u180B-\u180F\u200B-\u200F\u202A-\u202E\u2060-\u206F\u2800\u3164\uFE00-\uFE0F\uFEFF\uFFA0\uFFF9-\uFFFB]/u;
const CONTROL = /[\u0000-\u0008\u000E-\u001F\u007F-\u0084\u0086-\u009F]/u;

/** Why a display name would be refused, in the reader's words; null when it is fine. */
export function nameProblem(raw: string): string | null {
  if (CONTROL.test(raw) || INVISIBLE.test(raw)) return t("nameInvisible");
  const name = raw.trim().split(/\s+/u).filter(Boolean).join(" ");
  const len = [...name].length;
  if (len === 0) return t("nameEmpty");
  if (len > NAME_MAX) return t("nameTooLong", { len });
  const words = name.toLowerCase().replace(/0/g, "o").replace(/1/g, "l").split(/[^a-z0-9]+/);
  if (words.includes("bot") || /^p(l|1)ayer\s*#?\s*\d+$/i.test(name)) return t("nameReserved");
  return null;
}

/**
 * A name pasted longer than the field takes (`maxlength` would cut it silently) is not
 * pasted: `say` explains why, as for the other refusals.
 */
export function refuseLongPaste(input: HTMLInputElement, say: (text: string) => void): void {
  input.addEventListener("paste", (e) => {
    const pasted = e.clipboardData?.getData("text") ?? "";
    const start = input.selectionStart ?? input.value.length;
    const end = input.selectionEnd ?? start;
    const name = input.value.slice(0, start) + pasted + input.value.slice(end);
    if (name.length <= NAME_MAX) return;
    e.preventDefault();
    say(t("nameTooLong", { len: [...name].length }));
  });
}

/** The server's refusal of a name, in the reader's words. */
export function nameError(err: unknown): string {
  const e = ConnectError.from(err);
  const m = e.rawMessage;
  if (e.code === Code.ResourceExhausted) {
    const when = /(\d{4}-\d\d-\d\dT[\d:]+)/.exec(m)?.[1];
    return t("nameTooOften", { when: when ? new Date(when + (when.endsWith("Z") ? "" : "Z")).toLocaleString() : "…" });
  }
  if (e.code !== Code.InvalidArgument || !/display_name/.test(m)) return errorText(err);
  const long = /at most \d+ characters long, not (\d+)/.exec(m);
  if (long) return t("nameTooLong", { len: long[1] });
  if (/empty/.test(m)) return t("nameEmpty");
  if (/invisible|control/.test(m)) return t("nameInvisible");
  if (/could pass for/.test(m)) return t("nameReserved");
  return errorText(err);
}

export function signInError(err: unknown): string {
  const e = ConnectError.from(err);
  if (e.code === Code.Unauthenticated) return t("badLogin");
  if (e.code === Code.AlreadyExists) return t("usernameTaken");
  if (e.code === Code.ResourceExhausted) return t("tooManyTries");
  if (e.code === Code.InvalidArgument) return /display_name/.test(e.rawMessage) ? nameError(err) : t("badUsername");
  return errorText(err);
}

/** The profile tab. */
export function profilePanel(): HTMLElement {
  const me = currentUser();
  const api = shared.api;
  const panel = el("section", { class: "card-panel", "data-testid": "profile-panel", "aria-labelledby": "profile-title" });
  const stats = el("p", { "data-testid": "profile-stats" });
  const season = el("p", { "data-testid": "profile-season" });
  const nameInput = el("input", { id: "display-name", "data-testid": "display-name", maxlength: NAME_MAX, value: me?.name ?? "", autocomplete: "nickname", "aria-describedby": "name-rules" });
  const nameMessage = el("p", { role: "status", "data-testid": "name-message" });
  refuseLongPaste(nameInput, (text) => (nameMessage.textContent = text));
  const user = el("input", { id: "username", "data-testid": "username", autocomplete: "username", maxlength: 20, "aria-describedby": "login-rules" });
  const pass = el("input", { id: "password", "data-testid": "password", type: "password", autocomplete: "current-password", maxlength: 128 });
  const loginMessage = el("p", { role: "status", "data-testid": "login-message" });
  const signInWith = (how: typeof logIn) => async () => {
    if (!user.value.trim() || !pass.value) return;
    try {
      await how(api, user.value.trim(), pass.value);
      screens.lobby();
    } catch (err) {
      loginMessage.textContent = signInError(err);
    }
  };
  panel.append(
    el("h2", { id: "profile-title" }, t("profileTitle")),
    el("p", { "data-testid": "account-kind" }, me?.isGuest ? t("guestNote") : ""),
    stats,
    season,
    el(
      "form",
      {
        onsubmit: async (e: Event) => {
          e.preventDefault();
          const problem = nameProblem(nameInput.value);
          if (problem) {
            nameMessage.textContent = problem;
            return;
          }
          try {
            const answer = await authed(api, () => api.accounts.setDisplayName({ displayName: nameInput.value }));
            setRememberedName(answer.displayName);
            nameMessage.replaceChildren(...tx("nameChanged", { name: bdi(answer.displayName) }));
            document.querySelector("[data-testid=who] bdi")?.replaceChildren(answer.displayName);
          } catch (err) {
            nameMessage.textContent = nameError(err);
          }
        },
      },
      el("label", { for: "display-name" }, t("displayName")),
      nameInput,
      el("button", { type: "submit", "data-testid": "save-name" }, t("save")),
      el("p", { id: "name-rules", class: "hint-text" }, t("nameRules")),
      nameMessage,
    ),
    el(
      "form",
      { onsubmit: (e: Event) => { e.preventDefault(); void signInWith(logIn)(); } },
      el("h3", {}, t("loginTitle")),
      el("label", { for: "username" }, t("username")),
      user,
      el("label", { for: "password" }, t("password")),
      pass,
      el("p", { id: "login-rules", class: "hint-text" }, t("usernameRules")),
      el("button", { type: "submit", "data-testid": "log-in" }, t("logIn")),
      me?.isGuest ? el("button", { type: "button", "data-testid": "register", onclick: signInWith(register) }, t("register")) : null,
      loginMessage,
    ),
  );
  panel.append(myDataSection());
  void authed(api, () => api.accounts.getProfile({})).then(({ profile }) => {
    if (!profile) return;
    stats.replaceChildren(
      ratingWithTier(profile),
      " · ",
      t("record", { played: profile.matchesPlayed, wins: profile.wins, losses: profile.losses }),
    );
    season.textContent = bestFinishText(profile);
    if (!profile.isGuest) panel.querySelector("[data-testid=account-kind]")!.textContent = t("accountNote", { username: profile.username });
  }).catch(() => {});
  return panel;
}

/** A modal dialog with `body`, a confirm button (`confirmId`) and a cancel button. */
function confirmDialog(testId: string, title: string, body: Node[], confirm: HTMLButtonElement): HTMLDialogElement {
  const dialog: HTMLDialogElement = el(
    "dialog",
    { "data-testid": testId, "aria-labelledby": `${testId}-title` },
    el("h3", { id: `${testId}-title` }, title),
    ...body,
    el(
      "p",
      { class: "dialog-buttons" },
      confirm,
      el("button", { type: "button", "data-testid": `${testId}-cancel`, onclick: () => dialog.close() }, t("cancel")),
    ),
  );
  dialog.addEventListener("close", () => dialog.remove());
  return dialog;
}

/** "Export my data" and "Delete my account", each behind a confirmation dialog. */
function myDataSection(): HTMLElement {
  const api = shared.api;
  const status = el("p", { role: "status", "data-testid": "my-data-status" });
  const openExport = () => {
    const download = el("button", { type: "button", "data-testid": "export-confirm" }, t("exportDownload"));
    const dialog = confirmDialog("export-dialog", t("exportTitle"), [el("p", {}, t("exportExplain"))], download);
    download.addEventListener("click", async () => {
      download.disabled = true;
      try {
        const json = await authed(api, () => exportMyData(api));
        const url = URL.createObjectURL(new Blob([json], { type: "application/json" }));
        const link = el("a", { href: url, download: "basra-my-data.json" });
        document.body.append(link);
        link.click();
        link.remove();
        setTimeout(() => URL.revokeObjectURL(url), 10_000);
        status.textContent = t("exportDone", { kb: Math.max(1, Math.round(json.length / 1024)) });
        dialog.close();
      } catch (err) {
        status.textContent = errorText(err);
        dialog.close();
      }
    });
    document.body.append(dialog);
    dialog.showModal();
  };
  const openDelete = () => {
    const guest = currentUser()?.isGuest ?? true;
    const word = t("deleteWord");
    const input = guest
      ? el("input", { id: "delete-proof", "data-testid": "delete-proof", autocomplete: "off", dir: "auto" })
      : el("input", { id: "delete-proof", "data-testid": "delete-proof", type: "password", autocomplete: "current-password", maxlength: 128 });
    const message = el("p", { role: "alert", class: "problem", "data-testid": "delete-message" });
    const confirm = el("button", { type: "button", class: "danger", "data-testid": "delete-confirm", disabled: true }, t("deleteForGood"));
    const ready = () => (confirm.disabled = guest ? input.value.trim().toLowerCase() !== word.toLowerCase() : input.value.length === 0);
    input.addEventListener("input", ready);
    const dialog = confirmDialog(
      "delete-dialog",
      t("deleteTitle"),
      [
        el("p", {}, t("deleteExplain")),
        el("label", { for: "delete-proof" }, guest ? t("deleteTypeWord", { word }) : t("deleteTypePassword")),
        input,
        message,
      ],
      confirm,
    );
    confirm.addEventListener("click", async () => {
      confirm.disabled = true;
      try {
        await authed(api, () => deleteMyAccount(api, guest ? null : input.value));
        dialog.close();
        screens.signedOut();
      } catch (err) {
        const e = ConnectError.from(err);
        message.textContent = e.code === Code.PermissionDenied ? t("deleteWrongPassword") : e.code === Code.ResourceExhausted ? t("tooManyTries") : errorText(err);
        ready();
      }
    });
    document.body.append(dialog);
    dialog.showModal();
    input.focus();
  };
  return el(
    "section",
    { "data-testid": "my-data", "aria-labelledby": "my-data-title" },
    el("h3", { id: "my-data-title" }, t("myDataTitle")),
    el("button", { type: "button", "data-testid": "export-my-data", onclick: openExport }, t("exportMyData")),
    " ",
    el("button", { type: "button", class: "danger", "data-testid": "delete-my-account", onclick: openDelete }, t("deleteMyAccount")),
    status,
  );
}

/** The ranked tab: my rating, the leaderboard, my match history. */
export function rankedPanel(): HTMLElement {
  const api = shared.api;
  const me = currentUser();
  const rating = el("p", { "data-testid": "my-rating" }, "…");
  const history = el("ul", { class: "history", "data-testid": "history" });
  void authed(api, () => api.accounts.getProfile({})).then(({ profile }) => {
    if (profile) rating.textContent = ratingWithTier(profile);
  }).catch(() => {});
  void authed(api, () => api.accounts.matchHistory({ pageSize: 20 })).then((answer) => {
    history.replaceChildren(
      ...(answer.matches.length
        ? answer.matches.map((m) => {
            const mySide = m.seats[m.yourSeat]?.side;
            const result = m.endReason === MatchEndReason.CLOSED || m.winnerSide === undefined ? t("closed") : m.winnerSide === mySide ? t("won") : t("lost");
            const opponents = el("span", {});
            m.seats.filter((s) => s.side !== mySide).forEach((s, i) => {
              if (i) opponents.append(", ");
              opponents.append(bdi(s.displayName));
            });
            const change = m.yourRatingChange;
            const when = m.endedAt ? new Date(timestampMs(m.endedAt)).toLocaleString() : "";
            const row = el(
              "li",
              { "data-testid": "history-row", "data-ranked": String(m.ranked) },
              ...tx("historyRow", { result, opponents, scores: m.finalTotals.join(" – ") }),
              m.ranked ? ` · ${t("rankedTag")}` : "",
              change ? ` · ${ratingText(change)}` : "",
              when ? el("small", {}, ` · ${when}`) : null,
              " ",
            );
            const open = el("button", { type: "button", class: "link", "data-testid": "replay-open" }, t("replay"));
            open.addEventListener("click", () => {
              const panel = replayPanel(m.matchId, () => {
                panel.remove();
                open.hidden = false;
              });
              open.hidden = true;
              row.append(panel);
            });
            row.append(open);
            return row;
          })
        : [el("li", {}, t("historyEmpty"))]),
    );
  }).catch((err) => history.replaceChildren(el("li", {}, errorText(err))));
  return el(
    "section",
    { class: "card-panel", "data-testid": "ranked-panel", "aria-labelledby": "ranked-title" },
    el("h2", { id: "ranked-title" }, t("tabRanked")),
    rating,
    leaderboardSection(me?.userId),
    el("h3", {}, t("history")),
    history,
  );
}

/** "Rating: 1612 · Gold" (the tier when the server names one). */
export function ratingWithTier(profile: Profile): string {
  const r = Math.round(profile.rating);
  const { tier } = standing(profile);
  return tier ? t("ratingTier", { r, tier }) : t("rating", { r });
}

/** The profile's best finish on a finished season's leaderboard, in words. */
export function bestFinishText(profile: Profile): string {
  const best = standing(profile).best;
  if (!best) return t("noBestFinish");
  return best.tier ? t("bestFinish", { ...best }) : t("bestFinishNoTier", { ...best });
}

export function ratingText(change: RatingChange): string {
  const delta = Math.round(change.ratingAfter) - Math.round(change.ratingBefore);
  return t("ratingChange", { before: Math.round(change.ratingBefore), after: Math.round(change.ratingAfter), delta: delta >= 0 ? `+${delta}` : `${delta}` });
}

const ratings = new Map<string, RatingChange>();

/** My rating change in a match, once known. */
export function ratingFor(matchId: string): RatingChange | undefined {
  return ratings.get(matchId);
}

/**
 * Waits for a ranked match's rating change (MatchEnded may come before the ratings are
 * computed; the history has them once they are), then calls `done`.
 */
export function watchRating(matchId: string, done: () => void): void {
  if (ratings.has(matchId)) return;
  void (async () => {
    for (let attempt = 0; attempt < 20; attempt++) {
      const answer = await authed(shared.api, () => shared.api.accounts.matchHistory({ pageSize: 5 })).catch(() => null);
      const found = answer?.matches.find((m) => m.matchId === matchId)?.yourRatingChange;
      if (found) {
        ratings.set(matchId, found);
        done();
        return;
      }
      await new Promise((r) => setTimeout(r, 500));
    }
  })();
}
