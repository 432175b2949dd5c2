/**
 * What an analyser extracts from one file, before qualified names, dataflow and keys: the facts a
 * parse-cache entry holds (so they depend on the file's content and language only, never on its
 * path or on other files).
 */

export type SymbolType = "function" | "method" | "class";

export interface SymbolFact {
  type: SymbolType;
  /** The symbol path inside the module: `["Class", "method"]`, `["outer", "inner"]`. */
  path: string[];
  /** 1-based, inclusive. */
  line_start: number;
  line_end: number;
  /** First 16 hex of sha1 over the normalised definition (see signature rules in ARCHITECTURE.md). */
  struct_sig: string;
  /** Parameters declared (without `self`/`cls` of Python methods). */
  params: number;
  /** A `return <value>` (or an expression-bodied arrow function) is present. */
  returns: boolean;
  /** Names called inside the definition (last segment of `a.b.c()`), unique, sorted. */
  callees: string[];
  /** Base classes named (classes only). */
  bases: string[];
}

export interface FileFacts {
  symbols: SymbolFact[];
}

/** Languages the node source reads, by file extension. */
export type SourceLanguage = "python" | "typescript";

const TS_EXTS = [".ts", ".tsx", ".mts", ".cts", ".js", ".mjs", ".cjs", ".jsx"] as const;

/** The language of a repo-relative path, or undefined when the node source does not read it. */
export function languageOf(path: string): SourceLanguage | undefined {
  if (path.endsWith(".py")) return "python";
  if (/\.d\.[mc]?ts$/.test(path)) return undefined;
  if (path.endsWith(".min.js")) return undefined;
  for (const e of TS_EXTS) if (path.endsWith(e)) return "typescript";
  return undefined;
}

/** `src/train.py` → `src.train` (the extension dropped, `/` → `.`). */
export function moduleName(path: string): string {
  const slash = path.lastIndexOf("/");
  const dot = path.lastIndexOf(".");
  const noExt = dot > slash ? path.slice(0, dot) : path;
  return noExt.split("/").join(".");
}
