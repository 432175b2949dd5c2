/**
 * A run makes the next learned step's private TMPDIR while the current script runs (in the folder
 * the current one's was made in: src/workflow/fast-path.ts `prepareLearnedStep`'s `tmpParent`),
 * instead of on the critical path between two scripts. That shortcut must not give one script a
 * way into the next one's TMPDIR: the running script, which can see the folder its TMPDIR lies in,
 * tries to write into every other folder there (a planted module, a planted file) and to remove
 * them; the next script must find its TMPDIR empty and writable, and the next step's TMPDIR is
 * still gone once it ended.
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { assertBuilt, type TestWorkspace } from "../helpers/cli.js";
import { attackWorkflow, found, probe, runJson, workspace } from "./door-kit.js";

vi.setConfig({ testTimeout: 120_000, hookTimeout: 60_000 });

let ws: TestWorkspace;
beforeAll(async () => {
  assertBuilt();
  ws = await workspace("ratchet-esc-tmp-ahead-");
});
afterAll(() => ws?.remove());

const landlock = (): boolean => /landlock abi \d/.test(probe());

/** The first script: waits for a sibling of its TMPDIR (the next step's), then attacks every sibling. */
const FIRST = `import json
import os
import shutil
import time

tmp = os.environ["TMPDIR"]
parent = tmp.rsplit("/", 1)[0]
results = {}
results["attempts"] = {}


def siblings():
    try:
        return [os.path.join(parent, d) for d in os.listdir(parent) if os.path.join(parent, d) != tmp]
    except OSError as e:
        results["list"] = "blocked " + type(e).__name__
        return []


found_any = []
for _ in range(200):
    found_any = siblings()
    if found_any or "list" in results:
        break
    time.sleep(0.01)
results["siblings"] = len(found_any)


def attempt(name, fn):
    try:
        fn()
        results["attempts"][name] = "ESCAPED"
    except OSError as e:
        results["attempts"][name] = "blocked " + type(e).__name__


def beside():
    with open(os.path.join(parent, "planted.py"), "w") as f:
        f.write("x")


attempt("write beside the TMPDIRs", beside)
for i, d in enumerate(found_any):
    def plant(d=d):
        with open(os.path.join(d, "json.py"), "w") as f:
            f.write("raise SystemExit(3)\\n")

    def folder(d=d):
        os.mkdir(os.path.join(d, "planted"))

    def remove(d=d):
        shutil.rmtree(d)

    attempt("plant module %d" % i, plant)
    attempt("make folder %d" % i, folder)
    attempt("remove %d" % i, remove)

with open(os.path.join(os.environ["STEP_OUTPUT_DIR"], "found.json"), "w") as f:
    json.dump(results, f)
`;

/** The next script: its TMPDIR as it found it, and whether it may write there. */
const SECOND = `import json
import os
import tempfile

tmp = os.environ["TMPDIR"]
entries = sorted(os.listdir(tmp))
with tempfile.NamedTemporaryFile(delete=False) as f:
    f.write(b"ok")
mine = f.name
with open(os.path.join(os.environ["STEP_OUTPUT_DIR"], "found.json"), "w") as out:
    json.dump({"entries": entries, "tmp": tmp, "writable": mine.startswith(tmp + "/") and os.path.exists(mine)}, out)
`;

describe("the next step's TMPDIR, made while the current script runs", () => {
  it("the running script cannot write into it, plant in it or remove it; the next script finds it empty and its own", async () => {
    if (!landlock()) {
      console.warn("TMPDIR-ahead escapes not tested: no Landlock here (no private TMPDIR)");
      return;
    }
    const wf = attackWorkflow(ws, "tmp-ahead", [
      { id: "first", file: "main.py", code: FIRST },
      { id: "second", file: "main.py", code: SECOND },
    ]);
    for (const env of [{}, { RATCHET_NO_FORKSERVER: "1" }]) {
      const r = await ws.run(["run", join(wf, "workflow.yaml"), "--json"], { env });
      const run = runJson(r);
      expect(
        run.steps.map((s) => s.outcome),
        r.stderr,
      ).toEqual(["passed", "passed"]);
      const first = found<{ siblings: number; attempts: Record<string, string>; list?: string }>(
        wf,
        run.run_id,
        "first",
      );
      expect(Object.keys(first.attempts)).toContain("write beside the TMPDIRs");
      // Listing the folder is refused where the launcher hides it; every write into it is refused.
      if (first.list === undefined) expect(first.siblings, JSON.stringify(env)).toBeGreaterThan(0);
      for (const [name, what] of Object.entries(first.attempts))
        expect(what, `${name} (${JSON.stringify(env)})`).toMatch(/^blocked /);
      const second = found<{ entries: string[]; tmp: string; writable: boolean }>(wf, run.run_id, "second");
      expect(second).toMatchObject({ entries: [], writable: true });
      // Removed once its script ended, as a TMPDIR made on the critical path is.
      expect(existsSync(second.tmp)).toBe(false);
    }
  });
});
