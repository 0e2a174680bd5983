// The inbox's unread count and the Report form, in headless Chromium (Debian's, through
// playwright-core) against a running `basra dev` that serves the page
// (tests/it/web_inbox.rs). Two guests, Rana and Sami:
//  1. Sami asks Rana to be friends by her code: Rana's header shows one unread notice
//     without a reload; it still does after a reload, and after a reload that forgets the
//     feed's seq (every kept note comes again: counted once); she accepts; "Mark as read"
//     clears the count, and a reload does not bring it back;
//  2. Rana opens Sami's card in the friends list and reports him: a reason and a comment
//     typed while the list redraws under the form (Sami starts a match: his presence
//     changes), then sent; the page says it was sent (the test asks the moderators' list).
// No console errors. Screenshots go to the artifact directory.
// Usage: node tests/run.mjs tests/browser_inbox.ts PAGE_URL ARTIFACT_DIR [CHROMIUM]
// Prints one JSON line with what it saw; exits non-zero on the first failed check.
import { chromium, type Browser, type Page } from "playwright-core";
import { mkdirSync } from "node:fs";
import { join } from "node:path";

const [pageUrl, artifacts, executable = "/usr/bin/chromium"] = process.argv.slice(2);
if (!pageUrl || !artifacts) {
  console.error("usage: node tests/run.mjs tests/browser_inbox.ts PAGE_URL ARTIFACT_DIR [CHROMIUM]");
  process.exit(2);
}
mkdirSync(artifacts, { recursive: true });

/** The comment Rana types (the test finds it in the moderators' view). */
const COMMENT = "Sami plays a card out of turn, every round";

const problems: string[] = [];
const report: Record<string, unknown> = {};

function check(condition: unknown, message: string): asserts condition {
  if (!condition) throw new Error(`check failed: ${message}`);
}

async function open(browser: Browser): Promise<Page> {
  const context = await browser.newContext({ locale: "en-US", viewport: { width: 1000, height: 800 } });
  const page = await context.newPage();
  page.on("console", (m) => {
    if (m.type() === "error") problems.push(`console: ${m.text()}`);
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

async function friendCode(page: Page): Promise<string> {
  await page.getByTestId("tab-friends").click();
  await page.waitForFunction(() => /[A-Z0-9]{4}-[A-Z0-9]{4}/.test(document.querySelector("[data-testid=friend-code]")?.textContent ?? ""));
  const text = await page.getByTestId("friend-code").innerText();
  const code = /[A-Z0-9]{4}-[A-Z0-9]{4}/.exec(text)?.[0];
  check(code, `a friend code: ${text}`);
  return code;
}

/** The unread count the header shows (0: none shown). */
async function unread(page: Page): Promise<number> {
  const shown = page.getByTestId("inbox-unread");
  if (!(await shown.count())) return 0;
  const text = await shown.innerText();
  const n = /(\d+) unread/.exec(text)?.[1];
  check(n, `the count is in words: ${text}`);
  return Number(n);
}

/** Waits until the header shows `n` unread (within `ms`); answers what it shows then. */
async function unreadBecomes(page: Page, n: number, what: string, ms = 10000): Promise<number> {
  const until = Date.now() + ms;
  for (;;) {
    const now = await unread(page);
    if (now === n) return now;
    check(Date.now() < until, `${what}: the header shows ${now} unread, not ${n}`);
    await page.waitForTimeout(50);
  }
}

/**
 * Reloads `page` and waits until its feed has taken its snapshot and every note up to
 * the one seen before (`forget`: after losing the seq it keeps, so every note comes
 * again).
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

const browser = await chromium.launch({ executablePath: executable, args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"] });
try {
  const rana = await open(browser);
  const sami = await open(browser);
  await signIn(rana, "Rana");
  await signIn(sami, "Sami");
  await rana.locator("html[data-feed=open]").waitFor();
  check((await unread(rana)) === 0, "nothing unread at first");

  // 1. A notice arrives live, survives reloads, and is cleared by "Mark as read".
  const code = await friendCode(rana);
  await rana.getByTestId("tab-play").click();
  await friendCode(sami);
  await sami.getByTestId("friend-target").fill(code);
  await sami.getByTestId("add-friend").click();
  const live = await unreadBecomes(rana, 1, "the request arrives without a reload");
  await rana.getByTestId("friend-request").filter({ hasText: "Sami" }).waitFor();
  await rana.screenshot({ path: join(artifacts, "unread-live.png") });
  await reloadFeed(rana);
  const afterReload = await unreadBecomes(rana, 1, "after a reload", 3000);
  await reloadFeed(rana, { forget: true });
  const afterForget = await unreadBecomes(rana, 1, "after a reload with the feed's seq forgotten", 3000);
  await rana.getByTestId("friend-request").filter({ hasText: "Sami" }).getByTestId("accept").click();
  await sami.getByTestId("friend").filter({ hasText: "Rana" }).waitFor({ timeout: 10000 });
  const samiTold = await unreadBecomes(sami, 1, "Sami hears his request was accepted");
  check((await unread(rana)) === 1, "answering the request leaves its notice unread");
  await rana.getByTestId("mark-read").click();
  const afterMark = await unreadBecomes(rana, 0, "marked read", 5000);
  await reloadFeed(rana);
  const afterMarkReload = await unreadBecomes(rana, 0, "marked read, after a reload", 3000);
  report.unread = { live, afterReload, afterForget, samiTold, afterMark, afterMarkReload };

  // 2. Rana reports Sami from his card; the list redraws while she types.
  await rana.getByTestId("tab-friends").click();
  const card = rana.getByTestId("friend").filter({ hasText: "Sami" });
  await card.waitFor();
  await card.getByTestId("report").click();
  const form = rana.getByTestId("report-form");
  await form.waitFor();
  await form.getByTestId("report-reason").selectOption({ label: "Cheating" });
  await form.getByTestId("report-comment").fill(COMMENT.slice(0, 20));
  // Sami starts a match: his presence changes on Rana's feed and her list redraws.
  await sami.getByTestId("tab-play").click();
  await sami.getByTestId("play-computer").click();
  await sami.getByTestId("table").waitFor();
  await rana.locator("[data-testid=friend][data-presence='4']", { hasText: "Sami" }).waitFor({ timeout: 10000 });
  const kept = {
    open: await rana.getByTestId("report-form").count(),
    reason: await rana.getByTestId("report-reason").inputValue().catch(() => ""),
    comment: await rana.getByTestId("report-comment").inputValue().catch(() => ""),
  };
  report.redrawn = kept;
  check(kept.open === 1 && kept.comment === COMMENT.slice(0, 20), `the open form and its comment survive a redraw: ${JSON.stringify(kept)}`);
  check(kept.reason === "2", `the reason chosen (cheating) survives a redraw: ${kept.reason}`);
  await rana.getByTestId("report-comment").pressSequentially(COMMENT.slice(20));
  await rana.screenshot({ path: join(artifacts, "report-form.png") });
  await rana.getByTestId("report-send").click();
  await rana.getByTestId("report-done").waitFor();
  report.reported = { name: "Sami", comment: COMMENT, done: await rana.getByTestId("report-done").innerText() };
  await rana.screenshot({ path: join(artifacts, "report-sent.png") });
  check(problems.length === 0, `no console errors: ${problems.join(" | ")}`);
  console.log(JSON.stringify({ ok: true, ...report }));
} catch (err) {
  console.log(JSON.stringify({ ok: false, error: String(err), problems, ...report }));
  process.exitCode = 1;
} finally {
  await browser.close();
}
