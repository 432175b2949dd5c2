import { createHash } from "node:crypto";
import { chmodSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { cachedReviewer, REVIEW_ENGINE_REVISION, type Reviewer, reviewCacheKey } from "./cache.js";
import { reviewScript } from "./review.js";

const HERE = dirname(fileURLToPath(import.meta.url));

/** sha256 over every review source that decides a report (tests, re-exports and the cache excluded). */
function reviewSourcesHash(): string {
  const files: string[] = [];
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (
        e.name.endsWith(".ts") &&
        !e.name.endsWith(".test.ts") &&
        !["cache.ts", "index.ts"].includes(e.name)
      )
        files.push(p);
    }
  };
  walk(HERE);
  const h = createHash("sha256");
  for (const f of files.sort()) h.update(relative(HERE, f)).update("\0").update(readFileSync(f)).update("\0");
  return h.digest("hex");
}

// When this fails: the review's sources changed. Bump REVIEW_ENGINE_REVISION in cache.ts (so cached
// reports of the old engine are not reused) and put the new revision and hash here.
const PINNED = { revision: 2, sources: "74b548d6153186f5994882a5a79ee6a90a5195a08354bb5417f88672f11272fd" };

describe("review cache", () => {
  it("the engine revision is pinned to the review sources", () => {
    expect({ revision: REVIEW_ENGINE_REVISION, sources: reviewSourcesHash() }).toEqual(PINNED);
  });

  const counting = () => {
    const calls: string[] = [];
    const review: Reviewer = async (s, o) => {
      calls.push(s);
      return reviewScript(s, o);
    };
    return { calls, review };
  };
  const dir = () => mkdtempSync(join(tmpdir(), "ratchet-review-cache-"));
  const OK = 'import os\nprint(os.environ["VAR_X"])\n';
  const opts = { language: "python" as const, declared: ["VAR_X"], filename: "main.py" };

  it("a second review of the same inputs is served from the cache, with the same report", async () => {
    const { calls, review } = counting();
    const r = cachedReviewer(dir(), review);
    const first = await r(OK, opts);
    const second = await r(OK, opts);
    expect(calls).toHaveLength(1);
    expect(second).toEqual(first);
    expect(second).toEqual(await reviewScript(OK, opts));
  });

  it("every input of the review is part of the key", async () => {
    const { calls, review } = counting();
    const r = cachedReviewer(dir(), review);
    await r(OK, opts);
    await r(`${OK}\n`, opts);
    await r(OK, { ...opts, declared: [] });
    await r(OK, { ...opts, filename: "other.py" });
    await r(OK, { language: "python" });
    expect(calls).toHaveLength(5);
    expect(reviewCacheKey(OK, { ...opts, declared: ["B", "A"] })).toBe(
      reviewCacheKey(OK, { ...opts, declared: ["A", "B"] }),
    );
  });

  it("a blocked script stays blocked when served from the cache", async () => {
    const bad = 'import os\nprint(os.environ.get("VAR_X", "fallback"))\n';
    const { calls, review } = counting();
    const r = cachedReviewer(dir(), review);
    const first = await r(bad, opts);
    expect(first.ok).toBe(false);
    expect(await r(bad, opts)).toEqual(first);
    expect(calls).toHaveLength(1);
  });

  it("a torn or forged entry is ignored and reviewed again", async () => {
    const d = dir();
    const bad = 'import os\nprint(os.environ.get("VAR_X", "fallback"))\n';
    const key = reviewCacheKey(bad, opts);
    const file = join(d, key.slice(0, 2), `${key}.json`);
    const { calls, review } = counting();
    const r = cachedReviewer(d, review);
    await r(bad, opts);
    writeFileSync(file, "{ torn");
    expect((await r(bad, opts)).ok).toBe(false);
    // A forged "ok" report under the right key but with findings that contradict it.
    writeFileSync(
      file,
      JSON.stringify({
        revision: REVIEW_ENGINE_REVISION,
        key,
        report: { ok: true, findings: [], blocking: 2 },
      }),
    );
    expect((await r(bad, opts)).ok).toBe(false);
    writeFileSync(
      file,
      JSON.stringify({
        revision: REVIEW_ENGINE_REVISION + 1,
        key,
        report: { ...(await reviewScript(OK, opts)) },
      }),
    );
    expect((await r(bad, opts)).ok).toBe(false);
    expect(calls).toHaveLength(4);
  });

  it("a cache folder that cannot be written changes nothing but speed", async () => {
    const d = dir();
    chmodSync(d, 0o500);
    try {
      const { calls, review } = counting();
      const r = cachedReviewer(join(d, "sub"), review);
      expect((await r(OK, opts)).ok).toBe(true);
      expect((await r(OK, opts)).ok).toBe(true);
      // root ignores the mode bits, so only count calls where the write really failed
      expect(calls.length).toBeGreaterThanOrEqual(1);
    } finally {
      chmodSync(d, 0o700);
    }
  });
});
