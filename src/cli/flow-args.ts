/**
 * The CLI side of `FLOWS`: each write flow's command takes either its JSON/YAML input (a file path
 * or `-`), or the same fields as flags generated from the flow's schema:
 * `ratchet step complete <step_id> --summary "…" --log-context-file out.txt`. A misspelled flag
 * gets a "did you mean". Also renders each flow's `--help` and the op table of docs/cli.md.
 */
import { existsSync, readFileSync } from "node:fs";
import { ErrorCode, RatchetError, type Schema } from "../core/index.js";
import type { AnyFlow } from "../ledger/index.js";
import { readInputText } from "./io.js";

/** An input file argument: `-` or a path ending in .json, .yaml or .yml. */
export const INPUT_FILE = /^-$|\.(json|ya?ml)$/i;

const kebab = (field: string) => field.replaceAll("_", "-");

interface FieldInfo {
  field: string;
  type: string;
  required: boolean;
  description: string;
}

/** The fields of a flow's input, from its schema. */
export function fieldsOf(flow: AnyFlow): FieldInfo[] {
  const json = flow.input.json() as {
    properties?: Record<string, { type?: string; description?: string; enum?: string[]; oneOf?: unknown[] }>;
    required?: string[];
  };
  return Object.entries(json.properties ?? {}).map(([field, p]) => ({
    field,
    type: p.enum ? p.enum.join("|") : (p.type ?? (p.oneOf ? "number|string" : "json")),
    required: (json.required ?? []).includes(field),
    description: p.description ?? "",
  }));
}

/** Every flag of a flow: one per field, plus `--<field>-file` for its text fields (ids excepted). */
export function flagNames(flow: AnyFlow): string[] {
  const fields = fieldsOf(flow);
  const text = fields.filter(
    (f) => (f.type === "string" || f.type === "number|string") && !f.field.endsWith("_id"),
  );
  return [...fields.map((f) => kebab(f.field)), ...text.map((f) => `${kebab(f.field)}-file`)];
}

/** Levenshtein distance (small strings only). */
function distance(a: string, b: string): number {
  const d = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let prev = d[0] as number;
    d[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const tmp = d[j] as number;
      d[j] = Math.min((d[j] as number) + 1, (d[j - 1] as number) + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1));
      prev = tmp;
    }
  }
  return d[b.length] as number;
}

/** The closest known flag to `given`, when close enough to be a typo. */
export function didYouMean(given: string, known: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestD = Number.POSITIVE_INFINITY;
  for (const k of known) {
    const dist = distance(given, k);
    if (dist < bestD) {
      bestD = dist;
      best = k;
    }
  }
  return best !== undefined && bestD <= Math.max(2, Math.floor(given.length / 3)) ? best : undefined;
}

function usage(message: string, field?: string): RatchetError {
  return new RatchetError(ErrorCode.Usage, message, field ? { field } : {});
}

function coerce(info: FieldInfo, schema: Schema<unknown> | undefined, flag: string, value: string): unknown {
  if (info.type === "integer" || info.type === "number") {
    const n = Number(value);
    if (value.trim() === "" || !Number.isFinite(n))
      throw usage(`--${flag}: expected a number (got ${JSON.stringify(value)})`, info.field);
    return n;
  }
  if (info.type === "boolean") {
    if (value === "true") return true;
    if (value === "false") return false;
    throw usage(`--${flag}: expected true or false (got ${JSON.stringify(value)})`, info.field);
  }
  if (info.type === "array" || info.type === "object" || info.type === "json") {
    try {
      return JSON.parse(value) as unknown;
    } catch {
      // A bare string is a valid step for `steps`/`sub_steps` lists: `--sub-steps "do it"`.
      if (info.type === "array") return [value];
      throw usage(`--${flag}: expected JSON (got ${JSON.stringify(value)})`, info.field);
    }
  }
  void schema;
  return value;
}

/**
 * The flow's input from its command-line arguments: `{ source }` for a file or `-`, else the
 * object built from the positional id and the flags (validated later by the flow's schema).
 * @throws RatchetError `usage` (exit 2) for an unknown flag (with a suggestion) or a bad value.
 */
