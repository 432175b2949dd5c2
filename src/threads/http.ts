/**
 * Thread routes for a hono app (`ratchet serve` mounts them behind its token check):
 *
 *   GET  /threads                 list (?state=&limit=)
 *   GET  /threads/:id             show
 *   POST /threads                 {goal, project?, model?}: create and drive in the background (202)
 *   POST /threads/:id/resume      drive a Waiting/Suspended thread in the background (202)
 *   POST /threads/:id/approve     {approval_id?, always?, reason?}: decide; drives the thread when no process does
 *   POST /threads/:id/deny        {approval_id?, reason?}
 *   POST /threads/:id/cancel      {reason?}
 *
 * Routes parse, call the service, serialise; errors map through `httpStatusFor` to
 * `{error: {code, message}}`.
 */
import type { Context, Hono } from "hono";
import { z } from "zod";
import {
  assertNoForbiddenKeys,
  decodeUtf8Strict,
  ErrorCode,
  httpStatusFor,
  MAX_ID_CHARS,
  MAX_TEXT_CHARS,
  RatchetError,
  toRatchetError,
} from "../core/index.js";
import type { ThreadService } from "./service.js";
import { isResumable } from "./states.js";

export interface ThreadRoutesOptions {
  /** Path prefix. Default `/threads`. */
  prefix?: string;
  /** Receives each background drive (default: errors are swallowed; the thread row has the reason). */
  background?: (drive: Promise<unknown>) => void;
  /** Who decides (recorded on approvals). Default `http`. */
  actor?: string;
}

const startBody = z.strictObject({
  goal: z.string().min(1).max(MAX_TEXT_CHARS),
  project: z.string().min(1).max(MAX_ID_CHARS).optional(),
  model: z.string().min(1).max(MAX_ID_CHARS).optional(),
});
const decideBody = z.strictObject({
  approval_id: z.string().min(1).max(MAX_ID_CHARS).optional(),
  always: z.boolean().optional(),
  reason: z.string().max(MAX_TEXT_CHARS).optional(),
});
const cancelBody = z.strictObject({ reason: z.string().max(MAX_TEXT_CHARS).optional() });
const injectBody = z.strictObject({ message: z.string().min(1).max(MAX_TEXT_CHARS) });

async function body<T>(c: Context, schema: z.ZodType<T>): Promise<T> {
  const text = decodeUtf8Strict(new Uint8Array(await c.req.arrayBuffer()), "the request body", "body");
  let json: unknown = {};
  if (text.trim() !== "") {
    try {
      json = JSON.parse(text);
    } catch (e) {
      throw new RatchetError(
        ErrorCode.MalformedInput,
        `the body is not valid JSON: ${(e as Error).message}`,
        { field: "body" },
      );
    }
    assertNoForbiddenKeys(json);
  }
  const parsed = schema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const field = issue?.path.map(String).join(".") || "body";
    throw new RatchetError(ErrorCode.SchemaViolation, `${field}: ${issue?.message ?? "invalid"}`, { field });
  }
  return parsed.data;
}

function fail(c: Context, e: unknown) {
  const re = toRatchetError(e);
  const field = typeof re.details.field === "string" ? { field: re.details.field } : {};
  return c.json({ error: { code: re.code, message: re.message, ...field } }, httpStatusFor(re.code) as 400);
}

/** Registers the thread routes on `app`. `service()` is called per request. */
export function registerThreadRoutes(
  app: Hono,
  service: () => ThreadService,
  opts: ThreadRoutesOptions = {},
): void {
  const p = opts.prefix ?? "/threads";
  const bg =
    opts.background ??
    ((d: Promise<unknown>) => {
      d.catch(() => {});
    });
  const by = opts.actor ?? "http";
  const route =
    (fn: (c: Context, svc: ThreadService) => Promise<Response> | Response) =>
    async (c: Context): Promise<Response> => {
      try {
        return await fn(c, service());
      } catch (e) {
        return fail(c, e);
      }
    };

  app.get(
    p,
    route((c, svc) => {
      const limit = c.req.query("limit");
      const n = limit === undefined ? 50 : Number(limit);
      if (!Number.isInteger(n) || n < 1 || n > 1000)
        throw new RatchetError(
          ErrorCode.InvalidValue,
          `limit must be an integer from 1 to 1000 (got ${limit})`,
          { field: "limit" },
        );
      const state = c.req.query("state");
      return c.json({ threads: svc.list({ ...(state ? { state } : {}), limit: n }) });
    }),
  );
  app.get(
    `${p}/:id`,
    route((c, svc) => c.json(svc.show(c.req.param("id") ?? ""))),
  );
  app.post(
    p,
    route(async (c, svc) => {
      const b = await body(c, startBody);
      const row = svc.create(b.goal, {
        ...(b.project ? { project: b.project } : {}),
        ...(b.model ? { model: b.model } : {}),
      });
      bg(svc.run(row.thread_id));
      return c.json({ thread_id: row.thread_id, state: row.state }, 202);
    }),
  );
  app.post(
    `${p}/:id/resume`,
    route(async (c, svc) => {
      const id = c.req.param("id") ?? "";
      const t = svc.threads.require(id);
      if (!isResumable(t.state))
        throw new RatchetError(ErrorCode.IllegalTransition, `thread ${id} is not resumable from ${t.state}`, {
          threadId: id,
        });
      bg(svc.resume(id));
      return c.json({ thread_id: id, state: t.state }, 202);
    }),
  );
  for (const decision of ["approve", "deny"] as const) {
    app.post(
      `${p}/:id/${decision}`,
      route(async (c, svc) => {
        const id = c.req.param("id") ?? "";
        const b = await body(c, decideBody);
        const args = {
          ...(b.approval_id ? { approvalId: b.approval_id } : {}),
          ...(b.reason ? { reason: b.reason } : {}),
          by,
        };
        const r =
          decision === "approve"
            ? svc.approve(id, { ...args, always: Boolean(b.always) })
            : svc.deny(id, args);
        if (!r.driven) bg(svc.resume(id));
        return c.json({ approval: r.approval, resumed: !r.driven });
      }),
    );
  }
  app.post(
    `${p}/:id/inject`,
    route(async (c, svc) => {
      const b = await body(c, injectBody);
      const r = svc.inject(c.req.param("id") ?? "", b.message);
      return c.json({ thread_id: r.thread.thread_id, state: r.thread.state, inbox_id: r.inboxId }, 202);
    }),
  );
  app.post(
    `${p}/:id/cancel`,
    route(async (c, svc) => {
      const b = await body(c, cancelBody);
      return c.json({ thread: svc.cancel(c.req.param("id") ?? "", b.reason ?? "cancelled over HTTP") });
    }),
  );
}

