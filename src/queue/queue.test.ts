/**
 * The queue's pieces on a real SQLite store and real folders: bundles (canonical, checked, a
 * hostile bundle cannot write outside its folder), the config section, job payload checks, slot
 * run ids, and the run rows' claim / heartbeat / lease semantics (the same SQL runs on PostgreSQL:
 * test/e2e/queue-workers.test.ts).
 */
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { ErrorCode, RatchetError } from "../core/index.js";
import { Ledger } from "../ledger/index.js";
import { BlobStore, PgError, RunStatus, runStoreOf, SqliteStore } from "../store/index.js";
import { interruptReason, parseWorkflowText, recoverInterruptedRuns } from "../workflow/index.js";
import { decodeBundle, encodeBundle, materialiseBundle, putBundle } from "./bundle.js";
import { compileQueueConfig, loadQueueConfig, requireQueue } from "./config.js";
import { serialQueueOf } from "./enqueue.js";
import { checkQueueName, parseRunJob, runTask, storeBusy } from "./jobs.js";
import { claimRunnerJob, parseRunnerJob, recoverRunnerTasks, runnerJobEvents } from "./runner-job.js";
import { slotRunId } from "./schedule.js";
import { parseThreadTurn, TurnEvent } from "./thread-job.js";

const tmp = (p: string) => mkdtempSync(join(tmpdir(), p));

function workflowFolder(): string {
  const home = tmp("ratchet-bundle-wf-");
  writeFileSync(join(home, "workflow.yaml"), "id: w\nsteps:\n  - id: a\n    description: x\n");
  mkdirSync(join(home, "learnings", "a", "diffs"), { recursive: true });
  writeFileSync(join(home, "learnings", "a", "main.py"), "print('hi')\n");
  chmodSync(join(home, "learnings", "a", "main.py"), 0o755);
  writeFileSync(join(home, "learnings", "a", "contract.json"), "{}\n");
  writeFileSync(join(home, "learnings", "a", "script_metadata.json"), "{}\n");
  writeFileSync(join(home, "learnings", "a", "diffs", "1.diff"), "-\n");
  mkdirSync(join(home, "execution", "run-x"), { recursive: true });
  writeFileSync(join(home, "execution", "run-x", "out.txt"), "old output\n");
  mkdirSync(join(home, ".ratchet"));
  writeFileSync(join(home, ".ratchet", "secrets"), "API=secret\n");
  return home;
}

