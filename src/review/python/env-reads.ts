/**
 * Reads of environment variables in Python and whether they supply a fallback value:
 * `os.environ["X"]`, `os.environ.get("X", d)`, `os.getenv("X", default=d)`,
 * `os.environ.setdefault("X", d)`, `os.environ.pop("X", d)` under any alias, and the wrappers
 * `… or d`, `… if … else d`, `try: … except KeyError: …`. Pure.
 */
import type { FallbackKind } from "../facts.js";
import { constantText } from "../values.js";
import type { PyEvaluator } from "./evaluate.js";
import { arg, field, named, type PyNode, parentOf, unparen } from "./tree.js";

export interface PyEnvRead {
  /** The variable name, when review can tell it. */
  name: string | undefined;
  fallback: FallbackKind | null;
  /** The read as written, without the fallback value (which may be a secret). */
  expr: string;
}

const GETTERS: Record<string, FallbackKind> = {
  "os.environ.get": "default-argument",
  "os.getenv": "default-argument",
  "os.environ.pop": "default-argument",
  "os.environ.setdefault": "setdefault",
};

const EXITS = new Set(["sys.exit", "builtins.exit", "builtins.quit", "os._exit"]);
/** Helpers that fail rather than substitute (`require_env("X")`, `die("…")`). */
const FAILING_NAME = /(fail|die|abort|raise|require|error|missing|panic)/i;

/** True when `n` does not supply a value: `None`, an exit, a helper that fails. */
export function isFailure(ev: PyEvaluator, n: PyNode): boolean {
  const x = unparen(n);
  if (x.type === "none") return true;
  if (x.type !== "call") return false;
  const fn = field(x, "function");
  if (!fn) return false;
  const q = ev.qualify(fn);
  if (q && EXITS.has(q)) return true;
  const last = ev.text(fn).split(".").pop() ?? "";
  return FAILING_NAME.test(last);
}

/** The environment read at `n` (a call or a subscript), or undefined when `n` is not one. */
export function envRead(ev: PyEvaluator, n: PyNode): PyEnvRead | undefined {
  if (n.type === "subscript") {
    const value = field(n, "value");
    const key = field(n, "subscript");
    if (!value || !key || ev.qualify(value) !== "os.environ") return undefined;
    const name = constantText(ev.value(key));
    const base = `${ev.text(value)}[${name ? JSON.stringify(name) : "…"}]`;
    return { name, ...wrapperFallback(ev, n, base) };
  }
  if (n.type !== "call") return undefined;
  const fn = field(n, "function");
  const q = fn && ev.qualify(fn);
  const how = q ? GETTERS[q] : undefined;
  if (!fn || !q || !how) return undefined;
  const a = ev.args(n);
  const key = arg(a, 0, "key");
  const name = key ? constantText(ev.value(key)) : undefined;
  const dflt = arg(a, 1, "default", "value");
  const base = `${ev.text(fn)}(${name ? JSON.stringify(name) : "…"}`;
  if (dflt && (how === "setdefault" || !isFailure(ev, dflt)))
    return { name, fallback: how, expr: `${base}, …)` };
  return { name, ...wrapperFallback(ev, n, `${base})`) };
}

