/**
 * The MCP server of Ratchet: the ledger's write flows, starting a run, reading plans and runs, and
 * runner status as typed tools. The input schemas are the write flows' own JSON Schemas, and every
 * call goes through the same service function as the CLI and REST (`applyOp`, `startRun`,
 * `showPlan`). Served over streamable HTTP at `/mcp` and over stdio by `ratchet mcp`.
 */
import {
  assertNoForbiddenKeys,
  ErrorCode,
  MAX_ID_CHARS,
  MAX_TEXT_CHARS,
  RatchetError,
  toRatchetError,
} from "../core/index.js";
import { applyBatch, applyOp, FLOW_BY_OP, OP_NAMES, type Op, PlanStatus, showPlan } from "../ledger/index.js";
import { cancelRun, RunStatus } from "../workflow/index.js";
import type { ServerContext } from "./context.js";
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE } from "./limits.js";
import { ServerQueries } from "./queries.js";
import { plansPage } from "./routes/ledger.js";
import { listTasks, taskDetail, taskSummary } from "./routes/runner.js";
import { parseStartRun, runsPage, START_RUN_SCHEMA, startRun } from "./routes/runs.js";

/** The MCP tool name of a write flow: `publish-plan` → `publish_plan`. */
export const toolNameOf = (op: Op) => op.replaceAll("-", "_");

/** One MCP tool: its listing and the service call behind it. */
export interface ToolDef {
  name: string;
  description: string;
  inputSchema: Record<string, unknown>;
  write: boolean;
  call(args: Record<string, unknown>, ctx: ServerContext): Promise<Record<string, unknown>>;
}

const obj = (properties: Record<string, unknown>, required: string[] = []) => ({
  type: "object",
  properties,
  required,
  additionalProperties: false,
});

/** The input of a batch: `step_apply` and its older name `apply_ops`. */
const BATCH_SCHEMA = obj(
  {
    ops: {
      type: "array",
      description:
        "the write flows to apply, in order: each {op, as?, …that flow's input}; a later op may use {{label.path}} of an earlier op's result",
      items: {
        type: "object",
        properties: {
          op: { type: "string", enum: [...OP_NAMES], description: "the flow's marker op, e.g. start-step" },
          as: { type: "string", description: "a label for this op's result, used as {{label.path}} later" },
        },
        required: ["op"],
        additionalProperties: true,
      },
    },
    stop_on_error: { type: "boolean", description: "stop at the first failed op (default: apply every op)" },
  },
  ["ops"],
);

const CURSOR = {
  type: "string",
  description: "next_cursor of the previous page (absent: the first page)",
};
const LIMIT = {
  type: "integer",
  minimum: 1,
  maximum: MAX_PAGE_SIZE,
  description: `page size, 1 to ${MAX_PAGE_SIZE} (default ${DEFAULT_PAGE_SIZE})`,
};
const THREAD_ID = { type: "string", description: "the thread, e.g. th-…" };

async function applyBatchTool(args: Record<string, unknown>, ctx: ServerContext) {
  onlyFields(args, ["ops", "stop_on_error"]);
  if (!Array.isArray(args.ops))
    throw new RatchetError(ErrorCode.SchemaViolation, "field `ops`: must be an array", { field: "ops" });
  if (args.stop_on_error !== undefined && typeof args.stop_on_error !== "boolean")
    throw new RatchetError(ErrorCode.SchemaViolation, "field `stop_on_error`: must be a boolean", {
      field: "stop_on_error",
    });
  const r = await applyBatch(ctx.ledger, args.ops, {
    stopOnError: args.stop_on_error === true,
    ctx: { cwd: ctx.workspace.root },
  });
  ctx.hub.kick();
  return { ...r.summary, exit_status: r.status, lines: r.lines };
}

/** A thread decision (`approve` / `deny`), like `POST /api/threads/{id}/approve|deny`. */
function decisionTool(decision: "approve" | "deny"): ToolDef {
  const fields = ["thread_id", "approval_id", "reason", ...(decision === "approve" ? ["always"] : [])];
  return {
    name: decision,
    description:
      decision === "approve"
        ? "Approve the call a thread waits on (exactly that call and its arguments); the thread resumes. With always: also a standing grant for the action in the thread's project."
        : "Deny the call a thread waits on: its script gets a PermissionError it can catch; the thread resumes.",
    inputSchema: obj(
      {
        thread_id: THREAD_ID,
        approval_id: {
          type: "string",
          description: "the approval to decide (default: the thread's only pending approval)",
        },
        reason: {
          type: "string",
          maxLength: MAX_TEXT_CHARS,
          description: "why (recorded with the decision)",
        },
        ...(decision === "approve"
          ? { always: { type: "boolean", description: "also allow this action from now on in the project" } }
          : {}),
      },
      ["thread_id"],
    ),
    write: true,
    call: async (args, ctx) => {
      onlyFields(args, fields);
      const threadId = need(args, "thread_id");
      const approvalId = optText(args, "approval_id", MAX_ID_CHARS);
      const reason = optText(args, "reason", MAX_TEXT_CHARS);
      if (args.always !== undefined && typeof args.always !== "boolean")
        throw new RatchetError(ErrorCode.SchemaViolation, "field `always`: must be a boolean", {
          field: "always",
        });
      const svc = ctx.threads();
      const opts = { ...(approvalId ? { approvalId } : {}), ...(reason ? { reason } : {}), by: "mcp" };
      const r =
        decision === "approve"
          ? svc.approve(threadId, { ...opts, always: args.always === true })
          : svc.deny(threadId, opts);
      if (!r.driven) background(svc.resume(threadId));
      ctx.hub.kick();
      return { ok: true, op: decision, approval: r.approval, resumed: !r.driven };
    },
  };
}

