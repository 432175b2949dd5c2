/**
 * What a JavaScript expression names ({@link JsEvaluator.qualify}: `fs.writeFileSync`,
 * `process.env`, `path.join` through imports, `require`, `await import()`, destructuring and
 * aliases) and what it evaluates to ({@link JsEvaluator.value}: folding literals, templates, `+`,
 * `path.join/resolve/dirname`, `new URL(…, import.meta.url)` and following variables to
 * `process.env`, `process.argv`, `process.cwd()`, `os.tmpdir()`). Pure.
 */
import type { AnyNode, Expression } from "acorn";
import {
  asPath,
  concat,
  constantText,
  holeVal,
  isUnknown,
  joinPath,
  parentOf,
  textVal,
  UNKNOWN,
  type Val,
  withVia,
} from "../values.js";
import { callValue } from "./calls.js";
import { type JsBinding, type JsTree, moduleName } from "./scope.js";

const MAX_DEPTH = 64;
const GLOBALS = new Set([
  "process",
  "require",
  "JSON",
  "URL",
  "Reflect",
  "String",
  "console",
  "globalThis",
  "global",
  "eval",
  "Function",
  "setTimeout",
  "setInterval",
  "module",
]);
const SCRIPT_FILE = (): Val => concat([holeVal({ k: "cwd" }), textVal("/main.mjs")], true);

/** Drops `globalThis.` / `global.` and `.default` (`(await import("fs")).default.writeFileSync` is `fs.writeFileSync`). */
function canonical(q: string): string {
  return q.replace(/^(globalThis|global)\./, "").replace(/\.default(?=\.|$)/g, "");
}

/** Evaluation context: nodes evaluated directly go to `consume`; depth bounds recursion. */
export interface Ctx {
  consume: Set<AnyNode> | null;
  depth: number;
}

export class JsEvaluator {
  private readonly memo = new Map<JsBinding, Val>();
  private readonly busy = new Set<JsBinding>();
  /** What each local function returns (see `returnValue` in calls.ts). */
  readonly returns = new Map<AnyNode, Val>();

  constructor(
    readonly src: string,
    readonly tree: JsTree,
  ) {}

  text(n: AnyNode): string {
    return this.src.slice(n.start, n.end);
  }

  /** The dotted name `n` refers to, or undefined. */
  qualify(n: AnyNode, depth = 0): string | undefined {
    if (depth > MAX_DEPTH) return undefined;
    switch (n.type) {
      case "Identifier": {
        const b = this.tree.lookup(n.name, n);
        if (b?.kind === "import") return b.qname;
        if (b?.kind === "value") return this.qualify(b.value, depth + 1);
        if (b?.kind === "member") {
          const base = this.qualify(b.object, depth + 1);
          return base ? canonical(`${base}.${b.key}`) : undefined;
        }
        return !b && GLOBALS.has(n.name) ? n.name : undefined;
      }
      case "MemberExpression": {
        const base = n.object.type === "Super" ? undefined : this.qualify(n.object, depth + 1);
        const key = this.memberKey(n);
        return base && key ? canonical(`${base}.${key}`) : undefined;
      }
      case "ChainExpression":
        return this.qualify(n.expression, depth + 1);
      case "ParenthesizedExpression":
        return this.qualify(n.expression, depth + 1);
      case "SequenceExpression": {
        // `(0, eval)(x)`: the value of a sequence is its last expression.
        const last = n.expressions[n.expressions.length - 1];
        return last ? this.qualify(last, depth + 1) : undefined;
      }
      case "AwaitExpression":
        return this.qualify(n.argument, depth + 1);
      case "ImportExpression": {
        const spec = constantText(this.value(n.source));
        return spec ? moduleName(spec) : undefined;
      }
      case "CallExpression": {
        if (n.callee.type === "Super") return undefined;
        const f = this.qualify(n.callee, depth + 1);
        const [first, second] = n.arguments;
        if (f === "require" && first && first.type !== "SpreadElement") {
          const spec = constantText(this.value(first));
          return spec ? moduleName(spec) : undefined;
        }
        if (
          f === "Reflect.get" &&
          first &&
          second &&
          first.type !== "SpreadElement" &&
          second.type !== "SpreadElement"
        ) {
          const base = this.qualify(first, depth + 1);
          const key = constantText(this.value(second));
          return base && key ? canonical(`${base}.${key}`) : undefined;
        }
        return undefined;
      }
      default:
        return undefined;
    }
  }

