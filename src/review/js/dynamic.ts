/**
 * Dynamic code in JavaScript (R11/R12), JSON text written as output (R13) and browser refs held as
 * data (R10), found at one node. Pure.
 */
import type { AnyNode } from "acorn";
import { isJsonText } from "../json-text.js";
import { constantText } from "../values.js";
import type { JsEvaluator } from "./evaluate.js";

/** Callables that run text as code. */
const EXEC = new Set([
  "eval",
  "Function",
  "vm.runInThisContext",
  "vm.runInNewContext",
  "vm.runInContext",
  "vm.compileFunction",
  "vm.Script",
  "vm.SourceTextModule",
  "vm.SyntheticModule",
  "module._compile",
  "module.prototype._compile",
]);
/** Ways into Node's internals. */
const INTERNALS = new Set([
  "process.binding",
  "process._linkedBinding",
  "process.dlopen",
  "module._load",
  "module.constructor._load",
  "module.Module._load",
]);
/** Callables that load a module by name. */
const REQUIRES = new Set(["require", "module.require", "process.mainModule.require"]);
const GLOBAL_OBJECTS = new Set(["globalThis", "global"]);

export interface DynamicCode {
  kind: "exec" | "lookup";
  api: string;
}

const computed = (ev: JsEvaluator, n: AnyNode | undefined): boolean =>
  n === undefined || n.type === "SpreadElement" || constantText(ev.value(n)) === undefined;

/** Whether `n` is the callee of a call or `new`, a declared name, or a property key. */
function notAReference(ev: JsEvaluator, n: AnyNode): boolean {
  const p = ev.tree.parent(n);
  if (!p) return true;
  if ((p.type === "CallExpression" || p.type === "NewExpression") && p.callee === n) return true;
  if (p.type === "VariableDeclarator" && p.id === n) return true;
  if (p.type === "MemberExpression" && p.property === n && !p.computed) return true;
  if (p.type === "Property" && p.key === n && !p.computed) return true;
  if (p.type === "AssignmentExpression" && p.left === n) return true;
  return p.type.startsWith("Import") || p.type.startsWith("Export");
}

/** R11/R12 at `n`. */
export function dynamicCodeAt(ev: JsEvaluator, n: AnyNode): DynamicCode | undefined {
  switch (n.type) {
    case "CallExpression":
    case "NewExpression": {
      if (n.callee.type === "Super") return undefined;
      const q = ev.qualify(n.callee);
      const first = n.arguments[0];
      if (q && EXEC.has(q)) return { kind: "exec", api: `${n.type === "NewExpression" ? "new " : ""}${q}()` };
      if (q && INTERNALS.has(q)) return { kind: "lookup", api: `${q}()` };
      if ((q === "setTimeout" || q === "setInterval") && first && first.type !== "SpreadElement") {
        if (constantText(ev.value(first)) !== undefined) return { kind: "exec", api: `${q}(<code text>)` };
      }
      if (isRequire(ev, n.callee, q)) {
        if (computed(ev, first)) return { kind: "lookup", api: "require(<computed>)" };
        if (isDataUrl(ev, first)) return { kind: "exec", api: "require(<data: URL>)" };
      }
      if (q === "Reflect.get" && first && first.type !== "SpreadElement") {
        const target = ev.qualify(first);
        if (target && GLOBAL_OBJECTS.has(target) && computed(ev, n.arguments[1]))
          return { kind: "lookup", api: `Reflect.get(${target}, <computed>)` };
      }
      // `({}).constructor.constructor("code")`, `Object.getPrototypeOf(async () => {}).constructor`.
      if (n.callee.type === "MemberExpression" && ev.memberKey(n.callee) === "constructor")
        return { kind: "exec", api: ".constructor()" };
      return undefined;
    }
    case "ImportExpression":
      if (computed(ev, n.source)) return { kind: "lookup", api: "import(<computed>)" };
      return isDataUrl(ev, n.source) ? { kind: "exec", api: "import(<data: URL>)" } : undefined;
    case "MemberExpression": {
      if (n.object.type === "Super") return undefined;
      // `(async () => {}).constructor`, `x.constructor.constructor`: the Function constructor.
      if (ev.memberKey(n) === "constructor" && functionConstructorBase(ev, n.object))
        return { kind: "exec", api: ".constructor of a function" };
      if (!n.computed) return undefined;
      const target = ev.qualify(n.object);
      if (target && GLOBAL_OBJECTS.has(target) && ev.memberKey(n) === undefined)
        return { kind: "lookup", api: `${target}[<computed>]` };
      return undefined;
    }
    case "Identifier": {
      if (notAReference(ev, n)) return undefined;
      const q = ev.qualify(n);
      // `const e = eval`, `[s].map(eval)`: the callable itself passed on (its calls are found as calls).
      return q && EXEC.has(q) ? { kind: "exec", api: q } : undefined;
    }
    default:
      return undefined;
  }
}

