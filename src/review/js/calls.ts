/** The abstract value of JavaScript calls (see {@link JsEvaluator.value}). Pure. */
import type { AnyNode, Expression } from "acorn";
import { full } from "acorn-walk";
import {
  asPath,
  concat,
  constantText,
  holeVal,
  joinPath,
  parentOf,
  sameRoot,
  textVal,
  UNKNOWN,
  type Val,
  withVia,
} from "../values.js";
import type { Ctx, JsEvaluator } from "./evaluate.js";

const PASS_THROUGH = new Set(["path.normalize", "url.fileURLToPath", "String", "path.toNamespacedPath"]);
const PASS_THROUGH_METHODS = new Set([
  "trim",
  "trimEnd",
  "trimStart",
  "toString",
  "toLowerCase",
  "normalize",
]);

/** The value of a call: `path.join/resolve/dirname`, `process.cwd()`, `os.tmpdir()`, string methods. */
export function callValue(ev: JsEvaluator, n: AnyNode & { type: "CallExpression" }, c: Ctx): Val {
  if (n.callee.type === "Super") return UNKNOWN;
  // `path.join(out, ...parts)`: the arguments before a spread still fix where the path starts.
  const spreadAt = n.arguments.findIndex((a) => a.type === "SpreadElement");
  if (spreadAt === 0) return UNKNOWN;
  const args = (spreadAt === -1 ? n.arguments : n.arguments.slice(0, spreadAt)) as Expression[];
  const local = n.callee.type === "Identifier" ? localFunction(ev, n.callee) : undefined;
  if (local) return returnValue(ev, local);
  const f = ev.qualify(n.callee);
  const all = () => [...args.map((a) => ev.eval(a, c)), ...(spreadAt === -1 ? [] : [UNKNOWN])];
  if (f === "path.join") return joinPath(all(), false);
  if (f === "path.resolve") return joinPath(all(), true);
  if (f === "path.dirname") return args[0] ? parentOf(ev.eval(args[0], c)) : UNKNOWN;
  if (f && PASS_THROUGH.has(f)) return args[0] ? ev.eval(args[0], c) : UNKNOWN;
  if (f === "process.cwd") return asPath(holeVal({ k: "cwd" }));
  if (f === "os.tmpdir") return asPath(holeVal({ k: "temp" }));
  if (f === "os.homedir") return asPath(holeVal({ k: "home" }));
  if (ev.isArgv(n)) return holeVal({ k: "argv" });
  if (n.callee.type !== "MemberExpression" || n.callee.object.type === "Super") return UNKNOWN;
  const m = ev.memberKey(n.callee);
  const obj = n.callee.object;
  if (m && PASS_THROUGH_METHODS.has(m)) return ev.eval(obj, c);
  if (m === "concat") return concat([ev.eval(obj, c), ...all()]);
  if (m === "at" && ev.isArgv(obj)) return holeVal({ k: "argv" });
  if (m === "join" && obj.type === "ArrayExpression") {
    const sep = args[0] ? constantText(ev.eval(args[0], c)) : ",";
    if (sep === undefined || obj.elements.some((e) => !e || e.type === "SpreadElement")) return UNKNOWN;
    const parts: Val[] = [];
    obj.elements.forEach((e, i) => {
      if (i > 0) parts.push(textVal(sep));
      parts.push(ev.eval(e as Expression, c));
    });
    return concat(parts);
  }
  return UNKNOWN;
}

/** The function a name is bound to (`function f() {}`, `const f = () => …`), if any. */
export function localFunction(ev: JsEvaluator, name: AnyNode & { type: "Identifier" }): AnyNode | undefined {
  const b = ev.tree.lookup(name.name, name);
  if (b?.kind === "def") return b.node;
  if (
    b?.kind === "value" &&
    (b.value.type === "ArrowFunctionExpression" || b.value.type === "FunctionExpression")
  )
    return b.value;
  return undefined;
}

/**
 * What a local function returns, when every `return` (or an arrow's expression body) agrees on
 * where the value starts; otherwise unknown. Parameters are holes; recursion is cut.
 */
export function returnValue(ev: JsEvaluator, fn: AnyNode): Val {
  const cached = ev.returns.get(fn);
  if (cached) return cached;
  ev.returns.set(fn, UNKNOWN);
  const values: Val[] = [];
  const ctx: Ctx = { consume: null, depth: 0 };
  const body = "body" in fn ? (fn.body as AnyNode) : undefined;
  if (body && body.type !== "BlockStatement") values.push(withVia(ev.eval(body, ctx), ev.tree.id(body)));
  else if (body) {
    full(body, (node) => {
      const x = node as AnyNode;
      if (x.type === "ReturnStatement" && x.argument && ev.tree.scope(x) === fn)
        values.push(withVia(ev.eval(x.argument, ctx), ev.tree.id(x.argument)));
    });
  }
  const v = sameRoot(values);
  ev.returns.set(fn, v);
  return v;
}
