// Plays Basra in headless Chromium (Debian's, through playwright-core's executablePath)
// against a running `basra dev` that serves the page. Each part checks what a player sees:
//  1. a guest against the computer to 61, by clicking, with a reload mid-match: the cards
//     add up to 52 at every look (the deck count after each deal), the target is labelled
//     and shown, the preview of every play is what the server took, the commitment is
//     shown from the first deal and the page verifies the seed, the result names the sides
//     and leaves the scoreboard in sight; the capture rule (dist/capture.js) on tables
//     with several largest captures; a reload on the result shows it again and leads
//     back to the lobby;
//  2. names: the server's limit (24) checked and explained on the page, a longer paste
//     refused aloud, not cut;
//  3. friends: three browsers become friends by code (a live request, accepted from the
//     notice and from the list; a fourth's declined); the host reloads and is not offered
//     the answered requests again, nor with its feed's seq forgotten; the host invites a
//     friend from the live list to a public room, the friend joins with one tap; the
//     friend reloads mid-match and is not offered the invite again; the third watches
//     from the friends list (no hidden card), leaves and comes back; no "is back" at the
//     start; they rematch; a press on "Back to the lobby" holds while an event redraws
//     the table; the ended room's invite is not offered again;
//  4. ranked: two players meet in the ranked queue, one resigns, both see their rating
//     change (also after a reload on the result), the history and the leaderboard show
//     it; once the rematch window lapses the result says the room closed and a reload
//     is in the lobby;
//  5. quick match (FindMatch over gRPC-Web), one resigning;
//  6. Arabic on a phone: right to left, names isolated, the computer's name, the target's
//     label, announcements in Arabic card names that follow a language switch, the name
//     limit explained in Arabic, the tabs in Arabic;
//  7. my data, in the profile tab: "Export my data" downloads the player's JSON document
//     after a dialog; "Delete my account" waits in its dialog for the typed word (cancel
//     deletes nothing), then deletes, the page is back at sign-in and the next sign-in is
//     a new player; the dialog and its word in Arabic; a registered account confirms with
//     its password (a wrong one deletes nothing).
// No console errors anywhere. Screenshots go to the artifact directory.
// Usage: node tests/run.mjs tests/browser.ts PAGE_URL ARTIFACT_DIR [CHROMIUM]
// Prints one JSON line with what it saw; exits non-zero on the first failed check.
import { chromium, type Browser, type Locator, type Page } from "playwright-core";
import { createHash } from "node:crypto";
import { mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

const [pageUrl, artifacts, executable = "/usr/bin/chromium"] = process.argv.slice(2);
if (!pageUrl || !artifacts) {
  console.error("usage: node tests/run.mjs tests/browser.ts PAGE_URL ARTIFACT_DIR [CHROMIUM]");
  process.exit(2);
}
mkdirSync(artifacts, { recursive: true });

/** A table's counts as the page shows them (`tableCounts`), with their sum. */
interface Look {
  round: number;
  deck: number;
  hand: number;
  others: number;
  table: number;
  piles: number;
  ended: boolean;
  total?: number;
}

/** A match's result as the page shows it. */
interface Result {
  title: string;
  seed: string;
  score: string;
}

const problems: string[] = [];
/** What each part saw, printed as the last line (tests/it/web_client.rs reads it). */
const report: Record<"computer" | "names" | "friends" | "ranked" | "quickMatch" | "arabic" | "myData", Record<string, unknown>> = {
  computer: {},
  names: {},
  friends: {},
  ranked: {},
  quickMatch: {},
  arabic: {},
  myData: {},
};

/** Whether `probe()` comes true within `ms` (the page renders after an event, not in it). */
async function eventually(probe: () => Promise<boolean>, ms = 5000): Promise<boolean> {
  const until = Date.now() + ms;
  for (;;) {
    if (await probe()) return true;
    if (Date.now() > until) return false;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

function check(condition: unknown, message: string): asserts condition {
  if (!condition) throw new Error(`check failed: ${message}`);
}

/** A page in a fresh context (its own local storage: its own guest). */
async function open(browser: Browser, { locale = "en-US", viewport = { width: 1000, height: 800 } } = {}): Promise<Page> {
  const context = await browser.newContext({ locale, viewport });
  const page = await context.newPage();
  page.on("console", (m) => {
    if (m.type() === "error") problems.push(`console: ${m.text()}`);
    // The page warns when its capture preview and the server's answer differ.
    if (m.type() === "warning" && m.text().startsWith("basra:")) problems.push(`capture: ${m.text()}`);
  });
  page.on("pageerror", (e) => problems.push(`page error: ${e}`));
  await page.goto(pageUrl, { waitUntil: "load" });
  return page;
}

async function signIn(page: Page, name: string): Promise<void> {
  await page.getByTestId("name").fill(name);
  await page.getByTestId("sign-in").click();
  await page.getByTestId("play-computer").waitFor();
}

/** What the table shows, read from the page. */
async function tableCounts(page: Page): Promise<Look> {
  return page.evaluate(() => {
    const n = (sel: string, attr = "data-n") => [...document.querySelectorAll(sel)].map((e) => Number(e.getAttribute(attr)));
    const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
    return {
      round: n("[data-testid=round]")[0] ?? 0,
      deck: n("[data-testid=deck]")[0] ?? 0,
      hand: document.querySelectorAll("[data-testid=hand-card]").length,
      others: sum(n("[data-testid=hand-count]")),
      table: document.querySelectorAll("[data-testid=table-card]").length,
      piles: sum(n("[data-testid=side]", "data-pile")),
      ended: !!document.querySelector("[data-testid=result]"),
    };
  });
}

/** Clicks a playable card on whichever page may play, until every page shows the result. */
async function playToTheEnd(
  pages: Page[],
  { onPlay = async () => {}, seconds = 240 }: { onPlay?: (page: Page, plays: number) => Promise<void>; seconds?: number } = {},
): Promise<number> {
  const deadline = Date.now() + seconds * 1000;
  let plays = 0;
  for (;;) {
    let open = 0;
    for (const page of pages) {
      if (await page.getByTestId("result").count()) continue;
      open += 1;
      // Several equally large captures: the page asks which; take the first offered.
      const option = page.getByTestId("capture-option").first();
      const card = page.locator("[data-testid=hand-card]:not([disabled])").first();
      const target: Locator | null = (await option.count()) ? option : (await card.count()) ? card : null;
      if (!target) continue;
      try {
        await target.click({ timeout: 1500 });
      } catch {
        continue; // redrawn under the pointer, or the turn moved on: look again
      }
      plays += 1;
      await onPlay(page, plays);
    }
    if (open === 0) return plays;
    check(Date.now() < deadline, `the match ended within ${seconds} s (${plays} plays made)`);
    await pages[0].waitForTimeout(40);
  }
}

/** The first match of `pattern` in `text`, checked to be there. */
function found(text: string, pattern: RegExp, what: string): string {
  const match = text.match(pattern);
  check(match, `${what}: ${text}`);
  return match[0];
}

async function resultOf(page: Page): Promise<Result> {
  const result = page.getByTestId("result");
  await result.waitFor();
  const title = await result.locator("h2").innerText();
  const seed = await page.getByTestId("seed").innerText();
  check(/[0-9a-f]{64}/.test(seed), `the revealed seed is 32 bytes of hex: ${seed}`);
  const score = await page.getByTestId("final-score").innerText();
  return { title, seed: found(seed, /[0-9a-f]{64}/, "the seed"), score };
}

/** The page verified the seed, and so do we: sha256(seed) is the commitment it showed. */
async function seedChecked(page: Page, commitment: string): Promise<void> {
  const { seed } = await resultOf(page);
  check((await page.getByTestId("seed-check").getAttribute("data-ok")) === "true", "the page verified the seed");
  const hash = createHash("sha256").update(Buffer.from(seed, "hex")).digest("hex");
  check(hash === commitment, `sha256(seed) ${hash} is the commitment shown ${commitment}`);
}

async function commitmentOf(page: Page): Promise<string> {
  const text = await page.getByTestId("commitment").innerText();
  const hash = text.match(/[0-9a-f]{64}/)?.[0];
  check(hash, `the commitment is shown: ${text}`);
  return hash;
}

/**
 * Reloads `page` and waits until its friends' feed has taken its snapshot and every note
 * up to the one seen before the reload (`document.documentElement.dataset.feedSeq`),
 * replayed or not: what the header offers then is what the page made of them. With
 * `forget`, the page first loses the seq it keeps (another browser of the same player):
 * every kept note comes again and only the snapshot can tell which still stand.
 */
async function reloadFeed(page: Page, { forget = false } = {}): Promise<void> {
  const seen = Number(await page.evaluate(() => document.documentElement.dataset.feedSeq ?? "0"));
  check(seen > 0, "the feed has numbered notes before the reload");
  if (forget) {
    await page.evaluate(() => Object.keys(localStorage).filter((k) => k.startsWith("basra.feed.")).forEach((k) => localStorage.removeItem(k)));
  }
  await page.reload({ waitUntil: "load" });
  await page.waitForFunction(
    (seq) => document.documentElement.dataset.feed === "open" && Number(document.documentElement.dataset.feedSeq ?? "0") >= seq,
    seen,
  );
}

/** Reloads a page showing a match's result: the same result comes back, with its way out. */
async function reloadResult(page: Page): Promise<Result> {
  const before = await resultOf(page);
  await page.reload({ waitUntil: "load" });
  const after = await resultOf(page);
  check(after.title === before.title && after.score === before.score && after.seed === before.seed, `the result survives a reload: ${JSON.stringify(before)} / ${JSON.stringify(after)}`);
  check((await page.getByTestId("resign").count()) === 0, "a finished match offers no resignation after a reload");
  await page.getByTestId("back").waitFor();
  return after;
}

/** Pastes `text` into the field `testId` (through the clipboard, as a player would). */
async function paste(page: Page, testId: string, text: string): Promise<void> {
  await page.context().grantPermissions(["clipboard-read", "clipboard-write"]);
  await page.getByTestId(testId).fill("");
  await page.getByTestId(testId).focus();
  await page.evaluate((t) => navigator.clipboard.writeText(t), text);
  await page.keyboard.press("Control+V");
}

async function friendCode(page: Page): Promise<string> {
  await page.getByTestId("tab-friends").click();
  const text = page.getByTestId("friend-code");
  await page.waitForFunction(() => /[A-Z0-9]{4}-[A-Z0-9]{4}/.test(document.querySelector("[data-testid=friend-code]")?.textContent ?? ""));
  return found(await text.innerText(), /[A-Z0-9]{4}-[A-Z0-9]{4}/, "the friend code");
}

const browser = await chromium.launch({
  executablePath: executable,
  args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
});
try {
  // 1. A guest against the computer to 61, clicking cards, with a reload mid-match.
  {
    const page = await open(browser);
    await signIn(page, "Ada");
    // The target has a label of its own, beside the rooms it applies to.
    await page.getByLabel("Target score").selectOption("61");
    check((await page.getByLabel("The computer's level").inputValue()) === String(2), "the computer plays medium unless chosen");
    await page.getByLabel("The computer's level").selectOption({ label: "hard" });
    await page.getByTestId("play-computer").click();
    await page.getByTestId("table").waitFor();
    await page.locator("[data-testid=hand-card]").first().waitFor();
    check((await page.getByTestId("target-shown").innerText()).includes("61"), "the table shows the target");
    const commitment = await commitmentOf(page);
    const first = page.locator("[data-testid=hand-card]").first();
    const label = await first.getAttribute("aria-label");
    check(/ of (clubs|diamonds|hearts|spades)/.test(label ?? ""), `cards have text alternatives: ${label}`);
    await first.hover();
    let reloaded = false;
    const seen: Look[] = [];
    const look = async (p: Page) => {
      const c = await tableCounts(p);
      if (c.ended || c.round === 0) return;
      const total = c.deck + c.hand + c.others + c.table + c.piles;
      seen.push({ ...c, total });
      check(total === 52, `every card is somewhere: ${JSON.stringify(c)} adds up to ${total}`);
    };
    const plays = await playToTheEnd([page], {
      onPlay: async (p, n) => {
        await look(p);
        if (n === 4 && !reloaded) {
          reloaded = true;
          await p.screenshot({ path: join(artifacts, "computer-before-reload.png") });
          await p.reload({ waitUntil: "load" });
          await p.getByTestId("table").waitFor();
          await p.locator("[data-testid=hand-card], [data-testid=result]").first().waitFor();
          report.computer.resumedAfterReload = await p.getByTestId("table").isVisible();
          check((await commitmentOf(p)) === commitment, "the commitment survives a reload");
        }
      },
    });
    check(reloaded && report.computer.resumedAfterReload, "the reload came back to the same table");
    // A match to 61 rarely ends in its first round (two Basras of 30); then a rematch.
    let commitmentNow = commitment;
    for (let rematch = 0; rematch < 3 && !seen.some((c) => c.round >= 2); rematch++) {
      await page.getByTestId("rematch").click();
      await page.getByTestId("result").waitFor({ state: "detached" });
      await page.locator("[data-testid=hand-card]").first().waitFor();
      commitmentNow = await commitmentOf(page);
      await playToTheEnd([page], { onPlay: async (p) => look(p) });
    }
    const laterRounds = seen.filter((c) => c.round >= 2);
    check(laterRounds.length > 0, `a second round was played and looked at (${seen.length} looks)`);
    const result = await resultOf(page);
    await seedChecked(page, commitmentNow);
    check(/You/.test(result.score) && /Computer \(hard\)/.test(result.score), `the final score names the sides and the level chosen: ${result.score}`);
    // The result leaves the scoreboard in sight: nothing covers it.
    const covered = await page.evaluate(() => {
      const sides = document.querySelector("[data-testid=sides]")!;
      const box = sides.getBoundingClientRect();
      sides.scrollIntoView();
      const b = sides.getBoundingClientRect();
      const hit = document.elementFromPoint(b.left + 5, b.top + b.height / 2);
      return !(hit && sides.contains(hit)) ? `${hit?.outerHTML?.slice(0, 80)} at ${JSON.stringify(box)}` : "";
    });
    check(!covered, `the scoreboard is not covered by the result: ${covered}`);
    const announcements = await page.getByTestId("announce").innerText();
    check(!/\b(10|[2-9AJQK])[CDHS]\b/.test(announcements), `captures are named, not coded: ${announcements}`);
    report.computer = { ...report.computer, plays, rounds: Math.max(...seen.map((c) => c.round)), title: result.title, score: result.score };
    check(plays >= 24, `whole rounds were played by clicking (${plays} plays)`);
    // The capture rule the page previews and names (dist/capture.js), on tables with
    // several largest captures: the page offers each, the first is the canonical one.
    // The module's address is an argument: the page imports it, not esbuild.
    const options = await page.evaluate(async (module) => {
      const { captureOptions }: typeof import("../src/capture") = await import(module);
      const c = (rank: number, suit: number) => ({ rank, suit });
      return {
        two: captureOptions(c(8, 4), [c(2, 1), c(6, 3), c(6, 2)]),
        one: captureOptions(c(8, 4), [c(1, 1), c(7, 3), c(13, 1), c(8, 2)]),
        komiOnTable: captureOptions(c(7, 1), [c(7, 2), c(5, 3)]),
        nothing: captureOptions(c(12, 1), [c(13, 2), c(5, 3)]),
      };
    }, "./capture.js");
    check(JSON.stringify(options.two) === "[[0,1],[0,2]]", `two equally large captures: ${JSON.stringify(options.two)}`);
    check(JSON.stringify(options.one) === "[[0,1,3]]", `8 on A 7 K 8 takes A+7 and 8: ${JSON.stringify(options.one)}`);
    check(JSON.stringify(options.komiOnTable) === "[[0]]", `a 7 takes the Komi lying on the table: ${JSON.stringify(options.komiOnTable)}`);
    check(JSON.stringify(options.nothing) === "[]", "a Q takes no K");
    await page.screenshot({ path: join(artifacts, "computer-result.png"), fullPage: true });
    // A reload on the result screen shows the result again (the seed still verified),
    // and leads back to the lobby, where a reload stays.
    await reloadResult(page);
    check((await page.getByTestId("seed-check").getAttribute("data-ok")) === "true", "the page verifies the seed after a reload");
    await page.getByTestId("back").click();
    await page.getByTestId("play-computer").waitFor();
    await page.reload({ waitUntil: "load" });
    await page.getByTestId("play-computer").waitFor();
    check((await page.getByTestId("table").count()) === 0, "back in the lobby, a reload stays there");
    await page.context().close();
  }

  // 2. Names: the page knows the server's limit and explains it.
  {
    const page = await open(browser);
    check((await page.getByTestId("name").getAttribute("maxlength")) === "24", "the name field takes 24 characters");
    await page.getByTestId("name").fill("A".repeat(30));
    check((await page.getByTestId("name").inputValue()).length === 24, "typing stops at 24");
    check(/24/.test(await page.locator("#name-rules").innerText()), "the limit is explained beside the field");
    // A longer name pasted is not cut silently: the page says why it was not taken.
    await paste(page, "name", "P".repeat(31));
    await page.getByTestId("sign-in-problem").filter({ hasText: "31" }).waitFor({ timeout: 5000 });
    const pasted = await page.getByTestId("sign-in-problem").innerText();
    check(/24/.test(pasted), `a long pasted name is explained: ${pasted}`);
    check((await page.getByTestId("name").inputValue()) === "", "nor is it pasted cut");
    // A longer name that arrives anyway (autofill, script) is explained, not sent raw.
    await page.getByTestId("name").evaluate((input: HTMLInputElement) => (input.value = "A".repeat(30)));
    await page.getByTestId("sign-in").click();
    const said = await page.getByTestId("sign-in-problem").innerText();
    check(/30/.test(said) && /24/.test(said) && !/display_name|went wrong/.test(said), `a long name is explained: ${said}`);
    await page.getByTestId("name").fill("Bot");
    await page.getByTestId("sign-in").click();
    const bot = await page.getByTestId("sign-in-problem").innerText();
    check(/computer/.test(bot), `a bot-like name is explained: ${bot}`);
    report.names = { long: said, bot };
    await page.context().close();
  }

  // 3. Friends: three browsers, a live request, an invite, a spectator, a rematch.
  {
    const host = await open(browser);
    const guest = await open(browser, { viewport: { width: 390, height: 844 } });
    const watcher = await open(browser);
    await signIn(host, "Host");
    await signIn(guest, "Guest");
    await signIn(watcher, "Watcher");
    const code = await friendCode(host);
    // The guest adds the host by code; the host sees the request live and accepts it there.
    await friendCode(guest);
    await guest.getByTestId("friend-target").fill(code.toLowerCase());
    await guest.getByTestId("add-friend").click();
    await guest.waitForFunction(() => document.querySelector("[data-testid=friends-message]")?.textContent);
    const sent = await guest.getByTestId("friends-message").innerText();
    check(/Host/.test(sent), `the request names the host: ${sent}`);
    check((await guest.getByTestId("friend-target").inputValue()) === "", "a request sent clears the field");
    await host.getByTestId("friend-request").filter({ hasText: "Guest" }).waitFor({ timeout: 10000 });
    await host.getByTestId("accept").click();
    // The watcher asks too; the host accepts from the list. The request redraws the host's
    // lists while the host is typing: what is typed stays.
    await host.getByTestId("friend-target").fill("half-typed");
    await friendCode(watcher);
    // Typed without its dash, the code reads as a username first (the fallback to a code).
    await watcher.getByTestId("friend-target").fill(code.replace("-", ""));
    await watcher.getByTestId("add-friend").click();
    await host.getByTestId("incoming").filter({ hasText: "Watcher" }).waitFor({ timeout: 10000 });
    const kept = await host.getByTestId("friend-target").inputValue();
    check(kept === "half-typed", `a redraw keeps what is being typed: ${JSON.stringify(kept)}`);
    await host.getByTestId("friend-target").fill("");
    await host.getByTestId("accept-friend").click();
    await host.getByTestId("friend").filter({ hasText: "Watcher" }).waitFor();
    // A stranger asks too; the host declines from the notice.
    const stranger = await open(browser);
    await signIn(stranger, "Stranger");
    await friendCode(stranger);
    await stranger.getByTestId("friend-target").fill(code);
    await stranger.getByTestId("add-friend").click();
    const asked = host.getByTestId("friend-request").filter({ hasText: "Stranger" });
    await asked.waitFor({ timeout: 10000 });
    await asked.getByTestId("decline").click();
    await asked.waitFor({ state: "detached" });
    await stranger.context().close();
    // Presence: the guest sees the host online.
    await guest.getByTestId("friend").filter({ hasText: "Host" }).filter({ hasText: "online" }).waitFor({ timeout: 10000 });
    await host.screenshot({ path: join(artifacts, "friends-list.png") });
    // Answered requests are not offered again after a reload, nor from another browser
    // of the host's (the page's seq forgotten: the kept notes come again, the snapshot
    // says they were answered).
    for (const forget of [false, true]) {
      await reloadFeed(host, { forget });
      const offered = await host.getByTestId("friend-request").allInnerTexts();
      check(offered.length === 0, `answered requests are not offered again after a reload${forget ? " (seq forgotten)" : ""}: ${offered.join(" | ")}`);
    }
    await host.getByTestId("tab-friends").click();
    await host.getByTestId("friend").filter({ hasText: "Watcher" }).waitFor();
    // The host makes a public room (spectators allowed) and invites the guest from the list.
    await host.getByTestId("tab-play").click();
    await host.getByLabel("Target score").selectOption("11");
    await host.getByTestId("create-public").click();
    await host.getByTestId("invite-friends").filter({ hasText: "Guest" }).waitFor({ timeout: 10000 });
    await host.getByTestId("invite-friend").first().click();
    await guest.getByTestId("invite").filter({ hasText: "Host" }).waitFor({ timeout: 10000 });
    await guest.screenshot({ path: join(artifacts, "invite-phone.png") });
    await guest.getByTestId("join-invite").click();
    await guest.getByTestId("table").waitFor();
    await host.locator("[data-testid=opponent]", { hasText: "Guest" }).waitFor();
    await guest.locator("[data-testid=opponent]", { hasText: "Host" }).waitFor();
    await guest.locator("[data-testid=hand-card]").first().waitFor();
    check((await host.locator("[data-testid=opponent-name] bdi").innerText()) === "Guest", "a player's name is isolated");
    // The watcher sees the host playing and watches: no hand, no card face but the table's.
    await watcher.getByTestId("watch").waitFor({ timeout: 15000 });
    await watcher.getByTestId("watch").click();
    await watcher.getByTestId("spectating").waitFor();
    await watcher.locator("[data-testid=table-card]").first().waitFor();
    const hidden = async () =>
      watcher.evaluate(() => ({
        faces: document.querySelectorAll("svg.card.face").length,
        table: document.querySelectorAll("[data-testid=table-card]").length,
        hand: document.querySelectorAll("[data-testid=hand-card]").length,
        backs: document.querySelectorAll("svg.card.back").length,
      }));
    const seenByWatcher = [];
    const watch = async () => {
      const v = await hidden();
      seenByWatcher.push(v);
      check(v.hand === 0 && v.faces === v.table, `the spectator sees no hidden card: ${JSON.stringify(v)}`);
    };
    await watch();
    check((await hidden()).backs > 0, "the spectator sees the hands face down");
    await watcher.screenshot({ path: join(artifacts, "spectator.png") });
    // Leave and come back.
    await watcher.getByTestId("leave").click();
    await watcher.getByTestId("tab-friends").click();
    await watcher.getByTestId("watch").click();
    await watcher.getByTestId("spectating").waitFor();
    // The guest's page reloads mid-match: the invite it took is not offered again, nor
    // when every kept note comes again (the page sits in the invite's room).
    let guestReloaded = false;
    const plays = await playToTheEnd([host, guest], {
      onPlay: async (page, n) => {
        if (n % 5 === 0) await watch();
        if (page !== guest || n < 6 || guestReloaded) return;
        guestReloaded = true;
        for (const forget of [false, true]) {
          await reloadFeed(guest, { forget });
          await guest.locator("[data-testid=hand-card], [data-testid=result]").first().waitFor();
          const offered = await guest.getByTestId("invite").allInnerTexts();
          check(offered.length === 0, `the invite taken is not offered again mid-match${forget ? " (seq forgotten)" : ""}: ${offered.join(" | ")}`);
        }
      },
    });
    check(guestReloaded, "the guest's page reloaded mid-match");
    const a = await resultOf(host);
    const b = await resultOf(guest);
    check(a.seed === b.seed, "both see the same seed");
    check(/Guest/.test(a.score) && /Host/.test(b.score), `the score names the opponent: ${a.score} / ${b.score}`);
    await watcher.getByTestId("result").waitFor();
    await watch();
    const announced = (await host.getByTestId("announce").innerText()) + (await guest.getByTestId("announce").innerText());
    check(!/is back/.test(announced), `nobody is announced back who never left: ${announced}`);
    // Rematch: both ask, a new match starts at the same table.
    const before = await commitmentOf(host);
    await host.getByTestId("rematch").click();
    await guest.getByTestId("rematch").click();
    await host.getByTestId("result").waitFor({ state: "detached", timeout: 15000 });
    await host.locator("[data-testid=hand-card]").first().waitFor();
    check((await commitmentOf(host)) !== before, "the rematch is a new match with a new commitment");
    host.once("dialog", (dialog) => dialog.accept());
    await host.getByTestId("resign").click();
    const again = await resultOf(guest);
    await resultOf(host);
    await guest.screenshot({ path: join(artifacts, "friends-guest-phone.png"), fullPage: true });
    // A press on "Back to the lobby" holds while the table redraws under it (the host's
    // rematch offer arrives between press and release).
    const back = guest.getByTestId("back");
    await back.scrollIntoViewIfNeeded();
    const box = await back.boundingBox();
    check(box, "the button is on the screen");
    await guest.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
    await guest.mouse.down();
    await host.getByTestId("rematch").click();
    await guest.getByTestId("announce").filter({ hasText: "wants a rematch" }).waitFor();
    await guest.mouse.up();
    await guest.getByTestId("play-computer").waitFor({ timeout: 5000 });
    // Once the host is back in the lobby, the invite to that room is not offered to the
    // guest again, even with every kept note replayed: the snapshot shows the host at no
    // table.
    await host.getByTestId("back").click();
    await guest.getByTestId("tab-friends").click();
    await guest.locator("[data-testid=friend][data-presence='2']", { hasText: "Host" }).waitFor({ timeout: 10000 });
    await reloadFeed(guest, { forget: true });
    const stale = await guest.getByTestId("invite").allInnerTexts();
    check(stale.length === 0, `an invite to a room that has ended is not offered: ${stale.join(" | ")}`);
    report.friends = { code, plays, host: a.title, guest: b.title, rematch: again.title, watcherLooks: seenByWatcher.length };
    await watcher.getByTestId("leave").click();
    for (const p of [host, guest, watcher]) await p.context().close();
  }

  // 4. Ranked: two players meet in the ranked queue; one resigns; ratings move.
  {
    const a = await open(browser);
    const b = await open(browser);
    await signIn(a, "Rank A");
    await signIn(b, "Rank B");
    // Both keep their guest as an account (the leaderboard lists accounts only).
    const stamp = Date.now().toString(36);
    for (const [p, user] of [[a, `ra_${stamp}`], [b, `rb_${stamp}`]] as const) {
      await p.getByTestId("tab-profile").click();
      await p.getByTestId("username").fill(user);
      await p.getByTestId("password").fill("correct horse");
      await p.getByTestId("register").click();
      await p.getByTestId("account-kind").filter({ hasText: user }).waitFor();
      await p.getByTestId("tab-play").click();
    }
    await a.getByTestId("ranked-match").click();
    await b.getByTestId("ranked-match").click();
    await a.locator("[data-testid=opponent]", { hasText: "Rank B" }).waitFor({ timeout: 15000 });
    await a.locator("[data-testid=hand-card]").first().waitFor();
    a.once("dialog", (dialog) => dialog.accept());
    await a.getByTestId("resign").click();
    const ratings = [];
    for (const p of [a, b]) {
      await resultOf(p);
      await p.locator("[data-testid=rating-change]:not([data-pending])").waitFor({ timeout: 15000 });
      ratings.push(await p.getByTestId("rating-change").innerText());
    }
    check(/1500 → 1[0-4]\d\d \(-\d+\)/.test(ratings[0]), `the resigning player's rating fell: ${ratings[0]}`);
    check(/1500 → 1[5-9]\d\d \(\+\d+\)/.test(ratings[1]), `the winner's rating rose: ${ratings[1]}`);
    // The resigning player reloads on the result: the result and the rating change are
    // still there.
    await reloadResult(a);
    await a.locator("[data-testid=rating-change]:not([data-pending])").waitFor({ timeout: 15000 });
    const reloaded = await a.getByTestId("rating-change").innerText();
    check(reloaded === ratings[0], `the rating change survives a reload: ${reloaded} / ${ratings[0]}`);
    await b.screenshot({ path: join(artifacts, "ranked-result.png") });
    await b.getByTestId("back").click();
    await b.getByTestId("tab-ranked").click();
    const row = b.locator("[data-testid=history-row][data-ranked=true]").first();
    await row.waitFor();
    const history = await row.innerText();
    check(/Won/.test(history) && /Rank A/.test(history) && /\+\d+/.test(history), `the history shows the ranked win: ${history}`);
    await b.locator("[data-testid=leader].me").filter({ hasText: "Rank B" }).waitFor();
    check(/Rating: 1[5-9]\d\d/.test(await b.getByTestId("my-rating").innerText()), "the ranked tab shows the new rating");
    await b.screenshot({ path: join(artifacts, "ranked-tab.png"), fullPage: true });
    // Sign out, and back in with the username: the same rating and history.
    await b.getByTestId("sign-out").click();
    await b.getByTestId("first-username").fill(`rb_${stamp}`);
    await b.getByTestId("first-password").fill("correct horse");
    await b.getByTestId("first-log-in").click();
    await b.getByTestId("tab-ranked").click();
    await b.locator("[data-testid=history-row][data-ranked=true]").first().waitFor();
    check((await b.locator("[data-testid=who] bdi").innerText()) === "Rank B", "signed in again as Rank B");
    // Meanwhile the rematch window lapsed and the room closed: the result says so, and a
    // reload goes to the lobby.
    await a.getByTestId("room-closed").waitFor({ timeout: 20000 });
    check((await a.getByTestId("rematch").count()) === 0, "a closed room offers no rematch");
    await a.reload({ waitUntil: "load" });
    await a.getByTestId("play-computer").waitFor();
    check((await a.getByTestId("table").count()) === 0, "a reload after the room closed is in the lobby");
    report.ranked = { ratings, history, reloaded };
    await a.context().close();
    await b.context().close();
  }

  // 5. Quick match: two guests search at once (FindMatch, a server stream over gRPC-Web),
  //    meet each other (not a bot) at one table, and one resigns.
  {
    const a = await open(browser);
    const b = await open(browser);
    await signIn(a, "Quick A");
    await signIn(b, "Quick B");
    await a.getByTestId("quick-match").click();
    await b.getByTestId("quick-match").click();
    await a.locator("[data-testid=opponent]", { hasText: "Quick B" }).waitFor({ timeout: 15000 });
    await b.locator("[data-testid=opponent]", { hasText: "Quick A" }).waitFor({ timeout: 15000 });
    await a.locator("[data-testid=hand-card]").first().waitFor();
    a.once("dialog", (dialog) => dialog.accept());
    await a.getByTestId("resign").click();
    const ra = await resultOf(a);
    const rb = await resultOf(b);
    check(ra.seed === rb.seed, "both players of the quick match see the same seed");
    check(ra.title !== rb.title, `the resigning player loses: ${ra.title} / ${rb.title}`);
    report.quickMatch = { resigned: ra.title, other: rb.title };
    await b.screenshot({ path: join(artifacts, "quick-match-result.png") });
    await a.context().close();
    await b.context().close();
  }

  // 6. Arabic, from the browser's language, right to left, on a phone.
  {
    const page = await open(browser, { locale: "ar-EG", viewport: { width: 390, height: 844 } });
    const dir = await page.evaluate(() => [document.documentElement.dir, document.documentElement.lang]);
    check(dir[0] === "rtl" && dir[1] === "ar", `the Arabic page is right to left: ${dir}`);
    await page.getByTestId("name").evaluate((input: HTMLInputElement) => (input.value = "ب".repeat(30)));
    await page.getByTestId("sign-in").click();
    const long = await page.getByTestId("sign-in-problem").innerText();
    check(/٢٤/.test(long) && !/display_name|must/.test(long), `the limit is explained in Arabic: ${long}`);
    const name = "بسام 3ee9";
    await signIn(page, name);
    check((await page.locator("[data-testid=who] bdi").innerText()) === name, "the header isolates the name");
    // The target's accessible name is Arabic.
    await page.getByLabel("النقاط المطلوبة").selectOption("11");
    await page.getByTestId("play-computer").click();
    await page.locator("[data-testid=hand-card]").first().waitFor();
    const title = await page.locator("header h1").boundingBox();
    const langButton = await page.getByTestId("lang").boundingBox();
    check(title && langButton && title.x > langButton.x, "the title sits to the right of the language button");
    const bot = await page.getByTestId("opponent-name").innerText();
    check(bot === "الكمبيوتر (متوسط)", `the computer's name is Arabic: ${bot}`);
    // Every card back drawn (not the box that holds them) keeps off the name.
    const overlap = await page.evaluate(() => {
      const name = document.querySelector("[data-testid=opponent-name]")!.getBoundingClientRect();
      return [...document.querySelectorAll("[data-testid=backs] svg")]
        .map((c) => c.getBoundingClientRect())
        .filter((b) => b.left < name.right && name.left < b.right)
        .map((b) => [b.left, b.right, name.left, name.right]);
    });
    check(overlap.length === 0, `the card backs do not overlap the name: ${JSON.stringify(overlap)}`);
    check((await page.getByTestId("target-shown").innerText()).includes("11"), "the table shows the target");
    const chat = await page.locator(".phrase").allInnerTexts();
    check(chat.includes("يلّا!"), `quick chat reads in Arabic: ${chat}`);
    // Play until something was captured, then the announcement is in Arabic card names.
    const deadline = Date.now() + 60000;
    while (!/أخذ/.test(await page.getByTestId("announce").innerText()) && !(await page.getByTestId("result").count())) {
      check(Date.now() < deadline, "a capture within a minute");
      const card = page.locator("[data-testid=hand-card]:not([disabled])").first();
      const option = page.getByTestId("capture-option").first();
      if (await option.count()) await option.click({ timeout: 1500 }).catch(() => {});
      else if (await card.count()) await card.click({ timeout: 1500 }).catch(() => {});
      await page.waitForTimeout(40);
    }
    const arabic = await page.getByTestId("announce").innerText();
    check(/أخذ/.test(arabic) && !/\b(10|[2-9AJQK])[CDHS]\b/.test(arabic), `captures in Arabic card names: ${arabic}`);
    const turn = page.locator("[data-testid=turn] bdi, [data-testid=turn]");
    report.arabic = { dir: dir[0], bot, announce: arabic, turn: await turn.first().innerText() };
    await page.screenshot({ path: join(artifacts, "arabic-phone.png"), fullPage: true });
    // Switching to English turns the page left to right, announcements too.
    await page.getByTestId("lang").click();
    check((await page.evaluate(() => document.documentElement.dir)) === "ltr", "the switch turns the page left to right");
    const english = await page.getByTestId("announce").innerText();
    check(/ took /i.test(english) && !/أخذ/.test(english), `announcements follow the language: ${english}`);
    await page.getByTestId("lang").click();
    page.once("dialog", (dialog) => dialog.accept());
    await page.getByTestId("resign").click();
    await page.getByTestId("back").click();
    for (const [tab, text] of [["friends", "رمز الصداقة"], ["ranked", "لوحة الصدارة"], ["profile", "الاسم الظاهر"]]) {
      await page.getByTestId(`tab-${tab}`).click();
      await page.getByText(text).first().waitFor();
      if (tab === "friends") await page.screenshot({ path: join(artifacts, "arabic-friends.png"), fullPage: true });
    }
    await page.screenshot({ path: join(artifacts, "arabic-profile.png"), fullPage: true });
    await page.context().close();
  }
  // 7. My data: export and delete, each behind a dialog.
  {
    const page = await open(browser);
    await signIn(page, "Leaving Soon");
    await page.getByTestId("tab-profile").click();
    // The profile's name field refuses a long paste aloud too.
    await paste(page, "display-name", "Q".repeat(25));
    await page.getByTestId("name-message").filter({ hasText: "25" }).waitFor({ timeout: 5000 });
    check((await page.getByTestId("display-name").inputValue()) === "", "a long name is not pasted cut into the profile");
    const exported = async () => {
      await page.getByTestId("export-my-data").click();
      await page.getByTestId("export-dialog").waitFor();
      const [download] = await Promise.all([page.waitForEvent("download"), page.getByTestId("export-confirm").click()]);
      check(download.suggestedFilename() === "basra-my-data.json", `the file's name: ${download.suggestedFilename()}`);
      return JSON.parse(readFileSync(await download.path(), "utf8"));
    };
    const first = await exported();
    check(first.format === "basra-account-export/1", `the export's format: ${first.format}`);
    check(first.account.display_name === "Leaving Soon" && first.account.is_guest === true, `the export is this player's: ${JSON.stringify(first.account)}`);
    await page.getByTestId("my-data-status").filter({ hasText: "downloaded" }).waitFor();
    // A dialog leaves the page on its `close` event, a task after close(): wait for it.
    check(await eventually(async () => (await page.getByTestId("export-dialog").count()) === 0), "the export dialog closes");
    // The delete button waits for the word; another word or cancel deletes nothing.
    await page.getByTestId("delete-my-account").click();
    await page.getByTestId("delete-dialog").waitFor();
    check(await page.getByTestId("delete-confirm").isDisabled(), "nothing typed: the delete button is off");
    await page.getByTestId("delete-proof").fill("yes");
    check(await page.getByTestId("delete-confirm").isDisabled(), "another word: the delete button is off");
    await page.getByTestId("delete-dialog-cancel").click();
    check(await eventually(async () => (await page.getByTestId("delete-dialog").count()) === 0), "cancel closes the dialog");
    const still = await exported();
    check(still.account.user_id === first.account.user_id, "cancelled: the account is still there");
    await page.getByTestId("delete-my-account").click();
    await page.getByTestId("delete-proof").fill("delete");
    await page.screenshot({ path: join(artifacts, "delete-dialog.png") });
    await page.getByTestId("delete-confirm").click();
    await page.getByTestId("sign-in").waitFor();
    // The next sign-in is a new player; the dialog in Arabic takes the Arabic word.
    await signIn(page, "Back Again");
    await page.getByTestId("tab-profile").click();
    const fresh = await exported();
    check(fresh.account.user_id !== first.account.user_id, "after the deletion the browser signs in as a new player");
    await page.getByTestId("lang").click();
    await page.getByTestId("delete-my-account").click();
    await page.getByText("حذف حسابي نهائيًا").waitFor();
    await page.getByTestId("delete-proof").fill("احذف");
    check(await eventually(async () => !(await page.getByTestId("delete-confirm").isDisabled())), "the Arabic word confirms in Arabic");
    await page.screenshot({ path: join(artifacts, "arabic-delete-dialog.png") });
    await page.getByTestId("delete-dialog-cancel").click();
    await page.getByTestId("lang").click();
    // A registered account confirms with its password: a wrong one is refused and
    // deletes nothing; the right one deletes.
    const username = `gone_${Date.now() % 1e8}`;
    await page.getByTestId("username").fill(username);
    await page.getByTestId("password").fill("a long password");
    await page.getByTestId("register").click();
    await page.getByTestId("account-kind").filter({ hasText: username }).waitFor();
    await page.getByTestId("delete-my-account").click();
    check((await page.getByTestId("delete-proof").getAttribute("type")) === "password", "an account confirms with its password");
    await page.getByTestId("delete-proof").fill("not the password");
    await page.getByTestId("delete-confirm").click();
    await page.getByTestId("delete-message").filter({ hasText: "not this account's password" }).waitFor();
    await page.getByTestId("delete-proof").fill("a long password");
    await page.getByTestId("delete-confirm").click();
    await page.getByTestId("sign-in").waitFor();
    report.myData = { exported: first.account.user_id, deleted: true, newPlayer: fresh.account.user_id, registeredDeleted: username };
    await page.context().close();
  }
  check(problems.length === 0, `no console errors: ${problems.join(" | ")}`);
  console.log(JSON.stringify({ ok: true, ...report }));
} catch (err) {
  console.log(JSON.stringify({ ok: false, error: String(err), problems, ...report }));
  process.exitCode = 1;
} finally {
  await browser.close();
}
