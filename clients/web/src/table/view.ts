// The table drawn from its state: the opponents, the felt, the status line, the capture
// chooser, the hand, the announcements, the actions. Draws only: what a press does is the
// controller's (`TableActions`).

import { app, el, header, patch } from "../shell";
import { cardName, phrase, phraseCodes, t, tx } from "../i18n";
import { cardBack, cardFace, captureOptions, type CardLike } from "../cards";
import { hex } from "../sha256";
import { inviteList } from "../social";
import { SeatOccupant } from "../gen/basra/common/v1/common_pb";
import { myTurn, type TableState } from "./state";
import { announcementWords, cardList, nameNode, seatName, sideName } from "./words";
import { resultPanel } from "./result";

/** What the table's buttons and keys do (controller.ts). */
export interface TableActions {
  /** A card of the hand pressed: played, or its equally large captures offered. */
  choose(card: CardLike): void;
  /** The card played taking the table cards at `take` (indexes), or what the server takes. */
  play(card: CardLike, take: number[] | undefined): void;
  cancelChoice(): void;
  chat(phrase: number): void;
  resign(): void;
  rematch(): void;
  /** Back to the lobby from the result: the player is done with the room. */
  back(): void;
  /** A spectator leaves. */
  leave(): void;
}

/** The table's screen, kept across redraws with its result panel (a press on its button holds). */
export interface TableScreen {
  main: HTMLElement;
  result?: HTMLElement;
}

export function tableScreen(): TableScreen {
  return { main: el("main", { class: "table-screen", "data-testid": "table" }) };
}

/** The turn's seconds left, on the server's clock. */
export function drawCountdown(state: TableState): void {
  const node = document.getElementById("countdown");
  if (!node) return;
  if (state.turn === undefined || state.deadlineMs === undefined || state.ended) {
    node.textContent = "";
    return;
  }
  const left = Math.max(0, Math.ceil((state.deadlineMs - (Date.now() + state.offsetMs)) / 1000));
  node.textContent = t("secondsLeft", { s: left });
  node.classList.toggle("hurry", left <= 5);
}

