// bench/provenance — provenance figures. Each part is one function; main() runs them all.
//  Hook latency: one `ratchet hook user-prompt` process per prompt (Claude Code's hook JSON on
//  stdin, recorded into a workspace that already holds 5,000 utterances) divided by a bare
//  `node -e 0`, both medians over the same number of alternating runs. The hook runs on every
//  prompt a user types; target ≤ 2 (it must not be felt).
import { execFileSync } from "node:child_process";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { BIN, median, ROOT, report, tempDir, timeProcess } from "./lib.mjs";

const quick = process.env.BENCH_QUICK === "1";

export async function benchHookLatency() {
  const ROUNDS = quick ? 10 : 40;
  const PREFILL = 5000;
  const TARGET = 2;
  const ws = tempDir("prov-hook");
  const repo = join(ws, "shop");
  mkdirSync(repo);
  execFileSync("git", ["init", "-q", repo]);
  const run = (args, input) =>
    execFileSync(process.execPath, [BIN, ...args], { cwd: ws, input, encoding: "utf8" });
  run(["init"]);
  run(["project", "add", "shop", "--repo", repo]);
  execFileSync(process.execPath, [BIN, "plan", "publish", "-"], {
    cwd: repo,
    input: JSON.stringify({ goal: "bench plan", steps: ["a"] }),
    encoding: "utf8",
  });
  const dbPath = join(ws, ".ratchet", "ratchet.db");
  {
    const { default: Database } = await import("better-sqlite3");
    const { SqliteWordStore } = await import(join(ROOT, "dist", "provenance", "words", "store.js"));
    const db = new Database(dbPath);
    const words = new SqliteWordStore(db);
    words.write(() => {
      for (let i = 0; i < PREFILL; i++)
        words.recordUtterance({
          text: `earlier prompt ${i}: keep the weekly grain in load_orders`,
          occurred_at: new Date(Date.UTC(2026, 10, 1) + i * 60_000).toISOString(),
          origin: "hook",
          project: "shop",
          session_id: `s${i % 7}`,
        });
    });
    db.close();
  }
  const payload = (prompt) =>
    JSON.stringify({
      session_id: "bench-s",
      transcript_path: "/tmp/t.jsonl",
      cwd: repo,
      hook_event_name: "UserPromptSubmit",
      prompt,
    });
  const env = { ...process.env, RATCHET_HOOK_ERRORS: join(ws, "hook-errors.log") };
  delete env.RATCHET_DB;
  delete env.RATCHET_HEADLESS;
  delete env.PROVLEDGER_HEADLESS;
  const hook = [];
  const skipped = [];
  const bare = [];
  for (let i = 0; i < ROUNDS; i++) {
    bare.push(timeProcess(["-e", "0"]));
    hook.push(
      timeProcess([BIN, "hook", "user-prompt"], {
        cwd: repo,
        env,
        input: payload(`Keep fiscal weeks, round ${i}.`),
      }),
    );
    skipped.push(timeProcess([BIN, "hook", "user-prompt"], { cwd: repo, env, input: payload("/compact") }));
  }
  const h = median(hook);
  const b = median(bare);
  report("provenance-hook", {
    rounds: ROUNDS,
    "utterances already stored": PREFILL,
    "node -e 0, median ms": b,
    "hook (prompt recorded), median ms": h,
    "hook (slash command skipped), median ms": median(skipped),
    "hook overhead over node -e 0, ms": h - b,
    "ratio hook ÷ node -e 0": h / b,
    "target ratio": `≤ ${TARGET}`,
  });
  return h / b;
}

async function main() {
  await benchHookLatency();
}

await main();
