import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it, vi } from "vitest";
import { parseDeclared, reviewCommand } from "./review-command.js";

const dir = mkdtempSync(join(tmpdir(), "ratchet-review-cmd-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
afterEach(() => vi.restoreAllMocks());

function capture() {
  let stdout = "";
  let stderr = "";
  vi.spyOn(process.stdout, "write").mockImplementation((s) => {
    stdout += String(s);
    return true;
  });
  vi.spyOn(process.stderr, "write").mockImplementation((s) => {
    stderr += String(s);
    return true;
  });
  return { out: () => stdout, err: () => stderr };
}

describe("reviewCommand", () => {
  it("returns 0 and prints JSON with the file for a clean script", async () => {
    const file = join(dir, "ok.py");
    writeFileSync(file, 'import os\nopen(os.path.join(os.environ["STEP_OUTPUT_DIR"], "a"), "w").close()\n');
    const io = capture();
    expect(await reviewCommand(file, { json: true })).toBe(0);
    expect(JSON.parse(io.out())).toMatchObject({ file, ok: true, findings: [] });
  });

  it("returns 9 for blocking findings and honours --declared", async () => {
    const file = join(dir, "fallback.py");
    writeFileSync(file, 'import os\nregion = os.environ.get("VAR_REGION", "eu")\n');
    capture();
    expect(await reviewCommand(file, {})).toBe(9);
    expect(await reviewCommand(file, { declared: "VAR_OTHER" })).toBe(0);
  });

  it("returns 2 naming the file when it cannot be read or has an unknown extension", async () => {
    const io = capture();
    expect(await reviewCommand(join(dir, "missing.py"))).toBe(2);
    expect(await reviewCommand(join(dir, "x.rb"))).toBe(2);
    expect(io.out()).toBe("");
    expect(io.err()).toContain("missing.py");
    expect(io.err()).toContain("x.rb");
  });

  it("splits --declared on commas", () => {
    expect(parseDeclared(undefined)).toBeUndefined();
    expect(parseDeclared("VAR_A, SECRET_B,,")).toEqual(["VAR_A", "SECRET_B"]);
  });
});
