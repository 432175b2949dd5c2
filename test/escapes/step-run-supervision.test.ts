/**
 * Escape class: a `step run` command outlives Ratchet (issue 13 item 11). After `kill -9` of
 * `ratchet step run`, a command that left its process group and ignores SIGTERM kept writing past
 * its `timeout_seconds`. And `kill -9` of `ratchet run` left `/tmp/ratchet-step-*` behind.
 *
 * Enforced by `ratchet-confine` v2 (`--supervise-only --timeout-ms`: the supervisor, a subreaper,
 * ends the command at its time limit whether or not Ratchet lives; `--cleanup` removes a script's
 * TMPDIR when Ratchet dies) and by the sweep of `ratchet-step-<dead pid>-*` on the next run. The
 * supervisor half fails against the v1 binary.
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { isGone, waitGone } from "../../src/testing/processes.js";
import { assertBuilt, publish, sleep, startRatchet, type TestWorkspace, waitFor } from "../helpers/cli.js";
import { runsOf } from "../helpers/run-home.js";
import { attackWorkflow, workspace } from "./door-kit.js";

vi.setConfig({ testTimeout: 120_000, hookTimeout: 60_000 });

let ws: TestWorkspace;
const strays: number[] = [];
beforeAll(async () => {
  assertBuilt();
  ws = await workspace("ratchet-esc-steprun-");
});
afterAll(() => {
  for (const pid of strays) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // gone
    }
  }
  ws?.remove();
});

const stepDirsOf = (pid: number) => readdirSync(tmpdir()).filter((n) => n.startsWith(`ratchet-step-${pid}-`));

describe("step run supervision", () => {
  it("kill -9 of `ratchet step run`: the command still ends at its time limit, nothing writes after", async () => {
    const p = await publish(ws, { goal: "supervised", steps: [{ title: "run", type: "COMMAND" }] });
    const stepId = p.step_ids[0] as string;
    const beat = join(ws.dir, "heartbeat.txt");
    const pidFile = join(ws.dir, "writer.pid");
    // The writer leaves the process group (setsid) and ignores SIGTERM: only a supervisor that
    // tracks every descendant can end it.
    const command = [
      `setsid bash -c 'trap "" TERM; while :; do echo beat >> ${beat}; sleep 0.1; done' &`,
      `echo $! > ${pidFile}`,
      `echo $$ > ${pidFile}.group`,
      "sleep 600",
    ].join("\n");
    const cli = startRatchet(["step", "run", "-"], {
      cwd: ws.dir,
      input: JSON.stringify({ step_id: stepId, type: "COMMAND", command, timeout_seconds: 2 }),
    });
    await waitFor(
      () => existsSync(beat) && existsSync(pidFile) && readFileSync(pidFile, "utf8").trim() !== "",
      "the writer to start",
    );
    const writer = Number(readFileSync(pidFile, "utf8").trim());
    strays.push(writer);
    await waitFor(() => existsSync(`${pidFile}.group`), "the command's pid");
    strays.push(-Number(readFileSync(`${pidFile}.group`, "utf8").trim()));
    cli.child.kill("SIGKILL");
    await cli.done;
    // Time limit (2 s) + kill grace (2 s), generously: the supervisor must have ended the writer.
    expect(await waitGone(writer, 20_000)).toBe(true);
    const size = statSync(beat).size;
    await sleep(500);
    expect(statSync(beat).size).toBe(size);
  });

  it("kill -9 of `ratchet run` leaves no /tmp/ratchet-step-* behind once the launcher notices", async () => {
    const wf = attackWorkflow(ws, "slow-tmp", [
      {
        id: "sleeper",
        file: "main.py",
        code: `import os\nimport time\n\nwith open(os.path.join(os.environ["STEP_OUTPUT_DIR"], "started.txt"), "w") as f:\n    f.write("started")\ntime.sleep(60)\n`,
        outputs: ["started.txt"],
      },
    ]);
    const cli = startRatchet(["run", wf, "--json"], { cwd: ws.dir });
    const pid = cli.child.pid as number;
    await waitFor(() => {
      const exec = runsOf(wf);
      return (
        existsSync(exec) && readdirSync(exec).some((d) => existsSync(join(exec, d, "sleeper", "started.txt")))
      );
    }, "the sleeper to start");
    const dirs = stepDirsOf(pid);
    cli.child.kill("SIGKILL");
    await cli.done;
    if (dirs.length === 0) return; // no Landlock here: no private TMPDIR was made
    // The launcher removes it (--cleanup) when its parent dies, without any later run.
    await waitFor(() => stepDirsOf(pid).length === 0, "the launcher to clean up", 20_000).catch(
      () => undefined,
    );
    expect(stepDirsOf(pid)).toEqual([]);
  });

  it("the next `ratchet run` sweeps ratchet-step-<dead pid>-* folders", async () => {
    const wf = attackWorkflow(
      ws,
      "slow-sweep",
      [
        {
          id: "sleeper",
          file: "main.py",
          code: `import os\nimport time\n\nwith open(os.path.join(os.environ["STEP_OUTPUT_DIR"], "started.txt"), "w") as f:\n    f.write("started")\ntime.sleep(float(os.environ["VAR_SLEEP"]))\n`,
          outputs: ["started.txt"],
        },
      ],
      ["sleep"],
    );
    const cli = startRatchet(["run", wf, "--json", "--var", "sleep=60"], { cwd: ws.dir });
    const pid = cli.child.pid as number;
    await waitFor(() => {
      const exec = runsOf(wf);
      return (
        existsSync(exec) && readdirSync(exec).some((d) => existsSync(join(exec, d, "sleeper", "started.txt")))
      );
    }, "the sleeper to start");
    const hadDirs = stepDirsOf(pid).length > 0;
    cli.child.kill("SIGKILL");
    await cli.done;
    expect(isGone(pid)).toBe(true);
    const next = await ws.run(["run", wf, "--json", "--var", "sleep=0"]);
    expect(next.status, next.stderr).toBe(0);
    if (hadDirs) expect(stepDirsOf(pid)).toEqual([]);
  });
});
