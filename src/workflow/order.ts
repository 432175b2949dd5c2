/**
 * Execution order of a workflow's steps and `--only` selection. Pure: no I/O.
 */
import { ErrorCode, RatchetError } from "../core/errors.js";

export interface OrderStep {
  id: string;
  context_dependencies: readonly string[];
}

/**
 * Steps in dependency order: every step after all of its `context_dependencies`, ties kept in
 * file order (a stable topological sort).
 *
 * @throws RatchetError `schema_violation` naming an unknown dependency or a dependency cycle.
 */
export function executionOrder(steps: readonly OrderStep[]): string[] {
  const index = new Map(steps.map((s, i) => [s.id, i]));
  for (const s of steps) {
    for (const d of s.context_dependencies) {
      if (!index.has(d))
        throw new RatchetError(
          ErrorCode.SchemaViolation,
          `field \`steps[${index.get(s.id)}].context_dependencies\`: step ${s.id} depends on unknown step ${d}`,
          { field: `steps[${index.get(s.id)}].context_dependencies`, stepId: s.id },
        );
    }
  }
  const done = new Set<string>();
  const order: string[] = [];
  while (order.length < steps.length) {
    const next = steps.find((s) => !done.has(s.id) && s.context_dependencies.every((d) => done.has(d)));
    if (!next) {
      const stuck = steps.filter((s) => !done.has(s.id)).map((s) => s.id);
      throw new RatchetError(
        ErrorCode.SchemaViolation,
        `field \`steps\`: context_dependencies form a cycle among ${stuck.join(", ")}`,
        { field: "steps" },
      );
    }
    done.add(next.id);
    order.push(next.id);
  }
  return order;
}

/**
 * The steps a run executes, in `order`: all of them, or the `--only` list (each must exist).
 *
 * @throws RatchetError `usage` naming an unknown step id.
 */
export function selectSteps(order: readonly string[], only: readonly string[] | undefined): string[] {
  if (only === undefined || only.length === 0) return [...order];
  const unknown = only.filter((id) => !order.includes(id));
  if (unknown.length > 0)
    throw new RatchetError(
      ErrorCode.Usage,
      `--only: no step ${unknown.join(", ")} in this workflow (steps: ${order.join(", ")})`,
      { field: "only" },
    );
  return order.filter((id) => only.includes(id));
}

/** Parses `--only a,b c` (commas or spaces) into step ids. */
export function parseOnly(values: readonly string[] | string | undefined): string[] | undefined {
  if (values === undefined) return undefined;
  const list = (Array.isArray(values) ? values : [values])
    .flatMap((v) => v.split(/[\s,]+/))
    .map((v) => v.trim())
    .filter((v) => v !== "");
  return list.length > 0 ? list : undefined;
}
