/**
 * Parallel branches: siblings whose run times overlap are shown side by side; the timeline's bars
 * and lanes. Pure (tested in test/web/lanes.test.ts and test/web/run-timeline.test.ts).
 */

// biome-ignore lint/suspicious/noExplicitAny: JSON from the API is read field by field
type Json = any;

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

export interface Bar {
  step: Json;
  start: number;
  end: number;
  lane: number;
  depth: number;
  running: boolean;
}

/** The timeline's bars in tree order with lanes: a bar takes the lowest lane free at its start. Pure. */
export function bars(steps: readonly Json[], now: number): Bar[] {
  const byParent = new Map<string | null, Json[]>();
  const ids = new Set(steps.map((s) => s.step_id));
  for (const s of steps) {
    const k = s.parent_step_id && ids.has(s.parent_step_id) ? s.parent_step_id : null;
    byParent.set(k, [...(byParent.get(k) ?? []), s]);
  }
  const out: Bar[] = [];
  const laneEnds: number[] = [];
  const walk = (parent: string | null, depth: number) => {
    const kids = [...(byParent.get(parent) ?? [])].sort(
      (a, b) => Date.parse(a.started_at ?? "") - Date.parse(b.started_at ?? "") || a.seq - b.seq,
    );
    for (const s of kids) {
      if (s.started_at) {
        const start = Date.parse(s.started_at);
        const running = !s.finished_at;
        const end = Math.max(start, running ? now : Date.parse(s.finished_at));
        let lane = laneEnds.findIndex((e) => e <= start);
        if (lane < 0) lane = laneEnds.length;
        laneEnds[lane] = end;
        out.push({ step: s, start, end, lane, depth, running });
      }
      walk(s.step_id, depth + 1);
    }
  };
  walk(null, 0);
  return out;
}
