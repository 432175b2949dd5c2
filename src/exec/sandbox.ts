/**
 * Write scope at run time. Static review is a lint; this is the boundary: a learned script may
 * write only under its step output folder (and a private temporary folder).
 *
 * - Python runs under one of two launchers, probed in this order:
 *   1. `ratchet-confine` (built from `native/confine.c` by `npm run build`): Landlock confines every
 *      write to the step output folder, a private `TMPDIR` and `/dev/null`; a seccomp filter keeps
 *      the script in its process group (setsid/setpgid fail), so a time-out's group kill reaches
 *      everything it started; on Landlock ABI 6+ it cannot signal processes outside its sandbox; a
 *      supervisor kills the group when Ratchet dies. No namespaces, so it costs about a millisecond.
 *   2. bubblewrap: the whole file system read-only, a fresh `/tmp`, the step output folder bound
 *      writable, its own pid namespace, killed with its parent (about 9 ms per script here).
 *   The network stays in both, so a script can reach the loopback tool bridge.
 * - JavaScript runs under Node's permission model: reads anywhere, writes only under the step
 *   output folder, no child processes, no workers. The network stays too (`--allow-net` on Node
 *   versions whose permission model covers the network), for the same reason.
 *
 * {@link detectSandbox} probes once per process by actually starting each sandbox
 * (`ratchet-confine --probe`, `bwrap … true`, `node --permission -e 0`) and caches the answer.
 * Where none works the step still runs with static review only, and the run says so.
 * `RATCHET_SANDBOX=off` turns enforcement off on purpose; `RATCHET_SANDBOX=landlock` or
 * `=bubblewrap` allows only that launcher for Python.
 */
import { accessSync, constants, existsSync, statSync } from "node:fs";
import { delimiter, isAbsolute, join } from "node:path";
import { findAbove } from "../core/index.js";
import {
  type ConfineFeatures,
  type Confinement,
  compileConfinement,
  type Launcher,
  parseProbe,
  Supervise,
} from "./door.js";
import { buildEnv } from "./env.js";
import { DEFAULT_EXEC_TIMEOUT_MS, DEFAULT_KILL_GRACE_MS, PROBE_TIMEOUT_MS } from "./limits.js";
import { realProcessRunner } from "./process-runner.js";
import type { ProcessRunner } from "./types.js";

export type ScriptLanguage = "python" | "javascript";
export type PythonProtection = "landlock" | "bubblewrap" | "none";
/**
 * `landlock+node-permission`: the script runs under `ratchet-confine` AND Node's permission model
 * (so `process.kill(process.ppid, …)` and reads of other processes' `/proc` fail as for Python).
 */
export type JavascriptProtection = "landlock+node-permission" | "landlock" | "node-permission" | "none";

/** What write protection is active for each script language, and why. */
export interface SandboxInfo {
  python: PythonProtection;
  javascript: JavascriptProtection;
  /** One sentence per language: what protects writes, or why nothing does. */
  reason: string;
  /** Absolute path of `bwrap` when `python` is `bubblewrap`. */
  bwrapPath?: string;
  /** Absolute path of `ratchet-confine` when `python` is `landlock`. */
  confinePath?: string;
  /** The kernel's Landlock ABI version when `ratchet-confine` works (6+ also scopes signals). */
  landlockAbi?: number;
  /** What the built `ratchet-confine` enforces here (its `--probe`), when it works. */
  confineFeatures?: ConfineFeatures;
  /** The permission flag this Node accepts (`--permission` from Node 22/23, `--experimental-permission` on 20). */
  nodePermissionFlag?: string;
  /** Whether this Node accepts `--disable-warning=ExperimentalWarning` (keeps the script's stderr clean). */
  nodeDisableWarning?: boolean;
  /**
   * Whether this Node's permission model covers the network (Node 25+): scripts then get
   * `--allow-net`, or they could not reach the tool bridge.
   */
  nodeAllowNet?: boolean;
  /**
   * Whether this Node accumulates repeated `--allow-fs-read=PATH` flags: scripts then read only
   * their read roots through Node's permission model too (on every launcher, v1 included).
   */
  nodeReadRoots?: boolean;
}

