/**
 * The environment builder. A child process never inherits the parent's environment implicitly:
 * callers compose the complete environment here and pass it as `RunRequest.env`.
 */

import { ErrorCode, RatchetError } from "../core/index.js";

/** The variables `inherit: "minimal"` copies from the base environment (when set there). */
export const MINIMAL_ENV_KEYS: readonly string[] = Object.freeze([
  "PATH",
  "HOME",
  "LANG",
  "LC_ALL",
  "TZ",
  "TMPDIR",
  "USER",
  "SHELL",
  "TERM",
]);

/** Options of {@link buildEnv}. Every field is optional. */
export interface BuildEnvOptions {
  /**
   * What to copy from `base`: `"none"` nothing, `"minimal"` only {@link MINIMAL_ENV_KEYS},
   * `"all"` every variable. Default `"minimal"`.
   */
  inherit?: "none" | "minimal" | "all";
  /** The environment to inherit from. Default `process.env`. */
  base?: NodeJS.ProcessEnv;
  /**
   * Inherited variables to remove: a string matches a name exactly, a RegExp is tested against
   * the name. Applied after inheriting and before `set`. Default none.
   */
  drop?: readonly (string | RegExp)[];
  /** Variables to set last; `undefined` deletes the variable. Default none. */
  set?: Record<string, string | undefined>;
}

function matches(name: string, pattern: string | RegExp): boolean {
  if (typeof pattern === "string") return name === pattern;
  pattern.lastIndex = 0; // a /g or /y pattern keeps state between test() calls
  return pattern.test(name);
}

/** Throws when `name=value` cannot be passed to a child process. */
function checkVariable(name: string, value: string): void {
  if (name === "" || name.includes("=") || name.includes("\0")) {
    throw new RatchetError(
      ErrorCode.InvalidValue,
      `invalid environment variable name: ${JSON.stringify(name)}`,
      {
        field: "env",
      },
    );
  }
  if (typeof value !== "string" || value.includes("\0")) {
    throw new RatchetError(
      ErrorCode.InvalidValue,
      `environment variable ${name} must be a string without NUL bytes`,
      {
        field: `env.${name}`,
      },
    );
  }
}

/**
 * Composes the complete environment of a child process: inherit from `base` (default
 * `"minimal"` from `process.env`), then remove `drop` matches, then apply `set`.
 *
 * @example
 * buildEnv({ inherit: "minimal", set: { STEP_OUTPUT_DIR: out, DEBUG: undefined } })
 * @throws RatchetError `invalid_value` when a name in `set` is empty or contains `=` or NUL,
 *   or a value contains NUL.
 */
export function buildEnv(opts: BuildEnvOptions = {}): Record<string, string> {
  const inherit = opts.inherit ?? "minimal";
  const base = opts.base ?? process.env;
  const env: Record<string, string> = {};
  if (inherit === "all") {
    for (const [k, v] of Object.entries(base)) if (v !== undefined) env[k] = v;
  } else if (inherit === "minimal") {
    for (const k of MINIMAL_ENV_KEYS) {
      const v = base[k];
      if (v !== undefined) env[k] = v;
    }
  }
  if (opts.drop && opts.drop.length > 0) {
    for (const k of Object.keys(env)) {
      if (opts.drop.some((p) => matches(k, p))) delete env[k];
    }
  }
  for (const [k, v] of Object.entries(opts.set ?? {})) {
    if (v === undefined) {
      delete env[k];
    } else {
      checkVariable(k, v);
      env[k] = v;
    }
  }
  return env;
}

/**
 * Checks a complete environment before it is handed to `spawn`.
 *
 * @throws RatchetError `invalid_value` naming the first bad variable.
 */
export function assertValidEnv(env: Record<string, string>): void {
  for (const [k, v] of Object.entries(env)) checkVariable(k, v);
}
