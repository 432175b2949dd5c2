/**
 * Which model the Builder and model-driven steps use: the existing model configuration, with the
 * precedence flag > environment > config file (`model` in `.ratchet/config.json`) > default.
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { ErrorCode, RatchetError } from "../core/index.js";
import {
  type CompiledModelOptions,
  compileModelOptions,
  createModelClient,
  type ModelClient,
  type ModelOptions,
} from "../model/index.js";

/** The `model` section of the workspace config file (empty when there is none). */
export function workspaceModelConfig(workspaceDir: string): ModelOptions {
  const file = join(workspaceDir, "config.json");
  if (!existsSync(file)) return {};
  let value: unknown;
  try {
    value = JSON.parse(readFileSync(file, "utf8"));
  } catch (e) {
    throw new RatchetError(ErrorCode.MalformedInput, `${file} is not valid JSON: ${(e as Error).message}`, {
      file,
    });
  }
  const section = (value as Record<string, unknown> | null)?.["model"];
  if (section === undefined) return {};
  if (section === null || typeof section !== "object" || Array.isArray(section))
    throw new RatchetError(ErrorCode.SchemaViolation, `${file}: model must be an object`, {
      file,
      field: "model",
    });
  return section as ModelOptions;
}

/** Compiles the model settings. @throws RatchetError `invalid_value` naming what to set. */
export function resolveModelOptions(input: {
  flags?: ModelOptions;
  env?: NodeJS.ProcessEnv;
  workspaceDir: string;
}): CompiledModelOptions {
  return compileModelOptions({
    ...(input.flags ? { flags: input.flags } : {}),
    env: input.env ?? process.env,
    config: workspaceModelConfig(input.workspaceDir),
  });
}

/** A client for the compiled settings. */
export function modelClientFor(options: CompiledModelOptions): ModelClient {
  return createModelClient(options);
}
