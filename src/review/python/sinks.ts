/**
 * Python calls that write or read files, and the path each one touches: `open(…, "w")` (any
 * argument form), `os.makedirs`, `os.rename/replace` (destination), `shutil.copy/move/copytree`
 * (destination), `shutil.rmtree`, `Path(…).write_text/write_bytes/touch/mkdir/unlink/open("w")`,
 * pandas/numpy/matplotlib savers, `zipfile`, `tarfile`, `sqlite3.connect`; reads for R7. Pure.
 */
import type { FileOpFact } from "../facts.js";
import { constantText, isUnknown, type Val } from "../values.js";
import type { PyEvaluator } from "./evaluate.js";
import { arg, type CallArgs, field, type PyNode } from "./tree.js";

export interface PyFileOp {
  op: FileOpFact["op"];
  api: string;
  target: PyNode;
  /** The receiver is the target (`Path(p).write_text()`); the target node is the receiver. */
  certain: boolean;
}

/** Functions by canonical name: which argument is written (index, then keyword names). */
const WRITE_FUNCTIONS: Record<string, [number, ...string[]]> = {
  "os.makedirs": [0, "name"],
  "os.mkdir": [0, "path"],
  "os.remove": [0, "path"],
  "os.unlink": [0, "path"],
  "os.rmdir": [0, "path"],
  "os.removedirs": [0, "name"],
  "os.truncate": [0, "path"],
  "os.mkfifo": [0, "path"],
  "os.rename": [1, "dst"],
  "os.renames": [1, "new"],
  "os.replace": [1, "dst"],
  "os.symlink": [1, "dst"],
  "os.link": [1, "dst"],
  "shutil.copy": [1, "dst"],
  "shutil.copy2": [1, "dst"],
  "shutil.copyfile": [1, "dst"],
  "shutil.copytree": [1, "dst"],
  "shutil.move": [1, "dst"],
  "shutil.rmtree": [0, "path"],
  "shutil.make_archive": [0, "base_name"],
  "numpy.save": [0, "file"],
  "numpy.savetxt": [0, "fname"],
  "numpy.savez": [0, "file"],
  "numpy.savez_compressed": [0, "file"],
  "urllib.request.urlretrieve": [1, "filename"],
  "logging.FileHandler": [0, "filename"],
  "logging.handlers.RotatingFileHandler": [0, "filename"],
  "logging.handlers.TimedRotatingFileHandler": [0, "filename"],
  // Keyword only: index -1 never matches a positional argument.
  "logging.basicConfig": [-1, "filename"],
};

const READ_FUNCTIONS: Record<string, [number, ...string[]]> = {
  "os.listdir": [0, "path"],
  "os.scandir": [0, "path"],
  "os.walk": [0, "top"],
  "glob.glob": [0, "pathname"],
  "glob.iglob": [0, "pathname"],
  "shutil.copy": [0, "src"],
  "shutil.copy2": [0, "src"],
  "shutil.copyfile": [0, "src"],
  "shutil.copytree": [0, "src"],
  "pandas.read_csv": [0, "filepath_or_buffer"],
  "pandas.read_json": [0, "path_or_buf"],
  "pandas.read_excel": [0, "io"],
  "pandas.read_parquet": [0, "path"],
  "numpy.load": [0, "file"],
  "numpy.loadtxt": [0, "fname"],
};

/** Methods that write their receiver (`Path(...).write_text(...)`). */
const WRITE_RECEIVER = new Set([
  "write_text",
  "write_bytes",
  "touch",
  "mkdir",
  "unlink",
  "rmdir",
  "symlink_to",
  "hardlink_to",
]);
const READ_RECEIVER = new Set(["read_text", "read_bytes", "iterdir", "glob", "rglob"]);
/** Methods that write their first argument (`df.to_csv(path)`, `fig.savefig(path)`). */
const WRITE_FIRST_ARG = new Set([
  "to_csv",
  "to_json",
  "to_excel",
  "to_parquet",
  "to_pickle",
  "to_feather",
  "to_html",
  "to_xml",
  "to_markdown",
  "savefig",
  "save",
]);

