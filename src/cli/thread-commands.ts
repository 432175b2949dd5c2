import { mkdirSync } from "node:fs";
import { createInterface } from "node:readline";
import { setTimeout as sleep } from "node:timers/promises";
import { compileBridgeConfig, createToolRegistry, loadWorkspaceBridgeConfig } from "../bridge/index.js";
import { ErrorCode, RatchetError } from "../core/index.js";
import { compileModelOptions, createModelClient } from "../model/index.js";
import { envDb, openStore, resolveWorkspace, type Store } from "../store/index.js";
import {
  bridgeActions,
  type DriveEvent,
  type DriveResult,
  isTerminal,
  loadThreadsConfig,
  ThreadService,
  type ThreadServiceOptions,
} from "../threads/index.js";
import { err, onStdoutGone, out, stdoutGone } from "./io.js";
import { painter, progressMode } from "./progress.js";
import { renderEvent, renderWatchEvent } from "./thread-render.js";

export interface ThreadGlobals {
  db?: string;
}

export interface Opened {
  svc: ThreadService;
  store: Store;
  close(): void;
}

/**
 * The thread service of a workspace over an open store: its threads config, the model from flag >
 * env > config, and (unless `withTools` is false) the tools of `.ratchet/config.json`. The CLI and
 * `ratchet serve` both build it here.
 */
export function threadServiceFor(
  store: Store,
  workspaceDir: string,
  extra: Partial<ThreadServiceOptions> = {},
  opts: { withTools?: boolean } = {},
): ThreadService {
  const config = loadThreadsConfig(workspaceDir);
  const bridge = opts.withTools === false ? undefined : loadWorkspaceBridgeConfig(workspaceDir);
  return new ThreadService({
    store,
    config,
    model: (m) => createModelClient(compileModelOptions(m ? { flags: { model: m } } : {})),
    ...(bridge
      ? { actions: () => bridgeActions(createToolRegistry(compileBridgeConfig(bridge)), config.effects) }
      : {}),
    ...extra,
  });
}

export function open(
  globals: ThreadGlobals,
  extra: Partial<ThreadServiceOptions> = {},
  opts: { withTools?: boolean } = {},
): Opened {
  const ws = resolveWorkspace({ ...(globals.db ? { db: globals.db } : {}) });
  // On PostgreSQL the local folder holds only the config (and run temp folders); it may not exist yet.
  if (ws.storeUrl) mkdirSync(ws.dir, { recursive: true });
  const store = openStore(ws, { create: Boolean(globals.db ?? envDb()) });
  try {
    return { svc: threadServiceFor(store, ws.dir, extra, opts), store, close: () => store.close() };
  } catch (e) {
    store.close();
    throw e;
  }
}

export function withService<T>(
  globals: ThreadGlobals,
  fn: (svc: ThreadService) => T | Promise<T>,
  extra: Partial<ThreadServiceOptions> = {},
) {
  return async (): Promise<T> => {
    const o = open(globals, extra);
    try {
      return await fn(o.svc);
    } finally {
      o.close();
    }
  };
}

function parseSeconds(text: string | undefined, field: string): number | undefined {
  if (text === undefined) return undefined;
  const n = Number(text);
  if (!Number.isFinite(n) || n <= 0)
    throw new RatchetError(
      ErrorCode.Usage,
      `--${field} must be a positive number of seconds (got ${JSON.stringify(text)})`,
      { field },
    );
  return n * 1000;
}

/** Prints the end of a drive and returns the exit status (0 completed or waiting, 8 failed). */
function report(r: DriveResult, json: boolean | undefined): number {
  const t = r.thread;
  if (json) {
    out(
      JSON.stringify({
        ok: r.outcome !== "failed",
        op: "thread",
        thread_id: t.thread_id,
        outcome: r.outcome,
        state: t.state,
        reason: t.reason,
        final_result: t.final_result,
        step_count: t.step_count,
        tokens: t.input_tokens + t.output_tokens,
      }),
    );
  } else {
    out("");
    if (r.outcome === "completed")
      out(
        `thread ${t.thread_id} ${t.state} (${t.step_count} steps, ${t.input_tokens + t.output_tokens} tokens)`,
      );
    else if (r.outcome === "suspended")
      out(
        `thread ${t.thread_id} suspended (interrupted); continue with: ratchet thread resume ${t.thread_id}`,
      );
    else if (r.outcome === "waiting")
      out(
        `thread ${t.thread_id} waits for an approval: ratchet thread approve ${t.thread_id} | ratchet thread deny ${t.thread_id}`,
      );
    else err(`thread ${t.thread_id} failed: ${t.reason ?? "(no reason)"}`);
  }
  return r.outcome === "failed" ? 8 : 0;
}

