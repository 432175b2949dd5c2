/**
 * The MCP server of Ratchet: the ledger's write flows, starting a run, reading plans and runs, and
 * runner status as typed tools. The input schemas are the write flows' own JSON Schemas, and every
 * call goes through the same service function as the CLI and REST (`applyOp`, `startRun`,
 * `showPlan`). Served over streamable HTTP at `/mcp` and over stdio by `ratchet mcp`.
 */
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import {
  CallToolRequestSchema,
  type CallToolResult,
  ListToolsRequestSchema,
} from "@modelcontextprotocol/sdk/types.js";
import { assertNoForbiddenKeys, ErrorCode, RatchetError, toRatchetError } from "../core/index.js";
import { applyBatch, applyOp, FLOW_BY_OP, OP_NAMES, type Op, PlanStatus, showPlan } from "../ledger/index.js";
import type { ServerContext } from "./context.js";
import { MAX_PAGE_SIZE } from "./limits.js";
import { planListFilter } from "./routes/ledger.js";
import { listTasks, taskDetail, taskSummary } from "./routes/runner.js";
import { parseStartRun, START_RUN_SCHEMA, startRun } from "./routes/runs.js";

const VERSION = "0.1.0";

/** The MCP tool name of a write flow: `publish-plan` → `publish_plan`. */
export const toolNameOf = (op: Op) => op.replaceAll("-", "_");

interface ToolDef {
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

function toolDefs(): ToolDef[] {
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
      name: "apply_ops",
      description:
        "Apply many write flows in order, like `ratchet step apply`: each op is {op, as?, …input}; later ops can use {{label.path}} of an earlier op labelled with as.",
      inputSchema: obj(
        {
          ops: { type: "array", items: { type: "object", required: ["op"] } },
          stop_on_error: { type: "boolean" },
        },
        ["ops"],
      ),
      write: true,
      call: async (args, ctx) => {
        onlyFields(args, ["ops", "stop_on_error"]);
        if (!Array.isArray(args.ops))
          throw new RatchetError(ErrorCode.SchemaViolation, "field `ops`: must be an array", {
            field: "ops",
          });
        const r = await applyBatch(ctx.ledger, args.ops, {
          stopOnError: args.stop_on_error === true,
          ctx: { cwd: ctx.workspace.root },
        });
        ctx.hub.kick();
        return { ...r.summary, exit_status: r.status, lines: r.lines };
      },
    },
    {
      name: "get_plan",
      description: "A plan's steps in tree order with statuses, logs, deviations, metrics and skills.",
      inputSchema: obj(
        {
          plan_id: { type: "string" },
          step: { type: "string", description: "only this step and its sub-steps" },
        },
        ["plan_id"],
      ),
      write: false,
      call: async (args, ctx) => {
        onlyFields(args, ["plan_id", "step"]);
        const planId = need(args, "plan_id");
        const step = typeof args.step === "string" ? args.step : undefined;
        return { ...showPlan(ctx.store, ctx.blobs, planId, step ? { step } : {}) };
      },
    },
    {
      name: "list_plans",
      description: "Plans, newest first.",
      inputSchema: obj({
        status: { type: "string", enum: Object.values(PlanStatus) },
        limit: { type: "integer", minimum: 1, maximum: MAX_PAGE_SIZE },
      }),
      write: false,
      call: async (args, ctx) => {
        onlyFields(args, ["status", "limit"]);
        const { limit, status } = planListFilter(args);
        return { items: ctx.store.listPlans({ limit, ...(status ? { status } : {}) }) };
      },
    },
    {
      name: "get_run",
      description: "A workflow run with each step's mode, fast path, outcome, tokens, duration and error.",
      inputSchema: obj({ run_id: { type: "string" } }, ["run_id"]),
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
      name: "runner_status",
      description:
        "Runner tasks of the server's runner folders; with task_id: its state, rounds, DoD runs and result.",
      inputSchema: obj({ task_id: { type: "string" } }),
      write: false,
      call: async (args, ctx) => {
        onlyFields(args, ["task_id"]);
        return typeof args.task_id === "string"
          ? taskDetail(ctx, args.task_id)
          : { items: listTasks(ctx).map(taskSummary) };
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

function need(args: Record<string, unknown>, field: string): string {
  const v = args[field];
  if (typeof v !== "string" || v === "")
    throw new RatchetError(ErrorCode.SchemaViolation, `field \`${field}\`: must be a non-empty string`, {
      field,
    });
  return v;
}

function reply(value: Record<string, unknown>, isError = false): CallToolResult {
  return { content: [{ type: "text", text: JSON.stringify(value) }], structuredContent: value, isError };
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

/** Options of {@link createMcpServer}. */
export interface McpServerOptions {
  /** Refuse every write tool. Default false. */
  readOnly?: boolean;
  /**
   * Refusals found on the raw JSON of the request (by JSON-RPC id) before the SDK parsed it: a
   * `tools/call` with one of these ids answers with the error instead of running.
   */
  refusals?: ReadonlyMap<string | number, RatchetError>;
}

function errorReply(err: RatchetError, marker?: unknown): CallToolResult {
  return reply(
    {
      ok: false,
      error: {
        code: err.code,
        message: err.message,
        ...(err.details.field ? { field: err.details.field } : {}),
      },
      ...(marker ? { marker } : {}),
    },
    true,
  );
}

/** A new MCP server over `ctx` (one per HTTP request in stateless mode; one for stdio). */
export function createMcpServer(
  ctx: ServerContext | (() => ServerContext),
  opts: McpServerOptions = {},
): Server {
  const server = new Server({ name: "ratchet", version: VERSION }, { capabilities: { tools: {} } });
  const ctxOf = typeof ctx === "function" ? ctx : () => ctx;
  const defs = toolDefs();
  const byName = new Map(defs.map((d) => [d.name, d]));
  server.setRequestHandler(ListToolsRequestSchema, async () => ({
    tools: defs.map((d) => ({
      name: d.name,
      description: d.description,
      inputSchema: d.inputSchema as { type: "object" },
      annotations: { readOnlyHint: !d.write },
    })),
  }));
  server.setRequestHandler(CallToolRequestSchema, async (req, extra) => {
    const refused = opts.refusals?.get(extra.requestId);
    if (refused) return errorReply(refused);
    const def = byName.get(req.params.name);
    if (!def)
      return reply(
        { ok: false, error: { code: ErrorCode.NotFound, message: `no tool ${req.params.name}` } },
        true,
      );
    if (def.write && opts.readOnly)
      return reply(
        {
          ok: false,
          error: { code: "read_only", message: "the server runs with --read-only: writes are refused" },
        },
        true,
      );
    try {
      const args = (req.params.arguments ?? {}) as Record<string, unknown>;
      assertNoForbiddenKeys(args);
      return reply(await def.call(args, ctxOf()));
    } catch (e) {
      return errorReply(toRatchetError(e), (e as { marker?: unknown }).marker);
    }
  });
  return server;
}
