// Plays Basra in headless Chromium (Debian's, through playwright-core's executablePath)
// against a running `basra dev` that serves the page: a guest plays a whole match against
// the computer by clicking cards, reloading mid-match; two browser contexts play each
// other through a private room code; two meet through quick match (FindMatch); the Arabic
// page lays out right to left on a phone screen. No console errors anywhere. Screenshots go to the artifact directory.
// Usage: node tests/browser.mjs PAGE_URL ARTIFACT_DIR [CHROMIUM]
// Prints one JSON line with what it saw; exits non-zero on the first failed check.
import { chromium } from "playwright-core";
import { mkdirSync } from "node:fs";
import { join } from "node:path";

const [pageUrl, artifacts, executable = "/usr/bin/chromium"] = process.argv.slice(2);
if (!pageUrl || !artifacts) {
  console.error("usage: node tests/browser.mjs PAGE_URL ARTIFACT_DIR [CHROMIUM]");
  process.exit(2);
}
mkdirSync(artifacts, { recursive: true });

const problems = [];
const report = { computer: {}, friends: {}, quickMatch: {}, arabic: {} };

function check(condition, message) {
  if (!condition) throw new Error(`check failed: ${message}`);
}

/** A page in a fresh context (its own local storage: its own guest). */
async function open(browser, { locale = "en-US", viewport = { width: 1000, height: 800 } } = {}) {
  const context = await browser.newContext({ locale, viewport });
  const page = await context.newPage();
  page.on("console", (m) => {
    if (m.type() === "error") problems.push(`console: ${m.text()}`);
  });
  page.on("pageerror", (e) => problems.push(`page error: ${e}`));
  await page.goto(pageUrl, { waitUntil: "load" });
  return page;
}

async function signIn(page, name) {
  await page.getByTestId("name").fill(name);
  await page.getByTestId("sign-in").click();
  await page.getByTestId("play-computer").waitFor();
}

/** Clicks a playable card on whichever page may play, until every page shows the result. */
async function playToTheEnd(pages, { onPlay = async () => {}, seconds = 240 } = {}) {
  const deadline = Date.now() + seconds * 1000;
  let plays = 0;
  for (;;) {
    let open = 0;
    for (const page of pages) {
      if (await page.getByTestId("result").count()) continue;
      open += 1;
      const card = page.locator("[data-testid=hand-card]:not([disabled])").first();
      if (await card.count()) {
        try {
          await card.click({ timeout: 1500 });
          plays += 1;
          await onPlay(page, plays);
        } catch {
          // redrawn under the pointer, or the turn moved on: look again
        }
      }
    }
    if (open === 0) return plays;
    check(Date.now() < deadline, `the match ended within ${seconds} s (${plays} plays made)`);
    await pages[0].waitForTimeout(40);
  }
}

async function resultOf(page) {
  const result = page.getByTestId("result");
  await result.waitFor();
  const title = await result.locator("h2").innerText();
  const seed = await page.getByTestId("seed").innerText();
  check(/[0-9a-f]{64}/.test(seed), `the revealed seed is 32 bytes of hex: ${seed}`);
  return { title, seed: seed.match(/[0-9a-f]{64}/)[0] };
}

