/**
 * Skill documents: a name, the text injected into the system prompt, and what selects it
 * (keywords, excluded keywords, tags, regex patterns), with usage counts the orchestrator records.
 * Scoring and selection live in the orchestrator script (orchestrator-default.ts), so a mission can
 * evolve them.
 */
import { ErrorCode, RatchetError } from "../core/index.js";
import { DocKind, type DocumentRow, parseMeta, parseTags } from "./documents.js";
import type { ThreadService } from "./service.js";

export interface SkillInput {
  name: string;
  content: string;
  keywords?: string[];
  excluded_keywords?: string[];
  tags?: string[];
  patterns?: string[];
  project?: string;
}

export interface SkillView {
  doc_id: string;
  name: string;
  content: string;
  keywords: string[];
  excluded_keywords: string[];
  tags: string[];
  patterns: string[];
  source: string;
  usage_count: number;
  success_count: number;
  failure_count: number;
  created_at: string;
}

/** Adds a skill. @throws RatchetError `invalid_value` naming the field (empty name/content, bad regex). */
export function addSkill(svc: ThreadService, s: SkillInput): SkillView {
  if (!s.name?.trim())
    throw new RatchetError(ErrorCode.InvalidValue, "skill name must not be empty", { field: "name" });
  if (!s.content?.trim())
    throw new RatchetError(ErrorCode.InvalidValue, `skill ${s.name}: content must not be empty`, {
      field: "content",
    });
  for (const p of s.patterns ?? []) {
    try {
      new RegExp(p);
    } catch (e) {
      throw new RatchetError(
        ErrorCode.InvalidValue,
        `skill ${s.name}: pattern ${JSON.stringify(p)} is not a valid regex: ${(e as Error).message}`,
        {
          field: "patterns",
        },
      );
    }
  }
  const row = svc.docs.insert({
    kind: DocKind.Skill,
    title: s.name,
    project: s.project ?? null,
    tags: s.tags ?? [],
    content: s.content,
    meta: {
      source: "authored",
      keywords: s.keywords ?? [],
      excluded_keywords: s.excluded_keywords ?? [],
      patterns: s.patterns ?? [],
      usage_count: 0,
      success_count: 0,
      failure_count: 0,
    },
  });
  return skillView(row);
}

export function skillView(row: DocumentRow): SkillView {
  const m = parseMeta(row);
  const list = (k: string) => (Array.isArray(m[k]) ? (m[k] as string[]) : []);
  const num = (k: string) => (typeof m[k] === "number" ? (m[k] as number) : 0);
  return {
    doc_id: row.doc_id,
    name: row.title,
    content: row.content,
    keywords: list("keywords"),
    excluded_keywords: list("excluded_keywords"),
    tags: parseTags(row),
    patterns: list("patterns"),
    source: typeof m.source === "string" ? m.source : "authored",
    usage_count: num("usage_count"),
    success_count: num("success_count"),
    failure_count: num("failure_count"),
    created_at: row.created_at,
  };
}

export function listSkills(svc: ThreadService): SkillView[] {
  return svc.docs.list(DocKind.Skill).map(skillView);
}

/** @throws RatchetError `not_found`. */
export function showSkill(svc: ThreadService, idOrName: string): SkillView {
  const row = svc.docs.find(DocKind.Skill, idOrName);
  if (!row || row.kind !== DocKind.Skill)
    throw new RatchetError(ErrorCode.NotFound, `skill ${idOrName} not found`, { skill: idOrName });
  return skillView(row);
}
