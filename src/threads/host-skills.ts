/**
 * The skill host functions (`__list_skills__` in the original's shape, `__record_skill_usage__`,
 * `__set_active_skills__`) and `__regex_match__`'s translation of Python regex syntax.
 */
import { DocKind, parseMeta, parseTags } from "./documents.js";
import { ThreadEvent } from "./events.js";
import type { EngineDeps, HostContext, HostResult } from "./host-types.js";

const str = (v: unknown, fallback = ""): string =>
  typeof v === "string" ? v : v === undefined || v === null ? fallback : JSON.stringify(v);
const obj = (v: unknown): Record<string, unknown> =>
  v && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, unknown>) : {};

/** Python's regex syntax the scripts use → a JS RegExp (`(?i)` prefix, `(?P<name>…)`); null if invalid. */
export function scriptRegex(pattern: string): RegExp | null {
  let p = pattern;
  let flags = "u";
  const inline = /^\(\?([imsx]+)\)/.exec(p);
  if (inline) {
    p = p.slice(inline[0].length);
    for (const f of inline[1]!) if (f !== "x" && !flags.includes(f)) flags += f;
  }
  p = p
    .replace(/\(\?P<([A-Za-z_][A-Za-z0-9_]*)>/g, "(?<$1>")
    .replace(/\(\?P=([A-Za-z_][A-Za-z0-9_]*)\)/g, "\\k<$1>");
  try {
    return new RegExp(p, flags);
  } catch {
    try {
      return new RegExp(p, flags.replace("u", ""));
    } catch {
      return null;
    }
  }
}

/** Skills in the original's shape (`metadata.activation`, `metrics`); mission-written ones are `extracted`. */
export function listSkillsForScript(d: Pick<EngineDeps, "docs">): Record<string, unknown>[] {
  return d.docs.list(DocKind.Skill).map((r) => {
    const m = parseMeta(r);
    const list = (k: string) => (Array.isArray(m[k]) ? (m[k] as string[]) : []);
    const num = (k: string) => (typeof m[k] === "number" ? (m[k] as number) : 0);
    const successes = num("success_count");
    const failures = num("failure_count");
    return {
      doc_id: r.doc_id,
      title: r.title,
      content: r.content,
      metadata: {
        name: r.title,
        version: r.version || 1,
        description: typeof m.description === "string" ? m.description : "",
        activation: {
          keywords: list("keywords"),
          exclude_keywords: list("excluded_keywords"),
          patterns: list("patterns"),
          tags: parseTags(r),
          max_context_tokens:
            typeof m.max_context_tokens === "number"
              ? m.max_context_tokens
              : Math.ceil(r.content.length / 4) + 1,
        },
        source: m.source === "learned" ? "extracted" : "authored",
        trust: "trusted",
        metrics: {
          uses: num("usage_count"),
          successes,
          success_count: successes,
          failure_count: failures,
        },
        code_snippets: [],
      },
    };
  });
}

/** Counts a use of a skill (an unknown id is ignored). */
export function recordSkillUsage(
  d: Pick<EngineDeps, "docs">,
  docId: string,
  success: boolean,
  ctx: HostContext,
): HostResult {
  const doc = d.docs.get(docId);
  if (!doc || doc.kind !== DocKind.Skill) return { value: null };
  return ctx.commit({ value: null }, () => countSkillUse(d, docId, success));
}

/** `__set_active_skills__(skills)`: ids (or dicts with `doc_id`); their use is counted when the thread ends. */
export function setActiveSkills(
  d: Pick<EngineDeps, "threads">,
  threadId: string,
  raw: unknown,
  ctx: HostContext,
): HostResult {
  const items = Array.isArray(raw) ? raw : [];
  const ids = items.map((x) => (typeof x === "string" ? x : str(obj(x).doc_id))).filter(Boolean);
  const names = items.map((x) => (typeof x === "string" ? x : str(obj(x).name))).filter(Boolean);
  return ctx.commit({ value: null }, () =>
    d.threads.event(threadId, ThreadEvent.SkillsActive, { doc_ids: ids, names }),
  );
}

/** Adds one use (and a success or a failure) to a skill's counters. */
export function countSkillUse(d: Pick<EngineDeps, "docs">, docId: string, success: boolean): void {
  const doc = d.docs.get(docId);
  if (!doc || doc.kind !== DocKind.Skill) return;
  const m = parseMeta(doc);
  m.usage_count = ((m.usage_count as number) ?? 0) + 1;
  const key = success ? "success_count" : "failure_count";
  m[key] = ((m[key] as number) ?? 0) + 1;
  d.docs.updateMeta(docId, m);
}
