/**
 * Save-back writes what was learned into the workflow's folder and the run history into the run
 * home. A workspace without that history (a fresh clone of a workflow that already carries diffs)
 * continues the version numbers after the newest diff instead of starting again at 1.
 */
import { createHash } from "node:crypto";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { runHomeOf, type Workflow, type WorkflowStep } from "../workflow/index.js";
import { saveBack } from "./save-back.js";

const root = mkdtempSync(join(tmpdir(), "ratchet-save-back-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const SCRIPT = 'import os\n\nprint(os.environ["STEP_OUTPUT_DIR"])\n';

function fixture(name: string) {
  const home = join(root, name, "wf");
  const saved = join(home, "learnings", "fetch");
  mkdirSync(join(saved, "diffs"), { recursive: true });
  const workflow = {
    id: "flow",
    source: join(home, "workflow.yaml"),
    variables: {},
    secrets: [],
  } as unknown as Workflow;
  const step = {
    id: "fetch",
    description: "fetch",
    context_dependencies: [],
    agent_configs: {},
  } as unknown as WorkflowStep;
  const runHome = runHomeOf(join(root, name, ".ratchet"));
  const input = (bytes: string) => ({
    workflow,
    step,
    code: {
      ok: true as const,
      files: [
        {
          name: "main.py",
          bytes: Buffer.from(bytes),
          sha256: createHash("sha256").update(bytes).digest("hex"),
        },
      ],
    },
    passed: true,
    declared: [],
    outputDir: join(runHome.runs, "run-20260101120000-a1b2c3", "fetch"),
    runHome,
    runId: "run-20260101120000-a1b2c3",
    groupName: null,
    lastRun: undefined,
    now: new Date(Date.UTC(2026, 0, 1, 12)),
  });
  return { home, saved, runHome, input };
}

describe("save-back", () => {
  it("saves the script into learnings/ and its run history into the run home, never beside the script", async () => {
    const f = fixture("fresh");
    const r = await saveBack(f.input(SCRIPT));
    expect(r.saved).toMatchObject({ script_version: 1, relearn_count: 0, changed: true });
    expect(readFileSync(join(f.saved, "main.py"), "utf8")).toBe(SCRIPT);
    expect(readdirSync(join(f.saved, "diffs"))).toEqual(["v1-run-20260101120000-a1b2c3.diff"]);
    expect(existsSync(join(f.saved, "script_metadata.json"))).toBe(false);
    const meta = JSON.parse(
      readFileSync(join(f.runHome.scripts, "flow", "fetch", "script_metadata.json"), "utf8"),
    );
    expect(meta).toMatchObject({ step_id: "fetch", script_version: 1, total_runs: 1 });
    expect(meta.recent_runs[0].run_folder).toBe(f.input(SCRIPT).outputDir);
  });

  it("in a workspace without history, a changed script continues after the newest diff the workflow carries", async () => {
    const f = fixture("clone");
    writeFileSync(join(f.saved, "main.py"), "print(1)\n");
    for (const n of [1, 2, 3])
      writeFileSync(join(f.saved, "diffs", `v${n}-run-2025010112000${n}-a1b2c3.diff`), "");
    const r = await saveBack(f.input(SCRIPT));
    expect(r.saved).toMatchObject({ script_version: 4, relearn_count: 3, changed: true });
    expect(readdirSync(join(f.saved, "diffs"))).toContain("v4-run-20260101120000-a1b2c3.diff");
    const diff = readFileSync(join(f.saved, "diffs", "v4-run-20260101120000-a1b2c3.diff"), "utf8");
    expect(diff).toContain("main.py (v3)");
  });
});
