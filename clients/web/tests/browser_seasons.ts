// The Ranked tab's season picker, in headless Chromium (Debian's, through playwright-core)
// against a running `basra dev` that serves the page (tests/it/web_seasons.rs: seasons
// "Winter" (finished), "Spring" (current) and one ahead, nobody ranked). A page in
// English and one in Arabic each sign in and open the Ranked tab: the picker offers the
// current season first and the finished one; the current board is headed with its season
// and, empty, says so beside the list (no numbered row "1."); picking the finished season
// shows its final board's heading and that nobody was ranked in it; picking the current
// one again brings its heading back. No console errors.
// Usage: node tests/run.mjs tests/browser_seasons.ts PAGE_URL ARTIFACT_DIR [CHROMIUM]
// Prints one JSON line with what it saw; exits non-zero on the first failed check.
import { chromium, type Browser, type Page } from "playwright-core";
import { mkdirSync } from "node:fs";
import { join } from "node:path";

const [pageUrl, artifacts, executable = "/usr/bin/chromium"] = process.argv.slice(2);
if (!pageUrl || !artifacts) {
  console.error("usage: node tests/run.mjs tests/browser_seasons.ts PAGE_URL ARTIFACT_DIR [CHROMIUM]");
  process.exit(2);
}
mkdirSync(artifacts, { recursive: true });

const problems: string[] = [];
const report: Record<string, unknown> = {};

function check(condition: unknown, message: string): asserts condition {
  if (!condition) throw new Error(`check failed: ${message}`);
}

async function open(browser: Browser, locale: string): Promise<Page> {
  const context = await browser.newContext({ locale, viewport: { width: 1000, height: 800 } });
  const page = await context.newPage();
  page.on("console", (m) => {
    if (m.type() === "error") problems.push(`console: ${m.text()}`);
  });
  page.on("pageerror", (e) => problems.push(`page error: ${e}`));
  await page.goto(pageUrl, { waitUntil: "load" });
  return page;
}

/** What the board shows now: its heading, its rows, the words beside it. */
async function board(page: Page): Promise<{ heading: string; rows: number; listShown: boolean; note: string; noteShown: boolean }> {
  return page.evaluate(() => {
    const list = document.querySelector("[data-testid=leaderboard]") as HTMLElement;
    const note = document.querySelector("[data-testid=leaderboard-note]") as HTMLElement;
    return {
      heading: (document.querySelector("[data-testid=board-title]") as HTMLElement).innerText,
      rows: list.querySelectorAll("li").length,
      listShown: !list.hidden,
      note: note.innerText,
      noteShown: !note.hidden,
    };
  });
}

/** Waits until the board's heading matches `heading`, and answers what it shows. */
async function boardHeaded(page: Page, heading: RegExp): Promise<Awaited<ReturnType<typeof board>>> {
  await page.waitForFunction(
    (source) => new RegExp(source).test((document.querySelector("[data-testid=board-title]") as HTMLElement | null)?.innerText ?? ""),
    heading.source,
  );
  // The answer and its note are drawn together.
  await page.locator("[data-testid=leaderboard-note]:not([hidden])").waitFor();
  return board(page);
}

interface Words {
  current: RegExp;
  finished: RegExp;
  empty: RegExp;
  emptySeason: RegExp;
  options: [RegExp, RegExp];
}

const EN: Words = {
  current: /^Leaderboard: Spring$/,
  finished: /^Final leaderboard of Winter/,
  empty: /Nobody is ranked yet/,
  emptySeason: /Nobody was ranked in this season/,
  options: [/^Spring \(current\)$/, /^Winter \(finished\)$/],
};

const AR: Words = {
  current: /^لوحة الصدارة: Spring$/,
  finished: /^لوحة الصدارة النهائية لموسم Winter/,
  empty: /لا أحد مصنّف بعد/,
  emptySeason: /لم يُصنَّف أحد في هذا الموسم/,
  options: [/^Spring \(الحالي\)$/, /^Winter \(منتهٍ\)$/],
};

async function pickSeasons(page: Page, name: string, words: Words): Promise<Record<string, unknown>> {
  await page.getByTestId("name").fill(name);
  await page.getByTestId("sign-in").click();
  await page.getByTestId("tab-ranked").click();
  const picker = page.getByTestId("season-picker");
  await picker.waitFor({ state: "visible" });
  const options = await picker.locator("option").evaluateAll((os) =>
    os.map((o) => ({ value: (o as HTMLOptionElement).value, season: o.getAttribute("data-season"), text: (o as HTMLElement).innerText })),
  );
  check(options.length === 2, `two seasons to pick: ${JSON.stringify(options)}`);
  check(options[0].value === "" && options[0].season === "s2" && words.options[0].test(options[0].text), `the current season first: ${JSON.stringify(options)}`);
  check(options[1].value === "s1" && words.options[1].test(options[1].text), `then the finished one: ${JSON.stringify(options)}`);

  const current = await boardHeaded(page, words.current);
  check(current.rows === 0 && !current.listShown, `an empty board has no numbered row: ${JSON.stringify(current)}`);
  check(current.noteShown && words.empty.test(current.note), `it says nobody is ranked yet: ${JSON.stringify(current)}`);
  await page.screenshot({ path: join(artifacts, `current-${name}.png`) });

  await picker.selectOption("s1");
  const finished = await boardHeaded(page, words.finished);
  check(finished.rows === 0 && !finished.listShown, `the finished season's empty board has no row: ${JSON.stringify(finished)}`);
  check(finished.noteShown && words.emptySeason.test(finished.note), `nobody was ranked in it: ${JSON.stringify(finished)}`);
  await page.screenshot({ path: join(artifacts, `finished-${name}.png`) });

  await picker.selectOption("");
  const again = await boardHeaded(page, words.current);
  check(words.empty.test(again.note), `the current season's board again: ${JSON.stringify(again)}`);
  return { options: options.map((o) => o.text), current, finished };
}

async function main(): Promise<void> {
  const browser = await chromium.launch({ executablePath: executable, args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"] });
  try {
    const [en, ar] = [await open(browser, "en-US"), await open(browser, "ar-EG")];
    report.en = await pickSeasons(en, "Sara", EN);
    check((await ar.evaluate(() => document.documentElement.dir)) === "rtl", "the Arabic page is right to left");
    report.ar = await pickSeasons(ar, "Salim", AR);
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
