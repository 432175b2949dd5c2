/**
 * A small input-schema toolkit for the ledger's write flows.
 *
 * Why not zod here: loading zod costs ~80 ms of process start-up on this class of machine (measured:
 * `await import("zod")`), more than the whole budget of a CLI write (DESIGN: a write within 1.6× a
 * bare `node -e 0`). These schemas are flat and few, so a strict hand-written checker keeps the
 * same contract: unknown fields rejected, every error names the field path, a JSON Schema for docs
 * and typed tools. Larger documents (workflows, task specs) use zod.
 */
import { ErrorCode, RatchetError } from "./errors.js";
import { FORBIDDEN_KEYS } from "./strict-input.js";

export interface Schema<T> {
  /** Validates `value` at `path`; throws `schema_violation` naming the path. */
  parse(value: unknown, path: string): T;
  /** The JSON Schema of this shape. */
  json(): Record<string, unknown>;
  readonly optional?: boolean;
}

export type Infer<S> = S extends Schema<infer T> ? T : never;

function fail(path: string, message: string, got?: unknown): never {
  const shown = got === undefined ? "" : ` (got ${describe(got)})`;
  throw new RatchetError(ErrorCode.SchemaViolation, `field \`${path}\`: ${message}${shown}`, { field: path });
}

function forbiddenKey(path: string): never {
  throw new RatchetError(
    ErrorCode.SchemaViolation,
    `field \`${path}\`: the keys ${FORBIDDEN_KEYS.join(", ")} are not accepted in any input`,
    { field: path },
  );
}

