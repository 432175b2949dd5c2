/**
 * MCP resources: plans, runs, threads and learned scripts, each a JSON document read through the
 * same service function as its REST route (`showPlan`, the run tables, `ThreadService.show`,
 * `scriptDetail`).
 *
 *   ratchet://plan/{plan_id}                  ratchet://run/{run_id}
 *   ratchet://thread/{thread_id}              ratchet://script/{workflow_id}/{step_id}
 *
 * The list is paged and bounded: runs, then plans (each newest first, by the REST lists' keyset
 * cursors, {@link RESOURCE_PAGE} a page), then the newest threads and the learned scripts of the
 * known workflows (one page each, at most {@link RESOURCE_PAGE} threads and
 * {@link MAX_SCRIPT_RESOURCES} scripts). The cursor names the kind and that kind's own cursor.
 */
import { McpError, ErrorCode as McpErrorCode, type Resource } from "@modelcontextprotocol/sdk/types.js";
import { ErrorCode, RatchetError, toRatchetError } from "../core/index.js";
import { showPlan } from "../ledger/index.js";
import { savedScript } from "../workflow/index.js";
import type { ServerContext } from "./context.js";
import { decodeCursor, encodeCursor } from "./http.js";
import { ServerQueries } from "./queries.js";
import { plansPage } from "./routes/ledger.js";
import { runsPage } from "./routes/runs.js";
import { findWorkflow, knownWorkflows, scriptDetail } from "./routes/workflows.js";

/** Resources of one kind in one page of `resources/list`. */
export const RESOURCE_PAGE = 50;
/** Learned scripts listed at most (the rest are still readable by URI). */
export const MAX_SCRIPT_RESOURCES = 200;
/** JSON-RPC error of an unknown resource (the MCP spec's "resource not found"). */
export const RESOURCE_NOT_FOUND = -32002;

const JSON_MIME = "application/json";

export const RESOURCE_TEMPLATES = [
  {
    uriTemplate: "ratchet://plan/{plan_id}",
    name: "plan",
    description:
      "A ledger plan: its steps in tree order with statuses, logs, deviations, metrics and skills.",
    mimeType: JSON_MIME,
  },
  {
    uriTemplate: "ratchet://run/{run_id}",
    name: "run",
    description: "A workflow run and each step's mode, fast path, outcome, tokens, duration and error.",
    mimeType: JSON_MIME,
  },
  {
    uriTemplate: "ratchet://thread/{thread_id}",
    name: "thread",
    description: "A thread with its messages, tool calls, approvals, checkpoints and budget.",
    mimeType: JSON_MIME,
  },
  {
    uriTemplate: "ratchet://script/{workflow_id}/{step_id}",
    name: "script",
    description:
      "A workflow step's learned script: mode, language, source, run metadata, diffs between versions and promotion evidence.",
    mimeType: JSON_MIME,
  },
] as const;

const KINDS = ["run", "plan", "thread", "script"] as const;
type Kind = (typeof KINDS)[number];

const uriOf = (kind: Kind, ...ids: string[]) => `ratchet://${kind}/${ids.map(encodeURIComponent).join("/")}`;

/** One page of `resources/list`. @throws McpError InvalidParams for a cursor that is not ours. */
export function listResources(
  ctx: ServerContext,
  cursor: string | undefined,
): { resources: Resource[]; nextCursor?: string } {
  // A kind with nothing to list does not make an empty page: go on to the next kind.
  let page = listKind(ctx, cursor);
  while (page.resources.length === 0 && page.nextCursor !== undefined) page = listKind(ctx, page.nextCursor);
  return page;
}

