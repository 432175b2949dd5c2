/**
 * `ratchet orchestrator …` and `ratchet skills …`. Loaded lazily by main.ts.
 */
import { existsSync, readFileSync } from "node:fs";
import { ErrorCode, RatchetError } from "../core/index.js";
import { openStore, resolveWorkspace, type Store } from "../store/index.js";
import {
  acceptProposal,
  addSkill,
  listProposals,
  listSkills,
  montyVm,
  rejectProposal,
  selfTestOrchestrator,
  showSkill,
} from "../threads/index.js";
import { out } from "./io.js";
import { type ThreadGlobals, threadServiceFor, withService } from "./thread-commands.js";

export async function orchestratorList(o: ThreadGlobals & { json?: boolean }): Promise<number> {
  return withService(
    o,
    (svc) => {
      const active = svc.versions.active({ selfModify: svc.config.selfModify });
      const rows = svc.versions.list().map((v) => ({
        version: v.version,
        source: v.source,
        origin: v.origin,
        active: v.version === active.version,
        consecutive_failures: v.consecutive_failures,
        total_failures: v.total_failures,
        disabled_reason: v.disabled_reason,
      }));
      const proposals = listProposals(svc).map((p) => ({
        doc_id: p.doc_id,
        title: p.title,
        created_at: p.created_at,
        ...JSON.parse(p.meta),
      }));
      if (o.json)
        out(
          JSON.stringify({ versions: rows, active: { version: active.version, why: active.why }, proposals }),
        );
      else {
        out(`active: v${active.version} (${active.why})`);
        for (const r of rows)
          out(
            `v${r.version}${r.active ? " (active)" : ""}  ${r.source} (${r.origin})  failures ${r.consecutive_failures}/${r.total_failures}${r.disabled_reason ? `  disabled: ${r.disabled_reason}` : ""}`,
          );
        for (const p of proposals)
          out(
            `proposal ${p.doc_id}  ${p.title}  ${String(p.status)}${p.reason ? `  ${String(p.reason)}` : ""}`,
          );
      }
      return 0;
    },
    {},
  )();
}

export async function orchestratorShow(version: string, o: ThreadGlobals): Promise<number> {
  return withService(o, (svc) => {
    out(svc.versions.get(parseVersion(version)).code);
    return 0;
  })();
}

function parseVersion(text: string): number {
  const n = Number(text.replace(/^v/, ""));
  if (!Number.isInteger(n) || n < 0)
    throw new RatchetError(
      ErrorCode.Usage,
      `version must be a number like 2 or v2 (got ${JSON.stringify(text)})`,
      { field: "version" },
    );
  return n;
}

export async function orchestratorRollback(
  version: string,
  o: ThreadGlobals & { reason: string },
): Promise<number> {
  return withService(o, (svc) => {
    const v = svc.versions.rollback(parseVersion(version), o.reason);
    out(JSON.stringify({ ok: true, op: "orchestrator-rollback", active: v.version }));
    return 0;
  })();
}

/** Saves a new orchestrator version from a file after the syntax check and the test threads. */
export async function orchestratorSave(
  file: string,
  o: ThreadGlobals & { reason?: string },
): Promise<number> {
  const code = readFileSync(file, "utf8");
  return withService(o, async (svc) => {
    try {
      montyVm.check(code, file);
    } catch (e) {
      throw new RatchetError(ErrorCode.InvalidValue, `${file} does not parse: ${(e as Error).message}`, {
        file,
      });
    }
    const failures = await selfTestOrchestrator(code);
    if (failures.length)
      throw new RatchetError(
        ErrorCode.WorkFailed,
        `${file} failed the test threads: ${failures.join("; ")}`,
        { file },
      );
    const v = svc.versions.save(code, montyVm, { file, reason: o.reason ?? null });
    out(JSON.stringify({ ok: true, op: "orchestrator-save", version: v.version }));
    return 0;
  })();
}