export interface DetectSandboxOptions {
  /** Only probe these languages (the others report `none` with reason "not probed"). Default both. */
  languages?: readonly ScriptLanguage[];
  /** Environment to read `PATH` and `RATCHET_SANDBOX` from. Default `process.env`. */
  env?: NodeJS.ProcessEnv;
  runner?: ProcessRunner;
  /** Probe again instead of returning the cached answer. */
  refresh?: boolean;
}

interface PythonProbe {
  p: PythonProtection;
  why: string;
  bwrap?: string;
  confine?: string;
  abi?: number;
  features?: ConfineFeatures;
}
const pythonCache = new Map<string, Promise<PythonProbe>>();
const jsCache = new Map<
  string,
  Promise<{
    j: JavascriptProtection;
    why: string;
    flag?: string;
    disableWarning?: boolean;
    allowNet?: boolean;
    readRoots?: boolean;
  }>
>();

/** Whether enforcement was switched off with `RATCHET_SANDBOX=off` (or `none`/`0`/`false`). */
export function sandboxDisabled(env: NodeJS.ProcessEnv = process.env): boolean {
  const v = (env.RATCHET_SANDBOX ?? "").trim().toLowerCase();
  return v === "off" || v === "none" || v === "0" || v === "false";
}

/** Which launchers `RATCHET_SANDBOX` allows for Python: `landlock`, `bubblewrap`, or both (the default). */
export function allowedPythonLaunchers(env: NodeJS.ProcessEnv = process.env): ("landlock" | "bubblewrap")[] {
  const v = (env.RATCHET_SANDBOX ?? "").trim().toLowerCase();
  if (v === "landlock") return ["landlock"];
  if (v === "bubblewrap" || v === "bwrap") return ["bubblewrap"];
  return ["landlock", "bubblewrap"];
}

export const CONFINE_FILE = "ratchet-confine";
const CONFINE_CANDIDATES = [join("native", CONFINE_FILE), join("dist", "native", CONFINE_FILE)];
let confineFound: string | null | undefined;

/**
 * The built `ratchet-confine`, found by walking up from this module (it works from `src/exec/`
 * in tests, `dist/exec/` and the bundle in `dist/bundle/`), or undefined when it was not built.
 */
export function findConfine(): string | undefined {
  if (confineFound === undefined)
    confineFound =
      findAbove(import.meta.url, CONFINE_CANDIDATES, (p) => findExecutable(p, undefined) !== undefined) ??
      null;
  return confineFound ?? undefined;
}

/** Finds an executable the way a shell would: a path is checked as-is, a bare name in `pathEnv`. */
export function findExecutable(name: string, pathEnv: string | undefined): string | undefined {
  const usable = (p: string): boolean => {
    try {
      accessSync(p, constants.X_OK);
      return statSync(p).isFile();
    } catch {
      return false;
    }
  };
  if (name.includes("/")) return usable(name) ? name : undefined;
  for (const dir of (pathEnv ?? "").split(delimiter)) {
    if (!dir || !isAbsolute(dir)) continue;
    const candidate = join(dir, name);
    if (usable(candidate)) return candidate;
  }
  return undefined;
}

/**
 * bubblewrap's command line: the whole file system read-only, fresh /dev, /proc and /tmp, then
 * `binds` (read-only extras and the one writable output folder), its own pid namespace and session,
 * killed with its parent. The network is shared so scripts reach the loopback tool bridge.
 */
function bwrapArgs(
  binds: readonly string[],
  chdir: string | undefined,
  command: readonly string[],
): string[] {
  return [
    "--ro-bind",
    "/",
    "/",
    "--dev",
    "/dev",
    "--proc",
    "/proc",
    "--tmpfs",
    "/tmp",
    ...binds,
    "--unshare-pid",
    "--die-with-parent",
    "--new-session",
    ...(chdir ? ["--chdir", chdir] : []),
    "--",
    ...command,
  ];
}

/**
 * `ratchet-confine`'s command line: `command` may write only under `writable` (folders) and to
 * `/dev/null`. Used for learned scripts here and for the runner's commands (command-sandbox.ts).
 */
