// Runs the web client's TypeScript tests under node, which cannot read TypeScript itself:
// esbuild bundles each file (the page's modules with it, npm packages left to node_modules)
// into build/tests/, then node runs it. Types are checked apart, by `npm run typecheck`.
// Unit tests run in clients/web (their working directory); a script where it was started.
//
//   node tests/run.mjs --test tests/unit/*.test.ts   node's test runner over the unit tests
//   node tests/run.mjs tests/browser.ts ARGS...      one script, with its arguments
import { build } from "esbuild";
import { spawnSync } from "node:child_process";
import { basename, dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const web = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const out = join(web, "build", "tests");

/** Bundles `file` (.ts) for node; answers the .mjs written. */
async function compile(file) {
  const outfile = join(out, basename(file).replace(/\.ts$/, ".mjs"));
  await build({
    entryPoints: [file],
    bundle: true,
    platform: "node",
    format: "esm",
    target: ["node20"],
    packages: "external",
    sourcemap: "inline",
    outfile,
    logLevel: "warning",
  });
  return outfile;
}

const [first, ...rest] = process.argv.slice(2);
if (!first) {
  console.error("usage: node tests/run.mjs --test FILE.test.ts... | node tests/run.mjs FILE.ts [ARGS...]");
  process.exit(2);
}
if (first === "--test") {
  const files = await Promise.all(rest.map(compile));
  const run = spawnSync(process.execPath, ["--enable-source-maps", "--test", ...files], { stdio: "inherit", cwd: web });
  process.exit(run.status ?? 1);
} else {
  const script = await compile(first);
  const run = spawnSync(process.execPath, ["--enable-source-maps", script, ...rest], { stdio: "inherit" });
  process.exit(run.status ?? 1);
}
