// A small knockout played to its final between browsers, in headless Chromium (Debian's,
// through playwright-core) against a running `basra dev` that serves the page, on an event
// an operator made (tests/it/web_events.rs: three players at most, check-in open from now,
// the start a few seconds ahead, matches to 1). Three players sign in (one reads the page
// in Arabic), open the Tournaments tab, find the event, register and check in; at the
// start the top seed has a bye and the other two get "your match is ready" above the
// screen and join with one tap; they play by clicking; the winner goes back to the event
// and, with the seed, gets the final's notice and plays it; every page ends on the final
// standings with the champion named, the bracket showing both rounds. While the final is
// played, the page of the player knocked out in round 1 is reloaded: opened again, its
// bracket draws round 1 with its result and winner beside the final. Then the finalist
// opens the final's Replay from the match history: Play runs it by itself, Pause holds it,
// Step shows one event at a time to the end; the plays shown and the final totals are
// reported (the test compares them with the match as recorded). The seed, who did not
// play round 1, opens round 1's match from the event's bracket with its Replay (in the
// page's language) and steps through it to the end: its match id, plays and final totals
// are reported (compared with round 1 as recorded). No console errors.
// Usage: node tests/run.mjs tests/browser_events.ts PAGE_URL ARTIFACT_DIR EVENT_ID EVENT_NAME [CHROMIUM]
// Prints one JSON line with what it saw; exits non-zero on the first failed check.
import { chromium, type Browser, type Page } from "playwright-core";
import { mkdirSync } from "node:fs";
import { join } from "node:path";

const [pageUrl, artifacts, eventId, eventName, executable = "/usr/bin/chromium"] = process.argv.slice(2);
if (!pageUrl || !artifacts || !eventId || !eventName) {
  console.error("usage: node tests/run.mjs tests/browser_events.ts PAGE_URL ARTIFACT_DIR EVENT_ID EVENT_NAME [CHROMIUM]");
  process.exit(2);
}
mkdirSync(artifacts, { recursive: true });

const problems: string[] = [];
const report: Record<string, unknown> = {};

function check(condition: unknown, message: string): asserts condition {
  if (!condition) throw new Error(`check failed: ${message}`);
}

async function open(browser: Browser, locale = "en-US"): Promise<Page> {
  const context = await browser.newContext({ locale, viewport: { width: 1000, height: 900 } });
  const page = await context.newPage();
  page.on("console", (m) => {
    if (m.type() === "error") problems.push(`console: ${m.text()}`);
  });
  page.on("pageerror", (e) => problems.push(`page error: ${e}`));
  await page.goto(pageUrl, { waitUntil: "load" });
  return page;
}

/** Signs in, opens the Tournaments tab and the event, registers and checks in. */
async function enter(page: Page, name: string): Promise<string> {
  await page.getByTestId("name").fill(name);
  await page.getByTestId("sign-in").click();
  await page.getByTestId("tab-events").click();
  const tab = await page.getByTestId("tab-events").innerText();
  const row = page.locator(`[data-testid=event][data-event-id="${eventId}"]`);
  await row.waitFor();
  check((await row.innerText()).includes(eventName), `the list names the event: ${await row.innerText()}`);
  await row.getByTestId("event-open").click();
  await page.getByTestId("event-register").click();
  await page.locator("[data-testid=event-entry][data-entry=entryRegistered]").waitFor();
  // Check-in is open from the start of the test: the button is there.
  await page.getByTestId("event-check-in").click();
  await page.locator("[data-testid=event-entry][data-entry=entryCheckedIn]").waitFor();
  return tab;
}

/**
 * Reloads the page of the player knocked out in round 1 while the final is played, and
 * opens the event again: the bracket has round 1 drawn with its result and winner (the
 * stream's first message brings the earlier rounds), beside the final. Answers what it
 * saw.
 */