export function confineArgs(writable: readonly string[], command: readonly string[]): string[] {
  return [...writable.flatMap((d) => ["--write", d]), "--write-file", "/dev/null", "--", ...command];
}

async function probeLandlock(runner: ProcessRunner, env: NodeJS.ProcessEnv): Promise<PythonProbe> {
  const confine = findConfine();
  if (!confine)
    return {
      p: "none",
      why: `python: ${CONFINE_FILE} was not built (no C compiler at \`npm run build\`, or not Linux)`,
    };
  const r = await runner.run({
    command: confine,
    // --probe sets up the whole sandbox in a child that then exits without running anything.
    args: ["--probe"],
    env: buildEnv({ inherit: "minimal", base: env }),
    timeoutMs: PROBE_TIMEOUT_MS,
    maxCaptureBytes: 64 * 1024,
  });
  const features = parseProbe(r.stdout);
  if (r.exitCode === 0 && features)
    return {
      p: "landlock",
      why: `python: Landlock ABI ${features.abi} + seccomp (${confine})`,
      confine,
      abi: features.abi,
      features,
    };
  const detail = r.spawnError?.message ?? (r.stderr.trim() || `exit ${r.exitCode ?? r.signal}`);
  return { p: "none", why: `python: Landlock cannot confine a script here (${detail})` };
}

async function probeBwrap(runner: ProcessRunner, env: NodeJS.ProcessEnv): Promise<PythonProbe> {
  const bwrap = findExecutable("bwrap", env.PATH);
  if (!bwrap) return { p: "none", why: "python: bubblewrap (bwrap) is not installed" };
  const r = await runner.run({
    command: bwrap,
    // The probe starts the same sandbox a script gets, so a pass means scripts can run in it.
    args: bwrapArgs([], undefined, ["true"]),
    env: buildEnv({ inherit: "minimal", base: env }),
    timeoutMs: PROBE_TIMEOUT_MS,
    maxCaptureBytes: 64 * 1024,
  });
  if (r.exitCode === 0) return { p: "bubblewrap", why: `python: bubblewrap (${bwrap})`, bwrap };
  const detail = r.spawnError?.message ?? (r.stderr.trim() || `exit ${r.exitCode ?? r.signal}`);
  return { p: "none", why: `python: bubblewrap is installed but cannot start a sandbox here (${detail})` };
}

/** The first launcher `RATCHET_SANDBOX` allows that works here; otherwise why none does. */
async function probePython(env: NodeJS.ProcessEnv, runner: ProcessRunner): Promise<PythonProbe> {
  const misses: string[] = [];
  for (const launcher of allowedPythonLaunchers(env)) {
    const r = launcher === "landlock" ? await probeLandlock(runner, env) : await probeBwrap(runner, env);
    if (r.p !== "none") return misses.length ? { ...r, why: `${r.why} (${misses.join("; ")})` } : r;
    misses.push(r.why.replace(/^python: /, ""));
  }
  return { p: "none", why: `python: ${misses.join("; ")}: writes are not confined` };
}

/** Whether this Node's permission model has a network permission (`--allow-net`, Node 25+). */
export function nodeHasNetPermission(): boolean {
  return process.allowedNodeEnvironmentFlags.has("--allow-net");
}

