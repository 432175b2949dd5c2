/**
 * Abstract string/path values: what an expression of a script evaluates to, as far as review can
 * tell without running it. Both languages evaluate their expressions into a {@link Val}; the rules
 * only ever look at Vals, so "where does this path come from" is decided once, here.
 *
 * A Val is a sequence of segments: known text, or a hole whose origin is known (an environment
 * variable, a command-line argument, the working folder…) or not. Pure: no I/O.
 */

/** One piece of a value. */
export type Seg =
  | { k: "text"; s: string }
  /** The value of an environment variable. */
  | { k: "env"; name: string }
  /** A command-line argument (dependency paths arrive as `sys.argv[1:]` / `process.argv.slice(2)`). */
  | { k: "argv" }
  /** The working folder (`os.getcwd()`, `process.cwd()`, the script's own folder). */
  | { k: "cwd" }
  | { k: "home" }
  /** A temporary folder (`tempfile.mkdtemp()`, `os.tmpdir()`). */
  | { k: "temp" }
  /** A function parameter: provenance decided by the caller, unknown here. */
  | { k: "param"; name: string }
  | { k: "unknown" };

/** An abstract value. `via` lists the ids of the assignments it was read through (for de-duplication). */
export interface Val {
  readonly segs: readonly Seg[];
  readonly via: readonly number[];
  /** Built by a path API (`os.path.join`, `Path`, `/`, `path.join`, `.parent`…). */
  readonly path?: boolean;
}

export const UNKNOWN: Val = { segs: [{ k: "unknown" }], via: [] };

/** Known text. */
export const textVal = (s: string): Val => ({ segs: [{ k: "text", s }], via: [] });

/** A hole of known origin. */
export const holeVal = (seg: Seg): Val => ({ segs: [seg], via: [] });

/** True when nothing at all is known about the value. */
export function isUnknown(v: Val): boolean {
  return v.segs.every((s) => s.k === "unknown");
}

/** True when the value is entirely known text. */
export function isConstant(v: Val): boolean {
  return v.segs.every((s) => s.k === "text");
}

/** The known text of a fully known value, else undefined. */
export function constantText(v: Val): string | undefined {
  return isConstant(v) ? v.segs.map((s) => (s.k === "text" ? s.s : "")).join("") : undefined;
}

function mergeVia(vals: readonly Val[]): number[] {
  const out = new Set<number>();
  for (const v of vals) for (const id of v.via) out.add(id);
  return [...out];
}

/** `a + b + …` as strings. */
export function concat(vals: readonly Val[], path = false): Val {
  const segs: Seg[] = [];
  for (const v of vals) {
    for (const s of v.segs) {
      const last = segs[segs.length - 1];
      if (s.k === "text" && last?.k === "text") segs[segs.length - 1] = { k: "text", s: last.s + s.s };
      else if (s.k === "text" && s.s === "") continue;
      else segs.push(s);
    }
  }
  if (segs.length === 0) segs.push({ k: "text", s: "" });
  return { segs, via: mergeVia(vals), path: path || vals.some((v) => v.path) };
}

/** Adds segments read through the assignment with node id `id`. */
export function withVia(v: Val, id: number): Val {
  return v.via.includes(id) ? v : { ...v, via: [...v.via, id] };
}

/** Marks a value as built by a path API. */
export function asPath(v: Val): Val {
  return v.path ? v : { ...v, path: true };
}

function startsAbsolute(v: Val): boolean {
  const first = v.segs[0];
  return first?.k === "text" && /^(\/|[A-Za-z]:[\\/])/.test(first.s);
}

/**
 * `os.path.join(a, b, …)` / `Path(a) / b` / `path.resolve(…)`: an absolute part restarts the path
 * (`restart`, the default); `path.join` just glues (`restart: false`).
 */
export function joinPath(parts: readonly Val[], restart = true): Val {
  let start = 0;
  for (let i = parts.length - 1; restart && i > 0; i--) {
    const p = parts[i];
    if (p && startsAbsolute(p)) {
      start = i;
      break;
    }
  }
  const pieces: Val[] = [];
  for (const [i, p] of parts.slice(start).entries()) {
    if (i > 0) pieces.push(textVal("/"));
    pieces.push(p);
  }
  const joined = concat(pieces, true);
  // Collapse the doubled separators a join of "a/" and "b" makes.
  return {
    ...joined,
    segs: joined.segs.map((s) =>
      s.k === "text" ? { k: "text", s: s.s.replace(/(^|[^:])\/{2,}/g, "$1/") } : s,
    ),
  };
}

/** `os.path.dirname(p)` / `Path(p).parent` / `path.dirname(p)`: one level up. */
export function parentOf(v: Val): Val {
  return concat([v, textVal("/..")], true);
}

/** True when a value says something: some known text, or built by a path API. */
export function hasSubstance(v: Val): boolean {
  return v.path === true || v.segs.some((s) => s.k === "text" && s.s !== "");
}

