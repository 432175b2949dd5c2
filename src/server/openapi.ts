/** The OpenAPI 3.1 document of the REST API, built from the same schemas the routes validate with. */
import { FLOWS } from "../ledger/index.js";
import { START_RUN_SCHEMA } from "./routes/runs.js";

const json = (schema: Record<string, unknown>) => ({ "application/json": { schema } });
const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const text = { "text/plain": { schema: { type: "string" } } };

const errors = (...codes: number[]) =>
  Object.fromEntries(
    codes.map((s) => [String(s), { description: STATUS_TEXT[s], content: json(ref("Error")) }]),
  );

const STATUS_TEXT: Record<number, string> = {
  400: "bad input: the body or a parameter (error.field names it)",
  401: "missing or wrong bearer token; nothing was written",
  403: "the server runs with --read-only",
  404: "no such plan, step, run, workflow, task or file",
  409: "refused by a state machine, a breaker or the revision budget; nothing was written",
  413: "body too large",
  422: "the work ran and failed",
};

const q = (name: string, description: string, schema: Record<string, unknown> = { type: "string" }) => ({
  name,
  in: "query",
  required: false,
  description,
  schema,
});
const p = (name: string) => ({ name, in: "path", required: true, schema: { type: "string" } });
const paging = [
  q("limit", "page size (1–500, default 50)", { type: "integer", minimum: 1, maximum: 500 }),
  q("cursor", "next_cursor of the previous page"),
];
const get = (
  summary: string,
  params: unknown[] = [],
  content: Record<string, unknown> = json({ type: "object" }),
) => ({
  get: {
    summary,
    parameters: params,
    responses: { 200: { description: "ok", content }, ...errors(400, 404) },
  },
});

