/**
 * `ratchet run` of a workflow inside a git clone leaves the clone clean (issue 18): everything a
 * run writes — outputs, working copies, `script_metadata.json` — lives in the workspace's
 * `.ratchet/` (which `ratchet init` ignores), none of it in the workflow's folder. The clone's
 * workflow has no `.gitignore` of its own, so nothing is papered over: even `--ignored` lists
 * `.ratchet/` alone.
 */
import { execFileSync } from "node:child_process";
import { cpSync, existsSync, rmSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test, vi } from "vitest";
import { assertBuilt, makeTempDir, ROOT, ratchet } from "../helpers/cli.js";

vi.setConfig({ testTimeout: 120_000, hookTimeout: 60_000 });

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});
beforeAll(() => assertBuilt());

function git(cwd: string, ...args: string[]): string {
  return execFileSync("git", args, {
    cwd,
    encoding: "utf8",
    env: {
      ...process.env,
      GIT_AUTHOR_NAME: "t",
      GIT_AUTHOR_EMAIL: "t@example.com",
      GIT_COMMITTER_NAME: "t",
      GIT_COMMITTER_EMAIL: "t@example.com",
    },
  });
}

/** A repository holding the example `hello` workflow (two learned steps), without its .gitignore; cloned. */
function clone(): string {
  const src = makeTempDir("ratchet-clone-src-");
  const dst = makeTempDir("ratchet-clone-");
  dirs.push(src, dst);
  const wf = join(src, "examples", "workflows", "hello");
  cpSync(join(ROOT, "examples", "workflows", "hello"), wf, { recursive: true });
  rmSync(join(wf, ".gitignore"), { force: true });
  git(src, "init", "-q", "-b", "main");
  git(src, "add", "-A");
  git(src, "commit", "-qm", "hello");
  git(dst, "clone", "-q", src, ".");
  return dst;
}

describe("ratchet run inside a clone", () => {
  test("a learned workflow passes and `git status --porcelain` stays empty, --ignored lists .ratchet/ only", async () => {
    const dir = clone();
    const init = await ratchet(["init"], { cwd: dir });
    expect(init.status, init.stderr).toBe(0);
    expect(git(dir, "status", "--porcelain")).toBe("");

    const flow = join("examples", "workflows", "hello", "workflow.yaml");
    const r = await ratchet(["run", flow, "--json"], { cwd: dir });
    expect(r.status, r.stderr + r.stdout).toBe(0);
    const run = JSON.parse(r.stdout) as { run_id: string; status: string; steps: { outcome: string }[] };
    expect(run.status).toBe("passed");
    expect(run.steps.map((s) => s.outcome)).toEqual(["passed", "passed"]);
    // A second run of one step takes its dependency's outputs from the first run's folder.
    const only = await ratchet(["run", flow, "--only", "summarise", "--json"], { cwd: dir });
    expect(only.status, only.stderr + only.stdout).toBe(0);

    expect(git(dir, "status", "--porcelain")).toBe("");
    expect(git(dir, "status", "--porcelain", "--ignored")).toBe("!! .ratchet/\n");
    expect(existsSync(join(dir, "examples", "workflows", "hello", "execution"))).toBe(false);
    // What it wrote is in the workspace.
    expect(existsSync(join(dir, ".ratchet", "runs", run.run_id, "greet", "greetings.json"))).toBe(true);
    expect(existsSync(join(dir, ".ratchet", "scripts", "hello", "greet", "script_metadata.json"))).toBe(true);
  });
});