async function probeNode(runner: ProcessRunner) {
  const allowNet = nodeHasNetPermission();
  const tries: [string, boolean][] = [
    ["--permission", true],
    ["--experimental-permission", true],
    ["--experimental-permission", false],
  ];
  for (const [flag, disableWarning] of tries) {
    const r = await runner.run({
      command: process.execPath,
      args: [
        flag,
        ...(disableWarning ? ["--disable-warning=ExperimentalWarning"] : []),
        "--allow-fs-read=*",
        ...(allowNet ? ["--allow-net"] : []),
        "-e",
        "0",
      ],
      env: buildEnv({ inherit: "minimal" }),
      timeoutMs: PROBE_TIMEOUT_MS,
      maxCaptureBytes: 64 * 1024,
    });
    if (r.exitCode === 0) {
      // Repeated --allow-fs-read flags must add up (older Nodes took one comma list, the last flag
      // winning): reading the first path with a second, unrelated flag after it must work.
      const reads = await runner.run({
        command: process.execPath,
        args: [
          flag,
          ...(disableWarning ? ["--disable-warning=ExperimentalWarning"] : []),
          `--allow-fs-read=${process.execPath}`,
          "--allow-fs-read=/nonexistent-ratchet-probe",
          "-e",
          "require('node:fs').openSync(process.execPath, 'r')",
        ],
        env: buildEnv({ inherit: "minimal" }),
        timeoutMs: PROBE_TIMEOUT_MS,
        maxCaptureBytes: 64 * 1024,
      });
      return {
        j: "node-permission" as const,
        why: `javascript: Node permission model (${flag}, Node ${process.version})`,
        flag,
        disableWarning,
        allowNet,
        readRoots: reads.exitCode === 0,
      };
    }
  }
  return {
    j: "none" as const,
    why: `javascript: Node ${process.version} has no permission model: writes are not confined`,
  };
}

/**
 * Probes (once per process, cached) which write protection is available for Python and for
 * JavaScript scripts. Never throws: a failed probe reports `none` with the reason. JavaScript also
 * runs under `ratchet-confine` when it works (and `RATCHET_SANDBOX` allows `landlock`).
 */
export async function detectSandbox(opts: DetectSandboxOptions = {}): Promise<SandboxInfo> {
  const env = opts.env ?? process.env;
  const runner = opts.runner ?? realProcessRunner;
  const langs = opts.languages ?? ["python", "javascript"];
  if (sandboxDisabled(env)) {
    return {
      python: "none",
      javascript: "none",
      reason: "write protection switched off by RATCHET_SANDBOX=off (static review only)",
    };
  }
  const key = `${env.PATH ?? ""}\0${allowedPythonLaunchers(env).join(",")}`;
  const reasons: string[] = [];
  const info: SandboxInfo = { python: "none", javascript: "none", reason: "" };
  const setConfine = (p: PythonProbe): void => {
    if (p.confine) info.confinePath = p.confine;
    if (p.abi !== undefined) info.landlockAbi = p.abi;
    if (p.features) info.confineFeatures = p.features;
  };
  if (langs.includes("python")) {
    if (opts.refresh || !pythonCache.has(key)) pythonCache.set(key, probePython(env, runner));
    const p = await (pythonCache.get(key) as ReturnType<typeof probePython>);
    info.python = p.p;
    if (p.bwrap) info.bwrapPath = p.bwrap;
    setConfine(p);
    reasons.push(p.why);
  } else reasons.push("python: not probed");
  if (langs.includes("javascript")) {
    if (opts.refresh || !jsCache.has("node")) jsCache.set("node", probeNode(runner));
    const j = await (jsCache.get("node") as ReturnType<typeof probeNode>);
    if (j.flag) info.nodePermissionFlag = j.flag;
    if (j.disableWarning !== undefined) info.nodeDisableWarning = j.disableWarning;
    if (j.allowNet) info.nodeAllowNet = true;
    if (j.readRoots) info.nodeReadRoots = true;
    if (!info.confinePath && allowedPythonLaunchers(env).includes("landlock")) {
      const lkey = `landlock\0${key}`;
      if (opts.refresh || !pythonCache.has(lkey)) pythonCache.set(lkey, probeLandlock(runner, env));
      setConfine(await (pythonCache.get(lkey) as Promise<PythonProbe>));
    }
    const confined = info.confinePath !== undefined && info.confineFeatures !== undefined;
    info.javascript =
      j.j === "node-permission"
        ? confined
          ? "landlock+node-permission"
          : "node-permission"
        : confined
          ? "landlock"
          : "none";
    reasons.push(
      confined
        ? `${j.why.replace(/: writes are not confined$/, "")} under ratchet-confine (Landlock ABI ${info.landlockAbi})`
        : j.why,
    );
  } else reasons.push("javascript: not probed");
  info.reason = reasons.join("; ");
  return info;
}

