/**
 * `exec/`: the one process runner of Ratchet and the one door for untrusted processes. Every
 * script, command, DoD check and action is spawned through {@link runProcess} (or a
 * {@link ProcessRunner} passed in for tests); every untrusted one is described by a
 * {@link Confinement} compiled once by {@link compileConfinement} (door.ts), and every model- or
 * script-given path goes through {@link confinePath}.
 */

export type { CaptureSnapshot } from "./capture.js";
export { HeadTailCapture } from "./capture.js";
export type { CommandSandbox, CommandSandboxOptions } from "./command-sandbox.js";
export { commandSandbox, RUNNER_DIR_PREFIX } from "./command-sandbox.js";
export type { ConfinePathOptions } from "./confine-path.js";
export { confinePath, PathRefused } from "./confine-path.js";
export type { ConfineFeatures, Confinement, Door, Guarantee, Launcher, SuperviseMode } from "./door.js";
export {
  compileConfinement,
  enforcedBy,
  GUARANTEES,
  LAUNCHER_TIMEOUT_EXIT,
  launcherFlags,
  launcherTimedOut,
  parseProbe,
  Supervise,
  settleLaunched,
} from "./door.js";
export type { BuildEnvOptions } from "./env.js";
export { buildEnv, MINIMAL_ENV_KEYS } from "./env.js";
export type { GuaranteeReport } from "./guarantees.js";
export { formatGuarantees, guaranteeReport } from "./guarantees.js";
export type { Interpreter } from "./interpreters.js";
export { resolveNode, resolvePython } from "./interpreters.js";
export {
  DEFAULT_EXEC_TIMEOUT_MS,
  DEFAULT_KILL_GRACE_MS,
  MAX_EXEC_TIMEOUT_MS,
  POST_KILL_WAIT_MS,
  PROBE_TIMEOUT_MS,
  STREAM_CLOSE_GRACE_MS,
} from "./limits.js";
export type { KillAllOptions } from "./process-group.js";
export { killAllRunning, runningCount } from "./process-group.js";
export { realProcessRunner, runProcess } from "./process-runner.js";
export type { ForbiddenReads, ReadRootsInput, SandboxConfig } from "./read-roots.js";
export {
  ETC_READ_ROOTS,
  loadSandboxConfig,
  parseSandboxConfig,
  readRoots,
  SYSTEM_READ_ROOTS,
} from "./read-roots.js";
export type {
  DetectSandboxOptions,
  JavascriptProtection,
  PythonProtection,
  SandboxInfo,
  ScriptCommand,
  ScriptLanguage,
  WrappedCommand,
} from "./sandbox.js";
export {
  allowedPythonLaunchers,
  CONFINE_FILE,
  confineArgs,
  confineLauncher,
  detectSandbox,
  findConfine,
  findExecutable,
  isSandboxSetupFailure,
  nodeHasNetPermission,
  sandboxDisabled,
  scriptConfinement,
  supervisorLauncher,
  wrapCommand,
} from "./sandbox.js";
export { isAlive, STEP_DIR_PREFIX, stepDirPrefix, sweepStaleDirs } from "./stale-dirs.js";
export type { OmittedBytes, ProcessRunner, RunRequest, RunResult } from "./types.js";
