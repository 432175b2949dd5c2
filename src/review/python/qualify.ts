/**
 * The dotted name a Python expression refers to, through imports (`import os as o`,
 * `from os import environ as E`), aliases (`E = os.environ`), `getattr(os, "environ")`,
 * `__import__("os")`, `importlib.import_module("os")`, `sys.modules["os"]`, `vars(os)["environ"]`,
 * `dict(os.environ)` and star imports. Pure.
 */
import { constantText } from "../values.js";
import type { PyEvaluator } from "./evaluate.js";
import { BUILTINS, canonical, STAR_MEMBERS } from "./names.js";
import { field, type PyNode, unparen } from "./tree.js";

const MAX_DEPTH = 64;

/** The dotted name `n` refers to, or undefined. */
export function qualify(ev: PyEvaluator, n: PyNode, depth = 0): string | undefined {
  if (depth > MAX_DEPTH) return undefined;
  const x = unparen(n);
  switch (x.type) {
    case "identifier":
      return qualifyName(ev, x, depth);
    case "attribute": {
      const obj = field(x, "object");
      const attr = field(x, "attribute");
      const base = obj && qualify(ev, obj, depth + 1);
      return base && attr ? canonical(`${base}.${ev.text(attr)}`) : undefined;
    }
    case "call":
      return qualifyCall(ev, x, depth);
    case "subscript": {
      const value = field(x, "value");
      const key = field(x, "subscript");
      if (!value || !key) return undefined;
      const k = constantText(ev.value(key));
      if (k === undefined) return undefined;
      const base = qualify(ev, value, depth + 1);
      if (base === "sys.modules") return canonical(k);
      if (base?.endsWith(".__dict__")) return canonical(`${base.slice(0, -".__dict__".length)}.${k}`);
      const call = unparen(value);
      if (
        call.type === "call" &&
        qualify(ev, field(call, "function") ?? call, depth + 1) === "builtins.vars"
      ) {
        const target = ev.args(call).positional[0];
        const q = target && qualify(ev, target, depth + 1);
        return q ? canonical(`${q}.${k}`) : undefined;
      }
      return undefined;
    }
    default:
      return undefined;
  }
}

function qualifyName(ev: PyEvaluator, x: PyNode, depth: number): string | undefined {
  const name = ev.text(x);
  const b = ev.scopes.lookup(name, x);
  if (b?.kind === "import") return canonical(b.qname);
  if (b?.kind === "value") return qualify(ev, b.value, depth + 1);
  if (b) return undefined;
  for (const mod of ev.scopes.starImports)
    if (STAR_MEMBERS[mod]?.has(name)) return canonical(`${mod}.${name}`);
  if (name === "__builtins__") return "builtins";
  return BUILTINS.has(name) ? `builtins.${name}` : undefined;
}

function qualifyCall(ev: PyEvaluator, x: PyNode, depth: number): string | undefined {
  const fn = field(x, "function");
  if (!fn) return undefined;
  const f = qualify(ev, fn, depth + 1);
  const a = ev.args(x);
  const first = a.positional[0];
  switch (f) {
    case "builtins.getattr": {
      const name = a.positional[1] && constantText(ev.value(a.positional[1]));
      const base = first && qualify(ev, first, depth + 1);
      return base && name ? canonical(`${base}.${name}`) : undefined;
    }
    case "builtins.__import__":
    case "importlib.import_module":
    case "sys.modules.get": {
      const name = first && constantText(ev.value(first));
      return name ? canonical(name) : undefined;
    }
    case "builtins.dict":
    case "os.environ.copy":
      if (f === "os.environ.copy") return "os.environ";
      return first && qualify(ev, first, depth + 1) === "os.environ" ? "os.environ" : undefined;
    default:
      return undefined;
  }
}