  /** The property name of `a.b` / `a["b"]` when it is known. */
  memberKey(n: AnyNode & { type: "MemberExpression" }): string | undefined {
    if (!n.computed) return n.property.type === "Identifier" ? n.property.name : undefined;
    return n.property.type === "PrivateIdentifier" ? undefined : constantText(this.value(n.property));
  }

  /** The abstract value of `n`. With `consume`, every node evaluated directly is added to it. */
  value(n: AnyNode, consume: Set<AnyNode> | null = null): Val {
    return this.eval(n, { consume, depth: 0 });
  }

  /** Evaluates `n` in a context (used by the call helpers in calls.ts). */
  eval(n: AnyNode, ctx: Ctx): Val {
    ctx.consume?.add(n);
    if (ctx.depth > MAX_DEPTH) return UNKNOWN;
    const c: Ctx = { consume: ctx.consume, depth: ctx.depth + 1 };
    switch (n.type) {
      case "Literal":
        return typeof n.value === "string" ? textVal(n.value) : UNKNOWN;
      case "TemplateLiteral": {
        const parts: Val[] = [];
        n.quasis.forEach((q, i) => {
          c.consume?.add(q);
          parts.push(textVal(q.value.cooked ?? q.value.raw));
          const e = n.expressions[i];
          if (e) parts.push(this.eval(e, c));
        });
        return concat(parts);
      }
      case "BinaryExpression": {
        if (n.operator !== "+" || n.left.type === "PrivateIdentifier") return UNKNOWN;
        // `a + b + c + …` nests to the left: walk the chain iteratively so long ones stay shallow.
        const operands: AnyNode[] = [n.right];
        let left: AnyNode = n.left;
        while (
          left.type === "BinaryExpression" &&
          left.operator === "+" &&
          left.left.type !== "PrivateIdentifier"
        ) {
          c.consume?.add(left);
          operands.push(left.right);
          left = left.left;
        }
        operands.push(left);
        const vals = operands.reverse().map((x) => this.eval(x, c));
        return vals.every(isUnknown) ? UNKNOWN : concat(vals);
      }
      case "ConditionalExpression": {
        const a = this.eval(n.consequent, c);
        return isUnknown(a) ? this.eval(n.alternate, c) : a;
      }
      case "LogicalExpression": {
        const l = this.eval(n.left, c);
        return isUnknown(l) && n.operator !== "&&" ? this.eval(n.right, c) : l;
      }
      case "ChainExpression":
        return this.eval(n.expression, c);
      case "AwaitExpression":
        return this.eval(n.argument, c);
      case "ParenthesizedExpression":
        return this.eval(n.expression, c);
      case "Identifier":
        return this.nameValue(n, c.depth);
      case "MemberExpression":
        return this.memberValue(n, c);
      case "CallExpression":
        return callValue(this, n, c);
      case "NewExpression": {
        if (this.qualify(n.callee) !== "URL") return UNKNOWN;
        const [rel, base] = n.arguments;
        if (!rel || rel.type === "SpreadElement") return UNKNOWN;
        const r = this.eval(rel, c);
        if (!base || base.type === "SpreadElement") return r;
        return joinPath([parentOf(this.eval(base, c)), r]);
      }
      default:
        return UNKNOWN;
    }
  }

  /** `process.env.X`, `env["X"]`: the variable name, when `n` reads the environment. */
  envName(n: AnyNode): string | undefined {
    if (n.type !== "MemberExpression" || n.object.type === "Super") return undefined;
    return this.qualify(n.object) === "process.env" ? this.memberKey(n) : undefined;
  }

  private nameValue(n: AnyNode & { type: "Identifier" }, depth: number): Val {
    if (n.name === "__dirname") return asPath(holeVal({ k: "cwd" }));
    if (n.name === "__filename") return SCRIPT_FILE();
    const b = this.tree.lookup(n.name, n);
    return b ? this.bindingValue(n.name, b, depth) : UNKNOWN;
  }

