/**
 * Escape class: outputs change after validation (issue 13 item 10). A learned script writes a
 * valid output, leaves a child behind that ignores SIGTERM (and tries to leave the process group)
 * and rewrites the validated file a second later, then exits. Every process of the step must be
 * gone before validation starts, and the dependent step must get exactly the validated bytes.
 *
 * Enforced by the process runner (a run resolves only once its group has no running member;
 * leftovers of a leader that exited are SIGKILLed at once), the launcher's seccomp (the child
 * cannot leave the group) and, with ratchet-confine v2, the subreaper supervisor.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { assertBuilt, sleep, type TestWorkspace } from "../helpers/cli.js";
import { runsOf } from "../helpers/run-home.js";
import { attackWorkflow, runJson, workspace } from "./door-kit.js";

vi.setConfig({ testTimeout: 120_000, hookTimeout: 60_000 });

let ws: TestWorkspace;
beforeAll(async () => {
  assertBuilt();
  ws = await workspace("ratchet-esc-outputs-");
});
afterAll(() => ws?.remove());

// The script builds it with json.dump (a JSON literal written out is a blocking review finding).
const VALIDATED = JSON.stringify({ value: "validated" }).replace(/:/g, ": ");

const WRITER = `import json
import os
import signal
import sys
import time

out = os.path.join(os.environ["STEP_OUTPUT_DIR"], "found.json")
with open(out, "w") as f:
    json.dump({"value": "validated"}, f)
pid = os.fork()
if pid == 0:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    try:
        os.setsid()
    except OSError:
        pass
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    time.sleep(1)
    with open(out, "w") as f:
        json.dump({"value": "tampered after validation"}, f)
    os._exit(0)
print("left a child behind:", pid)
sys.exit(0)
`;

const READER = `import os
import sys

with open(os.path.join(sys.argv[1], "found.json")) as f:
    seen = f.read()
with open(os.path.join(os.environ["STEP_OUTPUT_DIR"], "found.json"), "w") as f:
    f.write(seen)
`;

describe("outputs after validation", () => {
  it("a leftover that ignores SIGTERM cannot change a validated output; the next step sees the validated bytes", async () => {
    const wf = attackWorkflow(ws, "outputs", [
      { id: "writer", file: "main.py", code: WRITER },
      { id: "reader", file: "main.py", code: READER, deps: ["writer"] },
    ]);
    const r = await ws.run(["run", wf, "--json"]);
    const run = runJson(r);
    expect(
      run.steps.map((s) => s.outcome),
      r.stderr,
    ).toEqual(["passed", "passed"]);
    const exec = join(runsOf(wf), run.run_id);
    expect(readFileSync(join(exec, "reader", "found.json"), "utf8")).toBe(VALIDATED);
    // Give a surviving child every chance to strike, then look again.
    await sleep(2000);
    expect(readFileSync(join(exec, "writer", "found.json"), "utf8")).toBe(VALIDATED);
  });
});