/** A drive started by a tool runs on in the server; its end is in the thread row. */
function background(drive: Promise<unknown>): void {
  drive.catch(() => {});
}

/** Every tool of the MCP server, in listing order. */
export function toolDefs(): ToolDef[] {
  const flows: ToolDef[] = OP_NAMES.map((op) => ({
    name: toolNameOf(op),
    description: FLOW_BY_OP[op].summary,
    inputSchema: FLOW_BY_OP[op].input.json(),
    write: true,
    async call(args, ctx) {
      const outcome = await applyOp(ctx.ledger, op, args, { cwd: ctx.workspace.root });
      ctx.hub.kick();
      if (!outcome.ok) throw Object.assign(outcome.error!, { marker: outcome.marker });
      return { result: outcome.result, marker: outcome.marker };
    },
  }));
  return [
    ...flows,
    {
      name: "start_run",
      description:
        "Start a workflow run (saved scripts, no model); returns run_id once it is recorded. Follow it with get_run.",
      inputSchema: START_RUN_SCHEMA,
      write: true,
      call: async (args, ctx) => ({
        ok: true,
        op: "run-start",
        ...(await startRun(ctx, parseStartRun(args))),
      }),
    },
    {
      name: "step_apply",
      description:
        "Apply many write flows in order, like `ratchet step apply` and POST /api/flows/apply: each op is {op, as?, …input}; later ops can use {{label.path}} of an earlier op labelled with as. Result: {applied, failed, exit_status, lines}.",
      inputSchema: BATCH_SCHEMA,
      write: true,
      call: applyBatchTool,
    },
    {
      name: "apply_ops",
      description: "The older name of step_apply (same input and result); kept for existing clients.",
      inputSchema: BATCH_SCHEMA,
      write: true,
      call: applyBatchTool,
    },
    {
      name: "get_plan",
      description: "A plan's steps in tree order with statuses, logs, deviations, metrics and skills.",
      inputSchema: obj(
        {
          plan_id: { type: "string", description: "the plan, e.g. pl-…" },
          step: { type: "string", description: "only this step and its sub-steps" },
        },
        ["plan_id"],
      ),
      write: false,
      call: async (args, ctx) => {
        onlyFields(args, ["plan_id", "step"]);
        const planId = need(args, "plan_id");
        const step = optText(args, "step", MAX_ID_CHARS);
        return { ...showPlan(ctx.store, ctx.blobs, planId, step ? { step } : {}) };
      },
    },
    {
      name: "list_plans",
      description:
        "Plans, newest first, one page at a time (like GET /api/plans: same limits, same errors). Pass next_cursor back as cursor for the next page.",
      inputSchema: obj({
        status: { type: "string", enum: Object.values(PlanStatus), description: "only plans in this status" },
        kind: { type: "string", description: "only plans of this kind (e.g. workflow_run)" },
        limit: LIMIT,
        cursor: CURSOR,
      }),
      write: false,
      call: async (args, ctx) => {
        onlyFields(args, ["status", "kind", "limit", "cursor"]);
        return { ...plansPage(ctx.store, args) };
      },
    },
    {
      name: "list_runs",
      description:
        "Workflow runs, newest first, one page at a time (like GET /api/runs). Pass next_cursor back as cursor for the next page.",
      inputSchema: obj({
        status: { type: "string", enum: Object.values(RunStatus), description: "only runs in this status" },
        workflow_id: { type: "string", description: "only runs of this workflow id" },
        limit: LIMIT,
        cursor: CURSOR,
      }),
      write: false,
      call: async (args, ctx) => {
        onlyFields(args, ["status", "workflow_id", "limit", "cursor"]);
        return { ...runsPage(new ServerQueries(ctx.store), args) };
      },
    },
    {
      name: "get_run",
      description: "A workflow run with each step's mode, fast path, outcome, tokens, duration and error.",
      inputSchema: obj({ run_id: { type: "string", description: "the run, e.g. run-…" } }, ["run_id"]),
      write: false,
      call: async (args, ctx) => {
        onlyFields(args, ["run_id"]);
        const runId = need(args, "run_id");
        const run = ctx.runs.getRun(runId);
        if (!run) throw new RatchetError(ErrorCode.NotFound, `run ${runId} not found`, { field: "run_id" });
        return { run, steps: ctx.runs.stepRuns(runId) };
      },
    },
    {
      name: "cancel_run",
      description:
        "Cancel a running workflow run (like `ratchet runs cancel`): it ends cancelled with its processes gone; returns once it is closed (or after 10 s with status running).",
      inputSchema: obj({ run_id: { type: "string", description: "the run, e.g. run-…" } }, ["run_id"]),
      write: true,
      call: async (args, ctx) => {
        onlyFields(args, ["run_id"]);
        const r = await cancelRun(ctx, need(args, "run_id"), { by: "mcp" });
        ctx.hub.kick();
        return { ok: true, op: "run-cancel", ...r };
      },
    },
    {
      name: "start_thread",
      description:
        "Start a thread (an agent working on a goal with the workspace's tools and policy); it runs in the server. Returns thread_id; a call that needs approval waits for approve/deny.",
      inputSchema: obj(
        {
          goal: {
            type: "string",
            minLength: 1,
            maxLength: MAX_TEXT_CHARS,
            description: "what the thread should do",
          },
          project: { type: "string", description: "the project the thread works for (grants, policy)" },
          model: { type: "string", description: "provider:model (default: the workspace's model)" },
        },
        ["goal"],
      ),
      write: true,
      call: async (args, ctx) => {
        onlyFields(args, ["goal", "project", "model"]);
        const goal = need(args, "goal");
        if (goal.length > MAX_TEXT_CHARS)
          throw new RatchetError(
            ErrorCode.SchemaViolation,
            `field \`goal\`: at most ${MAX_TEXT_CHARS} characters`,
            {
              field: "goal",
            },
          );
        const project = optText(args, "project", MAX_ID_CHARS);
        const model = optText(args, "model", MAX_ID_CHARS);
        const svc = ctx.threads();
        const row = svc.create(goal, { ...(project ? { project } : {}), ...(model ? { model } : {}) });
        background(svc.run(row.thread_id));
        ctx.hub.kick();
        return { ok: true, op: "thread-start", thread_id: row.thread_id, state: row.state };
      },
    },
    decisionTool("approve"),
    decisionTool("deny"),
    {
      name: "get_thread",
      description: "A thread with its messages, tool calls, approvals, checkpoints and budget.",
      inputSchema: obj({ thread_id: THREAD_ID }, ["thread_id"]),
      write: false,
      call: async (args, ctx) => {
        onlyFields(args, ["thread_id"]);
        return { ...ctx.threads().show(need(args, "thread_id")) };
      },
    },
    {
      name: "runner_status",
      description:
        "Runner tasks of the server's runner folders; with task_id: its state, rounds, DoD runs and result.",
      inputSchema: obj({ task_id: { type: "string", description: "one task (default: every task)" } }),
      write: false,
      call: async (args, ctx) => {
        onlyFields(args, ["task_id"]);
        const taskId = optText(args, "task_id", MAX_ID_CHARS);
        return taskId ? taskDetail(ctx, taskId) : { items: listTasks(ctx).map(taskSummary) };
      },
    },
  ];
}

