/**
 * Attack class: crashes at the edges — a reader that goes away (issue 13, item 15).
 *
 * `ratchet events | head -1` and `ratchet plan publish … | head` died with an unhandled EPIPE
 * stack trace. Now a closed stdout/stderr is not an error: nothing more is written to it, no stack
 * trace, a write flow finishes its transaction and the process exits with the status it would
 * have had (docs/exit-codes.md); `events --follow` stops at once with 0.
 *
 * Real child processes of the built CLI. The pipe is made "closed early" deterministically: the
 * test closes its read end right after spawning, before the child has written anything, so every
 * write of the child fails with EPIPE. One case also goes through a real shell pipeline into
 * `head -c 1`.
 */
import { spawn, spawnSync } from "node:child_process";
import { closeSync, openSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import {
  assertBuilt,
  BIN,
  childEnv,
  eventsByType,
  makeWorkspace,
  publish,
  query,
  type TestWorkspace,
} from "../helpers/cli.js";

vi.setConfig({ testTimeout: 120_000, hookTimeout: 60_000 });

let ws: TestWorkspace;
beforeAll(async () => {
  assertBuilt();
  ws = await makeWorkspace("ratchet-escape-epipe-");
  for (let i = 0; i < 3; i++)
    await publish(ws, { goal: `seed ${i}`, steps: [{ title: "t", type: "THINKING" }] });
});
afterAll(() => ws?.remove());

interface Closed {
  status: number | null;
  signal: NodeJS.Signals | null;
  /** What reached the streams that were kept open. */
  stderr: string;
}

/** Runs `ratchet …args` with stdout (and optionally stderr) piped, and closes the read ends at once. */
function withClosedPipes(
  args: readonly string[],
  opts: { input?: string; closeStderr?: boolean } = {},
): Promise<Closed> {
  const child = spawn(process.execPath, [BIN, ...args], {
    cwd: ws.dir,
    env: childEnv(),
    stdio: ["pipe", "pipe", "pipe"],
  });
  child.stdout.destroy(); // the reader goes away before the child wrote anything
  let stderr = "";
  if (opts.closeStderr) child.stderr.destroy();
  else {
    child.stderr.setEncoding("utf8");
    child.stderr.on("data", (c: string) => {
      stderr += c;
    });
  }
  child.stdin.on("error", () => {});
  child.stdin.end(opts.input);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`ratchet ${args.join(" ")} did not finish with a closed stdout`));
    }, 60_000);
    child.on("close", (status, signal) => {
      clearTimeout(timer);
      resolve({ status, signal, stderr });
    });
  });
}

const NO_TRACE = /EPIPE|Unhandled 'error' event|internal error|\n\s+at /;

