/**
 * What a Python expression names and what it evaluates to, without running it:
 * - {@link PyEvaluator.qualify}: the dotted name an expression refers to through imports, aliases,
 *   `getattr(os, "environ")`, `__import__("os")`, `sys.modules["os"]` (`os.environ.get`,
 *   `pathlib.Path`, `builtins.open`);
 * - {@link PyEvaluator.value}: the abstract string/path value ({@link Val}) of an expression,
 *   folding literals, f-strings, `+`, `%`, `.format`, `os.path.join`, `Path(…) / …`, `.parent`,
 *   and following assignments to environment reads, `sys.argv`, `os.getcwd()`, `tempfile`.
 * Pure.
 */
import {
  concat,
  constantText,
  holeVal,
  isUnknown,
  joinPath,
  parentOf as parentPath,
  textVal,
  UNKNOWN,
  type Val,
  withVia,
} from "../values.js";
import { callValue } from "./calls.js";
import { envRead } from "./env-reads.js";
import { CONSTANTS, decodeEscapes, substitute } from "./names.js";
import { qualify } from "./qualify.js";
import type { Binding, Scopes } from "./scope.js";
import { type CallArgs, callArgs, field, named, type PyNode, unparen } from "./tree.js";

const MAX_DEPTH = 64;

/** Evaluation context: nodes evaluated directly go to `consume`; depth bounds recursion. */
export interface Ctx {
  consume: Set<number> | null;
  depth: number;
}

export class PyEvaluator {
  private readonly memo = new Map<Binding, Val>();
  private readonly busy = new Set<Binding>();
  private readonly names = new Map<number, string | undefined>();
  private readonly argsMemo = new Map<number, CallArgs>();
  /** What each local function returns (see `returnValue` in calls.ts), by `def` node id. */
  readonly returns = new Map<number, Val>();

  constructor(
    readonly src: string,
    readonly scopes: Scopes,
  ) {}

  text(n: PyNode): string {
    return this.src.slice(n.start, n.end);
  }

  /** The dotted name `n` refers to (`os.environ.get`, `pathlib.Path`, `builtins.open`), or undefined. */
  qualify(n: PyNode): string | undefined {
    if (this.names.has(n.id)) return this.names.get(n.id);
    const q = qualify(this, n);
    this.names.set(n.id, q);
    return q;
  }

  /** The arguments of a call (parsed once per call node). */
  args(call: PyNode): CallArgs {
    let a = this.argsMemo.get(call.id);
    if (!a) {
      a = callArgs(call, this.src);
      this.argsMemo.set(call.id, a);
    }
    return a;
  }

  /** The abstract value of `n`. With `consume`, every node evaluated directly is added to it. */
  value(n: PyNode, consume: Set<number> | null = null): Val {
    return this.eval(n, { consume, depth: 0 });
  }

  /** Evaluates `n` in a context (used by the call helpers in calls.ts). */
  eval(n: PyNode, ctx: Ctx): Val {
    ctx.consume?.add(n.id);
    if (ctx.depth > MAX_DEPTH) return UNKNOWN;
    const c: Ctx = { consume: ctx.consume, depth: ctx.depth + 1 };
    switch (n.type) {
      case "string":
        return this.stringValue(n, c);
      case "concatenated_string":
        return concat(named(n).map((s) => this.eval(s, c)));
      case "parenthesized_expression":
      case "await": {
        const inner = named(n)[0];
        return inner ? this.eval(inner, c) : UNKNOWN;
      }
      case "named_expression": {
        const v = field(n, "value");
        return v ? this.eval(v, c) : UNKNOWN;
      }
      case "binary_operator":
        return this.binaryValue(n, c);
      case "conditional_expression": {
        const [a, , b] = named(n);
        const va = a ? this.eval(a, c) : UNKNOWN;
        return !isUnknown(va) || !b ? va : this.eval(b, c);
      }
      case "boolean_operator": {
        const l = field(n, "left");
        const r = field(n, "right");
        const vl = l ? this.eval(l, c) : UNKNOWN;
        return !isUnknown(vl) || !r ? vl : this.eval(r, c);
      }
      case "identifier":
        return this.nameValue(n, c);
      case "attribute":
        return this.attributeValue(n, c);
      case "subscript":
        return this.subscriptValue(n, c);
      case "call":
        return callValue(this, n, c);
      default:
        return UNKNOWN;
    }
  }