function listKind(
  ctx: ServerContext,
  cursor: string | undefined,
): { resources: Resource[]; nextCursor?: string } {
  let start: [number, string | undefined] = [0, undefined];
  if (cursor !== undefined) {
    const c = safeCursor(cursor);
    start = [c[0] as number, c[1] === "" ? undefined : String(c[1])];
  }
  const q = new ServerQueries(ctx.store);
  const [kindIndex, inner] = start;
  const kind = KINDS[kindIndex] as Kind;
  const next = (innerNext: string | null): string | undefined =>
    innerNext
      ? encodeCursor([kindIndex, innerNext])
      : kindIndex + 1 < KINDS.length
        ? encodeCursor([kindIndex + 1, ""])
        : undefined;
  const done = (resources: Resource[], innerNext: string | null) => {
    const n = next(innerNext);
    return { resources, ...(n ? { nextCursor: n } : {}) };
  };
  switch (kind) {
    case "run": {
      const p = runsPage(q, { limit: RESOURCE_PAGE, cursor: inner });
      return done(
        p.items.map((r) => ({
          uri: uriOf("run", r.run_id),
          name: r.run_id,
          title: `run ${r.run_id} of ${r.workflow_id} (${r.status})`,
          mimeType: JSON_MIME,
        })),
        p.next_cursor,
      );
    }
    case "plan": {
      const p = plansPage(ctx.store, { limit: RESOURCE_PAGE, cursor: inner });
      return done(
        p.items.map((pl) => ({
          uri: uriOf("plan", pl.plan_id),
          name: pl.plan_id,
          title: `${pl.goal.slice(0, 120)} (${pl.status})`,
          mimeType: JSON_MIME,
        })),
        p.next_cursor,
      );
    }
    case "thread": {
      let rows: { thread_id: string; goal: string; state: string }[] = [];
      try {
        rows = ctx.threads().list({ limit: RESOURCE_PAGE });
      } catch {
        // a server without threads lists none
      }
      return done(
        rows.map((t) => ({
          uri: uriOf("thread", t.thread_id),
          name: t.thread_id,
          title: `${t.goal.slice(0, 120)} (${t.state})`,
          mimeType: JSON_MIME,
        })),
        null,
      );
    }
    case "script":
      return done(scriptResources(ctx, q), null);
  }
}

function safeCursor(cursor: string): (string | number)[] {
  let c: (string | number)[] | undefined;
  try {
    c = decodeCursor(cursor, 2);
  } catch {
    c = undefined;
  }
  if (!c || typeof c[0] !== "number" || !Number.isInteger(c[0]) || c[0] < 0 || c[0] >= KINDS.length)
    throw new McpError(
      McpErrorCode.InvalidParams,
      `cursor: not a cursor of resources/list (${cursor.slice(0, 80)})`,
    );
  return c;
}

function scriptResources(ctx: ServerContext, q: ServerQueries): Resource[] {
  const out: Resource[] = [];
  for (const w of knownWorkflows(ctx, q)) {
    let wf: ReturnType<typeof findWorkflow>;
    try {
      wf = findWorkflow(ctx, q, w.workflow_id);
    } catch {
      continue; // a workflow file that is gone or broken: its scripts are not listed
    }
    for (const s of wf.steps) {
      if (out.length >= MAX_SCRIPT_RESOURCES) return out;
      const script = savedScript(wf, s.id);
      if (!script) continue;
      out.push({
        uri: uriOf("script", wf.id, s.id),
        name: `${wf.id}/${s.id}`,
        title: `learned script of ${wf.id} step ${s.id} (${script.language})`,
        mimeType: JSON_MIME,
      });
    }
  }
  return out;
}

const URI = /^ratchet:\/\/(plan|run|thread|script)\/([^/?#]+)(?:\/([^/?#]+))?$/;

/** `resources/read`. @throws McpError: InvalidParams for a URI that is not ours, -32002 for an unknown id. */
export function readResource(
  ctx: ServerContext,
  uri: string,
): { contents: { uri: string; mimeType: string; text: string }[] } {
  const m = URI.exec(uri);
  const kind = m?.[1] as Kind | undefined;
  if (!m || !kind || (kind === "script") !== (m[3] !== undefined))
    throw new McpError(
      McpErrorCode.InvalidParams,
      `uri: not a Ratchet resource (${RESOURCE_TEMPLATES.map((t) => t.uriTemplate).join(", ")}): ${uri.slice(0, 200)}`,
    );
  let ids: string[];
  try {
    ids = [m[2] as string, ...(m[3] ? [m[3]] : [])].map(decodeURIComponent);
  } catch {
    throw new McpError(McpErrorCode.InvalidParams, `uri: bad percent-encoding: ${uri.slice(0, 200)}`);
  }
  try {
    return { contents: [{ uri, mimeType: JSON_MIME, text: JSON.stringify(read(ctx, kind, ids)) }] };
  } catch (e) {
    const err = toRatchetError(e);
    const notFound = err.code.endsWith("not_found");
    throw new McpError(notFound ? RESOURCE_NOT_FOUND : McpErrorCode.InvalidParams, err.message, {
      code: err.code,
      uri,
    });
  }
}

function read(ctx: ServerContext, kind: Kind, ids: string[]): unknown {
  const [id, step] = ids as [string, string | undefined];
  switch (kind) {
    case "plan":
      return showPlan(ctx.store, ctx.blobs, id, {});
    case "run": {
      const run = ctx.runs.getRun(id);
      if (!run) throw new RatchetError(ErrorCode.NotFound, `run ${id} not found`, { field: "run_id" });
      return { run, steps: ctx.runs.stepRuns(id) };
    }
    case "thread":
      return ctx.threads().show(id);
    case "script":
      return scriptDetail(ctx, new ServerQueries(ctx.store), id, step as string);
  }
}
