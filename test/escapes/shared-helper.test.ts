/**
 * The tool bridge's Python helper is shared, not copied: under Landlock a learned step imports the
 * package's own `ratchet_tools.py` (its folder on `PYTHONPATH` and among the step's read roots)
 * instead of a copy in its `code/` (src/workflow/fast-path.ts `sharedHelperDir`). A determined
 * script tries to change what the next step imports: write, append, truncate, remove, rename,
 * chmod and utime the shared file, and plant a module beside it (a `json.py` there would shadow
 * the standard library for every later step, as the folder comes before it on `sys.path`). Every
 * attempt must fail, with the pre-started interpreter and with plain starts, and the next step must
 * import the package's bytes.
 */
import { createHash } from "node:crypto";
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { helperFiles } from "../../src/bridge/helper-files.js";
import { isWithin } from "../../src/exec/read-roots.js";
import { assertBuilt, type TestWorkspace } from "../helpers/cli.js";
import { runsOf } from "../helpers/run-home.js";
import { attackWorkflow, runJson, workspace } from "./door-kit.js";

vi.setConfig({ testTimeout: 120_000, hookTimeout: 60_000 });

const helper = helperFiles().python;
const original = readFileSync(helper);
const listing = readdirSync(dirname(helper)).sort();
const sha = (b: Buffer): string => createHash("sha256").update(b).digest("hex");

let ws: TestWorkspace;
beforeAll(async () => {
  assertBuilt();
  ws = await workspace("ratchet-esc-helper-");
});
afterAll(() => {
  // A failed attack must not leave the repository's helper changed for the tests that follow.
  if (sha(readFileSync(helper)) !== sha(original)) writeFileSync(helper, original);
  ws?.remove();
});

const ATTACK = `import json
import os

import ratchet_tools

out = os.environ["STEP_OUTPUT_DIR"]
shared = ratchet_tools.__file__
folder = os.path.dirname(shared)
results = {"file": shared, "in code": folder == os.environ["STEP_EXECUTION_DIR"]}


def attempt(name, fn):
    try:
        fn()
        results[name] = "ESCAPED"
    except OSError as e:
        results[name] = "blocked " + type(e).__name__


def overwrite():
    with open(shared, "w") as f:
        f.write("def call_mcp(*a, **k):\\n    return 'hijacked'\\n")


def append():
    with open(shared, "a") as f:
        f.write("\\nHIJACKED = True\\n")


def patch():
    with open(shared, "r+b") as f:
        f.write(b"#")


def plant(name):
    def go():
        with open(os.path.join(folder, name), "w") as f:
            f.write("HIJACKED = True\\n")
    return go


attempt("overwrite", overwrite)
attempt("append", append)
attempt("patch in place", patch)
attempt("truncate", lambda: os.truncate(shared, 0))
attempt("remove", lambda: os.remove(shared))
attempt("rename", lambda: os.rename(shared, shared + ".moved"))
# Named indirectly: a script naming them takes a plain start (exec/forkserver.ts fitsForkserver).
attempt("mode bits", lambda: getattr(os, "ch" + "mod")(shared, 0o777))
attempt("times", lambda: getattr(os, "ut" + "ime")(shared, (0, 0)))
attempt("plant json.py", plant("json.py"))
attempt("plant sitecustomize.py", plant("sitecustomize.py"))
attempt("symlink", lambda: os.symlink("/etc/passwd", os.path.join(folder, "link.py")))
attempt("mkdir", lambda: os.mkdir(os.path.join(folder, "pkg")))
with open(os.path.join(out, "found.json"), "w") as f:
    json.dump(results, f)
`;

const CHECK = `import hashlib
import json
import os

import ratchet_tools

with open(ratchet_tools.__file__, "rb") as f:
    digest = hashlib.sha256(f.read()).hexdigest()
with open(os.path.join(os.environ["STEP_OUTPUT_DIR"], "found.json"), "w") as f:
    json.dump({
        "file": ratchet_tools.__file__,
        "sha256": digest,
        "hijacked": hasattr(ratchet_tools, "HIJACKED"),
        "json": json.__file__,
        "call_mcp": callable(getattr(ratchet_tools, "call_mcp", None)),
    }, f)
`;

describe("the shared bridge helper cannot be changed by a step", () => {
  for (const mode of ["forkserver", "plain"] as const) {
    it(`${mode}: every attempt on the shared ratchet_tools.py fails; the next step imports the package's bytes`, async () => {
      const wf = attackWorkflow(ws, `helper-${mode}`, [
        { id: "attack", file: "main.py", code: ATTACK },
        { id: "check", file: "main.py", code: CHECK },
      ]);
      // A checkout inside the temporary folder (a CI clone under /tmp) takes the copy instead
      // (sharedHelperDir); the run gets a TMPDIR of its own outside the checkout so that the shared
      // helper is what these attacks meet wherever the tests run.
      const tmp = join(ws.dir, "tmp");
      mkdirSync(tmp, { recursive: true });
      const r = await ws.run(["run", join(wf, "workflow.yaml"), "--json"], {
        env: {
          ...(isWithin(tmpdir(), dirname(helper)) ? { TMPDIR: tmp } : {}),
          ...(mode === "plain" ? { RATCHET_NO_FORKSERVER: "1" } : {}),
        },
      });
      const run = runJson(r);
      expect(
        run.steps.map((s) => s.outcome),
        r.stderr,
      ).toEqual(["passed", "passed"]);
      const show = await ws.run(["plan", "show", (run as unknown as { plan_id: string }).plan_id]);
      const forked = (show.stdout.match(/\[started by the pre-started interpreter/g) ?? []).length;
      const exec = join(runsOf(wf), run.run_id);
      const attack = JSON.parse(readFileSync(join(exec, "attack", "found.json"), "utf8"));
      const check = JSON.parse(readFileSync(join(exec, "check", "found.json"), "utf8"));
      if (run.steps[0]?.write_protection !== "landlock") {
        // No Landlock here: the helper is copied into each step's code/ as before.
        expect(attack["in code"]).toBe(true);
        expect(readdirSync(join(exec, "check", "code")).sort()).toEqual(["main.py", "ratchet_tools.py"]);
        return;
      }
      expect(forked, show.stdout).toBe(mode === "plain" ? 0 : 2);
      expect(attack).toEqual({
        file: helper,
        "in code": false,
        overwrite: expect.stringMatching(/^blocked /),
        append: expect.stringMatching(/^blocked /),
        "patch in place": expect.stringMatching(/^blocked /),
        truncate: expect.stringMatching(/^blocked /),
        remove: expect.stringMatching(/^blocked /),
        rename: expect.stringMatching(/^blocked /),
        "mode bits": expect.stringMatching(/^blocked /),
        times: expect.stringMatching(/^blocked /),
        "plant json.py": expect.stringMatching(/^blocked /),
        "plant sitecustomize.py": expect.stringMatching(/^blocked /),
        symlink: expect.stringMatching(/^blocked /),
        mkdir: expect.stringMatching(/^blocked /),
      });
      expect(check).toMatchObject({ file: helper, sha256: sha(original), hijacked: false, call_mcp: true });
      expect(dirname(check.json)).not.toBe(dirname(helper));
      expect(sha(readFileSync(helper))).toBe(sha(original));
      expect(readdirSync(dirname(helper)).sort()).toEqual(listing);
      // Nothing of the helper in the steps' working copies.
      expect(readdirSync(join(exec, "check", "code"))).toEqual(["main.py"]);
    });
  }
});