interface DriveOpts {
  json?: boolean;
  waitApproval?: string;
  /** Enqueue the turn for `ratchet worker` instead of driving it here (src/queue/thread-job.ts). */
  queue?: boolean;
  queueName?: string;
}

function queueFlags(o: DriveOpts): boolean {
  if (o.queueName !== undefined && !o.queue)
    throw new RatchetError(ErrorCode.Usage, "--queue-name needs --queue", { field: "queue" });
  return Boolean(o.queue);
}

function driveOptions(o: DriveOpts, threadId: () => string): Partial<ThreadServiceOptions> {
  const wait = parseSeconds(o.waitApproval, "wait-approval");
  const ac = new AbortController();
  const stop = () => ac.abort();
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
  return {
    signal: ac.signal,
    ...(wait !== undefined ? { approvalWaitMs: wait } : {}),
    ...(o.json
      ? {}
      : { onEvent: (e: DriveEvent) => renderEvent(e, (s) => process.stdout.write(s), threadId) }),
  };
}

export async function threadStart(
  goal: string,
  o: ThreadGlobals & DriveOpts & { project?: string; model?: string },
): Promise<number> {
  if (queueFlags(o))
    return (await import("./worker-commands.js")).cmdEnqueueTurn(
      {
        op: "start",
        goal,
        ...(o.project ? { project: o.project } : {}),
        ...(o.model ? { model: o.model } : {}),
      },
      o,
    );
  let id = "";
  const svcOpts = driveOptions(o, () => id);
  const opened = open(o, svcOpts);
  try {
    const row = opened.svc.create(goal, {
      ...(o.project ? { project: o.project } : {}),
      ...(o.model ? { model: o.model } : {}),
    });
    id = row.thread_id;
    if (!o.json) err(`thread ${id}`);
    const r = await opened.svc.run(id);
    return report(r, o.json);
  } finally {
    opened.close();
  }
}

export async function threadResume(id: string, o: ThreadGlobals & DriveOpts): Promise<number> {
  if (queueFlags(o))
    return (await import("./worker-commands.js")).cmdEnqueueTurn({ op: "resume", threadId: id }, o);
  return withService(
    o,
    async (svc) => report(await svc.resume(id), o.json),
    driveOptions(o, () => id),
  )();
}

export async function threadDecide(
  decision: "approve" | "deny",
  id: string,
  o: ThreadGlobals & DriveOpts & { approval?: string; always?: boolean; reason?: string; resume?: boolean },
): Promise<number> {
  const queued = queueFlags(o);
  const opened = open(
    o,
    driveOptions(o, () => id),
  );
  try {
    const args = {
      ...(o.approval ? { approvalId: o.approval } : {}),
      ...(o.reason ? { reason: o.reason } : {}),
    };
    const r =
      decision === "approve"
        ? opened.svc.approve(id, { ...args, always: Boolean(o.always) })
        : opened.svc.deny(id, args);
    const a = r.approval;
    const line = {
      ok: true,
      op: `thread-${decision}`,
      thread_id: id,
      approval_id: a.approval_id,
      call_id: a.call_id,
      action: a.action,
      status: a.status,
      always: a.always === 1,
      driven: r.driven,
    };
    if (queued && !r.driven && o.resume !== false) {
      opened.close();
      // The continuation goes to a worker: the decision is recorded, the thread resumes there.
      return (await import("./worker-commands.js")).cmdEnqueueTurn(
        { op: "resume", threadId: id },
        {
          ...o,
          decided: { decision, approval_id: a.approval_id, call_id: a.call_id, action: a.action },
        },
      );
    }
    if (r.driven || o.resume === false) {
      out(
        o.json
          ? JSON.stringify(line)
          : `${a.status} ${a.action} (call ${a.call_id})${r.driven ? "; the waiting process continues the thread" : `; continue with: ratchet thread resume ${id}`}`,
      );
      return 0;
    }
    if (!o.json) out(`${a.status} ${a.action} (call ${a.call_id}); continuing thread ${id} here`);
    return report(await opened.svc.resume(id), o.json);
  } finally {
    opened.close();
  }
}