/**
 * OpenAPI 3.1 path items of the routes {@link registerThreadRoutes} mounts under `prefix`, with the
 * request bodies generated from the schemas the routes validate with.
 */
export function threadOpenApiPaths(prefix = "/threads"): Record<string, unknown> {
  const json = (schema: unknown) => ({ "application/json": { schema } });
  const error = (description: string) => ({
    description,
    content: json({
      type: "object",
      properties: {
        error: {
          type: "object",
          properties: { code: { type: "string" }, message: { type: "string" } },
          required: ["code", "message"],
        },
      },
      required: ["error"],
    }),
  });
  const writeErrors = {
    400: error("bad input: the body or a parameter (the message names the field)"),
    401: error("missing or wrong bearer token; nothing was written"),
    403: error("the server runs with --read-only"),
    404: error("no such thread"),
    409: error("refused by the thread's state machine; nothing was written"),
  };
  const id = { name: "threadId", in: "path", required: true, schema: { type: "string" } };
  const post = (summary: string, schema: z.ZodType | undefined, status: number, reply: string) => ({
    post: {
      summary,
      security: [{ bearer: [] }],
      parameters: [id],
      ...(schema ? { requestBody: { required: false, content: json(z.toJSONSchema(schema)) } } : {}),
      responses: { [status]: { description: reply, content: json({ type: "object" }) }, ...writeErrors },
    },
  });
  return {
    [prefix]: {
      get: {
        summary: "threads, newest first",
        parameters: [
          { name: "state", in: "query", required: false, schema: { type: "string" } },
          {
            name: "limit",
            in: "query",
            required: false,
            description: "1–1000, default 50",
            schema: { type: "integer", minimum: 1, maximum: 1000 },
          },
        ],
        responses: { 200: { description: "{threads: [...]}", content: json({ type: "object" }) } },
      },
      post: {
        summary: "start a thread; it is driven in the background (202)",
        security: [{ bearer: [] }],
        requestBody: { required: true, content: json(z.toJSONSchema(startBody)) },
        responses: {
          202: { description: "{thread_id, state}", content: json({ type: "object" }) },
          ...writeErrors,
        },
      },
    },
    [`${prefix}/{threadId}`]: {
      get: {
        summary: "a thread: state, messages, tool calls, approvals, budget",
        parameters: [id],
        responses: {
          200: { description: "the thread", content: json({ type: "object" }) },
          404: error("no such thread"),
        },
      },
    },
    [`${prefix}/{threadId}/resume`]: post(
      "drive a waiting or suspended thread in the background",
      undefined,
      202,
      "{thread_id, state}",
    ),
    [`${prefix}/{threadId}/approve`]: post(
      "approve the pending call (bound to its call id and argument hash); it runs exactly once",
      decideBody,
      200,
      "{approval, resumed}",
    ),
    [`${prefix}/{threadId}/deny`]: post(
      "deny the pending call; the orchestrator sees a catchable error",
      decideBody.omit({ always: true }),
      200,
      "{approval, resumed}",
    ),
    [`${prefix}/{threadId}/cancel`]: post("cancel the thread", cancelBody, 200, "{thread}"),
    [`${prefix}/{threadId}/inject`]: post(
      "queue a message for the thread; its orchestrator gets it from __check_signals__ at its next step",
      injectBody,
      202,
      "{thread_id, state, inbox_id}",
    ),
  };
}
