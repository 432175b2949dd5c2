/**
 * A small JSON Schema checker for tool arguments (pure: no I/O). It covers the subset tool schemas
 * use — `type` (one or a list), `properties`, `required`, `additionalProperties` (false or a
 * schema), `enum`, `const`, `items`, `minItems`/`maxItems`, `minimum`/`maximum`,
 * `exclusiveMinimum`/`exclusiveMaximum`, `minLength`/`maxLength`, `pattern`, `anyOf`/`oneOf`/`allOf`
 * — and ignores every other keyword (the tool checks again). The first problem found is reported,
 * naming the argument's path (`filter.tags[2]`).
 */

/** A JSON Schema document (only the keywords above are read). */
export type JsonSchema = Record<string, unknown>;

/** The first problem of a value: where (`path`, empty for the whole arguments object) and what. */
export interface SchemaProblem {
  path: string;
  message: string;
}

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);

/** The JSON type name of a value (`integer` is reported as `number`). */
export function jsonTypeOf(v: unknown): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "array";
  return typeof v;
}

function shown(v: unknown): string {
  const type = jsonTypeOf(v);
  if (type === "string") {
    const s = v as string;
    return `string ${JSON.stringify(s.length > 40 ? `${s.slice(0, 40)}…` : s)}`;
  }
  if (type === "number" || type === "boolean") return `${type} ${String(v)}`;
  return type;
}

function matchesType(v: unknown, type: string): boolean {
  switch (type) {
    case "string":
      return typeof v === "string";
    case "number":
      return typeof v === "number" && Number.isFinite(v);
    case "integer":
      return typeof v === "number" && Number.isInteger(v);
    case "boolean":
      return typeof v === "boolean";
    case "null":
      return v === null;
    case "array":
      return Array.isArray(v);
    case "object":
      return isObject(v);
    default:
      return true; // an unknown type name constrains nothing here
  }
}

function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a) && Array.isArray(b))
    return a.length === b.length && a.every((x, i) => deepEqual(x, b[i]));
  if (isObject(a) && isObject(b)) {
    const ka = Object.keys(a);
    return (
      ka.length === Object.keys(b).length && ka.every((k) => Object.hasOwn(b, k) && deepEqual(a[k], b[k]))
    );
  }
  return false;
}

const join = (path: string, key: string) => (path ? `${path}.${key}` : key);
const num = (v: unknown): number | undefined => (typeof v === "number" ? v : undefined);

/**
 * Checks `value` against `schema` and returns the first problem, or `undefined` when it conforms.
 * A schema that is not an object (or `true`) accepts everything; `false` accepts nothing.
 */
export function checkSchema(schema: unknown, value: unknown, path = ""): SchemaProblem | undefined {
  if (schema === false) return { path, message: "is not allowed" };
  if (!isObject(schema)) return undefined;
  const fail = (message: string): SchemaProblem => ({ path, message });

  const type = schema["type"];
  const types = typeof type === "string" ? [type] : Array.isArray(type) ? type.map(String) : [];
  if (types.length > 0 && !types.some((t) => matchesType(value, t)))
    return fail(
      `must be ${types.length === 1 ? article(types[0]!) : `one of ${types.join(", ")}`} (got ${shown(value)})`,
    );

  if (Array.isArray(schema["enum"]) && !schema["enum"].some((e) => deepEqual(e, value)))
    return fail(
      `must be one of ${schema["enum"].map((e) => JSON.stringify(e)).join(", ")} (got ${shown(value)})`,
    );
  if ("const" in schema && !deepEqual(schema["const"], value))
    return fail(`must be ${JSON.stringify(schema["const"])} (got ${shown(value)})`);

  for (const key of ["anyOf", "oneOf"] as const) {
    const options = schema[key];
    if (Array.isArray(options) && options.length > 0 && options.every((s) => checkSchema(s, value, path)))
      return fail(`does not match any allowed shape (got ${shown(value)})`);
  }
  if (Array.isArray(schema["allOf"])) {
    for (const s of schema["allOf"]) {
      const p = checkSchema(s, value, path);
      if (p) return p;
    }
  }

  if (typeof value === "string") {
    const length = [...value].length;
    const min = num(schema["minLength"]);
    const max = num(schema["maxLength"]);
    if (min !== undefined && length < min) return fail(`must be at least ${min} characters (got ${length})`);
    if (max !== undefined && length > max) return fail(`must be at most ${max} characters (got ${length})`);
    if (typeof schema["pattern"] === "string") {
      let re: RegExp | undefined;
      try {
        re = new RegExp(schema["pattern"], "u");
      } catch {
        re = undefined; // a pattern JavaScript cannot compile is left to the tool
      }
      if (re && !re.test(value)) return fail(`must match /${schema["pattern"]}/ (got ${shown(value)})`);
    }
  }

  if (typeof value === "number") {
    const min = num(schema["minimum"]);
    const max = num(schema["maximum"]);
    const xmin = num(schema["exclusiveMinimum"]);
    const xmax = num(schema["exclusiveMaximum"]);
    if (min !== undefined && value < min) return fail(`must be ≥ ${min} (got ${value})`);
    if (max !== undefined && value > max) return fail(`must be ≤ ${max} (got ${value})`);
    if (xmin !== undefined && value <= xmin) return fail(`must be > ${xmin} (got ${value})`);
    if (xmax !== undefined && value >= xmax) return fail(`must be < ${xmax} (got ${value})`);
  }

  if (Array.isArray(value)) {
    const min = num(schema["minItems"]);
    const max = num(schema["maxItems"]);
    if (min !== undefined && value.length < min)
      return fail(`must have at least ${min} items (got ${value.length})`);
    if (max !== undefined && value.length > max)
      return fail(`must have at most ${max} items (got ${value.length})`);
    if (isObject(schema["items"]) || typeof schema["items"] === "boolean") {
      for (let i = 0; i < value.length; i++) {
        const p = checkSchema(schema["items"], value[i], `${path}[${i}]`);
        if (p) return p;
      }
    }
  }

  if (isObject(value)) {
    const properties = isObject(schema["properties"]) ? schema["properties"] : {};
    if (Array.isArray(schema["required"])) {
      for (const name of schema["required"]) {
        if (typeof name === "string" && !Object.hasOwn(value, name))
          return { path: join(path, name), message: "is required" };
      }
    }
    for (const [name, v] of Object.entries(value)) {
      const sub = join(path, name);
      if (Object.hasOwn(properties, name)) {
        const p = checkSchema(properties[name], v, sub);
        if (p) return p;
      } else if (schema["additionalProperties"] === false) {
        const allowed = Object.keys(properties);
        return {
          path: sub,
          message: `is not an accepted argument (accepted: ${allowed.length ? allowed.join(", ") : "none"})`,
        };
      } else if (isObject(schema["additionalProperties"])) {
        const p = checkSchema(schema["additionalProperties"], v, sub);
        if (p) return p;
      }
    }
  }
  return undefined;
}

function article(type: string): string {
  if (type === "array" || type === "object" || type === "integer") return `an ${type}`;
  if (type === "null") return "null";
  return `a ${type}`;
}

/** One line naming the problem: ``argument `a` must be a number (got string "x")``. */
export function describeProblem(p: SchemaProblem): string {
  return p.path === "" ? `arguments ${p.message}` : `argument \`${p.path}\` ${p.message}`;
}
