/**
 * Parallel branches: siblings whose run times overlap are shown side by side. Pure (tested in
 * test/web/lanes.test.ts).
 */

export interface Timed {
  step_id: string;
  parent_step_id: string | null;
  seq: number;
  started_at: string | null;
  finished_at: string | null;
}

function interval(s: Timed, now: number): [number, number] | undefined {
  if (!s.started_at) return undefined;
  const a = Date.parse(s.started_at);
  const b = s.finished_at ? Date.parse(s.finished_at) : now;
  return [a, Math.max(a, b)];
}

/**
 * Groups siblings (in `seq` order) into rows: a step joins the row before it when its run time
 * overlaps the row's span; otherwise it starts a new row. Steps that never started stand alone.
 */
export function parallelRows<T extends Timed>(siblings: readonly T[], now = Date.now()): T[][] {
  const ordered = [...siblings].sort((x, y) => x.seq - y.seq);
  const rows: T[][] = [];
  let row: T[] = [];
  let span: [number, number] | undefined;
  for (const s of ordered) {
    const iv = interval(s, now);
    if (iv && span && row.length > 0 && iv[0] < span[1] && span[0] < iv[1]) {
      row.push(s);
      span = [Math.min(span[0], iv[0]), Math.max(span[1], iv[1])];
      continue;
    }
    if (row.length > 0) rows.push(row);
    row = [s];
    span = iv;
  }
  if (row.length > 0) rows.push(row);
  return rows;
}

/** Children by parent id (null: top level). */
export function childrenByParent<T extends Timed>(steps: readonly T[]): Map<string | null, T[]> {
  const ids = new Set(steps.map((s) => s.step_id));
  const m = new Map<string | null, T[]>();
  for (const s of steps) {
    const key = s.parent_step_id && ids.has(s.parent_step_id) ? s.parent_step_id : null;
    const list = m.get(key) ?? [];
    list.push(s);
    m.set(key, list);
  }
  return m;
}
