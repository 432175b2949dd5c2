import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import {
  diffsDir,
  historyDir,
  isRunId,
  learningsDir,
  metadataPath,
  newRunId,
  runDir,
  runHomeOf,
  savedScript,
  stepCodeDir,
  stepOutputDir,
  workflowHome,
} from "./layout.js";

const home = mkdtempSync(join(tmpdir(), "ratchet-layout-"));
afterAll(() => rmSync(home, { recursive: true, force: true }));
const wf = { source: join(home, "flow.yaml"), id: "flow" };
const ws = join(home, "ws", ".ratchet");
const rh = runHomeOf(ws);
const RUN = "run-20260101120000-a1b2c3";

describe("layout", () => {
  it("places what was learned under the workflow's folder and what a run writes under the run home", () => {
    expect(workflowHome(wf)).toBe(home);
    expect(learningsDir(wf, "fetch")).toBe(join(home, "learnings", "fetch"));
    expect(diffsDir(wf, "fetch")).toBe(join(home, "learnings", "fetch", "diffs"));
    expect(rh).toEqual({ runs: join(ws, "runs"), scripts: join(ws, "scripts"), cache: join(ws, "cache") });
    expect(historyDir(rh, wf, "fetch")).toBe(join(ws, "scripts", "flow", "fetch"));
    expect(metadataPath(rh, wf, "fetch")).toBe(join(ws, "scripts", "flow", "fetch", "script_metadata.json"));
    expect(runDir(rh, RUN)).toBe(join(ws, "runs", RUN));
    expect(stepOutputDir(rh, RUN, "fetch")).toBe(join(ws, "runs", RUN, "fetch"));
    expect(stepCodeDir(rh, RUN, "fetch")).toBe(join(ws, "runs", RUN, "fetch", "code"));
    // A worker passes its own root: nothing of the run depends on the workflow's folder.
    const own = { runs: "/srv/w1/runs", scripts: "/srv/w1/scripts" };
    expect(stepOutputDir(own, RUN, "fetch")).toBe(join("/srv/w1/runs", RUN, "fetch"));
  });

  it("finds the saved script, preferring main.py", () => {
    expect(savedScript(wf, "fetch")).toBeUndefined();
    const dir = learningsDir(wf, "fetch");
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, "main.mjs"), "console.log(1)");
    expect(savedScript(wf, "fetch")).toEqual({ path: join(dir, "main.mjs"), language: "javascript" });
    writeFileSync(join(dir, "main.py"), "print(1)");
    expect(savedScript(wf, "fetch")).toEqual({ path: join(dir, "main.py"), language: "python" });
    mkdirSync(join(learningsDir(wf, "other"), "main.py"), { recursive: true });
    expect(savedScript(wf, "other")).toBeUndefined();
  });

  it("makes run ids run-<YYYYMMDDHHMMSS>-<6 hex>", () => {
    expect(newRunId(Date.UTC(2026, 0, 2, 3, 4, 5), "00ff10")).toBe("run-20260102030405-00ff10");
    const id = newRunId(Date.UTC(2026, 0, 2, 3, 4, 5));
    expect(id).toMatch(/^run-20260102030405-[0-9a-f]{6}$/);
    expect(isRunId(id)).toBe(true);
    expect(isRunId("run-1-abc")).toBe(false);
    expect(() => newRunId(0, "XYZ")).toThrow(/not a run id/);
  });

  it("refuses ids that could leave the home folder", () => {
    expect(() => learningsDir(wf, "../x")).toThrow(/not a step id/);
    expect(() => stepOutputDir(rh, RUN, "a/b")).toThrow(/not a step id/);
    expect(() => runDir(rh, "../../etc")).toThrow(/not a run id/);
    expect(() => historyDir(rh, { id: "../x" }, "fetch")).toThrow(/not a workflow id/);
    expect(() => historyDir(rh, wf, "..")).toThrow(/not a step id/);
  });
});
