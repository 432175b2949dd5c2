/**
 * Documents threads read and write: skills, orchestrator versions, insights, playbooks and prompt
 * changes. One table (`documents`); each write commits with a `document.saved` event.
 */
import { randomBytes } from "node:crypto";
import { ErrorCode, RatchetError } from "../core/index.js";
import { ThreadEvent } from "./events.js";
import type { ThreadStore } from "./thread-store.js";

/** Kinds of documents. Stored as these strings. */
export const DocKind = {
  Skill: "skill",
  Orchestrator: "orchestrator",
  Insight: "insight",
  Playbook: "playbook",
  Prompt: "prompt",
  /** A change a mission proposed (orchestrator code or prompt) that waits for approval. */
  Proposal: "proposal",
} as const;
export type DocKind = (typeof DocKind)[keyof typeof DocKind];

export interface DocumentRow {
  doc_id: string;
  kind: DocKind;
  title: string;
  project: string | null;
  /** JSON array of strings. */
  tags: string;
  version: number;
  content: string;
  /** JSON object. */
  meta: string;
  created_at: string;
  updated_at: string;
}

export interface NewDocument {
  kind: DocKind;
  title: string;
  project?: string | null;
  tags?: string[];
  version?: number;
  content: string;
  meta?: Record<string, unknown>;
}

export function newDocId(kind: string): string {
  return `${kind.slice(0, 4)}-${randomBytes(5).toString("hex")}`;
}

export class Documents {
  constructor(readonly threads: ThreadStore) {}

  insert(d: NewDocument): DocumentRow {
    const now = this.threads.now();
    const row: DocumentRow = {
      doc_id: newDocId(d.kind),
      kind: d.kind,
      title: d.title,
      project: d.project ?? null,
      tags: JSON.stringify(d.tags ?? []),
      version: d.version ?? 0,
      content: d.content,
      meta: JSON.stringify(d.meta ?? {}),
      created_at: now,
      updated_at: now,
    };
    this.threads.tx(() => {
      this.threads
        .sql(
          `INSERT INTO documents (doc_id, kind, title, project, tags, version, content, meta, created_at, updated_at)
           VALUES (@doc_id, @kind, @title, @project, @tags, @version, @content, @meta, @created_at, @updated_at)`,
        )
        .run(row);
      this.threads.store.appendEvent({
        entityKind: "document",
        entityId: row.doc_id,
        type: ThreadEvent.DocumentSaved,
        payload: { kind: row.kind, title: row.title, version: row.version, project: row.project },
      });
    });
    return row;
  }

  get(docId: string): DocumentRow | undefined {
    return this.threads.sql("SELECT * FROM documents WHERE doc_id = ?").get(docId) as DocumentRow | undefined;
  }

  /** @throws RatchetError `not_found`. */
  require(docId: string): DocumentRow {
    const d = this.get(docId);
    if (!d) throw new RatchetError(ErrorCode.NotFound, `document ${docId} not found`, { docId });
    return d;
  }

  /** Finds by id, or by title for a kind (the newest version). */
  find(kind: DocKind, idOrTitle: string): DocumentRow | undefined {
    return (
      this.get(idOrTitle) ??
      (this.threads
        .sql(
          "SELECT * FROM documents WHERE kind = ? AND title = ? ORDER BY version DESC, created_at DESC LIMIT 1",
        )
        .get(kind, idOrTitle) as DocumentRow | undefined)
    );
  }

  list(kind: DocKind, limit = 500): DocumentRow[] {
    return this.threads
      .sql("SELECT * FROM documents WHERE kind = ? ORDER BY version DESC, created_at DESC LIMIT ?")
      .all(kind, limit) as DocumentRow[];
  }

  updateMeta(docId: string, meta: Record<string, unknown>): void {
    this.threads
      .sql("UPDATE documents SET meta = ?, updated_at = ? WHERE doc_id = ?")
      .run(JSON.stringify(meta), this.threads.now(), docId);
  }

  /** Documents whose title or content contains any word of `query` (most words first). */
  search(query: string, kinds: readonly DocKind[], limit: number): DocumentRow[] {
    const words = [...new Set(query.toLowerCase().match(/[a-z0-9_]{3,}/g) ?? [])].slice(0, 12);
    if (words.length === 0) return [];
    const rows = this.threads
      .sql(
        `SELECT * FROM documents WHERE kind IN (${kinds.map(() => "?").join(",")}) ORDER BY updated_at DESC LIMIT 2000`,
      )
      .all(...kinds) as DocumentRow[];
    return rows
      .map((r) => {
        const text = `${r.title}\n${r.content}`.toLowerCase();
        return { r, hits: words.filter((w) => text.includes(w)).length };
      })
      .filter((e) => e.hits > 0)
      .sort((a, b) => b.hits - a.hits)
      .slice(0, limit)
      .map((e) => e.r);
  }
}

export function parseTags(row: DocumentRow): string[] {
  return JSON.parse(row.tags) as string[];
}

export function parseMeta(row: DocumentRow): Record<string, unknown> {
  return JSON.parse(row.meta) as Record<string, unknown>;
}