/** Refuses arguments a read tool does not take, by name (the write flows' schemas do the same). */
function onlyFields(args: Record<string, unknown>, allowed: readonly string[]): void {
  for (const k of Object.keys(args))
    if (!allowed.includes(k))
      throw new RatchetError(
        ErrorCode.SchemaViolation,
        `field \`${k}\`: unknown field (allowed: ${allowed.join(", ")})`,
        { field: k },
      );
}

/** An optional string argument of at most `max` characters. @throws `schema_violation` naming it. */
function optText(args: Record<string, unknown>, field: string, max: number): string | undefined {
  const v = args[field];
  if (v === undefined) return undefined;
  if (typeof v !== "string" || v.length > max)
    throw new RatchetError(
      ErrorCode.SchemaViolation,
      `field \`${field}\`: must be a string of at most ${max} characters`,
      { field },
    );
  return v === "" ? undefined : v;
}

function need(args: Record<string, unknown>, field: string): string {
  const v = args[field];
  if (typeof v !== "string" || v === "")
    throw new RatchetError(ErrorCode.SchemaViolation, `field \`${field}\`: must be a non-empty string`, {
      field,
    });
  return v;
}

/**
 * The refusals of the `tools/call` messages of a raw JSON-RPC body (one message or a batch), by
 * id: arguments holding a `__proto__`, `constructor` or `prototype` key. Checked on the raw JSON
 * because the SDK's parser drops a `__proto__` key without a word.
 */
export function argumentRefusals(body: unknown): Map<string | number, RatchetError> {
  const out = new Map<string | number, RatchetError>();
  for (const m of Array.isArray(body) ? body : [body]) {
    if (m === null || typeof m !== "object") continue;
    const msg = m as { method?: unknown; id?: unknown; params?: { arguments?: unknown } };
    if (msg.method !== "tools/call" || (typeof msg.id !== "string" && typeof msg.id !== "number")) continue;
    try {
      assertNoForbiddenKeys(msg.params?.arguments);
    } catch (e) {
      out.set(msg.id, toRatchetError(e));
    }
  }
  return out;
}