describe("bundles", () => {
  test("hold the workflow and its learned scripts, not outputs, history or secrets; the same folder gives the same bytes", () => {
    const home = workflowFolder();
    const bytes = encodeBundle(join(home, "workflow.yaml"));
    expect(encodeBundle(join(home, "workflow.yaml")).equals(bytes)).toBe(true);
    const b = decodeBundle(bytes);
    expect(b.entry).toBe("workflow.yaml");
    expect(b.files.map((f) => [f.path, f.exec])).toEqual([
      ["learnings/a/contract.json", 0],
      ["learnings/a/main.py", 1],
      ["workflow.yaml", 0],
    ]);
    expect(bytes.toString()).not.toContain("secret");
  });

  test("materialise once per hash, read-only, into a folder another worker process can share", () => {
    const home = workflowFolder();
    const blobs = new BlobStore(tmp("ratchet-bundle-blobs-"));
    const hash = putBundle(blobs, join(home, "workflow.yaml"));
    const cache = tmp("ratchet-bundle-cache-");
    const m = materialiseBundle(blobs, hash, cache);
    expect(m.workflowFile).toBe(join(cache, hash, "workflow.yaml"));
    expect(readFileSync(join(m.dir, "learnings", "a", "main.py"), "utf8")).toBe("print('hi')\n");
    expect(statSync(join(m.dir, "learnings", "a", "main.py")).mode & 0o777).toBe(0o555);
    expect(statSync(m.workflowFile).mode & 0o777).toBe(0o444);
    // A second call (another job) reuses the folder without reading the blob again.
    expect(materialiseBundle(new BlobStore(tmp("ratchet-empty-")), hash, cache)).toEqual(m);
  });

  test("a hostile or damaged bundle is refused before anything is written outside its folder", () => {
    const cache = tmp("ratchet-bundle-cache-");
    const blobs = new BlobStore(tmp("ratchet-bundle-blobs-"));
    const bundle = (files: { path: string; base64: string; exec: 0 | 1 }[], entry = "workflow.yaml") =>
      blobs.put(JSON.stringify({ format: "ratchet-bundle/1", entry, files }));
    const ok = { path: "workflow.yaml", base64: "aWQ6IHcK", exec: 0 as const };
    for (const path of ["../escape.txt", "/etc/passwd", "a/../../x", "a//b", "./workflow.yaml", "a\\b", ""]) {
      const hash = bundle([ok, { path, base64: "eA==", exec: 0 }]);
      expect(() => materialiseBundle(blobs, hash, cache), path).toThrow(/leaves the bundle/);
    }
    expect(() => materialiseBundle(blobs, bundle([ok, ok]), cache)).toThrow(/leaves the bundle/);
    expect(() => materialiseBundle(blobs, bundle([ok], "other.yaml"), cache)).toThrow(/lacks its entry/);
    expect(() => materialiseBundle(blobs, blobs.put("not json"), cache)).toThrow(/not JSON/);
    expect(() => materialiseBundle(blobs, "0".repeat(64), cache)).toThrow(/not found/);
    expect(() => materialiseBundle(blobs, "../x", cache)).toThrow(/not a blob hash/);
    // A blob whose bytes were changed on disk after it was stored.
    const hash = bundle([ok]);
    const path = blobs.pathOf(hash);
    chmodSync(path, 0o644);
    writeFileSync(
      path,
      JSON.stringify({ format: "ratchet-bundle/1", entry: "workflow.yaml", files: [ok, ok] }),
    );
    expect(() => materialiseBundle(blobs, hash, cache)).toThrow(/does not match its hash/);
    expect(existsSync(join(cache, "..", "escape.txt"))).toBe(false);
  });
});

