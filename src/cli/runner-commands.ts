/**
 * `ratchet runner dry-run|run|status|watch|doctor`. Thin: parse, call `runner/`, print, return
 * the exit status (run: 0 passed, 8 failed, 4 refused, 2 bad spec; dry-run: 0 ok, 4 refused).
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ErrorCode, RatchetError, Redactor } from "../core/index.js";
import { killAllRunning, realProcessRunner } from "../exec/index.js";
import {
  type CompiledModelOptions,
  compileModelOptions,
  createModelClient,
  MODEL_ENV,
} from "../model/index.js";
import {
  DOCTOR_HTTP_TIMEOUT_MS,
  dryRun,
  loadTaskSpec,
  runTask,
  type TaskEvent,
  type TaskResult,
  type TaskSpec,
  TERMINAL_STATES,
  taskIdsIn,
  WORKTREE_PREFIX,
} from "../runner/index.js";
import { parseSecretsFile } from "../workflow/index.js";
import { type GlobalOptions, type LedgerContext, openLedgerContext, withLedgerContext } from "./context.js";
import { err, out } from "./io.js";
import { liveMode, taskProgressPrinter } from "./progress.js";

const print = (json: boolean | undefined, value: unknown, human: () => string) =>
  out(json ? JSON.stringify(value) : human());

/** `ratchet runner dry-run <spec>`: validate + preflight, no model call. */
export async function runnerDryRun(
  file: string,
  o: { explainRisk?: boolean; json?: boolean },
): Promise<number> {
  const spec = loadTaskSpec(file);
  const report = await dryRun(spec, { explainRisk: o.explainRisk === true });
  print(o.json, { op: "runner-dry-run", ...report }, () => {
    const lines = [`task ${spec.task_id}: ${report.ok ? "preflight ok" : "REFUSED"}`];
    for (const r of report.refusals) lines.push(`  refused (${r.code}): ${r.message}`);
    if (report.dod)
      lines.push(
        `  DoD before any change: ${report.dod.passed ? "passes" : "fails"} (exit ${report.dod.exit_code})`,
      );
    if (report.risk) {
      const k = report.risk;
      lines.push(
        `  allowlist: ${k.allowlist.map((a) => `${a.entry} (${a.tracked_files} tracked file(s)${a.exists ? "" : ", missing"})`).join(", ")}`,
      );
      lines.push(`  DoD runs: ${k.dod.argv.map((a) => JSON.stringify(a)).join(" then ")} (${k.dod.guard})`);
      lines.push(
        `  protected: ${k.protected_paths.map((p) => `${p.entry} (${p.tracked_files})`).join(", ") || "(none)"}`,
      );
      lines.push(`  dirty overlaps: ${k.dirty_overlaps.join(", ") || "(none)"}`);
      lines.push(`  apply_to_source: ${k.apply_to_source}, commit_on_success: ${k.commit_on_success}`);
    }
    return lines.join("\n");
  });
  return report.ok ? 0 : 4;
}

/** Opens the ledger when a workspace exists (the task's events are recorded there too). */
function tryContext(globals: GlobalOptions): LedgerContext | undefined {
  try {
    return openLedgerContext(globals);
  } catch {
    return undefined;
  }
}

/**
 * What a task masks in tool results and artifacts: the model's API key (wherever it was
 * configured) and the workspace's secrets file, when there is one (best effort: an unreadable or
 * malformed file adds nothing here; workflow runs report it).
 */
function taskRedactor(model: CompiledModelOptions, ctx: LedgerContext | undefined): Redactor {
  const keyName = model.provider === "anthropic" ? MODEL_ENV.anthropicApiKey : MODEL_ENV.openaiApiKey;
  const redactor = new Redactor().addFromEnv(process.env).add(keyName, model.apiKey);
  const file = ctx ? join(ctx.workspace.dir, "secrets") : undefined;
  if (file && existsSync(file)) {
    try {
      for (const [name, value] of parseSecretsFile(readFileSync(file, "utf8"), file)) {
        redactor.add(`SECRET_${name}`, value);
      }
    } catch {
      // nothing to add
    }
  }
  return redactor;
}

