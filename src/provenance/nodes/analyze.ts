/**
 * One analysis of a project's code: list the files, take each file's facts from the parse cache
 * or parse it (Python with tree-sitter, JavaScript/TypeScript with the `typescript` compiler,
 * loaded on first use), then name the symbols and compute their dataflow signatures across files.
 */
import { type DataFact, type FileFacts, moduleName, type SourceLanguage, type SymbolFact } from "./facts.js";
import { readSource, repoState } from "./files.js";
import { ANALYZER_REVISION } from "./limits.js";
import { pythonFacts } from "./python.js";
import { sig16 } from "./sig.js";
import { typescriptFacts } from "./typescript.js";

/** A node as one analysis sees it, before it has a key. */
export interface AnalysedNode {
  node_type: SymbolFact["type"] | DataFact["type"];
  qualified_name: string;
  file_path: string;
  line_start: number;
  line_end: number;
  /** Null for data nodes (they have no definition to hash). */
  struct_sig: string | null;
  /** Owned nodes (dataframes, columns): the owner's qualified name, followed when matching. */
  owner_qn?: string;
  /** Null when nothing is known of its data flow (no parameters, no return, no callees, no bases). */
  dataflow_sig: string | null;
}

/** Where parse results are kept between runs, by content (see {@link cacheKey}). */
export interface ParseCache {
  get(keys: readonly string[]): Map<string, FileFacts>;
}

export interface Analysis {
  nodes: AnalysedNode[];
  commit: string | null;
  files: number;
  parsed: number;
  cached: number;
  skipped: { path: string; why: string }[];
  /** Facts parsed in this analysis, to be stored in the cache (with the run). */
  fresh: Map<string, FileFacts>;
}

/** The cache key of a file's facts: analyser revision, language and git blob sha. */
export function cacheKey(language: SourceLanguage, blob: string): string {
  return `${ANALYZER_REVISION}:${language}:${blob}`;
}

type Ts = typeof import("typescript");
let tsModule: Promise<Ts> | undefined;

/** The `typescript` compiler, loaded the first time a JavaScript/TypeScript file is parsed. */
function typescript(): Promise<Ts> {
  tsModule ??= import("typescript").then((m) => ((m as { default?: Ts }).default ?? m) as Ts);
  return tsModule;
}

/** Parses one file's content into facts. */
export async function factsOf(language: SourceLanguage, path: string, source: string): Promise<FileFacts> {
  if (language === "python") {
    // review/ holds the shared tree-sitter parser; loaded on the first Python file.
    const { parsePython } = await import("../../review/index.js");
    return pythonFacts(await parsePython(source), source);
  }
  return typescriptFacts(await typescript(), path, source);
}

/** Analyses the repository at `repo` now. @throws RatchetError `no_state_graph` when git cannot read it. */
export async function analyse(repo: string, cache: ParseCache): Promise<Analysis> {
  const state = repoState(repo);
  const keys = state.files.map((f) => cacheKey(f.language, f.blob));
  const hits = cache.get(keys);
  const fresh = new Map<string, FileFacts>();
  const perFile: { path: string; facts: FileFacts }[] = [];
  const skipped: Analysis["skipped"] = [...state.skipped];
  for (const [i, f] of state.files.entries()) {
    const key = keys[i] as string;
    let facts = hits.get(key) ?? fresh.get(key);
    if (!facts) {
      const source = readSource(repo, f);
      if (source.includes("\0")) {
        skipped.push({ path: f.path, why: "binary" });
        continue;
      }
      facts = await factsOf(f.language, f.path, source);
      fresh.set(key, facts);
    }
    perFile.push({ path: f.path, facts });
  }
  return {
    nodes: nameNodes(perFile),
    commit: state.commit,
    files: perFile.length,
    parsed: fresh.size,
    cached: perFile.length - fresh.size,
    skipped,
    fresh,
  };
}

/**
 * Qualified names (`<module>.<symbol path>`, repeats `#2`, `#3` in path and line order) and
 * dataflow signatures: parameters, return, bases and callees — each callee with the structural
 * signature of the symbol it resolves to (a symbol of the same file by local name, else the only
 * symbol of that name in the repository), so a callee's body edit changes the caller's dataflow
 * and not its structure. Pure.
 */
export function nameNodes(perFile: readonly { path: string; facts: FileFacts }[]): AnalysedNode[] {
  const byLocal = new Map<string, string[]>();
  const byFileLocal = new Map<string, string>();
  for (const { path, facts } of perFile)
    for (const s of facts.symbols) {
      const local = s.path.at(-1) as string;
      const list = byLocal.get(local) ?? [];
      list.push(s.struct_sig);
      byLocal.set(local, list);
      if (!byFileLocal.has(`${path}\0${local}`)) byFileLocal.set(`${path}\0${local}`, s.struct_sig);
    }
  const seen = new Map<string, number>();
  const out: AnalysedNode[] = [];
  const owned: AnalysedNode[] = [];
  const tables = new Set<string>();
  for (const { path, facts } of perFile) {
    const mod = moduleName(path);
    const qnOf = new Map<string, string>();
    for (const s of facts.symbols) {
      const base = `${mod}.${s.path.join(".")}`;
      const n = (seen.get(base) ?? 0) + 1;
      seen.set(base, n);
      if (!qnOf.has(s.path.join("."))) qnOf.set(s.path.join("."), n === 1 ? base : `${base}#${n}`);
      const edges = s.callees.map((c) => {
        const resolved =
          byFileLocal.get(`${path}\0${c}`) ??
          (byLocal.get(c)?.length === 1 ? byLocal.get(c)?.[0] : undefined);
        return resolved ? `c:${c}@${resolved}` : `c:${c}`;
      });
      const known = s.params > 0 || s.returns || edges.length > 0 || s.bases.length > 0;
      out.push({
        node_type: s.type,
        qualified_name: n === 1 ? base : `${base}#${n}`,
        file_path: path,
        line_start: s.line_start,
        line_end: s.line_end,
        struct_sig: s.struct_sig,
        dataflow_sig: known
          ? sig16(
              [`p:${s.params}`, `r:${s.returns ? 1 : 0}`, ...s.bases.map((b) => `b:${b}`), ...edges].join(
                " ",
              ),
            )
          : null,
      });
    }
    for (const d of facts.data ?? []) {
      const lines = {
        file_path: path,
        line_start: d.line_start,
        line_end: d.line_end,
        struct_sig: null,
        dataflow_sig: null,
      };
      if (d.type === "sql_table") {
        if (tables.has(d.name)) continue;
        tables.add(d.name);
        out.push({ node_type: d.type, qualified_name: d.name, ...lines });
        continue;
      }
      const owner = qnOf.get(d.owner.join("."));
      if (!owner) continue;
      if (d.type === "dataframe")
        owned.push({ node_type: d.type, qualified_name: `${owner}:${d.name}`, owner_qn: owner, ...lines });
      else {
        const dot = d.name.indexOf(".");
        const frame = `${owner}:${d.name.slice(0, dot)}`;
        owned.push({ node_type: d.type, qualified_name: `${owner}:${d.name}`, owner_qn: frame, ...lines });
      }
    }
  }
  return [...out, ...owned];
}
