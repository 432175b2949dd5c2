/**
 * Progress of `ratchet run`: the printer directly (fake clock), then the built CLI on a real
 * pseudo-terminal (`script` from util-linux), piped, with NO_COLOR, `--json` and `--quiet`.
 */
import { spawnSync } from "node:child_process";
import { cpSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  assertBuilt,
  BIN,
  childEnv,
  makeWorkspace,
  ROOT,
  type TestWorkspace,
} from "../../test/helpers/cli.js";
import { LIVE_TAIL_LINES, progressMode, progressPrinter } from "./run-progress.js";

const SECRET = "tok-Zq81-not-for-logs-4242";
const PRINTER = `import os
for i in range(3):
    print(f"working {i}", flush=True)
with open(os.path.join(os.environ["STEP_OUTPUT_DIR"], "done.json"), "w") as f:
    f.write("{}")
`;

describe("progressPrinter", () => {
  it("prints start, output lines (split chunks joined), end with elapsed time; bounded tail", () => {
    const lines: string[] = [];
    let t = 0;
    const p = progressPrinter(
      { live: true, colour: false },
      (l) => lines.push(l),
      () => t,
    );
    p({ kind: "step_started", step_id: "s", mode: "learn_code" });
    p({ kind: "step_output", step_id: "s", stream: "stdout", text: "hel" });
    p({ kind: "step_output", step_id: "s", stream: "stdout", text: "lo\nwor" });
    for (let i = 0; i < LIVE_TAIL_LINES + 5; i++)
      p({ kind: "step_output", step_id: "s", stream: "stdout", text: `\nline ${i}` });
    t = 2500;
    p({
      kind: "step_finished",
      step: {
        step_id: "s",
        ledger_step_id: "x",
        mode: "learn_code",
        fast_path: true,
        outcome: "passed",
        exit_code: 0,
        duration_ms: 2500,
        tokens: 0,
        error: null,
        write_protection: "none",
        metadata_recorded: true,
        output_dir: null,
      },
    });
    expect(lines[0]).toBe("▶ s (learn_code) started");
    expect(lines[1]).toBe("  │ hello");
    expect(lines[2]).toBe("  │ wor");
    expect(lines.filter((l) => l.startsWith("  │ ") && !l.includes("more line"))).toHaveLength(
      LIVE_TAIL_LINES,
    );
    expect(lines.at(-2)).toBe("  │ … 7 more line(s) (ratchet plan show --full)");
    expect(lines.at(-1)).toBe("✓ s passed, exit 0, fast path in 2.5 s");
  });

  it("chooses the mode from the terminal and the environment", () => {
    expect(progressMode(true, {})).toEqual({ live: true, colour: true });
    expect(progressMode(true, { NO_COLOR: "1" })).toEqual({ live: true, colour: false });
    expect(progressMode(false, {})).toEqual({ live: false, colour: false });
    expect(progressMode(false, { RATCHET_PROGRESS: "tty" })).toEqual({ live: true, colour: true });
    expect(progressMode(true, { RATCHET_PROGRESS: "plain" })).toEqual({ live: false, colour: false });
  });
});

