/** Read commands: plan show/list, events, project list. `--json` prints machine-readable output. */
import { ErrorCode, RatchetError } from "../core/index.js";
import { renderPlan, showPlan } from "../ledger/index.js";
import type { EventRow } from "../store/index.js";
import { type GlobalOptions, withLedgerContext } from "./context.js";
import { onStdoutGone, out } from "./io.js";

export async function planShow(
  planId: string,
  opts: GlobalOptions & { step?: string; full?: boolean; json?: boolean },
): Promise<number> {
  return withLedgerContext(opts, (ctx) => {
    const view = showPlan(ctx.store, ctx.blobs, planId, {
      ...(opts.step ? { step: opts.step } : {}),
      full: Boolean(opts.full),
    });
    out(opts.json ? JSON.stringify(view, null, 2) : renderPlan(view, { logs: true }));
    return 0;
  });
}

export async function planList(
  opts: GlobalOptions & { status?: string; limit?: string; json?: boolean },
): Promise<number> {
  const limit = opts.limit === undefined ? 50 : Number(opts.limit);
  if (!Number.isInteger(limit) || limit < 1 || limit > 10_000) {
    throw new RatchetError(
      ErrorCode.Usage,
      `--limit must be an integer from 1 to 10000 (got ${opts.limit})`,
      { field: "limit" },
    );
  }
  const status = opts.status?.toUpperCase();
  if (status && !["IN_PROGRESS", "COMPLETED", "FAILED", "ABANDONED"].includes(status)) {
    throw new RatchetError(
      ErrorCode.Usage,
      `--status must be one of IN_PROGRESS, COMPLETED, FAILED, ABANDONED (got ${opts.status})`,
      { field: "status" },
    );
  }
  return withLedgerContext(opts, (ctx) => {
    const plans = ctx.store.listPlans({ ...(status ? { status } : {}), limit });
    if (opts.json) out(JSON.stringify(plans, null, 2));
    else if (plans.length === 0) out("no plans");
    else
      for (const p of plans)
        out(
          `${p.plan_id}  ${p.status}  ${p.created_at}${p.project ? `  project=${p.project}` : ""}  ${p.goal.split("\n")[0]}`,
        );
    return 0;
  });
}

function renderEvent(e: EventRow): string {
  return `#${e.id} ${e.at} ${e.type} ${e.entity_kind}:${e.entity_id} ${e.payload}`;
}

export async function events(
  opts: GlobalOptions & {
    since?: string;
    follow?: boolean;
    json?: boolean;
    plan?: string;
    limit?: string;
    timeout?: string;
  },
): Promise<number> {
  let since = opts.since === undefined ? 0 : Number(opts.since);
  if (!Number.isInteger(since) || since < 0)
    throw new RatchetError(ErrorCode.Usage, `--since must be an event id (got ${opts.since})`, {
      field: "since",
    });
  const limit = opts.limit === undefined ? 1000 : Number(opts.limit);
  if (!Number.isInteger(limit) || limit < 1)
    throw new RatchetError(ErrorCode.Usage, `--limit must be a positive integer (got ${opts.limit})`, {
      field: "limit",
    });
  return withLedgerContext(opts, async (ctx) => {
    const print = (rows: EventRow[]) => {
      for (const e of rows) {
        out(opts.json ? JSON.stringify({ ...e, payload: JSON.parse(e.payload) }) : renderEvent(e));
        since = e.id;
      }
    };
    const q = { ...(opts.plan ? { planId: opts.plan } : {}) };
    print(ctx.store.listEvents({ ...q, since, limit }));
    if (!opts.follow) return 0;
    // SIGINT/SIGTERM end the follow cleanly (exit 0) from here on, also while it is still starting
    // (loading the wake-up code, connecting its LISTEN session).
    let stop: () => void = () => {};
    let signalled = false;
    const onSignal = () => {
      signalled = true;
      stop();
    };
    process.on("SIGINT", onSignal);
    process.on("SIGTERM", onSignal);
    try {
      const timeoutMs = opts.timeout === undefined ? 0 : Number(opts.timeout) * 1000;
      const { startEventWake } = await import("../server/index.js");
      if (signalled) return 0;
      await new Promise<void>((resolveFollow) => {
        let pending: ReturnType<typeof setTimeout> | undefined;
        let stopped = false;
        const drain = () => {
          pending = undefined;
          if (stopped) return;
          // Everything after the last printed id, however many batches (a wake-up carries no data).
          for (;;) {
            const rows = ctx.store.listEvents({ ...q, since, limit: 1000 });
            print(rows);
            if (rows.length < 1000 || stopped) return;
          }
        };
        const kick = () => {
          if (!pending && !stopped) pending = setTimeout(drain, 20);
        };
        // Wake on changes of the WAL file (SQLite) or on `NOTIFY ratchet_events` (PostgreSQL, a
        // LISTEN session of its own); a slow timer covers a lost wake-up. Each wake-up reads by id.
        const wake = startEventWake(
          ctx.workspace.storeUrl ? { storeUrl: ctx.workspace.storeUrl } : { watchDir: ctx.workspace.dir },
          kick,
          { keepAlive: true },
        );
        let unsubscribe = () => {};
        stop = () => {
          if (stopped) return;
          unsubscribe();
          // The store closes once this resolves: a drain still queued must not touch it.
          stopped = true;
          if (pending) clearTimeout(pending);
          wake.close();
          resolveFollow();
        };
        // Nobody reads any more (`events --follow | head -1`): following is pointless.
        unsubscribe = onStdoutGone(stop);
        if (timeoutMs > 0) setTimeout(stop, timeoutMs).unref();
      });
    } finally {
      process.off("SIGINT", onSignal);
      process.off("SIGTERM", onSignal);
    }
    return 0;
  });
}