function describe(v: unknown): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "an array";
  if (typeof v === "string") return JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}…` : v);
  if (typeof v === "object") return "an object";
  return `${typeof v} ${String(v)}`;
}

export function str(
  opts: { min?: number; max?: number; pattern?: RegExp; description?: string } = {},
): Schema<string> {
  return {
    parse(v, path) {
      if (typeof v !== "string") fail(path, "must be a string", v);
      if (opts.min !== undefined && v.trim().length < opts.min)
        fail(path, opts.min === 1 ? "must not be empty" : `must be at least ${opts.min} characters`);
      if (opts.max !== undefined && v.length > opts.max)
        fail(path, `must be at most ${opts.max} characters (got ${v.length})`);
      if (opts.pattern && !opts.pattern.test(v)) fail(path, `must match ${opts.pattern}`, v);
      return v;
    },
    json: () => ({
      type: "string",
      ...(opts.min ? { minLength: opts.min } : {}),
      ...(opts.max ? { maxLength: opts.max } : {}),
      ...(opts.pattern ? { pattern: opts.pattern.source } : {}),
      ...(opts.description ? { description: opts.description } : {}),
    }),
  };
}

export function num(
  opts: { int?: boolean; min?: number; max?: number; exclusiveMin?: number; description?: string } = {},
): Schema<number> {
  return {
    parse(v, path) {
      if (typeof v !== "number" || !Number.isFinite(v)) fail(path, "must be a finite number", v);
      if (opts.int && !Number.isInteger(v)) fail(path, "must be an integer", v);
      if (opts.min !== undefined && v < opts.min) fail(path, `must be ≥ ${opts.min}`, v);
      if (opts.max !== undefined && v > opts.max) fail(path, `must be ≤ ${opts.max}`, v);
      if (opts.exclusiveMin !== undefined && v <= opts.exclusiveMin)
        fail(path, `must be > ${opts.exclusiveMin}`, v);
      return v;
    },
    json: () => ({
      type: opts.int ? "integer" : "number",
      ...(opts.min !== undefined ? { minimum: opts.min } : {}),
      ...(opts.max !== undefined ? { maximum: opts.max } : {}),
      ...(opts.exclusiveMin !== undefined ? { exclusiveMinimum: opts.exclusiveMin } : {}),
      ...(opts.description ? { description: opts.description } : {}),
    }),
  };
}

export function bool(description?: string): Schema<boolean> {
  return {
    parse(v, path) {
      if (typeof v !== "boolean") fail(path, "must be true or false", v);
      return v;
    },
    json: () => ({ type: "boolean", ...(description ? { description } : {}) }),
  };
}

export function oneOf<const T extends string>(values: readonly T[], description?: string): Schema<T> {
  return {
    parse(v, path) {
      if (typeof v !== "string" || !(values as readonly string[]).includes(v))
        fail(path, `must be one of ${values.join(", ")}`, v);
      return v as T;
    },
    json: () => ({ type: "string", enum: [...values], ...(description ? { description } : {}) }),
  };
}

export function arr<T>(
  item: Schema<T>,
  opts: { min?: number; max?: number; description?: string } = {},
): Schema<T[]> {
  return {
    parse(v, path) {
      if (!Array.isArray(v)) fail(path, "must be an array", v);
      if (opts.min !== undefined && v.length < opts.min)
        fail(path, opts.min === 1 ? "must have at least one item" : `must have at least ${opts.min} items`);
      if (opts.max !== undefined && v.length > opts.max)
        fail(path, `must have at most ${opts.max} items (got ${v.length})`);
      return v.map((x, i) => item.parse(x, `${path}[${i}]`));
    },
    json: () => ({
      type: "array",
      items: item.json(),
      ...(opts.min !== undefined ? { minItems: opts.min } : {}),
      ...(opts.max !== undefined ? { maxItems: opts.max } : {}),
      ...(opts.description ? { description: opts.description } : {}),
    }),
  };
}

/** Marks a field optional: absent (or null) is allowed and reads as `undefined`. */
export function opt<T>(inner: Schema<T>): Schema<T | undefined> & { readonly optional: true } {
  return {
    optional: true as const,
    parse(v, path) {
      return v === undefined || v === null ? undefined : inner.parse(v, path);
    },
    json: () => inner.json(),
  };
}

type Shape = Record<string, Schema<unknown>>;
type ObjOut<S extends Shape> = {
  [K in keyof S as S[K] extends { optional: true } ? never : K]: Infer<S[K]>;
} & {
  [K in keyof S as S[K] extends { optional: true } ? K : never]?: Infer<S[K]>;
};

/** A strict object: unknown fields are rejected by name, required fields must be present. */
export function obj<S extends Shape>(shape: S, description?: string): Schema<ObjOut<S>> & { shape: S } {
  return {
    shape,
    parse(v, path) {
      if (typeof v !== "object" || v === null || Array.isArray(v))
        fail(path || "(input)", "must be a JSON object", v);
      const rec = v as Record<string, unknown>;
      const prefix = path ? `${path}.` : "";
      // A prototype other than Object's means a parser assigned `__proto__`: its fields would be
      // read through the prototype below, so it is refused like the key itself.
      const proto = Object.getPrototypeOf(rec) as unknown;
      if (proto !== Object.prototype && proto !== null) forbiddenKey(`${prefix}__proto__`);
      for (const k of Object.keys(rec)) {
        if (FORBIDDEN_KEYS.includes(k)) forbiddenKey(`${prefix}${k}`);
        // Own keys only: `"constructor" in shape` is true for every object literal.
        if (!Object.hasOwn(shape, k)) {
          throw new RatchetError(
            ErrorCode.SchemaViolation,
            `field \`${prefix}${k}\`: unknown field (allowed: ${Object.keys(shape).join(", ")})`,
            { field: `${prefix}${k}` },
          );
        }
      }
      const out: Record<string, unknown> = {};
      for (const [k, s] of Object.entries(shape)) {
        const given = Object.hasOwn(rec, k) ? rec[k] : undefined;
        if (!s.optional && (given === undefined || given === null)) fail(`${prefix}${k}`, "is required");
        const parsed = s.parse(given, `${prefix}${k}`);
        if (parsed !== undefined) out[k] = parsed;
      }
      return out as ObjOut<S>;
    },
    json: () => ({
      type: "object",
      additionalProperties: false,
      properties: Object.fromEntries(Object.entries(shape).map(([k, s]) => [k, s.json()])),
      required: Object.entries(shape)
        .filter(([, s]) => !s.optional)
        .map(([k]) => k),
      ...(description ? { description } : {}),
    }),
  };
}
