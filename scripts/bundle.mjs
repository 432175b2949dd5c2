// Bundles the CLI into one ES module (dist/ratchet.mjs) so a `ratchet` process loads one file
// instead of dozens: module resolution dominates the start-up of a short CLI write. Native and
// lazily-loaded packages stay external.
import { build } from "rolldown";

await build({
  input: "dist/cli/main.js",
  platform: "node",
  external: ["better-sqlite3", "yaml", /^node:/],
  logLevel: "warn",
  output: { file: "dist/ratchet.mjs", format: "esm", sourcemap: false },
});