export function drawTable(state: TableState, screen: TableScreen, actions: TableActions): void {
  const mine = myTurn(state);
  const tableCards = state.table.map((c, i) => el("li", { class: "slot", "data-index": i, "data-testid": "table-card" }, cardFace(c)));
  const highlight = (take: number[]) => tableCards.forEach((node, i) => node.classList.toggle("would-take", take.includes(i)));
  const hand = state.hand.map((c, i) => {
    const options = captureOptions(c, state.table);
    const take = options[0] ?? [];
    const takes =
      options.length > 1
        ? t("chooseCapture", { card: cardName(c.rank, c.suit) })
        : take.length
          ? t("takes", { cards: cardList(take.map((j) => state.table[j])) })
          : t("takesNothing");
    return el(
      "button",
      {
        class: "hand-card",
        "data-testid": "hand-card",
        "data-card": `${c.rank}-${c.suit}`,
        "data-takes": take.map((j) => `${state.table[j].rank}-${state.table[j].suit}`).join(" "),
        "aria-label": `${i + 1}: ${cardName(c.rank, c.suit)} — ${takes}`,
        title: takes,
        disabled: !mine || state.busy || !!state.choosing,
        onmouseenter: () => highlight(take),
        onmouseleave: () => highlight([]),
        onfocus: () => highlight(take),
        onblur: () => highlight([]),
        onclick: () => actions.choose(c),
      },
      cardFace(c),
    );
  });
  const choosing = state.choosing;
  const chooser = choosing
    ? el(
        "section",
        { class: "card-panel chooser", role: "group", "aria-label": t("chooseCapture", { card: cardName(choosing.card.rank, choosing.card.suit) }), "data-testid": "capture-choice" },
        el("p", {}, t("chooseCapture", { card: cardName(choosing.card.rank, choosing.card.suit) })),
        ...choosing.options.map((option) =>
          el(
            "button",
            {
              "data-testid": "capture-option",
              onmouseenter: () => highlight(option),
              onfocus: () => highlight(option),
              onclick: () => actions.play(choosing.card, option),
            },
            t("takeThese", { cards: cardList(option.map((i) => state.table[i])) }),
          ),
        ),
        el("button", { class: "quiet", onclick: () => actions.cancelChoice() }, t("cancel")),
      )
    : null;
  const others = state.seats
    .filter((s) => s.seat !== state.seat)
    .map((s) =>
      el(
        "div",
        { class: `opponent ${state.turn === s.seat ? "active" : ""}`, "data-testid": "opponent" },
        el("span", { class: `dot ${s.connected || s.occupant === SeatOccupant.BOT ? "on" : "off"}`, "aria-hidden": "true" }),
        el("span", { class: "name", "data-testid": "opponent-name" }, nameNode(state, s.seat)),
        el("span", { class: "sr" }, t("opponentHand", { name: seatName(s, false), n: state.handCounts[s.seat] ?? 0 })),
        el("div", { class: "backs", "aria-hidden": "true", "data-testid": "backs" }, ...Array.from({ length: state.handCounts[s.seat] ?? 0 }, () => cardBack())),
        el("span", { class: "count", "aria-hidden": "true", "data-testid": "hand-count", "data-n": state.handCounts[s.seat] ?? 0 }, `×${state.handCounts[s.seat] ?? 0}`),
      ),
    );
  const sides = state.totals.map((total, side) =>
    el(
      "li",
      { "data-testid": "side", "data-side": side, "data-pile": state.pileSizes[side] ?? 0, "data-total": total },
      el("strong", {}, sideName(state, side)),
      ` ${t("score", { n: total })} · ${t("pile", { n: state.pileSizes[side] ?? 0 })}`,
    ),
  );
  const turn = state.turn;
  const turnText = turn === undefined ? [] : mine ? [t("yourTurn")] : tx("theirTurn", { name: nameNode(state, turn) });
  const waiting = !state.ended && state.seats.some((s) => s.occupant === SeatOccupant.OPEN);
  const chat = state.spectate
    ? null
    : el(
        "div",
        { class: "chat", role: "group", "aria-label": t("chat") },
        ...phraseCodes().map((code) => el("button", { class: "phrase", onclick: () => actions.chat(code) }, phrase(code))),
      );
  const commitment = state.commitment
    ? el("p", { class: "seed", "data-testid": "commitment" }, t("commitment", { hash: hex(state.commitment) }))
    : null;
  // The screen and an unchanged result panel stay in place: a button pressed while an
  // event redraws the table is still there when it is released.
  const fresh = state.ended ? resultPanel(state, state.ended, actions) : undefined;
  if (!fresh || !screen.result?.isEqualNode(fresh)) screen.result = fresh;
  const parts: (HTMLElement | null)[] = [
    state.connection === "reconnecting" ? el("p", { class: "banner", role: "status" }, t("reconnecting")) : null,
    state.spectate ? el("p", { class: "banner", "data-testid": "spectating" }, t("spectating")) : null,
    state.code && waiting ? el("p", { class: "banner code", "data-testid": "room-code" }, t("shareCode", { code: state.code })) : null,
    waiting ? el("p", { class: "banner" }, t("waitingFor")) : null,
    waiting && state.code ? inviteList(state.roomId) : null,
    screen.result ?? null,
    el("section", { class: "opponents" }, ...others),
    el(
      "section",
      { class: "felt", "aria-label": t("table") },
      el("ul", { class: "table-cards", "aria-label": t("table") }, ...(tableCards.length ? tableCards : [el("li", { class: "empty" }, t("emptyTable"))])),
    ),
    el(
      "section",
      { class: "status" },
      el("span", { "data-testid": "round", "data-n": state.round }, t("round", { n: state.round })),
      el("span", { "data-testid": "deck", "data-n": state.deck }, t("deck", { n: state.deck })),
      state.target ? el("span", { "data-testid": "target-shown" }, t("toTarget", { n: state.target })) : null,
      el("span", { class: `turn ${mine ? "mine" : ""}`, "data-testid": "turn" }, ...turnText),
      el("span", { id: "countdown", class: "countdown", "aria-hidden": "true" }),
      el("ul", { class: "sides", "data-testid": "sides" }, ...sides),
    ),
    chooser,
    state.spectate ? null : el("section", { class: "hand", "aria-label": t("yourHand") }, ...hand),
    state.spectate ? null : el("p", { class: "hint" }, t("keysHint")),
    el(
      "div",
      { class: "announce", "aria-live": "polite", "data-testid": "announce" },
      ...state.announcements.map((a, i, all) => el("p", { class: i === all.length - 1 ? "fresh" : "" }, ...announcementWords(state, a))),
    ),
    el(
      "section",
      { class: "actions" },
      chat,
      state.spectate
        ? el("button", { "data-testid": "leave", onclick: () => actions.leave() }, t("leave"))
        : !state.ended
          ? el(
              "button",
              {
                class: "danger",
                "data-testid": "resign",
                onclick: () => {
                  if (confirm(t("resignConfirm"))) actions.resign();
                },
              },
              t("resign"),
            )
          : null,
    ),
    commitment,
  ];
  patch(screen.main, parts.filter((part): part is HTMLElement => part !== null));
  patch(app, [header(), screen.main]);
  drawCountdown(state);
}