/** The `ratchet-confine` launcher `sandbox` found, or `none` with the reason. */
export function confineLauncher(sandbox: SandboxInfo): Launcher {
  if (!sandbox.confinePath) return { kind: "none", reason: sandbox.reason };
  // An answer without features (recorded before v2 probes) is a v1 binary.
  const features = sandbox.confineFeatures ??
    parseProbe(`landlock abi ${sandbox.landlockAbi ?? 1}`) ?? {
      abi: 1,
      v2: false,
      reads: false,
      metadata: false,
      signals: false,
      proc: false,
    };
  if (sandbox.python === "landlock" || sandbox.javascript.startsWith("landlock"))
    return { kind: "ratchet-confine", path: sandbox.confinePath, features };
  return { kind: "none", reason: sandbox.reason };
}

let supervisorProbe: Promise<Launcher> | undefined;

/**
 * The launcher for supervision alone (`--supervise-only`, `step run`): the built
 * `ratchet-confine` when its probe passes, whatever `RATCHET_SANDBOX` says (supervision confines
 * nothing; it only makes sure nothing outlives its time limit or Ratchet). Cached per process.
 */
export function supervisorLauncher(runner: ProcessRunner = realProcessRunner): Promise<Launcher> {
  supervisorProbe ??= probeLandlock(runner, process.env).then(
    (p): Launcher =>
      p.confine && p.features
        ? { kind: "ratchet-confine", path: p.confine, features: p.features }
        : { kind: "none", reason: p.why.replace(/^python: /, "") },
  );
  return supervisorProbe;
}

/** What to run for one learned script. */
export interface ScriptCommand {
  language: ScriptLanguage;
  /** Absolute path of the interpreter (`python3` or `node`): the real one, not a version-manager shim. */
  interpreter: string;
  /** The script file name inside `codeDir` (`main.py` / `main.mjs`). */
  script: string;
  /** Arguments after the script (the dependency output folders). */
  args: readonly string[];
  /** The working folder (`STEP_EXECUTION_DIR`). */
  codeDir: string;
  /** The only folder the script may write to (`STEP_OUTPUT_DIR`). */
  outputDir: string;
  /**
   * Folders the script must be able to read even when they live under `/tmp` (the sandbox gets a
   * fresh `/tmp`): the workflow folder, the dependency output folders. Missing ones are skipped.
   * bubblewrap only: under `ratchet-confine` the reads are {@link ScriptCommand.readRoots}.
   */
  readDirs?: readonly string[];
  /**
   * Everything the script may read under `ratchet-confine` v2 (read-roots.ts `readRoots`): passed
   * as `--read` when the launcher confines reads. Default: none (reads stay unconfined on v1).
   */
  readRoots?: readonly string[];
  /**
   * A private temporary folder the script may write to (its `TMPDIR`) under Landlock, where `/tmp`
   * itself stays read-only. bubblewrap gives the script a fresh `/tmp` instead.
   */
  tmpDir?: string;
  /** The time limit (the launcher enforces it itself where it can). Default 10 minutes. */
  timeoutMs?: number;
  /** Between SIGTERM and SIGKILL at the time limit. Default 2000. */
  killGraceMs?: number;
  /** Folders the launcher removes once everything is gone (the private TMPDIR). */
  cleanup?: readonly string[];
}

/** The command line to spawn, and which protection it carries. */
export interface WrappedCommand {
  command: string;
  args: string[];
  protection: PythonProtection | JavascriptProtection;
  /** The process runner's time limit (above the launcher's own when the launcher enforces one). */
  runnerTimeoutMs: number;
  /** The launcher enforces the time limit itself and reports it with exit 124. */
  launcherTimeout: boolean;
}

/** The {@link Confinement} of one learned script under `ratchet-confine`. */
export function scriptConfinement(cmd: ScriptCommand): Confinement {
  return {
    readRoots: [cmd.codeDir, ...(cmd.readRoots ?? [])],
    writeRoots: [cmd.outputDir, ...(cmd.tmpDir ? [cmd.tmpDir] : [])],
    writeFiles: ["/dev/null"],
    env: {},
    timeoutMs: cmd.timeoutMs ?? DEFAULT_EXEC_TIMEOUT_MS,
    killGraceMs: cmd.killGraceMs ?? DEFAULT_KILL_GRACE_MS,
    supervise: Supervise.Confine,
    cleanup: cmd.cleanup ?? [],
  };
}

