/**
 * Runner tasks found in the output folders given to `ratchet serve --runner-dir`: state, result
 * (DoD, score, stop reason), rounds, the tail of the event log, and the patch. Task ids come from
 * listing the folders (`{task_id}.status.json`); an id not listed is 404, whatever it contains.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { ErrorCode, RatchetError } from "../../core/index.js";
import { taskIdsIn } from "../../runner/index.js";
import type { RouteGroup } from "../app.js";
import type { ServerContext } from "../context.js";
import { RUNNER_EVENTS_TAIL } from "../limits.js";
import { readListedFile } from "./workflows.js";

function readJson(file: string): Record<string, unknown> | null {
  try {
    return JSON.parse(readFileSync(file, "utf8")) as Record<string, unknown>;
  } catch {
    return null;
  }
}

function jsonLines(file: string): unknown[] {
  if (!existsSync(file)) return [];
  const out: unknown[] = [];
  for (const line of readFileSync(file, "utf8").split("\n")) {
    if (!line.trim()) continue;
    try {
      out.push(JSON.parse(line));
    } catch {
      // a line being appended right now: the next read has it whole
    }
  }
  return out;
}

/** Every task of the configured folders: `{task_id, dir}` (a task id found twice: the first folder wins). */
export function listTasks(ctx: ServerContext): { task_id: string; dir: string }[] {
  const seen = new Map<string, string>();
  for (const dir of ctx.runnerDirs) {
    if (!existsSync(dir)) continue;
    for (const id of taskIdsIn(readdirSync(dir))) if (!seen.has(id)) seen.set(id, dir);
  }
  return [...seen].map(([task_id, dir]) => ({ task_id, dir }));
}

function findTask(ctx: ServerContext, taskId: string): { task_id: string; dir: string } {
  const t = listTasks(ctx).find((x) => x.task_id === taskId);
  if (!t)
    throw new RatchetError(ErrorCode.NotFound, `runner task ${JSON.stringify(taskId)} not found`, {
      field: "task_id",
    });
  return t;
}

/** The summary of a task the list and MCP show. */
export function taskSummary(t: { task_id: string; dir: string }) {
  const status = readJson(join(t.dir, `${t.task_id}.status.json`));
  const result = readJson(join(t.dir, `${t.task_id}.result.json`));
  return {
    task_id: t.task_id,
    output_dir: t.dir,
    state: (status?.state as string | undefined) ?? null,
    updated_at: (status?.updated_at as string | undefined) ?? null,
    status: result?.status ?? null,
    rounds: result?.rounds ?? null,
    best_score: result?.best_score ?? null,
    stop_reason: result?.stop_reason ?? null,
    dod_passed: (result?.dod as { passed?: boolean } | undefined)?.passed ?? null,
  };
}

/** Everything about one task (the task route and MCP `runner_status`). */
export function taskDetail(ctx: ServerContext, taskId: string) {
  const t = findTask(ctx, taskId);
  const events = jsonLines(join(t.dir, `${t.task_id}.events.jsonl`));
  return {
    ...taskSummary(t),
    status_file: readJson(join(t.dir, `${t.task_id}.status.json`)),
    result: readJson(join(t.dir, `${t.task_id}.result.json`)),
    rounds_log: jsonLines(join(t.dir, `${t.task_id}.rounds.jsonl`)),
    dod_runs: events.filter((e) => (e as { type?: string }).type === "dod_run"),
    events: events.slice(-RUNNER_EVENTS_TAIL),
    has_patch: existsSync(join(t.dir, `${t.task_id}.patch`)),
  };
}

export const runnerRoutes: RouteGroup = (app, { ctx }) => {
  app.get("/api/runner/tasks", (c) => c.json({ items: listTasks(ctx).map(taskSummary), next_cursor: null }));
  app.get("/api/runner/tasks/:taskId", (c) => c.json(taskDetail(ctx, c.req.param("taskId"))));
  app.get("/api/runner/tasks/:taskId/patch", (c) => {
    const t = findTask(ctx, c.req.param("taskId"));
    return c.text(readListedFile(t.dir, `${t.task_id}.patch`, "patch"), 200, {
      "content-type": "text/x-diff; charset=utf-8",
    });
  });
};