/**
 * Runs `spec` as `ratchet runner run` does: the configured model, the redactor, the task's events
 * recorded in the workspace's store (entity_kind `runner_task`) when `ctx` is given. The worker
 * (src/queue/) runs queued tasks through this too.
 */
export async function executeRunnerTask(
  spec: TaskSpec,
  ctx: LedgerContext | undefined,
  o: { signal: AbortSignal; onEvent?: (e: TaskEvent) => void },
): Promise<TaskResult> {
  const model = compileModelOptions({});
  const client = createModelClient(model);
  const redactor = taskRedactor(model, ctx);
  return runTask(spec, {
    client,
    redactor,
    signal: o.signal,
    ...(o.onEvent ? { onEvent: o.onEvent } : {}),
  });
}

/** `ratchet runner run <spec> --queue`: records the task and its job (exit 0 once queued). */
async function runnerEnqueue(
  spec: TaskSpec,
  o: GlobalOptions & { json?: boolean; quiet?: boolean; queueName?: string },
): Promise<number> {
  const {
    checkQueueName,
    DEFAULT_QUEUE,
    enqueueRunnerTaskSync,
    ensureQueueSchema,
    loadQueueConfig,
    requireQueue,
  } = await import("../queue/index.js");
  const queue = checkQueueName(o.queueName ?? DEFAULT_QUEUE, "queue-name");
  return withLedgerContext(o, async (ctx) => {
    requireQueue(ctx.workspace, loadQueueConfig(ctx.workspace.dir), "ratchet runner run --queue");
    await ensureQueueSchema(ctx.store, ctx.workspace.storeUrl as string);
    const q = enqueueRunnerTaskSync(ctx.store, spec, queue);
    if (o.json) out(JSON.stringify({ ok: true, op: "runner-enqueue", status: "queued", ...q }));
    else if (!o.quiet) out(`task ${q.task_id} queued (queue ${q.queue}, id ${q.queue_id})`);
    return 0;
  });
}

/** `ratchet runner run <spec>`. */
export async function runnerRun(
  file: string,
  o: GlobalOptions & { json?: boolean; quiet?: boolean; queue?: boolean; queueName?: string },
): Promise<number> {
  const spec = loadTaskSpec(file);
  if (o.queueName !== undefined && !o.queue)
    throw new RatchetError(ErrorCode.Usage, "--queue-name needs --queue", { field: "queue" });
  if (o.queue) return runnerEnqueue(spec, o);
  const ctx = tryContext(o);
  const abort = new AbortController();
  const onSignal = () => {
    abort.abort();
    void killAllRunning();
  };
  process.once("SIGINT", onSignal);
  process.once("SIGTERM", onSignal);
  try {
    const mode = liveMode(o);
    const live = mode ? taskProgressPrinter(mode, out) : undefined;
    const record = ctx
      ? (e: TaskEvent) =>
          ctx.store.tx(() =>
            ctx.store.appendEvent({
              entityKind: "runner_task",
              entityId: spec.task_id,
              type: `runner.${e.type}`,
              payload: e,
            }),
          )
      : undefined;
    const onEvent =
      record || live
        ? (e: TaskEvent) => {
            record?.(e);
            live?.(e);
          }
        : undefined;
    const result = await executeRunnerTask(spec, ctx, {
      signal: abort.signal,
      ...(onEvent ? { onEvent } : {}),
    });
    const code = { passed: 0, failed: 8, refused: 4, error: 1 }[result.status];
    if (o.quiet && !o.json) {
      if (code !== 0) err(`task ${result.task_id}: ${result.status} (${result.stop_reason})`);
      return code;
    }
    print(o.json, { ok: result.status === "passed", op: "runner-run", ...result }, () =>
      [
        `task ${result.task_id}: ${result.status} (${result.stop_reason}) after ${result.rounds} round(s), best score ${result.best_score}`,
        `  DoD: ${result.dod.passed ? "passed" : "failed"} (exit ${result.dod.exit_code})`,
        `  patch: ${result.patch_file ?? "(none)"} ${result.changed_files.join(", ")}`,
        `  source unchanged: ${result.source_unchanged}`,
        ...result.refusals.map((r) => `  refused (${r.code}): ${r.message}`),
        ...(result.error ? [`  error: ${result.error}`] : []),
        ...(result.apply_to_source
          ? [
              `  source: applied=${result.source_patch_applied} dod=${result.source_dod_passed} commit=${result.source_commit} rollback=${result.source_rollback_applied}${result.source_apply_error ? ` error=${result.source_apply_error}` : ""}`,
            ]
          : []),
        `{"ok":${result.status === "passed"},"op":"runner-run","status":"${result.status}"}`,
      ].join("\n"),
    );
    return code;
  } finally {
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
    ctx?.store.close();
  }
}

