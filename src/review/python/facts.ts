/**
 * The Python front end: one pass over the plain syntax tree that describes the script as
 * {@link ScriptFacts} for the rules. Pure.
 */
import { type At, emptyFacts, type ScriptFacts } from "../facts.js";
import { hasSubstance } from "../values.js";
import { browserRefAt, dynamicCodeAt, jsonResultAt } from "./dynamic.js";
import { envRead } from "./env-reads.js";
import { PyEvaluator } from "./evaluate.js";
import { Scopes } from "./scope.js";
import { cacheVariables, earlyExit, isConstantLiteral } from "./shortcuts.js";
import { fileOpsOf } from "./sinks.js";
import { field, named, type PyNode, preorder, unparen } from "./tree.js";

/** Node types whose value may be a string or a path worth judging. */
const STRING_LIKE = new Set([
  "string",
  "concatenated_string",
  "binary_operator",
  "call",
  "attribute",
  "subscript",
]);

/** A bare string statement (a docstring, or a string used as a comment). */
function isDocstring(n: PyNode): boolean {
  const p = n.parent;
  return (
    (n.type === "string" || n.type === "concatenated_string") &&
    p?.type === "expression_statement" &&
    named(p).length === 1
  );
}

const DUMPS = new Set(["json.dump", "pickle.dump", "yaml.dump", "yaml.safe_dump"]);
const SERIALISE = new Set(["json.dumps", "yaml.dump", "yaml.safe_dump"]);

/** Describes a parsed Python script. */
export function pythonFacts(root: PyNode, src: string): ScriptFacts {
  const facts = emptyFacts("python");
  const ev = new PyEvaluator(src, new Scopes(root, src));
  const at = (n: PyNode): At => ({ line: n.row + 1, column: n.column + 1, node: n.id });
  const consumed = new Set<number>();

  preorder(root, (n) => {
    if (STRING_LIKE.has(n.type) && !consumed.has(n.id)) {
      if (isDocstring(n)) consumed.add(n.id);
      else {
        const value = ev.value(n, consumed);
        if (hasSubstance(value)) facts.strings.push({ at: at(n), value });
      }
    }
    if (n.type === "call" || n.type === "subscript") {
      const read = envRead(ev, n);
      if (read?.name)
        facts.envReads.push({ at: at(n), name: read.name, expr: read.expr, fallback: read.fallback });
    }
    const dynamic = dynamicCodeAt(ev, n);
    if (dynamic) facts.dynamicCode.push({ at: at(n), ...dynamic });
    const ref = browserRefAt(ev, n);
    if (ref) facts.browserRefs.push({ at: at(n), ref });
    if (n.type === "call") {
      const json = jsonResultAt(ev, n);
      if (json) facts.jsonResults.push({ at: at(n), api: json });
      for (const op of fileOpsOf(ev, n)) {
        facts.fileOps.push({
          at: at(n),
          op: op.op,
          api: op.api,
          target: ev.value(op.target),
          certain: op.certain,
        });
      }
      const api = constantOutput(ev, n);
      if (api) facts.constantOutputs.push({ at: at(n), api });
    }
  });

  facts.cacheVars = cacheVariables(ev, at);
  const exit = earlyExit(ev);
  if (exit) facts.earlyExits.push({ at: at(exit.node), api: exit.api });
  return facts;
}

/** `json.dump({...literal...}, f)`, `f.write(json.dumps(LITERAL))`, `p.write_text(json.dumps(…))`. */
function constantOutput(ev: PyEvaluator, call: PyNode): string | undefined {
  const fn = field(call, "function");
  if (!fn) return undefined;
  const q = ev.qualify(fn);
  const first = ev.args(call).positional[0];
  if (!first) return undefined;
  if (q && DUMPS.has(q)) return isConstantData(ev, first) ? `${q}()` : undefined;
  const method = fn.type === "attribute" ? ev.text(field(fn, "attribute") ?? fn) : "";
  if (method !== "write" && method !== "write_text") return undefined;
  const inner = unparen(first);
  if (inner.type !== "call") return undefined;
  const innerFn = field(inner, "function");
  const iq = innerFn && ev.qualify(innerFn);
  const data = ev.args(inner).positional[0];
  return iq && SERIALISE.has(iq) && data && isConstantData(ev, data) ? `${method}(${iq}(…))` : undefined;
}

/** A non-empty literal container, inline or through a module-level name. */
function isConstantData(ev: PyEvaluator, n: PyNode): boolean {
  let x = unparen(n);
  if (x.type === "identifier") {
    const b = ev.scopes.lookup(ev.text(x), x);
    if (b?.kind !== "value") return false;
    x = unparen(b.value);
  }
  return ["dictionary", "list", "tuple"].includes(x.type) && named(x).length > 0 && isConstantLiteral(ev, x);
}