export async function projectAdd(name: string, opts: GlobalOptions & { repo?: string }): Promise<number> {
  const { resolve } = await import("node:path");
  const { realpathSync, existsSync } = await import("node:fs");
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/.test(name)) {
    throw new RatchetError(
      ErrorCode.Usage,
      `project name ${JSON.stringify(name)} must be letters, digits, '.', '_' or '-' (at most 100)`,
      { field: "name" },
    );
  }
  let repo: string | null = null;
  if (opts.repo !== undefined) {
    const abs = resolve(opts.repo);
    if (!existsSync(abs))
      throw new RatchetError(ErrorCode.InvalidValue, `--repo ${opts.repo}: no such folder`, {
        field: "repo",
      });
    repo = realpathSync(abs);
  }
  return withLedgerContext(opts, async (ctx) => {
    ctx.store.tx(() => {
      if (ctx.store.getProject(name))
        throw new RatchetError(ErrorCode.InvalidValue, `project ${name} is already registered`, {
          field: "name",
        });
      if (repo && ctx.store.projectForRepo(repo))
        throw new RatchetError(
          ErrorCode.InvalidValue,
          `repository ${repo} already belongs to project ${ctx.store.projectForRepo(repo)?.name}`,
          { field: "repo" },
        );
      ctx.store.addProject({ name, repo_path: repo, created_at: new Date().toISOString() });
      ctx.store.appendEvent({
        entityKind: "project",
        entityId: name,
        type: "project.added",
        payload: { repo_path: repo },
      });
    });
    // A project with a repo gets its first state-graph run (trigger `register`); a failed analysis
    // is a notice, the registration stands.
    let graph: { graph_run_id?: number; notice?: string } = {};
    if (repo) {
      const { nodeSourceFor } = await import("../provenance/nodes/index.js");
      try {
        graph = { graph_run_id: (await nodeSourceFor(ctx.store).refresh(name, { trigger: "register" })).id };
      } catch (e) {
        graph = { notice: `state graph not built: ${(e as Error).message}` };
      }
    }
    out(JSON.stringify({ name, repo_path: repo, ...graph }, null, 2));
    out(JSON.stringify({ ok: true, op: "project-add", name, repo_path: repo, ...graph }));
    return 0;
  });
}

export async function projectList(opts: GlobalOptions & { json?: boolean }): Promise<number> {
  return withLedgerContext(opts, (ctx) => {
    const rows = ctx.store.listProjects();
    if (opts.json) out(JSON.stringify(rows, null, 2));
    else if (rows.length === 0) out("no projects");
    else for (const p of rows) out(`${p.name}${p.repo_path ? `  ${p.repo_path}` : ""}`);
    return 0;
  });
}
