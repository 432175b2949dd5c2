/**
 * Escape class: a confined script driving the workspace daemon. Landlock does not confine
 * `connect()` on a pathname Unix socket, so a learned script can reach `.ratchet/daemon.sock`; what
 * stops it is the daemon's key (`.ratchet/daemon.key`, mode 0600), which every request must carry
 * and which the script cannot read (`.ratchet/` is never a read root). The script here tries what a
 * determined one would: read the key, send a request with no key, with a guessed key of the right
 * length, and with the key file's name as the key; every attempt is refused and nothing is written.
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { assertBuilt, DAEMON_ON, publish, query, type TestWorkspace } from "../helpers/cli.js";
import { stopDaemon, waitForDaemon } from "../helpers/daemon.js";
import { attackWorkflow, found, runJson, workspace } from "./door-kit.js";

vi.setConfig({ testTimeout: 120_000, hookTimeout: 60_000 });

let ws: TestWorkspace;
beforeAll(async () => {
  assertBuilt();
  ws = await workspace("ratchet-esc-daemon-");
});
afterAll(async () => {
  if (ws) await stopDaemon(ws).catch(() => 0);
  ws?.remove();
});

/** Connects to the daemon socket in VAR_DIR and tries to have it publish a plan. */
const ATTACKER = `import base64
import json
import os
import socket

d = os.environ["VAR_DIR"]
out = {}
try:
    with open(os.path.join(d, "daemon.key")) as f:
        out["key_read"] = f.read()
except OSError as e:
    out["key_read"] = type(e).__name__


def attempt(key):
    s = socket.socket(socket.AF_UNIX)
    try:
        s.connect(os.path.join(d, "daemon.sock"))
    except OSError as e:
        return "connect: " + type(e).__name__
    f = s.makefile("rwb")
    hello = json.loads(f.readline())
    plan = json.dumps({"goal": "planted by a script", "steps": [{"title": "x", "type": "THINKING"}]})
    req = {"build": hello["build"], "args": ["plan", "publish", "-"], "cwd": os.environ["VAR_ROOT"],
           "env": {}, "pid": os.getpid(), "stdinIsTTY": False,
           "stdin": base64.b64encode(plan.encode()).decode()}
    if key is not None:
        req["key"] = key
    f.write((json.dumps(req) + "\\n").encode())
    f.flush()
    answer = f.readline().decode()
    s.close()
    return answer


out["no_key"] = attempt(None)
out["guessed"] = attempt("0" * 64)
out["name"] = attempt("daemon.key")
with open(os.path.join(os.environ["STEP_OUTPUT_DIR"], "found.json"), "w") as f:
    json.dump(out, f)
`;

describe("the workspace daemon and a confined script", () => {
  it("a script that reaches the daemon's socket cannot read its key, and every request without it is refused; nothing is written", async () => {
    // a served write with the daemon on starts it
    await publish(
      ws,
      { goal: "owner's plan", steps: [{ title: "a", type: "THINKING" }] },
      { env: DAEMON_ON },
    );
    await waitForDaemon(ws);
    expect(existsSync(join(ws.ratchetDir, "daemon.key"))).toBe(true);
    const plansBefore = query<{ n: number }>(ws, "SELECT COUNT(*) AS n FROM plans")[0]?.n;

    const wf = attackWorkflow(
      ws,
      "daemon-attack",
      [{ id: "attack", file: "main.py", code: ATTACKER }],
      ["DIR", "ROOT"],
    );
    const r = await ws.run([
      "run",
      join(wf, "workflow.yaml"),
      "--json",
      "--var",
      `DIR=${ws.ratchetDir}`,
      "--var",
      `ROOT=${ws.dir}`,
    ]);
    const run = runJson(r);
    expect(run.steps[0]?.outcome, r.stderr).toBe("passed");
    const seen = found<Record<string, string>>(wf, run.run_id, "attack");
    expect(seen.key_read).toMatch(/^(PermissionError|FileNotFoundError)$/);
    for (const k of ["no_key", "guessed", "name"]) {
      // reached the daemon (connect works: Landlock has no right for it) and was refused
      expect(JSON.parse(seen[k] as string), `${k}: ${seen[k]}`).toEqual({ refused: "key" });
    }
    // only the owner's plan and the run's own plan exist; nothing planted
    const plans = query<{ goal: string }>(ws, "SELECT goal FROM plans ORDER BY created_at");
    expect(plans.map((p) => p.goal)).not.toContain("planted by a script");
    expect(plans.length).toBe((plansBefore ?? 0) + 1);
  });
});