async function reloadMidKnockout(page: Page, name: string): Promise<Record<string, unknown>> {
  await page.reload({ waitUntil: "load" });
  // This browser's guest signs in again by itself; its Tournaments tab, the event.
  await page.getByTestId("tab-events").click();
  const row = page.locator(`[data-testid=event][data-event-id="${eventId}"]`);
  await row.getByTestId("event-open").click();
  const rounds = page.locator("[data-testid=bracket] .round");
  await rounds.nth(1).waitFor();
  const status = await page.getByTestId("event-status").getAttribute("data-status");
  const first = rounds.first();
  const heading = await first.locator("h3").innerText();
  const matches = await first.getByTestId("event-match").evaluateAll((ms) =>
    ms.map((m) => ({
      round: m.getAttribute("data-round"),
      result: m.getAttribute("data-result"),
      players: [...m.querySelectorAll("[data-testid=bracket-player]")].map((p) => (p as HTMLElement).innerText),
      winners: [...m.querySelectorAll("[data-testid=bracket-player].winner")].map((p) => (p as HTMLElement).innerText),
      text: (m as HTMLElement).innerText,
    })),
  );
  await page.screenshot({ path: join(artifacts, `reloaded-${name}.png`), fullPage: true });
  check(matches.length === 1, `round 1's one match is drawn after the reload: ${JSON.stringify(matches)}`);
  const [m] = matches;
  check(m.round === "1" && (m.result === "WON" || m.result === "FORFEIT"), `round 1's match has its result: ${JSON.stringify(m)}`);
  check(m.players.length === 2 && m.winners.length === 1, `its two players, one the winner: ${JSON.stringify(m)}`);
  check(!m.winners[0].includes(name), `${name}, knocked out, is not its winner: ${JSON.stringify(m)}`);
  check(/Round 1|الجولة 1/.test(heading), `round 1 is named: ${heading}`);
  check(/won|فاز/.test(m.text), `the result is said: ${m.text}`);
  return { status, heading, match: m };
}

/**
 * Plays the event on every page until each shows the final standings: a page with "your
 * match is ready" joins; a table plays a playable card; a finished match goes back to
 * the event. The page of the player knocked out in round 1 is reloaded while the final
 * is played (`reloadMidKnockout`, its report in `report.reload`). Answers how many
 * matches each page joined.
 */
async function playEvent(pages: Page[], names: string[], seconds = 420): Promise<number[]> {
  const deadline = Date.now() + seconds * 1000;
  const joined = pages.map(() => 0);
  for (;;) {
    let done = 0;
    for (const [i, page] of pages.entries()) {
      if (
        !report.reload &&
        joined[i] === 1 &&
        (await page.locator("[data-testid=event-entry][data-entry=entryEliminated]").count()) &&
        (await page.locator("[data-testid=event-status][data-status=RUNNING]").count())
      ) {
        report.reload = { name: names[i], ...(await reloadMidKnockout(page, names[i])) };
        continue;
      }
      try {
        const ready = page.getByTestId("event-join-match");
        if (await ready.count()) {
          if (joined[i] === 0) await page.screenshot({ path: join(artifacts, `match-ready-${i}.png`) });
          await ready.first().click({ timeout: 1500 });
          joined[i] += 1;
          continue;
        }
        if (await page.getByTestId("result").count()) {
          await page.getByTestId("back").click({ timeout: 1500 });
          continue;
        }
        const card = page.locator("[data-testid=hand-card]:not([disabled])").first();
        const option = page.getByTestId("capture-option").first();
        if (await option.count()) await option.click({ timeout: 1500 });
        else if (await card.count()) await card.click({ timeout: 1500 });
        else if (await page.locator("[data-testid=event-standings][data-final=true]").count()) done += 1;
      } catch {
        // Redrawn under the pointer: look again.
      }
    }
    if (done === pages.length) return joined;
    check(Date.now() < deadline, `the event ended within ${seconds} s (joined ${joined})`);
    await pages[0].waitForTimeout(60);
  }
}

/** What the replay panel shows now. */
interface ReplayLook {
  shown: number;
  events: number;
  kind: string;
  text: string;
  totals: string;
  stepDisabled: boolean;
}

/**
 * Opens the newest match of `page`'s history (the final) in the Replay, lets Play run a
 * few events, pauses (nothing moves while paused), then steps to the end, counting the
 * plays as each event appears. Answers the plays shown, the events, where Pause held and
 * the totals at the end.
 */
