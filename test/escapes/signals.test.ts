/**
 * Escape class: a script signals processes outside its step (issue 13 item 9). A JS script ran
 * `process.kill(process.ppid, "SIGKILL")` and killed the server. Learned Python and JS scripts
 * signal every process up their parent chain (the launcher, Ratchet, `ratchet serve`) and a
 * bystander process whose pid they are given; every signal must fail and everything must live on.
 *
 * Enforced by `ratchet-confine` (Landlock ABI 6+ signal scope) for both languages, JS included
 * since it runs under the launcher too.
 */
import { spawn } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { isGone } from "../../src/testing/processes.js";
import { assertBuilt, startRatchet, type TestWorkspace } from "../helpers/cli.js";
import { attackWorkflow, found, runJson, workspace } from "./door-kit.js";

vi.setConfig({ testTimeout: 120_000, hookTimeout: 60_000 });

let ws: TestWorkspace;
beforeAll(async () => {
  assertBuilt();
  ws = await workspace("ratchet-esc-sig-");
});
afterAll(() => ws?.remove());

const PY = `import json
import os
import signal


def parent_of(pid):
    try:
        with open("/".join(["", "proc", str(pid), "stat"])) as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return 0


targets = []
pid = os.getppid()
while pid > 1 and len(targets) < 6:
    targets.append(pid)
    pid = parent_of(pid)
targets.append(int(os.environ["VAR_BYSTANDER"]))
res = {}
for t in targets:
    try:
        os.kill(t, signal.SIGKILL)
        res[str(t)] = "killed"
    except OSError as e:
        res[str(t)] = "refused: " + (e.strerror or "")
with open(os.path.join(os.environ["STEP_OUTPUT_DIR"], "found.json"), "w") as f:
    json.dump(res, f)
`;

const JS = `import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

function parentOf(pid) {
  try {
    const stat = readFileSync(["", "proc", String(pid), "stat"].join("/"), "utf8");
    return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
  } catch {
    return 0;
  }
}
const targets = [];
for (let pid = process.ppid; pid > 1 && targets.length < 6; pid = parentOf(pid)) targets.push(pid);
targets.push(Number(process.env.VAR_BYSTANDER));
const res = {};
for (const t of targets) {
  try {
    process.kill(t, "SIGKILL");
    res[t] = "killed";
  } catch (e) {
    res[t] = "refused: " + e.code;
  }
}
writeFileSync(join(process.env.STEP_OUTPUT_DIR, "found.json"), JSON.stringify(res));
`;

/** A process that is neither Ratchet nor the script's: it must survive. */
function bystander() {
  const child = spawn("sleep", ["300"], { stdio: "ignore" });
  return { pid: child.pid as number, stop: () => child.kill("SIGKILL") };
}

describe("signals", () => {
  it("Python and JS scripts cannot kill Ratchet, the launcher or another process", async () => {
    const b = bystander();
    try {
      const wf = attackWorkflow(
        ws,
        "sig",
        [
          { id: "py", file: "main.py", code: PY },
          { id: "js", file: "main.mjs", code: JS },
        ],
        ["bystander"],
      );
      const r = await ws.run(["run", wf, "--json", "--var", `bystander=${b.pid}`]);
      // Ratchet lived to report the whole run.
      expect(r.signal, r.stderr).toBeNull();
      const run = runJson(r);
      expect(
        run.steps.map((s) => s.outcome),
        r.stderr,
      ).toEqual(["passed", "passed"]);
      for (const step of ["py", "js"]) {
        const got = found<Record<string, string>>(wf, run.run_id, step);
        expect(Object.keys(got).length).toBeGreaterThanOrEqual(2);
        for (const [pid, outcome] of Object.entries(got))
          expect(outcome, `${step} → ${pid}`).toMatch(/^refused/);
      }
      expect(isGone(b.pid)).toBe(false);
    } finally {
      b.stop();
    }
  });

  it("a script started by POST /api/runs cannot kill `ratchet serve`", async () => {
    const token = "signals-server-token-0123456789";
    const b = bystander();
    const wf = attackWorkflow(ws, "sig-serve", [{ id: "js", file: "main.mjs", code: JS }], ["bystander"]);
    const server = startRatchet(["serve", "--port", "0", "--quiet", "--token", token], {
      cwd: ws.dir,
      timeoutMs: 120_000,
    });
    try {
      const deadline = Date.now() + 30_000;
      while (!server.stdoutSoFar().includes("\n")) {
        if (Date.now() > deadline) throw new Error(`serve did not start: ${server.stderrSoFar()}`);
        await new Promise((res) => setTimeout(res, 50));
      }
      const url = (JSON.parse(server.stdoutSoFar().split("\n")[0] as string) as { url: string }).url;
      const started = await fetch(`${url}/api/runs`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body: JSON.stringify({ workflow: wf, vars: { bystander: String(b.pid) } }),
      });
      expect(started.status, await started.clone().text()).toBe(202);
      const { run_id: runId } = (await started.json()) as { run_id: string };
      let status = "running";
      for (let i = 0; i < 600 && (status === "running" || status === "pending"); i++) {
        await new Promise((res) => setTimeout(res, 100));
        const got = (await (await fetch(`${url}/api/runs/${runId}`)).json()) as { run: { status: string } };
        status = got.run.status;
      }
      expect(status).toBe("passed");
      expect(server.child.exitCode).toBeNull();
      expect(server.child.signalCode).toBeNull();
      const got = found<Record<string, string>>(wf, runId, "js");
      for (const [pid, outcome] of Object.entries(got)) expect(outcome, `js → ${pid}`).toMatch(/^refused/);
      expect(isGone(b.pid)).toBe(false);
    } finally {
      b.stop();
      server.child.kill("SIGTERM");
      await server.done.catch(() => undefined);
    }
  });
});
