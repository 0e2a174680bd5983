// The page's capture rule (src/capture.ts) against the engine's, through the rules tool
// (`basra-rules`, docs/rules.md "The rules tool") over thousands of generated tables:
//  - the first option the page offers is what the engine takes when nothing is named;
//  - for a number card, the options are exactly the largest sets that split into groups
//    of its value: every set of that size from the cards worth at most the value is put
//    to the engine alone on a table, where it takes it whole only if it so splits.
// The tool is $BASRA_RULES (a command; `make test` builds it), else
// `cargo run --quiet -p basra-rules` from the repository. Without it the test fails.
// BASRA_CAPTURE_TABLES and BASRA_CAPTURE_SEED change how many tables and which.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { resolve } from "node:path";
import { captureOptions, type CardLike } from "../../src/capture";

const TABLES = Number(process.env.BASRA_CAPTURE_TABLES ?? 5000);
const SEED = Number(process.env.BASRA_CAPTURE_SEED ?? 46);

const RANKS = ["", "A", "2", "3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K"];
const name = (c: CardLike) => `${RANKS[c.rank]}${"CDHS"[c.suit - 1]}`;
const isKomi = (c: CardLike) => c.rank === 7 && c.suit === 2;

/** A small fast generator (mulberry32): the same seed, the same tables. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

interface Case {
  table: CardLike[];
  card: CardLike;
}

/**
 * Tables of 0 to 12 cards and a card played onto them: half from the whole deck, half from
 * the number cards up to 6 and the card from the number cards (where several equally large
 * captures are common).
 */
function cases(count: number, seed: number): Case[] {
  const next = random(seed);
  const deck: CardLike[] = [];
  for (let suit = 1; suit <= 4; suit++) for (let rank = 1; rank <= 13; rank++) deck.push({ rank, suit });
  const out: Case[] = [];
  for (let i = 0; i < count; i++) {
    const small = i % 2 === 1;
    const pool = deck.filter((c) => !small || c.rank <= 6);
    for (let j = pool.length - 1; j > 0; j--) {
      const k = Math.floor(next() * (j + 1));
      [pool[j], pool[k]] = [pool[k], pool[j]];
    }
    const size = Math.floor(next() * 13);
    const table = pool.slice(0, size);
    const rest = deck.filter((c) => !table.some((t) => t.rank === c.rank && t.suit === c.suit) && (!small || c.rank <= 10));
    out.push({ table, card: rest[Math.floor(next() * rest.length)] });
  }
  return out;
}

/** Asks the rules tool every request (one JSON line each); answers in the same order. */
async function ask(requests: object[]): Promise<Record<string, unknown>[]> {
  const command = process.env.BASRA_RULES;
  const child = command
    ? spawn(command, [], { stdio: ["pipe", "pipe", "inherit"] })
    : spawn("cargo", ["run", "--quiet", "-p", "basra-rules"], { cwd: resolve("../.."), stdio: ["pipe", "pipe", "inherit"] });
  const chunks: Buffer[] = [];
  child.stdout.on("data", (chunk: Buffer) => chunks.push(chunk));
  const exited = new Promise<number | null>((done, fail) => {
    child.on("error", fail);
    child.on("close", done);
  });
  child.stdin.end(requests.map((r) => JSON.stringify(r)).join("\n") + "\n");
  const code = await exited;
  assert.equal(code, 0, `the rules tool (${command ?? "cargo run -p basra-rules"}) exits cleanly`);
  const lines = Buffer.concat(chunks).toString("utf8").trim().split("\n");
  assert.equal(lines.length, requests.length, "one answer a request");
  return lines.map((line) => JSON.parse(line));
}

/** Every `k`-element subset of `items`, each in the order of `items`. */
function subsets<T>(items: T[], k: number): T[][] {
  if (k === 0) return [[]];
  if (items.length < k) return [];
  const [first, ...rest] = items;
  return [...subsets(rest, k - 1).map((s) => [first, ...s]), ...subsets(rest, k)];
}

test(`the page's captures are the engine's on ${TABLES} generated tables (seed ${SEED})`, async (t) => {
  const all = cases(TABLES, SEED);
  const canonical = await ask(all.map(({ table, card }) => ({ op: "capture", table: table.map(name), card: name(card) })));
  // The largest sets a number card may take, checked one by one: each candidate set is
  // the whole table of a request of its own.
  const candidates: { at: number; indexes: number[] }[] = [];
  all.forEach(({ table, card }, at) => {
    const taken = canonical[at].taken as string[];
    assert.ok(Array.isArray(taken), `the tool answers ${name(card)} on ${table.map(name)}: ${JSON.stringify(canonical[at])}`);
    const fixed = card.rank > 10 || isKomi(card) || !taken.length;
    if (fixed) return;
    const eligible = table.flatMap((c, i) => (c.rank <= card.rank ? [i] : []));
    for (const indexes of subsets(eligible, taken.length)) candidates.push({ at, indexes });
  });
  const whole = await ask(
    candidates.map(({ at, indexes }) => ({ op: "capture", table: indexes.map((i) => name(all[at].table[i])), card: name(all[at].card) })),
  );
  const largest = new Map<number, number[][]>();
  candidates.forEach(({ at, indexes }, n) => {
    if ((whole[n].taken as string[]).length === indexes.length) largest.set(at, [...(largest.get(at) ?? []), indexes]);
  });
  let several = 0;
  all.forEach(({ table, card }, at) => {
    const options = captureOptions(card, table);
    const where = `${name(card)} on [${table.map(name).join(" ")}]`;
    const taken = canonical[at].taken as string[];
    assert.deepEqual(options[0]?.map((i) => name(table[i])) ?? [], taken, `${where}: the first option is the engine's capture`);
    const fixed = card.rank > 10 || isKomi(card) || !taken.length;
    if (fixed) {
      assert.equal(options.length, taken.length ? 1 : 0, `${where}: a fixed capture is the only option`);
      return;
    }
    // Candidate sets come in lexicographic order of their indexes, as the page's options.
    assert.deepEqual(options, largest.get(at) ?? [], `${where}: the options are every largest set`);
    if (options.length > 1) several += 1;
  });
  t.diagnostic(`${all.length + candidates.length} questions to the rules tool; ${several} tables with several largest captures`);
  // The generated tables do put the choice among several captures to the test.
  assert.ok(several > TABLES / 50, `tables with several largest captures: ${several}`);
});