async function watchReplay(page: Page): Promise<Record<string, unknown>> {
  await page.getByTestId("tab-ranked").click();
  const row = page.getByTestId("history-row").first();
  await row.waitFor();
  const rows = await page.getByTestId("history-row").count();
  await row.getByTestId("replay-open").click();
  await page.locator("[data-testid=replay-status][data-events]").waitFor();
  const look = (): Promise<ReplayLook> =>
    page.evaluate(() => {
      const status = document.querySelector("[data-testid=replay-status]") as HTMLElement;
      const mark = document.querySelector("[data-testid=replay-mark]") as HTMLElement;
      const board = document.querySelector("[data-testid=replay-board]") as HTMLElement;
      const step = document.querySelector("[data-testid=replay-step]") as HTMLButtonElement;
      return {
        shown: Number(status.dataset.shown),
        events: Number(status.dataset.events),
        kind: mark.dataset.kind ?? "",
        text: mark.innerText,
        totals: board.dataset.totals ?? "",
        stepDisabled: step.disabled,
      };
    });
  let shown = 0;
  let plays = 0;
  const take = (v: ReplayLook) => {
    check(v.shown === shown || v.shown === shown + 1, `one event at a time: ${shown} then ${v.shown}`);
    if (v.shown === shown + 1 && v.kind === "cardPlayed") {
      plays += 1;
      check(/played|لعب/.test(v.text), `a play is named: ${v.text}`);
    }
    shown = v.shown;
  };
  const first = await look();
  check(first.shown === 0 && first.events > 0, `the replay opens before the first event: ${JSON.stringify(first)}`);
  // Play: the panel moves by itself, one event a second.
  await page.getByTestId("replay-play").click();
  const until = Date.now() + 15000;
  while (shown < 3) {
    take(await look());
    check(Date.now() < until, `Play moved the replay on: ${shown}`);
    await page.waitForTimeout(50);
  }
  await page.getByTestId("replay-play").click();
  take(await look());
  const pausedAt = shown;
  await page.waitForTimeout(2500);
  const held = await look();
  check(held.shown === pausedAt, `nothing moves while paused: ${pausedAt} then ${held.shown}`);
  await page.screenshot({ path: join(artifacts, "replay-paused.png") });
  // Step: one event a click, to the end.
  while (shown < first.events) {
    await page.getByTestId("replay-step").click();
    const v = await look();
    check(v.shown === shown + 1, `a step shows the next event: ${shown} then ${v.shown}`);
    take(v);
  }
  const end = await look();
  check(end.stepDisabled, "Step is done at the end");
  await page.screenshot({ path: join(artifacts, "replay-end.png") });
  return { plays, events: first.events, pausedAt, totals: end.totals.split(",").map(Number), historyRows: rows };
}

/**
 * On the finished event's page, opens round 1's match with its Replay button in the
 * bracket and steps through it to the end. Answers the match id, the button's words,
 * the plays shown, the events and the totals at the end.
 */
async function replayFromBracket(page: Page, arabic: boolean): Promise<Record<string, unknown>> {
  const m = page.locator("[data-testid=bracket] [data-testid=event-match][data-round='1']");
  const matchId = await m.getAttribute("data-match-id");
  check(matchId, `round 1's match names its match: ${await m.innerText()}`);
  const open = m.getByTestId("event-match-replay");
  const button = await open.innerText();
  check(button === (arabic ? "إعادة" : "Replay"), `the Replay button in the page's language: ${button}`);
  // The finished final has its Replay too; a bye has none (a knockout of three lists none).
  const offered = await page.locator("[data-testid=bracket] [data-testid=event-match-replay]").count();
  check(offered === 2, `both matches played offer a Replay: ${offered}`);
  await open.click();
  const panel = page.locator(`[data-testid=event-replay] [data-testid=replay][data-match-id="${matchId}"]`);
  await panel.locator("[data-testid=replay-status][data-events]").waitFor();
  const events = Number(await panel.getByTestId("replay-status").getAttribute("data-events"));
  check(events > 0, `the replay has events: ${events}`);
  let plays = 0;
  for (let shown = 0; shown < events; shown++) {
    await panel.getByTestId("replay-step").click();
    check(Number(await panel.getByTestId("replay-status").getAttribute("data-shown")) === shown + 1, `a step shows event ${shown + 1}`);
    if ((await panel.getByTestId("replay-mark").getAttribute("data-kind")) === "cardPlayed") plays += 1;
  }
  check(await panel.getByTestId("replay-step").isDisabled(), "Step is done at the end");
  const totals = (await panel.getByTestId("replay-board").getAttribute("data-totals")) ?? "";
  await page.screenshot({ path: join(artifacts, `event-replay${arabic ? "-ar" : ""}.png`), fullPage: true });
  await panel.getByTestId("replay-close").click();
  check((await page.locator("[data-testid=event-replay] [data-testid=replay]").count()) === 0, "Close takes the replay away");
  return { matchId, button, plays, events, totals: totals.split(",").map(Number) };
}

