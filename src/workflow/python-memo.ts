/**
 * The real `python3`'s prefixes, remembered across runs of one workspace. Asking the interpreter
 * (`resolvePython`: a `python3 -c …` start, ~50 ms here) is the first link of the chain a run's
 * first script waits for; its answer depends only on the binary and the files next to it, so it is
 * kept in `<workspace>/.ratchet/cache/python/` and used again while nothing it depends on changed.
 *
 * Never trusted to widen a sandbox. An entry is used only when all of this holds, checked at every
 * use; anything else (no file, unreadable, another key, a root not allowed) asks the interpreter:
 * - the file is a regular file of ours (same uid, no group/other bits, not a link), small, JSON;
 * - its key equals the current one: PATH, the PATH entry (`lstat`: dev, ino, ctime), the real
 *   binary (`realpath`; dev, ino, size, mtime, ctime), the bytes of a `pyvenv.cfg` beside the entry
 *   or one folder up, and the variables that move prefixes (PYTHONHOME, PYTHONPATH, …);
 * - the PATH entry is the interpreter itself (its real path is the one Python reports), not a
 *   version manager's shim, whose answer depends on files the key does not cover;
 * - every root is one that Python's own path search finds on the file system now
 *   ({@link allowedRoots}): the real binary's folder, the folder of that `pyvenv.cfg`, and the
 *   first folder above the binary that holds its standard library (`lib/python3.N/os.py`) or its
 *   `lib-dynload` — never `/`. A planted entry can name nothing wider than the interpreter would.
 * An answer that would not pass these checks is not written. Writes are atomic (a temp file of
 * mode 0600 in a 0700 folder, renamed); no confined script can reach the folder (the workspace's
 * `.ratchet/` is never a read or write root of a step).
 */
