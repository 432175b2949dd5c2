/**
 * The cross-field rules of a workflow file, checked after its structure: normalised and unique
 * names, unique step ids, dependencies on earlier steps, regexes that compile, JSONPaths that parse,
 * safe file names, read-only queries, groups that only set declared variables. Each problem is
 * pushed onto `issues` with its field path.
 */
import { parsePath } from "./jsonpath.js";
import { formatFieldPath, type Issue, shown, zodIssues } from "./schema-issues.js";
import { MAX_ID_CHARS, type RawWorkflow, variableListSchema, variableMapSchema } from "./schema-shapes.js";
import type { AgentConfigs, ValidationSchema, Workflow, WorkflowStep } from "./types.js";
import { isReadOnlyQuery, safeRelativeName } from "./validation-checks.js";

/** Step ids: lowercase letters, digits, `_` and `-`, starting with a letter or digit. */
export const STEP_ID_PATTERN = /^[a-z0-9][a-z0-9_-]*$/;
/** Workflow ids: kebab-case or snake_case, like step ids. */
export const WORKFLOW_ID_PATTERN = /^[a-z0-9][a-z0-9_-]*$/;
/** Variable and secret names after normalisation (no `VAR_`/`SECRET_` prefix, upper case). */
export const VARIABLE_NAME_PATTERN = /^[A-Z][A-Z0-9_]*$/;
const GROUP_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.-]*$/;

/** `var_region`, `VAR_REGION`, `region` → `REGION`. */
export function normaliseVariableName(name: string): string {
  const upper = name.trim().toUpperCase();
  return upper.startsWith("VAR_") ? upper.slice(4) : upper;
}

/** `secret_token`, `SECRET_TOKEN`, `token` → `TOKEN`. */
export function normaliseSecretName(name: string): string {
  const upper = name.trim().toUpperCase();
  return upper.startsWith("SECRET_") ? upper.slice(7) : upper;
}

export function normaliseNames(
  names: { name: string; at: string }[],
  normalise: (n: string) => string,
  kind: string,
  issues: Issue[],
): string[] {
  const seen = new Map<string, string>();
  const out: string[] = [];
  for (const { name, at } of names) {
    const norm = normalise(name);
    if (!VARIABLE_NAME_PATTERN.test(norm) || norm.length > MAX_ID_CHARS) {
      issues.push({
        path: at,
        message: `${kind} name ${JSON.stringify(name)} must be letters, digits and _ starting with a letter (normalised: ${JSON.stringify(norm)})`,
      });
      continue;
    }
    const first = seen.get(norm);
    if (first !== undefined) {
      issues.push({ path: at, message: `${kind} ${norm} is declared twice (first at ${first})` });
      continue;
    }
    seen.set(norm, at);
    out.push(norm);
  }
  return out;
}

export function checkVariables(raw: unknown, issues: Issue[]): Workflow["variables"] {
  const out: Workflow["variables"] = {};
  if (raw === undefined || raw === null) return out;
  if (Array.isArray(raw)) {
    const parsed = variableListSchema.safeParse(raw, { reportInput: true });
    if (!parsed.success) {
      issues.push(...zodIssues(parsed.error.issues, ["variables"]));
      return out;
    }
    const names = normaliseNames(
      parsed.data.map((name, i) => ({ name, at: `variables[${i}]` })),
      normaliseVariableName,
      "variable",
      issues,
    );
    for (const n of names) out[n] = {};
    return out;
  }
  const parsed = variableMapSchema.safeParse(raw, { reportInput: true });
  if (!parsed.success) {
    const typeOnly = typeof raw !== "object";
    if (typeOnly)
      issues.push({
        path: "variables",
        message: `must be a list of names or a map name → {default, description} (got ${shown(raw)})`,
      });
    else issues.push(...zodIssues(parsed.error.issues, ["variables"]));
    return out;
  }
  const entries = Object.entries(parsed.data);
  const names = normaliseNames(
    entries.map(([name]) => ({ name, at: formatFieldPath(["variables", name]) })),
    normaliseVariableName,
    "variable",
    issues,
  );
  for (const [name, def] of entries) {
    const norm = normaliseVariableName(name);
    if (!names.includes(norm) || out[norm]) continue;
    out[norm] = {
      ...(def?.default !== undefined ? { default: def.default } : {}),
      ...(def?.description !== undefined ? { description: def.description } : {}),
    };
  }
  return out;
}

export function checkGroups(
  raw: RawWorkflow["groups"],
  variables: Workflow["variables"],
  issues: Issue[],
): Workflow["groups"] {
  const out: Workflow["groups"] = {};
  for (const [group, values] of Object.entries(raw ?? {})) {
    if (!GROUP_NAME_PATTERN.test(group)) {
      issues.push({
        path: formatFieldPath(["groups", group]),
        message: "group name must be letters, digits, `_`, `-` and `.` starting with a letter or digit",
      });
      continue;
    }
    const vars: Record<string, string> = {};
    for (const [name, value] of Object.entries(values)) {
      const norm = normaliseVariableName(name);
      const at = formatFieldPath(["groups", group, name]);
      if (!Object.hasOwn(variables, norm)) {
        issues.push({ path: at, message: `variable ${norm} is not declared in \`variables\`` });
        continue;
      }
      if (Object.hasOwn(vars, norm)) {
        issues.push({ path: at, message: `variable ${norm} is set twice in group ${group}` });
        continue;
      }
      vars[norm] = value;
    }
    out[group] = vars;
  }
  return out;
}

