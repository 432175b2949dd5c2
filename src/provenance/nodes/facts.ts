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

/**
 * A data node: a SQL table named in a string literal (name-only), a dataframe a function binds
 * (`df = pd.read_csv(…)`, owned by the function) or a column read or written through one
 * (`df["col"]`, owned by the dataframe). No signatures: name-only and owned nodes are matched by
 * name, owned ones also through their owner's identity.
 */
export interface DataFact {
  type: "sql_table" | "dataframe" | "column";
  /** sql_table: the table; dataframe: the variable; column: `<variable>.<column>`. */
  name: string;
  /** The owning symbol's path (dataframes and columns); empty for tables. */
  owner: string[];
  line_start: number;
  line_end: number;
}

export interface FileFacts {
  symbols: SymbolFact[];
  /** Data nodes (absent in facts cached by an older analyser revision). */
  data?: DataFact[];
}

const SQL_VERB = /\b(select|insert|update|delete|create|merge|with)\b/i;
const SQL_TABLE =
  /\b(?:from|join|into|update|table)\s+(?:if\s+(?:not\s+)?exists\s+)?([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)/gi;
const NOT_TABLES = new Set([
  "select",
  "where",
  "set",
  "values",
  "lateral",
  "unnest",
  "only",
  "as",
  "on",
  "the",
  "a",
]);

/** Tables a string literal names when it reads like SQL (lower-cased, unique, in order). */
export function sqlTables(text: string): string[] {
  if (!SQL_VERB.test(text)) return [];
  const out: string[] = [];
  for (const m of text.matchAll(SQL_TABLE)) {
    const t = (m[1] as string).toLowerCase();
    if (!NOT_TABLES.has(t) && !out.includes(t)) out.push(t);
  }
  return out;
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