import { createHash } from "node:crypto";
import {
  closeSync,
  constants,
  fstatSync,
  lstatSync,
  mkdirSync,
  openSync,
  readFileSync,
  readSync,
  realpathSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { basename, dirname, join } from "node:path";
import { findExecutable, type Interpreter, resolvePython } from "../exec/index.js";

/** The variables that change an interpreter's prefixes or its search path. */
const PREFIX_ENV_KEYS = [
  "PYTHONHOME",
  "PYTHONPATH",
  "PYTHONPLATLIBDIR",
  "PYTHONEXECUTABLE",
  "PYTHONNOUSERSITE",
  "PYTHONUSERBASE",
  "PYTHONSAFEPATH",
] as const;
const MAX_ENTRY_BYTES = 16 * 1024;
const FORMAT = 1;

const memo = new Map<string, Promise<Interpreter | undefined>>();

/** Options of {@link rememberedPython}; for tests. */
export interface PythonMemoOptions {
  /** Default `resolvePython` (asks the interpreter). */
  ask?: (env: NodeJS.ProcessEnv) => Promise<Interpreter | undefined>;
  /** The per-process memo. Default the module's (one answer per folder and PATH per process). */
  memo?: Map<string, Promise<Interpreter | undefined>>;
}

function readSmall(path: string): string | null {
  try {
    return readFileSync(path, "utf8").slice(0, MAX_ENTRY_BYTES);
  } catch {
    return null;
  }
}

function realOr(p: string): string | undefined {
  try {
    return realpathSync(p);
  } catch {
    return undefined;
  }
}

/** What the answer depends on, as one string; undefined when the PATH entry cannot be read. */
function keyOf(env: NodeJS.ProcessEnv, onPath: string): { key: string; real: string } | undefined {
  try {
    const link = lstatSync(onPath, { bigint: true });
    const real = realpathSync(onPath);
    const bin = statSync(real, { bigint: true });
    const key = JSON.stringify({
      format: FORMAT,
      path: env.PATH ?? "",
      onPath,
      link: [String(link.dev), String(link.ino), String(link.ctimeNs)],
      real,
      bin: [String(bin.dev), String(bin.ino), String(bin.size), String(bin.mtimeNs), String(bin.ctimeNs)],
      pyvenv: [
        readSmall(join(dirname(onPath), "pyvenv.cfg")),
        readSmall(join(dirname(dirname(onPath)), "pyvenv.cfg")),
      ],
      vars: PREFIX_ENV_KEYS.map((k) => env[k] ?? null),
    });
    return { key, real };
  } catch {
    return undefined;
  }
}

/** The first folder from `from` up (never `/`) holding `landmark`, as a real path. */
function firstAbove(from: string, landmark: string): string | undefined {
  for (let dir = from; dir !== dirname(dir); dir = dirname(dir)) {
    try {
      statSync(join(dir, landmark));
      return realOr(dir);
    } catch {
      // not here: one folder up
    }
  }
  return undefined;
}

/**
 * The roots Python's own path search finds for the interpreter at `onPath` (real path `real`):
 * the binary's folder, a venv's folder (its `pyvenv.cfg` beside the entry or one up), the first
 * folder above the binary with its standard library or `lib-dynload`. Never `/`.
 */
export function allowedRoots(onPath: string, real: string): Set<string> {
  const allowed = new Set<string>([dirname(real)]);
  for (const dir of [dirname(onPath), dirname(dirname(onPath))]) {
    try {
      if (dir !== "/" && statSync(join(dir, "pyvenv.cfg")).isFile()) {
        const r = realOr(dir);
        if (r && r !== "/") allowed.add(r);
      }
    } catch {
      // no venv here
    }
  }
  const version = /^python(3\.\d+)$/.exec(basename(real))?.[1];
  if (version) {
    for (const landmark of [
      join("lib", `python${version}`, "os.py"),
      join("lib", `python${version}`, "lib-dynload"),
    ]) {
      const found = firstAbove(dirname(real), landmark);
      if (found && found !== "/") allowed.add(found);
    }
  }
  allowed.delete("/");
  return allowed;
}

/** Whether the file starts with `#!` (a script: what it runs depends on files the key does not cover). */
function isScript(real: string): boolean {
  let fd: number | undefined;
  try {
    fd = openSync(real, constants.O_RDONLY | constants.O_NONBLOCK);
    const head = Buffer.alloc(2);
    return readSync(fd, head, 0, 2, 0) === 2 && head.toString("latin1") === "#!";
  } catch {
    return true;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/**
 * Whether `answer` is one the cache may hold and give out for the interpreter at `real`: Python's
 * own answer (it names a prefix besides the binary's folder — `resolvePython`'s fallback for an
 * answer it could not read, the PATH entry and its folder, never does and is never remembered),
 * from the binary itself (not a `#!` script), every root allowed.
 */
function fits(answer: Interpreter, onPath: string, real: string): boolean {
  if (typeof answer.executable !== "string" || !answer.executable.startsWith("/")) return false;
  if (realOr(answer.executable) !== real) return false;
  if (!Array.isArray(answer.roots) || !answer.roots.includes(dirname(real))) return false;
  if (!answer.roots.some((r) => r !== dirname(real))) return false;
  const allowed = allowedRoots(onPath, real);
  if (!answer.roots.every((r) => typeof r === "string" && allowed.has(r))) return false;
  return !isScript(real);
}

/** In a folder of its own (`<cache>/python/`, 0700): `<cache>` is shared with the review cache. */
function entryFile(cacheDir: string, key: string): string {
  return join(
    cacheDir,
    "python",
    `python3-${createHash("sha256").update(key).digest("hex").slice(0, 32)}.json`,
  );
}

/** The entry's interpreter when the file is ours, unchanged in shape and for this key. */
function readEntry(file: string, key: string): Interpreter | undefined {
  let fd: number;
  try {
    fd = openSync(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch {
    return undefined;
  }
  try {
    const st = fstatSync(fd);
    const uid = process.getuid?.();
    if (!st.isFile() || (uid !== undefined && st.uid !== uid) || (st.mode & 0o077) !== 0) return undefined;
    if (st.size > MAX_ENTRY_BYTES) return undefined;
    const buf = Buffer.alloc(st.size);
    if (readSync(fd, buf, 0, st.size, 0) !== st.size) return undefined;
    const parsed = JSON.parse(buf.toString("utf8")) as {
      key?: unknown;
      executable?: unknown;
      roots?: unknown;
    };
    if (parsed.key !== key || typeof parsed.executable !== "string" || !Array.isArray(parsed.roots))
      return undefined;
    return { executable: parsed.executable, roots: parsed.roots as string[] };
  } catch {
    return undefined;
  } finally {
    closeSync(fd);
  }
}

function writeEntry(file: string, key: string, answer: Interpreter): void {
  const tmp = `${file}.${process.pid}.tmp`;
  try {
    mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
    const dir = lstatSync(dirname(file));
    const uid = process.getuid?.();
    if (!dir.isDirectory() || (uid !== undefined && dir.uid !== uid) || (dir.mode & 0o022) !== 0) return;
    writeFileSync(tmp, JSON.stringify({ key, executable: answer.executable, roots: answer.roots }), {
      mode: 0o600,
      flag: "wx",
    });
    renameSync(tmp, file);
  } catch {
    // a cache that cannot be written is asked again next run
    rmSync(tmp, { force: true });
  }
}

/**
 * The real `python3` of `env.PATH`, as `resolvePython` answers, from `cacheDir` when an entry of
 * an earlier run still holds (see the file's comment); else asked, and remembered when it may be.
 * One answer per process for each folder and PATH. Without `cacheDir`, `resolvePython` alone.
 */
export function rememberedPython(
  env: NodeJS.ProcessEnv,
  cacheDir: string | undefined,
  opts: PythonMemoOptions = {},
): Promise<Interpreter | undefined> {
  const ask = opts.ask ?? ((e: NodeJS.ProcessEnv) => resolvePython(e));
  if (!cacheDir) return ask(env);
  const m = opts.memo ?? memo;
  const memoKey = `${cacheDir}\0${env.PATH ?? ""}\0${PREFIX_ENV_KEYS.map((k) => env[k] ?? "").join("\0")}`;
  const known = m.get(memoKey);
  if (known) return known;
  const found = (async (): Promise<Interpreter | undefined> => {
    const onPath = findExecutable("python3", env.PATH);
    const before = onPath ? keyOf(env, onPath) : undefined;
    if (!onPath || !before) return ask(env);
    const file = entryFile(cacheDir, before.key);
    const kept = readEntry(file, before.key);
    if (kept && fits(kept, onPath, before.real)) return kept;
    const answer = await ask(env);
    // Written only when nothing changed while it was asked, and the answer is one it may give out.
    if (answer && keyOf(env, onPath)?.key === before.key && fits(answer, onPath, before.real))
      writeEntry(file, before.key, answer);
    return answer;
  })();
  m.set(memoKey, found);
  return found;
}
