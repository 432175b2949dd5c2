/**
 * R9 facts in Python: module-level cache/shortcut variables holding literals, a successful exit
 * before any work (following `if __name__ == "__main__": main()` into `main`), and literal data
 * dumped as output. Pure.
 */
import type { At } from "../facts.js";
import { isShortcutVariable, type LiteralKind } from "../rules/shortcuts.js";
import { constantText } from "../values.js";
import type { PyEvaluator } from "./evaluate.js";
import { field, named, type PyNode, preorder, unparen } from "./tree.js";

const EXITS = new Set(["sys.exit", "builtins.exit", "builtins.quit", "os._exit"]);

/** Calls that set up rather than work: env reads, path building, conversions, logging. */
const SETUP_CALL =
  /^(os\.environ\.get|os\.getenv|os\.path\.\w+|os\.getcwd|pathlib\.Path(\.\w+)?|builtins\.(str|int|float|bool|len|dict|list|set|tuple|print|isinstance|range|sorted)|logging\.\w+|argparse\.\w+|sys\.argv)$/;

const CONTAINERS = new Set(["dictionary", "list", "tuple", "set"]);
const SCALARS = new Set(["integer", "float", "true", "false", "none", "concatenated_string"]);

/** True for a literal with no names or calls in it (`{"a": [1, "x"]}`, `"abc"`, `-1`). */
export function isConstantLiteral(ev: PyEvaluator, n: PyNode): boolean {
  const x = unparen(n);
  if (SCALARS.has(x.type)) return true;
  if (x.type === "string") return !x.children.some((c) => c.type === "interpolation");
  if (x.type === "unary_operator") return named(x).every((c) => isConstantLiteral(ev, c));
  if (x.type === "pair") return named(x).every((c) => isConstantLiteral(ev, c));
  if (CONTAINERS.has(x.type)) return named(x).every((c) => isConstantLiteral(ev, c));
  return false;
}

/** True for a literal that is truthy: a non-empty container or string, a non-zero number, True. */
function isTruthyLiteral(ev: PyEvaluator, n: PyNode): boolean {
  const x = unparen(n);
  if (!isConstantLiteral(ev, x)) return false;
  if (CONTAINERS.has(x.type)) return named(x).length > 0;
  if (x.type === "false" || x.type === "none") return false;
  if (x.type === "integer" || x.type === "float") return Number(ev.text(x).replace(/_/g, "")) !== 0;
  if (x.type === "string" || x.type === "concatenated_string") return constantText(ev.value(x)) !== "";
  return true;
}

/** Module-level `CACHED_RESULT = {...}`, `SKIP_FETCH = True`, `RESULT = [...]`. */
export function cacheVariables(ev: PyEvaluator, at: (n: PyNode) => At): { at: At; name: string }[] {
  const out: { at: At; name: string }[] = [];
  for (const stmt of named(ev.scopes.root)) {
    const assign = stmt.type === "expression_statement" ? named(stmt)[0] : undefined;
    if (assign?.type !== "assignment") continue;
    const left = field(assign, "left");
    const right = field(assign, "right");
    if (left?.type !== "identifier" || !right) continue;
    const name = ev.text(left);
    const type = unparen(right).type;
    const kind: LiteralKind = CONTAINERS.has(type)
      ? "container"
      : type === "string" || type === "concatenated_string"
        ? "string"
        : "scalar";
    if (isTruthyLiteral(ev, right) && isShortcutVariable(name, kind)) out.push({ at: at(left), name });
  }
  return out;
}

/** A successful exit: `sys.exit()`, `sys.exit(0)`, `exit(None)`, `raise SystemExit`. */
function successExit(ev: PyEvaluator, n: PyNode): string | undefined {
  if (n.type === "raise_statement") {
    const what = named(n)[0];
    const text = what ? ev.text(what).replace(/\s/g, "") : "";
    return /^SystemExit(\((0|None|False)?\))?$/.test(text) ? "raise SystemExit" : undefined;
  }
  if (n.type !== "call") return undefined;
  const fn = field(n, "function");
  const q = fn && ev.qualify(fn);
  if (!q || !EXITS.has(q)) return undefined;
  const first = ev.args(n).positional[0];
  const code = first ? ev.text(first).trim() : "";
  return ["", "0", "None", "False"].includes(code) ? `${q.replace(/^builtins\./, "")}(${code})` : undefined;
}

type Scan = { exit: PyNode; api: string } | "work" | "clean";

/** Finds a successful exit reached before any work in a block of statements. */
function scanBlock(ev: PyEvaluator, stmts: readonly PyNode[], seen: Set<number>): Scan {
  for (const s of stmts) {
    const r = scanStatement(ev, s, seen);
    if (r !== "clean") return r;
  }
  return "clean";
}

function scanStatement(ev: PyEvaluator, s: PyNode, seen: Set<number>): Scan {
  switch (s.type) {
    case "import_statement":
    case "import_from_statement":
    case "future_import_statement":
    case "function_definition":
    case "class_definition":
    case "decorated_definition":
    case "pass_statement":
    case "global_statement":
      return "clean";
    case "raise_statement": {
      const api = successExit(ev, s);
      return api ? { exit: s, api } : "work";
    }
    case "if_statement": {
      const cond = field(s, "condition");
      if (cond && !isSetupOnly(ev, cond)) return "work";
      for (const c of s.children) {
        const block =
          c.type === "block"
            ? c
            : c.type === "elif_clause" || c.type === "else_clause"
              ? c.children.find((b) => b.type === "block")
              : undefined;
        if (!block) continue;
        const r = scanBlock(ev, named(block), seen);
        if (r !== "clean") return r;
      }
      return "clean";
    }
    case "expression_statement": {
      const e = named(s)[0];
      if (!e) return "clean";
      if (e.type === "call") {
        const api = successExit(ev, e);
        if (api) return { exit: e, api };
        const main = calledLocalFunction(ev, e);
        if (main && !seen.has(main.id)) {
          seen.add(main.id);
          const body = field(main, "body");
          return body ? scanBlock(ev, named(body), seen) : "work";
        }
      }
      return isSetupOnly(ev, e) ? "clean" : "work";
    }
    default:
      return "work";
  }
}

/** `main()` / `await main()` calling a function defined at module level. */
function calledLocalFunction(ev: PyEvaluator, call: PyNode): PyNode | undefined {
  const fn = field(call, "function");
  if (fn?.type !== "identifier" || ev.args(call).positional.length > 0) return undefined;
  return ev.scopes.moduleFunction(ev.text(fn));
}

/** True when every call in `n` only sets up (env reads, path building, logging…). */
function isSetupOnly(ev: PyEvaluator, n: PyNode): boolean {
  let ok = true;
  preorder(n, (x) => {
    if (!ok || x.type !== "call") return;
    const fn = field(x, "function");
    const q = fn && ev.qualify(fn);
    if (!q || !SETUP_CALL.test(q)) ok = false;
  });
  return ok;
}

/** The first successful exit before any work, if there is one. */
export function earlyExit(ev: PyEvaluator): { node: PyNode; api: string } | undefined {
  const r = scanBlock(ev, named(ev.scopes.root), new Set());
  return typeof r === "object" ? { node: r.exit, api: r.api } : undefined;
}
