/**
 * Escape class: a run writing into its workflow's folder (issue 18). A run keeps everything it
 * writes — outputs, the script's working copy, the run history — in the workspace's run home
 * (`.ratchet/runs/`, `.ratchet/scripts/`), so a learned pipeline runs from a read-only workflow
 * folder (a clone, a worker's bundle) and leaves it byte-identical. A script that tries to write
 * into the workflow folder, next to its saved script, into its own run history or into another
 * step's outputs is refused by the write scope; and a dependency folder living inside `.ratchet/`
 * is readable without opening the rest of `.ratchet/` (the store) to reads.
 *
 * We run as root here, so `chmod a-w` alone would not stop a write: the test compares every file,
 * its bytes, mode and mtime, before and after.
 */
import { execFileSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { assertBuilt, type TestWorkspace } from "../helpers/cli.js";
import { historyOf, runsOf } from "../helpers/run-home.js";
import { attackWorkflow, runJson, workspace } from "./door-kit.js";

vi.setConfig({ testTimeout: 120_000, hookTimeout: 60_000 });

let ws: TestWorkspace;
beforeAll(async () => {
  assertBuilt();
  ws = await workspace("ratchet-esc-rohome-");
});
afterAll(() => ws?.remove());

const WRITER = `import json
import os

with open(os.path.join(os.environ["STEP_OUTPUT_DIR"], "found.json"), "w") as f:
    json.dump({"value": "written"}, f)
`;

const READER = `import os
import sys

with open(os.path.join(sys.argv[1], "found.json")) as f:
    seen = f.read()
with open(os.path.join(os.environ["STEP_OUTPUT_DIR"], "found.json"), "w") as f:
    f.write(seen)
`;

/** Writes into VAR_TARGET: static review cannot follow a path that arrives as a parameter. */
const INTRUDER = `import json
import os


def save(folder, name, text):
    with open(os.path.join(folder, name), "w") as f:
        f.write(text)


save(os.environ["VAR_TARGET"], "intruded.txt", "written from a run")
with open(os.path.join(os.environ["STEP_OUTPUT_DIR"], "found.json"), "w") as f:
    json.dump({"value": "done"}, f)
`;

/** Tries to read a file relative to its dependency's folder (VAR_REL) and reports what happened. */
const PEEKER = `import json
import os
import sys


def peek(base, rel):
    try:
        with open(os.path.join(base, rel), "rb") as f:
            return {"read": True, "bytes": len(f.read())}
    except OSError as e:
        return {"read": False, "why": type(e).__name__}


with open(os.path.join(os.environ["STEP_OUTPUT_DIR"], "found.json"), "w") as f:
    json.dump(peek(sys.argv[1], os.environ["VAR_REL"]), f)
`;

/** Every file and folder under `dir` with its mode, mtime and (for files) bytes. */
function snapshot(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      const st = statSync(p);
      const bytes = e.isFile() ? readFileSync(p).toString("base64") : "";
      out.push(`${relative(dir, p)} ${st.mode.toString(8)} ${st.mtimeMs} ${bytes}`);
      if (e.isDirectory()) walk(p);
    }
  };
  walk(dir);
  return out.sort();
}

describe("a run never writes its workflow's folder", () => {
  it("a learned pipeline passes from a read-only (chmod -R a-w) workflow folder, which stays byte-identical", async () => {
    const wf = attackWorkflow(ws, "readonly", [
      { id: "writer", file: "main.py", code: WRITER },
      { id: "reader", file: "main.py", code: READER, deps: ["writer"] },
    ]);
    execFileSync("chmod", ["-R", "a-w", wf]);
    try {
      const before = snapshot(wf);
      const r = await ws.run(["run", join(wf, "workflow.yaml"), "--json"]);
      const run = runJson(r);
      expect(
        run.steps.map((s) => s.outcome),
        r.stderr,
      ).toEqual(["passed", "passed"]);
      expect(r.status).toBe(0);
      expect(snapshot(wf)).toEqual(before);
      // What the run wrote is in the workspace: outputs, working copies, the run history.
      const exec = join(runsOf(wf), run.run_id);
      expect(readFileSync(join(exec, "reader", "found.json"), "utf8")).toBe('{"value": "written"}');
      expect(readdirSync(join(exec, "reader", "code"))).toContain("main.py");
      const meta = JSON.parse(readFileSync(join(historyOf(wf, "reader"), "script_metadata.json"), "utf8"));
      expect(meta).toMatchObject({ step_id: "reader", total_runs: 1, successful_runs: 1 });
      expect(meta.recent_runs[0].run_folder).toBe(join(exec, "reader"));
    } finally {
      execFileSync("chmod", ["-R", "u+w", wf]);
    }
  });

  it("a script that writes into its workflow folder, next to its saved script, into its run history or another step's outputs is refused", async () => {
    const wf = attackWorkflow(
      ws,
      "intruder",
      [
        { id: "victim", file: "main.py", code: WRITER },
        { id: "intrude", file: "main.py", code: INTRUDER, deps: ["victim"] },
      ],
      ["target"],
    );
    // A first, honest run gives the intruder a run history and the victim an output folder to aim at.
    const first = runJson(
      await ws.run(["run", join(wf, "workflow.yaml"), "--var", `target=${wf}`, "--json"]),
    );
    expect(first.steps[0]?.outcome).toBe("passed");
    const protection = first.write_protection.python;
    if (protection === "none") {
      console.warn(`write scope not tested: no launcher works here (${first.write_protection.reason})`);
      return;
    }
    const history = historyOf(wf, "intrude");
    const targets = [
      wf,
      join(wf, "learnings", "intrude"),
      history,
      join(runsOf(wf), first.run_id, "victim"),
      runsOf(wf),
    ];
    for (const target of targets) {
      const r = await ws.run(["run", join(wf, "workflow.yaml"), "--var", `target=${target}`, "--json"]);
      const run = runJson(r);
      const step = run.steps.find((s) => s.step_id === "intrude");
      expect(step?.outcome, `${target}: ${r.stderr}`).not.toBe("passed");
      expect(step?.write_protection).toBe(protection);
      expect(step?.error).toMatch(/Read-only file system|Permission denied/);
      expect(existsSync(join(target, "intruded.txt")), target).toBe(false);
      expect(r.status).toBe(8);
    }
  });

  it("a dependency folder inside .ratchet/ is readable, the store beside it is not (Landlock read roots)", async () => {
    const wf = attackWorkflow(
      ws,
      "peek",
      [
        { id: "writer", file: "main.py", code: WRITER },
        { id: "peeker", file: "main.py", code: PEEKER, deps: ["writer"] },
      ],
      ["rel"],
    );
    const look = async (rel: string) => {
      const r = await ws.run(["run", join(wf, "workflow.yaml"), "--var", `rel=${rel}`, "--json"]);
      const run = runJson(r);
      expect(
        run.steps.map((s) => s.outcome),
        r.stderr,
      ).toEqual(["passed", "passed"]);
      return {
        run,
        found: JSON.parse(readFileSync(join(runsOf(wf), run.run_id, "peeker", "found.json"), "utf8")),
      };
    };
    // The dependency's own output: readable.
    const own = await look("found.json");
    expect(own.found).toMatchObject({ read: true });
    // <ws>/.ratchet/runs/<run>/writer/../../../ratchet.db: the store, never readable by a script.
    const store = await look("../../../ratchet.db");
    if (store.run.write_protection.python === "landlock") {
      expect(store.found).toEqual({ read: false, why: "PermissionError" });
    } else {
      console.warn(`read roots not tested: ${store.run.write_protection.python} does not confine reads`);
    }
  });
});
