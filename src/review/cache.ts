/**
 * A content-addressed cache of review reports. A review is a pure function of the script's text,
 * its language, its file name and the declared variables, so a report computed once for the same
 * inputs and the same review engine is the report: the fast path of a learned step whose script has
 * not changed skips the parse. Entries live in `<dir>/<ab>/<key>.json`, written atomically; a
 * missing, torn or foreign entry is simply reviewed again. The cache is an optimisation only — a
 * failure to read or write it never changes a verdict.
 */
import { createHash, randomBytes } from "node:crypto";
import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { reviewScript } from "./review.js";
import type { ReviewOptions, ReviewReport } from "./types.js";

/**
 * Bump on every change to what the review reports (rules, facts, parsers, messages). A test pins a
 * hash of the review sources to this number, so a change to them without a bump fails the build.
 */
export const REVIEW_ENGINE_REVISION = 2;

export type Reviewer = (source: string, opts: ReviewOptions) => Promise<ReviewReport>;

/** The cache key of one review: sha256 over the engine revision and every input of the review. */
export function reviewCacheKey(source: string, opts: ReviewOptions): string {
  const declared = opts.declared === undefined ? null : [...opts.declared].sort();
  return createHash("sha256")
    .update(
      JSON.stringify([REVIEW_ENGINE_REVISION, opts.language, opts.filename ?? null, declared, source.length]),
    )
    .update("\0")
    .update(source)
    .digest("hex");
}

interface Entry {
  revision: number;
  key: string;
  report: ReviewReport;
}

function looksLikeReport(r: unknown): r is ReviewReport {
  if (typeof r !== "object" || r === null) return false;
  const o = r as Record<string, unknown>;
  return (
    typeof o.ok === "boolean" &&
    Array.isArray(o.findings) &&
    typeof o.blocking === "number" &&
    typeof o.warnings === "number" &&
    typeof o.lines === "number" &&
    o.ok === (o.blocking === 0)
  );
}

function read(file: string, key: string): ReviewReport | undefined {
  try {
    const e = JSON.parse(readFileSync(file, "utf8")) as Partial<Entry>;
    if (e.revision === REVIEW_ENGINE_REVISION && e.key === key && looksLikeReport(e.report)) return e.report;
  } catch {
    // missing or unreadable: review again
  }
  return undefined;
}

function write(dir: string, file: string, entry: Entry): void {
  const tmp = `${file}.tmp-${process.pid}-${randomBytes(4).toString("hex")}`;
  try {
    mkdirSync(dir, { recursive: true });
    writeFileSync(tmp, JSON.stringify(entry));
    renameSync(tmp, file);
  } catch {
    rmSync(tmp, { force: true });
  }
}

/** `reviewScript` (or `review`) behind the cache in `dir`. */
export function cachedReviewer(dir: string, review: Reviewer = reviewScript): Reviewer {
  return async (source, opts) => {
    const key = reviewCacheKey(source, opts);
    const sub = join(dir, key.slice(0, 2));
    const file = join(sub, `${key}.json`);
    const hit = read(file, key);
    if (hit) return hit;
    const report = await review(source, opts);
    write(sub, file, { revision: REVIEW_ENGINE_REVISION, key, report });
    return report;
  };
}
