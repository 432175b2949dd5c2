/**
 * `POST /api/workflows/{id}/trigger`: starts a run of a workflow that declares `webhook:`, recorded
 * with `trigger=webhook`. Authenticated by the server's bearer token, or — when the workflow names
 * `webhook: {secret_env: NAME}` — by an HMAC signature of the raw body (webhook-signature.ts). The
 * body's JSON is `{vars?: {NAME: "value"}, group?: "name"}`, checked like `POST /api/runs`.
 *
 * Refusals, each before anything is recorded: read-only 403; unknown workflow or no `webhook:` 404;
 * no token and no (or a bad, stale or replayed) signature 401; bad body or variables 400 naming the
 * field. A run never self-heals: the trigger goes through `runWorkflow` like every other one.
 */
import { join } from "node:path";
import type { Context } from "hono";
import {
  assertNoForbiddenKeys,
  decodeUtf8Strict,
  ErrorCode,
  RatchetError,
  toRatchetError,
} from "../../core/index.js";
import {
  normaliseVariableName,
  RunTrigger,
  resolveSecrets,
  WORKFLOW_ID_PATTERN,
  type Workflow,
} from "../../workflow/index.js";
import type { RouteGroup, ServerEnv } from "../app.js";
import type { ServerContext } from "../context.js";
import { replyCode, ServerErrorCode } from "../http.js";
import { ServerQueries } from "../queries.js";
import {
  checkSignature,
  REFUSAL_MESSAGES,
  ReplayGuard,
  SIGNATURE_HEADER,
  TIMESTAMP_HEADER,
} from "../webhook-signature.js";
import { parseStartRun, type StartRunBody, startRun } from "./runs.js";
import { findWorkflow } from "./workflows.js";

/** Fields of a trigger's body. */
const TRIGGER_FIELDS = ["vars", "group"];

const bad = (field: string, message: string): never => {
  throw new RatchetError(ErrorCode.SchemaViolation, `field \`${field}\`: ${message}`, { field });
};

/**
 * The webhook workflow `id`, or a 404 that says the same for "no such workflow" and "not a webhook
 * workflow" apart from the reason (ids are listed by the open `GET /api/workflows` anyway).
 */
function webhookWorkflow(ctx: ServerContext, q: ServerQueries, id: string): Workflow {
  const notFound = (why: string) =>
    new RatchetError(ErrorCode.NotFound, `no webhook for workflow ${JSON.stringify(id)}: ${why}`, {
      field: "workflow_id",
    });
  if (!WORKFLOW_ID_PATTERN.test(id)) throw notFound("not a workflow id");
  let wf: Workflow;
  try {
    wf = findWorkflow(ctx, q, id);
  } catch (e) {
    if (toRatchetError(e).code === ErrorCode.NotFound) throw notFound("the server knows no such workflow");
    throw e;
  }
  if (!wf.webhook) throw notFound("the workflow does not declare `webhook: true`");
  return wf;
}

/** The HMAC secret of a workflow: env `NAME`, else `NAME` in the secrets file (mode 0600). */
function webhookSecret(ctx: ServerContext, wf: Workflow, name: string): string | undefined {
  const secret = name.replace(/^SECRET_/i, "").toUpperCase();
  try {
    const got = resolveSecrets(
      { ...wf, secrets: [secret] },
      { env: { [`SECRET_${secret}`]: process.env[name] }, secretsFile: join(ctx.workspace.dir, "secrets") },
    );
    return got[`SECRET_${secret}`];
  } catch {
    return undefined;
  }
}

/** The body as a trigger: `{vars?, group?}`, each variable one the workflow declares. */
export function parseTrigger(wf: Workflow, raw: unknown): StartRunBody {
  if (raw === null || typeof raw !== "object" || Array.isArray(raw)) bad("body", "must be a JSON object");
  assertNoForbiddenKeys(raw);
  const o = raw as Record<string, unknown>;
  for (const k of Object.keys(o))
    if (!TRIGGER_FIELDS.includes(k)) bad(k, `unknown field (allowed: ${TRIGGER_FIELDS.join(", ")})`);
  const body = parseStartRun({ ...o, workflow: wf.source });
  for (const k of Object.keys(body.vars ?? {})) {
    const name = normaliseVariableName(k);
    if (!Object.hasOwn(wf.variables, name))
      bad(
        `vars.${k}`,
        `workflow ${wf.id} declares no variable ${name} (declared: ${Object.keys(wf.variables).join(", ") || "none"})`,
      );
  }
  return { ...body, trigger: RunTrigger.Webhook };
}