describe("ratchet run progress (built CLI)", () => {
  let ws: TestWorkspace;
  let wf: string;
  beforeAll(async () => {
    assertBuilt();
    ws = await makeWorkspace("ratchet-progress-");
    wf = join(ws.dir, "workflows", "slow");
    cpSync(join(ROOT, "test", "fixtures", "workflows", "slow"), wf, { recursive: true });
    writeFileSync(join(wf, "learnings", "sleeper", "main.py"), PRINTER);
  });
  afterAll(() => ws.remove());

  /** Runs `ratchet run …` on a pseudo-terminal; returns what the terminal showed. */
  const onTty = (args: string[], env: Record<string, string | undefined> = {}) => {
    const cmd = [process.execPath, BIN, "run", wf, ...args].map((a) => `'${a}'`).join(" ");
    const r = spawnSync("script", ["-q", "-e", "-c", cmd, "/dev/null"], {
      cwd: ws.dir,
      env: childEnv({ TERM: "xterm", ...env }),
      encoding: "utf8",
    });
    return { status: r.status, out: r.stdout.replaceAll("\r\n", "\n") };
  };
  const ANSI = /\x1b\[[0-9;]*m/;

  it("on a terminal: each step's start, its output live, its end with elapsed time, in colour", () => {
    const r = onTty([], { NO_COLOR: undefined });
    expect(r.status).toBe(0);
    expect(r.out).toMatch(ANSI);
    const plain = r.out.replace(new RegExp(ANSI.source, "g"), "");
    expect(plain).toContain("▶ sleeper (learn_code) started");
    for (const i of [0, 1, 2]) expect(plain).toContain(`  │ working ${i}`);
    expect(plain).toMatch(/✓ sleeper passed, exit 0, fast path in \d+\.\d s/);
    expect(plain.indexOf("▶ sleeper")).toBeLessThan(plain.indexOf("working 0"));
    expect(plain.indexOf("working 2")).toBeLessThan(plain.indexOf("✓ sleeper"));
  });

  it("NO_COLOR keeps the progress and drops the colour; --json and --quiet print no progress", () => {
    const noColour = onTty([], { NO_COLOR: "1" });
    expect(noColour.out).not.toMatch(ANSI);
    expect(noColour.out).toContain("  │ working 1");
    const json = onTty(["--json"]);
    expect(JSON.parse(json.out)).toMatchObject({ status: "passed" });
    const quiet = onTty(["--quiet"]);
    expect(quiet.status).toBe(0);
    expect(quiet.out.trim()).toBe("");
  });

  it("never shows a secret, even one the script prints in two pieces across writes", () => {
    const leaky = join(ws.dir, "workflows", "leaky");
    cpSync(join(ROOT, "test", "fixtures", "workflows", "slow"), leaky, { recursive: true });
    writeFileSync(
      join(leaky, "workflow.yaml"),
      readFileSync(join(leaky, "workflow.yaml"), "utf8").replace("steps:", "secrets:\n  - api_token\nsteps:"),
    );
    writeFileSync(
      join(leaky, "learnings", "sleeper", "main.py"),
      `import os, sys, time
tok = os.environ["SECRET_API_TOKEN"]
sys.stdout.write("token: " + tok[:9]); sys.stdout.flush(); time.sleep(0.3)
sys.stdout.write(tok[9:] + " end\\n"); sys.stdout.flush()
with open(os.path.join(os.environ["STEP_OUTPUT_DIR"], "done.json"), "w") as f:
    f.write("{}")
`,
    );
    const cmd = [process.execPath, BIN, "run", leaky].map((a) => `'${a}'`).join(" ");
    const r = spawnSync("script", ["-q", "-e", "-c", cmd, "/dev/null"], {
      cwd: ws.dir,
      env: childEnv({ TERM: "xterm", NO_COLOR: "1", SECRET_API_TOKEN: SECRET }),
      encoding: "utf8",
    });
    expect(r.status, r.stdout).toBe(0);
    expect(r.stdout).toContain("  │ token: ");
    expect(r.stdout).toContain(" end");
    expect(r.stdout).not.toContain(SECRET);
    expect(r.stdout).not.toContain(SECRET.slice(9));
  });

  it("piped: the per-step summary lines, no live output, no colour", () => {
    const r = spawnSync(process.execPath, [BIN, "run", wf], {
      cwd: ws.dir,
      env: childEnv(),
      encoding: "utf8",
    });
    expect(r.status).toBe(0);
    expect(r.stdout).toContain("  ✓ sleeper  mode=learn_code  fast_path=yes");
    expect(r.stdout).not.toContain("▶");
    expect(r.stdout).not.toContain("working 0");
    expect(r.stdout).not.toMatch(ANSI);
  });
});
