/**
 * The set-up every execution of learned steps shares — a run (`runs.ts`) and a Builder session
 * (`builder/build.ts`): variables and secrets resolved (before anything is written), secrets
 * registered with the redactor, the workspace's `sandbox` config read, stale private TMPDIRs of
 * dead runs swept, the sandbox probed, the time limit chosen — and, from it, each learned step's
 * input ({@link learnedStepInput}). Written once so the two cannot drift (the Builder used to
 * hard-code its own 600 s).
 */
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Clock, Redactor } from "../core/index.js";
import {
  detectSandbox,
  loadSandboxConfig,
  type ProcessRunner,
  type SandboxInfo,
  type ScriptLanguage,
  STEP_DIR_PREFIX,
  sweepStaleDirs,
} from "../exec/index.js";
import type { BridgeProvider, LearnedStepInput } from "./fast-path.js";
import { type RunHome, runHomeOf } from "./layout.js";
import { rememberedPython } from "./python-memo.js";
import { DEFAULT_STEP_TIMEOUT_SECONDS } from "./run-limits.js";
import { resolveSecrets, resolveVariables } from "./secrets.js";
import type { Workflow, WorkflowStep } from "./types.js";

/** What {@link prepareRunSetup} needs. */
export interface RunSetupInput {
  workflow: Workflow;
  /** The workspace's `.ratchet/` folder (secrets, config.json, the store). */
  workspaceDir: string;
  redactor: Redactor;
  /** The script languages to probe sandboxes for. */
  languages: readonly ScriptLanguage[];
  vars?: Record<string, string> | undefined;
  group?: string | undefined;
  env: NodeJS.ProcessEnv;
  /** Default `<workspaceDir>/secrets`. */
  secretsFile?: string | undefined;
  /** Default {@link DEFAULT_STEP_TIMEOUT_SECONDS}. */
  stepTimeoutSeconds?: number | undefined;
  /** Where the run writes (outputs, working copies, run history). Default `runHomeOf(workspaceDir)`. */
  home?: RunHome | undefined;
}

/** The shared part of a learned step's input. */
export interface RunSetup {
  variables: Record<string, string>;
  secrets: Record<string, string>;
  sandbox: SandboxInfo;
  /** `sandbox.read_roots` of config.json, and the folders no read root may expose. */
  readPolicy: { readRoots: string[]; secretDirs: string[] };
  timeoutSeconds: number;
  /** Where the run writes: never the workflow's folder. */
  home: RunHome;
}

/**
 * Refuses a run that cannot start (bad variables, secrets or `sandbox` config) before anything is
 * written; then sweeps and probes.
 * @throws RatchetError `schema_violation` / `invalid_value` / `not_found` (variables, secrets,
 *   groups, `sandbox.read_roots[N]`), `malformed_input` (config.json not JSON).
 */
export async function prepareRunSetup(input: RunSetupInput): Promise<RunSetup> {
  const { workflow: wf, env } = input;
  // The real python3 is asked for its prefixes first (or its answer of an earlier run is taken:
  // python-memo.ts; cached per PATH: the steps and the pre-started interpreter get it), and the
  // sandbox probe is spawned next (the pre-started interpreter waits for both), while the rest is
  // checked and the /tmp sweep runs. Neither writes anything; a run refused below has asked them
  // for nothing else, and its probe's answer is not awaited (nor an unhandled rejection).
  const home = input.home ?? runHomeOf(input.workspaceDir);
  if (input.languages.includes("python")) rememberedPython(env, home.cache).catch(() => {});
  const probing = detectSandbox({ languages: [...input.languages], env });
  probing.catch(() => {});
  const variables = resolveVariables(wf, { cli: input.vars ?? {}, group: input.group, env });
  const secrets = resolveSecrets(wf, {
    env,
    secretsFile: input.secretsFile ?? join(input.workspaceDir, "secrets"),
  });
  const config = loadSandboxConfig(input.workspaceDir, env.HOME);
  for (const [k, v] of Object.entries(secrets)) input.redactor.add(k, v);
  // What a killed run left behind (a launcher that could not clean up: v1, or none).
  sweepStaleDirs(tmpdir(), STEP_DIR_PREFIX);
  const sandbox = await probing;
  return {
    variables,
    secrets,
    sandbox,
    readPolicy: { readRoots: config.readRoots, secretDirs: [input.workspaceDir] },
    timeoutSeconds: input.stepTimeoutSeconds ?? DEFAULT_STEP_TIMEOUT_SECONDS,
    home,
  };
}

/** What a learned step of a run (or a Builder attempt) adds to the shared set-up. */
export interface StepSpecifics {
  workflow: Workflow;
  step: WorkflowStep;
  runId: string;
  dependencyDirs: readonly string[];
  bridge: BridgeProvider;
  baseEnv: NodeJS.ProcessEnv;
  groupName: string | null;
  redactor: Redactor;
  clock: Clock;
  signal?: AbortSignal | undefined;
  runner?: ProcessRunner | undefined;
}

/**
 * The input of one learned step (the fast path's `runLearnedStep`, or a model-driven step): the
 * shared set-up and the step's own parts. Pure. A run and a Builder session build it the same way.
 */
export function learnedStepInput(setup: RunSetup, s: StepSpecifics) {
  return {
    workflow: s.workflow,
    step: s.step,
    runId: s.runId,
    home: setup.home,
    dependencyDirs: s.dependencyDirs,
    variables: setup.variables,
    secrets: setup.secrets,
    bridge: s.bridge,
    baseEnv: s.baseEnv,
    timeoutSeconds: setup.timeoutSeconds,
    groupName: s.groupName,
    sandbox: setup.sandbox,
    readPolicy: setup.readPolicy,
    redactor: s.redactor,
    clock: s.clock,
    ...(s.signal ? { signal: s.signal } : {}),
    ...(s.runner ? { runner: s.runner } : {}),
  } satisfies LearnedStepInput;
}