/** `require`, `module.require`, or what `createRequire(…)` returned. */
function isRequire(ev: JsEvaluator, callee: AnyNode, q: string | undefined): boolean {
  if (q && REQUIRES.has(q)) return true;
  let c: AnyNode = callee;
  if (c.type === "Identifier") {
    const b = ev.tree.lookup(c.name, c);
    if (b?.kind !== "value") return false;
    c = b.value;
  }
  return (
    c.type === "CallExpression" &&
    c.callee.type !== "Super" &&
    ev.qualify(c.callee) === "module.createRequire"
  );
}

/** A module specifier that is code text (`data:text/javascript,…`). */
function isDataUrl(ev: JsEvaluator, n: AnyNode | undefined): boolean {
  if (!n || n.type === "SpreadElement") return false;
  return /^\s*data:/i.test(constantText(ev.value(n)) ?? "");
}

/** A function literal, another `.constructor`, or `Object.getPrototypeOf(…)`: its `.constructor` is Function. */
function functionConstructorBase(ev: JsEvaluator, n: AnyNode): boolean {
  if (n.type === "ArrowFunctionExpression" || n.type === "FunctionExpression") return true;
  if (n.type === "MemberExpression" && n.object.type !== "Super") return ev.memberKey(n) === "constructor";
  if (n.type === "CallExpression" && n.callee.type !== "Super") {
    const q = ev.qualify(n.callee);
    return q === "Object.getPrototypeOf" || q === "Reflect.getPrototypeOf";
  }
  return n.type === "Identifier" && ev.qualify(n) === "Function";
}

const WRITE_METHODS = new Set(["write", "end"]);

/** `JSON.stringify(JSON.parse('<JSON>'))` or a constant JSON text at `n`. */
function jsonText(ev: JsEvaluator, n: AnyNode | undefined): boolean {
  if (!n || n.type === "SpreadElement") return false;
  if (n.type === "CallExpression" && n.callee.type !== "Super") {
    const q = ev.qualify(n.callee);
    if (q === "JSON.stringify" || q === "JSON.parse") return jsonText(ev, n.arguments[0]);
    return false;
  }
  return isJsonText(constantText(ev.value(n)));
}

/** R13 at a call: `writeFileSync(p, '{"a": 1}')`, `stream.write(J)`, `JSON.stringify(JSON.parse('…'))`. */
export function jsonResultAt(ev: JsEvaluator, n: AnyNode, isWrite: boolean): string | undefined {
  if (n.type !== "CallExpression" || n.callee.type === "Super") return undefined;
  if (isWrite)
    return jsonText(ev, n.arguments[1]) ? `${ev.qualify(n.callee) ?? "write"}(<JSON literal>)` : undefined;
  if (n.callee.type !== "MemberExpression" || n.callee.object.type === "Super") return undefined;
  // Diagnostics on the console are not the step's output.
  const r = ev.qualify(n.callee.object);
  if (r === "process.stdout" || r === "process.stderr") return undefined;
  const m = ev.memberKey(n.callee);
  return m && WRITE_METHODS.has(m) && jsonText(ev, n.arguments[0]) ? `.${m}(<JSON literal>)` : undefined;
}

const REF = /^@?e\d+$/;

/** R10 at an object property: `{ ref: "e12" }`, `{ "ref": "e12" }`. */
export function browserRefAt(ev: JsEvaluator, n: AnyNode): string | undefined {
  if (n.type !== "Property" || n.value.type === "AssignmentPattern") return undefined;
  const key = n.computed
    ? constantText(ev.value(n.key))
    : n.key.type === "Identifier"
      ? n.key.name
      : n.key.type === "Literal"
        ? String(n.key.value)
        : undefined;
  if (key !== "ref") return undefined;
  const v = constantText(ev.value(n.value));
  return v !== undefined && REF.test(v) ? v : undefined;
}
