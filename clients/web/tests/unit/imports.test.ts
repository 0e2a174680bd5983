// How the page's modules import each other, as esbuild bundles them (its metafile): no two
// of them import each other, even through others (table/ and social.ts once did), and the
// table's state imports nothing that draws, stores or calls (only the capture rule and the
// generated messages), so it runs, and is tested, without a page.
import { test } from "node:test";
import assert from "node:assert/strict";
import { build, type Metafile } from "esbuild";

async function graph(): Promise<Map<string, string[]>> {
  const { metafile } = (await build({
    entryPoints: ["src/main.ts"],
    bundle: true,
    write: false,
    metafile: true,
    format: "esm",
    logLevel: "silent",
  })) as { metafile: Metafile };
  const own = (path: string) => path.startsWith("src/");
  return new Map(
    Object.entries(metafile.inputs)
      .filter(([path]) => own(path))
      .map(([path, input]) => [path, input.imports.map((i) => i.path).filter(own)]),
  );
}

/** Every module `from` reaches through its imports (itself only through a cycle). */
function reach(imports: Map<string, string[]>, from: string): Set<string> {
  const seen = new Set<string>();
  const walk = (path: string) => {
    for (const next of imports.get(path) ?? []) {
      if (seen.has(next)) continue;
      seen.add(next);
      walk(next);
    }
  };
  walk(from);
  return seen;
}

test("no module of the page imports itself through others", async () => {
  const imports = await graph();
  assert.ok(imports.has("src/table/state.ts") && imports.has("src/social.ts"), `the bundle's modules: ${[...imports.keys()]}`);
  const cycles = [...imports.keys()].filter((path) => reach(imports, path).has(path));
  assert.deepEqual(cycles, [], "modules in an import cycle");
});

test("the table's state imports only the capture rule and the generated messages", async () => {
  const imports = await graph();
  const pure = (path: string) => path === "src/capture.ts" || path.startsWith("src/gen/");
  const drawn = [...reach(imports, "src/table/state.ts")].filter((path) => !pure(path));
  assert.deepEqual(drawn, [], "modules state.ts reaches");
});