describe("escape: a closed pipe crashes the CLI", () => {
  it("`ratchet events` with its stdout closed: no stack trace, exit 0", async () => {
    const r = await withClosedPipes(["events"]);
    expect(r.stderr).not.toMatch(NO_TRACE);
    expect(r.signal).toBeNull();
    expect(r.status).toBe(0);
  });

  it("`ratchet events | head -1` in a real shell pipeline: one line, no stack trace, exit 0", () => {
    const r = spawnSync("bash", ["-c", `node "$BIN" events | head -1; echo "status=\${PIPESTATUS[0]}"`], {
      cwd: ws.dir,
      env: childEnv({ BIN }),
      encoding: "utf8",
    });
    expect(r.stderr).not.toMatch(NO_TRACE);
    const lines = r.stdout.trim().split("\n");
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(/^#1 /);
    expect(lines[1]).toBe("status=0");
  });

  it("`ratchet events --follow` stops at once when nobody reads, exit 0", async () => {
    const r = await withClosedPipes(["events", "--follow"]);
    expect(r.stderr).not.toMatch(NO_TRACE);
    expect(r.status).toBe(0);
  });

  it("`ratchet plan list` (text and --json) with stdout closed: no stack trace, exit 0", async () => {
    for (const args of [
      ["plan", "list"],
      ["plan", "list", "--json"],
    ]) {
      const r = await withClosedPipes(args);
      expect(r.stderr, args.join(" ")).not.toMatch(NO_TRACE);
      expect(r.status, args.join(" ")).toBe(0);
    }
  });

  it("`plan publish -` with stdout closed: the plan and its event are written, exit 0, no trace", async () => {
    const before = eventsByType(ws)["plan.published"] ?? 0;
    const goal = "published into a closed pipe";
    const r = await withClosedPipes(["plan", "publish", "-"], {
      input: JSON.stringify({ goal, steps: [{ title: "a", type: "THINKING" }] }),
    });
    expect(r.stderr).not.toMatch(NO_TRACE);
    expect(r.status).toBe(0);
    const plans = query<{ plan_id: string }>(ws, "SELECT plan_id FROM plans WHERE goal = ?", goal);
    expect(plans).toHaveLength(1);
    expect(eventsByType(ws)["plan.published"]).toBe(before + 1);
    const ev = query(
      ws,
      "SELECT * FROM events WHERE entity_id = ? AND type = 'plan.published'",
      plans[0]?.plan_id,
    );
    expect(ev).toHaveLength(1);
  });

  it("`plan publish … | head -c 1` in a real shell pipeline: plan and event row exist, exit 0", () => {
    const goal = "published into head";
    const plan = JSON.stringify({ goal, steps: [{ title: "a", type: "THINKING" }] });
    const r = spawnSync(
      "bash",
      ["-c", `node "$BIN" plan publish - | head -c 1 >/dev/null; echo "status=\${PIPESTATUS[0]}"`],
      { cwd: ws.dir, env: childEnv({ BIN }), input: plan, encoding: "utf8" },
    );
    expect(r.stderr).not.toMatch(NO_TRACE);
    expect(r.stdout.trim()).toBe("status=0");
    const plans = query<{ plan_id: string }>(ws, "SELECT plan_id FROM plans WHERE goal = ?", goal);
    expect(plans).toHaveLength(1);
    const ev = query(
      ws,
      "SELECT * FROM events WHERE entity_id = ? AND type = 'plan.published'",
      plans[0]?.plan_id,
    );
    expect(ev).toHaveLength(1);
  });

  it("a stdout that fails for another reason (/dev/full: ENOSPC) is not hidden: exit 1, reason on stderr, plan stored", async () => {
    const goal = "published onto a full disk";
    const full = openSync("/dev/full", "w");
    const child = spawn(process.execPath, [BIN, "plan", "publish", "-"], {
      cwd: ws.dir,
      env: childEnv(),
      stdio: ["pipe", full, "pipe"],
    });
    closeSync(full);
    let stderr = "";
    child.stderr?.setEncoding("utf8");
    child.stderr?.on("data", (c: string) => {
      stderr += c;
    });
    child.stdin?.end(JSON.stringify({ goal, steps: [{ title: "a", type: "THINKING" }] }));
    const status = await new Promise<number | null>((resolve) => child.on("close", (code) => resolve(code)));
    expect(stderr).toContain("cannot write to standard output");
    expect(stderr).toContain("ENOSPC");
    expect(stderr).not.toMatch(/Unhandled 'error' event|internal error|\n\s+at /);
    expect(status).toBe(1);
    expect(query(ws, "SELECT plan_id FROM plans WHERE goal = ?", goal)).toHaveLength(1);
  });

  it("`step run` with stdout AND stderr closed while its command prints: the step still completes", async () => {
    const p = await publish(ws, {
      goal: "run into a closed pipe",
      steps: [{ title: "loud", type: "COMMAND" }],
    });
    const step = p.step_ids[0] as string;
    const r = await withClosedPipes(["step", "run", "-"], {
      closeStderr: true,
      input: JSON.stringify({
        step_id: step,
        type: "COMMAND",
        command: "for i in $(seq 1 2000); do echo line $i of loud output; echo err $i >&2; done",
      }),
    });
    expect(r.signal).toBeNull();
    expect(r.status).toBe(0);
    const rows = query<{ status: string }>(ws, "SELECT status FROM steps WHERE step_id = ?", step);
    expect(rows[0]?.status).toBe("COMPLETED");
    const ev = query<{ type: string }>(ws, "SELECT type FROM events WHERE entity_id = ?", step).map(
      (e) => e.type,
    );
    expect(ev).toContain("step.completed");
  });
});
