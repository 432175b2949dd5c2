/**
 * The `constraints` of `provledger-extensions.json`: human constraints anchored on nodes,
 * `{"constraints": [{"node": "<qualified name | nk_…>", "statement": "…", "block": true?}]}`.
 * The file is the one `extensions.ts` finds (the same as `close_mode`'s).
 * Each entry is imported once as a `role=constraint`, `tier=asserted`, `recorded_by=human` row
 * (plan_id `extensions`); `block` is read from the file each time, never stored.
 */
import { ErrorCode, RatchetError } from "../../core/index.js";
import type { NodeSource } from "../types.js";
import { extensionsFile, readJsonFile } from "./extensions.js";
import type { WhyStore } from "./why-store.js";

export interface DeclaredConstraint {
  node: string;
  statement: string;
  block: boolean;
}

/** The extensions file used for a project repo (undefined when none exists). */
export function extensionsPath(
  repo: string | null,
  env: NodeJS.ProcessEnv = process.env,
): string | undefined {
  return extensionsFile({ repo, env });
}

/**
 * The declared constraints of the file (none when there is no file).
 * @throws RatchetError `invalid_value` (exit 2) naming the file and entry when it is malformed.
 */
export function declaredConstraints(file: string | undefined): DeclaredConstraint[] {
  if (!file) return [];
  const read = readJsonFile(file);
  if ("error" in read)
    throw new RatchetError(ErrorCode.InvalidValue, `${file}: not readable JSON (${read.error})`, { file });
  const doc = read.doc;
  const list = (doc as { constraints?: unknown } | null)?.constraints;
  if (list === undefined) return [];
  if (!Array.isArray(list))
    throw new RatchetError(ErrorCode.InvalidValue, `${file}: \`constraints\` must be a list`, {
      file,
      field: "constraints",
    });
  return list.map((c, i) => {
    const e = c as { node?: unknown; statement?: unknown; block?: unknown } | null;
    if (!e || typeof e.node !== "string" || !e.node || typeof e.statement !== "string" || !e.statement.trim())
      throw new RatchetError(
        ErrorCode.InvalidValue,
        `${file}: \`constraints[${i}]\` needs a non-empty \`node\` and \`statement\``,
        { file, field: `constraints[${i}]` },
      );
    if (e.block !== undefined && typeof e.block !== "boolean")
      throw new RatchetError(
        ErrorCode.InvalidValue,
        `${file}: \`constraints[${i}].block\` must be true or false`,
        {
          file,
          field: `constraints[${i}].block`,
        },
      );
    return { node: e.node, statement: e.statement.trim(), block: e.block === true };
  });
}

/** A constraint row id → whether the file declares it `block: true`. */
export type BlockMap = Map<number, boolean>;

/**
 * Imports the declared constraints whose node resolves (unresolved ones are returned as hints)
 * and maps each row to its `block` flag. Runs inside the caller's write transaction.
 */
export function syncConstraints(
  store: WhyStore,
  nodes: NodeSource,
  project: string,
  declared: readonly DeclaredConstraint[],
  at: string,
): { blocks: BlockMap; unresolved: string[]; imported: number } {
  const blocks: BlockMap = new Map();
  const unresolved: string[] = [];
  let imported = 0;
  for (const c of declared) {
    const node = nodes.resolve(project, c.node);
    if (!node) {
      unresolved.push(c.node);
      continue;
    }
    let row = store.findConstraint(project, node.node_key, c.statement);
    if (!row) {
      const id = store.insertConstraint({ project, node_key: node.node_key, statement: c.statement, at });
      imported++;
      row = store.reasons([id])[0];
    }
    if (row) blocks.set(row.id, c.block);
  }
  return { blocks, unresolved, imported };
}