/** A fallback supplied around the read: `read or d`, `read if c else d`, `try: read except KeyError`. */
function wrapperFallback(
  ev: PyEvaluator,
  n: PyNode,
  base: string,
): { fallback: FallbackKind | null; expr: string } {
  let child = n;
  let p = parentOf(n);
  // `str(os.environ.get("X")) or d`, `os.environ.get("X").strip() or d` still read X.
  while (p && (p.type === "argument_list" || p.type === "call" || p.type === "attribute") && depthOk(p, n)) {
    child = p;
    p = parentOf(p);
  }
  if (p?.type === "boolean_operator" && ev.text(field(p, "operator") ?? p) === "or") {
    const right = field(p, "right");
    if (right && unparen(field(p, "left") ?? p) === child && !isFailure(ev, right))
      return { fallback: "or", expr: `${base} or …` };
  }
  if (p?.type === "conditional_expression") {
    const [a, cond, b] = named(p);
    const other = unparen(a ?? p) === child ? b : unparen(b ?? p) === child ? a : undefined;
    if (other && cond !== child && !isFailure(ev, other))
      return { fallback: "conditional", expr: `${base} if … else …` };
  }
  if (caughtAndReplaced(ev, n)) return { fallback: "except", expr: `try: ${base} except …` };
  const name = reassignedWhenMissing(ev, child, p);
  if (name) return { fallback: "reassigned", expr: `${name} = ${base}; if not ${name}: ${name} = …` };
  return { fallback: null, expr: base };
}

/** `x = read` followed in the same block by `if not x: x = …` (or `if x is None`, `if x == ""`). */
function reassignedWhenMissing(ev: PyEvaluator, read: PyNode, p: PyNode | null): string | undefined {
  if (p?.type !== "assignment" || unparen(field(p, "right") ?? p) !== read) return undefined;
  const left = field(p, "left");
  const stmt = p.parent;
  if (left?.type !== "identifier" || stmt?.type !== "expression_statement" || !stmt.parent) return undefined;
  const name = ev.text(left);
  const missing = new RegExp(
    `^(not\\s+${name}|${name}\\s+is\\s+None|${name}\\s*==\\s*(""|''|None)|len\\(${name}\\)\\s*==\\s*0)$`,
  );
  const siblings = named(stmt.parent);
  for (const s of siblings.slice(siblings.indexOf(stmt) + 1)) {
    if (s.type !== "if_statement") continue;
    const cond = field(s, "condition");
    if (!cond || !missing.test(ev.text(cond).trim())) continue;
    const body = field(s, "consequence");
    if (!body || handlerFails(ev, body)) continue;
    for (const st of named(body)) {
      const a = st.type === "expression_statement" ? named(st)[0] : undefined;
      const l = a?.type === "assignment" ? field(a, "left") : undefined;
      const r = a && field(a, "right");
      if (l && r && ev.text(l) === name && !isFailure(ev, r)) return name;
    }
  }
  return undefined;
}

/** Only climb a few wrapping levels (a call's argument list, a method on the result). */
function depthOk(p: PyNode, n: PyNode): boolean {
  return p.end - p.start < n.end - n.start + 40;
}

const CATCHES = /^(KeyError|LookupError|Exception|BaseException)$/;

/** True when `n` sits in a `try` body whose handler for a missing key does not fail. */
function caughtAndReplaced(ev: PyEvaluator, n: PyNode): boolean {
  for (let p = n.parent; p; p = p.parent) {
    if (p.type === "function_definition" || p.type === "lambda") return false;
    if (p.type !== "block" || p.field !== "body" || p.parent?.type !== "try_statement") continue;
    for (const clause of p.parent.children) {
      if (clause.type !== "except_clause") continue;
      const caught = clause.children.find((c) => c.named && c.type !== "block");
      const names = caught
        ? (ev
            .text(caught)
            .replace(/\bas\s+\w+$/, "")
            .match(/[A-Za-z_][\w.]*/g) ?? [])
        : ["*"];
      if (!names.some((x) => x === "*" || CATCHES.test(x.split(".").pop() ?? ""))) continue;
      const body = clause.children.find((c) => c.type === "block");
      if (body && !handlerFails(ev, body)) return true;
    }
  }
  return false;
}

/** True when an except block raises or exits. */
function handlerFails(ev: PyEvaluator, block: PyNode): boolean {
  const stack = [...block.children];
  for (let x = stack.pop(); x; x = stack.pop()) {
    if (x.type === "raise_statement") return true;
    if (x.type === "call" && isFailure(ev, x)) return true;
    if (x.type !== "function_definition" && x.type !== "class_definition") stack.push(...x.children);
  }
  return false;
}
