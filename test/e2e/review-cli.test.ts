/**
 * `ratchet review` driven through the BUILT CLI (`node bin/ratchet.js review <file> --json`):
 * exit 0 for a clean script, 9 (`review_blocked`) for blocking findings, 2 for a file that cannot be
 * read or has an unknown extension. Needs `npm run build` first (npm test does it).
 */
import { existsSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { assertBuilt, type CliResult, makeTempDir, ROOT, ratchet } from "../helpers/cli.js";

vi.setConfig({ testTimeout: 120_000 });

const FIXTURES = join(ROOT, "test", "fixtures", "review");
const BUNDLE = join(ROOT, "dist", "bundle", "ratchet.cjs");
let dir: string;

beforeAll(() => {
  assertBuilt();
  if (!existsSync(BUNDLE))
    throw new Error(`the e2e tests run bin/ratchet.js, which loads ${BUNDLE}: run \`npm run build\` first`);
  dir = makeTempDir("ratchet-e2e-review-");
});
afterAll(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const review = (args: string[]): Promise<CliResult> => ratchet(["review", ...args], { cwd: dir });

interface JsonReport extends Record<string, unknown> {
  findings: { rule: string; severity: string; line: number; column: number }[];
}

function json(r: CliResult): JsonReport {
  return JSON.parse(r.stdout) as JsonReport;
}

describe("ratchet review", () => {
  it("exits 0 and prints an empty report for a clean script", async () => {
    const file = join(FIXTURES, "good-basic-output.py");
    const r = await review([file, "--json"]);
    expect(r.stderr).toBe("");
    expect(r.status).toBe(0);
    expect(json(r)).toMatchObject({
      file,
      language: "python",
      findings: [],
      blocking: 0,
      warnings: 0,
      ok: true,
    });
    expect(json(r).lines).toBeGreaterThan(10);
  });

  it("exits 9 with the findings when a rule blocks (Python)", async () => {
    const file = join(FIXTURES, "bad-sibling-join.py");
    const r = await review([file, "--json"]);
    expect(r.status).toBe(9);
    const report = json(r);
    expect(report).toMatchObject({ file, ok: false, language: "python" });
    expect([...new Set(report.findings.map((f) => f.rule))].sort()).toEqual(["R4", "R7"]);
    expect(report.findings[0]).toEqual(
      expect.objectContaining({
        id: expect.any(String),
        line: expect.any(Number),
        column: expect.any(Number),
        fix: expect.any(String),
      }),
    );
  });

  it("exits 9 for a blocking JavaScript script", async () => {
    const r = await review([join(FIXTURES, "bad-writes.mjs"), "--json"]);
    expect(r.status).toBe(9);
    expect(json(r).language).toBe("javascript");
  });

  it("exits 0 when only warnings are found", async () => {
    const r = await review([join(FIXTURES, "bad-unknown-param.py"), "--json"]);
    expect(r.status).toBe(0);
    expect(json(r)).toMatchObject({ ok: true, blocking: 0, warnings: 1 });
  });

  it("judges fallbacks by --declared", async () => {
    const file = join(FIXTURES, "bad-declared-get-default.py");
    expect((await review([file, "--json", "--declared", "VAR_REGION"])).status).toBe(9);
    expect((await review([file, "--json", "--declared", "VAR_OTHER,SECRET_X"])).status).toBe(0);
  });

  it("exits 9 with a syntax finding on the right line", async () => {
    const file = join(dir, "broken.py");
    writeFileSync(file, "import os\n\nif True:\n    x = (1,\n");
    const r = await review([file, "--json"]);
    expect(r.status).toBe(9);
    const f = json(r).findings;
    expect(f).toEqual([
      expect.objectContaining({ rule: "syntax", severity: "blocking", line: 4, column: 9 }),
    ]);
  });

  it("prints findings for people without --json", async () => {
    const file = join(FIXTURES, "bad-relative-write.py");
    const r = await review([file]);
    expect(r.status).toBe(9);
    expect(r.stdout).toContain(`${file}:5:6  blocking  R6 writes-outside-output-dir`);
    expect(r.stdout).toContain("fix: ");
    expect(r.stdout).toMatch(/blocked — 1 blocking finding/);
  });

  it("exits 2 naming a file that does not exist", async () => {
    const file = join(dir, "missing.py");
    const r = await review([file, "--json"]);
    expect(r.status).toBe(2);
    expect(r.stdout).toBe("");
    expect(r.stderr).toContain(file);
  });

  it("exits 2 naming a file with an unknown extension", async () => {
    const file = join(dir, "script.rb");
    writeFileSync(file, "puts 1\n");
    const r = await review([file, "--json"]);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain(file);
    expect(r.stderr).toContain(".rb");
  });
});
