/**
 * The pre-started interpreter of a run's first step is started before that step is prepared
 * (src/workflow/fast-path.ts `prestartForkserver`, called from runs.ts right after the run's
 * set-up), so before any step's folder exists and before any script was read. That shortcut must
 * not change which scripts the server runs nor what they may do: a first script that does not fit
 * the server still takes a plain start; a later script the early server does run is still held to
 * its own step's roots (it cannot write into the first step's folder, the run's folder or the runs
 * folder, nor read an output that is not its dependency); and with `RATCHET_NO_FORKSERVER=1`
 * nothing is started early (every step says so).
 */
import { statSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { assertBuilt, type TestWorkspace } from "../helpers/cli.js";
import { runsOf } from "../helpers/run-home.js";
import { attackWorkflow, found, probe, runJson, workspace } from "./door-kit.js";

vi.setConfig({ testTimeout: 120_000, hookTimeout: 60_000 });

let ws: TestWorkspace;
beforeAll(async () => {
  assertBuilt();
  ws = await workspace("ratchet-esc-prestart-");
});
afterAll(() => ws?.remove());

const canFork = (): boolean =>
  /landlock abi ([6-9]|\d\d)/.test(probe()) && /feature signals yes/.test(probe());

/** The first step: changes a file's mode, so it must not run in the server. */
const MISFIT = `import json
import os

out = os.environ["STEP_OUTPUT_DIR"]
path = os.path.join(out, "found.json")
with open(path, "w") as f:
    json.dump({"secret": "first-step-needle"}, f)
os.chmod(path, 0o640)
`;

/**
 * The second step (no dependency on the first): tries the folders the early server may write or
 * read. Every path comes from a variable or its own folder (the review refuses hand-built ones).
 */
const LATER = `import json
import os

out = os.environ["STEP_OUTPUT_DIR"]
run_dir = out.rsplit("/", 1)[0]
runs_dir = run_dir.rsplit("/", 1)[0]
first = os.path.join(run_dir, os.environ["VAR_FIRST"])
results = {}


def attempt(name, fn):
    try:
        fn()
        results[name] = "ESCAPED"
    except OSError as e:
        results[name] = "blocked " + type(e).__name__


def put(folder):
    def go():
        with open(os.path.join(folder, "intruded.txt"), "w") as f:
            f.write("x")
    return go


def read_first():
    with open(os.path.join(first, "found.json")) as f:
        results["first output"] = f.read()


attempt("write first step", put(first))
attempt("write run folder", put(run_dir))
attempt("write runs folder", put(runs_dir))
attempt("read first step", read_first)
with open(os.path.join(out, "found.json"), "w") as f:
    json.dump(results, f)
`;

async function planShow(run: unknown): Promise<string> {
  return (await ws.run(["plan", "show", (run as { plan_id: string }).plan_id])).stdout;
}

describe("the first step's pre-started interpreter, started before the step is prepared", () => {
  it("a first script that does not fit runs plain; a later one runs in the early server, held to its own roots", async () => {
    if (!canFork()) {
      console.warn("prestart escapes not tested: the launcher cannot scope signals here");
      return;
    }
    const wf = attackWorkflow(
      ws,
      "prestart",
      [
        { id: "first", file: "main.py", code: MISFIT },
        { id: "later", file: "main.py", code: LATER },
      ],
      ["first"],
    );
    const r = await ws.run(["run", join(wf, "workflow.yaml"), "--var", "first=first", "--json"]);
    const run = runJson(r);
    expect(
      run.steps.map((s) => s.outcome),
      r.stderr,
    ).toEqual(["passed", "passed"]);
    const show = await planShow(run);
    expect(show).toContain("[plain start: the script may change file metadata");
    expect((show.match(/\[started by the pre-started interpreter/g) ?? []).length, show).toBe(1);
    // The plain start really ran it outside the server: its chmod took effect.
    expect(statSync(join(runsOf(wf), run.run_id, "first", "found.json")).mode & 0o777).toBe(0o640);
    expect(found(wf, run.run_id, "later")).toEqual({
      "write first step": expect.stringMatching(/^blocked /),
      "write run folder": expect.stringMatching(/^blocked /),
      "write runs folder": expect.stringMatching(/^blocked /),
      "read first step": expect.stringMatching(/^blocked /),
    });
  });

  it("with RATCHET_NO_FORKSERVER=1 no step is started by a pre-started interpreter", async () => {
    if (!canFork()) return;
    const wf = attackWorkflow(ws, "prestart-off", [{ id: "later", file: "main.py", code: LATER }], ["first"]);
    const r = await ws.run(["run", join(wf, "workflow.yaml"), "--var", "first=first", "--json"], {
      env: { RATCHET_NO_FORKSERVER: "1" },
    });
    const run = runJson(r);
    expect(
      run.steps.map((s) => s.outcome),
      r.stderr,
    ).toEqual(["passed"]);
    const show = await planShow(run);
    expect(show).not.toContain("[started by the pre-started interpreter");
    expect(show).toContain("[plain start: RATCHET_NO_FORKSERVER=1]");
  });
});
