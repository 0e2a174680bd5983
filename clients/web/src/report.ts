// "Report" on a player's card (the friends tab) and on the match result: a reason chosen
// from the fixed list and an optional comment (at most 500 characters), sent with
// AccountsService.ReportPlayer. The reporter hears later, in their inbox, that it was
// handled.

import { authed } from "./api";
import { el, errorText, shared, Code, ConnectError } from "./shell";
import { bdi, t, tx } from "./i18n";
import { ReportReason } from "./gen/basra/accounts/v1/accounts_pb";

/** The longest comment the server takes. */
export const MAX_COMMENT = 500;

const REASONS: [ReportReason, "reasonName" | "reasonCheating" | "reasonChat" | "reasonOther"][] = [
  [ReportReason.OFFENSIVE_NAME, "reasonName"],
  [ReportReason.CHEATING, "reasonCheating"],
  [ReportReason.CHAT_ABUSE, "reasonChat"],
  [ReportReason.OTHER, "reasonOther"],
];

/**
 * The Reports whose form was opened, by player and match, while they are on the screen:
 * the screens redraw on every event (a friend's presence, the rating, a rematch offer),
 * and a redraw asking for the same Report gets the same element back, with the reason
 * chosen, the comment typed and the focus (or the word that it was sent).
 */
const opened = new Map<string, HTMLElement>();

/**
 * A "Report" button for the player `userId` (shown as `name`); `matchId` names the match
 * it happened in. A click opens the form in place of the button.
 */
export function reportButton(userId: string, name: string, matchId = ""): HTMLElement {
  const key = `${userId}/${matchId}`;
  const kept = opened.get(key);
  if (kept?.isConnected) {
    // Moved into the new screen by the redraw under way: the focus comes back after it.
    const focused = document.activeElement;
    if (focused instanceof HTMLElement && kept.contains(focused)) queueMicrotask(() => focused.isConnected && focused.focus());
    return kept;
  }
  opened.delete(key);
  const holder = el("span", { class: "report", "data-testid": "report-holder" });
  const button: HTMLButtonElement = el("button", { class: "quiet", "data-testid": "report", "aria-label": `${t("report")}: ${name}` }, t("report"));
  const close = () => {
    opened.delete(key);
    holder.replaceChildren(button);
  };
  button.addEventListener("click", () => {
    opened.set(key, holder);
    holder.replaceChildren(reportForm(userId, name, matchId, close));
  });
  holder.append(button);
  return holder;
}

function reportForm(userId: string, name: string, matchId: string, close: () => void): HTMLElement {
  const reason = el("select", { "data-testid": "report-reason", "aria-label": t("reportReason") },
    ...REASONS.map(([value, key]) => el("option", { value: String(value) }, t(key))));
  const comment = el("textarea", { "data-testid": "report-comment", maxlength: MAX_COMMENT, rows: 2, placeholder: t("reportComment"), "aria-label": t("reportComment") });
  const message = el("p", { role: "status", "data-testid": "report-message" });
  const send = el("button", { "data-testid": "report-send", type: "submit" }, t("reportSend"));
  const form = el("form", { class: "report-form", "data-testid": "report-form" },
    el("p", {}, ...tx("reportTitle", { name: bdi(name) })),
    reason, comment,
    el("div", {}, send, el("button", { type: "button", class: "quiet", onclick: close }, t("cancel"))),
    message);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    send.disabled = true;
    const api = shared.api;
    try {
      await authed(api, () => api.accounts.reportPlayer({ userId, reason: Number(reason.value), matchId, comment: comment.value }));
      form.replaceChildren(el("p", { role: "status", "data-testid": "report-done" }, t("reportSent")));
    } catch (err) {
      send.disabled = false;
      message.textContent = ConnectError.from(err).code === Code.ResourceExhausted ? t("reportTooMany") : errorText(err);
    }
  });
  return form;
}
