/**
 * Reads of environment variables in JavaScript and their fallbacks: `process.env.X ?? d`,
 * `env.X || d`, `process.env.X ? process.env.X : d`, `process.env.X ||= d`, and
 * `const { X = d } = process.env`, under any alias of `process` / `process.env`. Pure.
 */
import type { AnyNode } from "acorn";
import type { FallbackKind } from "../facts.js";
import type { JsEvaluator } from "./evaluate.js";

export interface JsEnvRead {
  node: AnyNode;
  name: string;
  fallback: FallbackKind | null;
  expr: string;
}

/** Helpers that fail rather than substitute (`required("X")`, `die()`). */
const FAILING_NAME = /(fail|die|abort|throw|require|error|missing|panic|exit)/i;

/** True when `n` does not supply a value: `undefined`, `null`, an exit, a throwing helper. */
export function isFailure(ev: JsEvaluator, n: AnyNode): boolean {
  if (n.type === "Identifier" && n.name === "undefined") return true;
  if (n.type === "Literal" && n.value === null) return true;
  if (n.type !== "CallExpression") return false;
  const callee = n.callee;
  if (callee.type === "ArrowFunctionExpression" || callee.type === "FunctionExpression")
    return /\bthrow\b/.test(ev.text(callee.body));
  if (ev.qualify(callee) === "process.exit") return true;
  const last =
    callee.type === "Identifier"
      ? callee.name
      : callee.type === "MemberExpression" && callee.property.type === "Identifier"
        ? callee.property.name
        : "";
  return FAILING_NAME.test(last);
}

interface Wrapped {
  kind: FallbackKind;
  /** How the fallback is written, for the message (`?? …`). */
  shape: string;
}

/** The fallback around a read: climb through `?.trim()`, `String(…)`, then look at the parent. */
function wrapperFallback(ev: JsEvaluator, n: AnyNode): Wrapped | null {
  let child: AnyNode = n;
  let p = ev.tree.parent(n);
  while (
    p &&
    (p.type === "ChainExpression" ||
      ((p.type === "CallExpression" || p.type === "MemberExpression") &&
        p.end - p.start < n.end - n.start + 30))
  ) {
    child = p;
    p = ev.tree.parent(p);
  }
  if (!p) return null;
  if (
    p.type === "LogicalExpression" &&
    p.left === child &&
    (p.operator === "??" || p.operator === "||") &&
    !isFailure(ev, p.right)
  )
    return { kind: p.operator === "??" ? "nullish" : "or", shape: `${p.operator} …` };
  if (p.type === "ConditionalExpression" && p.test !== child) {
    const other = p.consequent === child ? p.alternate : p.consequent;
    if (!isFailure(ev, other)) return { kind: "conditional", shape: "? … : …" };
  }
  if (p.type === "AssignmentExpression" && p.left === child && (p.operator === "??=" || p.operator === "||="))
    return { kind: "nullish", shape: `${p.operator} …` };
  return reassignedWhenMissing(ev, child, p);
}

/** `let x = process.env.X;` followed in the same block by `if (!x) x = …` (or `x === undefined`, `x == null`). */
function reassignedWhenMissing(ev: JsEvaluator, read: AnyNode, p: AnyNode): Wrapped | null {
  if (p.type !== "VariableDeclarator" || p.init !== read || p.id.type !== "Identifier") return null;
  const name = p.id.name.replace(/\$/g, "\\$");
  const decl = ev.tree.parent(p);
  const block = decl && ev.tree.parent(decl);
  if (!decl || !block || (block.type !== "BlockStatement" && block.type !== "Program")) return null;
  const missing = new RegExp(`^(!${name}|${name}\\s*===?\\s*(undefined|null|""|'')|!${name}\\.length)$`);
  const body = block.body as AnyNode[];
  for (const s of body.slice(body.indexOf(decl) + 1)) {
    if (s.type !== "IfStatement" || !missing.test(ev.text(s.test).replace(/\s+/g, ""))) continue;
    const stmts = s.consequent.type === "BlockStatement" ? s.consequent.body : [s.consequent];
    for (const st of stmts) {
      if (st.type === "ThrowStatement") break;
      const e = st.type === "ExpressionStatement" ? st.expression : undefined;
      if (
        e?.type === "AssignmentExpression" &&
        e.left.type === "Identifier" &&
        e.left.name === name &&
        !isFailure(ev, e.right)
      )
        return { kind: "reassigned", shape: `; if (!${name}) ${name} = …` };
    }
  }
  return null;
}

/** The environment read at `n`, if `n` is a member expression on `process.env`. */
export function envReadAt(ev: JsEvaluator, n: AnyNode): JsEnvRead | undefined {
  const name = ev.envName(n);
  if (!name) return undefined;
  const w = wrapperFallback(ev, n);
  const base = ev.text(n).replace(/\s+/g, "");
  return { node: n, name, fallback: w?.kind ?? null, expr: w ? `${base} ${w.shape}` : base };
}

/** Reads by destructuring: `const { X, Y = "d", Z: z } = process.env`. */
export function destructuredReads(ev: JsEvaluator, n: AnyNode): JsEnvRead[] {
  if (n.type !== "VariableDeclarator" || n.id.type !== "ObjectPattern" || !n.init) return [];
  if (ev.qualify(n.init) !== "process.env") return [];
  const out: JsEnvRead[] = [];
  for (const prop of n.id.properties) {
    if (prop.type !== "Property") continue;
    const name =
      prop.key.type === "Identifier" && !prop.computed
        ? prop.key.name
        : prop.key.type === "Literal"
          ? String(prop.key.value)
          : undefined;
    if (!name) continue;
    const dflt = prop.value.type === "AssignmentPattern" && !isFailure(ev, prop.value.right);
    out.push({
      node: prop,
      name,
      fallback: dflt ? "destructuring-default" : null,
      expr: `const { ${name}${dflt ? " = …" : ""} } = process.env`,
    });
  }
  return out;
}