describe("queue config and jobs", () => {
  test("the queue section: enabled, lease, unknown keys and bad values refused naming the field; env over file", () => {
    expect(compileQueueConfig(undefined)).toEqual({ enabled: false, leaseMs: 60_000 });
    expect(compileQueueConfig({ enabled: true, lease_seconds: 5 })).toEqual({ enabled: true, leaseMs: 5000 });
    expect(() => compileQueueConfig({ enabeld: true })).toThrow(/queue\.enabeld: unknown field/);
    expect(() => compileQueueConfig({ enabled: "yes" })).toThrow(/queue\.enabled/);
    expect(() => compileQueueConfig({ lease_seconds: 0 })).toThrow(/queue\.lease_seconds/);
    expect(() => compileQueueConfig([])).toThrow(/queue: must be an object/);
    const dir = tmp("ratchet-queue-cfg-");
    writeFileSync(join(dir, "config.json"), JSON.stringify({ queue: { enabled: true } }));
    expect(loadQueueConfig(dir, {}).enabled).toBe(true);
    expect(loadQueueConfig(dir, { RATCHET_QUEUE: "0" }).enabled).toBe(false);
    expect(loadQueueConfig(tmp("ratchet-none-"), { RATCHET_QUEUE: "1" }).enabled).toBe(true);
    expect(() => loadQueueConfig(dir, { RATCHET_QUEUE: "true" })).toThrow(/RATCHET_QUEUE/);
    const cfg = loadQueueConfig(dir, {});
    expect(() => requireQueue({ dir }, cfg, "ratchet worker")).toThrow(/PostgreSQL store/);
    expect(() => requireQueue({ dir, storeUrl: "postgres://x/y" }, { ...cfg, enabled: false }, "w")).toThrow(
      /needs a queue/,
    );
  });

  test("queue names are task identifiers; payloads from the table are checked", () => {
    expect(runTask()).toBe("ratchet_run");
    expect(runTask("gpu")).toBe("ratchet_run@gpu");
    expect(() => checkQueueName("GPU")).toThrow(/queue name/);
    expect(() => checkQueueName("a".repeat(64))).toThrow(/queue name/);
    const ok = { run_id: "run-20260101000000-abcdef", bundle_hash: "h", trigger: "manual" };
    expect(parseRunJob(ok)).toEqual({ ...ok, vars: {}, group: null, only: null, step_timeout_seconds: null });
    for (const bad of [
      null,
      [],
      { ...ok, run_id: "" },
      { ...ok, vars: { a: 1 } },
      { ...ok, only: "a" },
      { ...ok, step_timeout_seconds: 0 },
    ])
      expect(() => parseRunJob(bad)).toThrow(/payload/);
  });

  test("a busy store is a lock wait or statement cut by the server, not any failure", () => {
    const pg = (code: string) => new PgError({ message: `pg ${code}`, code });
    for (const code of ["57014", "55P03", "40001", "40P01"]) expect(storeBusy(pg(code))).toBe(true);
    // A lost connection leaves the session unusable; a constraint or syntax error is not the load.
    for (const code of ["57P01", "08006", "23505", "42601"]) expect(storeBusy(pg(code))).toBe(false);
    expect(storeBusy(new PgError({ message: "no code" }))).toBe(false);
    expect(storeBusy(new RatchetError(ErrorCode.Timeout, "bridge did not answer"))).toBe(false);
    expect(storeBusy(Object.assign(new Error("x"), { code: "57014" }))).toBe(false);
    expect(storeBusy(undefined)).toBe(false);
  });

  test("schedule: five cron fields, checked by graphile's parser, refused naming schedule", () => {
    const wf = (schedule: string) =>
      parseWorkflowText(
        `id: w\nschedule: "${schedule}"\nsteps:\n  - id: a\n    description: x\n`,
        "/w/workflow.yaml",
      );
    expect(wf("0 * * * *").schedule).toBe("0 * * * *");
    expect(wf(" */5 1-3 * * 1 ").schedule).toBe("*/5 1-3 * * 1");
    for (const bad of ["61 * * * *", "* * * *", "* * * * * *", "a b c d e", ""])
      expect(() => wf(bad), bad).toThrow(/schedule/);
    expect(
      serialQueueOf(
        parseWorkflowText("id: w\nserial: true\nsteps:\n  - id: a\n    description: x\n", "/w/x.yaml"),
      ),
    ).toBe("ratchet:w");
  });

  test("a schedule slot's run id is the same on every worker and differs per slot and workflow", () => {
    const a = slotRunId("tick", "2026-12-01T15:00:00.000Z");
    expect(a).toMatch(/^run-20261201150000-[0-9a-f]{6}$/);
    expect(slotRunId("tick", "2026-12-01T15:00:00.000Z")).toBe(a);
    expect(slotRunId("tock", "2026-12-01T15:00:00.000Z")).not.toBe(a);
    expect(slotRunId("tick", "2026-12-01T15:01:00.000Z").slice(0, 18)).toBe("run-20261201150100");
  });
});

