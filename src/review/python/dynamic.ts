/**
 * Dynamic code in Python (R11/R12), JSON text written as output (R13) and browser refs held as
 * data (R10), found at one node of the tree. Pure.
 */
import { isJsonText } from "../json-text.js";
import { constantText } from "../values.js";
import type { PyEvaluator } from "./evaluate.js";
import { field, type PyNode, parentOf, unparen } from "./tree.js";

/** Calls and callables that run text (or a code object) as code. */
const EXEC = new Set([
  "builtins.eval",
  "builtins.exec",
  "builtins.compile",
  "builtins.execfile",
  "builtins.breakpoint",
  "runpy.run_path",
  "runpy.run_module",
  "marshal.loads",
  "types.FunctionType",
  "types.CodeType",
  "code.interact",
  "code.InteractiveInterpreter",
  "code.InteractiveConsole",
  "code.compile_command",
  "importlib.util.spec_from_file_location",
  "importlib.util.spec_from_loader",
]);
/** Imports by a name given as an argument. */
const IMPORTS = new Set(["builtins.__import__", "importlib.import_module", "importlib.__import__"]);
/** Attributes that reach interpreter internals from any object (the classic sandbox escapes). */
const INTERNALS = new Set(["__globals__", "__code__", "__subclasses__", "__builtins__", "__closure__"]);
/** A qualified name that went through a module's namespace or the interpreter's internals. */
const DUNDER = /(^|\.)__(dict|globals|code|subclasses|builtins|closure)__(\.|$)/;

export interface DynamicCode {
  kind: "exec" | "lookup";
  api: string;
}

const short = (q: string): string => q.replace(/^builtins\./, "");
const computed = (ev: PyEvaluator, n: PyNode | undefined): boolean =>
  n === undefined || constantText(ev.value(n)) === undefined;
/** An imported module or object, or a builtin: anything review qualifies to a dotted name. */
const moduleLike = (ev: PyEvaluator, n: PyNode | undefined): string | undefined => n && ev.qualify(n);

/** Whether `n` is the callee of a call, a name being bound, or part of an import statement. */
function notAReference(n: PyNode): boolean {
  const p = parentOf(n);
  if (!p) return true;
  if (p.type === "call" && field(p, "function") === n) return true;
  if (p.type === "attribute" && field(p, "attribute") === n) return true;
  if ((p.type === "assignment" || p.type === "augmented_assignment") && field(p, "left") === n) return true;
  if (p.type === "keyword_argument" && field(p, "name") === n) return true;
  for (let a: PyNode | null = p; a; a = a.parent)
    if (a.type === "import_statement" || a.type === "import_from_statement" || a.type === "dotted_name")
      return true;
  return false;
}

/** R11/R12 at `n`: a call, a subscript, a name or an attribute. */
export function dynamicCodeAt(ev: PyEvaluator, n: PyNode): DynamicCode | undefined {
  if (n.type === "call") return dynamicCall(ev, n);
  if (n.type === "subscript") {
    const value = field(n, "value");
    const key = field(n, "subscript");
    const q = value && ev.qualify(value);
    if (q === "sys.modules" && computed(ev, key)) return { kind: "lookup", api: "sys.modules[<computed>]" };
    return undefined;
  }
  if (n.type === "identifier" || n.type === "attribute") {
    if (n.type === "attribute") {
      const attr = ev.text(field(n, "attribute") ?? n);
      if (INTERNALS.has(attr)) return { kind: "lookup", api: `.${attr}` };
      if (attr === "__dict__" && moduleLike(ev, field(n, "object") ?? n))
        return { kind: "lookup", api: `${ev.text(field(n, "object") ?? n)}.__dict__` };
    }
    if (notAReference(n)) return undefined;
    if (n.type === "identifier" && ev.text(n) === "__builtins__") {
      const b = ev.scopes.lookup("__builtins__", n);
      return b ? undefined : { kind: "lookup", api: "__builtins__" };
    }
    const q = ev.qualify(n);
    // `e = eval`, `map(eval, xs)`: the callable itself passed on (its calls are found as calls).
    if (q && EXEC.has(q)) return { kind: "exec", api: short(q) };
    if (q === "builtins.globals") return { kind: "lookup", api: "globals" };
  }
  return undefined;
}

