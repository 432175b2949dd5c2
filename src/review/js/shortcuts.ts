/**
 * R9 facts in JavaScript: top-level cache/shortcut constants holding literals, a successful
 * `process.exit()` before any work (following a top-level `main()` call), and literal data written
 * as output. Pure.
 */
import type { AnyNode, Statement } from "acorn";
import { full } from "acorn-walk";
import { isShortcutVariable, type LiteralKind } from "../rules/shortcuts.js";
import type { JsEvaluator } from "./evaluate.js";

const SETUP_CALL =
  /^(path\.\w+|process\.cwd|String|Number|Boolean|JSON\.parse|console\.\w+|url\.fileURLToPath|os\.tmpdir|os\.homedir|require)$/;

/** True for a literal with no names or calls in it. */
export function isConstantLiteral(n: AnyNode): boolean {
  switch (n.type) {
    case "Literal":
      return true;
    case "TemplateLiteral":
      return n.expressions.length === 0;
    case "UnaryExpression":
      return isConstantLiteral(n.argument);
    case "ArrayExpression":
      return n.elements.every((e) => e !== null && e.type !== "SpreadElement" && isConstantLiteral(e));
    case "ObjectExpression":
      return n.properties.every(
        (p) => p.type === "Property" && !p.computed && p.kind === "init" && isConstantLiteral(p.value),
      );
    default:
      return false;
  }
}

function isTruthyLiteral(n: AnyNode): boolean {
  if (!isConstantLiteral(n)) return false;
  if (n.type === "ArrayExpression") return n.elements.length > 0;
  if (n.type === "ObjectExpression") return n.properties.length > 0;
  if (n.type === "TemplateLiteral") return (n.quasis[0]?.value.cooked ?? "") !== "";
  if (n.type === "Literal") return Boolean(n.value);
  return true;
}

/** A non-empty literal container, inline or through a top-level constant. */
export function isConstantData(ev: JsEvaluator, n: AnyNode): boolean {
  let x: AnyNode = n;
  if (x.type === "Identifier") {
    const b = ev.tree.lookup(x.name, x);
    if (b?.kind !== "value") return false;
    x = b.value;
  }
  return (x.type === "ObjectExpression" || x.type === "ArrayExpression") && isTruthyLiteral(x);
}

function topLevel(body: readonly AnyNode[]): Statement[] {
  return body.map((s) =>
    s.type === "ExportNamedDeclaration" && s.declaration ? s.declaration : s,
  ) as Statement[];
}

/** Top-level `const CACHED_RESULT = {...}`, `let SKIP_FETCH = true`. */
export function cacheVariables(ev: JsEvaluator): { node: AnyNode; name: string }[] {
  const out: { node: AnyNode; name: string }[] = [];
  for (const s of topLevel(ev.tree.program.body)) {
    if (s.type !== "VariableDeclaration") continue;
    for (const d of s.declarations) {
      if (d.id.type !== "Identifier" || !d.init || !isTruthyLiteral(d.init)) continue;
      const t = d.init.type;
      const kind: LiteralKind =
        t === "ObjectExpression" || t === "ArrayExpression"
          ? "container"
          : t === "TemplateLiteral" || (t === "Literal" && typeof d.init.value === "string")
            ? "string"
            : "scalar";
      if (!isShortcutVariable(d.id.name, kind)) continue;
      out.push({ node: d.id, name: d.id.name });
    }
  }
  return out;
}

type Scan = { exit: AnyNode } | "work" | "clean";

function successExit(ev: JsEvaluator, n: AnyNode): boolean {
  if (n.type !== "CallExpression" || n.callee.type === "Super" || ev.qualify(n.callee) !== "process.exit")
    return false;
  const code = n.arguments[0];
  return !code || (code.type === "Literal" && (code.value === 0 || code.value === null));
}

/** True when every call in `n` only sets up (env reads, path building, logging…). */
function isSetupOnly(ev: JsEvaluator, n: AnyNode): boolean {
  let ok = true;
  full(n, (node) => {
    const x = node as AnyNode;
    if (!ok || (x.type !== "CallExpression" && x.type !== "NewExpression")) return;
    const q = x.callee.type === "Super" ? undefined : ev.qualify(x.callee);
    if (!q || !SETUP_CALL.test(q)) ok = false;
  });
  return ok;
}

function scanBlock(ev: JsEvaluator, stmts: readonly AnyNode[], seen: Set<AnyNode>): Scan {
  for (const s of stmts) {
    const r = scanStatement(ev, s, seen);
    if (r !== "clean") return r;
  }
  return "clean";
}

function scanStatement(ev: JsEvaluator, s: AnyNode, seen: Set<AnyNode>): Scan {
  switch (s.type) {
    case "ImportDeclaration":
    case "FunctionDeclaration":
    case "ClassDeclaration":
    case "EmptyStatement":
      return "clean";
    case "ExportNamedDeclaration":
      return s.declaration ? scanStatement(ev, s.declaration, seen) : "clean";
    case "VariableDeclaration":
      return isSetupOnly(ev, s) ? "clean" : "work";
    case "BlockStatement":
      return scanBlock(ev, s.body, seen);
    case "IfStatement": {
      if (!isSetupOnly(ev, s.test)) return "work";
      const a = scanStatement(ev, s.consequent, seen);
      if (a !== "clean" || !s.alternate) return a;
      return scanStatement(ev, s.alternate, seen);
    }
    case "ExpressionStatement": {
      if ("directive" in s && s.directive) return "clean";
      let e: AnyNode = s.expression;
      if (e.type === "AwaitExpression") e = e.argument;
      if (successExit(ev, e)) return { exit: e };
      if (e.type === "CallExpression" && e.callee.type === "Identifier" && e.arguments.length === 0) {
        const fn = ev.tree.moduleFunction(e.callee.name);
        if (fn && !seen.has(fn) && "body" in fn) {
          seen.add(fn);
          const body = fn.body as AnyNode;
          return body.type === "BlockStatement" ? scanBlock(ev, body.body, seen) : "work";
        }
      }
      return isSetupOnly(ev, e) ? "clean" : "work";
    }
    default:
      return "work";
  }
}

/** The first successful `process.exit()` before any work. */
export function earlyExit(ev: JsEvaluator): AnyNode | undefined {
  const r = scanBlock(ev, ev.tree.program.body, new Set());
  return typeof r === "object" ? r.exit : undefined;
}
