/**
 * Cancelling a run: `ratchet runs cancel` of a run executing in another `ratchet run` process (a
 * real learned step: python that starts a `sleep` child), of a run whose owner was killed, and
 * `POST /api/runs/{id}/cancel` of a run the server executes. After a cancel the run row is
 * `cancelled`, the process that ran it exits 8, and no process of the step is left — found by
 * scanning /proc for the step's unique command lines, so a pid namespace of the sandbox does not
 * hide them.
 */
import { cpSync, existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import {
  assertBuilt,
  makeWorkspace,
  query,
  ROOT,
  startRatchet,
  type TestWorkspace,
  waitFor,
} from "../helpers/cli.js";
import { runsOf } from "../helpers/run-home.js";
import { makeServerFixture } from "../helpers/server.js";

const workspaces: TestWorkspace[] = [];
beforeAll(() => assertBuilt());
afterAll(() => {
  for (const ws of workspaces) ws.remove();
});

/** The python step: writes started.txt, starts `sleep <VAR_SLEEP>` as a child, waits for it. */
const SLEEPER = `import os, subprocess
out = os.environ["STEP_OUTPUT_DIR"]
child = subprocess.Popen(["sleep", os.environ["VAR_SLEEP"]])
with open(os.path.join(out, "started.txt"), "w") as f:
    f.write("started")
child.wait()
with open(os.path.join(out, "done.json"), "w") as f:
    f.write("{}")
`;

function slowWorkflow(dir: string): string {
  const wf = join(dir, "workflows", "slow");
  cpSync(join(ROOT, "test", "fixtures", "workflows", "slow"), wf, { recursive: true });
  writeFileSync(join(wf, "learnings", "sleeper", "main.py"), SLEEPER);
  return wf;
}

/** Live (not zombie) processes whose command line contains `needle`. */
function processesWith(needle: string): number[] {
  const out: number[] = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    try {
      const cmd = readFileSync(`/proc/${name}/cmdline`, "utf8").replaceAll("\0", " ");
      const stat = readFileSync(`/proc/${name}/stat`, "utf8");
      const state = stat.slice(stat.lastIndexOf(")") + 2)[0];
      if (cmd.includes(needle) && state !== "Z") out.push(Number(name));
    } catch {
      // gone while reading
    }
  }
  return out;
}

const started = (wf: string) => {
  const exec = runsOf(wf);
  return (
    existsSync(exec) && readdirSync(exec).some((d) => existsSync(join(exec, d, "sleeper", "started.txt")))
  );
};

/** A sleep length no other process on the machine uses, so its `sleep` child can be found. */
const uniqueSleep = () =>
  `${600 + Math.floor(Math.random() * 300)}.${process.pid % 1000}${Date.now() % 1000}`;

async function workspace(): Promise<TestWorkspace> {
  const ws = await makeWorkspace("ratchet-e2e-cancel-");
  workspaces.push(ws);
  return ws;
}