describe("queued runs, claims and leases on the run rows", () => {
  const open = () => {
    const store = SqliteStore.open(join(tmp("ratchet-queue-db-"), "ratchet.db"), { create: true });
    return { store, ledger: new Ledger({ store, blobs: new BlobStore(tmp("ratchet-blobs-")) }) };
  };
  const queued = (id: string) => ({
    run_id: id,
    workflow_id: "w",
    workflow_path: "/w/workflow.yaml",
    trigger: "manual",
    group_name: null,
    bundle_hash: "h",
    queued_by: "1@here",
  });
  const steps = [{ step_id: "a", ledger_step_id: null, mode: "learn_code" }];

  test("one claim wins; a second claim, a claim of a cancelled run and a duplicate enqueue change nothing", () => {
    const { store } = open();
    const runs = runStoreOf(store);
    runs.enqueueRun(queued("run-1"));
    expect(() => runs.enqueueRun(queued("run-1"))).toThrow();
    expect(runs.getRun("run-1")?.status).toBe(RunStatus.Queued);
    const claim = { plan_id: "pl-1", owner: "7@a", lease_expires_at: 1000 };
    expect(runs.claimRun("run-1", claim, steps)?.status).toBe(RunStatus.Running);
    expect(runs.claimRun("run-1", { ...claim, owner: "8@b" }, steps)).toBeUndefined();
    expect(runs.getRun("run-1")?.owner).toBe("7@a");
    expect(runs.stepRuns("run-1")).toHaveLength(1);
    expect(runs.failQueued("run-1", "x")).toBe(false);
    runs.enqueueRun(queued("run-2"));
    runs.markCancelled("run-2", "cancelled before a worker claimed it");
    expect(runs.claimRun("run-2", claim, steps)).toBeUndefined();
    expect(runs.getRun("run-2")?.status).toBe(RunStatus.Cancelled);
    const types = store.listEvents({ limit: 100 }).map((e) => `${e.entity_id}:${e.type}`);
    expect(types).toEqual([
      "run-1:run.queued",
      "run-1:run.started",
      "run-2:run.queued",
      "run-2:run.cancelled",
    ]);
    store.close();
  });

  test("a heartbeat moves only its own live lease; an expired lease is interrupted from any host, once; the first ending stands", () => {
    const { store, ledger } = open();
    const runs = runStoreOf(store);
    runs.enqueueRun(queued("run-1"));
    runs.claimRun("run-1", { plan_id: "pl-x", owner: "7@machine-a", lease_expires_at: 10_000 }, steps);
    expect(runs.heartbeat("run-1", "8@machine-b", 20_000)).toBe(false);
    expect(runs.heartbeat("run-1", "7@machine-a", 20_000)).toBe(true);
    const lease = runs.runningLeases()[0];
    expect(lease).toMatchObject({ run_id: "run-1", owner: "7@machine-a", lease_expires_at: 20_000 });
    // Another machine: the owner's pid cannot be checked from here, but the lease can.
    const at = { host: "machine-b", isAlive: () => true };
    expect(interruptReason(lease!, { ...at, nowMs: 19_999 })).toBeUndefined();
    expect(interruptReason(lease!, { ...at, nowMs: 20_001 })).toMatch(/lease of 7@machine-a expired/);
    expect(recoverInterruptedRuns({ store, ledger }, { ...at, nowMs: 19_000 })).toEqual([]);
    const found = recoverInterruptedRuns({ store, ledger }, { ...at, nowMs: 30_000 });
    expect(found.map((r) => r.run_id)).toEqual(["run-1"]);
    expect(recoverInterruptedRuns({ store, ledger }, { ...at, nowMs: 30_000 })).toEqual([]);
    // The stalled owner wakes: its heartbeat fails and its own ending does not overwrite.
    expect(runs.heartbeat("run-1", "7@machine-a", 40_000)).toBe(false);
    runs.finishRun("run-1", "passed", null);
    expect(runs.getRun("run-1")?.status).toBe(RunStatus.Interrupted);
    expect(store.listEvents({ limit: 100 }).filter((e) => e.type === "run.interrupted")).toHaveLength(1);
    store.close();
  });
});