export async function threadCancel(
  id: string,
  o: ThreadGlobals & { reason?: string; json?: boolean },
): Promise<number> {
  return withService(o, (svc) => {
    const t = svc.cancel(id, o.reason ?? "cancelled by user");
    out(
      o.json
        ? JSON.stringify({ ok: true, op: "thread-cancel", thread_id: id, state: t.state })
        : t.state === "failed"
          ? `thread ${id} cancelled`
          : `thread ${id}: cancel requested; its process stops at the next host call`,
    );
    return 0;
  })();
}

export async function threadInject(
  id: string,
  message: string,
  o: ThreadGlobals & { json?: boolean },
): Promise<number> {
  return withService(o, (svc) => {
    const r = svc.inject(id, message);
    out(
      o.json
        ? JSON.stringify({
            ok: true,
            op: "thread-inject",
            thread_id: id,
            state: r.thread.state,
            inbox_id: r.inboxId,
          })
        : `message queued for thread ${id} (${r.thread.state}); its orchestrator gets it at its next step`,
    );
    return 0;
  })();
}

export async function threadRevoke(
  action: string,
  o: ThreadGlobals & { project?: string; json?: boolean },
): Promise<number> {
  return withService(o, (svc) => {
    const r = svc.revoke(action, o.project ?? "");
    out(
      o.json
        ? JSON.stringify({ ok: true, op: "thread-revoke", ...r })
        : `grant for ${action}${r.project ? ` in project ${r.project}` : ""} revoked; the next call asks again`,
    );
    return 0;
  })();
}

export async function threadList(
  o: ThreadGlobals & { state?: string; limit?: string; json?: boolean },
): Promise<number> {
  return withService(o, (svc) => {
    const rows = svc.list({ ...(o.state ? { state: o.state } : {}), limit: o.limit ? Number(o.limit) : 50 });
    if (o.json) out(JSON.stringify(rows));
    else
      for (const t of rows)
        out(
          `${t.thread_id}  ${t.state.padEnd(9)} ${String(t.step_count).padStart(3)} steps  ${t.kind.padEnd(14)} ${t.goal.split("\n")[0]!.slice(0, 60)}`,
        );
    return 0;
  })();
}

export async function threadShow(id: string, o: ThreadGlobals & { json?: boolean }): Promise<number> {
  return withService(o, (svc) => {
    const d = svc.show(id);
    if (o.json) {
      out(JSON.stringify(d));
      return 0;
    }
    const t = d.thread;
    out(`thread ${t.thread_id}  ${t.state}${t.reason ? ` (${t.reason})` : ""}`);
    out(`goal: ${t.goal}`);
    out(
      `kind ${t.kind}  project ${t.project ?? "-"}  orchestrator v${t.orchestrator_version ?? "-"}  steps ${t.step_count}  tokens ${t.input_tokens}+${t.output_tokens}  cost $${t.cost_usd.toFixed(4)}`,
    );
    if (t.orchestrator_version !== null)
      out(
        `orchestrator v${t.orchestrator_version} ran: ${d.orchestrator.why ?? "(chosen before this was recorded)"}`,
      );
    if (t.final_result !== null) out(`result: ${t.final_result}`);
    for (const p of d.pending)
      out(
        `waiting for approval ${p.approval_id}: ${p.action}(${JSON.stringify(p.args)}) call ${p.call_id} — ratchet thread approve ${t.thread_id} | deny`,
      );
    for (const m of d.messages)
      out(
        `  [${m.role}${m.tool_name ? ` ${m.tool_name} ${m.call_id}` : ""}${m.is_error ? " error" : ""}] ${m.content.slice(0, 300)}`,
      );
    for (const a of d.approvals)
      out(
        `  approval ${a.approval_id} ${a.status} ${a.action} call ${a.call_id}${a.decided_by ? ` by ${a.decided_by}` : ""}`,
      );
    if (d.checkpoint)
      out(`  checkpoint #${d.checkpoint.seq} at ${d.checkpoint.call} (${d.checkpoint.bytes} bytes)`);
    return 0;
  })();
}

