/**
 * `exec/`: the one process runner of Ratchet. Every script, command, DoD check and action is
 * spawned through {@link runProcess} (or a {@link ProcessRunner} passed in for tests).
 */

export type { CaptureSnapshot } from "./capture.js";
export { HeadTailCapture } from "./capture.js";
export type { CommandSandbox } from "./command-sandbox.js";
export { commandSandbox } from "./command-sandbox.js";
export type { BuildEnvOptions } from "./env.js";
export { buildEnv, MINIMAL_ENV_KEYS } from "./env.js";
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
  detectSandbox,
  findConfine,
  findExecutable,
  isSandboxSetupFailure,
  nodeHasNetPermission,
  sandboxDisabled,
  wrapCommand,
} from "./sandbox.js";
export type { OmittedBytes, ProcessRunner, RunRequest, RunResult } from "./types.js";
