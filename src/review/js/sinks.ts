/**
 * JavaScript calls that write or read files: `fs.*Sync`, callback `fs.*`, `fs.promises.*` and
 * `fs/promises` under any import form, with the path argument each touches. Pure.
 */
import type { AnyNode, Expression } from "acorn";
import type { FileOpFact } from "../facts.js";
import { constantText } from "../values.js";
import type { JsEvaluator } from "./evaluate.js";

export interface JsFileOp {
  op: FileOpFact["op"];
  api: string;
  target: AnyNode;
  certain: boolean;
}

/** fs function → index of the path argument it writes. */
const WRITES: Record<string, number> = {
  writeFile: 0,
  appendFile: 0,
  createWriteStream: 0,
  mkdir: 0,
  rm: 0,
  rmdir: 0,
  unlink: 0,
  truncate: 0,
  utimes: 0,
  rename: 1,
  copyFile: 1,
  cp: 1,
  symlink: 1,
  link: 1,
  outputFile: 0,
  outputJson: 0,
  writeJson: 0,
  writeJSON: 0,
  ensureDir: 0,
  emptyDir: 0,
  remove: 0,
};

/** fs function → index of the path argument it reads. */
const READS: Record<string, number> = {
  readFile: 0,
  readdir: 0,
  exists: 0,
  stat: 0,
  lstat: 0,
  createReadStream: 0,
  access: 0,
  copyFile: 0,
  cp: 0,
  readJson: 0,
  readJSON: 0,
  opendir: 0,
};

/** `fs.writeFileSync` / `fs.promises.writeFile` / `fs.writeFile` → `writeFile`. */
function fsFunction(q: string | undefined): string | undefined {
  const m = q && /^fs(?:\.promises)?\.(\w+?)(Sync)?$/.exec(q);
  return m ? m[1] : undefined;
}

const writesFlags = (flags: string): boolean => /[wax+]/.test(flags);

export function fileOpsOf(ev: JsEvaluator, call: AnyNode): JsFileOp[] {
  if (call.type !== "CallExpression" || call.callee.type === "Super") return [];
  const q = ev.qualify(call.callee);
  const fn = fsFunction(q);
  if (!fn || !q) return [];
  const args = call.arguments;
  const at = (i: number): Expression | undefined => {
    const a = args[i];
    return a && a.type !== "SpreadElement" ? a : undefined;
  };
  const api = `${q}()`;
  const out: JsFileOp[] = [];
  if (fn === "open") {
    const flags = at(1);
    const text = flags ? constantText(ev.value(flags)) : "r";
    const target = at(0);
    if (target)
      out.push({
        op: text === undefined || writesFlags(text) ? "write" : "read",
        api,
        target,
        certain: text !== undefined,
      });
    return out;
  }
  const w = WRITES[fn];
  const wt = w === undefined ? undefined : at(w);
  if (wt) out.push({ op: "write", api, target: wt, certain: true });
  const r = READS[fn];
  const rt = r === undefined ? undefined : at(r);
  if (rt) out.push({ op: "read", api, target: rt, certain: true });
  return out;
}
