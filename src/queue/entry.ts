/**
 * One decision for every entry point that starts a run (`POST /api/runs`, the MCP `start_run`
 * tool, the webhook route): enqueue it when the workspace has a queue (PostgreSQL store and
 * `queue.enabled` / `RATCHET_QUEUE=1`), else start it in this process as before.
 */
import type { Blobs, Store, Workspace } from "../store/index.js";
import type { RunTrigger, Workflow } from "../workflow/index.js";
import { loadQueueConfig } from "./config.js";
import { enqueueRun, type QueuedRun } from "./enqueue.js";

export interface StartRequest {
  workflow: Workflow;
  vars?: Record<string, string>;
  group?: string;
  only?: readonly string[];
  trigger?: RunTrigger;
  stepTimeoutSeconds?: number;
}

export type StartOutcome<T> = ({ queued: true; status: "queued" } & QueuedRun) | ({ queued: false } & T);

/**
 * Enqueues `req` when the workspace has a queue, else calls `startLocally` (the caller's own start).
 * @throws the enqueue's refusals (`only`, `group`, `bundle`) or `startLocally`'s.
 */
export async function enqueueOrStart<T extends object>(
  ctx: { workspace: Workspace; store: Store; blobs: Blobs },
  req: StartRequest,
  startLocally: () => Promise<T>,
  env: NodeJS.ProcessEnv = process.env,
): Promise<StartOutcome<T>> {
  if (!ctx.workspace.storeUrl || !loadQueueConfig(ctx.workspace.dir, env).enabled)
    return { queued: false, ...(await startLocally()) };
  const q = await enqueueRun(ctx, req.workflow, {
    ...(req.vars ? { vars: req.vars } : {}),
    ...(req.group !== undefined ? { group: req.group } : {}),
    ...(req.only ? { only: req.only } : {}),
    ...(req.trigger ? { trigger: req.trigger } : {}),
    ...(req.stepTimeoutSeconds !== undefined ? { stepTimeoutSeconds: req.stepTimeoutSeconds } : {}),
  });
  return { queued: true, status: "queued", ...q };
}