/** True for a mode string that writes: `w`, `a`, `x` or `+`. */
const writesMode = (mode: string): boolean => /[wax+]/.test(mode);

/** Normalises module aliases commonly imported under short names. */
function lib(q: string): string {
  return q.replace(/^np\./, "numpy.").replace(/^pd\./, "pandas.");
}

/** The file operations a call performs (usually zero or one). */
export function fileOpsOf(ev: PyEvaluator, call: PyNode): PyFileOp[] {
  const fn = field(call, "function");
  if (!fn) return [];
  const q = ev.qualify(fn);
  const a = ev.args(call);
  const out: PyFileOp[] = [];
  const add = (op: PyFileOp["op"], api: string, target: PyNode | undefined, certain = true) => {
    if (target) out.push({ op, api, target, certain });
  };
  if (q) {
    const name = lib(q);
    const short = `${name.replace(/^builtins\./, "")}()`;
    if (name === "builtins.open") {
      const mode = modeOf(ev, arg(a, 1, "mode"));
      add(mode.write ? "write" : "read", "open()", arg(a, 0, "file"), mode.certain);
    } else if (name === "os.open") {
      const flags = arg(a, 1, "flags");
      const text = flags ? ev.text(flags) : "";
      if (/O_(WRONLY|RDWR|CREAT|APPEND|TRUNC)/.test(text)) add("write", "os.open()", arg(a, 0, "path"));
    } else if (name === "zipfile.ZipFile" || name === "tarfile.open") {
      const mode = modeOf(ev, arg(a, 1, "mode"));
      add(mode.write ? "write" : "read", short, arg(a, 0, "file", "name"), mode.certain);
    } else if (name === "sqlite3.connect") {
      const db = arg(a, 0, "database");
      if (db && constantText(ev.value(db)) !== ":memory:") add("write", short, db);
    }
    const w = WRITE_FUNCTIONS[name];
    if (w) add("write", short, arg(a, ...w));
    const r = READ_FUNCTIONS[name];
    if (r) add("read", short, arg(a, ...r));
    if (out.length) return out;
  }
  if (fn.type === "attribute") methodOps(ev, fn, a, add);
  return out;
}

function methodOps(
  ev: PyEvaluator,
  fn: PyNode,
  a: CallArgs,
  add: (op: PyFileOp["op"], api: string, target: PyNode | undefined, certain?: boolean) => void,
): void {
  const obj = field(fn, "object");
  const method = field(fn, "attribute");
  if (!obj || !method) return;
  const m = ev.text(method);
  if (WRITE_RECEIVER.has(m)) {
    add("write", `Path.${m}()`, obj);
    return;
  }
  if (READ_RECEIVER.has(m)) {
    add("read", `Path.${m}()`, obj);
    return;
  }
  const receiver = (): Val => ev.value(obj);
  if (m === "open" && receiver().path) {
    const mode = modeOf(ev, arg(a, 0, "mode"));
    add(mode.write ? "write" : "read", "Path.open()", obj, mode.certain);
    return;
  }
  // Path.rename/replace take one argument; str.replace takes two.
  if ((m === "rename" || m === "replace") && a.positional.length + a.keywords.size === 1 && receiver().path) {
    add("write", `Path.${m}()`, arg(a, 0, "target"));
    return;
  }
  if (WRITE_FIRST_ARG.has(m)) {
    const target = arg(a, 0, "path_or_buf", "path", "fname", "excel_writer", "filename", "fp");
    // `save(x)` is only a file write when x looks like a path.
    if (target && (m !== "save" || !isUnknown(ev.value(target)))) add("write", `.${m}()`, target);
  }
}

/** Whether an `open` mode writes; `certain` is false when the mode is not a literal. */
function modeOf(ev: PyEvaluator, mode: PyNode | undefined): { write: boolean; certain: boolean } {
  if (!mode) return { write: false, certain: true };
  const text = constantText(ev.value(mode));
  if (text === undefined) return { write: true, certain: false };
  return { write: writesMode(text), certain: true };
}