function dynamicCall(ev: PyEvaluator, call: PyNode): DynamicCode | undefined {
  const fn = field(call, "function");
  const q = fn && ev.qualify(fn);
  if (!q) return undefined;
  const a = ev.args(call);
  const [first, second] = a.positional;
  if (EXEC.has(q)) return { kind: "exec", api: `${short(q)}()` };
  if (IMPORTS.has(q) && computed(ev, first ?? a.keywords.get("name")))
    return { kind: "lookup", api: `${short(q)}(<computed>)` };
  if (q === "sys.modules.get" && computed(ev, first))
    return { kind: "lookup", api: "sys.modules.get(<computed>)" };
  if (q === "builtins.globals") return { kind: "lookup", api: "globals()" };
  if (q === "builtins.getattr") {
    const target = moduleLike(ev, first);
    if (target && computed(ev, second))
      return { kind: "lookup", api: `getattr(${short(target)}, <computed>)` };
    // `getattr(x, "__globals__")`, `getattr(builtins, "__dict__")`: the internals by a constant name.
    const name = second && constantText(ev.value(second));
    if (name && (INTERNALS.has(name) || (name === "__dict__" && target)))
      return { kind: "lookup", api: `getattr(…, "${name}")` };
  }
  if (DUNDER.test(q)) return { kind: "lookup", api: `${short(q)}()` };
  if (q === "builtins.setattr" || q === "builtins.delattr") {
    const target = moduleLike(ev, first);
    if (target) return { kind: "lookup", api: `${short(q)}(${short(target)}, …)` };
  }
  if (q === "builtins.vars") {
    if (!first) return { kind: "lookup", api: "vars()" };
    const target = moduleLike(ev, first);
    if (target) return { kind: "lookup", api: `vars(${short(target)})` };
  }
  return undefined;
}

const WRITES = new Set(["write", "write_text", "write_bytes", "writelines"]);
const DUMPS = new Set(["json.dump", "json.dumps"]);

/** `json.loads('<JSON>')` (or a constant JSON text) at `n`. */
function jsonText(ev: PyEvaluator, n: PyNode | undefined): boolean {
  if (!n) return false;
  const x = unparen(n);
  if (x.type === "call") {
    const fn = field(x, "function");
    const q = fn && ev.qualify(fn);
    if (q === "json.loads") return jsonText(ev, ev.args(x).positional[0]);
    if (q && DUMPS.has(q)) return jsonText(ev, ev.args(x).positional[0]);
    return false;
  }
  return isJsonText(constantText(ev.value(x)));
}

/** R13 at a call: `f.write('{"a": 1}')`, `p.write_text(J)`, `json.dump(json.loads('{…}'), f)`. */
export function jsonResultAt(ev: PyEvaluator, call: PyNode): string | undefined {
  const fn = field(call, "function");
  if (!fn) return undefined;
  const first = ev.args(call).positional[0];
  const q = ev.qualify(fn);
  if (q === "json.dump") return jsonText(ev, first) ? "json.dump(json.loads(<literal>))" : undefined;
  if (q === "os.write")
    return jsonText(ev, ev.args(call).positional[1]) ? "os.write(<JSON literal>)" : undefined;
  if (fn.type !== "attribute") return undefined;
  const method = ev.text(field(fn, "attribute") ?? fn);
  if (!WRITES.has(method)) return undefined;
  // Diagnostics on the console are not the step's output.
  const receiver = field(fn, "object");
  const r = receiver && ev.qualify(receiver);
  if (r === "sys.stdout" || r === "sys.stderr") return undefined;
  return jsonText(ev, first) ? `${method}(<JSON literal>)` : undefined;
}

const REF = /^@?e\d+$/;

/** R10 at a dictionary pair or keyword argument: `{"ref": "e12"}`, `ref="e12"`. */
export function browserRefAt(ev: PyEvaluator, n: PyNode): string | undefined {
  let key: string | undefined;
  let value: PyNode | undefined;
  if (n.type === "pair") {
    const k = field(n, "key");
    key = k && constantText(ev.value(k));
    value = field(n, "value");
  } else if (n.type === "keyword_argument") {
    const k = field(n, "name");
    key = k && ev.text(k);
    value = field(n, "value");
  } else return undefined;
  if (key !== "ref" || !value) return undefined;
  const v = constantText(ev.value(value));
  return v !== undefined && REF.test(v) ? v : undefined;
}
