// The backend through gRPC-Web: the generated services of proto/ and one transport that
// adds the access token to every call. A guest signs in with a device id kept in local
// storage, so the same browser is the same player; an account signs in with a username and
// password and comes back with its refresh token. The access token is refreshed a third of
// its lifetime (at most a minute) before it expires, and once when a call answers
// UNAUTHENTICATED (docs/clients.md, "Signing in and tokens").

import { createClient, ConnectError, Code, type Interceptor } from "@connectrpc/connect";
import { createGrpcWebTransport } from "@connectrpc/connect-web";
import { AccountsService, type AuthTokens } from "./gen/basra/accounts/v1/accounts_pb";
import { MatchmakingService } from "./gen/basra/matchmaking/v1/matchmaking_pb";
import { GameService } from "./gen/basra/game/v1/game_pb";
import { EventService } from "./gen/basra/matchmaking/v1/events_pb";

export { ConnectError, Code };

const DEVICE_KEY = "basra.device";
const NAME_KEY = "basra.name";
const REFRESH_KEY = "basra.refresh";

let token = "";
/** The sign-in's refresh token (a guest's too, kept in memory only), and who refreshes. */
let refreshToken = "";
let refreshTimer: ReturnType<typeof setTimeout> | undefined;
let refreshing: Promise<boolean> | null = null;
let client: Api | null = null;

/** The page's version, set by the bundler from package.json (build.mjs). */
declare const __APP_VERSION__: string;

/** What the page calls itself in the `basra-client` metadata of every call. */
export const CLIENT = `web/${typeof __APP_VERSION__ === "string" ? __APP_VERSION__ : "0.0.0"}`;

const withToken: Interceptor = (next) => async (req) => {
  req.header.set("basra-client", CLIENT);
  if (token) req.header.set("authorization", `Bearer ${token}`);
  return next(req);
};

/** Where the API is: `config.json` next to the page names it (basra dev writes it). */
async function apiUrl(): Promise<string> {
  const fromQuery = new URLSearchParams(location.search).get("api");
  if (fromQuery) return fromQuery;
  try {
    const response = await fetch("config.json", { cache: "no-store" });
    if (response.ok) {
      const config = (await response.json()) as { api?: string };
      if (config.api) return config.api;
    }
  } catch {
    // no config: same origin
  }
  return location.origin;
}

export interface Api {
  accounts: ReturnType<typeof createClient<typeof AccountsService>>;
  matchmaking: ReturnType<typeof createClient<typeof MatchmakingService>>;
  game: ReturnType<typeof createClient<typeof GameService>>;
  events: ReturnType<typeof createClient<typeof EventService>>;
}

export async function connect(): Promise<Api> {
  const transport = createGrpcWebTransport({
    baseUrl: await apiUrl(),
    useBinaryFormat: true,
    interceptors: [withToken],
  });
  client = {
    accounts: createClient(AccountsService, transport),
    matchmaking: createClient(MatchmakingService, transport),
    game: createClient(GameService, transport),
    events: createClient(EventService, transport),
  };
  return client;
}

/**
 * Exchanges the refresh token for new tokens, once however many callers ask at the same
 * time (a refresh token works once: a second use would revoke the sign-in). False when
 * there is none or the server refused it (then sign in again).
 */
export function refreshNow(): Promise<boolean> {
  if (refreshing) return refreshing;
  const api = client;
  const spent = refreshToken;
  if (!api || !spent) return Promise.resolve(false);
  refreshing = api.accounts
    .refresh({ refreshToken: spent })
    .then((answer) => {
      took(answer.tokens);
      return true;
    })
    .catch(() => false)
    .finally(() => {
      refreshing = null;
    });
  return refreshing;
}

/** Refreshes ahead of `tokens`' expiry: a third of the lifetime before it, at most 1 min. */
function scheduleRefresh(tokens: AuthTokens | undefined): void {
  clearTimeout(refreshTimer);
  const expires = tokens?.accessTokenExpiresAt;
  if (!expires || !refreshToken) return;
  const lifetime = Number(expires.seconds) * 1000 + expires.nanos / 1e6 - Date.now();
  const due = Math.max(0, lifetime - Math.min(lifetime / 3, 60_000));
  refreshTimer = setTimeout(() => {
    void refreshNow().then((ok) => {
      // Offline or refused: the next call's UNAUTHENTICATED refreshes or signs in again.
      if (!ok) refreshTimer = setTimeout(() => void refreshNow(), 5_000);
    });
  }, due);
}

/** Who is signed in, as the last sign-in said. */
export interface Me {
  userId: string;
  name: string;
  isGuest: boolean;
}

let me: Me | null = null;

export function currentUser(): Me | null {
  return me;
}

