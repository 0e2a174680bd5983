// The backend through gRPC-Web: the generated services of proto/ and one transport that
// adds the access token to every call. A guest signs in with a device id kept in local
// storage, so the same browser is the same player.

import { createClient, ConnectError, Code, type Interceptor } from "@connectrpc/connect";
import { createGrpcWebTransport } from "@connectrpc/connect-web";
import { AccountsService } from "./gen/basra/accounts/v1/accounts_pb";
import { MatchmakingService } from "./gen/basra/matchmaking/v1/matchmaking_pb";
import { GameService } from "./gen/basra/game/v1/game_pb";

export { ConnectError, Code };

const DEVICE_KEY = "basra.device";
const NAME_KEY = "basra.name";

let token = "";

const withToken: Interceptor = (next) => async (req) => {
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

export function rememberedName(): string | null {
  return localStorage.getItem(NAME_KEY);
}

export function forget(): void {
  localStorage.removeItem(NAME_KEY);
  token = "";
}

function deviceId(): string {
  let id = localStorage.getItem(DEVICE_KEY);
  if (!id) {
    id = `web-${crypto.randomUUID()}`;
    localStorage.setItem(DEVICE_KEY, id);
  }
  return id;
}

/** Signs in as this browser's guest (again: tokens are short-lived). */
export async function signIn(api: Api, name: string): Promise<void> {
  const answer = await api.accounts.guestLogin({ deviceId: deviceId(), displayName: name });
  token = answer.tokens?.accessToken ?? "";
  localStorage.setItem(NAME_KEY, name);
}

/** Runs `call`; on UNAUTHENTICATED signs in again once and retries. */
export async function authed<T>(api: Api, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (err) {
    const name = rememberedName();
    if (ConnectError.from(err).code === Code.Unauthenticated && name) {
      await signIn(api, name);
      return call();
    }
    throw err;
  }
}

/** The refusal code of a failed action (`REJECT_CODE_STALE`, …), if the server sent one. */
export function rejectCode(err: unknown): string {
  const e = ConnectError.from(err);
  return e.metadata.get("basra-reject-code") ?? "";
}