function parseJson(bytes: Uint8Array): unknown {
  const text = decodeUtf8Strict(bytes, "the request body", "body");
  if (text.trim() === "") return {};
  try {
    return JSON.parse(text) as unknown;
  } catch (e) {
    throw new RatchetError(ErrorCode.MalformedInput, `the body is not valid JSON: ${(e as Error).message}`, {
      field: "body",
    });
  }
}

export const webhookRoutes: RouteGroup = (app, { ctx, readOnly, tokenValid, bodyLimit, describe }) => {
  const q = new ServerQueries(ctx.store);
  const replays = new ReplayGuard();

  /** undefined when the request may trigger `wf`, else the 401 reply. */
  const refusal = (c: Context<ServerEnv>, wf: Workflow, body: Uint8Array): Response | undefined => {
    if (c.req.header("authorization") !== undefined) {
      return tokenValid(c)
        ? undefined
        : replyCode(c, ServerErrorCode.Unauthorized, "missing or invalid bearer token");
    }
    const signature = c.req.header(SIGNATURE_HEADER);
    if (signature === undefined)
      return replyCode(
        c,
        ServerErrorCode.Unauthorized,
        wf.webhook?.secretEnv
          ? `send the bearer token or an ${SIGNATURE_HEADER} signature`
          : `workflow ${wf.id} accepts only the bearer token (it names no webhook.secret_env)`,
      );
    const name = wf.webhook?.secretEnv;
    if (!name)
      return replyCode(
        c,
        ServerErrorCode.Unauthorized,
        `workflow ${wf.id} names no webhook.secret_env: signatures are not accepted, send the bearer token`,
      );
    const secret = webhookSecret(ctx, wf, name);
    if (!secret)
      return replyCode(
        c,
        ServerErrorCode.Unauthorized,
        `the server has no value for ${name} (environment or .ratchet/secrets): signatures cannot be checked`,
      );
    const now = Math.floor(Date.now() / 1000);
    const why =
      checkSignature({
        secret,
        signature,
        timestamp: c.req.header(TIMESTAMP_HEADER),
        body,
        nowSeconds: now,
      }) ?? (replays.use(signature.trim(), now) ? undefined : "replayed");
    return why ? replyCode(c, ServerErrorCode.Unauthorized, REFUSAL_MESSAGES[why], "signature") : undefined;
  };

  app.post("/api/workflows/:workflowId/trigger", bodyLimit, async (c) => {
    if (readOnly)
      return replyCode(c, ServerErrorCode.ReadOnly, "the server runs with --read-only: writes are refused");
    const wf = webhookWorkflow(ctx, q, c.req.param("workflowId"));
    const raw = new Uint8Array(await c.req.arrayBuffer());
    const denied = refusal(c, wf, raw);
    if (denied) return denied;
    const body = parseTrigger(wf, parseJson(raw));
    // Queued for a worker when the workspace has a queue (src/queue/entry.ts), else run here.
    const r = await startRun(ctx, body);
    return c.json({ ok: true, op: "webhook-trigger", trigger: RunTrigger.Webhook, ...r }, 202);
  });

  describe({
    "/api/workflows/{workflowId}/trigger": {
      post: {
        summary:
          "start a run of a workflow that declares `webhook:` (trigger=webhook); bearer token or X-Ratchet-Signature",
        security: [{ bearer: [] }, { webhookSignature: [] }],
        parameters: [
          { name: "workflowId", in: "path", required: true, schema: { type: "string" } },
          {
            name: "X-Ratchet-Signature",
            in: "header",
            required: false,
            description:
              'sha256=<hex HMAC-SHA256 of "<timestamp>.<raw body>"> with the secret of webhook.secret_env',
            schema: { type: "string" },
          },
          {
            name: "X-Ratchet-Timestamp",
            in: "header",
            required: false,
            description: "unix seconds; refused more than 5 minutes from the server's clock",
            schema: { type: "string" },
          },
        ],
        requestBody: {
          required: false,
          content: {
            "application/json": {
              schema: {
                type: "object",
                properties: {
                  vars: { type: "object", additionalProperties: { type: "string" } },
                  group: { type: "string" },
                },
                additionalProperties: false,
              },
            },
          },
        },
        responses: {
          202: { description: "started: {run_id, plan_id, workflow_id, trigger}" },
          400: { description: "bad body or variable (error.field names it)" },
          401: { description: "no valid token, and no valid, fresh, unused signature" },
          403: { description: "read-only server" },
          404: { description: "no such workflow, or it does not declare webhook" },
        },
      },
    },
  });
};