export function parseFlowArgs(
  flow: AnyFlow,
  args: readonly string[],
): { source: string } | { raw: Record<string, unknown> } | { empty: true } {
  if (args.length === 0) return { empty: true };
  // One argument that names a file (an input extension, a path, or an existing entry) is the
  // input; anything else is the positional id. Ids never hold a `/`.
  const only = args[0] as string;
  if (args.length === 1 && (INPUT_FILE.test(only) || only.includes("/") || existsSync(only)))
    return { source: only };
  const fields = fieldsOf(flow);
  const byFlag = new Map(fields.map((f) => [kebab(f.field), f]));
  const known = flagNames(flow);
  const shape = flow.input.shape ?? {};
  const raw: Record<string, unknown> = {};
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] as string;
    if (!arg.startsWith("--")) {
      if (flow.positional === undefined || raw[flow.positional] !== undefined)
        throw usage(
          `unexpected argument ${JSON.stringify(arg)}: give a JSON/YAML input file (.json, .yaml, .yml) or -, or the fields as flags (--${known[0] ?? "…"})`,
        );
      raw[flow.positional] = arg;
      continue;
    }
    const eq = arg.indexOf("=");
    const flag = (eq > 0 ? arg.slice(2, eq) : arg.slice(2)).toLowerCase();
    const fromFile = flag.endsWith("-file") && byFlag.has(flag.slice(0, -"-file".length));
    const info = byFlag.get(fromFile ? flag.slice(0, -"-file".length) : flag);
    if (!info) {
      const hint = didYouMean(flag, known);
      throw usage(
        `unknown flag --${flag} for \`ratchet ${flow.command.join(" ")}\`${hint ? ` (did you mean --${hint}?)` : ""}; flags: ${known.map((k) => `--${k}`).join(", ")}`,
        flag.replaceAll("-", "_"),
      );
    }
    let value: string | undefined = eq > 0 ? arg.slice(eq + 1) : undefined;
    if (value === undefined) {
      const next = args[i + 1];
      if (info.type === "boolean" && !fromFile && (next === undefined || next.startsWith("--")))
        value = "true";
      else {
        if (next === undefined) throw usage(`--${flag} needs a value`, info.field);
        value = next;
        i++;
      }
    }
    if (fromFile) {
      raw[info.field] = readFileText(value, flag, info.field);
      continue;
    }
    raw[info.field] = coerce(info, shape[info.field], flag, value);
  }
  return { raw };
}

function readFileText(path: string, flag: string, field: string): string {
  try {
    return path === "-" ? readInputText("-") : readFileSync(path, "utf8");
  } catch (e) {
    throw new RatchetError(
      ErrorCode.UnreadableInput,
      `--${flag}: cannot read ${path}: ${(e as Error).message}`,
      {
        field,
      },
    );
  }
}

/** The `--help` text after the usage line: the input's fields, the flags, and an example. */
export function flowHelp(flow: AnyFlow): string {
  const fields = fieldsOf(flow);
  const width = Math.max(...fields.map((f) => f.field.length), 4);
  const rows = fields.map(
    (f) =>
      `  ${f.field.padEnd(width)}  ${f.required ? "required" : "optional"}  ${f.type}${f.description ? `  — ${f.description}` : ""}`,
  );
  const pos = flow.positional ? ` <${flow.positional}>` : "";
  const flagExample = Object.entries(flow.example)
    .filter(([k]) => k !== flow.positional)
    .map(([k, v]) => `--${kebab(k)} ${JSON.stringify(typeof v === "string" ? v : JSON.stringify(v))}`)
    .join(" ");
  const posValue = flow.positional
    ? ` ${String(flow.example[flow.positional] ?? `<${flow.positional}>`)}`
    : "";
  return [
    "",
    `Input: a JSON or YAML file (.json, .yaml, .yml) or - for stdin, with these fields (keys starting with _ are ignored):`,
    ...rows,
    "",
    `Or the same fields as flags: ratchet ${flow.command.join(" ")}${pos} --<field-with-dashes> <value>`,
    "  (text fields also take --<field>-file <path>; lists and objects take JSON):",
    `  ${flagNames(flow)
      .map((f) => `--${f}`)
      .join(", ")}`,
    "",
    "Example:",
    `  echo '${JSON.stringify(flow.example)}' | ratchet ${flow.command.join(" ")} -`,
    ...(flagExample || posValue
      ? [`  ratchet ${flow.command.join(" ")}${posValue}${flagExample ? ` ${flagExample}` : ""}`]
      : []),
    ...(flow.refusals.length
      ? ["", "Refusals:", ...flow.refusals.map((r) => `  exit ${r.exit} (${r.code}): ${r.when}`)]
      : []),
  ].join("\n");
}

/** The op table of docs/cli.md, generated from FLOWS (checked by a test). */
export function flowTable(flows: readonly AnyFlow[]): string {
  const esc = (s: string) => s.replaceAll("|", "\\|");
  const rows = flows.map(
    (f) =>
      `| \`${f.op}\` | \`ratchet ${f.command.join(" ")}${f.positional ? ` [<${f.positional}>]` : ""}\` | \`${f.op}.sh\` | ${esc(f.summary)} | ${[...new Set([2, 3, ...f.refusals.map((r) => r.exit)])].sort((a, b) => a - b).join(", ")} |`,
  );
  return [
    "| op | command | shim | what it does | refusal exits |",
    "| --- | --- | --- | --- | --- |",
    ...rows,
  ].join("\n");
}