describe("per-workflow concurrency and event-claimed jobs (runner tasks, thread turns)", () => {
  const open = () => SqliteStore.open(join(tmp("ratchet-queue-db-"), "ratchet.db"), { create: true });
  const steps = [{ step_id: "a", ledger_step_id: null, mode: "learn_code" }];
  const queued = (id: string, wf = "w") => ({
    run_id: id,
    workflow_id: wf,
    workflow_path: "/w/workflow.yaml",
    trigger: "manual",
    group_name: null,
    bundle_hash: "h",
    queued_by: "1@here",
  });

  test("a claim with max_running refuses at the limit (nothing written) and counts only that workflow", () => {
    const store = open();
    const runs = runStoreOf(store);
    for (const id of ["r1", "r2", "r3"]) runs.enqueueRun(queued(id));
    runs.enqueueRun(queued("other", "w2"));
    const claim = { plan_id: "pl", owner: "7@a", lease_expires_at: 1000, max_running: 2 };
    expect(runs.claimRun("r1", claim, steps)?.status).toBe(RunStatus.Running);
    expect(runs.claimRun("r2", claim, steps)?.status).toBe(RunStatus.Running);
    expect(runs.claimRun("r3", claim, steps)).toBeUndefined();
    expect(runs.getRun("r3")?.status).toBe(RunStatus.Queued);
    expect(runs.stepRuns("r3")).toHaveLength(0);
    // Another workflow's limit is its own.
    expect(runs.claimRun("other", claim, steps)?.status).toBe(RunStatus.Running);
    runs.finishRun("r1", "passed", null);
    expect(runs.claimRun("r3", claim, steps)?.status).toBe(RunStatus.Running);
  });

  test("a runner/turn claim is taken once; a claim without a result is closed interrupted, then ended", () => {
    const store = open();
    expect(claimRunnerJob(store, "task-a", "q1", "7@a")).toBe("claimed");
    expect(claimRunnerJob(store, "task-a", "q1", "8@b")).toBe("interrupted");
    expect(claimRunnerJob(store, "task-a", "q1", "8@b")).toBe("ended");
    // Another enqueue of the same task is its own job.
    expect(claimRunnerJob(store, "task-a", "q2", "8@b")).toBe("claimed");
    expect(runnerJobEvents(store, "task-a", "q1").map((e) => e.type)).toEqual([
      "runner.job_claimed",
      "runner.job_interrupted",
    ]);
    // Thread turns use their own names and entity.
    expect(claimRunnerJob(store, "turn-1", "turn-1", "7@a", TurnEvent)).toBe("claimed");
    expect(runnerJobEvents(store, "turn-1", "turn-1", TurnEvent).map((e) => e.type)).toEqual([
      "thread.turn_claimed",
    ]);
    expect(runnerJobEvents(store, "turn-1", "turn-1")).toEqual([]);
  });

  test("the sweep closes claims whose owner pid is gone on this host, and leaves live ones", () => {
    const store = open();
    const host = hostname();
    claimRunnerJob(store, "dead", "q", `999999999@${host}`);
    claimRunnerJob(store, "live", "q", `${process.pid}@${host}`);
    claimRunnerJob(store, "far", "q", "1@another-host");
    expect(recoverRunnerTasks(store)).toEqual([{ task_id: "dead", queue_id: "q" }]);
    expect(recoverRunnerTasks(store)).toEqual([]);
  });

  test("runner and turn payloads from the database are checked", () => {
    expect(() => parseRunnerJob(null)).toThrow(/payload/);
    expect(() => parseRunnerJob({ task_id: "t", queue_id: "", spec: {} })).toThrow(/queue_id/);
    expect(() => parseRunnerJob({ task_id: "t", queue_id: "q", spec: [] })).toThrow(/spec/);
    expect(parseRunnerJob({ task_id: "t", queue_id: "q", spec: { a: 1 } }).task_id).toBe("t");
    expect(() => parseThreadTurn({ turn_id: "x", op: "delete" })).toThrow(/op/);
    expect(() => parseThreadTurn({ turn_id: "x", op: "start", goal: "" })).toThrow(/goal/);
    expect(() => parseThreadTurn({ turn_id: "x", op: "resume" })).toThrow(/thread_id/);
    expect(() => parseThreadTurn({ turn_id: "x", op: "start", goal: "g", project: 3 })).toThrow(/project/);
    expect(parseThreadTurn({ turn_id: "x", op: "start", goal: "g" })).toEqual({
      turn_id: "x",
      op: "start",
      goal: "g",
      project: null,
      model: null,
    });
  });
});