  private bindingValue(name: string, b: JsBinding, depth: number): Val {
    const cached = this.memo.get(b);
    if (cached) return cached;
    if (this.busy.has(b)) return UNKNOWN;
    this.busy.add(b);
    const ctx: Ctx = { consume: null, depth };
    let v: Val = UNKNOWN;
    if (b.kind === "value") v = withVia(this.eval(b.value, ctx), this.tree.id(b.value));
    else if (b.kind === "member") {
      if (this.qualify(b.object) === "process.env") v = holeVal({ k: "env", name: b.key });
    } else if (b.kind === "augment") {
      const before = this.tree.lookup(name, b.node);
      const prev = before && before !== b ? this.bindingValue(name, before, depth + 1) : UNKNOWN;
      const add = this.eval(b.value, ctx);
      v = isUnknown(prev) && isUnknown(add) ? UNKNOWN : concat([prev, add]);
    } else if (b.kind === "element") v = this.isArgv(b.of) ? holeVal({ k: "argv" }) : UNKNOWN;
    else if (b.kind === "param") v = holeVal({ k: "param", name });
    this.busy.delete(b);
    this.memo.set(b, v);
    return v;
  }

  /** `process.argv`, `process.argv.slice(2)`, and names bound to those. */
  isArgv(n: AnyNode, depth = 0): boolean {
    if (depth > 8) return false;
    if (n.type === "Identifier") {
      const b = this.tree.lookup(n.name, n);
      if (b?.kind === "value") return this.isArgv(b.value, depth + 1);
    }
    if (this.qualify(n) === "process.argv") return true;
    if (
      n.type === "CallExpression" &&
      n.callee.type === "MemberExpression" &&
      n.callee.object.type !== "Super"
    ) {
      const m = this.memberKey(n.callee);
      return (m === "slice" || m === "filter") && this.isArgv(n.callee.object, depth + 1);
    }
    if (n.type === "AwaitExpression") return this.isArgv(n.argument, depth + 1);
    return n.type === "ChainExpression" ? this.isArgv(n.expression, depth + 1) : false;
  }

  private memberValue(n: AnyNode & { type: "MemberExpression" }, c: Ctx): Val {
    const env = this.envName(n);
    if (env) return holeVal({ k: "env", name: env });
    if (n.object.type === "Super") return UNKNOWN;
    const q = this.qualify(n);
    if (q === "path.sep") return textVal("/");
    if (q === "process.argv") return holeVal({ k: "argv" });
    if (n.object.type === "MetaProperty") {
      const key = this.memberKey(n);
      if (key === "dirname") return asPath(holeVal({ k: "cwd" }));
      if (key === "filename" || key === "url") return SCRIPT_FILE();
      return UNKNOWN;
    }
    if (n.computed && this.isArgv(n.object)) return holeVal({ k: "argv" });
    const key = this.memberKey(n);
    if (key === "pathname") return this.eval(n.object, c);
    if (key === undefined || q !== undefined) return UNKNOWN;
    const o = n.object;
    const objName = o.type === "ThisExpression" ? "this" : o.type === "Identifier" ? o.name : undefined;
    const attr = objName ? this.tree.lookupAttribute(objName, key) : undefined;
    if (attr) return this.bindingValue(`${objName}.${key}`, attr, c.depth);
    const entry = o.type === "Identifier" ? this.objectEntry(o, key) : undefined;
    return entry ? this.eval(entry, { consume: null, depth: c.depth }) : UNKNOWN;
  }

  /** `CONFIG.out` where `const CONFIG = { out: … }`: the property's value node. */
  private objectEntry(name: AnyNode & { type: "Identifier" }, key: string): Expression | undefined {
    const b = this.tree.lookup(name.name, name);
    if (b?.kind !== "value" || b.value.type !== "ObjectExpression") return undefined;
    for (const p of b.value.properties) {
      if (p.type !== "Property" || p.computed) continue;
      const k =
        p.key.type === "Identifier" ? p.key.name : p.key.type === "Literal" ? String(p.key.value) : undefined;
      if (k === key) return p.value;
    }
    return undefined;
  }
}