export async function threadWatch(
  id: string,
  o: ThreadGlobals & { timeout?: string; json?: boolean },
): Promise<number> {
  const limit = parseSeconds(o.timeout ?? "3600", "timeout")!;
  const opened = open(o, {}, { withTools: false });
  try {
    opened.svc.threads.require(id);
    const until = Date.now() + limit;
    // Rendered for a person (colour on a terminal only); `--json` keeps the raw event rows.
    const paint = painter(progressMode(process.stdout.isTTY === true, process.env).colour);
    let since = 0;
    let lastMessage = 0;
    for (;;) {
      for (const e of opened.store.listEvents({ since, entityKind: "thread", entityId: id, limit: 1000 })) {
        since = e.id;
        if (o.json) {
          out(JSON.stringify(e));
          continue;
        }
        // A message and its event are written in one transaction, in order: the next message is its.
        const message =
          e.type === "thread.message" ? opened.svc.threads.messagesAfter(id, lastMessage)[0] : undefined;
        if (message) lastMessage = message.id;
        for (const l of renderWatchEvent(e, message, id, paint)) out(l);
      }
      // Nobody reads any more (`thread watch … | head -1`): watching is pointless.
      if (stdoutGone()) return 0;
      const t = opened.svc.threads.require(id);
      if (isTerminal(t.state)) return t.state === "failed" ? 8 : 0;
      if (Date.now() >= until) {
        err(`thread ${id} still ${t.state} after ${limit / 1000} s`);
        return 8;
      }
      await sleep(200);
    }
  } finally {
    opened.close();
  }
}

/** `ratchet chat`: a REPL; each message runs as a thread that carries the conversation so far. */
export async function chat(o: ThreadGlobals & { project?: string; model?: string }): Promise<number> {
  const rl = createInterface({
    input: process.stdin,
    output: process.stdout,
    terminal: process.stdin.isTTY === true,
  });
  const lines = rl[Symbol.asyncIterator]();
  const history: string[] = [];
  let id = "";
  let pendingDecision: ((answer: string) => void) | undefined;
  const write = (s: string) => {
    if (!stdoutGone()) process.stdout.write(s);
  };
  // Nobody reads any more: the running thread is interrupted (Suspended, resumable) and chat ends.
  const ac = new AbortController();
  const unsubscribe = onStdoutGone(() => {
    ac.abort();
    rl.close();
  });
  const opened = open(o, {
    signal: ac.signal,
    onEvent: (e) => {
      renderEvent(e, write, () => id);
      if (e.type === "approval") {
        write("approve? [y]es / [n]o / [a]lways: ");
        pendingDecision = (answer) => {
          const a = answer.trim().toLowerCase();
          if (a === "y" || a === "yes" || a === "a" || a === "always")
            opened.svc.approve(id, { approvalId: e.approvalId, always: a.startsWith("a"), by: "chat" });
          else opened.svc.deny(id, { approvalId: e.approvalId, by: "chat" });
        };
      }
    },
  });
  try {
    write("ratchet chat — empty line or Ctrl-D to leave\n> ");
    for (;;) {
      const next = await lines.next();
      if (next.done || next.value.trim() === "" || stdoutGone()) break;
      const goal = history.length
        ? `Conversation so far:\n${history.join("\n")}\n\nNow: ${next.value}`
        : next.value;
      const row = opened.svc.create(goal, {
        ...(o.project ? { project: o.project } : {}),
        ...(o.model ? { model: o.model } : {}),
      });
      id = row.thread_id;
      const running = opened.svc.run(id);
      let finished: DriveResult | undefined;
      void running.then((r) => {
        finished = r;
      });
      while (!finished) {
        if (pendingDecision) {
          const answer = await lines.next();
          const decide = pendingDecision;
          pendingDecision = undefined;
          // A reader that went away decides nothing: the interrupted thread keeps waiting.
          if (!stdoutGone()) decide(answer.done ? "n" : answer.value);
        }
        await Promise.race([running, sleep(50)]);
      }
      history.push(
        `user: ${next.value}`,
        `assistant: ${finished.thread.final_result ?? `(${finished.thread.reason})`}`,
      );
      if (stdoutGone()) break;
      write(`\n${finished.outcome === "failed" ? `[failed: ${finished.thread.reason}]\n` : ""}> `);
    }
    return 0;
  } finally {
    unsubscribe();
    rl.close();
    opened.close();
  }
}