async function main(): Promise<void> {
  const browser = await chromium.launch({ executablePath: executable, args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"] });
  try {
    const pages = [await open(browser), await open(browser), await open(browser, "ar-EG")];
    const names = ["Amal", "Badr", "Camil"];
    const tabs = await Promise.all(pages.map((page, i) => enter(page, names[i])));
    report.tabs = tabs;
    check(tabs[0] === "Tournaments" && tabs[2] === "البطولات", `the tab in English and Arabic: ${tabs}`);
    check((await pages[2].evaluate(() => document.documentElement.dir)) === "rtl", "the Arabic page is right to left");
    await pages[0].screenshot({ path: join(artifacts, "event-checked-in.png") });
    const joined = await playEvent(pages, names);
    report.joined = joined;
    check(report.reload, "a page was reloaded while the final was played");
    check(joined.reduce((a, b) => a + b, 0) === 4, `two matches of two players were joined: ${joined}`);
    check(joined.filter((n) => n === 2).length === 1 && joined.filter((n) => n === 1).length === 2, `one player played twice: ${joined}`);
    const finalist = joined.indexOf(2);
    for (const [i, page] of pages.entries()) {
      const champion = await page.getByTestId("event-champion").innerText();
      const rows = await page.getByTestId("standing").evaluateAll((rows) => rows.map((r) => [r.getAttribute("data-rank"), (r.children[1] as HTMLElement).innerText]));
      const rounds = await page.locator("[data-testid=bracket] .round").count();
      const status = await page.getByTestId("event-status").getAttribute("data-status");
      report[names[i]] = { champion, rows, rounds, status };
      check(status === "FINISHED", `${names[i]} sees the event finished: ${status}`);
      check(rows.length === 3 && rows[0][0] === "1", `${names[i]} sees three ranked players: ${JSON.stringify(rows)}`);
      check(rounds === 2, `${names[i]} sees both rounds in the bracket: ${rounds}`);
      check(names.some((n) => champion.includes(n)), `a champion is named: ${champion}`);
    }
    const champion = (report[names[0]] as { champion: string }).champion;
    report.champion = names.find((n) => champion.includes(n));
    report.finalist = names[finalist];
    await pages[0].screenshot({ path: join(artifacts, "event-final.png"), fullPage: true });
    await pages[2].screenshot({ path: join(artifacts, "event-final-ar.png"), fullPage: true });
    // The finished event is in each player's own list, with their rank.
    await pages[0].getByTestId("events-back").click();
    await pages[0].locator(`[data-testid=my-events] [data-event-id="${eventId}"]`).waitFor();
    report.history = await pages[0].locator(`[data-testid=my-events] [data-event-id="${eventId}"]`).innerText();
    // The seed (a bye in round 1, then the final) replays round 1 from the bracket,
    // before the finalist's page leaves the event for its match history.
    const seed = names.findIndex((n, i) => joined[i] === 1 && n !== (report.reload as { name: string }).name);
    check(seed >= 0 && seed !== finalist, `the seed's page: ${seed}`);
    report.seed = names[seed];
    if (seed === 0) await pages[0].locator(`[data-testid=my-events] [data-event-id="${eventId}"]`).getByTestId("event-open").click();
    report.bracketReplay = await replayFromBracket(pages[seed], seed === 2);
    // The finalist replays the final from their match history.
    report.replay = await watchReplay(pages[finalist]);
  } finally {
    await browser.close();
  }
  check(problems.length === 0, `no console errors: ${problems.join("; ")}`);
}

main().then(
  () => console.log(JSON.stringify({ ok: true, ...report })),
  (err) => {
    console.log(JSON.stringify({ ok: false, error: String(err), problems, ...report }));
    process.exit(1);
  },
);