function compiles(pattern: string): string | undefined {
  try {
    new RegExp(pattern);
    return undefined;
  } catch (e) {
    return e instanceof Error ? e.message : String(e);
  }
}

function checkJsonPath(path: string, at: string, issues: Issue[]): void {
  try {
    parsePath(path);
  } catch (e) {
    issues.push({ path: at, message: e instanceof Error ? e.message : String(e) });
  }
}

function checkValidation(v: ValidationSchema, at: string, issues: Issue[]): void {
  const seen = new Set<string>();
  (v.files ?? []).forEach((file, fi) => {
    const fat = `${at}.files[${fi}]`;
    const why = safeRelativeName(file.file_name);
    if (why) issues.push({ path: `${fat}.file_name`, message: why });
    if (seen.has(file.file_name))
      issues.push({ path: `${fat}.file_name`, message: `${file.file_name} is listed twice` });
    seen.add(file.file_name);
    (file.json_checks ?? []).forEach((check, ci) => {
      const cat = `${fat}.json_checks[${ci}]`;
      checkJsonPath(check.path, `${cat}.path`, issues);
      if (check.consistency_check)
        checkJsonPath(
          check.consistency_check.compare_with_path,
          `${cat}.consistency_check.compare_with_path`,
          issues,
        );
      if (check.pattern !== undefined) {
        const err = compiles(check.pattern);
        if (err) issues.push({ path: `${cat}.pattern`, message: `does not compile: ${err}` });
      }
      if (
        check.min_length !== undefined &&
        check.max_length !== undefined &&
        check.min_length > check.max_length
      )
        issues.push({ path: `${cat}.min_length`, message: "is greater than max_length" });
      if (check.min_value !== undefined && check.max_value !== undefined && check.min_value > check.max_value)
        issues.push({ path: `${cat}.min_value`, message: "is greater than max_value" });
    });
  });
  (v.db_checks ?? []).forEach((check, di) => {
    const dat = `${at}.db_checks[${di}]`;
    const why = safeRelativeName(check.file_name);
    if (why) issues.push({ path: `${dat}.file_name`, message: why });
    if (!isReadOnlyQuery(check.query))
      issues.push({ path: `${dat}.query`, message: "only a single SELECT or WITH query is allowed" });
    if (check.min_rows !== undefined && check.max_rows !== undefined && check.min_rows > check.max_rows)
      issues.push({ path: `${dat}.min_rows`, message: "is greater than max_rows" });
  });
}

export function clean<T extends object>(o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;
}

export function checkSteps(raw: RawWorkflow["steps"], issues: Issue[]): WorkflowStep[] {
  const index = new Map<string, number>();
  raw.forEach((s, i) => {
    if (!STEP_ID_PATTERN.test(s.id)) {
      issues.push({
        path: `steps[${i}].id`,
        message: `step id ${JSON.stringify(s.id)} must match ${STEP_ID_PATTERN} (lowercase letters, digits, _ and -)`,
      });
    } else if (index.has(s.id)) {
      issues.push({
        path: `steps[${i}].id`,
        message: `duplicate step id ${s.id} (also steps[${index.get(s.id)}])`,
      });
    } else {
      index.set(s.id, i);
    }
  });
  return raw.map((s, i) => {
    if (s.description.trim() === "")
      issues.push({ path: `steps[${i}].description`, message: "must not be empty" });
    const deps = s.context_dependencies ?? [];
    const seenDeps = new Set<string>();
    deps.forEach((dep, di) => {
      const at = `steps[${i}].context_dependencies[${di}]`;
      const j = index.get(dep);
      if (seenDeps.has(dep)) issues.push({ path: at, message: `step ${s.id} lists dependency ${dep} twice` });
      else if (dep === s.id) issues.push({ path: at, message: `step ${s.id} depends on itself` });
      else if (j === undefined)
        issues.push({ path: at, message: `step ${s.id} depends on unknown step ${dep}` });
      else if (j > i)
        issues.push({
          path: at,
          message: `step ${s.id} depends on ${dep}, which comes later (steps[${j}]); dependencies must be earlier steps`,
        });
      seenDeps.add(dep);
    });
    if (s.validation) checkValidation(s.validation, `steps[${i}].validation`, issues);
    const step: WorkflowStep = {
      id: s.id,
      description: s.description,
      context_dependencies: deps,
      agent_configs: clean(s.agent_configs ?? {}) as AgentConfigs,
    };
    if (s.validation) step.validation = s.validation as ValidationSchema;
    if (s.allowed_tools) step.allowed_tools = s.allowed_tools;
    if (s.predefined_routes) {
      const seenRoutes = new Set<string>();
      s.predefined_routes.forEach((r, ri) => {
        if (seenRoutes.has(r.id))
          issues.push({
            path: `steps[${i}].predefined_routes[${ri}].id`,
            message: `duplicate route id ${r.id}`,
          });
        seenRoutes.add(r.id);
      });
      step.predefined_routes = s.predefined_routes;
    }
    return step;
  });
}