describe("ratchet runs cancel", () => {
  test("a run executing in another process ends cancelled, exit 8, its script and sleep child gone", async () => {
    const ws = await workspace();
    const wf = slowWorkflow(ws.dir);
    const secs = uniqueSleep();
    const running = startRatchet(["run", wf, "--var", `sleep=${secs}`, "--json"], { cwd: ws.dir });
    await waitFor(() => started(wf), "the sleeper to start");
    await waitFor(() => processesWith(`sleep ${secs}`).length === 1, "its sleep child");
    const runId = query<{ run_id: string }>(
      ws,
      "SELECT run_id FROM workflow_runs WHERE status = 'running'",
    )[0]!.run_id;

    const cancel = await ws.run(["runs", "cancel", runId, "--json"]);
    expect(cancel.status, cancel.stderr).toBe(0);
    expect(JSON.parse(cancel.stdout)).toEqual({
      ok: true,
      op: "run-cancel",
      run_id: runId,
      status: "cancelled",
      how: "requested",
    });
    const done = await running.done;
    expect(done.status).toBe(8);
    const report = JSON.parse(done.stdout) as { status: string; steps: { outcome: string }[] };
    expect(report.status).toBe("cancelled");
    expect(processesWith(`sleep ${secs}`)).toEqual([]);
    expect(processesWith(join(runsOf(wf), runId))).toEqual([]);
    expect(existsSync(join(runsOf(wf), runId, "sleeper", "done.json"))).toBe(false);

    const row = query<{ status: string; error: string }>(
      ws,
      "SELECT status, error FROM workflow_runs WHERE run_id = ?",
      runId,
    )[0];
    expect(row?.status).toBe("cancelled");
    const types = query<{ type: string }>(
      ws,
      "SELECT type FROM events WHERE entity_kind = 'run' AND entity_id = ? ORDER BY id",
      runId,
    ).map((e) => e.type);
    expect(types).toEqual(expect.arrayContaining(["run.cancel_requested", "run.cancelled"]));
    // Nothing of the plan is left open.
    expect(
      query<{ n: number }>(
        ws,
        "SELECT COUNT(*) AS n FROM steps s JOIN workflow_runs r ON r.plan_id = s.plan_id WHERE r.run_id = ? AND s.status IN ('PENDING','IN_PROGRESS') AND s.role = 'regular'",
        runId,
      )[0]?.n,
    ).toBe(0);

    // Cancelling it again, or an unknown run, is refused.
    const again = await ws.run(["runs", "cancel", runId]);
    expect(again.status).toBe(4);
    expect(again.stderr).toContain(`run ${runId} is cancelled, not running`);
    expect((await ws.run(["runs", "cancel", "run-nope"])).status).toBe(3);
    expect((await ws.run(["runs", "list", "--status", "cancelled", "--json"])).stdout).toContain(runId);
  });

  test("a run whose owner process was killed is marked cancelled directly", async () => {
    const ws = await workspace();
    const wf = slowWorkflow(ws.dir);
    const secs = uniqueSleep();
    const running = startRatchet(["run", wf, "--var", `sleep=${secs}`], { cwd: ws.dir });
    await waitFor(() => started(wf), "the sleeper to start");
    running.child.kill("SIGKILL");
    await running.done;
    const runId = query<{ run_id: string }>(
      ws,
      "SELECT run_id FROM workflow_runs WHERE status = 'running'",
    )[0]!.run_id;
    const cancel = await ws.run(["runs", "cancel", runId, "--json"]);
    expect(cancel.status, cancel.stderr).toBe(0);
    expect(JSON.parse(cancel.stdout)).toMatchObject({ status: "cancelled", how: "direct" });
    const plan = query<{ status: string }>(
      ws,
      "SELECT p.status FROM plans p JOIN workflow_runs r ON r.plan_id = p.plan_id WHERE r.run_id = ?",
      runId,
    )[0];
    expect(plan?.status).toBe("FAILED");
    // The orphaned script is the killed owner's business (its supervisor); clean up if it outlived it.
    for (const pid of processesWith(`sleep ${secs}`)) process.kill(pid, "SIGKILL");
  });
});

describe("POST /api/runs/{id}/cancel", () => {
  test("cancels a run the server executes; the token is required; unknown and finished runs are refused", async () => {
    const fx = makeServerFixture();
    try {
      const wf = slowWorkflow(fx.dir);
      const secs = uniqueSleep();
      const res = await fx.req("POST", "/api/runs", { body: { workflow: wf, vars: { sleep: secs } } });
      expect(res.status).toBe(202);
      const { run_id } = (await res.json()) as { run_id: string };
      await waitFor(() => processesWith(`sleep ${secs}`).length === 1, "its sleep child");

      expect((await fx.req("POST", `/api/runs/${run_id}/cancel`, { token: null })).status).toBe(401);
      expect(
        (await fx.req("POST", `/api/runs/${run_id}/cancel`, { headers: { host: "evil.example" } })).status,
      ).toBe(421);
      const ok = await fx.req("POST", `/api/runs/${run_id}/cancel`);
      expect(ok.status).toBe(200);
      expect(await ok.json()).toMatchObject({ ok: true, op: "run-cancel", run_id, status: "cancelled" });
      await waitFor(() => fx.ctx.active.size === 0, "the run's bookkeeping");
      expect(processesWith(`sleep ${secs}`)).toEqual([]);
      expect(fx.ctx.runs.getRun(run_id)?.status).toBe("cancelled");
      const again = await fx.req("POST", `/api/runs/${run_id}/cancel`);
      expect(again.status).toBe(409);
      expect((await fx.req("POST", "/api/runs/run-nope/cancel")).status).toBe(404);
    } finally {
      fx.dispose();
    }
  });
});