function readJson(file: string): Record<string, unknown> | undefined {
  try {
    return JSON.parse(readFileSync(file, "utf8")) as Record<string, unknown>;
  } catch {
    return undefined;
  }
}

function requireDir(dir: string): string[] {
  if (!existsSync(dir) || !statSync(dir).isDirectory()) {
    throw new RatchetError(ErrorCode.NotFound, `output folder ${dir} not found`, { file: dir });
  }
  return readdirSync(dir);
}

function eventLines(dir: string, id: string): string[] {
  const f = join(dir, `${id}.events.jsonl`);
  return existsSync(f) ? readFileSync(f, "utf8").split("\n").filter(Boolean) : [];
}

/** `ratchet runner status <output_dir>`. */
export async function runnerStatus(dir: string, o: { tailEvents?: string; json?: boolean }): Promise<number> {
  const ids = taskIdsIn(requireDir(dir));
  if (ids.length === 0) throw new RatchetError(ErrorCode.NotFound, `no runner task in ${dir}`, { file: dir });
  const tail = o.tailEvents === undefined ? 0 : Number(o.tailEvents);
  if (!Number.isInteger(tail) || tail < 0) {
    throw new RatchetError(ErrorCode.Usage, `--tail-events must be a whole number; got ${o.tailEvents}`, {
      field: "tail-events",
    });
  }
  const tasks = ids.map((id) => ({
    task_id: id,
    status: readJson(join(dir, `${id}.status.json`)),
    result: readJson(join(dir, `${id}.result.json`)),
    events:
      tail > 0
        ? eventLines(dir, id)
            .slice(-tail)
            .map((l) => JSON.parse(l) as unknown)
        : [],
  }));
  print(o.json, { tasks }, () =>
    tasks
      .map((t) => {
        const r = t.result;
        const head = `${t.task_id}: ${String(t.status?.state)}${r ? ` (${String(r.stop_reason)}, rounds ${String(r.rounds)}, best ${String(r.best_score)})` : ""}`;
        return [head, ...t.events.map((e) => `  ${JSON.stringify(e)}`)].join("\n");
      })
      .join("\n"),
  );
  return 0;
}

/** `ratchet runner watch <output_dir>`: prints events as they come until every task is terminal. */
export async function runnerWatch(dir: string, o: { timeout?: string }): Promise<number> {
  const limitS = o.timeout === undefined ? 3600 : Number(o.timeout);
  if (!Number.isFinite(limitS) || limitS <= 0) {
    throw new RatchetError(ErrorCode.Usage, `--timeout must be a positive number of seconds`, {
      field: "timeout",
    });
  }
  const deadline = Date.now() + limitS * 1000;
  const seen = new Map<string, number>();
  for (;;) {
    const ids = existsSync(dir) ? taskIdsIn(readdirSync(dir)) : [];
    for (const id of ids) {
      const lines = eventLines(dir, id);
      for (const l of lines.slice(seen.get(id) ?? 0)) out(l);
      seen.set(id, lines.length);
    }
    const states = ids.map((id) => readJson(join(dir, `${id}.status.json`))?.state);
    if (ids.length > 0 && states.every((s) => TERMINAL_STATES.includes(s as never))) return 0;
    if (Date.now() > deadline) {
      out(JSON.stringify({ ok: false, op: "runner-watch", reason: "timeout" }));
      return 8;
    }
    await new Promise((res) => setTimeout(res, 200));
  }
}

