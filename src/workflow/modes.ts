/**
 * Execution-mode resolution. Pure: no I/O.
 *
 * The rules (specs/learn-code-and-code-exec.md, "Mode Resolution and Precedence"):
 *
 * 1. The declared mode is the step's `declared_execution_mode`, else the workflow default's.
 * 2. `learn_code` is chosen only when that declared mode is exactly `"learn_code"`.
 * 3. Declaring `learn_code` or `code_exec` forces code execution on.
 * 4. Otherwise code execution is the step's `use_code_execution_mode`, else the workflow default's,
 *    else off.
 * 5. With code execution on and no `learn_code`, the mode is `code_exec` (the fallback); with it off,
 *    `direct`.
 *
 * A step's field always overrides the same field of the workflow default.
 */
import { type AgentConfigs, ExecutionMode, type WorkflowStep } from "./types.js";

export interface ModeResolution {
  mode: ExecutionMode;
  /** Whether scripted code execution is enabled for the step (always true for `learn_code`). */
  codeExecution: boolean;
  /** One sentence saying which setting decided, for logs and `--explain` output. */
  reason: string;
}

/** Resolves the execution mode of `step` given the workflow-level `defaults`. */
export function resolveMode(
  step: Pick<WorkflowStep, "agent_configs">,
  defaults: AgentConfigs,
): ModeResolution {
  const cfg = step.agent_configs;
  const declared = cfg.declared_execution_mode ?? defaults.declared_execution_mode;
  const declaredBy = cfg.declared_execution_mode !== undefined ? "the step" : "the workflow default";

  if (declared === ExecutionMode.LearnCode) {
    return {
      mode: ExecutionMode.LearnCode,
      codeExecution: true,
      reason: `${declaredBy} declares learn_code (code execution forced on)`,
    };
  }
  if (declared === ExecutionMode.CodeExec) {
    return {
      mode: ExecutionMode.CodeExec,
      codeExecution: true,
      reason: `${declaredBy} declares code_exec (code execution forced on)`,
    };
  }

  const use = cfg.use_code_execution_mode ?? defaults.use_code_execution_mode;
  const useBy =
    cfg.use_code_execution_mode !== undefined
      ? `the step sets use_code_execution_mode: ${use}`
      : use !== undefined
        ? `the workflow default sets use_code_execution_mode: ${use}`
        : "use_code_execution_mode is not set (off)";
  const declaredNote = declared === undefined ? "" : `; ${declaredBy} declares ${declared}`;
  if (use === true) {
    return {
      mode: ExecutionMode.CodeExec,
      codeExecution: true,
      reason: `${useBy}${declaredNote}; not learn_code, so code_exec`,
    };
  }
  return { mode: ExecutionMode.Direct, codeExecution: false, reason: `${useBy}${declaredNote}, so direct` };
}
