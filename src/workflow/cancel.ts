/**
 * Cancelling a run (`ratchet runs cancel`, `POST /api/runs/{id}/cancel`). The process executing a
 * run may be another one, so the request goes through the store: it is recorded as a
 * `run.cancel_requested` event, which the executing process polls every {@link CANCEL_POLL_MS};
 * it aborts the run's signal, the exec door kills the script's whole process group (as at a
 * time-out), and the run closes `cancelled`. A run whose owner process is gone (same host) has
 * nobody to act on the request, so it is closed `cancelled` directly, its open ledger steps failed.
 */
import { hostname } from "node:os";
import { ErrorCode, RatchetError } from "../core/index.js";
import type { Ledger } from "../ledger/index.js";
import type { Store } from "../store/index.js";
import { failOpenSteps, parseOwner, processAlive } from "./interrupt.js";
import { CANCEL_POLL_MS, CANCEL_WAIT_MS } from "./run-limits.js";
import { RunStatus, type RunStore, runStoreOf, type WorkflowRunRow } from "./run-store.js";

export interface CancelResult {
  run_id: string;
  /** The run's status when the call returns (`cancelled`, or `running` if its process has not closed it yet). */
  status: string;
  /** `requested`: the executing process was asked; `direct`: its owner was gone, closed here. */
  how: "requested" | "direct";
}

/**
 * Cancels a running run and waits (bounded by `waitMs`) until it is closed.
 * @throws `not_found` (no such run), `illegal_transition` (the run is not running).
 */
export async function cancelRun(
  ctx: { store: Store; ledger: Ledger },
  runId: string,
  opts: { by?: string; waitMs?: number; isAlive?: (pid: number) => boolean } = {},
): Promise<CancelResult> {
  const runs = runStoreOf(ctx.store);
  const run = runs.getRun(runId);
  if (!run) throw new RatchetError(ErrorCode.NotFound, `run ${runId} not found`, { field: "run_id", runId });
  // A queued run no worker has claimed yet is closed here; its job then finds it not queued.
  if (run.status === RunStatus.Queued) {
    runs.markCancelled(runId, `run cancelled before a worker claimed it (by ${opts.by ?? "cli"})`);
    return { run_id: runId, status: statusOf(runs, runId), how: "direct" };
  }
  if (run.status !== RunStatus.Running)
    throw new RatchetError(
      ErrorCode.IllegalTransition,
      `run ${runId} is ${run.status}, not running: only a running run can be cancelled`,
      { field: "run_id", runId, from: run.status, to: RunStatus.Cancelled },
    );
  const owner = parseOwner(run.owner);
  const alive = opts.isAlive ?? processAlive;
  if (owner && owner.host === hostname() && !alive(owner.pid)) {
    const reason = `run cancelled: its owner process ${run.owner} is gone`;
    const closed = ctx.store.tx(() => {
      const cur = runs.getRun(runId);
      if (cur?.status !== RunStatus.Running) return false;
      runs.markCancelled(runId, reason);
      if (run.plan_id) failOpenSteps(ctx.ledger, ctx.store, run.plan_id, reason);
      return true;
    });
    return { run_id: runId, status: closed ? RunStatus.Cancelled : statusOf(runs, runId), how: "direct" };
  }
  if (!runs.requestCancel(runId, opts.by ?? "cli"))
    return { run_id: runId, status: statusOf(runs, runId), how: "requested" };
  const until = Date.now() + (opts.waitMs ?? CANCEL_WAIT_MS);
  while (Date.now() < until && statusOf(runs, runId) === RunStatus.Running)
    await new Promise((r) => setTimeout(r, CANCEL_POLL_MS / 2));
  return { run_id: runId, status: statusOf(runs, runId), how: "requested" };
}

function statusOf(runs: RunStore, runId: string): WorkflowRunRow["status"] {
  return runs.requireRun(runId).status;
}