async function version(command: string, args: string[]): Promise<string | undefined> {
  const r = await realProcessRunner.run({ command, args, timeoutMs: 10_000, maxCaptureBytes: 4096 });
  return r.exitCode === 0 ? (r.stdout.trim() || r.stderr.trim()).split("\n")[0] : undefined;
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** `ratchet runner doctor`: git, python3, model configured + reachable, the command sandbox, leaked worktrees. */
export async function runnerDoctor(o: { json?: boolean }): Promise<number> {
  const checks: { name: string; ok: boolean; detail: string }[] = [];
  const gitV = await version("git", ["--version"]);
  checks.push({ name: "git", ok: gitV !== undefined, detail: gitV ?? "git not found" });
  const py = await version("python3", ["--version"]);
  checks.push({ name: "python3", ok: py !== undefined, detail: py ?? "python3 not found" });
  let model: ReturnType<typeof compileModelOptions> | undefined;
  try {
    model = compileModelOptions({});
    checks.push({ name: "model", ok: true, detail: `${model.model} at ${model.baseUrl}` });
  } catch (e) {
    checks.push({ name: "model", ok: false, detail: (e as Error).message });
  }
  if (model) {
    try {
      const headers: Record<string, string> = model.apiKey ? { authorization: `Bearer ${model.apiKey}` } : {};
      const res = await fetch(`${model.baseUrl}/models`, {
        headers,
        signal: AbortSignal.timeout(DOCTOR_HTTP_TIMEOUT_MS),
      });
      checks.push({
        name: "model_reachable",
        ok: res.ok,
        detail: `GET ${model.baseUrl}/models → ${res.status}`,
      });
    } catch (e) {
      checks.push({
        name: "model_reachable",
        ok: false,
        detail: `GET ${model.baseUrl}/models failed: ${(e as Error).message}`,
      });
    }
  }
  const { confineLauncher, detectSandbox, formatGuarantees, guaranteeReport } = await import(
    "../exec/index.js"
  );
  const sandbox = await detectSandbox({ languages: ["python"], refresh: true });
  const guarantees = guaranteeReport(
    sandbox.python === "landlock" ? confineLauncher(sandbox) : { kind: "none", reason: sandbox.reason },
  );
  const confined = sandbox.python === "landlock";
  checks.push({
    name: "sandbox",
    ok: confined,
    detail: confined
      ? `commands write only to the worktree, a private TMPDIR and writable_paths (${sandbox.reason.replace(/^python: /, "")})`
      : `commands run with the guard only: ${sandbox.reason.replace(/^python: /, "")}`,
  });
  const leaked: string[] = [];
  if (gitV) {
    const wl = await realProcessRunner.run({
      command: "git",
      args: ["worktree", "list", "--porcelain"],
      timeoutMs: 10_000,
    });
    const prefix = join(tmpdir(), WORKTREE_PREFIX);
    for (const line of wl.stdout.split("\n")) {
      if (!line.startsWith("worktree ")) continue;
      const path = line.slice("worktree ".length);
      const m = path.startsWith(prefix) ? /^(\d+)-/.exec(path.slice(prefix.length)) : null;
      if (m && !pidAlive(Number(m[1]))) leaked.push(path);
    }
  }
  checks.push({
    name: "leaked_worktrees",
    ok: leaked.length === 0,
    detail:
      leaked.length === 0 ? "none" : `${leaked.join(", ")} (remove with git worktree remove --force <path>)`,
  });
  const ok = checks.filter((c) => c.name === "git" || c.name === "model").every((c) => c.ok);
  print(o.json, { ok, op: "runner-doctor", checks, guarantees }, () =>
    [
      ...checks.map((c) => `${c.ok ? "ok  " : "FAIL"} ${c.name}: ${c.detail}`),
      "guarantees for runner commands on this machine:",
      ...formatGuarantees(guarantees).map((l) => `  ${l}`),
    ].join("\n"),
  );
  return ok ? 0 : 8;
}