/** The name this browser signs in with (a guest's name, or an account's). */
export function rememberedName(): string | null {
  return localStorage.getItem(NAME_KEY);
}

export function setRememberedName(name: string): void {
  localStorage.setItem(NAME_KEY, name);
  if (me) me.name = name;
}

function deviceId(): string {
  let id = localStorage.getItem(DEVICE_KEY);
  if (!id) {
    id = `web-${crypto.randomUUID()}`;
    localStorage.setItem(DEVICE_KEY, id);
  }
  return id;
}

function took(tokens: AuthTokens | undefined): void {
  token = tokens?.accessToken ?? "";
  refreshToken = tokens?.refreshToken ?? "";
  scheduleRefresh(tokens);
  if (tokens?.refreshToken && !tokens.isGuest) localStorage.setItem(REFRESH_KEY, tokens.refreshToken);
  if (tokens?.isGuest) localStorage.removeItem(REFRESH_KEY);
  me = { userId: tokens?.userId ?? "", name: tokens?.displayName ?? "", isGuest: tokens?.isGuest ?? true };
  localStorage.setItem(NAME_KEY, me.name);
}

/** Signs in as this browser's guest: the same device is the same guest (and rating). */
export async function signIn(api: Api, name: string): Promise<void> {
  const answer = await api.accounts.guestLogin({ deviceId: deviceId(), displayName: name });
  took(answer.tokens);
}

/** Signs in again as whoever this browser was: the account (refresh token) or the guest. */
export async function resume(api: Api): Promise<boolean> {
  const refresh = localStorage.getItem(REFRESH_KEY);
  if (refresh) {
    try {
      took((await api.accounts.refresh({ refreshToken: refresh })).tokens);
      return true;
    } catch {
      localStorage.removeItem(REFRESH_KEY);
      localStorage.removeItem(NAME_KEY);
      return false;
    }
  }
  const name = rememberedName();
  if (!name) return false;
  await signIn(api, name);
  return true;
}

/** Signs in with a username and password. */
export async function logIn(api: Api, username: string, password: string): Promise<void> {
  took((await api.accounts.login({ username, password })).tokens);
}

/** Registers: the guest signed in now becomes the account (same rating and history). */
export async function register(api: Api, username: string, password: string): Promise<void> {
  took((await api.accounts.register({ username, password })).tokens);
}

/** Signs out: the account's refresh token is revoked; the page forgets the name. */
export async function signOut(api: Api): Promise<void> {
  const refresh = localStorage.getItem(REFRESH_KEY);
  if (refresh) await api.accounts.logout({ refreshToken: refresh }).catch(() => {});
  localStorage.removeItem(REFRESH_KEY);
  localStorage.removeItem(NAME_KEY);
  token = "";
  refreshToken = "";
  clearTimeout(refreshTimer);
  me = null;
}

/** Everything the server holds about me (ExportMyData), as the text of its JSON document. */
export async function exportMyData(api: Api): Promise<string> {
  const pieces: Uint8Array[] = [];
  for await (const piece of api.accounts.exportMyData({})) pieces.push(piece.data);
  const whole = new Uint8Array(pieces.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of pieces) {
    whole.set(p, at);
    at += p.length;
  }
  return new TextDecoder().decode(whole);
}

/**
 * Deletes my account for good (DeleteAccount): an account proves it is mine with its
 * password, a guest with this browser's device id. Then the page forgets everything it
 * kept (the next guest sign-in is a new player). Answers the matches kept, anonymous.
 */
export async function deleteMyAccount(api: Api, password: string | null): Promise<number> {
  const answer = await api.accounts.deleteAccount({
    proof: password === null ? { case: "deviceId", value: deviceId() } : { case: "password", value: password },
  });
  localStorage.removeItem(REFRESH_KEY);
  localStorage.removeItem(NAME_KEY);
  localStorage.removeItem(DEVICE_KEY);
  token = "";
  refreshToken = "";
  clearTimeout(refreshTimer);
  me = null;
  return answer.matchesKept;
}

/** Runs `call`; on UNAUTHENTICATED refreshes once (or, failing that, signs in again) and retries. */
export async function authed<T>(api: Api, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (err) {
    if (ConnectError.from(err).code === Code.Unauthenticated && (await renew(api))) return call();
    throw err;
  }
}

/** New tokens after an UNAUTHENTICATED: a refresh, else a new sign-in. */
export async function renew(api: Api): Promise<boolean> {
  return (await refreshNow()) || resume(api);
}

/** The refusal code of a failed action (`REJECT_CODE_STALE`, …), if the server sent one. */
export function rejectCode(err: unknown): string {
  const e = ConnectError.from(err);
  return e.metadata.get("basra-reject-code") ?? "";
}