/** The text of a value with every hole as NUL, for pattern checks over the known parts. */
export function flatten(v: Val): string {
  return v.segs.map((s) => (s.k === "text" ? s.s : "\u0000")).join("");
}

/** Where a path value starts. */
export type RootKind =
  | "output"
  | "execution"
  | "relative"
  | "absolute"
  | "cwd"
  | "home"
  | "temp"
  | "argv"
  | "env"
  | "param"
  | "unknown";

export interface Root {
  kind: RootKind;
  /** The variable name for `env`, the parameter name for `param`. */
  name?: string;
}

/** Environment variables whose values are the step's own folders. */
export const OUTPUT_DIR_VAR = "STEP_OUTPUT_DIR";
export const EXECUTION_DIR_VAR = "STEP_EXECUTION_DIR";

function firstMeaningful(v: Val): { seg: Seg; index: number } | undefined {
  for (const [index, seg] of v.segs.entries()) if (!(seg.k === "text" && seg.s === "")) return { seg, index };
  return undefined;
}

/** The root of a path value. */
export function rootOf(v: Val): Root {
  const first = firstMeaningful(v)?.seg;
  if (!first) return { kind: "relative" };
  switch (first.k) {
    case "text":
      if (/^(\/|[A-Za-z]:[\\/])/.test(first.s)) return { kind: "absolute" };
      if (/^~([\\/]|$)/.test(first.s)) return { kind: "home" };
      return { kind: "relative" };
    case "env":
      if (first.name === OUTPUT_DIR_VAR) return { kind: "output" };
      if (first.name === EXECUTION_DIR_VAR) return { kind: "execution" };
      return { kind: "env", name: first.name };
    case "param":
      return { kind: "param", name: first.name };
    default:
      return { kind: first.k };
  }
}

/** The path components after the root (holes become NUL components). */
export function componentsAfterRoot(v: Val): string[] {
  const first = firstMeaningful(v);
  if (!first) return [];
  const rest = first.seg.k === "text" ? v.segs.slice(first.index) : v.segs.slice(first.index + 1);
  let text = flatten({ segs: rest, via: [] });
  if (first.seg.k === "text") text = text.replace(/^(~|[A-Za-z]:)?[\\/]?/, "");
  return text.split(/[\\/]+/).filter((c) => c !== "" && c !== ".");
}

/** True when the path climbs (`..`) above its root at some point. */
export function escapesRoot(v: Val): boolean {
  let depth = 0;
  for (const c of componentsAfterRoot(v)) {
    if (c === "..") {
      depth--;
      if (depth < 0) return true;
    } else depth++;
  }
  return false;
}

/** True when the path climbs above its root and then names a folder or file there (`../other/…`). */
export function reachesSibling(v: Val): boolean {
  let depth = 0;
  let escaped = false;
  for (const c of componentsAfterRoot(v)) {
    if (c === "..") {
      depth--;
      if (depth < 0) escaped = true;
    } else {
      if (escaped) return true;
      depth++;
    }
  }
  return false;
}

/** The first value when all share one known root (the kind and the variable), else unknown. */
export function sameRoot(values: readonly Val[]): Val {
  const first = values[0];
  if (!first || isUnknown(first)) return UNKNOWN;
  const r = rootOf(first);
  if (r.kind === "unknown" || r.kind === "param") return UNKNOWN;
  const same = values.every((v) => {
    const o = rootOf(v);
    return o.kind === r.kind && o.name === r.name;
  });
  return same ? first : UNKNOWN;
}

/** A short, readable rendering of a value for messages (`$STEP_OUTPUT_DIR/out.json`, `…`). */
export function describe(v: Val, max = 80): string {
  const s = v.segs
    .map((seg) => {
      switch (seg.k) {
        case "text":
          return seg.s;
        case "env":
          return `$${seg.name}`;
        case "argv":
          return "<argv>";
        case "cwd":
          return "<cwd>";
        case "home":
          return "~";
        case "temp":
          return "<tmp>";
        case "param":
          return `<${seg.name}>`;
        default:
          return "…";
      }
    })
    .join("");
  const tidy = tidyPath(s);
  return tidy.length > max ? `${tidy.slice(0, max - 1)}…` : tidy;
}

/** `a/./b` → `a/b`, `a/x/../b` → `a/b` (leading `..` kept): for display only. */
function tidyPath(s: string): string {
  const out: string[] = [];
  for (const part of s.split("/")) {
    if (part === "." && out.length > 0) continue;
    const last = out[out.length - 1];
    // Only a plain name is cancelled by "..": never a placeholder (`<cwd>`, `$VAR`, `…`).
    if (part === ".." && last !== undefined && /^[^<$….][^<$…]*$|^\.[^.]/.test(last)) out.pop();
    else out.push(part);
  }
  return out.join("/");
}
