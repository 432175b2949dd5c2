/**
 * The real python3's prefixes are remembered across runs in `<workspace>/.ratchet/cache/python/`
 * (src/workflow/python-memo.ts), and a later run's read roots come from that entry. A script of a
 * run must not be able to plant or change it — nor read it — whether it runs in the pre-started
 * interpreter or in a plain start: every attempt is refused and the entry keeps its bytes.
 * (A planted entry that names a wider root is refused at use: src/workflow/python-memo.test.ts.)
 */
import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { assertBuilt, type TestWorkspace } from "../helpers/cli.js";
import { attackWorkflow, found, probe, runJson, workspace } from "./door-kit.js";

vi.setConfig({ testTimeout: 120_000, hookTimeout: 60_000 });

let ws: TestWorkspace;
beforeAll(async () => {
  assertBuilt();
  ws = await workspace("ratchet-esc-pymemo-");
});
afterAll(() => ws?.remove());

const which = spawnSync("python3", ["-c", "import sys; print(sys.executable)"], { encoding: "utf8" });
const python = which.status === 0 ? which.stdout.trim() : "";
const confines = (): boolean => /landlock abi ([6-9]|\d\d)/.test(probe());

/** Tries every way into the cache folder; the folder is found from the script's own output folder. */
const ATTACK = `import json
import os

out = os.environ["STEP_OUTPUT_DIR"]
runs_dir = out.rsplit("/", 2)[0]
cache = os.path.join(runs_dir.rsplit("/", 1)[0], "cache", "python")
results = {}


def attempt(name, fn):
    try:
        fn()
        results[name] = "ESCAPED"
    except OSError as e:
        results[name] = "blocked " + type(e).__name__


def entries():
    return [n for n in os.listdir(cache) if n.endswith(".json")]


def overwrite():
    for n in os.listdir(cache):
        with open(os.path.join(cache, n), "w") as f:
            f.write("{}")


def plant():
    with open(os.path.join(cache, "python3-planted.json"), "w") as f:
        f.write("{}")


def move_in():
    with open(os.path.join(out, "entry.json"), "w") as f:
        f.write("{}")
    os.rename(os.path.join(out, "entry.json"), os.path.join(cache, "python3-moved.json"))


def remove():
    for n in os.listdir(cache):
        os.unlink(os.path.join(cache, n))


attempt("list", entries)
attempt("overwrite", overwrite)
attempt("plant", plant)
attempt("move in", move_in)
attempt("remove", remove)
attempt("replace folder", lambda: os.rename(cache, cache + ".old"))
with open(os.path.join(out, "found.json"), "w") as f:
    json.dump(results, f)
`;

const BLOCKED = {
  list: expect.stringMatching(/^blocked /),
  overwrite: expect.stringMatching(/^blocked /),
  plant: expect.stringMatching(/^blocked /),
  "move in": expect.stringMatching(/^blocked /),
  remove: expect.stringMatching(/^blocked /),
  "replace folder": expect.stringMatching(/^blocked /),
};

describe.skipIf(!python)("the remembered python3 answer, attacked by the runs that use it", () => {
  it("no script reaches .ratchet/cache/python/, forked or plain; the entry keeps its bytes", async () => {
    if (!confines()) {
      console.warn("python-memo escapes not tested: the launcher cannot confine reads here");
      return;
    }
    const wf = attackWorkflow(ws, "pymemo", [{ id: "attack", file: "main.py", code: ATTACK }]);
    // The real interpreter first on PATH (a shim's answer is never remembered).
    const env = { PATH: `${dirname(python)}:${process.env.PATH ?? ""}` };
    const cache = resolve(wf, "..", "..", ".ratchet", "cache", "python");
    const first = runJson(await ws.run(["run", join(wf, "workflow.yaml"), "--json"], { env }));
    expect(first.steps.map((s) => s.outcome)).toEqual(["passed"]);
    expect(found(wf, first.run_id, "attack")).toEqual(BLOCKED);
    const names = readdirSync(cache);
    expect(names).toHaveLength(1);
    const bytes = readFileSync(join(cache, names[0] as string), "utf8");
    for (const extra of [{}, { RATCHET_NO_FORKSERVER: "1" }]) {
      const r = runJson(
        await ws.run(["run", join(wf, "workflow.yaml"), "--json"], { env: { ...env, ...extra } }),
      );
      expect(r.steps.map((s) => s.outcome)).toEqual(["passed"]);
      expect(found(wf, r.run_id, "attack")).toEqual(BLOCKED);
      expect(readdirSync(cache)).toEqual(names);
      expect(readFileSync(join(cache, names[0] as string), "utf8")).toBe(bytes);
    }
  });
});