const browser = await chromium.launch({
  executablePath: executable,
  args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
});
try {
  // 1. A guest against the computer, clicking cards, with a reload mid-match.
  {
    const page = await open(browser);
    await signIn(page, "Ada");
    await page.getByTestId("target").selectOption("11");
    await page.getByTestId("play-computer").click();
    await page.getByTestId("table").waitFor();
    await page.locator("[data-testid=hand-card]").first().waitFor();
    // Hovering a card highlights what it would take (or nothing): the preview is there.
    const first = page.locator("[data-testid=hand-card]").first();
    const label = await first.getAttribute("aria-label");
    check(/ of (clubs|diamonds|hearts|spades)/.test(label), `cards have text alternatives: ${label}`);
    await first.hover();
    let reloaded = false;
    const plays = await playToTheEnd([page], {
      onPlay: async (p, n) => {
        if (n === 4 && !reloaded) {
          reloaded = true;
          await p.screenshot({ path: join(artifacts, "computer-before-reload.png") });
          await p.reload({ waitUntil: "load" });
          await p.getByTestId("table").waitFor();
          await p.locator("[data-testid=hand-card], [data-testid=result]").first().waitFor();
          report.computer.resumedAfterReload = await p.getByTestId("table").isVisible();
          report.computer.handAfterReload = await p.locator("[data-testid=hand-card]").count();
        }
      },
    });
    check(reloaded && report.computer.resumedAfterReload, "the reload came back to the same table");
    const result = await resultOf(page);
    report.computer = { ...report.computer, plays, ...result };
    check(plays >= 12, `a whole round was played by clicking (${plays} plays)`);
    await page.screenshot({ path: join(artifacts, "computer-result.png"), fullPage: true });
    await page.getByTestId("back").click();
    await page.getByTestId("play-computer").waitFor();
    await page.context().close();
  }

  // 2. Two friends through a private room code.
  {
    const host = await open(browser);
    const guest = await open(browser, { viewport: { width: 390, height: 844 } });
    await signIn(host, "Host");
    await signIn(guest, "Guest");
    await host.getByTestId("target").selectOption("11");
    await host.getByTestId("create-private").click();
    const codeText = await host.getByTestId("room-code").innerText();
    const code = codeText.match(/[A-Z2-9]{6}/)?.[0];
    check(code, `the host sees a join code: ${codeText}`);
    await guest.getByTestId("code").fill(code.toLowerCase());
    await guest.getByTestId("join-code").click();
    await guest.getByTestId("table").waitFor();
    await host.locator("[data-testid=opponent]", { hasText: "Guest" }).waitFor();
    await guest.locator("[data-testid=opponent]", { hasText: "Host" }).waitFor();
    await host.screenshot({ path: join(artifacts, "friends-host.png") });
    const plays = await playToTheEnd([host, guest]);
    const a = await resultOf(host);
    const b = await resultOf(guest);
    check(a.seed === b.seed, "both see the same seed");
    const titles = [a.title, b.title].sort();
    check(titles[0] !== titles[1], `one wins and one loses: ${titles}`);
    report.friends = { code, plays, host: a.title, guest: b.title };
    await guest.screenshot({ path: join(artifacts, "friends-guest-phone.png"), fullPage: true });
    await host.context().close();
    await guest.context().close();
  }

  // 3. Quick match: two guests search at once (FindMatch, a server stream over gRPC-Web),
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

  // 4. Arabic, from the browser's language, right to left, on a phone.
  {
    const page = await open(browser, { locale: "ar-EG", viewport: { width: 390, height: 844 } });
    const dir = await page.evaluate(() => [document.documentElement.dir, document.documentElement.lang]);
    check(dir[0] === "rtl" && dir[1] === "ar", `the Arabic page is right to left: ${dir}`);
    await signIn(page, "ليلى");
    await page.getByTestId("play-computer").click();
    await page.locator("[data-testid=hand-card]").first().waitFor();
    const title = await page.locator("header h1").boundingBox();
    const langButton = await page.getByTestId("lang").boundingBox();
    check(title.x > langButton.x, "the title sits to the right of the language button");
    const chat = await page.locator(".phrase").allInnerTexts();
    check(chat.includes("يلّا!"), `quick chat reads in Arabic: ${chat}`);
    const label = await page.locator("[data-testid=hand-card]").first().getAttribute("aria-label");
    report.arabic = { dir: dir[0], firstCard: label, chat: chat.length };
    await page.screenshot({ path: join(artifacts, "arabic-phone.png"), fullPage: true });
    // Switching to English turns the page left to right.
    await page.getByTestId("lang").click();
    const after = await page.evaluate(() => document.documentElement.dir);
    check(after === "ltr", "the switch turns the page left to right");
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
