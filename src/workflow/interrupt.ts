/**
 * Crash recovery of runs. A run records its owner (`<pid>@<host>`). When a `running` run's owner
 * is on this host and no longer alive (`kill -9`, a power cut), the next `ratchet run`,
 * `runs list` or `runs show` marks it `interrupted`, fails its open ledger steps with the reason,
 * and the plan rolls up to FAILED — all in one transaction per run. A run a worker executes
 * (`ratchet worker`, src/queue/) also holds a lease (`lease_expires_at`, moved by its heartbeat):
 * once the lease has expired, any process on any machine marks it interrupted the same way — a
 * dead machine's runs do not stay `running`. The status is re-read under the write lock, so two
 * finders close a run once. Saved scripts and their metadata are untouched: runs never write the
 * workflow's folder, and `script_metadata.json` (in the run home) is only ever replaced atomically.
 */
import { hostname } from "node:os";
import type { Ledger } from "../ledger/index.js";
import type { Store } from "../store/index.js";
import { type RunLease, RunStatus, runStoreOf } from "./run-store.js";

/** Whether process `pid` exists on this host (`kill(pid, 0)`; EPERM means it exists). */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** Parses `<pid>@<host>`. */
export function parseOwner(owner: string): { pid: number; host: string } | undefined {
  const at = owner.indexOf("@");
  if (at <= 0) return undefined;
  const pid = Number(owner.slice(0, at));
  if (!Number.isSafeInteger(pid) || pid <= 0) return undefined;
  return { pid, host: owner.slice(at + 1) };
}

export interface InterruptedRun {
  run_id: string;
  owner: string;
  reason: string;
  /** Ledger steps failed because of it. */
  failed_steps: string[];
}

/** Why a running run is to be marked interrupted, or undefined when it may still be alive. */
export function interruptReason(
  run: RunLease,
  at: { host: string; nowMs: number; isAlive: (pid: number) => boolean },
): string | undefined {
  if (run.lease_expires_at !== null && run.lease_expires_at < at.nowMs)
    return `run interrupted: the lease of ${run.owner} expired at ${new Date(run.lease_expires_at).toISOString()} (last heartbeat ${run.heartbeat_at ?? "never"})`;
  const owner = parseOwner(run.owner);
  if (!owner || owner.host !== at.host || at.isAlive(owner.pid)) return undefined;
  return `run interrupted: owner process ${run.owner} is gone`;
}

/**
 * Marks every `running` run whose owner process is gone (same host) or whose lease has expired
 * (any host) as `interrupted`. Other hosts' runs without a lease are left alone (their owner cannot
 * be checked from here).
 */
export function recoverInterruptedRuns(
  ctx: { store: Store; ledger: Ledger },
  opts: { host?: string; isAlive?: (pid: number) => boolean; nowMs?: number } = {},
): InterruptedRun[] {
  const at = {
    host: opts.host ?? hostname(),
    isAlive: opts.isAlive ?? processAlive,
    nowMs: opts.nowMs ?? Date.now(),
  };
  const runs = runStoreOf(ctx.store);
  const out: InterruptedRun[] = [];
  for (const run of runs.runningLeases()) {
    const reason = interruptReason(run, at);
    if (!reason) continue;
    const failed = ctx.store.tx(() => {
      const cur = runs.getRun(run.run_id);
      if (cur?.status !== RunStatus.Running) return undefined;
      runs.markInterrupted(run.run_id, reason);
      return run.plan_id ? failOpenSteps(ctx.ledger, ctx.store, run.plan_id, reason) : [];
    });
    if (failed) out.push({ run_id: run.run_id, owner: run.owner, reason, failed_steps: failed });
  }
  return out;
}

/** Fails the open regular steps of a run's plan (started ones with `reason`, pending ones as not started). */
export function failOpenSteps(ledger: Ledger, store: Store, planId: string, reason: string): string[] {
  const plan = store.getPlan(planId);
  if (plan?.status !== "IN_PROGRESS") return [];
  const failed: string[] = [];
  for (const s of store.stepsOfPlan(planId)) {
    if (s.role !== "regular") continue;
    if (s.status === "IN_PROGRESS") {
      ledger.fail({ step_id: s.step_id, reason });
      failed.push(s.step_id);
    } else if (s.status === "PENDING") {
      ledger.start({ step_id: s.step_id });
      ledger.fail({ step_id: s.step_id, reason: `not started: ${reason}` });
      failed.push(s.step_id);
    }
  }
  return failed;
}