export async function proposalDecide(
  decision: "accept" | "reject",
  docId: string,
  o: ThreadGlobals & { reason?: string },
): Promise<number> {
  return withService(o, async (svc) => {
    if (decision === "reject") {
      rejectProposal(svc, docId, o.reason ?? "rejected");
      out(JSON.stringify({ ok: true, op: "proposal-reject", doc_id: docId }));
      return 0;
    }
    const r = await acceptProposal(svc, docId);
    out(JSON.stringify({ ok: true, op: "proposal-accept", doc_id: docId, ...r }));
    return 0;
  })();
}

const csv = (s: string | undefined) =>
  s
    ? s
        .split(",")
        .map((x) => x.trim())
        .filter(Boolean)
    : [];

export async function skillsAdd(
  name: string,
  o: ThreadGlobals & {
    content?: string;
    file?: string;
    keywords?: string;
    exclude?: string;
    tags?: string;
    patterns?: string[];
    project?: string;
    json?: boolean;
  },
): Promise<number> {
  const content = o.file ? readFileSync(o.file, "utf8") : o.content;
  if (content === undefined)
    throw new RatchetError(ErrorCode.Usage, "give the skill's text with --content or --file", {
      field: "content",
    });
  return withService(o, (svc) => {
    const s = addSkill(svc, {
      name,
      content,
      keywords: csv(o.keywords),
      excluded_keywords: csv(o.exclude),
      tags: csv(o.tags),
      patterns: o.patterns ?? [],
      ...(o.project ? { project: o.project } : {}),
    });
    out(JSON.stringify({ ok: true, op: "skill-add", doc_id: s.doc_id, name: s.name }));
    return 0;
  })();
}

export async function skillsList(o: ThreadGlobals & { json?: boolean }): Promise<number> {
  return withService(o, (svc) => {
    const rows = listSkills(svc);
    if (o.json) out(JSON.stringify(rows));
    else
      for (const s of rows)
        out(
          `${s.doc_id}  ${s.name}  [${s.keywords.join(", ")}]  used ${s.usage_count} (${s.success_count} ok, ${s.failure_count} failed)  ${s.source}`,
        );
    return 0;
  })();
}

export async function skillsShow(id: string, o: ThreadGlobals & { json?: boolean }): Promise<number> {
  return withService(o, (svc) => {
    const s = showSkill(svc, id);
    if (o.json) out(JSON.stringify(s));
    else {
      out(`${s.name} (${s.doc_id}, ${s.source})`);
      out(
        `keywords: ${s.keywords.join(", ") || "-"}  excluded: ${s.excluded_keywords.join(", ") || "-"}  tags: ${s.tags.join(", ") || "-"}  patterns: ${s.patterns.join(" | ") || "-"}`,
      );
      out(`used ${s.usage_count} times (${s.success_count} ok, ${s.failure_count} failed)\n`);
      out(s.content);
    }
    return 0;
  })();
}

/**
 * The line `ratchet doctor` prints about threads: which orchestrator version new threads run and
 * why. Null outside a workspace or before its store exists (doctor reads, never creates).
 */
export function threadsDoctorLine(): { version: number; why: string; self_modify: boolean } | null {
  let ws: ReturnType<typeof resolveWorkspace>;
  try {
    ws = resolveWorkspace({});
  } catch {
    return null;
  }
  if (!ws.storeUrl && !existsSync(ws.dbPath)) return null;
  let store: Store;
  try {
    store = openStore(ws);
  } catch {
    return null; // a PostgreSQL server doctor cannot reach reports itself elsewhere
  }
  try {
    const svc = threadServiceFor(store, ws.dir, {}, { withTools: false });
    const a = svc.versions.active({ selfModify: svc.config.selfModify });
    return { version: a.version, why: a.why, self_modify: svc.config.selfModify };
  } finally {
    store.close();
  }
}
