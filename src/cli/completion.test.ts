/**
 * `ratchet completion`, `runs list --status` and `metric list` through the built CLI. The bash
 * script is sourced in a real bash and asked for completions the way bash's programmable
 * completion asks (COMP_WORDS / COMP_CWORD, then the function), so what is tested is what a user's
 * shell gets.
 */
import { spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { assertBuilt, makeWorkspace, ok, ratchet, type TestWorkspace } from "../../test/helpers/cli.js";
import { SqliteStore } from "../store/index.js";
import { runStoreOf } from "../workflow/index.js";

beforeAll(() => assertBuilt());
let ws: TestWorkspace | undefined;
afterEach(() => {
  ws?.remove();
  ws = undefined;
});

/** Completions bash offers for `line` (a trailing space: a new, empty word). */
function bashComplete(script: string, line: string): string[] {
  const prog = `source "$1"
read -ra COMP_WORDS <<< "$2"
[[ "$2" == *" " ]] && COMP_WORDS+=("")
COMP_CWORD=$((\${#COMP_WORDS[@]} - 1))
_ratchet_complete
printf '%s\\n' "\${COMPREPLY[@]}"`;
  const r = spawnSync("bash", ["--norc", "--noprofile", "-c", prog, "bash", script, line], {
    encoding: "utf8",
  });
  expect(r.status, r.stderr).toBe(0);
  return r.stdout.split("\n").filter(Boolean);
}

describe("ratchet completion", () => {
  it("bash completes commands, sub-commands and flags from the program", async () => {
    ws = await makeWorkspace();
    const r = await ratchet(["completion", "bash"], { cwd: ws.dir });
    expect(r.status).toBe(0);
    const file = join(ws.dir, "ratchet.bash");
    writeFileSync(file, r.stdout);
    expect(bashComplete(file, "ratchet ru")).toEqual(["run", "runs", "runner"]);
    expect(bashComplete(file, "ratchet runs ")).toEqual(["list", "cancel", "show"]);
    expect(bashComplete(file, "ratchet runs list --st")).toEqual(["--status"]);
    expect(bashComplete(file, "ratchet metric ")).toEqual(["record", "list"]);
    expect(bashComplete(file, "ratchet metric list --p")).toEqual(["--plan", "--project"]);
    expect(bashComplete(file, "ratchet step st")).toEqual(["start"]);
    // A flag between the words does not lose the command path.
    expect(bashComplete(file, "ratchet --db x.db plan li")).toEqual(["list"]);
    expect(bashComplete(file, "ratchet completion ")).toEqual(["bash", "zsh", "fish"]);
    expect(bashComplete(file, "ratchet zzz")).toEqual([]);
  });

  it("zsh and fish scripts name every command; an unknown shell is a usage error (2)", async () => {
    ws = await makeWorkspace();
    for (const shell of ["zsh", "fish"]) {
      const r = await ratchet(["completion", shell], { cwd: ws.dir });
      expect(r.status).toBe(0);
      for (const cmd of ["plan", "runs", "metric", "completion", "serve", "mcp"])
        expect(r.stdout).toContain(`'${cmd}`);
    }
    const bad = await ratchet(["completion", "powershell"], { cwd: ws.dir });
    expect(bad.status).toBe(2);
    expect(bad.stderr).toMatch(/bash, zsh, fish/);
  });
});

describe("runs list --status and metric list", () => {
  it("filters runs by status and refuses an unknown status naming the flag", async () => {
    ws = await makeWorkspace();
    const store = SqliteStore.open(ws.dbPath);
    const runs = runStoreOf(store);
    for (const id of ["run-one", "run-two"])
      runs.startRun(
        {
          run_id: id,
          workflow_id: "wf",
          workflow_path: "/x",
          plan_id: null,
          trigger: "manual",
          group_name: null,
          owner: "1@elsewhere",
        },
        [],
      );
    runs.finishRun("run-two", "failed", "boom");
    store.close();
    const failed = await ratchet(["runs", "list", "--status", "failed", "--json"], { cwd: ws.dir });
    expect((JSON.parse(failed.stdout) as { run_id: string }[]).map((r) => r.run_id)).toEqual(["run-two"]);
    const running = await ratchet(["runs", "list", "--status", "running"], { cwd: ws.dir });
    expect(running.stdout).toContain("run-one");
    expect(running.stdout).not.toContain("run-two");
    const bad = await ratchet(["runs", "list", "--status", "done"], { cwd: ws.dir });
    expect(bad.status).toBe(2);
    expect(bad.stderr).toContain(
      "--status must be one of queued, running, passed, failed, interrupted, cancelled",
    );
  });

  it("lists metrics newest first by plan, project and name", async () => {
    ws = await makeWorkspace();
    expect((await ws.run(["project", "add", "alpha"])).status).toBe(0);
    const pub = await ok(ws, ["plan", "publish"], { goal: "g", steps: [{ title: "t", type: "THINKING" }] });
    const plan = pub.plan_id as string;
    await ok(ws, ["metric", "record"], {
      name: "latency",
      value: 12,
      unit: "ms",
      project: "alpha",
      plan_id: plan,
    });
    await ok(ws, ["metric", "record"], { name: "errors", value: 0, project: "alpha" });
    const all = await ratchet(["metric", "list", "--json"], { cwd: ws.dir });
    expect((JSON.parse(all.stdout) as { name: string }[]).map((m) => m.name)).toEqual(["errors", "latency"]);
    const byPlan = await ratchet(["metric", "list", "--plan", plan, "--json"], { cwd: ws.dir });
    expect((JSON.parse(byPlan.stdout) as { name: string }[]).map((m) => m.name)).toEqual(["latency"]);
    const byProject = await ratchet(["metric", "list", "--project", "alpha", "--name", "errors"], {
      cwd: ws.dir,
    });
    expect(byProject.stdout).toMatch(/errors=0 {2}project=alpha {2}plan=-/);
    const none = await ratchet(["metric", "list", "--project", "beta"], { cwd: ws.dir });
    expect(none.stdout.trim()).toBe("no metrics");
    const bad = await ratchet(["metric", "list", "--limit", "0"], { cwd: ws.dir });
    expect(bad.status).toBe(2);
    expect(bad.stderr).toContain("--limit must be an integer");
  });
});
