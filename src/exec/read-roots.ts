/**
 * The read-root policy: what an untrusted process may read once the launcher confines reads
 * (`ratchet-confine` v2 `--read`). System software, the interpreter's real prefix, the step's or
 * task's own folders and declared inputs; never `$HOME` as a whole, never a `.ratchet/` folder
 * (secrets, the store, blobs). Users add roots in `.ratchet/config.json`:
 *
 * ```json
 * { "sandbox": { "read_roots": ["/data/reference"] } }
 * ```
 *
 * Each configured root must be an absolute path that exists and must not be or contain `$HOME`
 * or a `.ratchet` folder; anything else is refused naming the field (`sandbox.read_roots[N]`).
 */
import { existsSync, readdirSync, readFileSync, realpathSync } from "node:fs";
import { basename, dirname, isAbsolute, join, relative, sep } from "node:path";
import { ErrorCode, RatchetError } from "../core/index.js";

/** System folders every interpreter and shell needs (missing ones are skipped). */
export const SYSTEM_READ_ROOTS: readonly string[] = [
  "/usr",
  "/bin",
  "/sbin",
  "/lib",
  "/lib32",
  "/lib64",
  "/libx32",
  "/opt",
  "/dev/null",
  "/dev/zero",
  "/dev/random",
  "/dev/urandom",
  "/dev/full",
  "/proc/cpuinfo",
  "/proc/meminfo",
  "/proc/stat",
  "/sys/devices/system/cpu",
  "/sys/fs/cgroup",
];

/**
 * The parts of `/etc` programs read (loader, locale, time zone, users, DNS, TLS roots, shells,
 * Python's and git's system settings). Not `/etc` itself: `/etc/shadow`, `/etc/gshadow` and
 * `/etc/ssh` stay unreadable.
 */
export const ETC_READ_ROOTS: readonly string[] = [
  "/etc/ld.so.cache",
  "/etc/ld.so.conf",
  "/etc/ld.so.conf.d",
  "/etc/localtime",
  "/etc/timezone",
  "/etc/locale.alias",
  "/etc/passwd",
  "/etc/group",
  "/etc/nsswitch.conf",
  "/etc/hosts",
  "/etc/host.conf",
  "/etc/resolv.conf",
  "/etc/gai.conf",
  "/etc/protocols",
  "/etc/services",
  "/etc/mime.types",
  "/etc/ssl",
  "/etc/ca-certificates",
  "/etc/pki",
  "/etc/alternatives",
  "/etc/bash.bashrc",
  "/etc/inputrc",
  "/etc/python3",
  "/etc/os-release",
  "/etc/magic",
  "/etc/gitconfig",
];

/** Whether `inner` is `outer` or lies beneath it. */
export function isWithin(outer: string, inner: string): boolean {
  const rel = relative(outer, inner);
  return rel === "" || (!rel.startsWith("..") && !isAbsolute(rel));
}

/** Paths no read root may be, contain, or (for `.ratchet`) lie inside. */
export interface ForbiddenReads {
  /** The user's home folder (`$HOME`): credentials (`~/.ssh`, `~/.aws`, …). */
  home?: string | undefined;
  /** Folders whose contents are secret: the workspace's `.ratchet/`, the store's folder. */
  secretDirs: readonly string[];
}

/**
 * Drops the roots that would expose a forbidden path, and replaces a root that contains a secret
 * folder by its other children (one level: the workflow folder holding `.ratchet/` gives its other
 * entries). A root equal to or containing `$HOME` is dropped (an interpreter prefix INSIDE home,
 * e.g. `~/.pyenv/versions/3.11.7`, is fine). Missing roots are skipped.
 */
export function applyForbidden(roots: readonly string[], forbid: ForbiddenReads): string[] {
  const out: string[] = [];
  const secret = forbid.secretDirs.filter((d) => d !== "");
  for (const root of roots) {
    if (!isAbsolute(root) || !existsSync(root)) continue;
    if (forbid.home && isWithin(root, forbid.home)) continue;
    if (secret.some((d) => isWithin(d, root))) continue;
    const inside = secret.filter((d) => isWithin(root, d));
    if (inside.length === 0) {
      out.push(root);
      continue;
    }
    let names: string[];
    try {
      names = readdirSync(root);
    } catch {
      continue;
    }
    for (const name of names) {
      const child = join(root, name);
      if (inside.some((d) => isWithin(child, d))) continue;
      out.push(child);
    }
  }
  return [...new Set(out)];
}

/** The real prefix of this Node (`/usr` for `/usr/bin/node`, `~/.nvm/versions/node/vX` for nvm). */
export function nodePrefix(execPath: string = process.execPath): string {
  try {
    return dirname(dirname(realpathSync(execPath)));
  } catch {
    return dirname(dirname(execPath));
  }
}

