// Bundles the CLI so a `ratchet` process loads a few files instead of dozens: module resolution
// dominates the start-up of a short CLI write. The entry chunk (dist/bundle/ratchet.mjs) holds
// the ledger's write path; commands loaded with import() (runs, bridge, review, runner) become
// separate chunks read only when used. Native and heavy lazily-used packages stay external.
import { rmSync } from "node:fs";
import { build } from "rolldown";

rmSync("dist/bundle", { recursive: true, force: true });
await build({
  input: { ratchet: "dist/cli/main.js" },
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
  ],
  logLevel: "warn",
  output: {
    dir: "dist/bundle",
    format: "esm",
    sourcemap: false,
    entryFileNames: "[name].mjs",
    chunkFileNames: "[name]-[hash].mjs",
  },
});
