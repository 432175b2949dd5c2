/**
 * The abstract value of Python calls: environment reads, `os.path.join`, `Path(…)`, `dirname`,
 * `getcwd`, `tempfile`, and the string/path methods `.joinpath`, `.with_name`, `.format`,
 * `sep.join([...])`, `.resolve()`, `.strip()`. Pure.
 */
import {
  asPath,
  concat,
  constantText,
  holeVal,
  joinPath,
  parentOf as parentPath,
  sameRoot,
  textVal,
  UNKNOWN,
  type Val,
  withVia,
} from "../values.js";
import { envRead } from "./env-reads.js";
import type { Ctx, PyEvaluator } from "./evaluate.js";
import { PASS_THROUGH, PASS_THROUGH_METHODS, substitute } from "./names.js";
import { type CallArgs, field, named, type PyNode, unparen } from "./tree.js";

/** The value of a call: environment reads, path APIs, string methods. */
export function callValue(ev: PyEvaluator, n: PyNode, c: Ctx): Val {
  const read = envRead(ev, n);
  if (read) return read.name ? holeVal({ k: "env", name: read.name }) : UNKNOWN;
  const fn = field(n, "function");
  if (!fn) return UNKNOWN;
  if (fn.type === "identifier") {
    const b = ev.scopes.lookup(ev.text(fn), fn);
    if (b?.kind === "def") return returnValue(ev, b.node);
  }
  const f = ev.qualify(fn);
  const a = ev.args(n);
  const args = () => a.positional.map((p) => ev.eval(p, c));
  const first = a.positional[0];
  // `os.path.join(OUT, *parts)`: the arguments before the splat still fix where the path starts.
  const spread = (): Val[] =>
    a.beforeSplat === undefined
      ? args()
      : [...a.positional.slice(0, a.beforeSplat).map((p) => ev.eval(p, c)), UNKNOWN];
  if (f === "os.path.join") return a.beforeSplat === 0 ? UNKNOWN : joinPath(spread());
  if (f === "pathlib.Path") {
    if (a.beforeSplat === 0) return UNKNOWN;
    return asPath(a.positional.length || a.hasSplat ? joinPath(spread()) : textVal("."));
  }
  if (f !== undefined && PASS_THROUGH.has(f)) return first ? ev.eval(first, c) : UNKNOWN;
  if (f === "os.path.dirname") return first ? parentPath(ev.eval(first, c)) : UNKNOWN;
  if (f === "os.getcwd" || f === "pathlib.Path.cwd") return asPath(holeVal({ k: "cwd" }));
  if (f === "pathlib.Path.home") return asPath(holeVal({ k: "home" }));
  if (f === "tempfile.mkdtemp" || f === "tempfile.gettempdir" || f === "tempfile.TemporaryDirectory")
    return holeVal({ k: "temp" });
  if (fn.type !== "attribute") return UNKNOWN;
  return methodValue(ev, fn, a, c);
}

function methodValue(ev: PyEvaluator, fn: PyNode, a: CallArgs, c: Ctx): Val {
  const obj = field(fn, "object");
  const method = field(fn, "attribute");
  if (!obj || !method || a.hasSplat) return UNKNOWN;
  const m = ev.text(method);
  const args = () => a.positional.map((p) => ev.eval(p, c));
  if (m === "joinpath") return joinPath([asPath(ev.eval(obj, c)), ...args()]);
  if (PASS_THROUGH_METHODS.has(m)) return ev.eval(obj, c);
  if (m === "with_name") {
    const name = a.positional[0];
    return name ? joinPath([parentPath(ev.eval(obj, c)), ev.eval(name, c)]) : UNKNOWN;
  }
  if (m === "format") {
    const template = constantText(ev.eval(obj, c));
    if (template === undefined) return UNKNOWN;
    const t = template.replace(/\{\{/g, "\u0001").replace(/\}\}/g, "\u0002");
    return substitute(t, /\{[^{}]*\}/g, args());
  }
  if (m === "join") {
    const sep = constantText(ev.eval(obj, c));
    const list = a.positional[0] && unparen(a.positional[0]);
    if (sep === undefined || !list || !["list", "tuple"].includes(list.type)) return UNKNOWN;
    const parts: Val[] = [];
    for (const [i, item] of named(list).entries()) {
      if (i > 0) parts.push(textVal(sep));
      parts.push(ev.eval(item, c));
    }
    return concat(parts);
  }
  return UNKNOWN;
}

/**
 * What a local function returns, when every `return` agrees on where the value starts
 * (`def out_path(name): return os.path.join(OUT, name)` starts under STEP_OUTPUT_DIR whatever
 * `name` is); otherwise unknown. Parameters are holes; recursion is cut.
 */
export function returnValue(ev: PyEvaluator, def: PyNode): Val {
  const cached = ev.returns.get(def.id);
  if (cached) return cached;
  ev.returns.set(def.id, UNKNOWN);
  const values: Val[] = [];
  const body = field(def, "body");
  const stack = body ? [...body.children] : [];
  for (let x = stack.pop(); x; x = stack.pop()) {
    if (x.type === "return_statement") {
      const e = named(x)[0];
      values.push(e ? withVia(ev.eval(e, { consume: null, depth: 0 }), e.id) : UNKNOWN);
    } else if (!["function_definition", "lambda", "class_definition"].includes(x.type))
      stack.push(...x.children);
  }
  const v = sameRoot(values);
  ev.returns.set(def.id, v);
  return v;
}
