// Records the event logs that tests/unit/state.test.ts replays: what GameService.Watch sent a
// player and a spectator of a real backend (`basra dev`) through whole matches against the
// computer, one JSON file per viewer in OUT_DIR (tests/unit/fixtures/).
//
//   basra dev --listen 127.0.0.1:50951 --web-listen 127.0.0.1:8951 --bot-delay-ms 20 &
//   node tests/run.mjs tests/record.ts http://127.0.0.1:50951 tests/unit/fixtures
//
// Each scenario is a public room (so a spectator may watch it from the start) where a guest
// plays the computer to the target, the way the page does: a card whenever it is its turn
// (one with several equally large captures when it has one), naming the capture it takes
// (the last of those, so that not only the canonical capture is played), a quick-chat phrase; its page reloads when it is its
// turn (a new stream: a snapshot) and its stream breaks right after a play (a resumed
// stream, from the last seq: the events it missed). Then a rematch that the player
// resigns, and a reload on the result (a FINISHED snapshot).
import { createClient, type Interceptor } from "@connectrpc/connect";
import { createGrpcWebTransport } from "@connectrpc/connect-web";
import { toJson } from "@bufbuild/protobuf";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { AccountsService } from "../src/gen/basra/accounts/v1/accounts_pb";
import { MatchmakingService } from "../src/gen/basra/matchmaking/v1/matchmaking_pb";
import { GameService, PlayResponseSchema, QuickChatPhrase, type PlayResponse } from "../src/gen/basra/game/v1/game_pb";
import { BotLevel, RoomVisibility } from "../src/gen/basra/common/v1/common_pb";
import { captureOptions } from "../src/capture";
import { apply, mayPlay, openTable, type TableState } from "../src/table/state";
import type { EventLog } from "./unit/replay";

const [apiUrl, outDir] = process.argv.slice(2);
if (!apiUrl || !outDir) {
  console.error("usage: node tests/run.mjs tests/record.ts API_URL OUT_DIR");
  process.exit(2);
}

type Clients = {
  accounts: ReturnType<typeof createClient<typeof AccountsService>>;
  matchmaking: ReturnType<typeof createClient<typeof MatchmakingService>>;
  game: ReturnType<typeof createClient<typeof GameService>>;
};

