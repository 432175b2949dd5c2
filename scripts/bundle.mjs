// Bundles the CLI so a `ratchet` process loads a few files instead of dozens: module resolution
// dominates the start-up of a short CLI write. The entry chunk (dist/bundle/ratchet.mjs) holds
// the ledger's write path; commands loaded with import() (runs, bridge, review, runner) become
// separate chunks read only when used. Native and heavy lazily-used packages stay external.
import { readdirSync, renameSync, rmSync } from "node:fs";
import { build } from "rolldown";

// Built beside the live bundle and swapped in, so a `ratchet` already running keeps loading
// complete chunks while a rebuild happens.
const next = `dist/bundle.next-${process.pid}`;
const old = `dist/bundle.old-${process.pid}`;
rmSync(next, { recursive: true, force: true });
// The previous build was kept for processes that were still loading its chunks; drop it now.
for (const name of readdirSync("dist")) {
  if (name.startsWith("bundle.old-")) rmSync(`dist/${name}`, { recursive: true, force: true });
}
await build({
  input: { ratchet: "dist/cli/entry.js" },
  platform: "node",
  external: [
    "better-sqlite3",
    "yaml",
    "web-tree-sitter",
    /^node:/,
    "@hono/node-server",
    /^@modelcontextprotocol\/sdk(\/|$)/,
    /^ai(\/|$)/,
    /^@ai-sdk\//,
    /^@pydantic\/monty(\/|$)/,
  ],
  logLevel: "warn",
  output: {
    dir: next,
    format: "esm",
    sourcemap: false,
    entryFileNames: "[name].mjs",
    chunkFileNames: "[name]-[hash].mjs",
  },
});
try {
  renameSync("dist/bundle", old);
} catch {
  // first build: nothing to move away
}
renameSync(next, "dist/bundle");
