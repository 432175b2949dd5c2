// npm run bench [-- name…]: runs each benchmark in bench/ (or the named ones) in its own process.
import { spawnSync } from "node:child_process";
import { readdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const all = readdirSync(here)
  .filter((f) => f.endsWith(".mjs") && !["run.mjs", "lib.mjs"].includes(f))
  .map((f) => f.replace(/\.mjs$/, ""));
const wanted = process.argv.slice(2).filter((a) => !a.startsWith("-"));
const names = wanted.length ? wanted : all;
let failed = 0;
for (const name of names) {
  if (!all.includes(name)) {
    console.error(`bench: no benchmark named ${name} (have: ${all.join(", ")})`);
    process.exit(2);
  }
  console.log(`\n# bench/${name}`);
  const r = spawnSync(process.execPath, [join(here, `${name}.mjs`)], { stdio: "inherit" });
  if (r.status !== 0) failed++;
}
process.exit(failed ? 1 : 0);
