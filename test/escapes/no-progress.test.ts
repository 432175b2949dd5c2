/**
 * Attack class: a stuck model burns every round because no-progress never fires (issue 13, item 4).
 *
 * The no-progress key hashed the raw DoD output; pytest prints timings, temp folders and object
 * addresses that differ on every run, so two rounds without any change never matched and a task
 * whose model does nothing ran to `max_rounds`. The key now hashes the normalised output.
 */
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { normaliseDodOutput, parseTaskSpec, runTask } from "../../src/runner/index.js";
import { hashText } from "../../src/runner/patch.js";
import { startScriptedModel } from "../../src/testing/scripted-model.js";
import { scriptedModelClient } from "../../src/testing/scripted-model-client.js";
import { makePythonRepo, PYTEST_DOD, pythonSpec } from "../helpers/python-repo.js";

vi.setConfig({ testTimeout: 120_000 });

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

// A failing test whose output varies run to run: pytest's numbered tmp_path, an object address,
// the duration on the summary line.
const TESTS = [
  "from calc import add",
  "class Box:\n    pass",
  "def test_add(tmp_path):\n    box = Box()\n    assert add(2, 3) == 5, f'{tmp_path} {box!r}'",
  "",
].join("\n\n");

function pytestOnce(cwd: string): string {
  try {
    return execFileSync("bash", ["-c", PYTEST_DOD], { cwd, encoding: "utf8", stdio: "pipe" });
  } catch (err) {
    return String((err as { stdout?: string }).stdout ?? "");
  }
}

describe("escape: no-progress never fires with pytest", () => {
  it("two real pytest runs of the same failing test differ raw but give the same key", () => {
    const r = makePythonRepo(TESTS);
    cleanups.push(() => r.remove());
    const a = pytestOnce(r.repo);
    const b = pytestOnce(r.repo);
    expect(a).toContain("1 failed");
    expect(a).toMatch(/pytest-\d+/);
    expect(a).not.toBe(b); // the numbered tmp_path alone guarantees it
    expect(hashText(normaliseDodOutput(a, [r.repo]))).toBe(hashText(normaliseDodOutput(b, [r.repo])));
  });

  it("a task whose model makes no change stops with no_progress (real pytest DoD, scripted model)", async () => {
    const r = makePythonRepo(TESTS);
    cleanups.push(() => r.remove());
    const finish = { tool_calls: [{ name: "finish", arguments: { summary: "nothing to do" } }] };
    const model = await startScriptedModel({ script: { turns: [], default: finish } });
    cleanups.push(() => model.close());
    const spec = parseTaskSpec(pythonSpec(r, { max_rounds: 5 }));
    const result = await runTask(spec, { client: scriptedModelClient(model, { maxAttempts: 1 }) });
    expect(result.status).toBe("failed");
    expect(result.stop_reason).toBe("no_progress");
    expect(result.rounds).toBe(2);
    // the DoD outputs of the two rounds really differed (the raw key would never have matched)
    const log = readFileSync(join(r.out, "fix-add.verifier.log"), "utf8");
    const temps = [...log.matchAll(/pytest-of-[^/\s]+\/pytest-(\d+)/g)].map((m) => m[1]);
    expect(new Set(temps).size).toBeGreaterThan(1);
  });
});