/** Builds the document; `extraPaths` are path items described by mounted route groups. */
export function openApiDocument(extraPaths: Record<string, unknown> = {}): Record<string, unknown> {
  const paths: Record<string, unknown> = {
    "/api/health": get("liveness and the newest event id"),
    "/api/plans": get(
      "plans, newest first",
      [
        q("status", "plan status"),
        q("kind", "plan kind"),
        q(
          "exclude_kind",
          "plan kinds to leave out, comma-separated (the dashboard: workflow_run,builder_run)",
        ),
        q("project", "project id"),
        q("since", "created at or after (ISO time)"),
        q("until", "created before (ISO time)"),
        q("q", "words that must all occur in the goal or in one step title (at most 8, 200 characters)"),
        ...paging,
      ],
      json(ref("Page")),
    ),
    "/api/plans/{planId}": get("a plan: steps in tree order with logs, deviations, metrics, skills", [
      p("planId"),
      q("step", "only this step and its sub-steps"),
    ]),
    "/api/steps/{stepId}": get("a step with its full logs (from blobs)", [p("stepId")]),
    "/api/blobs/{hash}": get("a blob's text", [p("hash")], text),
    "/api/metrics": get(
      "metrics, newest first",
      [q("name", "metric name"), q("plan_id", "plan"), ...paging],
      json(ref("Page")),
    ),
    "/api/projects": get("registered projects"),
    "/api/flows": get("the write flows' op names"),
    "/api/runs": {
      ...get(
        "workflow runs, newest first",
        [
          q("workflow_id", "workflow"),
          q("status", "run status"),
          q("trigger", "manual, schedule, webhook or run_saved"),
          q("since", "started at or after (ISO time)"),
          q("until", "started before (ISO time)"),
          ...paging,
        ],
        json(ref("Page")),
      ),
      post: {
        summary: "start a workflow run (replies once it is recorded)",
        security: [{ bearer: [] }],
        requestBody: { required: true, content: json(START_RUN_SCHEMA) },
        responses: {
          202: { description: "started", content: json({ type: "object" }) },
          ...errors(400, 401, 403, 404),
        },
      },
    },
    "/api/runs/{runId}": get("a run with each step's mode, fast path, outcome, tokens, duration, error", [
      p("runId"),
    ]),
    "/api/runs/{runId}/cancel": {
      post: {
        summary:
          "cancel a running run: it ends cancelled with its processes gone (replies once closed, or after 10 s with status running)",
        security: [{ bearer: [] }],
        parameters: [p("runId")],
        responses: {
          200: { description: "cancelled (or requested)", content: json({ type: "object" }) },
          ...errors(401, 403, 404, 409),
        },
      },
    },
    "/api/workflows": get("workflows known from the run tables and --workflow"),
    "/api/workflows/{workflowId}": get("a workflow's steps: mode, saved script, streak, evidence", [
      p("workflowId"),
    ]),
    "/api/workflows/{workflowId}/scripts/{stepId}": get(
      "a learned script: source, metadata, diffs, evidence",
      [p("workflowId"), p("stepId")],
    ),
    "/api/workflows/{workflowId}/scripts/{stepId}/diffs/{name}": get(
      "one diff between saved versions",
      [p("workflowId"), p("stepId"), p("name")],
      text,
    ),
    "/api/runner/tasks": get("runner tasks of the --runner-dir folders"),
    "/api/runner/tasks/{taskId}": get("a runner task: state, result, rounds, DoD runs, events", [
      p("taskId"),
    ]),
    "/api/runner/tasks/{taskId}/patch": get("a runner task's patch", [p("taskId")], text),
    "/events": get(
      "server-sent events from the events table (id: on every message; resume with Last-Event-ID)",
      [
        q("since", "resume after this event id"),
        q("plan_id", "filter"),
        q("entity_kind", "filter"),
        q("entity_id", "filter"),
      ],
      { "text/event-stream": { schema: { type: "string" } } },
    ),
    "/mcp": {
      post: {
        summary: "MCP over streamable HTTP (stateless)",
        security: [{ bearer: [] }],
        responses: { 200: { description: "JSON-RPC reply" }, ...errors(401) },
      },
    },
    "/openapi.json": get("this document"),
  };
  for (const flow of FLOWS) {
    const op = flow.op;
    paths[`/api/flows/${op}`] = {
      post: {
        summary: flow.summary,
        description: `write flow ${op} (\`ratchet ${flow.command.join(" ")}\`): same input and marker as the CLI`,
        operationId: op.replaceAll("-", "_"),
        security: [{ bearer: [] }],
        requestBody: {
          required: !flow.optionalInput,
          content: { "application/json": { schema: flow.input.json(), example: flow.example } },
        },
        responses: {
          200: { description: "done: {ok:true, op, result, marker}", content: json(ref("FlowResult")) },
          ...errors(400, 401, 403, 404, 409, 413),
        },
      },
    };
  }
  paths["/api/flows/apply"] = {
    post: {
      summary: "Apply many write flows in order (`ratchet step apply`); `{{label.path}}` references",
      operationId: "apply",
      security: [{ bearer: [] }],
      requestBody: {
        required: true,
        content: json({
          type: "object",
          required: ["ops"],
          properties: {
            ops: { type: "array", items: { type: "object", required: ["op"] } },
            stop_on_error: { type: "boolean" },
          },
        }),
      },
      responses: { 200: { description: "one marker per op and the summary" }, ...errors(400, 401, 403, 413) },
    },
  };
  Object.assign(paths, extraPaths);
  return {
    openapi: "3.1.0",
    info: {
      title: "Ratchet",
      version: "0.1.0",
      description: "REST API of `ratchet serve` (docs/server.md).",
    },
    components: {
      securitySchemes: {
        bearer: { type: "http", scheme: "bearer" },
        // Webhook triggers: HMAC-SHA256 of "<X-Ratchet-Timestamp>.<raw body>" (docs/server.md#webhooks).
        webhookSignature: { type: "apiKey", in: "header", name: "X-Ratchet-Signature" },
      },
      schemas: {
        Error: {
          type: "object",
          properties: {
            ok: { const: false },
            error: {
              type: "object",
              properties: {
                code: { type: "string" },
                message: { type: "string" },
                field: { type: "string" },
              },
              required: ["code", "message"],
            },
            marker: { type: "object", description: "write flows: the CLI's tail marker" },
          },
          required: ["ok", "error"],
        },
        Page: {
          type: "object",
          properties: {
            items: { type: "array", items: { type: "object" } },
            next_cursor: { type: ["string", "null"] },
          },
          required: ["items", "next_cursor"],
        },
        FlowResult: {
          type: "object",
          properties: {
            ok: { const: true },
            op: { type: "string" },
            result: { type: "object" },
            marker: { type: "object" },
          },
          required: ["ok", "op", "result", "marker"],
        },
      },
    },
    paths,
  };
}