  private stringValue(n: PyNode, c: Ctx): Val {
    const start = n.children[0];
    const prefix = start?.type === "string_start" ? this.text(start).toLowerCase() : "";
    const raw = prefix.includes("r");
    const fmt = prefix.includes("f");
    const parts: Val[] = [];
    for (const ch of n.children) {
      if (ch.type === "string_content") {
        let s = this.text(ch);
        if (!raw) s = decodeEscapes(s);
        if (fmt) s = s.replace(/\{\{/g, "{").replace(/\}\}/g, "}");
        parts.push(textVal(s));
      } else if (ch.type === "interpolation") {
        const e = field(ch, "expression");
        parts.push(e ? this.eval(e, c) : UNKNOWN);
      }
    }
    return concat(parts);
  }

  private binaryValue(n: PyNode, c: Ctx): Val {
    const l = field(n, "left");
    const r = field(n, "right");
    const op = field(n, "operator");
    if (!l || !r || !op) return UNKNOWN;
    const o = this.text(op);
    if (o === "+") {
      // `a + b + c + …` nests to the left: walk the chain iteratively so long ones stay shallow.
      const operands: PyNode[] = [r];
      let left = l;
      while (left.type === "binary_operator" && this.text(field(left, "operator") ?? left) === "+") {
        c.consume?.add(left.id);
        const rr = field(left, "right");
        const ll = field(left, "left");
        if (!rr || !ll) break;
        operands.push(rr);
        left = ll;
      }
      operands.push(left);
      const vals = operands.reverse().map((x) => this.eval(x, c));
      return vals.every(isUnknown) ? UNKNOWN : concat(vals);
    }
    if (o === "/") {
      const vl = this.eval(l, c);
      return vl.path ? joinPath([vl, this.eval(r, c)]) : UNKNOWN;
    }
    if (o === "%") {
      const template = constantText(this.eval(l, c));
      if (template === undefined) return UNKNOWN;
      const rr = unparen(r);
      const args = rr.type === "tuple" ? named(rr).map((a) => this.eval(a, c)) : [this.eval(rr, c)];
      return substitute(template, /%(?:\([^)]*\))?[-#0 +]*\d*(?:\.\d+)?[a-zA-Z%]/g, args);
    }
    return UNKNOWN;
  }

  private nameValue(n: PyNode, c: Ctx): Val {
    const name = this.text(n);
    if (name === "__file__") return concat([holeVal({ k: "cwd" }), textVal("/main.py")]);
    const b = this.scopes.lookup(name, n);
    if (!b) return UNKNOWN;
    return this.bindingValue(name, b, c.depth);
  }

  private bindingValue(name: string, b: Binding, depth: number): Val {
    const cached = this.memo.get(b);
    if (cached) return cached;
    if (this.busy.has(b)) return UNKNOWN;
    this.busy.add(b);
    const ctx: Ctx = { consume: null, depth };
    let v: Val;
    switch (b.kind) {
      case "value":
        v = withVia(this.eval(b.value, ctx), b.value.id);
        break;
      case "augment": {
        const before = this.scopes.lookup(name, b.node);
        const prev = before && before !== b ? this.bindingValue(name, before, depth + 1) : UNKNOWN;
        const add = this.eval(b.value, ctx);
        if (b.op === "+=") v = isUnknown(prev) && isUnknown(add) ? UNKNOWN : concat([prev, add]);
        else if (b.op === "/=" && prev.path) v = joinPath([prev, add]);
        else v = UNKNOWN;
        break;
      }
      case "element":
        v = this.isArgv(b.of) ? holeVal({ k: "argv" }) : UNKNOWN;
        break;
      case "param":
        v = holeVal({ k: "param", name });
        break;
      default:
        v = UNKNOWN;
    }
    this.busy.delete(b);
    this.memo.set(b, v);
    return v;
  }

  /** `CONFIG["out"]` where `CONFIG = {"out": …}`: the entry's value node. */
  private dictEntry(name: PyNode, key: PyNode, c: Ctx): PyNode | undefined {
    const b = this.scopes.lookup(this.text(name), name);
    const dict = b?.kind === "value" ? unparen(b.value) : undefined;
    const k = constantText(this.eval(key, c));
    if (dict?.type !== "dictionary" || k === undefined) return undefined;
    for (const pair of named(dict)) {
      const pk = field(pair, "key");
      if (pair.type === "pair" && pk && constantText(this.eval(pk, { consume: null, depth: c.depth })) === k)
        return field(pair, "value");
    }
    return undefined;
  }

  /** `sys.argv`, `sys.argv[1:]`, `list(sys.argv[1:])`, and names bound to those. */
  private isArgv(n: PyNode, depth = 0): boolean {
    const x = unparen(n);
    if (depth > 8) return false;
    if (x.type === "identifier") {
      const b = this.scopes.lookup(this.text(x), x);
      if (b?.kind === "value") return this.isArgv(b.value, depth + 1);
    }
    if (this.qualify(x) === "sys.argv") return true;
    if (x.type === "subscript") return this.isArgv(field(x, "value") ?? x, depth + 1);
    if (x.type === "call") {
      const first = this.args(x).positional[0];
      const f = this.qualify(field(x, "function") ?? x);
      return (
        (f === "builtins.list" || f === "builtins.reversed" || f === "builtins.sorted") &&
        !!first &&
        this.isArgv(first, depth + 1)
      );
    }
    return false;
  }

  private attributeValue(n: PyNode, c: Ctx): Val {
    const q = this.qualify(n);
    if (q !== undefined) {
      const k = CONSTANTS[q];
      if (k !== undefined) return textVal(k);
      if (q === "sys.argv") return holeVal({ k: "argv" });
    }
    const obj = field(n, "object");
    const attr = field(n, "attribute");
    if (!obj || !attr) return UNKNOWN;
    if (this.text(attr) === "parent") {
      const v = this.eval(obj, c);
      return isUnknown(v) ? UNKNOWN : parentPath(v);
    }
    if (obj.type === "identifier" && q === undefined) {
      const b = this.scopes.lookupAttribute(this.text(obj), this.text(attr));
      if (b) return this.bindingValue(this.text(n), b, c.depth);
    }
    return UNKNOWN;
  }

  private subscriptValue(n: PyNode, c: Ctx): Val {
    const read = envRead(this, n);
    if (read) return read.name ? holeVal({ k: "env", name: read.name }) : UNKNOWN;
    const value = field(n, "value");
    if (!value) return UNKNOWN;
    if (this.isArgv(value)) return holeVal({ k: "argv" });
    const v = unparen(value);
    const key = field(n, "subscript");
    if (key && v.type === "identifier") {
      const entry = this.dictEntry(v, key, c);
      if (entry) return this.eval(entry, { consume: null, depth: c.depth });
    }
    if (v.type === "attribute" && key && this.text(field(v, "attribute") ?? v) === "parents") {
      const obj = field(v, "object");
      const levels = Number(constantText(this.eval(key, c)) ?? this.text(key));
      if (!obj || !Number.isInteger(levels) || levels < 0 || levels > 16) return UNKNOWN;
      let out = this.eval(obj, c);
      for (let i = 0; i <= levels; i++) out = parentPath(out);
      return out;
    }
    return UNKNOWN;
  }
}
