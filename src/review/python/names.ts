/** Names and literal helpers of the Python front end: canonical module names, constants, escapes. Pure. */
import { concat, textVal, UNKNOWN, type Val } from "../values.js";

/** Builtins review knows about (a bare name that is not bound resolves to `builtins.<name>`). */
export const BUILTINS: ReadonlySet<string> = new Set([
  "open",
  "getattr",
  "__import__",
  "vars",
  "dict",
  "list",
  "sorted",
  "reversed",
  "str",
  "exit",
  "quit",
  "print",
  "len",
  "eval",
  "exec",
  "compile",
  "execfile",
  "globals",
  "locals",
  "setattr",
  "delattr",
  "breakpoint",
]);

/** Names a star import of these modules may bring in. */
export const STAR_MEMBERS: Record<string, ReadonlySet<string>> = {
  os: new Set([
    "environ",
    "getenv",
    "path",
    "makedirs",
    "mkdir",
    "remove",
    "unlink",
    "rename",
    "replace",
    "getcwd",
    "sep",
    "pardir",
  ]),
  "os.path": new Set(["join", "dirname", "abspath", "normpath", "realpath", "expanduser"]),
  pathlib: new Set(["Path", "PurePath", "PosixPath"]),
  shutil: new Set(["copy", "copy2", "copyfile", "copytree", "move", "rmtree"]),
  json: new Set(["dump", "dumps", "load", "loads"]),
  sys: new Set(["argv", "exit"]),
};

/** Canonical names: `posixpath.join` → `os.path.join`, `pathlib.PurePath` → `pathlib.Path`. */
export function canonical(q: string): string {
  return q
    .replace(/^(posixpath|ntpath)(?=\.|$)/, "os.path")
    .replace(/^pathlib\.(Pure|Posix|Windows|PurePosix|PureWindows)Path(?=\.|$)/, "pathlib.Path")
    .replace(/^(io|codecs)\.open$/, "builtins.open")
    .replace(/^os\.environb(?=\.|$)/, "os.environ")
    .replace(/^os\.getenvb$/, "os.getenv");
}

/** Module attributes with a known text value (`os.pardir` is ".."). */
export const CONSTANTS: Record<string, string> = {
  "os.sep": "/",
  "os.path.sep": "/",
  "os.curdir": ".",
  "os.path.curdir": ".",
  "os.pardir": "..",
  "os.devnull": "/dev/null",
  "os.path.pardir": "..",
};

/** Calls whose value is their first argument's, as a path. */
export const PASS_THROUGH = new Set([
  "os.path.abspath",
  "os.path.normpath",
  "os.path.realpath",
  "os.path.expanduser",
  "os.path.expandvars",
  "os.path.normcase",
  "os.fspath",
  "builtins.str",
]);

/** Methods whose value is their receiver's (`Path.resolve()`, `str.strip()`). */
export const PASS_THROUGH_METHODS = new Set([
  "resolve",
  "absolute",
  "expanduser",
  "with_suffix",
  "as_posix",
  "strip",
  "rstrip",
  "lstrip",
  "lower",
  "upper",
  "__str__",
  "__fspath__",
]);

/**
 * Replaces each placeholder matched by `re` with the next argument (unknown when they run out).
 * `%%` is a literal `%`; `\u0001`/`\u0002` stand for the escaped braces of `.format`.
 */
export function substitute(template: string, re: RegExp, args: readonly Val[]): Val {
  const lit = (s: string) => textVal(s.replace(/\u0001/g, "{").replace(/\u0002/g, "}"));
  const parts: Val[] = [];
  let last = 0;
  let i = 0;
  for (const m of template.matchAll(re)) {
    const at = m.index ?? 0;
    parts.push(lit(template.slice(last, at)));
    parts.push(m[0] === "%%" ? textVal("%") : (args[i++] ?? UNKNOWN));
    last = at + m[0].length;
  }
  parts.push(lit(template.slice(last)));
  return concat(parts);
}

const ESCAPES: Record<string, string> = {
  n: "\n",
  t: "\t",
  r: "\r",
  "0": "\0",
  "\\": "\\",
  "'": "'",
  '"': '"',
};

/** Decodes the common backslash escapes of a Python string literal. */
export function decodeEscapes(s: string): string {
  if (!s.includes("\\")) return s;
  return s.replace(/\\(x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|\n|.)/g, (all, e: string) => {
    if (e.startsWith("x") || e.startsWith("u")) return String.fromCharCode(Number.parseInt(e.slice(1), 16));
    if (e === "\n") return "";
    return ESCAPES[e] ?? all;
  });
}