/** A guest signed in with its own clients (its token on every call). */
async function guest(name: string): Promise<Clients> {
  let token = "";
  const withToken: Interceptor = (next) => async (req) => {
    req.header.set("basra-client", "web-recorder/0");
    if (token) req.header.set("authorization", `Bearer ${token}`);
    return next(req);
  };
  const transport = createGrpcWebTransport({ baseUrl: apiUrl, useBinaryFormat: true, interceptors: [withToken] });
  const clients = {
    accounts: createClient(AccountsService, transport),
    matchmaking: createClient(MatchmakingService, transport),
    game: createClient(GameService, transport),
  };
  const answer = await clients.accounts.guestLogin({ deviceId: `recorder-${crypto.randomUUID()}`, displayName: name });
  token = answer.tokens?.accessToken ?? "";
  return clients;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A viewer's streams of one room, each recorded as it came. */
class Viewer {
  state: TableState;
  readonly log: EventLog;
  /** The cards this viewer's seat played that came back on its streams. */
  played = 0;
  private abort?: AbortController;
  private running?: Promise<void>;

  constructor(
    readonly api: Clients,
    readonly roomId: string,
    viewer: "player" | "spectator",
    about: string,
  ) {
    this.state = openTable(roomId, { spectate: viewer === "spectator" });
    this.log = { about, viewer, streams: [] };
  }

  /** Opens a stream: from the start (a snapshot, as a new page), or after `lastSeenSeq`. */
  open(lastSeenSeq?: bigint): void {
    const abort = new AbortController();
    const events: unknown[] = [];
    this.abort = abort;
    this.log.streams.push({ lastSeenSeq: lastSeenSeq === undefined ? null : String(lastSeenSeq), events });
    if (lastSeenSeq === undefined) this.state = openTable(this.roomId, { spectate: this.state.spectate });
    const take = (event: PlayResponse) => {
      events.push(toJson(PlayResponseSchema, event));
      if (event.event.case === "cardPlayed" && event.event.value.seat === this.state.seat) this.played += 1;
      this.state = apply(this.state, event, { now: Date.now(), keptEnd: () => undefined });
    };
    this.running = (async () => {
      try {
        const stream = this.api.game.watch({ roomId: this.roomId, lastSeenSeq, spectate: this.state.spectate }, { signal: abort.signal });
        for await (const message of stream) if (message.event) take(message.event);
      } catch (err) {
        if (!abort.signal.aborted) throw err;
      }
    })();
  }

  async close(): Promise<void> {
    this.abort?.abort();
    await this.running;
  }

  /** Waits until `ready(state)` (the events come on the stream). */
  async until(ready: (state: TableState) => boolean, what: string, ms = 60_000): Promise<void> {
    const deadline = Date.now() + ms;
    while (!ready(this.state)) {
      if (Date.now() > deadline) {
        const { turn, seat, ended, round, hand, lastSeq } = this.state;
        const now = { turn, seat, ended: !!ended, round, hand: hand.length, lastSeq: String(lastSeq) };
        throw new Error(`timed out waiting for ${what}: ${JSON.stringify(now)}`);
      }
      await sleep(10);
    }
  }
}

/** Plays one card as the page would, naming the capture (the last of several). */
async function play(player: Viewer, turn: number): Promise<void> {
  const state = player.state;
  // A card with several equally large captures when there is one, so that the log holds
  // plays naming another than the canonical one.
  const card = state.hand.find((c) => captureOptions(c, state.table).length > 1) ?? state.hand[turn % state.hand.length];
  const options = captureOptions(card, state.table);
  const take = options[options.length - 1] ?? [];
  const played = player.played;
  await player.api.game.playCard({
    roomId: player.roomId,
    card,
    captureChoice: take.length ? { cards: take.map((i) => state.table[i]) } : undefined,
    basedOnSeq: state.lastSeq,
    clientMoveId: crypto.randomUUID(),
  });
  await player.until(() => player.played > played, "the play's event");
}

async function scenario(name: string, seats: number, target: number): Promise<void> {
  const about = `${seats} seats, target ${target}: a guest against ${seats - 1} medium bot(s), recorded by tests/record.ts`;
  const api = await guest("Recorder");
  const room = await api.matchmaking.createRoom({
    requestId: crypto.randomUUID(),
    visibility: RoomVisibility.PUBLIC,
    settings: { seats, targetScore: target },
    botSeats: Array.from({ length: seats - 1 }, (_, i) => i + 1),
    botLevel: BotLevel.MEDIUM,
  });
  const watcher = new Viewer(await guest("Watcher"), room.roomId, "spectator", about);
  const player = new Viewer(api, room.roomId, "player", about);
  watcher.open();
  player.open();
  let plays = 0;
  let matches = 0;
  while (matches < 2) {
    await player.until((s) => s.ended !== undefined || (s.round > 0 && mayPlay(s) && s.hand.length > 0), "the player's turn or the end", 120_000);
    if (player.state.ended) {
      matches += 1;
      if (matches === 1) {
        // A rematch: the computer takes it, a new match starts.
        const ended = player.state.matchId;
        await api.game.askRematch({ roomId: room.roomId });
        await player.until((s) => s.matchId !== ended && !s.ended, "the rematch");
      }
      continue;
    }
    if (matches === 1) {
      // The rematch: the player resigns at its first turn.
      await api.game.resign({ roomId: room.roomId });
      await player.until((s) => s.ended !== undefined, "the resignation's end");
      continue;
    }
    if (plays === 3) await api.game.quickChat({ roomId: room.roomId, phrase: QuickChatPhrase.GOOD_LUCK });
    if (plays === 6) {
      // A reload at the player's turn: the page opens a new stream (a snapshot).
      await player.close();
      await sleep(200);
      player.open();
      await player.until((s) => s.synced && mayPlay(s), "the snapshot after the reload");
    }
    await play(player, plays);
    plays += 1;
    if (plays === 12) {
      // The stream breaks after a play; the page resumes it after the last seq it saw,
      // and the events it missed (the computer's answer) come on the new one.
      const seen = player.state.lastSeq;
      await player.close();
      await sleep(300);
      player.open(seen);
    }
  }
  // A reload on the result: a FINISHED snapshot.
  await player.close();
  player.open();
  await player.until((s) => s.synced && s.ended !== undefined, "the result after the reload");
  await sleep(300);
  await player.close();
  await watcher.close();
  // The turn timer played for the player: the recording is not what the player did.
  const automatic = player.log.streams.flatMap((s) => s.events).filter((e) => JSON.stringify(e).includes('"automatic":true'));
  if (automatic.length) throw new Error(`the server played for the player (too slow): ${JSON.stringify(automatic)}`);
  for (const viewer of [player, watcher]) {
    const file = join(outDir, `${name}.${viewer.log.viewer}.json`);
    // One event a line: the files read (and diff) as logs.
    const streams = viewer.log.streams
      .map((s) => `    {"lastSeenSeq": ${JSON.stringify(s.lastSeenSeq)}, "events": [\n${s.events.map((e) => `      ${JSON.stringify(e)}`).join(",\n")}\n    ]}`)
      .join(",\n");
    writeFileSync(file, `{\n  "about": ${JSON.stringify(viewer.log.about)},\n  "viewer": "${viewer.log.viewer}",\n  "streams": [\n${streams}\n  ]\n}\n`);
    const events = viewer.log.streams.reduce((n, s) => n + s.events.length, 0);
    console.log(`${file}: ${viewer.log.streams.length} streams, ${events} events, ${plays} plays by the player`);
  }
}

for (const only of process.env.RECORD_ONLY?.split(",") ?? ["two-seats", "four-seats"]) {
  if (only === "two-seats") await scenario("two-seats", 2, 61);
  if (only === "four-seats") await scenario("four-seats", 4, 41);
}