/**
 * The toolchain folders a shell command finds through `PATH`: every absolute `PATH` entry, and for
 * a version manager's shim folder (`~/.pyenv/shims`, `~/.rbenv/shims`, `~/.asdf/shims`) the
 * manager's root, whose scripts and installed versions the shims run. Never a folder that is or
 * contains `$HOME` (applyForbidden drops those), so `~/.ssh` stays closed.
 */
export function pathToolchainRoots(pathEnv: string | undefined): string[] {
  const out: string[] = [];
  for (const dir of (pathEnv ?? "").split(":")) {
    if (!isAbsolute(dir)) continue;
    out.push(dir);
    if (basename(dir) === "shims") out.push(dirname(dir));
  }
  return out;
}

/** The `sandbox` section of `.ratchet/config.json`, validated. */
export interface SandboxConfig {
  /** Extra read roots (absolute, existing). */
  readRoots: string[];
}

function refuse(field: string, message: string): never {
  throw new RatchetError(ErrorCode.InvalidValue, `${field}: ${message}`, { field });
}

/**
 * Validates the `sandbox` section (`undefined`: none). `forbid` gives `$HOME` and the secret
 * folders a root may not be or contain.
 * @throws RatchetError `invalid_value` naming the field (`sandbox`, `sandbox.read_roots[N]`).
 */
export function parseSandboxConfig(raw: unknown, forbid: ForbiddenReads): SandboxConfig {
  if (raw === undefined) return { readRoots: [] };
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) refuse("sandbox", "must be an object");
  for (const key of Object.keys(raw)) {
    if (key !== "read_roots") refuse(`sandbox.${key}`, "unknown field (known: read_roots)");
  }
  const roots = (raw as { read_roots?: unknown }).read_roots;
  if (roots === undefined) return { readRoots: [] };
  if (!Array.isArray(roots)) refuse("sandbox.read_roots", "must be a list of absolute paths");
  return {
    readRoots: roots.map((r: unknown, i) => {
      const field = `sandbox.read_roots[${i}]`;
      if (typeof r !== "string" || r === "") refuse(field, "must be a non-empty string");
      if (!isAbsolute(r)) refuse(field, `${JSON.stringify(r)} is not an absolute path`);
      if (!existsSync(r)) refuse(field, `${r} does not exist`);
      if (forbid.home && isWithin(r, forbid.home)) refuse(field, `${r} contains $HOME (${forbid.home})`);
      for (const d of forbid.secretDirs) {
        if (d !== "" && (isWithin(r, d) || isWithin(d, r)))
          refuse(field, `${r} would expose ${d} (secrets and the store)`);
      }
      return r.length > 1 && r.endsWith(sep) ? r.slice(0, -1) : r;
    }),
  };
}

/**
 * Reads the `sandbox` section of `<workspaceDir>/config.json` (absent or unparsable file, absent
 * section: no extra roots).
 * @throws RatchetError `invalid_value` naming the field.
 */
export function loadSandboxConfig(
  workspaceDir: string,
  home: string | undefined = process.env.HOME,
): SandboxConfig {
  const path = join(workspaceDir, "config.json");
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch {
    return { readRoots: [] };
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    // Not JSON: no extra roots (the defaults are the stricter choice); the bridge, which needs the
    // file, reports the error where it is used.
    return { readRoots: [] };
  }
  const section =
    typeof json === "object" && json !== null ? (json as { sandbox?: unknown }).sandbox : undefined;
  return parseSandboxConfig(section, { home, secretDirs: [workspaceDir] });
}

/** The nearest `.ratchet/` folder at or above `start` (a workspace), or undefined. */
export function ratchetDirAbove(start: string): string | undefined {
  let cur = start;
  for (;;) {
    const candidate = join(cur, ".ratchet");
    if (existsSync(candidate)) return candidate;
    const up = dirname(cur);
    if (up === cur) return undefined;
    cur = up;
  }
}

/** What a process's read roots are made of. */
export interface ReadRootsInput {
  /** The interpreters' real prefixes and folders (python's `sys.base_prefix`, node's prefix, …). */
  interpreters: readonly string[];
  /** The step's or task's own folders: code, output, dependencies, workflow folder, worktree. */
  own: readonly string[];
  /** Declared inputs and `sandbox.read_roots`. */
  extra: readonly string[];
  forbid: ForbiddenReads;
}

/** The read roots of one process: system, `/etc` parts, interpreters, own folders, extras — minus the forbidden. */
export function readRoots(input: ReadRootsInput): string[] {
  return applyForbidden(
    [...SYSTEM_READ_ROOTS, ...ETC_READ_ROOTS, ...input.interpreters, ...input.own, ...input.extra],
    input.forbid,
  );
}
