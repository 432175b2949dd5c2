/**
 * What a script does, as far as the rules care: the language front ends (`python/`, `js/`) walk
 * the syntax tree once and describe it with these facts; the rules (`rules/`) judge the facts.
 * Pure data, no I/O.
 */
import type { ScriptLanguage } from "./types.js";
import type { Val } from "./values.js";

/** A position in the script (1-based line and column) and the id of the syntax node there. */
export interface At {
  line: number;
  column: number;
  node: number;
}

/** A maximal string or path expression (a literal, f-string, template, concatenation, join…). */
export interface StringFact {
  at: At;
  value: Val;
}

/** How a read of an environment variable supplies a value when the variable is missing. */
export type FallbackKind =
  /** `os.environ.get("X", "d")`, `os.getenv("X", "d")`, `environ.pop("X", "d")` */
  | "default-argument"
  /** `os.environ.setdefault("X", "d")` */
  | "setdefault"
  /** `… or "d"`, `… || "d"` */
  | "or"
  /** `… ?? "d"`, `x ??= "d"`, `x ||= "d"` */
  | "nullish"
  /** `os.environ["X"] if "X" in os.environ else "d"`, `env.X ? env.X : "d"` */
  | "conditional"
  /** `try: os.environ["X"] except KeyError: …` */
  | "except"
  /** `const { X = "d" } = process.env` */
  | "destructuring-default"
  /** `x = os.environ.get("X")` then `if not x: x = "d"` */
  | "reassigned";

/** A read of an environment variable. */
export interface EnvReadFact {
  at: At;
  name: string;
  /** The read as written, shortened (`os.environ.get("VAR_X", …)`). */
  expr: string;
  fallback: FallbackKind | null;
}

/** A call that writes (or reads) a file or folder. */
export interface FileOpFact {
  at: At;
  op: "write" | "read";
  /** The call as people know it: `open()`, `Path.write_text()`, `fs.writeFileSync()`. */
  api: string;
  target: Val;
  /** False when the call may or may not write (e.g. `open(p, mode)` with a mode review cannot see). */
  certain: boolean;
}

/** A module-level variable holding a literal, named like a cache or shortcut (`CACHED_RESULT = {...}`). */
export interface CacheVarFact {
  at: At;
  name: string;
}

/** A successful exit before the script has done any work (`sys.exit(0)`, `process.exit(0)`). */
export interface EarlyExitFact {
  at: At;
  api: string;
}

/** A literal data structure written as the step's output (`json.dump({...}, f)`). */
export interface ConstantOutputFact {
  at: At;
  api: string;
}

/**
 * Code the script builds or reaches at run time, which review cannot see: `exec`, text run as code
 * (`eval`, `exec`, `compile`, `new Function`, `vm.runInNewContext`); `lookup`, a module, global or
 * builtin reached by a name computed at run time (`__import__(name)`, `getattr(os, name)`,
 * `globals()[…]`, `__builtins__`, `require(name)`, `globalThis[name]`, `process.binding`).
 */
export interface DynamicCodeFact {
  at: At;
  kind: "exec" | "lookup";
  /** The construct as people know it: `exec()`, `getattr(os, <computed>)`, `globalThis[<computed>]`. */
  api: string;
}

/** A JSON text literal written as output (`f.write('{"answer": 42}')`, `json.dump(json.loads('…'), f)`). */
export interface JsonResultFact {
  at: At;
  api: string;
}

/** A browser element ref held as data: `{"ref": "e12"}`, `ref="e12"`, `{ ref: "e12" }`. */
export interface BrowserRefFact {
  at: At;
  /** The ref as written (`e12`). */
  ref: string;
}

export interface ScriptFacts {
  language: ScriptLanguage;
  strings: StringFact[];
  envReads: EnvReadFact[];
  fileOps: FileOpFact[];
  cacheVars: CacheVarFact[];
  earlyExits: EarlyExitFact[];
  constantOutputs: ConstantOutputFact[];
  dynamicCode: DynamicCodeFact[];
  jsonResults: JsonResultFact[];
  browserRefs: BrowserRefFact[];
}

export function emptyFacts(language: ScriptLanguage): ScriptFacts {
  return {
    language,
    strings: [],
    envReads: [],
    fileOps: [],
    cacheVars: [],
    earlyExits: [],
    constantOutputs: [],
    dynamicCode: [],
    jsonResults: [],
    browserRefs: [],
  };
}