/**
 * Wraps a script's command line in the protection `sandbox` says is available. Pure apart from
 * checking which `readDirs` exist.
 */
export function wrapCommand(cmd: ScriptCommand, sandbox: SandboxInfo): WrappedCommand {
  const timeoutMs = cmd.timeoutMs ?? DEFAULT_EXEC_TIMEOUT_MS;
  const plainRun = { runnerTimeoutMs: timeoutMs, launcherTimeout: false };
  const launcher = confineLauncher(sandbox);
  const door = compileConfinement(scriptConfinement(cmd), launcher);
  const through = (program: string, args: readonly string[], protection: WrappedCommand["protection"]) => ({
    ...door.command(program, args),
    protection,
    runnerTimeoutMs: door.runnerTimeoutMs,
    launcherTimeout: door.launcherTimeout,
  });
  if (cmd.language === "python") {
    const direct = ["-B", cmd.script, ...cmd.args];
    if (sandbox.python === "landlock" && launcher.kind === "ratchet-confine")
      return through(cmd.interpreter, direct, "landlock");
    if (sandbox.python !== "bubblewrap" || !sandbox.bwrapPath)
      return { command: cmd.interpreter, args: direct, protection: "none", ...plainRun };
    const reads = (cmd.readDirs ?? [])
      .filter((d) => isAbsolute(d) && existsSync(d))
      .flatMap((d) => ["--ro-bind", d, d]);
    return {
      command: sandbox.bwrapPath,
      args: bwrapArgs([...reads, "--bind", cmd.outputDir, cmd.outputDir], cmd.codeDir, [
        cmd.interpreter,
        ...direct,
      ]),
      protection: "bubblewrap",
      ...plainRun,
    };
  }
  const plain = [cmd.script, ...cmd.args];
  const confined = sandbox.javascript.startsWith("landlock") && launcher.kind === "ratchet-confine";
  if (!sandbox.javascript.includes("node-permission") || !sandbox.nodePermissionFlag) {
    if (confined) return through(cmd.interpreter, plain, "landlock");
    return { command: cmd.interpreter, args: plain, protection: "none", ...plainRun };
  }
  const nodeArgs = [
    sandbox.nodePermissionFlag,
    ...(sandbox.nodeDisableWarning ? ["--disable-warning=ExperimentalWarning"] : []),
    // Reads: the read roots where this Node adds repeated flags up (the same policy as the
    // launcher's --read, so a JS script cannot read $HOME, .ratchet/ or other processes' /proc
    // even under a v1 launcher); everything otherwise.
    ...(sandbox.nodeReadRoots && cmd.readRoots && cmd.readRoots.length > 0
      ? [...new Set([cmd.codeDir, cmd.outputDir, ...cmd.readRoots])].map((r) => `--allow-fs-read=${r}`)
      : ["--allow-fs-read=*"]),
    `--allow-fs-write=${cmd.outputDir}`,
    // The tool bridge is on loopback; Node 25+ would refuse every socket without it.
    ...(sandbox.nodeAllowNet ? ["--allow-net"] : []),
    ...plain,
  ];
  if (confined) return through(cmd.interpreter, nodeArgs, "landlock+node-permission");
  return { command: cmd.interpreter, args: nodeArgs, protection: "node-permission", ...plainRun };
}

/**
 * Whether a failed sandboxed run failed in the launcher itself, before the script started (e.g.
 * `bwrap: execvp python3: No such file or directory`, or `ratchet-confine: cannot run …` with exit
 * 125/127): a harness failure, not the script's.
 */
export function isSandboxSetupFailure(protection: string, exitCode: number | null, stderr: string): boolean {
  if (protection === "bubblewrap") return exitCode === 1 && stderr.startsWith("bwrap: ");
  if (protection.startsWith("landlock"))
    return (exitCode === 125 || exitCode === 127) && stderr.startsWith(`${CONFINE_FILE}: `);
  return false;
}
