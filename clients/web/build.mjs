// Bundles the page into dist/: app.js (esbuild, from src/main.ts), capture.js (the capture
// rule alone, for the browser test), index.html, style.css.
import { build } from "esbuild";
import { cpSync, mkdirSync, readFileSync, rmSync } from "node:fs";

// The page names itself `web/<version>` in the basra-client metadata of every call.
const { version } = JSON.parse(readFileSync("package.json", "utf8"));

rmSync("dist", { recursive: true, force: true });
mkdirSync("dist");
await build({
  entryPoints: ["src/main.ts"],
  bundle: true,
  minify: true,
  sourcemap: true,
  format: "esm",
  target: ["es2022"],
  outfile: "dist/app.js",
  logLevel: "warning",
  define: { __APP_VERSION__: JSON.stringify(version) },
});
// The capture rule alone, for the browser test to put to the engine's examples.
await build({
  entryPoints: ["src/capture.ts"],
  bundle: true,
  format: "esm",
  target: ["es2022"],
  outfile: "dist/capture.js",
  logLevel: "warning",
});
cpSync("static", "dist", { recursive: true });
