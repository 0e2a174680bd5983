// What every screen shares: the DOM helper, the API handle, the header with the language
// switch and the live notices (friend requests, invites), and the way screens call each
// other (set once by main.ts, so the screen modules do not import each other in a circle).

import { ConnectError, Code, currentUser, type Api } from "./api";
import { bdi, lang, setLang, t, tx } from "./i18n";

export const app = document.getElementById("app")!;

export const shared: { api: Api } = { api: undefined as unknown as Api };

type Attrs = Record<string, string | number | boolean | undefined | ((e: Event) => void)>;
type Child = Node | string | null | undefined | false;

export function el<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Attrs = {}, ...children: (Child | Child[])[]): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (typeof value === "function") node.addEventListener(key.replace(/^on/, ""), value);
    else if (value === false || value === undefined) continue;
    else if (key === "class") node.className = String(value);
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children.flat()) if (child) node.append(child);
  return node;
}

/**
 * Makes `children` the children of `parent`, leaving where they are those already there
 * (in the same order): a node taken out of the page, even for a moment, loses the press
 * on it, and its click with it.
 */
export function patch(parent: Element, children: Node[]): void {
  const keep = new Set(children);
  for (const old of [...parent.childNodes]) if (!keep.has(old)) old.remove();
  children.forEach((child, i) => {
    const at = parent.childNodes[i] ?? null;
    if (at !== child) parent.insertBefore(child, at);
  });
}

/** The screens, as main.ts registers them. */
export const screens = {
  lobby: (_notice?: string): void => {},
  signIn: (): void => {},
  /** After the account is gone (deleted): the feed stops, the sign-in screen shows. */
  signedOut: (): void => {},
  table: (_roomId: string, _options?: { code?: string; spectate?: boolean }): void => {},
};

/** Redraws the screen on show (after a language switch, a notice). */
export const view: { redraw: () => void } = { redraw: () => {} };

/** The live notices under the header (social.ts fills it). */
export const notices: { render: () => Node | null } = { render: () => null };

export function header(): HTMLElement {
  const me = currentUser();
  return el(
    "header",
    { class: "bar" },
    el("h1", {}, t("title")),
    me ? el("span", { class: "who", "data-testid": "who" }, ...tx("signedInAs", { name: bdi(me.name) })) : null,
    el(
      "button",
      {
        class: "lang",
        "data-testid": "lang",
        lang: lang() === "ar" ? "en" : "ar",
        onclick: () => {
          setLang(lang() === "ar" ? "en" : "ar");
          view.redraw();
        },
      },
      t("language"),
    ),
    notices.render(),
  );
}

export function errorText(err: unknown): string {
  return t("error", { message: ConnectError.from(err).rawMessage });
}

export { Code, ConnectError };
