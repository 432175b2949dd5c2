/**
 * `ratchet store copy <from> <to>` and `ratchet store verify <a> <b>`: a workspace's records from
 * one store into another (SQLite ⇄ PostgreSQL), checked by counts and hashes (src/store/copy.ts).
 * Thin: parse, open both ends, call, print.
 */
import type { Command } from "commander";
import { ErrorCode, RatchetError } from "../core/index.js";
import {
  type CopyEnd,
  type CopyReport,
  copyStore,
  firstMismatch,
  openCopyEnd,
  verifyStores,
} from "../store/index.js";
import { err, out } from "./io.js";

type Act = <A extends unknown[]>(fn: (...a: A) => Promise<number>) => (...a: A) => Promise<void>;

interface CopyFlags {
  batch?: string;
  json?: boolean;
  quiet?: boolean;
}

function batchOf(raw: string | undefined): number | undefined {
  if (raw === undefined) return undefined;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > 10_000)
    throw new RatchetError(ErrorCode.Usage, `--batch must be a whole number from 1 to 10000 (got ${raw})`, {
      field: "batch",
    });
  return n;
}

/** `table rows hash-ok`, one line per table and one for the blobs. */
export function renderReport(r: CopyReport): string {
  const rows: [string, string, string][] = r.tables.map((t) => [
    t.table,
    t.rows === t.targetRows ? String(t.rows) : `${t.rows}→${t.targetRows}`,
    t.ok ? "ok" : `MISMATCH${t.note ? ` (${t.note})` : ""}`,
  ]);
  rows.push([
    "blobs",
    r.blobs.count === r.blobs.targetCount ? String(r.blobs.count) : `${r.blobs.count}→${r.blobs.targetCount}`,
    r.blobs.ok ? "ok" : "MISMATCH",
  ]);
  const w0 = Math.max(5, ...rows.map((x) => x[0].length));
  const w1 = Math.max(4, ...rows.map((x) => x[1].length));
  const line = (a: string, b: string, c: string) => `${a.padEnd(w0)}  ${b.padStart(w1)}  ${c}`;
  return [line("table", "rows", "hash-ok"), ...rows.map((x) => line(...x))].join("\n");
}

/** Opens both ends (the source first: a missing source creates nothing), runs `fn`, closes both. */
async function withEnds<T>(
  a: string,
  b: string,
  roles: ["from", "to"] | ["from", "from"],
  fn: (x: CopyEnd, y: CopyEnd) => T,
): Promise<T> {
  const x = openCopyEnd(a, roles[0]);
  try {
    const y = openCopyEnd(b, roles[1]);
    try {
      return fn(x, y);
    } finally {
      y.store.close();
    }
  } finally {
    x.store.close();
  }
}

function finish(r: CopyReport, o: CopyFlags, what: "copy" | "verify"): number {
  out(o.json ? JSON.stringify(r, null, 2) : renderReport(r));
  const bad = firstMismatch(r);
  if (bad)
    throw new RatchetError(
      ErrorCode.WorkFailed,
      what === "copy"
        ? `store copy: ${bad} of ${r.to} does not match ${r.from} after copying; the copy was rolled back, nothing was written`
        : `store verify: ${bad} differs between ${r.from} and ${r.to}`,
      { table: bad },
    );
  if (!o.json) {
    const rows = r.tables.reduce((n, t) => n + t.rows, 0);
    const verb = what === "copy" ? "copied" : "same in";
    out(
      `${verb} ${r.from} → ${r.to}: ${rows} rows in ${r.tables.length} tables, ${r.blobs.count} blobs (${r.blobs.bytes} bytes)${what === "copy" ? "; verified" : ""}`,
    );
    for (const n of r.notes) err(`note: ${n}`);
  }
  return 0;
}

/** `store copy`. @throws invalid_value (2) for a non-empty target or data with no place there, work_failed (8) on a mismatch. */
export async function storeCopy(from: string, to: string, o: CopyFlags): Promise<number> {
  const batchRows = batchOf(o.batch);
  const report = await withEnds(from, to, ["from", "to"], (x, y) =>
    copyStore(x, y, {
      ...(batchRows ? { batchRows } : {}),
      ...(o.quiet ? {} : { onProgress: (line: string) => err(`store copy: ${line}`) }),
    }),
  );
  return finish(report, o, "copy");
}

/** `store verify`: read-only. @throws work_failed (8) naming the first table that differs. */
export async function storeVerify(a: string, b: string, o: CopyFlags): Promise<number> {
  const batchRows = batchOf(o.batch);
  const report = await withEnds(a, b, ["from", "from"], (x, y) =>
    verifyStores(x, y, batchRows ? { batchRows } : {}),
  );
  return finish(report, o, "verify");
}

/** Registers `ratchet store copy|verify`. */
export function addStoreCommands(program: Command, act: Act): void {
  const store = program
    .command("store")
    .description("move a workspace's records between stores (SQLite ⇄ PostgreSQL)");
  store
    .command("copy <from> <to>")
    .description(
      "copy every plan, step, log, event, run, thread and blob of <from> into the empty store <to>, ids kept, verified by row counts and hashes, in one transaction of <to> (each end: a SQLite file, a workspace folder or a postgres:// URL)",
    )
    .option("--batch <rows>", "rows per statement (default 500)")
    .option("--quiet", "no progress lines on stderr")
    .option("--json", "machine-readable report")
    .addHelpText(
      "after",
      "\nExamples:\n  ratchet store copy . postgres://ratchet@db.internal/ratchet\n  ratchet store copy postgres://ratchet@db.internal/ratchet ./back.db",
    )
    .action(act(async (from: string, to: string, o: CopyFlags) => storeCopy(from, to, o)));
  store
    .command("verify <a> <b>")
    .description(
      "compare two stores table by table (row counts, content hashes) and their blobs; writes nothing",
    )
    .option("--batch <rows>", "rows per read (default 500)")
    .option("--json", "machine-readable report")
    .action(act(async (a: string, b: string, o: CopyFlags) => storeVerify(a, b, o)));
}
