/**
 * The JavaScript front end: describes a parsed `main.mjs` as {@link ScriptFacts} for the rules.
 * Pure.
 */
import type { AnyNode, Program } from "acorn";
import { type At, emptyFacts, type ScriptFacts } from "../facts.js";
import { hasSubstance } from "../values.js";
import { browserRefAt, dynamicCodeAt, jsonResultAt } from "./dynamic.js";
import { destructuredReads, envReadAt } from "./env-reads.js";
import { JsEvaluator } from "./evaluate.js";
import { JsTree } from "./scope.js";
import { cacheVariables, earlyExit, isConstantData } from "./shortcuts.js";
import { fileOpsOf } from "./sinks.js";

const STRING_LIKE = new Set([
  "Literal",
  "TemplateLiteral",
  "BinaryExpression",
  "CallExpression",
  "MemberExpression",
  "NewExpression",
]);

/** Describes a parsed JavaScript module. */
export function javascriptFacts(program: Program, src: string): ScriptFacts {
  const facts = emptyFacts("javascript");
  const tree = new JsTree(program);
  const ev = new JsEvaluator(src, tree);
  const at = (n: AnyNode): At => ({
    line: n.loc?.start.line ?? 1,
    column: (n.loc?.start.column ?? 0) + 1,
    node: tree.id(n),
  });
  const consumed = new Set<AnyNode>();

  for (const n of tree.nodes) {
    const parent = tree.parent(n);
    if (STRING_LIKE.has(n.type) && !consumed.has(n)) {
      const directive = parent?.type === "ExpressionStatement" && "directive" in parent && parent.directive;
      if (directive) consumed.add(n);
      else {
        const value = ev.value(n, consumed);
        if (hasSubstance(value)) facts.strings.push({ at: at(n), value });
      }
    }
    const read = envReadAt(ev, n);
    if (read) facts.envReads.push({ at: at(n), name: read.name, expr: read.expr, fallback: read.fallback });
    for (const d of destructuredReads(ev, n))
      facts.envReads.push({ at: at(d.node), name: d.name, expr: d.expr, fallback: d.fallback });
    const dynamic = dynamicCodeAt(ev, n);
    if (dynamic) facts.dynamicCode.push({ at: at(n), ...dynamic });
    const ref = browserRefAt(ev, n);
    if (ref) facts.browserRefs.push({ at: at(n), ref });
    if (n.type === "CallExpression") {
      const ops = fileOpsOf(ev, n);
      const json = jsonResultAt(
        ev,
        n,
        ops.some((o) => o.op === "write"),
      );
      if (json) facts.jsonResults.push({ at: at(n), api: json });
      for (const op of ops) {
        facts.fileOps.push({
          at: at(n),
          op: op.op,
          api: op.api,
          target: ev.value(op.target),
          certain: op.certain,
        });
        const data = n.arguments[1];
        if (op.op === "write" && data && isStringified(ev, data))
          facts.constantOutputs.push({ at: at(n), api: op.api });
      }
    }
  }

  facts.cacheVars = cacheVariables(ev).map((c) => ({ at: at(c.node), name: c.name }));
  const exit = earlyExit(ev);
  if (exit) facts.earlyExits.push({ at: at(exit), api: ev.text(exit).replace(/\s+/g, "") });
  return facts;
}

/** `JSON.stringify(LITERAL)` or a literal container passed as the data of a write. */
function isStringified(ev: JsEvaluator, n: AnyNode): boolean {
  if (n.type === "CallExpression" && n.callee.type !== "Super" && ev.qualify(n.callee) === "JSON.stringify") {
    const first = n.arguments[0];
    return !!first && first.type !== "SpreadElement" && isConstantData(ev, first);
  }
  return false;
}
