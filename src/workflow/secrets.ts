/**
 * Variables and secrets of a run.
 *
 * Variables: `--var NAME=value` > the chosen group's value > env `VAR_NAME` > the declared default.
 * Secrets: env `SECRET_NAME` > the secrets file (`.ratchet/secrets`, which must not be readable by
 * group or others: mode 0600). Scripts see them as `VAR_NAME` / `SECRET_NAME`.
 */
import { readFileSync, statSync } from "node:fs";
import { ErrorCode, RatchetError } from "../core/errors.js";
import { normaliseSecretName, normaliseVariableName } from "./schema.js";
import type { Workflow } from "./types.js";

export interface ResolveVariablesOptions {
  /** `--var` values; names with or without `VAR_`, any case. */
  cli: Record<string, string>;
  /** A variable group of the workflow (`--group`). */
  group?: string | undefined;
  env: NodeJS.ProcessEnv;
}

export interface ResolveSecretsOptions {
  env: NodeJS.ProcessEnv;
  /** The secrets file (`.ratchet/secrets`); optional, read only when a secret is not in `env`. */
  secretsFile?: string | undefined;
}

function list(names: string[]): string {
  return names.length === 0 ? "none" : names.join(", ");
}

/**
 * The `VAR_*` values of a run.
 * @throws RatchetError `schema_violation` for a `--var` the workflow does not declare; `not_found`
 *   for an unknown group; `invalid_value` naming every required variable left without a value.
 */
export function resolveVariables(
  workflow: Workflow,
  opts: ResolveVariablesOptions,
): Record<`VAR_${string}`, string> {
  const declared = Object.keys(workflow.variables);
  const cli = new Map<string, string>();
  for (const [raw, value] of Object.entries(opts.cli)) {
    const name = normaliseVariableName(raw);
    if (!Object.hasOwn(workflow.variables, name))
      throw new RatchetError(
        ErrorCode.SchemaViolation,
        `--var ${raw}: workflow ${workflow.id} declares no variable ${name} (declared: ${list(declared)})`,
        { field: `--var ${raw}`, variable: name },
      );
    cli.set(name, value);
  }
  let group: Record<string, string> = {};
  if (opts.group !== undefined) {
    const g = Object.hasOwn(workflow.groups, opts.group) ? workflow.groups[opts.group] : undefined;
    if (!g)
      throw new RatchetError(
        ErrorCode.NotFound,
        `variable group ${opts.group} not found in workflow ${workflow.id} (groups: ${list(Object.keys(workflow.groups))})`,
        { group: opts.group },
      );
    group = g;
  }

  const out: Record<`VAR_${string}`, string> = {};
  const missing: string[] = [];
  for (const name of declared) {
    const key = `VAR_${name}` as const;
    const value =
      cli.get(name) ??
      (Object.hasOwn(group, name) ? group[name] : undefined) ??
      opts.env[key] ??
      workflow.variables[name]?.default;
    if (value === undefined) missing.push(key);
    else out[key] = value;
  }
  if (missing.length > 0)
    throw new RatchetError(
      ErrorCode.InvalidValue,
      `workflow ${workflow.id}: no value for required variable${missing.length > 1 ? "s" : ""} ${missing.join(", ")} ` +
        "(pass --var NAME=value, choose a --group, or set it in the environment)",
      { field: missing[0], variables: missing },
    );
  return out;
}

/**
 * Parses a secrets file: `NAME=value` or `SECRET_NAME=value` per line (an `export ` prefix and one
 * pair of surrounding quotes are allowed), blank lines and `#` comments skipped. Names are
 * normalised without `SECRET_`. Pure.
 * @throws RatchetError `malformed_input` naming the file and the line (never its content).
 */
export function parseSecretsFile(text: string, file: string): Map<string, string> {
  const out = new Map<string, string>();
  text.split(/\r?\n/).forEach((line, i) => {
    const t = line.trim();
    if (t === "" || t.startsWith("#")) return;
    const body = t.startsWith("export ") ? t.slice(7).trimStart() : t;
    const eq = body.indexOf("=");
    const name = eq > 0 ? normaliseSecretName(body.slice(0, eq)) : "";
    if (!/^[A-Z][A-Z0-9_]*$/.test(name))
      throw new RatchetError(
        ErrorCode.MalformedInput,
        `${file}:${i + 1}: expected NAME=value (the line is not shown: it may hold a secret)`,
        { file, line: i + 1 },
      );
    let value = body.slice(eq + 1).trim();
    const q = value[0];
    if (value.length >= 2 && (q === '"' || q === "'") && value.endsWith(q)) value = value.slice(1, -1);
    out.set(name, value);
  });
  return out;
}

function readSecretsFile(file: string): Map<string, string> {
  const st = statSync(file, { throwIfNoEntry: false });
  if (!st) return new Map();
  if (!st.isFile())
    throw new RatchetError(ErrorCode.UnreadableInput, `secrets file ${file} is not a file`, { file });
  const perms = st.mode & 0o777;
  if ((perms & 0o077) !== 0)
    throw new RatchetError(
      ErrorCode.InvalidValue,
      `secrets file ${file} has mode 0${perms.toString(8)}; it must be 0600 (readable by its owner only): chmod 600 ${file}`,
      { file, mode: `0${perms.toString(8)}` },
    );
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (e) {
    throw new RatchetError(
      ErrorCode.UnreadableInput,
      `secrets file ${file}: ${String(e)}`,
      { file },
      { cause: e },
    );
  }
  return parseSecretsFile(text, file);
}

/**
 * The `SECRET_*` values of a run: env `SECRET_NAME` (non-empty) first, else the secrets file. The
 * file is read only when some secret is not in the environment.
 * @throws RatchetError `invalid_value` when the file's mode lets group or others read it, or naming
 *   every declared secret left without a value; `malformed_input` for a bad line.
 */
export function resolveSecrets(
  workflow: Workflow,
  opts: ResolveSecretsOptions,
): Record<`SECRET_${string}`, string> {
  const out: Record<`SECRET_${string}`, string> = {};
  const pending: string[] = [];
  for (const name of workflow.secrets) {
    const key = `SECRET_${name}` as const;
    const v = opts.env[key];
    if (v !== undefined && v !== "") out[key] = v;
    else pending.push(name);
  }
  if (pending.length === 0) return out;
  const fromFile = opts.secretsFile ? readSecretsFile(opts.secretsFile) : new Map<string, string>();
  const missing: string[] = [];
  for (const name of pending) {
    const v = fromFile.get(name);
    if (v !== undefined && v !== "") out[`SECRET_${name}`] = v;
    else missing.push(`SECRET_${name}`);
  }
  if (missing.length > 0)
    throw new RatchetError(
      ErrorCode.InvalidValue,
      `workflow ${workflow.id}: no value for secret${missing.length > 1 ? "s" : ""} ${missing.join(", ")} ` +
        `(set it in the environment${opts.secretsFile ? ` or in ${opts.secretsFile}` : ""})`,
      { field: missing[0], secrets: missing },
    );
  return out;
}
