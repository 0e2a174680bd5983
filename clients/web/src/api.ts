// The backend through gRPC-Web: the generated services of proto/ and one transport that
// adds the access token to every call. A guest signs in with a device id kept in local
// storage, so the same browser is the same player; an account signs in with a username and
// password and comes back with its refresh token.

import { createClient, ConnectError, Code, type Interceptor } from "@connectrpc/connect";
import { createGrpcWebTransport } from "@connectrpc/connect-web";
import { AccountsService, type AuthTokens } from "./gen/basra/accounts/v1/accounts_pb";
import { MatchmakingService } from "./gen/basra/matchmaking/v1/matchmaking_pb";
import { GameService } from "./gen/basra/game/v1/game_pb";

export { ConnectError, Code };

const DEVICE_KEY = "basra.device";
const NAME_KEY = "basra.name";
const REFRESH_KEY = "basra.refresh";

let token = "";

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
}

export async function connect(): Promise<Api> {
  const transport = createGrpcWebTransport({
    baseUrl: await apiUrl(),
    useBinaryFormat: true,
    interceptors: [withToken],
  });
  return {
    accounts: createClient(AccountsService, transport),
    matchmaking: createClient(MatchmakingService, transport),
    game: createClient(GameService, transport),
  };
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
  me = null;
}

/** Runs `call`; on UNAUTHENTICATED signs in again once and retries. */
export async function authed<T>(api: Api, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (err) {
    if (ConnectError.from(err).code === Code.Unauthenticated && (await resume(api))) return call();
    throw err;
  }
}

/** The refusal code of a failed action (`REJECT_CODE_STALE`, …), if the server sent one. */
export function rejectCode(err: unknown): string {
  const e = ConnectError.from(err);
  return e.metadata.get("basra-reject-code") ?? "";
}
