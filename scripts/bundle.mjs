// Bundles the CLI so a `ratchet` process loads a few files instead of dozens: module resolution
// dominates the start-up of a short CLI write. The entry chunk (dist/bundle/ratchet.cjs) holds
// the ledger's write path; commands loaded with import() (runs, bridge, review, runner) become
// separate chunks read only when used. Native and heavy lazily-used packages stay external.
// The output is CommonJS: a CommonJS process never starts Node's ESM loader, and requiring a
// built-in such as node:crypto does not evaluate every export getter the way an ESM import of it
// does (bench/ledger (b): about 35 M fewer instructions per CLI write). Every external package
// used here ships a CommonJS entry.
import { copyFileSync, readdirSync, renameSync, rmSync } from "node:fs";
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
    "web-tree-sitter",
    // The node source loads the TypeScript compiler (~9 MB) only when it analyses a JS/TS file.
    "typescript",
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
    format: "cjs",
    sourcemap: false,
    entryFileNames: "[name].cjs",
    chunkFileNames: "[name]-[hash].cjs",
  },
});
// The prompt hook (`ratchet hook user-prompt`, run on every prompt a user types) gets a bundle of
// its own, built separately so it shares no chunk with the CLI: bin/ratchet.js loads only it.
await build({
  input: { hook: "dist/cli/hook-commands.js" },
  platform: "node",
  external: ["better-sqlite3", /^node:/],
  logLevel: "warn",
  // On PostgreSQL the hook imports its pg store lazily: a chunk of its own, never loaded for SQLite.
  output: {
    dir: next,
    format: "cjs",
    sourcemap: false,
    entryFileNames: "[name].cjs",
    chunkFileNames: "hook-[name]-[hash].cjs",
  },
});
// The workspace daemon (docs/daemon.md): its client is what `ratchet <write flow>` loads first, so
// it is built alone with Node built-ins only; the daemon is a bundle of its own (its file's
// identity is the build id a client and a daemon compare).
await build({
  input: { client: "dist/daemon/client.js" },
  platform: "node",
  external: [/^node:/],
  logLevel: "warn",
  output: { dir: next, format: "cjs", sourcemap: false, entryFileNames: "[name].cjs" },
});
await build({
  input: { daemon: "dist/daemon/run.js" },
  platform: "node",
  external: ["better-sqlite3", "yaml", "web-tree-sitter", "typescript", /^node:/],
  logLevel: "warn",
  output: {
    dir: next,
    format: "cjs",
    sourcemap: false,
    entryFileNames: "[name].cjs",
    chunkFileNames: "daemon-[name]-[hash].cjs",
  },
});
try {
  renameSync("dist/bundle", old);
} catch {
  // first build: nothing to move away
}
renameSync(next, "dist/bundle");

// The dashboard (web/): one module script and its static files in dist/web/, served by
// `ratchet serve`. Built into a side folder and swapped in like the CLI bundle.
const webNext = `dist/web.next-${process.pid}`;
rmSync(webNext, { recursive: true, force: true });
await build({
  input: { app: "web/src/main.ts" },
  platform: "browser",
  logLevel: "warn",
  output: { dir: webNext, format: "esm", sourcemap: false, entryFileNames: "[name].js", minify: true },
});
copyFileSync("web/index.html", `${webNext}/index.html`);
copyFileSync("web/app.css", `${webNext}/app.css`);
copyFileSync("web/favicon.svg", `${webNext}/favicon.svg`);
rmSync("dist/web", { recursive: true, force: true });
renameSync(webNext, "dist/web");
