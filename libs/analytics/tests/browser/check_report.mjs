// Opens a report in headless Chromium (Debian's, via playwright-core's executablePath) and
// prints one JSON line: console errors, page errors, and for each plot its size and the
// number of data marks (bars, dots, lines in the series colours) that have a visible size.
// Usage: node check_report.mjs REPORT.html SCREENSHOT.png [CHROMIUM]
import { chromium } from "playwright-core";
import { pathToFileURL } from "node:url";

const [report, screenshot, executable = "/usr/bin/chromium"] = process.argv.slice(2);
const browser = await chromium.launch({
  executablePath: executable,
  args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
});
try {
  const page = await browser.newPage({ viewport: { width: 1000, height: 800 } });
  const consoleErrors = [];
  const pageErrors = [];
  const failedRequests = [];
  page.on("console", (m) => { if (m.type() === "error" || m.type() === "warning") consoleErrors.push(m.text()); });
  page.on("pageerror", (e) => pageErrors.push(String(e)));
  page.on("requestfailed", (r) => failedRequests.push(r.url()));
  await page.goto(pathToFileURL(report).href, { waitUntil: "load" });
  const plots = await page.evaluate(() => {
    const palette = ["#2b6cb0", "#dd8a2e", "#3a9e5c", "#b03a48"];
    return [...document.querySelectorAll("figure.plot")].map((figure) => {
      const svg = figure.querySelector("svg");
      const box = svg ? svg.getBoundingClientRect() : { width: 0, height: 0 };
      const marks = svg
        ? [...svg.querySelectorAll("rect, circle, polyline, path")].filter((el) => {
            const colour = (el.getAttribute("fill") || el.getAttribute("stroke") || "").toLowerCase();
            const b = el.getBoundingClientRect();
            return palette.includes(colour) && (b.width > 0 || b.height > 0);
          }).length
        : 0;
      return {
        id: figure.closest("section")?.id ?? "",
        width: box.width,
        height: box.height,
        marks,
        rows: figure.parentElement.querySelectorAll("tbody tr").length,
      };
    });
  });
  await page.screenshot({ path: screenshot, fullPage: true });
  console.log(JSON.stringify({ consoleErrors, pageErrors, failedRequests, plots }));
} finally {
  await browser.close();
}
